/**
 * Command-line argument parsing for `bridge.ts`: one option table per command (command-options.ts), parsed
 * with node:util `parseArgs` in strict mode so an unknown flag is an error, not ignored.
 */
import { parseArgs } from "node:util";
import { MAX_RESET_TRANSACTIONS } from "../../sandbox/limits.js";
import { BUDGET_BACKLOG } from "./bench-report.js";
import { COMMANDS, OPTIONS, timesGiven, type Options } from "./command-options.js";
import type { Env } from "./config.js";
import { durationRangeProblem, parseDuration } from "./duration.js";
import { UsageError } from "./errors.js";
import { usageOf } from "./help.js";
import { assertNotKeptByNpm } from "./npm-options.js";
import { didYouMean, nearest } from "../nearest.js";
import { wordList } from "../word-list.js";

/** Default poll interval of `run` without `--once`. */
export const DEFAULT_INTERVAL_MS = 60_000;
/** Shortest interval accepted: below this the provider's rate limit is the likely outcome. */
export const MIN_INTERVAL_MS = 1_000;
export interface RunArgs {
  readonly once: boolean;
  readonly intervalMs: number;
  /** Record BRIDGE_PII_SALT as the state directory's salt, replacing another one (a switch of salts on purpose). */
  readonly newPiiSalt?: boolean;
}

export interface ConformPiiArgs {
  /** Where a pass stopped at its time budget goes on (the cursor it printed); absent: from the start. */
  readonly cursor?: string;
}

export interface AuthorizeArgs {
  /** Local port of the redirect listener; 0 picks a free one. */
  readonly port: number;
  /** Space-separated scopes, undefined for the default set. */
  readonly scope?: string;
  /** Secrets Manager secret (ARN or name) to write the tokens into instead of the state dir. */
  readonly secretId?: string;
  /** Do not try to open a browser. */
  readonly noOpen: boolean;
  /** How long to wait for the redirect. */
  readonly timeoutMs: number;
}

export interface DemoArgs {
  /** Stop after this many cycles; undefined runs until Ctrl-C. */
  readonly cycles?: number;
  readonly intervalMs: number;
  readonly seed: number;
  /** Keep the temp directory (events file, state) when the demo ends; by default it is removed. */
  readonly keep: boolean;
}

export interface BenchArgs {
  readonly transactions: number;
  readonly latencyMs: number;
  readonly json: boolean;
  /** Where events go: the real JSONL publisher to a temp file, or a sink that drops them. */
  readonly sink: "jsonl" | "null";
  /** Exit non-zero when a budget is missed (machine-dependent: for people and CI jobs on quiet machines). */
  readonly check: boolean;
  /** Also drain a second, equal backlog with a minimal client (bench-baseline.ts): the machine's CPU floor per transaction. */
  readonly baseline: boolean;
}

export type ParsedCommand =
  | { readonly command: "run"; readonly args: RunArgs }
  | { readonly command: "redrive" }
  | { readonly command: "conform-pii"; readonly args: ConformPiiArgs }
  | { readonly command: "authorize"; readonly args: AuthorizeArgs }
  | { readonly command: "demo"; readonly args: DemoArgs }
  | { readonly command: "bench"; readonly args: BenchArgs }
  | { readonly command: "version" }
  | { readonly command: "help"; readonly topic?: string };

/** Largest `bench --latency-ms`: every provider call must still answer within the client's 10 s attempt timeout. */
export const MAX_BENCH_LATENCY_MS = 5_000;
/** Largest `demo --seed`: the sandbox's generator takes a 32-bit seed (a larger one would wrap to another). */
export const MAX_SEED = 2 ** 32 - 1;

/**
 * A whole number of `flag` in [min, max] (`why`, if given, says where the maximum comes from), or `fallback` when
 * absent. A value out of range is refused naming the bound it breaks, whatever its form (`-5` is a whole number, too
 * small); one in range but not in plain digits (`1e3`, `0x10`, `5.0`) is refused naming the digits to write.
 */
