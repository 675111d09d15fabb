/**
 * Errors of the command-line interface. Each carries the process exit code it maps to,
 * and never a secret value (settings are named, never echoed).
 */
import { causeMatching } from "../bridge/errors.js";
import { LeaseUnreadableError } from "../local/errors.js";

/** Exit codes of `bridge.ts` commands (README's Local mode sums them up; docs/local-mode.md, Exit codes, has every condition). */
export const EXIT = {
  ok: 0,
  /** A cycle or command could not finish (provider unreachable, faults that outlasted retries, an unexpected error). */
  failed: 1,
  /** Bad command-line arguments or settings. */
  usage: 2,
  /** The provider revoked the token family: a person must run `authorize` again. */
  reauthorize: 3,
  /**
   * `run --once` stopped before it finished (time budget, page bound, a first Ctrl-C, SIGTERM or SIGHUP, a publisher
   * of the caller's own that took no events for now), or `redrive` or `conform-pii` at its time budget or signal; the
   * next run resumes where it stopped.
   */
  incomplete: 4,
  /** Stopped at once by a second Ctrl-C, SIGTERM or SIGHUP; the first stops cleanly (conventional 128 + 2). */
  interrupted: 130,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** Base class of CLI errors: a message fit for a person, plus the exit code. */
export class CliError extends Error {
  override name = "CliError";
  readonly exitCode: ExitCode;

  constructor(message: string, exitCode: ExitCode, options?: ErrorOptions) {
    super(message, options);
    this.exitCode = exitCode;
  }
}

/**
 * How `main` words `error` after "error: ": a CliError's message, anything else as unexpected, with its name.
 *
 * @example
 * line(io.stderr, `error: ${failureMessage(error)}`);
 */
export function failureMessage(error: unknown): string {
  if (error instanceof CliError) return error.message;
  const e = error instanceof Error ? error : new Error(String(error));
  return `unexpected ${e.name}: ${e.message}`;
}

/**
 * `failure` with `then` said at its end, under its exit code (1 for an error no CliError describes): for what became
 * of tokens held unsaved, known only once the failure that reported them held (they "will be saved again") ended the
 * command, so that the line a person reads last is true. `failure` is kept for a caller whose own end makes `then`
 * untrue (the demo, which removes the token file with its directory).
 */
export class FailureThenError extends CliError {
  override name = "FailureThenError";
  readonly failure: unknown;

  constructor(failure: unknown, then: string) {
    super(`${failureMessage(failure)}; ${then}`, failure instanceof CliError ? failure.exitCode : EXIT.failed, { cause: failure });
    this.failure = failure;
  }
}

/** Bad command-line arguments (unknown flag, missing value, malformed duration). */
export class UsageError extends CliError {
  override name = "UsageError";

  constructor(message: string, options?: ErrorOptions) {
    super(message, EXIT.usage, options);
  }
}

/**
 * A sign-in whose grant lets no cycle read anything (exit 2, as a bad `--scope` is a bad argument): its tokens are not
 * stored, as every run would fail on them with a 403, so the sign-in before it (if any) goes on working.
 */
export class GrantTooNarrowError extends CliError {
  override name = "GrantTooNarrowError";

  constructor(message: string, options?: ErrorOptions) {
    super(message, EXIT.usage, options);
  }
}

/** One setting that is missing or invalid: its name and why, never its value. */
export interface SettingIssue {
  readonly setting: string;
  readonly problem: string;
}

/** Missing or invalid settings; the message names every bad setting at once. */
export class ConfigError extends CliError {
  override name = "ConfigError";
  readonly issues: readonly SettingIssue[];

  /** `heading` says what the issues are about. @default "Invalid settings (environment or .env)" */
  constructor(issues: readonly SettingIssue[], options?: ErrorOptions & { readonly heading?: string }) {
    const lines = issues.map((i) => `  - ${i.setting}: ${i.problem}`);
    super(`${options?.heading ?? "Invalid settings (environment or .env)"}:\n${lines.join("\n")}`, EXIT.usage, options);
    this.issues = issues;
  }
}

/** The setting each part of a state directory's binding comes from. */
const BINDING_SETTINGS = { baseUrl: "QASHIO_BASE_URL", clientId: "QASHIO_CLIENT_ID", tenant: "BRIDGE_TENANT" } as const;

/**
 * BRIDGE_STATE_DIR belongs to another provider, client or tenant (exit 2): its tokens must not go to another provider,
 * and another tenant's snapshots would hide changes. Names the settings that differ, and both values of each (base
 * URLs without credentials, client ids and tenant ids are no secrets), since `localhost` against `127.0.0.1` or a
 * trailing path is easy to miss.
 */
export class StateDirTakenError extends ConfigError {
  override name = "StateDirTakenError";

  constructor(
    fields: readonly (keyof typeof BINDING_SETTINGS)[],
    dir: string,
    bindings: { readonly recorded: Partial<Record<keyof typeof BINDING_SETTINGS, string>>; readonly given: Partial<Record<keyof typeof BINDING_SETTINGS, string>> },
    options?: ErrorOptions,
  ) {
    const settings = fields.map((field) => BINDING_SETTINGS[field]).join(", ");
    const values = fields.map((field) => `${BINDING_SETTINGS[field]} ${bindings.recorded[field]} there, ${bindings.given[field]} here`).join("; ");
    super(
      [
        {
          setting: "BRIDGE_STATE_DIR",
          problem: `${dir} holds the tokens or snapshots of another ${settings} than these settings name (${values}; see its binding.json): use another state directory`,
        },
      ],
      options,
    );
  }
}

/** The command line that records a new `hash` salt on purpose (see {@link PiiSaltChangedError}). */
export const NEW_PII_SALT_COMMAND = "npm run bridge -- run --once --new-pii-salt";

/**
 * BRIDGE_PII_SALT is not the salt the pseudonyms in BRIDGE_STATE_DIR's snapshots were made with (exit 2): a mistyped
 * salt or a swapped .env would publish every item pulled again as a change of its personal fields, then store it under
 * that salt, so that the salt set right again would publish the same once more. Names neither salt nor fingerprint.
 */
export class PiiSaltChangedError extends ConfigError {
  override name = "PiiSaltChangedError";

  constructor(dir: string, options?: ErrorOptions) {
    super(
      [
        {
          setting: "BRIDGE_PII_SALT",
          problem:
            `differs from the salt the pseudonyms in this state directory (${dir}) were made with (its fingerprint is in binding.json; ` +
            "the salt itself is not kept): set the salt it ran with (check the environment and .env); nothing was sent or written. " +
            `To switch salts on purpose, run \`${NEW_PII_SALT_COMMAND}\` once: it records the new salt, and each hashed item ` +
            "pulled from then on publishes one change of its pseudonyms (conform-pii cannot re-hash them: it has no cleartext)",
        },
      ],
      { ...options, heading: "The PII salt changed" },
    );
  }
}

/**
 * `run --new-pii-salt` with the salt BRIDGE_STATE_DIR records already (exit 2): nothing to switch, and the flag left in
 * a service definition, cron line or script would take a later mistyped salt as a switch. Names neither salt nor fingerprint.
 */
export class PiiSaltUnchangedError extends UsageError {
  override name = "PiiSaltUnchangedError";

  constructor(dir: string, options?: ErrorOptions) {
    super(
      `--new-pii-salt refused: BRIDGE_PII_SALT is already the salt this state directory (${dir}) records (its fingerprint is in binding.json), ` +
        "so there is nothing to switch; if you switched salts, the switch is done: a run with --new-pii-salt recorded this salt, even one whose cycle then failed. " +
        "Nothing was sent or written: remove --new-pii-salt and run again. The flag is for one run: left in a service definition, cron line or script, " +
        "it would take a later mistyped BRIDGE_PII_SALT as a switch and publish every hashed item pulled again as a change",
      options,
    );
  }
}

/**
 * The provider refused the client id and secret (OAuth `invalid_client`): a settings problem (exit 2). Nothing was
 * revoked, so the operator fixes the settings instead of authorizing again.
 */
export class ClientCredentialsRejectedError extends ConfigError {
  override name = "ClientCredentialsRejectedError";

  constructor(options?: ErrorOptions) {
    super(
      [
        {
          setting: "QASHIO_CLIENT_ID / QASHIO_CLIENT_SECRET",
          problem: "refused by the provider's token endpoint (invalid_client): check both values; no token was revoked",
        },
      ],
      options,
    );
  }
}

/** The `.env` file exists but cannot be read (a directory, no permission, a link to nothing): exit 2, naming the file. */
export class EnvFileError extends CliError {
  override name = "EnvFileError";
  readonly file: string;

  /**
   * @param reason - the system error code (EISDIR, EACCES) or what is wrong, never the file's contents.
   * @param options.remedy - what to do about it, when more can be said than "fix or remove it".
   */
  constructor(file: string, reason: string, options: ErrorOptions & { readonly remedy?: string } = {}) {
    const { remedy = "fix or remove it", ...errorOptions } = options;
    super(`cannot read the settings file ${file} (${reason}): ${remedy}`, EXIT.usage, errorOptions);
    this.file = file;
  }
}

/** The token family is revoked or no token is known: a person must authorize again (exit 3; the CLI form of the engine's ReauthorizationNeededError). */
export class AuthorizeAgainError extends CliError {
  override name = "AuthorizeAgainError";

  constructor(message: string, options?: ErrorOptions) {
    super(message, EXIT.reauthorize, options);
  }
}

/** How a person signs in again, said by the errors that end with exit 3. */
export interface SignInAgain {
  /** What to do, as said after a colon: "run `npm run bridge -- authorize`". */
  readonly words: string;
  /**
   * Whether signing in again writes the same token file and state directory (authorize), so what must be so first
   * (the directory taking writes) is named; a demo starts anew in a directory of its own.
   */
  readonly sameState: boolean;
}

/** How a person signs in again in local mode. */
export const AUTHORIZE_AGAIN: SignInAgain = { words: "run `npm run bridge -- authorize`", sameState: true };

/** The token file cannot be used (not JSON, no refresh token): a new token set from `authorize` replaces it. */
export class TokenFileError extends CliError {
  override name = "TokenFileError";
  /** Absolute path of the token file. */
  readonly file: string;

  /**
   * @param reason - what is wrong with the file (the local adapter's message: it never quotes the contents).
   * @param options.hint - appended to the message (what else could fix it).
   * @param options.signInAgain - what signs in again then. @default AUTHORIZE_AGAIN
   */
  constructor(file: string, reason: string, options: ErrorOptions & { readonly hint?: string; readonly signInAgain?: SignInAgain } = {}) {
    const { hint = "", signInAgain = AUTHORIZE_AGAIN, ...errorOptions } = options;
    const then = signInAgain.sameState ? `${signInAgain.words} to store a new token set` : signInAgain.words;
    super(`cannot use the token file ${file} (${reason}): ${then}${hint}`, EXIT.reauthorize, errorOptions);
    this.file = file;
  }
}

/**
 * Tokens the provider issued could not be saved before the process ends: the refresh token they replaced is spent, so
 * the next run would be refused (and revoke the family). A person must authorize again once the file takes writes; a
 * demo user starts a new demo, which signs in anew in a directory of its own.
 */
export class TokensLostError extends CliError {
  override name = "TokensLostError";
  /** Absolute path of the token file. */
  readonly file: string;

  /**
   * @param options.cause - what had ended the command before, if anything: its message is kept in this one.
   * @param options.failure - why the tokens could still not be saved (the token provider's `heldTokensFailure`): it
   *   names what must be so again before authorizing, where that is not the state directory taking writes.
   * @param options.signInAgain - what signs in again then; the token file and what must be so first are named only
   *   when it signs in over them. @default AUTHORIZE_AGAIN
   */
  constructor(file: string, options: ErrorOptions & { readonly failure?: unknown; readonly signInAgain?: SignInAgain } = {}) {
    const { failure, signInAgain = AUTHORIZE_AGAIN, ...errorOptions } = options;
    const before = errorOptions.cause instanceof Error ? `; before that: ${errorOptions.cause.message}` : "";
    const lost = signInAgain.sameState
      ? `to ${file} and is lost with this process; the one stored there is spent, so the provider will refuse it: ` +
        `once ${heldTokensBlocker(failure) ?? "the state directory takes writes again (space, permissions, a read-only mount)"}, `
      : "and is lost with this process; the one it replaced is spent: ";
    super(`the provider's new refresh token could not be saved ${lost}${signInAgain.words}${before}`, EXIT.reauthorize, errorOptions);
    this.file = file;
  }
}

/** A LeaseUnreadableError (the lease file, or the locks directory, could not be read). */
export const isLeaseUnreadable = (e: unknown): e is LeaseUnreadableError => e instanceof LeaseUnreadableError;

/**
 * What must be so again before authorizing over tokens a failed save left held and that are lost with the process,
 * when `failure`, why they could still not be saved, is not the state directory taking no writes: the token refresh
 * lease kept for them could not be read, so they were not saved without it. Kept here, beside TokensLostError, as
 * bridge.ts words a second Ctrl-C's loss before any command (and its packages) is loaded.
 */
function heldTokensBlocker(failure: unknown): string | undefined {
  const lease = causeMatching(failure, isLeaseUnreadable);
  return lease && `the token refresh lease can be read again (${lease.failure} (${lease.code}))`;
}

/** The authorization-code flow failed (state mismatch, denied, timed out, exchange failed). */
export class AuthorizeError extends CliError {
  override name = "AuthorizeError";

  constructor(message: string, options?: ErrorOptions) {
    super(message, EXIT.failed, options);
  }
}

/** A cycle could not finish; `cause` holds the engine or provider error. */
export class CycleFailedError extends CliError {
  override name = "CycleFailedError";

  constructor(message: string, options?: ErrorOptions) {
    super(message, EXIT.failed, options);
  }
}

/**
 * Whether a loop of cycles (`run --interval`, the demo) tries again at its next cycle after `error`: only after a
 * cycle that could not finish for now (exit 1). A revoked token family, bad settings or a state directory gone (exit
 * 2, 3) would fail every cycle alike, and an unexpected error is no outage to wait out.
 *
 * @example
 * if (!retriedNextCycle(error)) throw error;
 */
export function retriedNextCycle(error: unknown): error is CliError {
  return error instanceof CliError && error.exitCode === EXIT.failed;
}

/**
 * A `--once` cycle that stopped before it finished (time budget, page bound, a stop request, an events file that took
 * no events for now), or a re-drive that ran out of time: nothing is lost, the next run resumes.
 */
export class CycleIncompleteError extends CliError {
  override name = "CycleIncompleteError";

  constructor(message: string, options?: ErrorOptions) {
    super(message, EXIT.incomplete, options);
  }
}

/**
 * `redrive` left some quarantine records in place (their event failed again, their transaction still fails validation,
 * it is gone, or the provider refuses its read).
 */
export class RedriveIncompleteError extends CliError {
  override name = "RedriveIncompleteError";
  /** Records kept. */
  readonly kept: number;

  constructor(message: string, kept: number, options?: ErrorOptions) {
    super(message, EXIT.failed, options);
    this.kept = kept;
  }
}

/** `conform-pii` stopped at its time budget: snapshots not reached keep their old form until a run goes on. */
export class ConformIncompleteError extends CliError {
  override name = "ConformIncompleteError";
  /** Where the pass goes on (`--cursor`); undefined when it stopped before its first page. */
  readonly cursor?: string;

  constructor(message: string, cursor: string | undefined, options?: ErrorOptions) {
    super(message, EXIT.incomplete, options);
    this.cursor = cursor;
  }
}
