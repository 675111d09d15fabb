/**
 * Local mode composition: the engine wired to the file-backed adapters of shared/local (state directory,
 * JSON Lines event file), the provider client with an OAuth token provider that rotates under a file lock,
 * and one cycle = transactions, then cards.
 */
import { statSync } from "node:fs";
import { join } from "node:path";
import {
  CycleAbortedError,
  PUBLISH_STEP,
  ReauthorizationNeededError as EngineReauthorizationNeeded,
  SnapshotCursorError,
  causeMatching,
  conformSnapshots,
  countProviderRetries,
  cycleDeps,
  emptyReport,
  isTokenFailure,
  pollCards,
  pollTransactions,
  redriveQuarantined,
  reportQuarantineSize,
  totalPublished,
  untilLaterSecond,
  type BridgeEvent,
  type CardCycleDeps,
  type Clock,
  type ConformReport,
  type CycleReport,
  type EventPublisher,
  type Lock,
  type LockHandle,
  type Logger,
  type RedriveReport,
  type TransactionCycleDeps,
} from "../bridge/index.js";
import { TOKEN_PATH } from "../qashio/auth/oauth.js";
import { OAuthTokenProvider, isInvalidClient } from "../qashio/auth/token-provider.js";
import { whileHolding } from "../lease-keep-alive.js";
import { QashioClient } from "../qashio/client.js";
import { resolveBaseUrl } from "../qashio/config.js";
import type { FetchLike } from "../qashio/http.js";
import {
  JsonlEventPublisher,
  LocalStateError,
  StateBindingMismatchError,
  StateBindingMissingError,
  STATE_DIRS,
  STATE_FILES,
  TokenFileUnwritableError,
  bindStateDir,
  createLocalAdapters,
  type BindOptions,
  type FileSnapshotStore,
  type StateBinding,
} from "../local/index.js";
import type { Env, LocalSettings } from "./config.js";
import { CycleLeaseGuard, CycleLeaseLostError } from "./lease-guard.js";
import { LocalTokenStore } from "./local-tokens.js";
import { statOf } from "./path-checks.js";
import { spendingRefreshes } from "./token-spending.js";
import { MemoryMetrics, observePublished, systemClock } from "./console-ports.js";
import {
  CliError,
  ConfigError,
  CycleFailedError,
  EXIT,
  ReauthorizationNeededError,
  ClientCredentialsRejectedError,
  StateDirTakenError,
  TokensLostError,
  UsageError,
} from "./errors.js";

/** Name of the lease one cycle holds, so two local processes never run cycles of one tenant at once. */
export const CYCLE_LOCK = "cycle";
/** Lease length of a cycle: short, so a crashed run blocks the next one for at most this long. */
export const CYCLE_LEASE_MS = 30_000;

const CYCLE_LEASE_MESSAGES = {
  lost: "the cycle lease was lost; another process may start a cycle",
  failed: "renewing the cycle lease failed",
};

export interface LocalBridgeOptions {
  /** Environment for named base URLs (QASHIO_SANDBOX_URL, ...). */
  readonly env: Env;
  readonly logger: Logger;
  /** @default nodeHttpFetch (the client's keep-alive node:http transport) */
  readonly fetch?: FetchLike;
  /** @default the system clock */
  readonly clock?: Clock;
  /** Replaces the JSON Lines publisher (the bench's null sink). */
  readonly publisher?: EventPublisher;
  /** Called with the events each publish accepted (the demo's printer). */
  readonly onPublished?: (events: readonly BridgeEvent[]) => void;
}

