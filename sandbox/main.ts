/**
 * `npm run sandbox -- --port <port> [--seed <n>] [--latency-ms <n>] [--frozen-clock]`:
 * runs the provider sandbox on 127.0.0.1 until SIGINT or SIGTERM (a second one, of either kind, ends it at once).
 */
import { parseArgs } from "node:util";
import { joinDashValues, repeatedOption } from "../shared/cli/args.js";
import { keptByNpm } from "../shared/cli/npm-options.js";
import { portRefusal } from "../shared/cli/port-refusal.js";
import { StopSignals, stopAtOnce } from "../shared/cli/stop-at-once.js";
import { isEntry } from "../shared/entry.js";
import { closeServer } from "./close-server.js";
import { SandboxUsageError } from "./errors.js";
import { createSandbox, DEFAULT_SEED, LEGACY_PREFIX, SANDBOX_CLIENT } from "./index.js";

/** Port when `--port` is not given. */
export const DEFAULT_PORT = 8787;

export interface MainOptions {
  readonly port: number;
  readonly seed: number;
  readonly latencyMs: number;
  readonly frozenClock: boolean;
  readonly help: boolean;
}

const USAGE = `Usage: npm run sandbox -- [--port <port>] [--seed <n>] [--latency-ms <n>] [--frozen-clock]
  --port <port>       TCP port on 127.0.0.1 (0 = any free port; default ${DEFAULT_PORT})
  --seed <n>          seed of the deterministic data (default ${DEFAULT_SEED})
  --latency-ms <n>    fixed delay before every provider API answer (default 0)
  --frozen-clock      sandbox time only moves through POST /_sandbox/clock (default: follows real time)`;

function integer(name: string, raw: string | undefined, fallback: number, max: number): number {
  if (raw === undefined) return fallback;
  const given = raw.trim();
  // Number("") is 0: a blank value is no number.
  const value = given === "" ? Number.NaN : Number(given);
  const rule = `--${name} must be an integer from 0 to ${max}`;
  if (!Number.isInteger(value) || value < 0 || value > max) throw new SandboxUsageError(`${rule}, got "${raw}"`);
  // 1e3 or 5.0 is an integer in range, in a form not read: say which digits to write rather than deny it is one.
  if (!/^\d+$/.test(given)) throw new SandboxUsageError(`${rule} in plain digits, got "${raw}": write ${value}`);
  return value;
}

/** The options of the command line but `--help` (which npm answers itself when given before `--`). */
const OPTIONS = {
  port: { type: "string" },
  seed: { type: "string" },
  "latency-ms": { type: "string" },
  "frozen-clock": { type: "boolean" },
} as const;

/**
 * Parses the command line; throws {@link SandboxUsageError} on bad arguments. `env` (the process environment) shows
 * options npm kept for itself when the command runs as `npm run sandbox`.
 */
