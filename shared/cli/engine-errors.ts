/**
 * What a failure of the engine or of the local adapters means to the person running the bridge: the CLI error with its
 * exit code, worded with the setting or file to fix. Kept apart from the wiring so that the cycle lease and every
 * command runner word one failure the same way.
 */
import { CycleAbortedError, PUBLISH_STEP, ReauthorizationNeededError, causedByClientRefusal, causeMatching } from "../bridge/index.js";
import { isInvalidClient } from "../qashio/auth/token-provider.js";
import { HardLinksUnsupportedError, LocalStateError, TokenFileUnwritableError, type LeaseUnreadableError } from "../local/index.js";
import { baseUrlHint } from "./base-url-hint.js";
import { unreadableProblem } from "./access-advice.js";
import { within } from "./path-checks.js";
import type { LocalSettings } from "./config.js";
import type { LocalBridge, LocalState } from "./local-bridge.js";
import { AuthorizeAgainError, CliError, ClientCredentialsRejectedError, ConfigError, CycleFailedError, isLeaseUnreadable } from "./errors.js";
import { spendingRefreshes } from "./token-spending.js";

/**
 * A file of the state directory that cannot be used, as an error naming it and the setting (exit 2: it will not heal),
 * under a heading that blames the file, not the settings.
 */
export function stateFileProblem(error: LocalStateError, dir: string, fallbackFile: string, advice: string): ConfigError {
  return stateFileError(`${error.message} (${error.file ?? fallbackFile}); ${advice}`, error, dir);
}

/** The error of {@link stateFileProblem}, worded by `problem`. */
function stateFileError(problem: string, error: LocalStateError, dir: string): ConfigError {
  return new ConfigError([{ setting: "BRIDGE_STATE_DIR", problem }], { cause: error, heading: `A file in the state directory (${dir}) cannot be used` });
}

const CLIENT_SETTINGS = "QASHIO_CLIENT_ID / QASHIO_CLIENT_SECRET";
const CHECK_CLIENT_FIRST = "if either changed, check both first (authorizing again with wrong ones fails too)";

/** Words a failure none of the known kinds matches (exit 1). */
type Otherwise = (e: Error) => string;

const cycleFailed: Otherwise = (e) => `the cycle failed: ${e.name}: ${e.message}`;

/**
 * Converts an engine failure into the CLI's error with its exit code; `otherwise` words a failure none of the known
 * kinds matches (exit 1).
 */
export async function cliErrorOf(error: unknown, bridge: LocalBridge, otherwise: Otherwise = cycleFailed): Promise<CliError> {
  const known = stateFailure(error, bridge.settings.stateDir);
  if (known !== undefined) return known;
  // Checked before the revoked family: the engine may wrap it like any provider failure, but it is a settings problem.
  if (causeMatching(error, isInvalidClient) !== undefined) return new ClientCredentialsRejectedError({ cause: error });
  if (error instanceof ReauthorizationNeededError || (error instanceof Error && error.name === "ReauthorizationRequiredError")) {
    // A 401 naming no invalid_grant is also the answer to wrong client credentials (spec §4.2): say so, they come first.
    const clientToo = causedByClientRefusal(error);
    if (await bridge.tokens.usesSeed().catch(() => false)) {
      return new AuthorizeAgainError(
        (clientToo
          ? `the provider refused QASHIO_REFRESH_TOKEN or ${CLIENT_SETTINGS} (a 401 without an error code answers both): ${CHECK_CLIENT_FIRST}; `
          : "the provider rejected QASHIO_REFRESH_TOKEN (spent, revoked or expired); ") +
          "nothing was stored: set it to a fresh refresh token, or run `npm run bridge -- authorize`",
        { cause: error },
      );
    }
    return new AuthorizeAgainError(
      (clientToo
        ? `the provider refused this integration's refresh token or ${CLIENT_SETTINGS} (a 401 without an error code answers both): ` +
          `${CHECK_CLIENT_FIRST}; else ${bridge.signInAgain.words} to sign in again`
        : `the provider revoked this integration's token family: ${bridge.signInAgain.words} to sign in again`) +
        bridge.tokens.seedIgnoredHint,
      { cause: error },
    );
  }
  if (error instanceof CycleAbortedError) {
    const where = [error.status === undefined ? undefined : `status ${error.status}`, error.requestId === undefined ? undefined : `request ${error.requestId}`]
      .filter(Boolean)
      .join(", ");
    // The engine's message already names the cycle, the failed step and that the next cycle resumes.
    return new CycleFailedError(`${error.message}${where ? ` (${where})` : ""}${baseUrlHint(error, bridge.baseUrl, bridge.settings.baseUrlSetting)}${fileSystemHint(error, bridge.settings)}`, {
      cause: error,
    });
  }
  // Outside the engine (the conform-pii pass id superseded before a cycle, a conform-pii pass): only the state directory.
  return otherFailure(error, bridge.settings, otherwise);
}

/**
 * As {@link cliErrorOf}, for work on the state directory alone, which no provider call took part in (conform-pii, the
 * snapshots reloaded under the cycle lease).
 */