/** The engine's dependencies for one tenant in local mode. */
export interface LocalBridge {
  readonly settings: LocalSettings;
  readonly transactions: TransactionCycleDeps;
  readonly cards: CardCycleDeps;
  readonly lock: Lock;
  readonly tokens: LocalTokenStore;
  /** The engines' snapshot store, also as itself: {@link withCycleLock} reloads it under the lease. */
  readonly snapshots: FileSnapshotStore;
  readonly metrics: MemoryMetrics;
  readonly clock: Clock;
  readonly baseUrl: string;
  /** Device and inode of the state directory the bridge opened, as last seen (see {@link withCycleLock}). */
  readonly stateDirIdentity: { dev: number; ino: number };
  /** Checks the engines' writes against the cycle lease {@link withCycleLock} holds (absent: unchecked). */
  readonly leaseGuard?: CycleLeaseGuard;
  /**
   * Saves tokens a failed save left held in memory (see `OAuthTokenProvider.saveHeldTokens`), with a few tries; for
   * when the bridge is done, since exiting with them loses the new refresh token. No token refresh starts afterwards
   * (`OAuthTokenProvider.close`). See {@link usingLocalBridge}.
   *
   * @throws TokensLostError (exit 3) when they still cannot be saved; `failure` (what ended the work, if anything)
   *   becomes its cause and part of its message.
   */
  settleTokens(failure?: unknown): Promise<void>;
}

/** Tries {@link LocalBridge.settleTokens} gives held tokens before it calls them lost, and the pause between two. */
export const HELD_TOKEN_SAVE_TRIES = 3;
export const HELD_TOKEN_SAVE_PAUSE_MS = 500;

/**
 * Stops a cycle (exit 2) when the state directory at its path is no longer the one the bridge opened: moved, removed or
 * replaced while a loop ran. Its lease, binding and snapshots would otherwise start afresh in an empty directory, where
 * every change reads as new, until the missing token file stopped the loop at its next refresh.
 */
function assertSameStateDir(bridge: LocalBridge): void {
  const dir = bridge.settings.stateDir;
  const now = statOf(dir);
  const known = bridge.stateDirIdentity;
  if (now?.isDirectory() && now.dev === known.dev && now.ino === known.ino) return;
  // Some mounts renumber a directory that did not change (an NFS automount remounted, FUSE without stable inodes): one
  // that still holds its binding is a state directory, checked against the settings under the lease as every cycle's.
  if (now?.isDirectory() && statOf(join(dir, STATE_FILES.binding))?.isFile() === true) {
    known.dev = now.dev;
    known.ino = now.ino;
    return;
  }
  throw new ConfigError(
    [
      {
        setting: "BRIDGE_STATE_DIR",
        problem: `${dir} was ${now === undefined ? "moved or removed" : "replaced"} while the bridge ran; nothing was done in this cycle: put the directory back, or start the bridge again to use what is there now`,
      },
    ],
    { heading: "The state directory changed under the bridge" },
  );
}

/**
 * Runs `work` with `bridge`, then settles its tokens (see {@link LocalBridge.settleTokens}) whether the work succeeded
 * or not: a command never exits holding a new refresh token it did not save.
 *
 * @example
 * return usingLocalBridge(bridge, () => runCycle(bridge));
 */
export async function usingLocalBridge<T>(bridge: LocalBridge, work: () => Promise<T>): Promise<T> {
  let result: T;
  try {
    result = await work();
  } catch (error) {
    await bridge.settleTokens(error);
    throw error;
  }
  await bridge.settleTokens();
  return result;
}

/** What one cycle did. */
export interface CycleResult {
  readonly transactions: CycleReport;
  readonly cards: CycleReport;
  /** Total events published by both halves. */
  readonly events: number;
  /** False when a half stopped at the budget or page bound, or as asked (it resumes next cycle). */
  readonly complete: boolean;
  /** True when it stopped early because its signal aborted (Ctrl-C, SIGTERM). */
  readonly interrupted: boolean;
  readonly durationMs: number;
  /** Records held in the quarantine after the cycle (also the `QuarantineSize` gauge). */
  readonly quarantineSize: number;
}

/**
 * Binds the state directory to the provider, client and tenant on first use, and refuses its state to any other.
 *
 * @throws StateDirTakenError when the directory holds state of another provider, client or tenant.
 * @throws ConfigError when its binding file is unreadable.
 * @example
 * await bindToSettings(settings.stateDir, { baseUrl, clientId: settings.clientId, tenant: settings.tenant });
 */