function integer(flag: string, text: string | undefined, min: number, fallback: number, max: { value: number; why?: string }): number {
  if (text === undefined) return fallback;
  const given = text.trim();
  const plain = /^-?\d+$/.test(given);
  // Number("") is 0: a blank value is no number.
  const value = given === "" ? Number.NaN : Number(given);
  // Decimal digits past a double's range (over 308 of them, 1e400) read as ±Infinity: a number out of range, which the
  // checks below name by its bound; "Infinity" itself is no number.
  const overflowed = !Number.isFinite(value) && /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(given);
  if (!Number.isInteger(value) && !overflowed) throw new UsageError(`${flag} must be a whole number, got "${text}"`);
  if (value < min) throw new UsageError(`${flag} ${min === 0 ? "must not be negative" : `must be at least ${min}`}, got ${given}`);
  if (value > max.value) throw new UsageError(`${flag} must be at most ${max.value}${max.why === undefined ? "" : ` (${max.why})`}, got ${given}`);
  if (!plain) throw new UsageError(`${flag} must be a whole number in plain digits, got "${text}": write ${value}`);
  // -0 where 0 is allowed is 0.
  return value + 0;
}

function duration(flag: string, text: string | undefined, min: number, fallback: number): number {
  if (text === undefined) return fallback;
  let ms: number;
  try {
    ms = parseDuration(text);
  } catch (error) {
    throw new UsageError(`${flag}: ${(error as Error).message}`, { cause: error });
  }
  const problem = durationRangeProblem(ms, min);
  if (problem !== undefined) throw new UsageError(`${flag} ${problem}, got ${text}`);
  return ms;
}

/**
 * Collects the refusals of a command's option values, so one message names every bad option (as the settings do)
 * rather than the first only; a single refusal keeps its own message.
 */
class OptionProblems {
  private readonly errors: UsageError[] = [];

  constructor(private readonly command: string) {}

  /** `read()`, or `fallback` once its UsageError is noted. */
  take<T>(read: () => T, fallback: T): T {
    try {
      return read();
    } catch (error) {
      if (!(error instanceof UsageError)) throw error;
      this.errors.push(error);
      return fallback;
    }
  }

  /** Notes a refusal of its own (two options that do not go together, an empty value). */
  add(message: string): void {
    this.errors.push(new UsageError(message));
  }

  /** Throws the one refusal, or all of them in one UsageError; nothing when every value is good. */
  throwIfAny(): void {
    const [first, ...more] = this.errors;
    if (first === undefined) return;
    if (more.length === 0) throw first;
    // Under the heading that names the command, a refusal need not name it again.
    const lines = this.errors.map((error) => `  - ${error.message.replace(`${this.command}: `, "")}`).join("\n");
    throw new UsageError(`${this.command}: ${this.errors.length} problems with the options:\n${lines}`);
  }
}

type OptionValues = { readonly values: Readonly<Record<string, string | boolean | undefined>> };

/**
 * `argv` with a value that starts with a dash (`--interval -5s`) joined to its option (`--interval=-5s`): parseArgs
 * would take it for an option and answer with advice about `=`, where the value's own check names what is wrong. The
 * sandbox's command line uses it too.
 */
export function joinDashValues(argv: readonly string[], options: Options): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const next = argv[i + 1];
    const option = arg.startsWith("--") ? options[arg.slice(2)] : undefined;
    if (option?.type === "string" && next !== undefined && /^-\d/.test(next)) {
      out.push(`${arg}=${next}`);
      i += 1;
    } else {
      out.push(arg);
    }
  }
  return out;
}

/**
 * The refusal of an option of `options` that `argv` gives more than once, or undefined: parseArgs lets the last one win
 * silently, and `--interval 10m --interval 5s` is more likely a slip. The sandbox's command line uses it too.
 */
