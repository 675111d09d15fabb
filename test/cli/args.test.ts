import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { MAX_RESET_TRANSACTIONS } from "../../sandbox/limits.js";
import { DEFAULT_INTERVAL_MS, MAX_BENCH_LATENCY_MS, parseCommand } from "../../shared/cli/args.js";
import { COMMANDS, OPTIONS } from "../../shared/cli/command-options.js";
import { MAX_DURATION_MS } from "../../shared/cli/duration.js";
import { EXIT, UsageError } from "../../shared/cli/errors.js";
import { USAGE, usageOf } from "../../shared/cli/help.js";
import { invokedIn, npmOwnOptionWarnings } from "../../shared/cli/npm-options.js";
import { thrown } from "../thrown.js";

/** One command's usage on one line, its blanks and line breaks as single spaces: what its words say, not where they wrap. */
const flatUsage = (topic: string): string => (usageOf(topic) ?? "").replace(/\s+/g, " ");

describe("parseCommand", () => {
  it("reads redrive, which takes no options", () => {
    expect(parseCommand(["redrive"])).toEqual({ command: "redrive" });
    expect(() => parseCommand(["redrive", "--once"])).toThrow(/redrive: Unknown option/);
  });

  it("reads conform-pii, with or without the --cursor a stopped pass printed", () => {
    expect(parseCommand(["conform-pii"])).toEqual({ command: "conform-pii", args: {} });
    expect(parseCommand(["conform-pii", "--cursor", "000000000007-0a1b2c3d:99"])).toEqual({
      command: "conform-pii",
      args: { cursor: "000000000007-0a1b2c3d:99" },
    });
    // Pasted with the blanks around it, the cursor is still the one printed.
    expect(parseCommand(["conform-pii", "--cursor", " 000000000007-0a1b2c3d:99 "])).toEqual({
      command: "conform-pii",
      args: { cursor: "000000000007-0a1b2c3d:99" },
    });
  });

  it.each([
    [["conform-pii", "--cursor"], "conform-pii: --cursor needs a value: --cursor <cursor>"],
    [["conform-pii", "--cursor", " "], /--cursor must not be empty/],
    [["conform-pii", "--all"], /conform-pii: Unknown option '--all'/],
    [["conform-pii", "now"], /conform-pii: Unexpected argument 'now'/],
  ])("rejects %j with a usage error", (argv, message) => {
    expect(() => parseCommand(argv)).toThrow(UsageError);
    expect(() => parseCommand(argv)).toThrow(message);
  });

  it("reads run --once", () => {
    expect(parseCommand(["run", "--once"])).toEqual({ command: "run", args: { once: true, intervalMs: DEFAULT_INTERVAL_MS } });
  });

  it("reads run --new-pii-salt, with --once or in a loop", () => {
    expect(parseCommand(["run", "--once", "--new-pii-salt"])).toEqual({ command: "run", args: { once: true, intervalMs: DEFAULT_INTERVAL_MS, newPiiSalt: true } });
    expect(parseCommand(["run", "--new-pii-salt", "--interval", "5m"])).toEqual({ command: "run", args: { once: false, intervalMs: 300_000, newPiiSalt: true } });
  });

  it("reads run --interval as milliseconds", () => {
    expect(parseCommand(["run", "--interval", "30s"])).toEqual({ command: "run", args: { once: false, intervalMs: 30_000 } });
  });

  it("rejects an unknown flag naming it", () => {
    expect(() => parseCommand(["run", "--onse"])).toThrow(/--onse/);
  });

  it("counts an option given once as once when an unknown option starts with its name, and names the unknown one", () => {
    expect(() => parseCommand(["run", "--once", "--onces"])).toThrow(/^run: Unknown option '--onces'/);
  });

  it("joins only a string option to a value starting with a dash: after a flag, the dash is an unknown option", () => {
    expect(() => parseCommand(["run", "--once", "-5"])).toThrow(/^run: Unknown option '-5'/);
  });

  it.each(["run", "authorize", "demo", "bench", "redrive", "conform-pii"])("answers %s --help (or -h) with the usage, whatever other options it holds", (command) => {
    expect(parseCommand([command, "--help"])).toEqual({ command: "help", topic: command });
    expect(parseCommand([command, "--bogus", "-h"])).toEqual({ command: "help", topic: command });
  });

  it("names the bad value of an option whose value starts with a dash, instead of parseArgs' advice", () => {
    expect(() => parseCommand(["run", "--interval", "-5s"])).toThrow(/--interval must be at least 1s, got -5s/);
    expect(() => parseCommand(["demo", "--cycles", "-1"])).toThrow(/--cycles must be at least 1, got -1/);
    // A flag after a string option is still a missing value, not taken as the value.
    expect(() => parseCommand(["run", "--interval", "--once"])).toThrow(UsageError);
  });

  // parseArgs said "argument missing" at the end, and before another option "argument is ambiguous", with advice to
  // write `--interval=-XYZ`: the value was forgotten, and the fix is the value the usage names.
  it.each([
    [["run", "--interval"], "run: --interval needs a value: --interval <duration>"],
    [["run", "--interval", "--once"], "run: --interval needs a value: --interval <duration>"],
    [["authorize", "--port", "--no-open"], "authorize: --port needs a value: --port <p>"],
    [["authorize", "--scope"], 'authorize: --scope needs a value: --scope "<scopes>"'],
    [["demo", "--cycles"], "demo: --cycles needs a value: --cycles <n>"],
    [["bench", "--sink", "--json"], "bench: --sink needs a value: --sink jsonl|null"],
  ])("refuses %j, an option without its value, naming the value the usage gives it", (argv, message) => {
    expect(() => parseCommand(argv)).toThrow(new UsageError(message));
  });

  it("rejects an interval without a unit, saying it lacks one", () => {
    expect(() => parseCommand(["run", "--interval", "30"])).toThrow('--interval: invalid duration "30": no unit; write e.g. 30s or 30m');
  });

  it("rejects an interval under one second", () => {
    expect(() => parseCommand(["run", "--interval", "10ms"])).toThrow(/at least 1s/);
  });

  // A duration that is one but too short (a user meaning "no pause") is told the minimum, not that it is no duration;
  // "invalid duration" is kept for text that is none.
  it.each([
    [["run", "--interval", "0s"], "--interval must be at least 1s, got 0s"],
    [["run", "--interval", "0ms"], "--interval must be at least 1s, got 0ms"],
    [["run", "--interval", "0"], "--interval must be at least 1s, got 0"],
    [["run", "--interval", "-5s"], "--interval must be at least 1s, got -5s"],
    [["run", "--interval", "500ms"], "--interval must be at least 1s, got 500ms"],
    [["demo", "--interval", "-5s"], "--interval must not be negative, got -5s"],
    // A negative number is too short in any unit: the minimum is its problem, not the unit it lacks.
    [["run", "--interval", "-1"], "--interval must be at least 1s, got -1"],
    [["run", "--interval", "-5"], "--interval must be at least 1s, got -5"],
    [["run", "--interval", "-0.5"], "--interval must be at least 1s, got -0.5"],
    [["demo", "--interval", "-1"], "--interval must not be negative, got -1"],
    [["run", "--interval", "often"], '--interval: invalid duration "often": use a number with a unit, e.g. 30s, 5m, 1h, 1m30s'],
  ])("answers %j with the real problem", (argv, message) => {
    expect(() => parseCommand(argv)).toThrow(UsageError);
    expect(() => parseCommand(argv)).toThrow(message);
  });

  it.each([
    ["run", "--interval"],
    ["authorize", "--timeout"],
    ["demo", "--interval"],
  ])("refuses %s %s with a unit given twice, naming the value, rather than adding them up", (command, flag) => {
    expect(() => parseCommand([command as string, flag as string, "1h1h"])).toThrow(
      `${flag}: invalid duration "1h1h": h is given twice; give each unit once, largest first (e.g. 1h30m)`,
    );
    expect(parseCommand([command as string, flag as string, "1h30m"])).toMatchObject({ args: { [command === "authorize" ? "timeoutMs" : "intervalMs"]: 5_400_000 } });
  });

  it("takes demo --interval 0 (no pause between the demo's cycles)", () => {
    expect(parseCommand(["demo", "--interval", "0"])).toMatchObject({ args: { intervalMs: 0 } });
  });

  it("gives, in the usage text, only duration examples every option taking a duration accepts", () => {
    const examples = /^Durations: (.+?)\./m.exec(USAGE)?.[1]?.split(/[,;]\s*/).filter((text) => /^\d/.test(text));
    expect(examples?.length).toBeGreaterThan(3);
    for (const example of examples ?? []) {
      for (const argv of [["run", "--interval"], ["authorize", "--timeout"], ["demo", "--interval"]]) {
        expect(() => parseCommand([...argv, example]), `${argv.join(" ")} ${example}`).not.toThrow();
      }
    }
  });

  it("shows, in the usage text, a duration in the order it takes and the ones it refuses as such", () => {
    const order = /largest first: (\S+), not (\S+) or (\S+)\./.exec(USAGE);
    expect(order).not.toBeNull();
    const [, taken = "", ...refused] = order ?? [];
    expect(() => parseCommand(["run", "--interval", taken]), taken).not.toThrow();
    for (const example of refused) expect(() => parseCommand(["run", "--interval", example]), example).toThrow(/give each unit once, largest first/);
  });

  it.each([
    ["run", "--interval"],
    ["authorize", "--timeout"],
    ["demo", "--interval"],
  ])("rejects %s %s longer than a Node timer can wait (it would fire at once)", (command, flag) => {
    expect(() => parseCommand([command as string, flag as string, "600h"])).toThrow(new RegExp(`${flag} must be at most ${MAX_DURATION_MS} ms`));
    expect(() => parseCommand([command as string, flag as string, "600h"])).toThrow(UsageError);
  });

  it("names the maximum for a duration too long for a number at all (310 digits), not the format it has", () => {
    const huge = `${"9".repeat(310)}s`;
    expect(() => parseCommand(["run", "--interval", huge])).toThrow(`--interval must be at most ${MAX_DURATION_MS} ms (about 24.8 days), got ${huge}`);
    expect(() => parseCommand(["run", "--interval", `-${huge}`])).toThrow(`--interval must be at least 1s, got -${huge}`);
  });

  it("accepts the longest interval a timer can wait", () => {
    expect(parseCommand(["run", "--interval", "596h"])).toEqual({ command: "run", args: { once: false, intervalMs: 596 * 3_600_000 } });
  });

  it("accepts the duration bounds themselves: one second and the longest timer", () => {
    expect(parseCommand(["run", "--interval", "1s"])).toEqual({ command: "run", args: { once: false, intervalMs: 1_000 } });
    expect(parseCommand(["run", "--interval", `${MAX_DURATION_MS}ms`])).toEqual({ command: "run", args: { once: false, intervalMs: MAX_DURATION_MS } });
    expect(() => parseCommand(["run", "--interval", `${MAX_DURATION_MS + 1}ms`])).toThrow(/--interval must be at most/);
  });

  it("starts every command's options in one column, and every description in one column, beside or below the options", () => {
    const commands = USAGE.slice(USAGE.indexOf("Commands:\n") + "Commands:\n".length).split("\n\n")[0] ?? "";
    // A line's options start at its first `[--` (wrapped ones too); its description at a part two blanks or more after
    // the name or options, or at the line's start.
    const columns = { options: new Set<number>(), about: new Set<number>() };
    for (const text of commands.split("\n")) {
      if (text.includes("[--")) columns.options.add(text.indexOf("[--"));
      for (const part of text.matchAll(/(?<=^|\s{2})[^\s[]/g)) if (part.index !== 2) columns.about.add(part.index);
    }
    expect(columns.options.size).toBe(1);
    expect(columns.about.size).toBe(1);
    expect(Math.min(...columns.about)).toBeGreaterThan(Math.max(...columns.options));
    expect([...commands.matchAll(/^ {2}([a-z-]+)/gm)].map((match) => match[1])).toEqual([...COMMANDS]);
  });

  it("polls once a minute without --interval (README, USAGE: default 1m)", () => {
    expect(parseCommand(["run"])).toEqual({ command: "run", args: { once: false, intervalMs: 60_000 } });
  });

  it("says in a command's usage what each of its options does and what it is without it (authorize, demo)", () => {
    const authorize = parseCommand(["authorize"]);
    const demo = parseCommand(["demo"]);
    if (authorize.command !== "authorize" || demo.command !== "demo") throw new Error("parsed as another command");
    expect(flatUsage("authorize")).toContain(`--timeout: how long it waits for the redirect, ${authorize.args.timeoutMs / 60_000}m unless given`);
    expect(flatUsage("authorize")).toContain("--secret-id: the Secrets Manager secret (ARN or name) to store them in, not the state directory");
    expect(flatUsage("authorize")).toContain("--no-open: only print the address");
    expect(demo.args.cycles).toBeUndefined();
    expect(flatUsage("demo")).toContain(`without --cycles until Ctrl-C; --interval ${demo.args.intervalMs / 1_000}s and --seed ${demo.args.seed} unless given`);
  });

  it("lists in each command's usage exactly the options it takes, none left out and none it refuses", () => {
    for (const [command, options] of Object.entries(OPTIONS)) {
      const listed = [...(usageOf(command) ?? "").matchAll(/\[--([a-z-]+)/g)].map((match) => match[1]);
      expect(listed.sort(), command).toEqual(Object.keys(options).sort());
    }
  });

  it("says in run's usage the interval it polls at without --interval", () => {
    expect(flatUsage("run")).toContain(`a cycle every --interval (default ${DEFAULT_INTERVAL_MS / 60_000}m)`);
  });

  it("says in bench's usage the exit code --check gives a missed budget: a failure's, not a usage error's", () => {
    expect(flatUsage("bench")).toContain(`--check: exit ${EXIT.failed} when a budget is missed`);
  });

  it("ends the usage saying the settings come from the environment and a .env file", () => {
    expect(USAGE.split("\n").at(-1)).toMatch(/environment and \.env\b/);
  });

  it("gives no usage for a topic that is no command, a command's prefix included", () => {
    for (const topic of ["bogus", "conform", "re", ""]) expect(usageOf(topic), JSON.stringify(topic)).toBeUndefined();
  });

  it("rejects --once together with --interval", () => {
    expect(() => parseCommand(["run", "--once", "--interval", "5m"])).toThrow(/cannot be combined/);
  });

  // mutants: an empty --interval taken as absent (the default 1m), and --once with an empty --interval let through as
  // if no --interval were given, went unseen.
  it("refuses an empty --interval rather than poll at the default, and names --once with it as the pair it is", () => {
    const invalid = '--interval: invalid duration "": use a number with a unit, e.g. 30s, 5m, 1h, 1m30s';
    expect(() => parseCommand(["run", "--interval="])).toThrow(new UsageError(invalid));
    expect(() => parseCommand(["run", "--once", "--interval="])).toThrow(
      new UsageError(`run: 2 problems with the options:\n  - --once and --interval cannot be combined\n  - ${invalid}`),
    );
  });

  it("rejects a positional argument", () => {
    expect(() => parseCommand(["run", "now"])).toThrow(UsageError);
  });

  it("rejects an unknown command listing the known ones", () => {
    expect(() => parseCommand(["sync"])).toThrow(/unknown command "sync".*run, redrive, conform-pii, authorize, demo, bench/);
  });

  it("lists the commands in the order the help text shows them, wherever it lists them", () => {
    const helpOrder = [...USAGE.matchAll(/^ {2}([a-z-]+)(?: |$)/gm)].map((match) => match[1]);
    expect(helpOrder).toEqual(["run", "redrive", "conform-pii", "authorize", "demo", "bench", "version", "help"]);
    const listed = `Commands: ${helpOrder.join(", ")}`;
    expect(() => parseCommand([])).toThrow(new UsageError(`no command given. ${listed}`));
    expect(() => parseCommand(["--bogus"])).toThrow(new UsageError(`no command given before --bogus. ${listed}`));
    expect(() => parseCommand(["sync"])).toThrow(new UsageError(`unknown command "sync". ${listed}`));
  });

  it("refuses no command at all (a script with an empty variable must not succeed), naming the commands", () => {
    expect(() => parseCommand([])).toThrow(new UsageError("no command given. Commands: run, redrive, conform-pii, authorize, demo, bench, version, help"));
    expect(parseCommand(["help"])).toEqual({ command: "help", topic: undefined });
    expect(parseCommand(["help", "run"])).toEqual({ command: "help", topic: "run" });
    // A topic that is no command is refused as the command itself would be (exit 2), not answered with the usage.
    expect(() => parseCommand(["help", "redirve"])).toThrow(/^help: unknown command "redirve" \(did you mean redrive\?\)\. Commands: /);
    expect(() => parseCommand(["--help", "foo"])).toThrow(new UsageError(`help: unknown command "foo". Commands: ${COMMANDS.join(", ")}`));
  });

  // `bridge --once` was refused as `unknown command "--once"`: an option, not a command, and the command was left out.
  it.each([
    [["--once"], 'no command given before --once, an option of run: put the command first, as in `npm run bridge -- run --once`'],
    [["--interval", "5m"], "no command given before --interval, an option of run and demo: put the command first, as in `npm run bridge -- run --interval 5m`"],
    [["--cycles=3"], "no command given before --cycles, an option of demo: put the command first, as in `npm run bridge -- demo --cycles=3`"],
    [["--bogus"], "no command given before --bogus. Commands: run, redrive, conform-pii, authorize, demo, bench, version, help"],
    // A mistyped --version or --help gets its suggestion, as a mistyped command or option of a command does (README).
    [["--versoin"], "no command given before --versoin (did you mean --version?). Commands: run, redrive, conform-pii, authorize, demo, bench, version, help"],
    [["--Version"], "no command given before --Version (did you mean --version?). Commands: run, redrive, conform-pii, authorize, demo, bench, version, help"],
    [["-version"], "no command given before -version (did you mean --version?). Commands: run, redrive, conform-pii, authorize, demo, bench, version, help"],
    [["--hlep"], "no command given before --hlep (did you mean --help?). Commands: run, redrive, conform-pii, authorize, demo, bench, version, help"],
    // node -v, npm -v: the short flags most command lines read as the version, too short for an edit-distance guess.
    [["-v"], "no command given before -v (did you mean --version?). Commands: run, redrive, conform-pii, authorize, demo, bench, version, help"],
    [["-V"], "no command given before -V (did you mean --version?). Commands: run, redrive, conform-pii, authorize, demo, bench, version, help"],
    [["-x"], "no command given before -x. Commands: run, redrive, conform-pii, authorize, demo, bench, version, help"],
  ])("refuses %j, an option where the command goes, naming the commands that take it", (argv, message) => {
    expect(() => parseCommand(argv)).toThrow(new UsageError(message));
  });

  it("reads --version, as the version command, which takes nothing more", () => {
    expect(parseCommand(["--version"])).toEqual({ command: "version" });
    expect(parseCommand(["version"])).toEqual({ command: "version" });
    expect(parseCommand(["--version", "--help"])).toEqual({ command: "help", topic: "version" });
    expect(() => parseCommand(["version", "--json"])).toThrow(/^version: Unknown option '--json'/);
    expect(() => parseCommand(["--version", "run"])).toThrow(/^version: Unexpected argument 'run'/);
    expect(usageOf("version")).toMatch(/^ {2}version {2,}print the package's name and version \(also --version\)$/);
  });

  it("answers help --help (or -h) with the usage, as any command's --help, not as an unknown command", () => {
    expect(parseCommand(["help", "--help"])).toEqual({ command: "help", topic: undefined });
    expect(parseCommand(["-h", "--help"])).toEqual({ command: "help", topic: undefined });
    expect(parseCommand(["help", "-h", "redrive"])).toEqual({ command: "help", topic: "redrive" });
    expect(parseCommand(["help", "redrive", "--help"])).toEqual({ command: "help", topic: "redrive" });
  });

  // --help answers for a command it knows: a typo or an option where the command goes is refused as without --help.
  it.each([
    [["sync", "--help"], /^unknown command "sync"\. Commands: /],
    [["redirve", "-h"], /^unknown command "redirve" \(did you mean redrive\?\)\. Commands: /],
    [["--once", "--help"], /^no command given before --once, an option of run: put the command first, as in `npm run bridge -- run --once --help`$/],
  ])("refuses %j rather than answer with a usage of no command", (argv, message) => {
    expect(() => parseCommand(argv)).toThrow(UsageError);
    expect(() => parseCommand(argv)).toThrow(message);
  });

  it("refuses a second topic to help rather than answer as if it were not there", () => {
    expect(() => parseCommand(["help", "run", "now"])).toThrow(new UsageError("help: Unexpected argument 'now': help takes one command at most"));
    expect(() => parseCommand(["-h", "redrive", "conform-pii"])).toThrow(/^help: Unexpected argument 'conform-pii'/);
  });

  it("reads authorize options", () => {
    expect(parseCommand(["authorize", "--port", "8765", "--scope", "transactions:read cards:read", "--secret-id", "arn:x", "--no-open"])).toEqual({
      command: "authorize",
      args: { port: 8765, scope: "transactions:read cards:read", secretId: "arn:x", noOpen: true, timeoutMs: 600_000 },
    });
  });

  it("reads authorize without options as the usage says: any free port, the default scopes, the state directory, a browser, 10m", () => {
    expect(parseCommand(["authorize"])).toEqual({
      command: "authorize",
      args: { port: 0, scope: undefined, secretId: undefined, noOpen: false, timeoutMs: 600_000 },
    });
  });

  it("trims the blanks a pasted --secret-id or --scope carries", () => {
    expect(parseCommand(["authorize", "--secret-id", " arn:aws:secretsmanager:eu-west-1:1:secret:q \n", "--scope", " cards:read "])).toMatchObject({
      args: { secretId: "arn:aws:secretsmanager:eu-west-1:1:secret:q", scope: "cards:read" },
    });
  });

  // The check before the sign-in reads any blanks between scopes as one separator; the sign-in address must then carry
  // them as RFC 6749 §3.3 writes them (one space each), or a strict provider refuses them after the browser round trip.
  it("separates --scope's scopes by one space, as sent, however a pasted list (tabs, new lines, double spaces) held them", () => {
    expect(parseCommand(["authorize", "--scope", "transactions:read\ttransactions:write\n  cards:read"])).toMatchObject({
      args: { scope: "transactions:read transactions:write cards:read" },
    });
  });

  it.each([["--port", "http"], ["--port", "70000"], ["--port", "-1"]])("rejects authorize %s %s", (flag, value) => {
    expect(() => parseCommand(["authorize", flag, value])).toThrow(UsageError);
  });

  it("refuses a --secret-id of blanks alone, as it refuses an empty one", () => {
    expect(() => parseCommand(["authorize", "--secret-id", "  "])).toThrow(new UsageError("--secret-id must not be empty"));
  });

  it("takes ports up to 65535 and no further", () => {
    expect(parseCommand(["authorize", "--port", "65535"])).toMatchObject({ args: { port: 65_535 } });
    expect(() => parseCommand(["authorize", "--port", "65536"])).toThrow(/--port must be at most 65535, got 65536/);
  });

  it.each([
    [["authorize", "--scope", " "], /--scope must not be empty/],
    [["authorize", "--secret-id", ""], /--secret-id must not be empty/],
    [["authorize", "--timeout", "0s"], /--timeout must be at least 1s, got 0s/],
    [["authorize", "--port", "80.5"], /--port must be a whole number, got "80.5"/],
    [["demo", "--cycles", "1.5"], /--cycles must be a whole number, got "1.5"/],
    [["bench", "--transactions", "0"], /--transactions must be at least 1, got 0/],
  ])("rejects %j with a usage error naming the option", (argv, message) => {
    expect(() => parseCommand(argv)).toThrow(UsageError);
    expect(() => parseCommand(argv)).toThrow(message);
  });

  it("reads demo --cycles", () => {
    expect(parseCommand(["demo", "--cycles", "2"])).toEqual({ command: "demo", args: { cycles: 2, intervalMs: 3_000, seed: 42, keep: false } });
    expect(parseCommand(["demo", "--keep"])).toMatchObject({ command: "demo", args: { keep: true } });
  });

  it("takes demo --cycles up to the largest exact whole number, and refuses a larger one by name", () => {
    expect(parseCommand(["demo", "--cycles", String(Number.MAX_SAFE_INTEGER)])).toMatchObject({ args: { cycles: Number.MAX_SAFE_INTEGER } });
    expect(() => parseCommand(["demo", "--cycles", "99999999999999999999"])).toThrow(
      /--cycles must be at most 9007199254740991 \(larger counts are not exact; leave --cycles out to run until Ctrl-C\), got 99999999999999999999/,
    );
  });

  // -5 is a whole number: refused for being below the minimum, which the message names; 1e3 or 0x10 spell a whole
  // number in a form these options do not read, and the message gives the digits to write.
  it.each([
    [["bench", "--transactions", "-5"], "--transactions must be at least 1, got -5"],
    [["bench", "--latency-ms", "-1"], "--latency-ms must not be negative, got -1"],
    [["demo", "--cycles", "-2"], "--cycles must be at least 1, got -2"],
    [["demo", "--seed", "-1"], "--seed must not be negative, got -1"],
    [["authorize", "--port", "-1"], "--port must not be negative, got -1"],
    [["bench", "--transactions", "-0"], "--transactions must be at least 1, got -0"],
    [["bench", "--transactions", "1e3"], '--transactions must be a whole number in plain digits, got "1e3": write 1000'],
    [["bench", "--transactions", "0x10"], '--transactions must be a whole number in plain digits, got "0x10": write 16'],
    [["bench", "--transactions", "5.0"], '--transactions must be a whole number in plain digits, got "5.0": write 5'],
    [["demo", "--seed", "+5"], '--seed must be a whole number in plain digits, got "+5": write 5'],
    [["bench", "--transactions", "-1e3"], "--transactions must be at least 1, got -1e3"],
    [["bench", "--transactions", "1e30"], "--transactions must be at most 200000 (the largest backlog the sandbox builds), got 1e30"],
    [["authorize", "--port", "99999999999999999999999"], "--port must be at most 65535, got 99999999999999999999999"],
    [["bench", "--latency-ms", "1.5"], '--latency-ms must be a whole number, got "1.5"'],
    [["bench", "--transactions", ""], '--transactions must be a whole number, got ""'],
  ])("answers %j with the rule the value breaks", (argv, message) => {
    expect(() => parseCommand(argv)).toThrow(new UsageError(message));
  });

  it("reads a number with blanks around it (a quoted value) and -0 where 0 is allowed", () => {
    expect(parseCommand(["bench", "--transactions", " 5 "])).toMatchObject({ args: { transactions: 5 } });
    expect(Object.is((parseCommand(["demo", "--seed", "-0"]) as { args: { seed: number } }).args.seed, 0)).toBe(true);
  });

  it("names a quoted number out of range as it reads it, without the blanks around it", () => {
    expect(() => parseCommand(["bench", "--transactions", " 0 "])).toThrow(new UsageError("--transactions must be at least 1, got 0"));
    expect(() => parseCommand(["authorize", "--port", " 70000 "])).toThrow(new UsageError("--port must be at most 65535, got 70000"));
  });

  it("rejects demo --cycles 0", () => {
    expect(() => parseCommand(["demo", "--cycles", "0"])).toThrow(/--cycles must be at least 1/);
  });

  it("reads bench options with defaults", () => {
    expect(parseCommand(["bench"])).toEqual({ command: "bench", args: { transactions: 10_000, latencyMs: 20, json: false, sink: "jsonl", check: false, baseline: false } });
    expect(parseCommand(["bench", "--transactions", "500", "--latency-ms", "1", "--json", "--sink", "null"])).toEqual({
      command: "bench",
      args: { transactions: 500, latencyMs: 1, json: true, sink: "null", check: false, baseline: false },
    });
    expect(parseCommand(["bench", "--transactions", "500", "--latency-ms", "1", "--check"])).toEqual({
      command: "bench",
      args: { transactions: 500, latencyMs: 1, json: false, sink: "jsonl", check: true, baseline: false },
    });
    expect(parseCommand(["bench", "--baseline"])).toEqual({
      command: "bench",
      args: { transactions: 10_000, latencyMs: 20, json: false, sink: "jsonl", check: false, baseline: true },
    });
  });

  it("takes a --sink with blanks around it as the other values are taken, trimmed, and names an unknown one without them", () => {
    expect(parseCommand(["bench", "--sink", " null "])).toMatchObject({ command: "bench", args: { sink: "null" } });
    expect(() => parseCommand(["bench", "--check", "--sink", "null "])).toThrow(/--check applies the budgets to a bridge writing its events/);
    expect(() => parseCommand(["bench", "--sink", " file "])).toThrow('--sink must be jsonl or null, got "file"');
  });

  it("refuses --baseline with --sink null: the minimal client writes its events, so the ratio would mislead", () => {
    expect(() => parseCommand(["bench", "--baseline", "--sink", "null"])).toThrow(/--baseline compares with a bridge writing its events/);
  });

  it("refuses --check with --sink null: the budgets are the bridge's, which writes its events", () => {
    expect(() => parseCommand(["bench", "--check", "--sink", "null"])).toThrow(/--check applies the budgets to a bridge writing its events: leave out --sink null/);
  });

  it("refuses --check with --latency-ms 0, where the wall budget cannot be checked, and names only the bad value otherwise", () => {
    expect(() => parseCommand(["bench", "--check", "--latency-ms", "0"])).toThrow(/--check needs --latency-ms above 0/);
    expect(parseCommand(["bench", "--latency-ms", "0"])).toMatchObject({ args: { latencyMs: 0, check: false } });
    expect(() => parseCommand(["bench", "--check", "--latency-ms", "x"])).toThrow(/^(?![\s\S]*above 0)[\s\S]*--latency-ms must be/);
    // mutant: the latency refusal given only with the default sink went unseen; with --sink null too, both are named.
    expect(() => parseCommand(["bench", "--check", "--sink", "null", "--latency-ms", "0"])).toThrow(/--check applies the budgets[\s\S]*\n {2}- --check needs --latency-ms above 0/);
  });

  it("rejects a bench sink it does not know", () => {
    expect(() => parseCommand(["bench", "--sink", "kafka"])).toThrow(/--sink must be jsonl or null/);
  });
});

describe("parseCommand under npm", () => {
  /** The environment npm gives a script it ran with options it kept for itself (`npm run bridge run --once`). */
  const npm = (script: string, kept: Record<string, string>) => ({ npm_lifecycle_event: script, ...kept });

  it("refuses options npm kept for itself, showing the command line with `--` (without the values npm left stray)", () => {
    const npmrc = (name: string) => ` (given no such option, an npmrc sets it: see \`npm config get ${name}\`)`;
    expect(() => parseCommand(["run"], npm("bridge", { npm_config_once: "true" }))).toThrow(
      new UsageError(`npm kept --once for itself: options after the script name go to npm unless they follow \`--\`, as in \`npm run bridge -- run --once\`${npmrc("once")}`),
    );
    expect(() => parseCommand(["demo"], npm("start", { npm_config_keep: "true" }))).toThrow(/as in `npm start -- --keep`/);
    // `npm run bridge run 5m --interval`: npm kept --interval, and its value reached the bridge alone.
    expect(() => parseCommand(["run", "5m"], npm("bridge", { npm_config_interval: "true" }))).toThrow(/as in `npm run bridge -- run --interval <value>`/);
    expect(() => parseCommand(["authorize", "arn:x"], npm("bridge", { npm_config_secret_id: "true", npm_config_open: "" }))).toThrow(
      /npm kept --secret-id, --no-open for itself: .* as in `npm run bridge -- authorize --secret-id <value> --no-open`/,
    );
    // `npm run bridge authorize --no-open -- --secret-id arn:x`: the option given after `--` keeps its value.
    expect(() => parseCommand(["authorize", "--secret-id", "arn:x"], npm("bridge", { npm_config_open: "" }))).toThrow(
      /as in `npm run bridge -- authorize --secret-id arn:x --no-open` \(given no such option, an npmrc sets it: see `npm config get open`\)$/,
    );
  });

  it("refuses what npm kept whatever else the command line holds (an option unknown, a value left out), keeping that in the suggestion", () => {
    expect(() => parseCommand(["run", "--bogus"], npm("bridge", { npm_config_once: "true" }))).toThrow(/^npm kept --once for itself: .* as in `npm run bridge -- run --bogus --once`/);
    expect(() => parseCommand(["run", "--interval"], npm("bridge", { npm_config_once: "true" }))).toThrow(/^npm kept --once for itself: .* as in `npm run bridge -- run --interval --once`/);
  });

  it("refuses an option of several words npm kept (run --new-pii-salt, npm_config_new_pii_salt), not only one-dash names", () => {
    expect(() => parseCommand(["run", "--once"], npm("bridge", { npm_config_new_pii_salt: "true" }))).toThrow(
      /^npm kept --new-pii-salt for itself: .* as in `npm run bridge -- run --once --new-pii-salt`/,
    );
  });

  it("suggests `npm run bench --` for what npm kept under the bench script, which names its command itself", () => {
    expect(() => parseCommand(["bench"], npm("bench", { npm_config_check: "true" }))).toThrow(/as in `npm run bench -- --check`/);
  });

  it("points the npmrc hint at the first option npm kept when it kept several", () => {
    expect(() => parseCommand(["demo"], npm("start", { npm_config_keep: "true", npm_config_cycles: "true" }))).toThrow(
      /^npm kept --cycles, --keep for itself: .*see `npm config get cycles`\)$/,
    );
  });

  it("warns (no more) when npm holds a json or scope setting the command line lacks", () => {
    expect(npmOwnOptionWarnings(["bench"], npm("bench", { npm_config_json: "true" }))).toEqual([
      "npm holds a json setting but this command line has no --json: if you gave one, npm kept it (put it after `--`); otherwise it comes from an npmrc (`npm config get json`)",
    ]);
    expect(npmOwnOptionWarnings(["authorize"], npm("bridge", { npm_config_scope: "cards:read" }))).toHaveLength(1);
    expect(npmOwnOptionWarnings(["authorize", "--scope", "cards:read"], npm("bridge", { npm_config_scope: "cards:read" }))).toEqual([]);
    expect(npmOwnOptionWarnings(["bench"], npm("bench", { npm_config_json: "false" }))).toEqual([]);
    // npm left no json setting at all: nothing to warn of.
    expect(npmOwnOptionWarnings(["bench"], npm("bench", {}))).toEqual([]);
    // npm's own default scope is empty: nothing was kept.
    expect(npmOwnOptionWarnings(["authorize"], npm("bridge", { npm_config_scope: "" }))).toEqual([]);
    expect(npmOwnOptionWarnings(["run"], npm("bridge", { npm_config_json: "true" })), "run has no --json").toEqual([]);
    expect(npmOwnOptionWarnings(["bench"], npm("test", { npm_config_json: "true" }))).toEqual([]);
  });

  it("looks only under this package's own scripts: npx or another script kept nothing of the bridge's", () => {
    expect(parseCommand(["run"], npm("npx", { npm_config_once: "true" }))).toMatchObject({ command: "run", args: { once: false } });
    expect(parseCommand(["run"], npm("test", { npm_config_once: "true" }))).toMatchObject({ command: "run" });
  });

  it("leaves npm's own options (json, scope) and other commands' options alone, and does nothing outside npm", () => {
    expect(parseCommand(["bench"], npm("bench", { npm_config_json: "true" }))).toMatchObject({ command: "bench" });
    expect(parseCommand(["authorize"], npm("bridge", { npm_config_scope: "@acme" }))).toMatchObject({ command: "authorize" });
    expect(parseCommand(["run", "--once"], npm("bridge", { npm_config_keep: "true" }))).toMatchObject({ command: "run", args: { once: true } });
    expect(parseCommand(["run"], { npm_config_once: "true" })).toMatchObject({ command: "run", args: { once: false } });
  });
});

describe("parseCommand: upper bounds of numbers", () => {
  it.each([
    [["bench", "--transactions", "200001"], "--transactions must be at most 200000 (the largest backlog the sandbox builds), got 200001"],
    [["bench", "--latency-ms", "99999999999"], "--latency-ms must be at most 5000 (each call must answer within the client's 10 s attempt timeout), got 99999999999"],
    [["demo", "--seed", "4294967297"], "--seed must be at most 4294967295 (seeds are 32-bit), got 4294967297"],
  ])("refuses %j with a usage error naming the bound and why", (argv, message) => {
    expect(() => parseCommand(argv)).toThrow(new UsageError(message));
  });

  // Past a double's range (over 308 digits, or 1e400) Number() reads ±Infinity: still a whole number, just out of range.
  it("refuses a whole number too large for a double by the bound it breaks, not as no whole number", () => {
    const huge = `1${"0".repeat(400)}`;
    expect(() => parseCommand(["bench", "--transactions", huge])).toThrow(
      new UsageError(`--transactions must be at most 200000 (the largest backlog the sandbox builds), got ${huge}`),
    );
    expect(() => parseCommand(["bench", "--transactions", "1e400"])).toThrow(
      new UsageError("--transactions must be at most 200000 (the largest backlog the sandbox builds), got 1e400"),
    );
    expect(() => parseCommand(["bench", "--latency-ms", `-${huge}`])).toThrow(new UsageError(`--latency-ms must not be negative, got -${huge}`));
    expect(() => parseCommand(["demo", "--seed", `+${huge}`])).toThrow(new UsageError(`--seed must be at most 4294967295 (seeds are 32-bit), got +${huge}`));
    // mutant: the overflow's exponent read in lower case only went unseen; `1E400` was then "no whole number".
    expect(() => parseCommand(["demo", "--seed", "1E400"])).toThrow(new UsageError("--seed must be at most 4294967295 (seeds are 32-bit), got 1E400"));
    // Not a number in digits at all: Number() reads it as Infinity too, but it is no whole number.
    expect(() => parseCommand(["bench", "--transactions", "Infinity"])).toThrow(new UsageError('--transactions must be a whole number, got "Infinity"'));
  });

  it("README's Benchmark section gives bench's bounds as parseCommand holds them", () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8").replace(/\s+/g, " ");
    const bound = (n: number) => n.toLocaleString("en-US");
    expect(readme).toContain(`\`--transactions\` takes a whole number from 1 to ${bound(MAX_RESET_TRANSACTIONS)}`);
    expect(readme).toContain(`\`--latency-ms\` one from 0 to ${bound(MAX_BENCH_LATENCY_MS)}`);
    expect(() => parseCommand(["bench", "--transactions", String(MAX_RESET_TRANSACTIONS + 1)])).toThrow(UsageError);
    expect(() => parseCommand(["bench", "--latency-ms", String(MAX_BENCH_LATENCY_MS + 1)])).toThrow(UsageError);
  });

  it("accepts the bounds themselves", () => {
    expect(parseCommand(["bench", "--transactions", "200000", "--latency-ms", "5000"])).toMatchObject({ args: { transactions: 200_000, latencyMs: 5_000 } });
    expect(parseCommand(["demo", "--seed", "4294967295"])).toMatchObject({ args: { seed: 4_294_967_295 } });
  });
});

describe("parseCommand: slips", () => {
  it("names the command or option a typo most likely meant, and nothing for a short unrelated word", () => {
    const hint = (argv: string[]) => /did you mean ([^?]+)\?/.exec((() => { try { parseCommand(argv); } catch (e) { return (e as Error).message; } return ""; })())?.[1];
    expect(() => parseCommand(["hlep"])).toThrow(/^unknown command "hlep" \(did you mean help\?\)\. Commands: /);
    expect(() => parseCommand(["run", "--onc"])).toThrow(/^run: Unknown option '--onc'.*\(did you mean --once\?\)$/);
    expect(hint(["RUN"])).toBe("run");
    expect(hint(["auth"])).toBe("authorize");
    expect(hint(["conform"])).toBe("conform-pii");
    expect(hint(["authorize", "--secret"])).toBe("--secret-id");
    for (const word of ["rm", "up", "sync"]) expect(hint([word]), word).toBeUndefined();
  });

  it("refuses an option given twice instead of letting the last one win", () => {
    expect(() => parseCommand(["run", "--interval", "10m", "--interval=5s"])).toThrow(new UsageError("run: --interval is given 2 times; give it once"));
    expect(() => parseCommand(["authorize", "--port", "1", "--port", "2"])).toThrow(/--port is given 2 times/);
  });
});

describe("parseCommand: every bad option value at once", () => {
  it.each([
    [
      ["bench", "--transactions", "1e5", "--latency-ms", "99999", "--sink", "kafka"],
      ['--sink must be jsonl or null, got "kafka"', '--transactions must be a whole number in plain digits, got "1e5": write 100000', "--latency-ms must be at most 5000"],
    ],
    [["authorize", "--port", "70000", "--timeout", "10", "--scope", " "], ["--port must be at most 65535, got 70000", "--scope must not be empty", '--timeout: invalid duration "10"']],
    [["demo", "--cycles", "0", "--interval", "PT1M", "--seed", "-1"], ["--cycles must be at least 1", '--interval: invalid duration "PT1M"', "--seed must not be negative, got -1"]],
  ])("names each bad value of %j in one usage error, not the first only", (argv, problems) => {
    const error = thrown(() => parseCommand(argv), UsageError);
    expect(error.exitCode).toBe(2);
    expect(error.message).toMatch(new RegExp(`^${argv[0]}: ${problems.length} problems with the options:\n`));
    for (const problem of problems) expect(error.message).toContain(`\n  - ${problem}`);
  });

  it("names the command once, in the heading, for a refusal that names it on its own", () => {
    expect(() => parseCommand(["run", "--once", "--interval", "30"])).toThrow(
      new UsageError(
        'run: 2 problems with the options:\n  - --once and --interval cannot be combined\n  - --interval: invalid duration "30": no unit; write e.g. 30s or 30m',
      ),
    );
  });

  it("keeps the message of a single bad value as it was", () => {
    expect(() => parseCommand(["bench", "--transactions", "abc", "--latency-ms", "5"])).toThrow(new UsageError('--transactions must be a whole number, got "abc"'));
  });
});

describe("invokedIn", () => {
  it("takes INIT_CWD under this package's scripts only when it is an absolute path", () => {
    expect(invokedIn({ npm_lifecycle_event: "bridge", INIT_CWD: "/srv/tenant-a" }, "/opt/qashio-bridge")).toBe("/srv/tenant-a");
    expect(invokedIn({ npm_lifecycle_event: "bridge", INIT_CWD: "tenant-a" }, "/opt/qashio-bridge")).toBe("/opt/qashio-bridge");
    // npx and other packages' scripts set INIT_CWD too, and a script of ours may run without one.
    expect(invokedIn({ npm_lifecycle_event: "test", INIT_CWD: "/srv/tenant-a" }, "/opt/qashio-bridge")).toBe("/opt/qashio-bridge");
    expect(invokedIn({ npm_lifecycle_event: "bridge" }, "/opt/qashio-bridge")).toBe("/opt/qashio-bridge");
  });
});
