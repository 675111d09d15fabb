/**
 * Entry of `bridge.ts`: parses the command line, runs the command, maps errors to exit codes.
 * Commands are imported lazily so `help` and argument errors answer at once.
 */
import { parseCommand, refusingCommandOf, type ParsedCommand } from "./args.js";
import { SETTINGS, type SettingDoc } from "./config.js";
import { CliError, EXIT, failureMessage, UsageError } from "./errors.js";
import { DURATIONS_HELP, USAGE, usageOf } from "./help.js";
import { line, type CliIo } from "./io.js";
import { invokedIn, npmOwnOptionWarnings } from "./npm-options.js";
import { secondStopNotice, type StopSignal } from "./stop-at-once.js";

/**
 * The settings block of `help`: every setting with the commands that read it, or, for one command (`run --help`),
 * only the settings it reads, each with what that command needs of it; empty for a command that reads none (demo and
 * bench set up their own).
 */
function settingsHelp(command?: string): string {
  const rows = SETTINGS.filter((s) => command === undefined || (s.commands as readonly string[]).includes(command));
  if (rows.length === 0) return "";
  const width = Math.max(...rows.map((s) => s.name.length));
  const needs = rows.map((s) => `${needOf(s, command)}${unusedNote(s, command)}`);
  const needWidth = Math.max(...needs.map((need) => need.length));
  const lines = rows.map((s, i) => `  ${s.name.padEnd(width)}  ${command === undefined ? `${needs[i]?.padEnd(needWidth)}  ${s.commands.join(", ")}` : needs[i]}`);
  const heading = command === undefined ? "Settings (environment or .env), and the commands that read them:" : `Settings ${command} reads (environment or .env):`;
  return `\n\n${heading}\n${lines.join("\n")}`;
}

/** What `command` (any, when undefined) needs of `setting`: "required", "required <when>", its default, or "optional". */
function needOf(setting: SettingDoc, command: string | undefined): string {
  // `unless \`authorize --secret-id\` has it`: so for authorize, and in the whole list (which names the commands
  // beside); required outright for the commands without that option.
  const unless = /^unless `(\S+) (--[\w-]+)` (.+)$/.exec(setting.required);
  if (unless !== null) return command === undefined || command === unless[1] ? `required unless ${unless[2]} ${unless[3]}` : "required";
  // `except for \`authorize\``: required, or not at all, once the command is known.
  const except = /^except for `(.+)`$/.exec(setting.required)?.[1];
  const required = except === undefined || command === undefined ? setting.required : except === command ? "no" : "yes";
  if (required === "yes") return "required";
  // Optional without a default (BRIDGE_TENANT for authorize): "default -" would read as the value "-".
  if (required === "no") return setting.default === "" ? "optional" : `default ${setting.default}`;
  return `required ${required.replaceAll("`", "")}`;
}

/** For `command`'s own list, the option with which it leaves `setting` unused (`; unused with --secret-id`), else "". */
function unusedNote(setting: SettingDoc, command: string | undefined): string {
  const unused = setting.unusedWith;
  return unused !== undefined && unused.command === command ? `; unused with ${unused.option}` : "";
}

async function dispatch(parsed: ParsedCommand, io: CliIo): Promise<number> {
  switch (parsed.command) {
    case "help": {
      // `help run` (or `run --help`): that command only; none (or `help help`), the whole usage. parseCommand refuses
      // a topic that is no command.
      const one = parsed.topic === undefined || parsed.topic === "help" ? undefined : usageOf(parsed.topic);
      // `run --help` alone must say what its `--interval <duration>` takes, as the whole usage does.
      const durations = one?.includes("<duration>") === true ? `\n\n${DURATIONS_HELP}` : "";
      const usage = one === undefined ? USAGE : `Usage: npm run bridge -- ${parsed.topic} [options]\n\n${one}${durations}`;
      line(io.stdout, `${usage}${settingsHelp(one === undefined ? undefined : parsed.topic)}`);
      return EXIT.ok;
    }
    case "run":
      return (await import("./run.js")).runCommand(parsed.args, io);
    case "redrive":
      return (await import("./redrive.js")).redriveCommand(io);
    case "conform-pii":
      return (await import("./conform-pii.js")).conformPiiCommand(parsed.args, io);
    case "authorize":
      return (await import("./authorize-command.js")).authorizeCommand(parsed.args, io);
    case "demo":
      return (await import("./demo.js")).demoCommand(parsed.args, io);
    case "bench":
      return (await import("./bench.js")).benchCommand(parsed.args, io);
    case "version":
      return (await import("./version.js")).versionCommand(io);
  }
}

/**
 * What the first Ctrl-C (or SIGTERM, SIGHUP: `signal`, named then) does to `command`, said when it arrives: a cycle or
 * a conform-pii pass ends after its page in hand, a re-drive after its batch in hand, `authorize` is cancelled at once
 * (it says so itself), the rest finish what they do; then what a second one does (see {@link secondStopNotice}).
 * `refreshUnsaved`: a token refresh is under way, or new tokens a failed save left are held (`spendingRefreshes.busy`).
 *
 * @example
 * process.stderr.write(`${stopNotice(process.argv[2], { refreshUnsaved: spendingRefreshes.busy, signal: "SIGTERM" })}\n`);
 */
export function stopNotice(
  command: string | undefined,
  { refreshUnsaved = false, signal = "SIGINT" }: { readonly refreshUnsaved?: boolean; readonly signal?: StopSignal } = {},
): string | undefined {
  const clean = cleanStopOf(command);
  // Ctrl-C is the person at the terminal, who knows; another signal is named for the log reader.
  const received = signal === "SIGINT" ? "" : `${signal} received: `;
  return clean && `${received}stopping cleanly ${clean}; ${secondStopNotice(refreshUnsaved, signal)}`;
}

/** When the first stop ends `command`, past "stopping cleanly"; undefined for `authorize`. */
function cleanStopOf(command: string | undefined): string | undefined {
  switch (command) {
    case "run":
    case "demo":
    case "conform-pii":
      return "after the page in hand";
    case "redrive":
      return "after the batch in hand";
    case "authorize":
      return undefined;
    default:
      return "once this finishes";
  }
}

/**
 * The line under a refusal saying where the usage is: the usage of `command` when the refusal is about that command
 * (`npm run bridge -- run --help`), else the whole usage.
 */
function usagePointer(command: string | undefined): string {
  return `Run \`npm run bridge -- ${command === undefined ? "help" : `${command} --help`}\` for usage.`;
}

/**
 * Runs `bridge.ts` with `argv` (without node and script) and returns the exit code.
 * Errors are printed as one message for a person; secrets never appear in them.
 *
 * @example
 * process.exitCode = await main(process.argv.slice(2), io);
 */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  for (const warning of npmOwnOptionWarnings(argv, io.env)) line(io.stderr, `warning: ${warning}`);
  try {
    return await dispatch(parseCommand(argv, io.env), { ...io, cwd: invokedIn(io.env, io.cwd) });
  } catch (error) {
    if (error instanceof UsageError) {
      line(io.stderr, `error: ${error.message}`);
      line(io.stderr, usagePointer(refusingCommandOf(argv)));
      return error.exitCode;
    }
    line(io.stderr, `error: ${failureMessage(error)}`);
    return error instanceof CliError ? error.exitCode : EXIT.failed;
  }
}
