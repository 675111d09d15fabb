/**
 * Local-mode settings: read once from the environment merged with an optional `.env` file (./env-file.ts; the
 * environment wins), validated in one place, defaults named as constants.
 * Error messages name the setting and the problem, never the value.
 */
import { join, resolve, sep } from "node:path";
import { DEFAULT_SOURCE } from "../bridge/deps.js";
import { eventSourceProblem } from "../bridge/events/source.js";
import { PII_MODES, piiSaltProblem, type PiiMode } from "../bridge/pii.js";
import { STATE_FILES } from "../local/layout.js";
import { ConfigError, type SettingIssue } from "./errors.js";
import { ENV_FILE, QUOTES } from "./env-file.js";
import { didYouMean, nearest } from "../nearest.js";
import {
  eventsFileAccessProblem,
  eventsFileProblem,
  eventsFileTakesState,
  foreignStateDirProblem,
  realPathOf,
  stateDirAccessProblem,
  stateDirProblem,
  stateDirUnderEventsFile,
  statOf,
} from "./path-checks.js";
import { uncheckedProblem } from "./access-advice.js";
import type { CommandName } from "./command-options.js";
import { durationRangeProblem, readDuration } from "./duration.js";
import { AUTHORIZE_URL_ENV_VAR, BASE_URL_ENV_VARS, authorizeUrlProblem, baseUrlProblem, normalisedAddress, type QashioDeployment } from "../qashio/config.js";

export const DEFAULT_STATE_DIR = ".state";
export const DEFAULT_EVENTS_FILE = "events.jsonl";
export const DEFAULT_EVENT_SOURCE = DEFAULT_SOURCE;
export const DEFAULT_PII_MODE = "redact";
export const DEFAULT_CYCLE_BUDGET_MS = 5 * 60_000;
export const LOG_LEVELS = ["debug", "info", "warn", "error"] as const;
/** Named provider environments QASHIO_BASE_URL may use instead of a URL (resolved through BASE_URL_ENV_VARS). */
export const NAMED_ENVIRONMENTS = ["production", "eu", "sandbox"] as const;

export type LogLevel = (typeof LOG_LEVELS)[number];

/** Environment variables as a plain map (process.env, or a test's own). */
export type Env = Readonly<Record<string, string | undefined>>;

/** Settings of the provider connection, shared by `run` and `authorize`. */
export interface ProviderSettings {
  /** The resolved base URL (a named environment is resolved through its QASHIO_*_URL variable). */
  readonly baseUrl: string;
  /** The variable that holds {@link baseUrl}: QASHIO_BASE_URL, or the QASHIO_*_URL a named environment reads. */
  readonly baseUrlSetting: string;
  readonly clientId: string;
  readonly clientSecret: string;
}

/** Validated settings of the state directory alone: all of `conform-pii`'s, which never calls the provider. */
export interface StateSettings {
  readonly tenant: string;
  /** Absolute path. */
  readonly stateDir: string;
  readonly piiMode: PiiMode;
  readonly piiSalt?: string;
  readonly cycleBudgetMs: number;
  readonly logLevel: LogLevel;
}

/** Validated settings of `run` (and `redrive`). */
export interface LocalSettings extends ProviderSettings, StateSettings {
  /** Stands in for a stored token while the state directory holds none; never saved itself (see local-tokens.ts). */
  readonly refreshToken?: string;
  /** Absolute path of the JSON Lines event file. */
  readonly eventsFile: string;
  readonly eventSource: string;
  readonly emitCardCreated: boolean;
  /** Read each card's detail in the card walk (limit amounts and other settings the list does not show). */
  readonly cardDetails: boolean;
}

/** The commands that read settings (demo and bench set up their own). */
export type SettingsCommand = Extract<CommandName, "run" | "redrive" | "conform-pii" | "authorize">;

/**
 * One row of the settings table: `help` prints it (each command's own help the rows naming that command), and a test
 * checks README's table against it. What each setting means is README's to say (a copy here drifted from it unseen).
 */