export async function bindToSettings(dir: string, binding: StateBinding, options: BindOptions = {}): Promise<void> {
  try {
    await bindStateDir(dir, binding, options);
  } catch (error) {
    if (error instanceof StateBindingMismatchError) throw new StateDirTakenError(error.fields, dir, error, { cause: error });
    if (error instanceof StateBindingMissingError) {
      // Base URL, client id and tenant are no secrets: the owner can restore the file as it was.
      const restore = `printf '%s\\n' ${shellQuoted(JSON.stringify(binding))} > ${shellQuoted(error.file ?? join(dir, STATE_FILES.binding))}`;
      throw stateFileProblem(error, dir, STATE_FILES.binding, `if it is this tenant's, restore the file (in a POSIX shell: \`${restore}\`); otherwise use another state directory`);
    }
    if (error instanceof LocalStateError) throw stateFileProblem(error, dir, STATE_FILES.binding, "restore it or use another state directory");
    throw error;
  }
}

/** `text` as one word of a POSIX shell: single-quoted, each `'` closed, escaped and reopened. */
function shellQuoted(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}

/**
 * A file of the state directory that cannot be used, as an error naming it and the setting (exit 2: it will not heal),
 * under a heading that blames the file, not the settings.
 */
function stateFileProblem(error: LocalStateError, dir: string, fallbackFile: string, advice: string): ConfigError {
  const problem = `${error.message} (${error.file ?? fallbackFile}); ${advice}`;
  return new ConfigError([{ setting: "BRIDGE_STATE_DIR", problem }], { cause: error, heading: `A file in the state directory (${dir}) cannot be used` });
}

/** Who the settings say the state directory belongs to. */
function bindingOf(settings: LocalSettings, baseUrl: string): StateBinding {
  return { baseUrl, clientId: settings.clientId, tenant: settings.tenant };
}

/**
 * Binds the state directory to the settings' provider, client and tenant (see {@link bindToSettings}); returns the
 * resolved base URL. For a caller that stores tokens before opening the bridge (demo, bench): bound first, the
 * tokens never sit in a directory without its binding.
 *
 * @throws ConfigError (exit 2) for a base URL that does not resolve, or a directory of another owner.
 * @example
 * const baseUrl = await bindLocalSettings(settings, io.env);
 */
export async function bindLocalSettings(settings: LocalSettings, env?: LocalBridgeOptions["env"]): Promise<string> {
  let baseUrl: string;
  try {
    baseUrl = resolveBaseUrl(settings.baseUrl, env);
  } catch (error) {
    // Neither the client's message nor a settings message quotes the value (it may carry credentials).
    throw new ConfigError([{ setting: "QASHIO_BASE_URL", problem: "does not resolve to an https URL (http only for a loopback host) without credentials, query or fragment" }], {
      cause: error,
    });
  }
  await bindToSettings(settings.stateDir, bindingOf(settings, baseUrl));
  return baseUrl;
}

/**
 * Opens the local adapters and the provider client. While the state directory holds no token, QASHIO_REFRESH_TOKEN
 * stands in for it (see LocalTokenStore: the seed itself is never saved).
 *
 * @throws ConfigError when no token is stored and QASHIO_REFRESH_TOKEN is not set, or the base URL cannot be resolved;
 *   TokenFileError when the token file is corrupt.
 * @example
 * const bridge = await openLocalBridge(settings, { env, logger });
 * const result = await runCycle(bridge);
 */