export function repeatedOption(argv: readonly string[], options: Options): string | undefined {
  for (const name of Object.keys(options)) {
    const given = timesGiven(argv, name);
    if (given > 1) return `--${name} is given ${given} times; give it once`;
  }
  return undefined;
}

/**
 * The refusal of an option given without its value, from parseArgs' message, or undefined for another message. At the
 * end of the line parseArgs says "argument missing", and before another option "argument is ambiguous" with advice to
 * write `--interval=-XYZ`: either way the value was forgotten, so the refusal names the one the usage gives the option.
 *
 * @example
 * missingValueOf("run", "Option '--interval <value>' argument missing"); // "run: --interval needs a value: --interval <duration>"
 */
function missingValueOf(command: string, message: string): string | undefined {
  const flag = /^Option '(--[\w-]+)(?: <value>)?' argument (?:missing|is ambiguous)/.exec(message)?.[1];
  if (flag === undefined) return undefined;
  // The option as the command's usage line writes it: `[--interval <duration>]`.
  const value = new RegExp(`\\[${flag} ([^\\]]+)\\]`).exec(usageOf(command) ?? "")?.[1] ?? "<value>";
  return `${command}: ${flag} needs a value: ${flag} ${value}`;
}

function strictParse(command: string, argv: string[], options: Options): OptionValues {
  const repeated = repeatedOption(argv, options);
  if (repeated !== undefined) throw new UsageError(`${command}: ${repeated}`);
  try {
    const { values } = parseArgs({ args: joinDashValues(argv, options), options, strict: true, allowPositionals: false });
    return { values: values as OptionValues["values"] };
  } catch (error) {
    const valueless = missingValueOf(command, (error as Error).message);
    if (valueless !== undefined) throw new UsageError(valueless, { cause: error });
    // parseArgs messages are already specific ("Unknown option '--x'"); prefix the command, and name a near option.
    const unknown = /^Unknown option '(--[^']+)'/.exec((error as Error).message)?.[1];
    const near = unknown === undefined ? undefined : nearest(unknown, Object.keys(options).map((name) => `--${name}`));
    throw new UsageError(`${command}: ${(error as Error).message}${didYouMean(near)}`, { cause: error });
  }
}

/**
 * Parses `process.argv.slice(2)` into a command and its typed options. `env` (the process environment) shows options
 * npm kept for itself when the command runs as an npm script.
 * Throws {@link UsageError} (exit 2) for an unknown command or a bad option.
 *
 * @example
 * parseCommand(["run", "--interval", "30s"]); // { command: "run", args: { once: false, intervalMs: 30000 } }
 */