export interface SettingDoc {
  readonly name: string;
  /**
   * `yes`, `no`, or when it is required: `with \`hash\``, `while no token is stored`, `except for \`<command>\``, or
   * `unless \`<command> <option>\` has it` (an option of that command can supply it: for the other commands it is
   * required outright).
   */
  readonly required: string;
  readonly default: string;
  /**
   * The commands that read it: each refuses a bad value of it. `authorize` also looks at BRIDGE_EVENTS_FILE, but only
   * so that the events file `run` keeps in the state directory is no foreign entry there: it never refuses it.
   */
  readonly commands: readonly SettingsCommand[];
  /** With that option, that command neither uses it nor refuses a bad value of it. */
  readonly unusedWith?: { readonly command: SettingsCommand; readonly option: string };
}

const LOCAL: readonly SettingsCommand[] = ["run", "redrive"];
const PROVIDER: readonly SettingsCommand[] = [...LOCAL, "authorize"];
const STATE: readonly SettingsCommand[] = [...LOCAL, "conform-pii"];
const EVERY: readonly SettingsCommand[] = [...STATE, "authorize"];
/** authorize --secret-id puts the tokens into the secret, not into a state directory (readAuthorizeSettings). */
const SECRET_ID_AUTHORIZE = { command: "authorize", option: "--secret-id" } as const;

export const SETTINGS: readonly SettingDoc[] = [
  { name: "QASHIO_BASE_URL", required: "yes", default: "", commands: PROVIDER },
  // authorize --secret-id takes the client the secret holds for one unset (authorizeCommand).
  { name: "QASHIO_CLIENT_ID", required: "unless `authorize --secret-id` has it", default: "", commands: PROVIDER },
  { name: "QASHIO_CLIENT_SECRET", required: "unless `authorize --secret-id` has it", default: "", commands: PROVIDER },
  // Else the token stored by authorize (checkPaths).
  { name: "QASHIO_REFRESH_TOKEN", required: "while no token is stored", default: "", commands: LOCAL },
  { name: "QASHIO_AUTHORIZE_URL", required: "no", default: "the base URL", commands: ["authorize"] },
  { name: "BRIDGE_TENANT", required: "except for `authorize`", default: "", commands: EVERY, unusedWith: SECRET_ID_AUTHORIZE },
  { name: "BRIDGE_STATE_DIR", required: "no", default: DEFAULT_STATE_DIR, commands: EVERY, unusedWith: SECRET_ID_AUTHORIZE },
  { name: "BRIDGE_EVENTS_FILE", required: "no", default: DEFAULT_EVENTS_FILE, commands: LOCAL },
  { name: "BRIDGE_PII_MODE", required: "no", default: DEFAULT_PII_MODE, commands: STATE },
  { name: "BRIDGE_PII_SALT", required: "with `hash`", default: "", commands: STATE },
  { name: "BRIDGE_EVENT_SOURCE", required: "no", default: DEFAULT_EVENT_SOURCE, commands: LOCAL },
  { name: "BRIDGE_EMIT_CARD_CREATED", required: "no", default: "false", commands: ["run"] },
  { name: "BRIDGE_CARD_DETAILS", required: "no", default: "false", commands: ["run"] },
  { name: "BRIDGE_CYCLE_BUDGET", required: "no", default: "5m", commands: STATE },
  { name: "BRIDGE_LOG_LEVEL", required: "no", default: "info", commands: STATE },
];

/** A variable name as a shell writes it: only such a name is ever printed. */
const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Warnings for variables under the settings' prefixes (`QASHIO_`, `BRIDGE_`) that name no setting: most likely a
 * typo (`BRIDGE_PII_MOD`), which would otherwise leave the default silently in force. Names only, never values.
 *
 * @example
 * settingNameWarnings({ BRIDGE_PII_MOD: "hash" }); // ["BRIDGE_PII_MOD is not a setting (did you mean BRIDGE_PII_MODE?); see `npm run bridge -- help`"]
 */
export function settingNameWarnings(env: Env): string[] {
  const known = [...SETTINGS.map((s) => s.name), ...Object.values(BASE_URL_ENV_VARS)];
  return Object.keys(env)
    // Only a plausible name is quoted: a "name" with spaces, `:` or line breaks may hold a value (see parseEnvFile).
    // The prefix in any case: `bridge_pii_mode` names no setting either, and would leave the default in force as well.
    .filter((name) => VARIABLE_NAME.test(name) && /^(QASHIO|BRIDGE)_/i.test(name) && env[name] !== undefined && !known.includes(name))
    .sort()
    .map((name) => {
      const near = nearest(name, known) ?? underOtherPrefix(name, known);
      return `${name} is not a setting${didYouMean(near)}; see \`npm run bridge -- help\``;
    })
    .concat(quotedSettingWarnings(env, known));
}

