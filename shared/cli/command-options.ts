/**
 * The commands of `bridge.ts` and the options each takes, as node:util `parseArgs` reads them, and how many times a
 * command line gives one: one table for the parsing (args.ts), the check of what npm kept (npm-options.ts) and the
 * usage (help.ts).
 */
import type { ParseArgsConfig } from "node:util";

/** Commands `bridge.ts` understands, in the order the usage shows them (refusals list them in it too). */
export const COMMANDS = ["run", "redrive", "conform-pii", "authorize", "demo", "bench", "version", "help"] as const;
export type CommandName = (typeof COMMANDS)[number];

export type Options = NonNullable<ParseArgsConfig["options"]>;

/** The options of each command (help takes none). */
export const OPTIONS: Readonly<Record<Exclude<CommandName, "help">, Options>> = {
  run: { once: { type: "boolean", default: false }, interval: { type: "string" }, "new-pii-salt": { type: "boolean", default: false } },
  redrive: {},
  version: {},
  "conform-pii": { cursor: { type: "string" } },
  authorize: {
    port: { type: "string" },
    scope: { type: "string" },
    "secret-id": { type: "string" },
    "no-open": { type: "boolean", default: false },
    timeout: { type: "string" },
  },
  demo: { cycles: { type: "string" }, interval: { type: "string" }, seed: { type: "string" }, keep: { type: "boolean", default: false } },
  bench: {
    transactions: { type: "string" },
    "latency-ms": { type: "string" },
    json: { type: "boolean", default: false },
    sink: { type: "string" },
    check: { type: "boolean", default: false },
    baseline: { type: "boolean", default: false },
  },
};

/** How many times `argv` gives option `name`, as `--name` or `--name=value`. */
export function timesGiven(argv: readonly string[], name: string): number {
  return argv.filter((arg) => arg === `--${name}` || arg.startsWith(`--${name}=`)).length;
}