export function parseMainArgs(argv: readonly string[], env: Readonly<Record<string, string | undefined>> = {}): MainOptions {
  // `npm run sandbox --frozen-clock` (no `--`): npm keeps the option, and the sandbox would start on real time.
  const refusal = env["npm_lifecycle_event"] === "sandbox" ? keptByNpm(OPTIONS, argv, env, ["npm run sandbox --"]) : undefined;
  if (refusal !== undefined) throw new SandboxUsageError(refusal);
  const repeated = repeatedOption(argv, OPTIONS);
  if (repeated !== undefined) throw new SandboxUsageError(repeated);
  let values;
  try {
    ({ values } = parseArgs({
      // `--latency-ms -5` as `--latency-ms=-5`: the value's own check names the rule, not parseArgs' advice about `=`.
      args: joinDashValues(argv, OPTIONS),
      options: { ...OPTIONS, help: { type: "boolean", short: "h" } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (cause) {
    throw new SandboxUsageError(cause instanceof Error ? cause.message : String(cause), { cause });
  }
  return {
    port: integer("port", values.port, DEFAULT_PORT, 65_535),
    seed: integer("seed", values.seed, DEFAULT_SEED, 4_294_967_295),
    latencyMs: integer("latency-ms", values["latency-ms"], 0, 60_000),
    frozenClock: values["frozen-clock"] ?? false,
    help: values.help ?? false,
  };
}

async function main(): Promise<void> {
  // A closed stdout or stderr (`npm run sandbox | head -3`) changes nothing: the sandbox goes on serving, and what it
  // prints next (its usage, its stop message) is dropped instead of an unhandled 'error' event (EPIPE) ending a Ctrl-C
  // with a stack trace, exit 1.
  process.stdout.on("error", () => {});
  process.stderr.on("error", () => {});
  let options: MainOptions;
  try {
    options = parseMainArgs(process.argv.slice(2), process.env);
  } catch (error) {
    if (!(error instanceof SandboxUsageError)) throw error;
    console.error(`sandbox: ${error.message}\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  if (options.help) {
    console.log(USAGE);
    return;
  }
  // Handlers first, so a signal arriving right after the URL is printed is never missed.
  const running: { server?: { close(): Promise<void> } } = {};
  const signals = new StopSignals();
  let stopped = false;
  // The process ends once the server is closed (its connections too), with nothing left to run: not process.exit(),
  // which on Node 24 can hang for good (test/process-exit.test.ts). A second signal, SIGINT or SIGTERM whichever came
  // first, ends it at once as the bridge's does (killed by SIGINT): with one listener per signal removed once heard,
  // a SIGTERM after a SIGINT found the SIGTERM listener still there, and was ignored. Not the first one delivered
  // again within milliseconds (a terminal's Ctrl-C relayed by npm and tsx, a kill of the whole job): that is one stop.
  const stop = (signal: string) => {
    const stops = signals.hear();
    if (stops > 1) stopAtOnce();
    if (stops !== 1) return;
    stopped = true;
    console.log(`sandbox: ${signal} received, stopping`);
    if (running.server) closeServer(running.server, "sandbox");
  };
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGTERM", () => stop("SIGTERM"));

  const sandbox = createSandbox({ seed: options.seed, latencyMs: options.latencyMs, realTime: !options.frozenClock });
  let listening;
  try {
    listening = await sandbox.listen(options.port);
  } catch (error) {
    // A port in use or not this user's is mended by another --port (exit 2, as a bad argument); anything else is not.
    const refusal = portRefusal(error, options.port);
    console.error(`sandbox: cannot listen on 127.0.0.1:${options.port}: ${refusal ?? (error instanceof Error ? error.message : String(error))}`);
    process.exitCode = refusal === undefined ? 1 : 2;
    return;
  }
  running.server = listening;
  // Stopped while it started listening.
  if (stopped) {
    closeServer(listening, "sandbox");
    return;
  }
  const url = listening.url;
  const lines = [
    `Qashio provider sandbox listening on ${url} (seed ${options.seed}, latency ${options.latencyMs} ms)`,
    `  authorize:  ${url}/oauth2/authorize?response_type=code&client_id=${SANDBOX_CLIENT.clientId}&redirect_uri=<http://127.0.0.1:PORT/callback>&scope=transactions:read&state=<random>`,
    `  client:     client_id=${SANDBOX_CLIENT.clientId} client_secret=${SANDBOX_CLIENT.clientSecret}`,
    `  control:    ${url}/_sandbox/companies (clock, faults, reset, latency: see README)`,
    `  legacy:     ${url}${LEGACY_PREFIX}/erp-transactions?companyId=<id> with header x-api-key`,
    "  companies:",
    ...sandbox.control
      .companies()
      .map((c) => `    ${c.id}  ${c.name.padEnd(20)} legacy x-api-key=${c.apiKey}${c.apiAccessEnabled ? "" : "  (API access disabled: 403)"}`),
  ];
  console.log(lines.join("\n"));
}

// Only run when executed, not when imported by tests.
if (isEntry(process.argv[1], import.meta.url)) {
  void main();
}