/**
 * The setting `name` is under the other prefix (`QASHIO_TENANT` for `BRIDGE_TENANT`, `BRIDGE_BASE_URL` for
 * `QASHIO_BASE_URL`), which no edit distance finds: the prefixes differ in every letter.
 */
function underOtherPrefix(name: string, known: readonly string[]): string | undefined {
  const rest = (setting: string) => setting.toUpperCase().replace(/^(?:QASHIO|BRIDGE)_/, "");
  return known.find((setting) => rest(setting) === rest(name));
}

/**
 * Settings whose whole value is wrapped in matching quotes: `docker run --env-file` and systemd's `EnvironmentFile`
 * pass `NAME="value"` on with its quotes, and a quoted client secret would only show later as `invalid_client`.
 * `.env` values come unquoted (see parseEnvFile), so this is an environment's doing. Names only, never values.
 */
function quotedSettingWarnings(env: Env, known: readonly string[]): string[] {
  return known
    // A path so wrapped is refused instead (pathSetting).
    .filter((name) => !PATH_SETTINGS.has(name) && wrappedInQuotes(env[name]))
    .sort()
    .map((name) => `${name} is wrapped in quotes, which are taken as part of it (an env file of docker or systemd keeps them): remove them`);
}

/** Whether the whole of `value` is wrapped in one kind of quote. */
function wrappedInQuotes(value: string | undefined): boolean {
  return value !== undefined && value.length >= 2 && QUOTES.includes(value.charAt(0)) && value.endsWith(value.charAt(0));
}

/** The problems of a required setting left unset, and of one set blank (spaces or nothing: read as unset). */
const NOT_SET = "is required but not set";
/** Where `authorize --secret-id` finds its base URL (README, "3. Onboard"). */
const SECRET_ID_BASE_URL_HINT = "with --secret-id, give the tenant stack's output ProviderBaseUrl (the URL its pollers use)";
const SET_BLANK = "is set but blank";

/**
 * Settings whose control characters are taken as they are: the PII salt is opaque, and a salt that held a line break
 * (a `\n` in double quotes in .env) was used consistently and is recorded in the state directory's binding, which
 * refuses a salt that changes (PiiSaltChangedError); refused, no value would give the old pseudonyms back.
 */
const CONTROL_CHARACTERS_TAKEN: ReadonlySet<string> = new Set(["BRIDGE_PII_SALT"]);

/** Collects issues instead of throwing at the first, so one message names every bad setting. */
class Reader {
  readonly issues: SettingIssue[] = [];

  constructor(private readonly env: Env) {}

  /** Settings named already for a control character (a setting may be read more than once). */
  private readonly controlled = new Set<string>();

  /**
   * Value with surrounding whitespace removed; undefined when unset or blank. One holding a control character (C0, DEL
   * or C1: U+0085 is a line break to some readers) is named (never shown) and still returned, so nothing else calls
   * it missing: no setting holds one (the PII salt aside: CONTROL_CHARACTERS_TAKEN), and in .env a `\n` inside double
   * quotes becomes a line break, so a secret with a backslash and an n was another one.
   */
  raw(name: string): string | undefined {
    const value = this.env[name]?.trim();
    if (value === undefined || value === "") return undefined;
    // eslint-disable-next-line no-control-regex -- matching control characters is the point
    if (/[\u0000-\u001f\u007f-\u009f]/.test(value) && !this.controlled.has(name) && !CONTROL_CHARACTERS_TAKEN.has(name)) {
      this.problem(name, "holds a line break or another control character (in .env, \\n inside double quotes is a line break: single-quote the value to keep a backslash)");
      // Refused outright: its other checks would only name the same value again.
      this.controlled.add(name);
      this.refused.add(name);
    }
    return value;
  }