export function stateErrorOf(error: unknown, state: LocalState, otherwise: Otherwise = cycleFailed): CliError {
  return stateFailure(error, state.settings.stateDir) ?? otherFailure(error, state.settings, otherwise);
}

/** The CLI's error for a failure of the state directory's adapters, if `error` is one. */
function stateFailure(error: unknown, stateDir: string): CliError | undefined {
  // Our own adapters' errors (the token file's) are already fit for a person, wherever the engine wrapped them.
  const own = causeMatching(error, (e): e is CliError => e instanceof CliError);
  if (own !== undefined) return own;
  // Not a file to restore: the directory took no write, so no refresh was tried, and the next cycle tries again.
  const unwritable = causeMatching(error, (e): e is TokenFileUnwritableError => e instanceof TokenFileUnwritableError);
  if (unwritable !== undefined) {
    return new CycleFailedError(
      `cannot save a new token set to ${unwritable.file} now (${unwritable.code}), so no token refresh was tried and the stored ` +
        `refresh token is still good: ${unwritableStateDirRemedy(stateDir)}`,
      { cause: error },
    );
  }
  const lease = causeMatching(error, isLeaseUnreadable);
  if (lease !== undefined) return leaseUnreadableProblem(lease, stateDir);
  // Before the file it names is taken for an unreadable one (its EPERM): the directory's file system is the problem.
  const noLinks = causeMatching(error, (e): e is HardLinksUnsupportedError => e instanceof HardLinksUnsupportedError && within(stateDir, e.file ?? ""));
  if (noLinks !== undefined) return noHardLinksProblem(noLinks);
  // A corrupt snapshot segment or quarantine record fails every run alike: name the file instead of retrying.
  const state = causeMatching(error, (e): e is LocalStateError => e instanceof LocalStateError);
  if (state === undefined) return undefined;
  return unreadableStateFileProblem(state, stateDir) ?? stateFileProblem(state, stateDir, "a file in it", "restore it or move it aside");
}

/**
 * A state file whose read this user was refused (EACCES, EPERM: another user's file, such as one a run under sudo
 * wrote while a loop ran), if `error` is one: exit 2, naming its mode, owner and the fix. Never "move it aside": its
 * bytes are most likely fine, and moved aside, its snapshots (or quarantined records) would be lost.
 */
function unreadableStateFileProblem(error: LocalStateError, stateDir: string): ConfigError | undefined {
  const code = systemErrorCode(error.cause);
  if (error.file === undefined || (code !== "EACCES" && code !== "EPERM")) return undefined;
  return stateFileError(unreadableProblem(error.file, error.cause), error, stateDir);
}

/**
 * A state directory on a file system that makes no hard links (HardLinksUnsupportedError: vfat, exFAT, a FUSE or SMB
 * mount without them): exit 2, a setting to change, as no retry mends it. Not "make room", as for a full disk, which
 * its EPERM used to be read as, and a `run --interval` loop retried for good. The file it could not create (a lease, the
 * store's id) was not created, so nothing was sent to the provider for it and nothing is lost. `outcome` says what the
 * command left undone (`; this sign-in was not stored`).
 */
export function noHardLinksProblem(error: HardLinksUnsupportedError, outcome = ""): ConfigError {
  return new ConfigError(
    [
      {
        setting: "BRIDGE_STATE_DIR",
        problem: `${error.message}: put BRIDGE_STATE_DIR on a file system that makes them (ext4, XFS, btrfs, ZFS, APFS, NTFS, NFS; not vfat or exFAT), and move its files there${outcome}`,
      },
    ],
    { cause: error, heading: "The state directory's file system cannot hold the bridge's lease files" },
  );
}

/**
 * A lease file, or the listing of the locks directory, that could not be read (LeaseUnreadableError); `outcome` says
 * what the command left undone (`; this sign-in was not stored`). Denied (EACCES, EPERM): exit 2, and not "move it
 * aside": its holder, most likely a bridge another user runs on the same state directory, may be refreshing the token
 * family now, and a second refresh with the same token revokes it. Any other code is a read that failed now (out of
 * file descriptors, a stale NFS handle, an I/O error): exit 1, so that a loop tries again at its next interval rather
 * than stop as for bad settings.
 */
export function leaseUnreadableProblem(error: LeaseUnreadableError, stateDir: string, outcome = ""): CliError {
  if (!error.denied) {
    const check = leaseReadAdvice(error.code, stateDir);
    return new CycleFailedError(
      stoppedBeforeRefresh(
        `whether another process holds the lease is unknown: ${error.failure} now (${error.code}), so the run stopped`,
        " without touching the token",
        `${outcome}; ${check}`,
      ),
      { cause: error },
    );
  }
  return stateFileProblem(
    error,
    stateDir,
    "a lease file",
    `a bridge run by another user may hold ${DENIED_LEASE_REMEDY[error.source]} only once none runs${outcome}`,
  );
}