export async function openLocalBridge(settings: LocalSettings, options: LocalBridgeOptions): Promise<LocalBridge> {
  const baseUrl = await bindLocalSettings(settings, options.env);
  const clock = options.clock ?? systemClock;
  const dir = settings.stateDir;
  const { dev, ino } = statSync(dir);
  const local = createLocalAdapters(dir, { clock });
  const tokens = new LocalTokenStore(local.tokens, settings.refreshToken);
  const lock: Lock = local.lock;
  // Read once up front: a missing or unusable token stops here, before any provider call.
  if ((await tokens.load()) === undefined) {
    throw new ConfigError([
      {
        setting: "QASHIO_REFRESH_TOKEN",
        problem: `is required while the state directory (${dir}) holds no token; or run \`npm run bridge -- authorize\` first`,
      },
    ]);
  }
  const metrics = new MemoryMetrics();
  const tokenProvider = new OAuthTokenProvider({
    baseUrl,
    clientId: settings.clientId,
    clientSecret: settings.clientSecret,
    store: tokens,
    lock,
    clock,
    fetch: options.fetch,
    onEvent: (event) => {
      if (event === "refreshed") metrics.add("TokenRefreshes", 1);
    },
    spending: (work) => spendingRefreshes.run(work),
  });
  const untrack = spendingRefreshes.track(tokenProvider, tokens.file);
  const settleTokens = async (failure?: unknown): Promise<void> => {
    // The bridge is done: a refresh a leftover call would start from now on could fail to save after this check.
    tokenProvider.close();
    for (let tries = 1; !(await tokenProvider.saveHeldTokens()); tries += 1) {
      if (tries === HELD_TOKEN_SAVE_TRIES) {
        untrack();
        throw new TokensLostError(tokens.file, failure === undefined ? undefined : { cause: failure });
      }
      await clock.sleep(HELD_TOKEN_SAVE_PAUSE_MS);
    }
    untrack();
  };
  const client = new QashioClient({
    baseUrl,
    tokenProvider,
    fetch: options.fetch,
    clock,
    logger: options.logger,
    onRetry: countProviderRetries(metrics),
  });
  let publisher: EventPublisher = options.publisher ?? new JsonlEventPublisher({ file: settings.eventsFile, logger: options.logger });
  if (options.onPublished !== undefined) publisher = observePublished(publisher, options.onPublished);
  const leaseGuard = new CycleLeaseGuard(dir, CYCLE_LEASE_MS);
  const deps = cycleDeps({
    tenant: settings.tenant,
    provider: client,
    // Unlike on AWS, where the lease outlives the invocation, each write checks the short cycle lease first: a process
    // stopped past it must not write what it read before (lease-guard.ts).
    snapshots: leaseGuard.snapshots(local.snapshots),
    publisher: leaseGuard.publisher(publisher),
    quarantine: leaseGuard.quarantine(local.quarantine),
    clock,
    metrics,
    logger: options.logger,
    pii: { mode: settings.piiMode, salt: settings.piiSalt },
    source: settings.eventSource,
    emitCardCreated: settings.emitCardCreated,
    cardDetails: settings.cardDetails,
  });
  return {
    settings,
    ...deps,
    lock,
    tokens,
    snapshots: local.snapshots,
    metrics,
    clock,
    baseUrl,
    stateDirIdentity: { dev, ino },
    leaseGuard,
    settleTokens,
  };
}

/**
 * Converts an engine failure into the CLI's error with its exit code; `otherwise` words a failure none of the known
 * kinds matches (exit 1).
 */