  required(name: string): string {
    const value = this.raw(name);
    if (value === undefined) this.issues.push({ setting: name, problem: this.env[name] === undefined ? NOT_SET : SET_BLANK });
    return value ?? "";
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    // Any case, as for the booleans: `Redact` and `DEBUG` mean what they say.
    const lower = value.toLowerCase();
    const match = allowed.find((choice) => choice === lower);
    if (match !== undefined) return match;
    this.issues.push({ setting: name, problem: `must be one of ${allowed.join(", ")}` });
    return fallback;
  }

  problem(name: string, problem: string): void {
    if (!this.controlled.has(name)) this.issues.push({ setting: name, problem });
  }

  /** Settings whose value is refused outright (not what the person meant): nothing more is checked about them. */
  readonly refused = new Set<string>();

  /**
   * `text`, the value of `name`, as a normalised base URL (or, with `problemOf` {@link authorizeUrlProblem}, authorize
   * screen address); else records why not (never quoting it) and `note`.
   */
  url(name: string, text: string, note = "", problemOf = baseUrlProblem): string | undefined {
    const problem = problemOf(text);
    if (problem === undefined) return normalisedAddress(text);
    this.problem(name, `${problem}${note}`);
    return undefined;
  }
}

function readProvider(r: Reader): ProviderSettings {
  let baseUrl = r.required("QASHIO_BASE_URL");
  let baseUrlSetting = "QASHIO_BASE_URL";
  // Any case, as the other named values (PII mode, log level): `Sandbox` is no URL either.
  if ((NAMED_ENVIRONMENTS as readonly string[]).includes(baseUrl.toLowerCase())) {
    const name = baseUrl.toLowerCase();
    const variable = BASE_URL_ENV_VARS[name as QashioDeployment];
    baseUrlSetting = variable;
    const value = r.raw(variable);
    if (value === undefined) r.problem("QASHIO_BASE_URL", `is "${name}", which needs ${variable} to be set`);
    else baseUrl = r.url(variable, value, ` (QASHIO_BASE_URL is "${name}")`) ?? baseUrl;
  } else if (baseUrl !== "") {
    baseUrl = r.url("QASHIO_BASE_URL", baseUrl, `; or use one of ${NAMED_ENVIRONMENTS.join(", ")}`) ?? baseUrl;
  }
  return { baseUrl, baseUrlSetting, clientId: r.required("QASHIO_CLIENT_ID"), clientSecret: r.required("QASHIO_CLIENT_SECRET") };
}

/** Validated settings of `authorize`. */
export interface AuthorizeSettings {
  readonly baseUrl: string;
  /** As {@link ProviderSettings.baseUrlSetting}. */
  readonly baseUrlSetting: string;
  /** The provider's authorization screen: QASHIO_AUTHORIZE_URL, else the base URL (the sandbox serves it there). */
  readonly authorizeUrl: string;
  /** Undefined only with `tokensInSecret`, where the secret may supply it. */
  readonly clientId?: string;
  readonly clientSecret?: string;
  /** Absolute path; checked only when the tokens go there. */
  readonly stateDir: string;
  /**
   * BRIDGE_TENANT when set, without `tokensInSecret`: authorize needs none, but a state directory of another tenant must
   * not take its tokens.
   */
  readonly tenant?: string;
}

/**
 * Validates every setting `authorize` needs, before any browser opens: base and authorize URLs, client id and secret,
 * and the state directory the tokens go to. With `tokensInSecret` (`--secret-id`) the client settings may be absent
 * (the secret may hold them), and the state directory and tenant are not used, nor checked.
 *
 * @throws ConfigError (exit 2) naming each bad setting.
 * @example
 * const settings = readAuthorizeSettings(await loadEnv(process.env, process.cwd()), process.cwd());
 */