export function parseCommand(argv: readonly string[], env: Env = {}): ParsedCommand {
  const [given, ...rest] = argv;
  const name = commandNameOf(given);
  // Not help: a script calling the bridge with an empty variable for its command must not "succeed".
  if (name === undefined) throw new UsageError(`no command given. Commands: ${COMMANDS.join(", ")}`);
  if (isHelpFlag(name) || name === "help") {
    // `help --help` asks for the usage as `run --help` does: not a topic named `--help`.
    const [topic, extra] = rest.filter((arg) => !isHelpFlag(arg));
    // `help rnu` answers as `rnu` would: a typo must not look like a usage that has no such command.
    if (topic !== undefined && !(COMMANDS as readonly string[]).includes(topic)) throw unknownCommand(topic, "help: ");
    // Answered for the first topic alone, `help run now` would pass over the word as if it were not there.
    if (extra !== undefined) throw new UsageError(`help: Unexpected argument '${extra}': help takes one command at most`);
    return { command: "help", topic };
  }
  // `run --help` asks for usage, whatever else it holds: answered before the options are checked.
  if ((COMMANDS as readonly string[]).includes(name) && rest.some(isHelpFlag)) {
    return { command: "help", topic: name };
  }
  if (name.startsWith("-")) throw commandLeftOut(argv);
  assertNotKeptByNpm(name, rest, env);
  switch (name) {
    case "run": {
      const { values } = strictParse("run", rest, OPTIONS.run);
      const problems = new OptionProblems("run");
      if (values.once && values.interval !== undefined) problems.add("run: --once and --interval cannot be combined");
      const intervalMs = problems.take(() => duration("--interval", values.interval as string | undefined, MIN_INTERVAL_MS, DEFAULT_INTERVAL_MS), 0);
      problems.throwIfAny();
      return { command: "run", args: { once: values.once === true, intervalMs, ...(values["new-pii-salt"] === true ? { newPiiSalt: true } : {}) } };
    }
    case "redrive":
      strictParse("redrive", rest, OPTIONS.redrive);
      return { command: "redrive" };
    case "version":
      strictParse("version", rest, OPTIONS.version);
      return { command: "version" };
    case "conform-pii": {
      const { values } = strictParse("conform-pii", rest, OPTIONS["conform-pii"]);
      const cursor = values.cursor as string | undefined;
      if (cursor === undefined) return { command: "conform-pii", args: {} };
      if (cursor.trim() === "") throw new UsageError("--cursor must not be empty: pass the cursor a stopped conform-pii printed, or leave it out");
      return { command: "conform-pii", args: { cursor: cursor.trim() } };
    }
    case "authorize": {
      const { values } = strictParse("authorize", rest, OPTIONS.authorize);
      const problems = new OptionProblems("authorize");
      const port = problems.take(() => integer("--port", values.port as string | undefined, 0, 0, { value: 65_535 }), 0);
      const scope = values.scope as string | undefined;
      if (scope !== undefined && scope.trim() === "") problems.add("--scope must not be empty");
      const secretId = values["secret-id"] as string | undefined;
      if (secretId !== undefined && secretId.trim() === "") problems.add("--secret-id must not be empty");
      const timeoutMs = problems.take(() => duration("--timeout", values.timeout as string | undefined, 1_000, 600_000), 0);
      problems.throwIfAny();
      return {
        command: "authorize",
        args: {
          port,
          // One space between scopes, as RFC 6749 §3.3 sends them: a pasted list may hold tabs, new lines or runs.
          scope: scope?.trim().split(/\s+/).join(" "),
          // A pasted ARN often carries a blank around it, which Secrets Manager would answer as no such secret.
          secretId: secretId?.trim(),
          noOpen: values["no-open"] === true,
          timeoutMs,
        },
      };
    }
    case "demo": {
      const { values } = strictParse("demo", rest, OPTIONS.demo);
      const problems = new OptionProblems("demo");
      const cyclesText = values.cycles as string | undefined;
      const maxCycles = { value: Number.MAX_SAFE_INTEGER, why: "larger counts are not exact; leave --cycles out to run until Ctrl-C" };
      const cycles = cyclesText === undefined ? undefined : problems.take(() => integer("--cycles", cyclesText, 1, 1, maxCycles), 1);
      const intervalMs = problems.take(() => duration("--interval", values.interval as string | undefined, 0, 3_000), 0);
      const seed = problems.take(() => integer("--seed", values.seed as string | undefined, 0, 42, { value: MAX_SEED, why: "seeds are 32-bit" }), 0);
      problems.throwIfAny();
      return { command: "demo", args: { cycles, intervalMs, seed, keep: values.keep === true } };
    }
    case "bench": {
      const { values } = strictParse("bench", rest, OPTIONS.bench);
      const problems = new OptionProblems("bench");
      const sinkText = (values.sink as string | undefined)?.trim() ?? "jsonl";
      const sink = sinkText === "null" ? "null" : "jsonl";
      if (sinkText !== "jsonl" && sinkText !== "null") problems.add(`--sink must be jsonl or null, got "${sinkText}"`);
      // The minimal client always writes its events file: against a bridge that writes none, the ratio would mislead.
      if (sinkText === "null" && values.baseline === true) problems.add("--baseline compares with a bridge writing its events: leave out --sink null");
      // The budgets are the bridge's, and the bridge writes its events: a drain that drops them would pass a CPU budget the
      // bridge misses (about 20 us a transaction less on the development VM).
      if (sinkText === "null" && values.check === true) problems.add("--check applies the budgets to a bridge writing its events: leave out --sink null");
      const transactions = problems.take(
        () => integer("--transactions", values.transactions as string | undefined, 1, BUDGET_BACKLOG, { value: MAX_RESET_TRANSACTIONS, why: "the largest backlog the sandbox builds" }),
        0,
      );
      const latencyMs = problems.take<number | undefined>(
        () => integer("--latency-ms", values["latency-ms"] as string | undefined, 0, 20, { value: MAX_BENCH_LATENCY_MS, why: "each call must answer within the client's 10 s attempt timeout" }),
        undefined,
      );
      // Floor time = floor calls x latency: at 0 the wall budget cannot be checked, and --check would pass without it.
      if (latencyMs === 0 && values.check === true) problems.add("--check needs --latency-ms above 0: the wall budget is a multiple of the floor time (floor calls x latency)");
      problems.throwIfAny();
      return {
        command: "bench",
        args: { transactions, latencyMs: latencyMs ?? 0, json: values.json === true, sink, check: values.check === true, baseline: values.baseline === true },
      };
    }
    default:
      throw unknownCommand(name);
  }
}