async function cliErrorOf(
  error: unknown,
  bridge: LocalBridge,
  otherwise: (e: Error) => string = (e) => `the cycle failed: ${e.name}: ${e.message}`,
): Promise<CliError> {
  // Our own adapters' errors (the token file's) are already fit for a person, wherever the engine wrapped them.
  const own = causeMatching(error, (e): e is CliError => e instanceof CliError);
  if (own !== undefined) return own;
  // Not a file to restore: the directory took no write, so no refresh was tried, and the next cycle tries again.
  const unwritable = causeMatching(error, (e): e is TokenFileUnwritableError => e instanceof TokenFileUnwritableError);
  if (unwritable !== undefined) {
    return new CycleFailedError(
      `cannot save a new token set to ${unwritable.file} now (${unwritable.code}), so no token refresh was tried and the stored ` +
        `refresh token is still good: ${unwritableStateDirRemedy(bridge.settings.stateDir)}`,
      { cause: error },
    );
  }
  // A corrupt snapshot segment or quarantine record fails every run alike: name the file instead of retrying.
  const state = causeMatching(error, (e): e is LocalStateError => e instanceof LocalStateError);
  if (state !== undefined) return stateFileProblem(state, bridge.settings.stateDir, "a file in it", "restore it or move it aside");
  // Checked before the revoked family: the engine may wrap it like any provider failure, but it is a settings problem.
  if (causeMatching(error, isInvalidClient) !== undefined) return new ClientCredentialsRejectedError({ cause: error });
  if (error instanceof EngineReauthorizationNeeded || (error instanceof Error && error.name === "ReauthorizationRequiredError")) {
    if (await bridge.tokens.usesSeed().catch(() => false)) {
      return new ReauthorizationNeededError(
        "the provider rejected QASHIO_REFRESH_TOKEN (spent, revoked or expired); nothing was stored: set it to a fresh " +
          "refresh token, or run `npm run bridge -- authorize`",
        { cause: error },
      );
    }
    return new ReauthorizationNeededError(
      `the provider revoked this integration's token family: run \`npm run bridge -- authorize\` to sign in again${bridge.tokens.seedIgnoredHint}`,
      { cause: error },
    );
  }
  if (error instanceof CycleAbortedError) {
    const where = [error.status === undefined ? undefined : `status ${error.status}`, error.requestId === undefined ? undefined : `request ${error.requestId}`]
      .filter(Boolean)
      .join(", ");
    // The engine's message already names the cycle, the failed step and that the next cycle resumes.
    return new CycleFailedError(`${error.message}${where ? ` (${where})` : ""}${baseUrlHint(error, bridge.baseUrl)}${fileSystemHint(error, bridge.settings)}`, {
      cause: error,
    });
  }
  return new CycleFailedError(otherwise(error instanceof Error ? error : new Error(String(error))), { cause: error });
}

/** What to do about a state directory that took no write before anything was sent (the token probe, the cycle lease). */
function unwritableStateDirRemedy(stateDir: string): string {
  return `make room in or fix ${stateDir} (BRIDGE_STATE_DIR), then run again`;
}

/** What a file system that takes no more writes answers, and how to say it. */
const REFUSED_WRITES: Readonly<Record<string, string>> = {
  ENOSPC: "is full: make room there",
  EDQUOT: "is over its quota: make room there",
  EROFS: "is read-only: mount it read-write",
};

/**
 * A hint for a cycle that failed on a file system that takes no more writes (full, over quota, read-only): which
 * setting's file system, since the system's own message names no path for a write or fsync on an open file.
 */
function fileSystemHint(error: CycleAbortedError, settings: LocalSettings): string {
  const refused = causeMatching(error, (e): e is { code: string } => Object.hasOwn(REFUSED_WRITES, systemErrorCode(e) ?? ""));
  if (refused === undefined) return "";
  const events = error.step === PUBLISH_STEP;
  const [setting, path] = events ? ["BRIDGE_EVENTS_FILE", settings.eventsFile] : ["BRIDGE_STATE_DIR", settings.stateDir];
  // Never "use another state directory": its tokens and snapshots stay behind, and a fresh one would send the spent seed.
  const elsewhere = events ? ", or set BRIDGE_EVENTS_FILE elsewhere" : "";
  return `; the file system of ${path} (${setting}, ${refused.code}) ${REFUSED_WRITES[refused.code]}${elsewhere}; nothing is lost`;
}

/** Statuses of a token endpoint that is no OAuth server: nothing there, or no POST taken there. */
const NO_TOKEN_ENDPOINT = new Set([404, 405, 501]);

/**
 * A hint for a token endpoint that answered as no OAuth server does (404, 405, 501, or a body that is not JSON): the
 * failure then says "the next cycle resumes" of what is most likely a QASHIO_BASE_URL naming another server.
 */