export function readAuthorizeSettings(env: Env, cwd: string, options: { tokensInSecret?: boolean } = {}): AuthorizeSettings {
  const r = new Reader(env);
  const provider = readProvider(r);
  const authorizeText = r.raw(AUTHORIZE_URL_ENV_VAR);
  const authorizeUrl = authorizeText !== undefined ? r.url(AUTHORIZE_URL_ENV_VAR, authorizeText, "", authorizeUrlProblem) : undefined;
  const inSecret = options.tokensInSecret === true;
  // With --secret-id the tokens go into the secret: the state directory and tenant are not used, so not refused either
  // (a .env left from local mode may hold them); the path is resolved only to fill the settings.
  const stateDir = pathSetting(inSecret ? new Reader(env) : r, "BRIDGE_STATE_DIR", cwd, DEFAULT_STATE_DIR);
  let tenant: string | undefined;
  if (!inSecret) {
    // authorize writes no events, but the events file `run` is set to put in the state directory is no foreign entry
    // there (a first authorize must take what run takes); resolved as run resolves it, by a reader of its own, as its
    // problems are run's to name.
    const eventsFile = pathSetting(new Reader(env), "BRIDGE_EVENTS_FILE", cwd, DEFAULT_EVENTS_FILE);
    checked(r, "BRIDGE_STATE_DIR", stateDir, () => checkStateDir(r, stateDir, { eventsFile }));
    tenant = r.raw("BRIDGE_TENANT");
    if (tenant !== undefined) checkTenant(r, tenant);
  }
  // Only their absence: a value given is used, so what is wrong with it still counts.
  const optional = inSecret ? ["QASHIO_CLIENT_ID", "QASHIO_CLIENT_SECRET"] : [];
  const absent = (i: SettingIssue) => i.problem === NOT_SET || i.problem === SET_BLANK;
  const issues = r.issues
    .filter((i) => !(optional.includes(i.setting) && absent(i)))
    // The stack knows the URL its pollers refresh at: a token signed in anywhere else is of no use to them.
    .map((i) => (inSecret && i.setting === "QASHIO_BASE_URL" && absent(i) ? { ...i, problem: `${i.problem}: ${SECRET_ID_BASE_URL_HINT}` } : i));
  if (issues.length > 0) throw new ConfigError(issues);
  return {
    baseUrl: provider.baseUrl,
    baseUrlSetting: provider.baseUrlSetting,
    authorizeUrl: authorizeUrl ?? provider.baseUrl,
    clientId: provider.clientId === "" ? undefined : provider.clientId,
    clientSecret: provider.clientSecret === "" ? undefined : provider.clientSecret,
    stateDir,
    ...(tenant !== undefined ? { tenant } : {}),
  };
}

/** A tenant id: it is written into every event and names the state directory's owner. */
function checkTenant(r: Reader, tenant: string): void {
  if (tenant !== "" && !/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/.test(tenant)) {
    r.problem("BRIDGE_TENANT", "must be 1-64 letters, digits, '-' or '_', starting with a letter or digit");
  }
}

/**
 * Reports a state directory that is a file, is not writable or cannot be created, and one that other local users could
 * write into (they could plant tokens, a binding or snapshots: see stateDirAccessProblem); returns whether it is usable.
 * With `adopt`, for the commands that make a state directory of it (run, redrive, authorize), an existing directory of
 * other files is refused too (foreignStateDirProblem), the events file it is set to hold (`adopt.eventsFile`) aside.
 */
function checkStateDir(r: Reader, stateDir: string, adopt?: { readonly eventsFile?: string }): boolean {
  const problems = [
    stateDirProblem(stateDir),
    stateDirAccessProblem(stateDir),
    adopt === undefined ? undefined : foreignStateDirProblem(stateDir, adopt.eventsFile),
  ].filter((problem) => problem !== undefined);
  for (const problem of problems) r.problem("BRIDGE_STATE_DIR", problem);
  return problems.length === 0;
}

/**
 * Reports an events file that is a directory, is not writable or cannot be created, and one that another user owns or
 * others may write (they could forge or delete events: see eventsFileAccessProblem).
 */
function checkEventsFile(r: Reader, eventsFile: string): void {
  const problems = [eventsFileProblem(eventsFile), eventsFileAccessProblem(eventsFile)].filter((problem) => problem !== undefined);
  for (const problem of problems) r.problem("BRIDGE_EVENTS_FILE", problem);
}

/**
 * Reports an events file that is the state directory or one of its entries, or a path the state directory lies under.
 * The latter is refused outright: the events file's own checks would only say again, less clearly, that it is a directory.
 * Unless the events file is a file already: then the state directory alone is misplaced, and its own check says so.
 */
