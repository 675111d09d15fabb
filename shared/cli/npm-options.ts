/**
 * How npm treats the options of this package's scripts (`npm run bridge`, `npm start`, `npm run bench`): before `--`
 * npm keeps an option for itself, leaving its value in the environment, and runs the script in the package's root.
 * The sandbox's command line uses the refusal of what npm kept too.
 */
import { isAbsolute } from "node:path";
import { parseArgs } from "node:util";
import { OPTIONS, timesGiven, type Options } from "./command-options.js";
import type { Env } from "./config.js";
import { UsageError } from "./errors.js";

/** Options npm has itself: given to `npm run` they are npm's, and one set in an npmrc is no mistake of this command line. */
const NPM_OWN_OPTIONS = new Set(["json", "scope"]);

/** The package's scripts that run this command line (package.json); under another one (npx, a wrapper) npm kept nothing of ours. */
const OWN_SCRIPTS = new Set(["bridge", "start", "bench"]);

/** The options of command `name` when npm runs it under one of this package's scripts, else undefined. */
function optionsUnderNpm(name: string | undefined, env: Env): Options | undefined {
  const script = env["npm_lifecycle_event"];
  if (name === undefined || script === undefined || !OWN_SCRIPTS.has(script) || !Object.hasOwn(OPTIONS, name)) return undefined;
  return OPTIONS[name as keyof typeof OPTIONS];
}

/**
 * The directory the person ran the command in, which `.env` and relative paths of the settings are read against:
 * under one of this package's scripts npm runs it in the package's root, wherever it was called from (a subdirectory,
 * `npm --prefix <checkout>`), and keeps that directory in INIT_CWD; otherwise the process's own `cwd`.
 *
 * @example
 * invokedIn({ npm_lifecycle_event: "bridge", INIT_CWD: "/srv/tenant-a" }, "/opt/qashio-bridge"); // "/srv/tenant-a"
 */
export function invokedIn(env: Env, cwd: string): string {
  const from = env["INIT_CWD"];
  const script = env["npm_lifecycle_event"];
  return script !== undefined && OWN_SCRIPTS.has(script) && from !== undefined && isAbsolute(from) ? from : cwd;
}

/** The npm config key an option lands under when npm keeps it (`--no-open` under `open`). */
function npmKey(option: string): string {
  return option.replace(/^no-/, "");
}

/** What npm holds for `option` in the environment of a script it runs (`npm_config_<key>`), if anything. */
function npmValue(env: Env, option: string): string | undefined {
  return env[`npm_config_${npmKey(option).replaceAll("-", "_")}`];
}

/**
 * Warnings for the options npm has itself (`--json`, `--scope`) when npm holds a value for one that this command line
 * lacks: given before `--` they went to npm, and the command runs without them (the human report, the default
 * scopes). Only a warning: the value may just as well come from an npmrc.
 *
 * @example
 * npmOwnOptionWarnings(["bench"], { npm_lifecycle_event: "bench", npm_config_json: "true" }); // ["npm holds a json setting ..."]
 */
export function npmOwnOptionWarnings(argv: readonly string[], env: Env): string[] {
  const [name, ...rest] = argv;
  const options = optionsUnderNpm(name, env);
  if (options === undefined) return [];
  return [...NPM_OWN_OPTIONS]
    .filter((option) => Object.hasOwn(options, option) && timesGiven(rest, option) === 0)
    // npm's own default for json is "false", and scope's is empty.
    .filter((option) => !["", "false", undefined].includes(npmValue(env, option)))
    .map(
      (option) =>
        `npm holds a ${option} setting but this command line has no --${option}: if you gave one, npm kept it (put it after \`--\`); ` +
        `otherwise it comes from an npmrc (\`npm config get ${option}\`)`,
    );
}

/**
 * The refusal of a command line whose options npm kept for itself, or undefined when npm kept none of `options`:
 * `npm run bridge run --once` (no `--`) hands the bridge a bare `run`, which polls forever, and npm only warns. npm
 * leaves each option it kept in the environment as `npm_config_<name>` (`--no-open` as `npm_config_open`), which tells
 * such options apart; their values reach the command as stray arguments, left out of the suggested command line, which
 * starts with `commandLine` (`["npm run sandbox --"]`). The sandbox's command line uses it too.
 *
 * @example
 * keptByNpm({ port: { type: "string" } }, ["4010"], { npm_config_port: "true" }, ["npm run sandbox --"]);
 * // "npm kept --port for itself: ... as in `npm run sandbox -- --port <value>` ..."
 */
export function keptByNpm(options: Options, argv: readonly string[], env: Env, commandLine: readonly string[]): string | undefined {
  const kept = Object.entries(options)
    .filter(([option]) => !NPM_OWN_OPTIONS.has(option) && npmValue(env, option) !== undefined)
    .map(([option, { type }]) => (type === "string" ? `--${option} <value>` : `--${option}`));
  if (kept.length === 0) return undefined;
  // What was given after `--` stays, values included; what npm left behind (values of the options it kept) goes.
  const { tokens = [] } = parseArgs({ args: [...argv], options, strict: false, allowPositionals: true, tokens: true });
  const stray = new Set(tokens.filter((token) => token.kind === "positional").map((token) => token.index));
  const given = argv.filter((_, index) => !stray.has(index));
  const names = kept.map((option) => option.split(" ")[0] ?? option);
  return (
    `npm kept ${names.join(", ")} for itself: options after the script name go to npm unless they follow \`--\`, as in ` +
    `\`${[...commandLine, ...given, ...kept].join(" ")}\` (given no such option, an npmrc sets it: see \`npm config get ${npmKey((names[0] ?? "").slice(2))}\`)`
  );
}

/** Throws the refusal of {@link keptByNpm} for command `name` run under one of this package's scripts. */
export function assertNotKeptByNpm(name: string, argv: readonly string[], env: Env): void {
  const options = optionsUnderNpm(name, env);
  if (options === undefined) return;
  // The `start` and `bench` scripts name their command themselves; `bridge` takes it from the command line.
  const script = env["npm_lifecycle_event"];
  const commandLine = script === "bridge" ? ["npm run bridge --", name] : [script === "start" ? "npm start --" : `npm run ${script} --`];
  const refusal = keptByNpm(options, argv, env, commandLine);
  if (refusal !== undefined) throw new UsageError(refusal);
}