function baseUrlHint(error: unknown, baseUrl: string): string {
  const answer = causeMatching(
    error,
    (e): e is Error =>
      e instanceof Error &&
      (e as { path?: unknown }).path === TOKEN_PATH &&
      // InvalidResponseError: a body that is not JSON, or not a token set.
      (NO_TOKEN_ENDPOINT.has((e as { status?: number }).status ?? 0) || e.name === "InvalidResponseError"),
  );
  return answer === undefined ? "" : `; the token endpoint answered as no OAuth server does: is QASHIO_BASE_URL (${baseUrl}) the provider's API?`;
}

/** Sets the `QuarantineSize` gauge after a cycle (see `reportQuarantineSize`); returns the size, undefined if uncounted. */
async function measureQuarantine(bridge: LocalBridge): Promise<number | undefined> {
  // The whole error, unlike the Lambda log: the console logger prints it for the person running the bridge.
  return reportQuarantineSize(bridge.transactions, (error) => bridge.transactions.logger.warn("counting the quarantine failed", { error }));
}

/**
 * Runs `work` under the tenant's cycle lease (renewed while it runs), once the state directory's binding is checked
 * again under it: cycles and re-drives of one tenant never overlap.
 *
 * @throws CliError (exit 1) when another process holds the lease.
 * @example
 * const report = await withCycleLock(bridge, () => redriveQuarantined(bridge.transactions));
 */
export async function withCycleLock<T>(bridge: LocalBridge, work: () => Promise<T>): Promise<T> {
  assertSameStateDir(bridge);
  const taken = await takeCycleLease(bridge);
  if (taken === undefined) {
    // Named, so a person knows what to wait for (or to stop): a cron job beside a loop, a second terminal.
    const holder = await bridge.lock.holderOf?.(CYCLE_LOCK).catch(() => undefined);
    throw new CliError(
      `another bridge process${holder ? ` (${holder})` : ""} is running a cycle, re-drive or conform-pii on this state directory ` +
        `(${bridge.settings.stateDir}): run this command again once it is done (a \`run --interval\` loop retries by itself). The lease of ` +
        `a run that has exited is taken over at once on the same machine, else it expires within ${CYCLE_LEASE_MS / 1000} s of its last renewal`,
      EXIT.failed,
    );
  }
  const { handle } = taken;
  // A short lease kept alive (every third of it) while the cycle runs: a crash frees it soon, a long cycle keeps it.
  // The same keep-alive as the token save's, so no renewal lands after the release.
  const underLease = async (): Promise<T> => {
    // Taken from a run that crashed moments ago, maybe between publishing events and storing their snapshots: the same
    // subjects may be published again under the same `subject.sequence`, so this run starts in a later second, as a
    // run that stopped there itself would have left it (CycleRun's leaveSecond), and consumers can order the two.
    if (taken.tookOver) await bridge.clock.sleep(untilLaterSecond(bridge.clock.now()));
    // Checked again under the lock: two first uses of an empty directory both pass the check at open, and only the
    // first cycle's state may stay; the other one now finds it and stops before any provider call.
    await bindToSettings(bridge.settings.stateDir, bindingOf(bridge.settings, bridge.baseUrl));
    // Another process may have written snapshots since this one last held the lease (a `run --once` beside a loop).
    await bridge.snapshots.reload().catch(async (error: unknown) => {
      throw await cliErrorOf(error, bridge);
    });
    // Each write of the work checks the lease first: a process stopped past it must not write what it read before.
    return bridge.leaseGuard === undefined ? work() : bridge.leaseGuard.during(handle, work);
  };
  try {
    return await whileHolding(handle, CYCLE_LEASE_MS, bridge.clock, underLease, bridge.transactions.logger, CYCLE_LEASE_MESSAGES);
  } finally {
    // A release the state directory refuses (full, read-only) must not replace what the work did or why it failed
    // (such as the token probe's "no refresh was tried"): the lease is kept for the next cycle of this process, and
    // runs out by itself otherwise (taken over at once on this machine once the process has exited).
    await handle.release().catch((error: unknown) => {
      unreleasedLeases.set(bridge, handle);
      bridge.transactions.logger.warn("releasing the cycle lease failed; the next cycle of this process takes it again, another process once it runs out", {
        code: systemErrorCode(error) ?? (error instanceof Error ? error.name : "unknown error"),
      });
    });
  }
}