function checkEventsOutsideState(r: Reader, stateDir: string, eventsFile: string): void {
  if (eventsFileTakesState(stateDir, eventsFile)) {
    r.problem("BRIDGE_EVENTS_FILE", `must not be BRIDGE_STATE_DIR (${stateDir}) or one of the files and directories the bridge keeps there`);
  } else if (stateDirUnderEventsFile(stateDir, eventsFile)) {
    const made = statOf(eventsFile);
    if (made?.isDirectory() === false) return;
    r.problem("BRIDGE_EVENTS_FILE", stateDirUnderEventsProblem(stateDir, eventsFile, made !== undefined));
    r.refused.add("BRIDGE_EVENTS_FILE");
  }
}

/**
 * What is wrong with an events file that `stateDir` lies under (`made`: a directory already), and the file to name
 * instead: one in that directory.
 */
function stateDirUnderEventsProblem(stateDir: string, eventsFile: string, made: boolean): string {
  const wrong = made
    ? `the directory BRIDGE_STATE_DIR (${stateDir}) lies in,`
    : `a path BRIDGE_STATE_DIR (${stateDir}) lies under, so creating the state directory makes it a directory,`;
  const suggested = join(eventsFile, DEFAULT_EVENTS_FILE);
  // Not the state directory itself, were it named so.
  const instead = suggested === stateDir ? join(eventsFile, `bridge-${DEFAULT_EVENTS_FILE}`) : suggested;
  return `is ${eventsFile}, ${wrong} not a file: name a file for the events, such as ${instead}`;
}

/** A `true` / `false` setting (any case), false when unset; anything else is a problem named by the setting. */
function booleanSetting(r: Reader, name: string): boolean {
  const text = r.raw(name)?.toLowerCase();
  if (text !== undefined && text !== "true" && text !== "false") r.problem(name, "must be true or false");
  return text === "true";
}