/** The command `given`, the first argument, names: `--version` is the version command, as most command lines spell it. */
function commandNameOf(given: string | undefined): string | undefined {
  return given === "--version" ? "version" : given;
}

/**
 * The command with options of its own (all but help) that `argv` runs, or undefined: the command a refusal of `argv`
 * is about. parseCommand refuses nothing before it knows such a command but for help, a missing or unknown command.
 *
 * @example
 * refusingCommandOf(["run", "--interval", "often"]); // "run"
 * refusingCommandOf(["help", "run", "now"]); // undefined
 */
export function refusingCommandOf(argv: readonly string[]): string | undefined {
  const name = commandNameOf(argv[0]);
  return name !== undefined && Object.hasOwn(OPTIONS, name) ? name : undefined;
}

/**
 * The refusal of a command line that starts with an option (`--once`): the command was left out, so the refusal names
 * the commands taking that option and the line with the first of them, rather than calling the option an unknown command.
 */
function commandLeftOut(argv: readonly string[]): UsageError {
  const flag = (argv[0] ?? "").split("=")[0] ?? "";
  const takers = Object.entries(OPTIONS)
    .filter(([, options]) => flag.startsWith("--") && Object.hasOwn(options, flag.slice(2)))
    .map(([command]) => command);
  // Taken by no command: maybe a mistyped --version or --help, the two options that stand in for a command; -v and -V
  // (node -v, npm -v) too short for a guess by spelling.
  const meant = flag === "-v" || flag === "-V" ? "--version" : nearest(flag, ["--version", "--help"]);
  if (takers.length === 0) return new UsageError(`no command given before ${flag}${didYouMean(meant)}. Commands: ${COMMANDS.join(", ")}`);
  return new UsageError(`no command given before ${flag}, an option of ${wordList(takers)}: put the command first, as in \`npm run bridge -- ${[takers[0], ...argv].join(" ")}\``);
}

/** Whether `arg` asks for the usage (`--help`, `-h`). */
function isHelpFlag(arg: string): boolean {
  return arg === "--help" || arg === "-h";
}

/** The refusal of a command name that is none of {@link COMMANDS}, with the nearest one when one is close. */
function unknownCommand(name: string, context = ""): UsageError {
  const near = nearest(name, COMMANDS);
  return new UsageError(`${context}unknown command "${name}"${didYouMean(near)}. Commands: ${COMMANDS.join(", ")}`);
}