/**
 * The words of a run that stopped before any token refresh: `before`, `untouched` (that the token was not touched),
 * `after`. True only while this process holds no tokens a failed save left (a `run --interval` loop whose earlier
 * cycle's save failed keeps them, and the refresh token stored is spent): then `untouched` is left out and the end
 * says what is held, that the process keeps trying to save it, and what not to do meanwhile.
 *
 * @example
 * stoppedBeforeRefresh("the lease could not be read, so the run stopped", " without touching the token", "; try again");
 */
export function stoppedBeforeRefresh(before: string, untouched: string, after: string): string {
  const files = spendingRefreshes.unsavedFiles;
  if (files.length === 0) return `${before}${untouched}${after}`;
  return (
    `${before}${after}; meanwhile this process holds, unsaved, the new tokens an earlier token refresh received (the refresh token stored in ` +
    `${files.join(" and ")} is spent): it tries again to save them before its next use of the token (a \`run --interval\` loop: at its next ` +
    "cycle) and before it exits, which Ctrl-C asks for, saying whether they were saved; do not kill it (SIGKILL loses them) nor start another " +
    "bridge on this state directory (once the lease kept for them lapses, it would present the spent refresh token, which revokes the token " +
    "family); there is no need to authorize again while they are held"
  );
}

/** What to do about a lease file or locks directory of another user's, past "a bridge run by another user may hold". */
const DENIED_LEASE_REMEDY: Readonly<Record<LeaseUnreadableError["source"], string>> = {
  file: "it: run every bridge on this state directory as the same user; remove the file",
  listing: "a lease in it: run every bridge on this state directory as the same user; give the directory to this user (chown)",
};

/**
 * What to do about a lease read that failed now with `code`. ESTALE, EIO: the file system itself (a stale NFS handle,
 * a failing disk). ELOOP: symbolic links on the way loop (one at a lease's own name is no lease and skipped, see
 * file-lock.ts), which trying again does not mend. Any other: try again.
 */
function leaseReadAdvice(code: string, stateDir: string): string {
  if (code === "ESTALE" || code === "EIO") return `check the file system of ${stateDir} (BRIDGE_STATE_DIR), then try again`;
  if (code === "ELOOP") return `symbolic links on the path of ${stateDir} (BRIDGE_STATE_DIR) loop: fix them`;
  return "try again";
}

function otherFailure(error: unknown, settings: FileSettings, otherwise: Otherwise): CycleFailedError {
  return new CycleFailedError(`${otherwise(error instanceof Error ? error : new Error(String(error)))}${fileSystemHint(error, settings)}`, { cause: error });
}

/**
 * What to do about a state directory that took no write before anything was sent (the token probe, the cycle lease).
 * Not "run again" alone: a `run --interval` loop tries again by itself, and while it holds tokens a failed save left, a
 * second bridge started beside it is what its message says not to do. Nor "tried again at the next run" alone: the
 * same failure ends `redrive` and `conform-pii`, which nothing runs again.
 */
export function unwritableStateDirRemedy(stateDir: string): string {
  return `make room in or fix ${stateDir} (BRIDGE_STATE_DIR); a \`run --interval\` loop tries again at its next cycle, any other command when started again`;
}

/** The paths the bridge writes: the events file only where it publishes (not conform-pii). */
type FileSettings = Pick<LocalSettings, "stateDir"> & Partial<Pick<LocalSettings, "eventsFile">>;

/** What a file system that takes no more writes answers, and how to say it. */
const REFUSED_WRITES: Readonly<Record<string, string>> = {
  ENOSPC: "is full: make room there",
  EDQUOT: "is over its quota: make room there",
  EROFS: "is read-only: mount it read-write",
};

/**
 * A hint for a cycle that failed on a file system that takes no more writes (full, over quota, read-only): which
 * setting's file system, since the system's own message names no path for a write or fsync on an open file. Only the
 * engine's publish step writes the events file; every other write is the state directory's.
 */
function fileSystemHint(error: unknown, settings: FileSettings): string {
  const refused = causeMatching(error, (e): e is { code: string } => Object.hasOwn(REFUSED_WRITES, systemErrorCode(e) ?? ""));
  if (refused === undefined) return "";
  const events = error instanceof CycleAbortedError && error.step === PUBLISH_STEP;
  const [setting, path] = events && settings.eventsFile !== undefined ? ["BRIDGE_EVENTS_FILE", settings.eventsFile] : ["BRIDGE_STATE_DIR", settings.stateDir];
  // Never "use another state directory": its tokens and snapshots stay behind, and a fresh one would send the spent seed.
  const elsewhere = events ? ", or set BRIDGE_EVENTS_FILE elsewhere" : "";
  return `; the file system of ${path} (${setting}, ${refused.code}) ${REFUSED_WRITES[refused.code]}${elsewhere}; nothing is lost`;
}

/** The `code` of a system call's error (ENOSPC, EROFS, ENOENT, ...), if `error` is one. */
export function systemErrorCode(error: unknown): string | undefined {
  const { code } = (error ?? {}) as { code?: unknown };
  return typeof code === "string" && /^E[A-Z0-9]+$/.test(code) ? code : undefined;
}