/** `$NAME` or `${NAME}`: a variable a shell (or docker compose) would expand, which nothing here does. */
const VARIABLE_REFERENCE = /\$(?:\{|[A-Za-z_])/;

/** The settings read by {@link pathSetting}. */
const PATH_SETTINGS: ReadonlySet<string> = new Set(["BRIDGE_STATE_DIR", "BRIDGE_EVENTS_FILE"]);

/**
 * A path setting resolved against `cwd`. A leading `~` (or `~user`) is not a home directory here (only a shell expands
 * it, and not inside quotes or a .env file), so it is refused rather than left to create a directory named `~`; a
 * `$HOME` or `${NAME}` likewise (Node's .env reading expands none), rather than a directory named `$HOME`; and quotes
 * around the whole path (docker's --env-file keeps them), rather than a directory named `"` in the working directory.
 */
function pathSetting(r: Reader, name: string, cwd: string, fallback: string): string {
  const text = r.raw(name) ?? fallback;
  if (wrappedInQuotes(text)) {
    r.problem(name, "is wrapped in quotes, which would be taken as part of the path (an env file of docker or systemd keeps them): remove them");
    r.refused.add(name);
  } else if (text.startsWith("~")) {
    r.problem(name, "starts with ~, which is not expanded here: use an absolute path (or $HOME in a shell)");
    r.refused.add(name);
  } else if (VARIABLE_REFERENCE.test(text)) {
    r.problem(name, "holds $NAME or ${NAME}, which is not expanded here (only a shell expands it, not .env): use the path itself");
    r.refused.add(name);
  }
  return resolve(cwd, text);
}

/**
 * Runs a path check of `setting`, turning a file system error it meets (a stat refused: EACCES under a directory this
 * user cannot enter) into that setting's problem; returns whether the path is usable. A setting refused outright (a
 * leading ~) is not checked: its path is not the one the person meant, so checking it would only add noise.
 */
function checked(r: Reader, setting: string, path: string, check: () => boolean | void): boolean {
  if (r.refused.has(setting)) return false;
  try {
    return check() !== false;
  } catch (error) {
    r.problem(setting, uncheckedProblem(path, error));
    return false;
  }
}

/**
 * The problem of QASHIO_REFRESH_TOKEN unset while `stateDir` holds no token: named when the settings are read, and
 * again when the bridge opens (its token file gone or unusable since), in the same words.
 */
export function noTokenProblem(stateDir: string): string {
  return `is required while the state directory (${stateDir}) holds no token; or run \`npm run bridge -- authorize\` first`;
}

/** Problems of the paths and the token seed that would otherwise surface only mid-run, one issue per setting. */
function checkPaths(r: Reader, stateDir: string, eventsFile: string): void {
  const stateUsable = checked(r, "BRIDGE_STATE_DIR", stateDir, () => checkStateDir(r, stateDir, { eventsFile }));
  checked(r, "BRIDGE_EVENTS_FILE", eventsFile, () => checkEventsFile(r, eventsFile));
  if (stateUsable && r.raw("QASHIO_REFRESH_TOKEN") === undefined) {
    const tokens = join(stateDir, STATE_FILES.tokens);
    checked(r, "BRIDGE_STATE_DIR", tokens, () => {
      if (statOf(tokens) !== undefined) return;
      r.problem("QASHIO_REFRESH_TOKEN", noTokenProblem(stateDir));
    });
  }
}

function readTenant(r: Reader): string {
  const tenant = r.required("BRIDGE_TENANT");
  checkTenant(r, tenant);
  return tenant;
}

function readPii(r: Reader): Pick<StateSettings, "piiMode" | "piiSalt"> {
  const piiMode = r.oneOf("BRIDGE_PII_MODE", PII_MODES, DEFAULT_PII_MODE);
  const piiSalt = r.raw("BRIDGE_PII_SALT");
  if (piiMode === "hash" && piiSalt === undefined) r.problem("BRIDGE_PII_SALT", "is required when BRIDGE_PII_MODE is hash");
  const saltProblem = piiSalt === undefined ? undefined : piiSaltProblem(piiSalt);
  if (saltProblem !== undefined) r.problem("BRIDGE_PII_SALT", saltProblem);
  return { piiMode, piiSalt };
}

function readBudget(r: Reader): number {
  const budgetText = r.raw("BRIDGE_CYCLE_BUDGET");
  if (budgetText === undefined) return DEFAULT_CYCLE_BUDGET_MS;
  // Worded as the options' refusal, less the value: a setting's value is never echoed.
  const reading = readDuration(budgetText, { echo: false });
  if ("problem" in reading) {
    r.problem("BRIDGE_CYCLE_BUDGET", `invalid duration: ${reading.problem}`);
    return DEFAULT_CYCLE_BUDGET_MS;
  }
  const problem = durationRangeProblem(reading.ms, 1_000);
  if (problem !== undefined) r.problem("BRIDGE_CYCLE_BUDGET", problem);
  return reading.ms;
}

/**
 * The problem of a state directory that does not exist, for a command that only works on what one holds (`holds`:
 * "nothing to re-mask"): made afresh, it would report nothing done, as if a mistyped path were the one `run` uses.
 */
function missingStateDir(stateDir: string, holds: string): string {
  return `${stateDir} does not exist, so it holds ${holds}: set it to the directory \`run\` uses`;
}

/**
 * Validates the settings of `conform-pii`, which works on the state directory alone: no provider settings and no token
 * are read (a directory whose token is gone must still be masked). The state directory must exist: created afresh, it
 * would report nothing rewritten, as if a mistyped path were masked. Throws {@link ConfigError} (exit 2).
 *
 * @example
 * const settings = readStateSettings(await loadEnv(process.env, process.cwd()), process.cwd());
 */
export function readStateSettings(env: Env, cwd: string): StateSettings {
  const r = new Reader(env);
  const tenant = readTenant(r);
  const { piiMode, piiSalt } = readPii(r);
  const cycleBudgetMs = readBudget(r);
  const logLevel = r.oneOf("BRIDGE_LOG_LEVEL", LOG_LEVELS, "info");
  const stateDir = pathSetting(r, "BRIDGE_STATE_DIR", cwd, DEFAULT_STATE_DIR);
  checked(r, "BRIDGE_STATE_DIR", stateDir, () => {
    if (statOf(stateDir) === undefined) r.problem("BRIDGE_STATE_DIR", missingStateDir(stateDir, "nothing to re-mask"));
    else checkStateDir(r, stateDir);
  });
  if (r.issues.length > 0) throw new ConfigError(r.issues);
  return { tenant, stateDir, piiMode, piiSalt, cycleBudgetMs, logLevel };
}

/**
 * Validates every setting of `run` at once. Relative paths resolve against `cwd`. The file system is consulted too:
 * a state directory or events file that cannot be created, and a missing QASHIO_REFRESH_TOKEN while the state
 * directory holds no token, are reported with the rest. Throws {@link ConfigError} (exit 2) naming each bad setting.
 * `holds`: for a command that only works on what the state directory holds, what it holds when it does not exist
 * ("no quarantine to re-drive"), said in place of asking for a token. `walksCards: false`: for a command that walks no
 * cards (`redrive`), whose card walk settings are then neither read nor refused (false).
 *
 * @example
 * const settings = readLocalSettings(await loadEnv(process.env, process.cwd()), process.cwd());
 */
export function readLocalSettings(
  env: Env,
  cwd: string,
  { holds, walksCards = true }: { readonly holds?: string; readonly walksCards?: boolean } = {},
): LocalSettings {
  const r = new Reader(env);
  const provider = readProvider(r);
  const tenant = readTenant(r);
  const { piiMode, piiSalt } = readPii(r);
  const eventSource = r.raw("BRIDGE_EVENT_SOURCE") ?? DEFAULT_EVENT_SOURCE;
  // The stack's rule (tenants file, EVENT_SOURCE): a source tried locally is one a tenant can deploy with.
  const sourceProblem = eventSourceProblem(eventSource);
  if (sourceProblem !== undefined) r.problem("BRIDGE_EVENT_SOURCE", sourceProblem);
  const emitCardCreated = walksCards ? booleanSetting(r, "BRIDGE_EMIT_CARD_CREATED") : false;
  const cardDetails = walksCards ? booleanSetting(r, "BRIDGE_CARD_DETAILS") : false;
  const cycleBudgetMs = readBudget(r);
  const logLevel = r.oneOf("BRIDGE_LOG_LEVEL", LOG_LEVELS, "info");
  const stateDir = pathSetting(r, "BRIDGE_STATE_DIR", cwd, DEFAULT_STATE_DIR);
  const eventsFile = pathSetting(r, "BRIDGE_EVENTS_FILE", cwd, DEFAULT_EVENTS_FILE);
  if (!r.refused.has("BRIDGE_STATE_DIR") && !r.refused.has("BRIDGE_EVENTS_FILE")) checkEventsOutsideState(r, stateDir, eventsFile);
  // Appended to, the settings file would hold cardholder data, and every later run would refuse its JSON lines.
  // Through a symbolic link too: the link is appended to just the same.
  const envFile = resolve(cwd, ENV_FILE);
  if (eventsFile === envFile || realPathOf(eventsFile) === realPathOf(envFile)) r.problem("BRIDGE_EVENTS_FILE", `must not be the settings file ${envFile}`);
  // `out/` means a directory to put the events in, but resolve() drops the slash: a file named `out` would be made.
  // Unless a problem of the path is named already (a directory the state directory lies in).
  const eventsText = r.raw("BRIDGE_EVENTS_FILE");
  const eventsNamed = r.refused.has("BRIDGE_EVENTS_FILE") || r.issues.some((issue) => issue.setting === "BRIDGE_EVENTS_FILE");
  if (eventsText !== undefined && !eventsNamed && (eventsText.endsWith("/") || eventsText.endsWith(sep))) {
    r.problem("BRIDGE_EVENTS_FILE", "ends with /, which names a directory: name the file in it, such as out/events.jsonl");
    r.refused.add("BRIDGE_EVENTS_FILE");
  }
  if (holds !== undefined) {
    // `redrive`: no token is asked for to work on a directory that holds nothing, and none is made.
    checked(r, "BRIDGE_STATE_DIR", stateDir, () => {
      if (statOf(stateDir) !== undefined) return;
      r.problem("BRIDGE_STATE_DIR", missingStateDir(stateDir, holds));
      r.refused.add("BRIDGE_STATE_DIR");
    });
  }
  checkPaths(r, stateDir, eventsFile);
  if (r.issues.length > 0) throw new ConfigError(r.issues);
  return {
    ...provider,
    refreshToken: r.raw("QASHIO_REFRESH_TOKEN"),
    tenant,
    stateDir,
    eventsFile,
    piiMode,
    piiSalt,
    eventSource,
    emitCardCreated,
    cardDetails,
    cycleBudgetMs,
    logLevel,
  };
}