/** Cycle leases this process could not release (see {@link withCycleLock}), by bridge: its next cycle renews one. */
const unreleasedLeases = new WeakMap<LocalBridge, LockHandle>();

/** The `code` of a system call's error (ENOSPC, EROFS, ENOENT, ...), if `error` is one. */
function systemErrorCode(error: unknown): string | undefined {
  const { code } = (error ?? {}) as { code?: unknown };
  return typeof code === "string" && /^E[A-Z0-9]+$/.test(code) ? code : undefined;
}

/**
 * Takes the cycle lease for `bridge` (undefined while another process holds it): renews the one an earlier cycle of
 * this process could not release, else takes it anew. `tookOver`: taken from a holder that crashed (see
 * `LockHandle.tookOver`), never so for a renewed lease, which was this process's own. A state directory that takes no
 * writes (full, read-only, gone) is a CycleFailedError naming it (exit 1, a loop tries again at its next interval),
 * before any provider call.
 */
async function takeCycleLease(bridge: LocalBridge): Promise<{ handle: LockHandle; tookOver: boolean } | undefined> {
  const kept = unreleasedLeases.get(bridge);
  try {
    if (kept !== undefined && (await kept.renew(CYCLE_LEASE_MS))) {
      unreleasedLeases.delete(bridge);
      return { handle: kept, tookOver: false };
    }
    unreleasedLeases.delete(bridge);
    const handle = await bridge.lock.tryAcquire(CYCLE_LOCK, CYCLE_LEASE_MS);
    return handle === undefined ? undefined : { handle, tookOver: handle.tookOver === true };
  } catch (error) {
    const code = systemErrorCode(error);
    if (code === undefined) throw error;
    const { stateDir } = bridge.settings;
    throw new CycleFailedError(
      `cannot take the cycle lease in ${join(stateDir, STATE_DIRS.locks)} (${code}): the state directory takes no writes now, so nothing ` +
        `was sent to the provider: ${unwritableStateDirRemedy(stateDir)}`,
      { cause: error },
    );
  }
}

/**
 * Share of a local cycle's budget the transactions may take before the cards walk: the cards always get the rest (and
 * whatever the transactions leave), so a transaction backlog that outlasts every cycle cannot hold card events back.
 * On AWS each kind has its own function and schedule.
 */
export const TRANSACTIONS_BUDGET_SHARE = 0.75;

/**
 * Runs one cycle (transactions, then cards) under the tenant's cycle lock, within `budgetMs` (default
 * BRIDGE_CYCLE_BUDGET; the transactions within {@link TRANSACTIONS_BUDGET_SHARE} of it); once `signal` aborts
 * (Ctrl-C) no new page starts and the cycle ends as at its budget (`complete` false). The cards are walked even when
 * the transactions failed for a provider reason; the first failure is thrown after.
 *
 * @throws ReauthorizationNeededError (exit 3) when the token family is revoked; CycleFailedError (exit 1) otherwise.
 * @example
 * const { events, complete } = await runCycle(bridge, { budgetMs: 300_000, signal: io.signal });
 */
