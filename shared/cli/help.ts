/**
 * The usage `help` prints for `bridge.ts`: each command's entry (its options, what it does) laid out in columns within
 * {@link HELP_WIDTH}, the whole usage, and one command's part of it.
 */
import { COMMANDS, type CommandName } from "./command-options.js";

/** What a `<duration>` is: in the whole usage, and in the usage of each command whose options take one. */
export const DURATIONS_HELP = `Durations: 30s, 5m, 1h, 1m30s, 1500ms, each unit once, largest first: 1h30m, not 30m1h or 1h1h.
run --interval, authorize --timeout and BRIDGE_CYCLE_BUDGET take at least 1s.`;

/** Columns the help text keeps: a wider line wraps at a terminal's edge, out of the columns below. */
const HELP_WIDTH = 100;
/** Column the commands' descriptions start at, beside their options or below them. */
const ABOUT_COLUMN = 40;

/** Each command's entry in {@link USAGE}: its options, as the usage writes each, and what it does. */
const COMMAND_HELP: Readonly<Record<CommandName, { readonly options: readonly string[]; readonly about: string }>> = {
  run: {
    options: ["[--once]", "[--interval <duration>]", "[--new-pii-salt]"],
    about:
      "poll the provider and write events (local mode); without --once, a cycle every --interval (default 1m); " +
      "--new-pii-salt: BRIDGE_PII_SALT replaces the salt the state directory hashed with (each hashed item pulled then " +
      "publishes one change of its pseudonyms); for one run: refused once that salt is the one recorded",
  },
  redrive: {
    options: [],
    about:
      "publish again the transactions quarantined (and acknowledged) because their event failed for good or they failed " +
      "validation, once the cause is fixed (local mode; the JSON Lines sink never refuses for good)",
  },
  "conform-pii": {
    options: ["[--cursor <cursor>]"],
    about:
      "re-mask the personal fields stored in the snapshots (every PERSONAL_FIELDS path, see docs/events.md) to " +
      "BRIDGE_PII_MODE: after a switch away from full or from hash to redact, and after an upgrade that masks more " +
      "fields; --cursor goes on where a pass stopped at its time budget or on Ctrl-C (under the BRIDGE_PII_MODE it " +
      "printed the cursor under)",
  },
  authorize: {
    options: ["[--port <p>]", '[--scope "<scopes>"]', "[--secret-id <arn>]", "[--no-open]", "[--timeout <duration>]"],
    about:
      "sign in once as a person and store the tokens (--port: the redirect URI's loopback port, any free one unless " +
      "given; --secret-id: the Secrets Manager secret (ARN or name) to store them in, not the state directory; " +
      "--no-open: only print the address, open it yourself; --timeout: how long it waits for the redirect, 10m unless given)",
  },
  demo: {
    options: ["[--cycles <n>]", "[--interval <duration>]", "[--seed <n>]", "[--keep]"],
    about:
      "embedded sandbox + bridge + activity (npm start); its temp directory is removed at the end unless --keep; runs " +
      "without --cycles until Ctrl-C; --interval 3s and --seed 42 unless given",
  },
  bench: {
    options: ["[--transactions <n>]", "[--latency-ms <ms>]", "[--sink jsonl|null]", "[--json]", "[--check]", "[--baseline]"],
    about: "drain a backlog from the sandbox and measure (--check: exit 1 when a budget is missed; --baseline: also measure a minimal client's CPU)",
  },
  version: { options: [], about: "print the package's name and version (also --version)" },
  help: { options: [], about: "this text" },
};

/** `words` filled into lines of at most `width` characters, one space apart (a longer word has a line of its own). */
function fill(words: readonly string[], width: number): string[] {
  const lines: string[] = [];
  for (const word of words) {
    const last = lines.at(-1);
    if (last !== undefined && last.length + 1 + word.length <= width) lines[lines.length - 1] = `${last} ${word}`;
    else lines.push(word);
  }
  return lines;
}

/**
 * The entry of `name` in {@link USAGE}: its name, its options from one column for all commands (wrapped there), and
 * what it does from {@link ABOUT_COLUMN}, beside the options where they leave room, every line within {@link HELP_WIDTH}.
 */
function commandEntry(name: CommandName): string {
  const { options, about } = COMMAND_HELP[name];
  const nameWidth = Math.max(...COMMANDS.map((command) => command.length)) + 1;
  const optionIndent = " ".repeat(2 + nameWidth);
  const lines = fill(options, HELP_WIDTH - optionIndent.length).map((text, i) => (i === 0 ? `  ${name.padEnd(nameWidth)}${text}` : `${optionIndent}${text}`));
  if (lines.length === 0) lines.push(`  ${name}`);
  const aboutLines = fill(about.split(" "), HELP_WIDTH - ABOUT_COLUMN);
  const last = lines.at(-1) ?? "";
  // Two blanks at least between the options and the description.
  const beside = last.length + 2 <= ABOUT_COLUMN ? aboutLines.shift() : undefined;
  if (beside !== undefined) lines[lines.length - 1] = `${last.padEnd(ABOUT_COLUMN)}${beside}`;
  return [...lines, ...aboutLines.map((text) => `${" ".repeat(ABOUT_COLUMN)}${text}`)].join("\n");
}

export const USAGE = `Usage: npm run bridge -- <command> [options]

Commands:
${COMMANDS.map(commandEntry).join("\n")}

${DURATIONS_HELP}
Settings come from the environment and .env (see README).`;

/**
 * The usage of one command: its lines of {@link USAGE} (the command's line and the indented lines under it), or
 * undefined for a topic that is no command.
 *
 * @example
 * usageOf("run"); // "  run        [--once] [--interval <duration>] ..."
 */
export function usageOf(topic: string): string | undefined {
  if (!(COMMANDS as readonly string[]).includes(topic)) return undefined;
  const lines = USAGE.split("\n");
  const start = lines.findIndex((text) => new RegExp(`^  ${topic}\\b`).test(text));
  if (start === -1) return undefined;
  let end = start + 1;
  // Continuation lines (wrapped options, the description) are indented deeper than a command's own line.
  while (end < lines.length && /^ {4,}/.test(lines[end] ?? "")) end += 1;
  return lines.slice(start, end).join("\n");
}