export async function runCycle(bridge: LocalBridge, options: { readonly budgetMs?: number; readonly signal?: AbortSignal } = {}): Promise<CycleResult> {
  const { budgetMs = bridge.settings.cycleBudgetMs, signal } = options;
  const started = bridge.clock.now();
  const stop = signal ? { signal } : {};
  return withCycleLock(bridge, async () => {
    let transactions = emptyReport("transactions");
    let cards = emptyReport("cards");
    /** The first failure: it ends the run (exit 1 or 3) once the cards walk had its turn, where it may. */
    let failure: unknown;
    try {
      transactions = await pollTransactions(bridge.transactions, { deadline: started + Math.floor(budgetMs * TRANSACTIONS_BUDGET_SHARE), ...stop });
    } catch (error) {
      failure = error;
    }
    // As on AWS, where each kind has its own function: transactions the provider will not list now (a 403 for want of
    // a scope, an outage of that endpoint) do not hold back card suspensions. Not after a token failure (the cards
    // would need the same token; isTokenFailure covers the token endpoint refusing the client credentials too); the
    // engine logged the aborted cycle already. Nor once the cycle lease was lost: another process runs the cycles now.
    const leaseLost = causeMatching(failure, (e): e is CycleLeaseLostError => e instanceof CycleLeaseLostError) !== undefined;
    if (failure === undefined || (failure instanceof CycleAbortedError && !isTokenFailure(failure) && !leaseLost)) {
      try {
        cards = await pollCards(bridge.cards, { deadline: started + budgetMs, ...stop });
      } catch (error) {
        // A token failure or refused credentials outranks the transactions' failure: it ends the run (exit 3 for a
        // revoked family) rather than reading as an outage the next cycle resumes from.
        if (failure === undefined || isTokenFailure(error)) failure = error;
      }
    }
    if (failure !== undefined) {
      await measureQuarantine(bridge);
      throw await cliErrorOf(failure, bridge);
    }
    const quarantineSize = (await measureQuarantine(bridge)) ?? 0;
    const complete = transactions.outcome === "complete" && cards.outcome === "complete";
    return {
      transactions,
      cards,
      events: totalPublished(transactions) + totalPublished(cards),
      complete,
      interrupted: !complete && signal?.aborted === true,
      durationMs: bridge.clock.now() - started,
      quarantineSize,
    };
  });
}

/**
 * Re-drives the tenant's quarantined transactions (see `redriveQuarantined`) under the cycle lock.
 *
 * @throws ReauthorizationNeededError (exit 3) when the token family is revoked; CycleFailedError (exit 1) otherwise.
 * @example
 * const { redriven, kept } = await runRedrive(bridge);
 */
export async function runRedrive(bridge: LocalBridge, budgetMs = bridge.settings.cycleBudgetMs): Promise<RedriveReport> {
  const deadline = bridge.clock.now() + budgetMs;
  return withCycleLock(bridge, async () => {
    try {
      return await redriveQuarantined(bridge.transactions, { deadline });
    } catch (error) {
      throw await cliErrorOf(error, bridge);
    } finally {
      await measureQuarantine(bridge);
    }
  });
}

/**
 * Re-masks the snapshots of the state directory to the current PII mode (see `conformSnapshots`) under the cycle
 * lock, which covers transactions and cards alike, within `budgetMs`; `cursor` goes on from where a pass stopped.
 *
 * @throws UsageError (exit 2) when `cursor` is not one a pass over this state directory printed; ConfigError (exit 2)
 *   for a corrupt snapshot segment; CycleFailedError (exit 1) otherwise.
 * @example
 * const { outcome, rewritten } = await runConformPii(bridge);
 */
export async function runConformPii(bridge: LocalBridge, cursor?: string, budgetMs = bridge.settings.cycleBudgetMs): Promise<ConformReport> {
  const deadline = bridge.clock.now() + budgetMs;
  return withCycleLock(bridge, async () => {
    try {
      return await conformSnapshots(bridge.transactions, { deadline, ...(cursor === undefined ? {} : { cursor }) });
    } catch (error) {
      if (error instanceof SnapshotCursorError) {
        throw new UsageError("--cursor is not a cursor of this state directory's snapshots: pass the one conform-pii printed, or leave it out to start over", {
          cause: error,
        });
      }
      throw await cliErrorOf(
        error,
        bridge,
        (e) => `conform-pii stopped: ${e.name}: ${e.message}; snapshots rewritten so far keep their new form: run conform-pii again`,
      );
    }
  });
}
