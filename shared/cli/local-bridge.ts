/**
 * Local mode composition: the engine wired to the file-backed adapters of shared/local (state directory,
 * JSON Lines event file), the provider client with an OAuth token provider that rotates under a file lock;
 * conform-pii opens the state directory alone. The cycle lease is cycle-lease.ts's, the cycles run on what this
 * opens local-cycles.ts's, the settling of tokens held unsaved when it is done held-tokens.ts's.
 */
import { statSync } from "node:fs";
import { join } from "node:path";
import {
  countProviderRetries,
  cycleDeps,
  supersedeConformPassOnModeChange,
  type BridgeEvent,
  type CardCycleDeps,
  type Clock,
  type EventPublisher,
  type Lock,
  type Logger,
  type TransactionCycleDeps,
} from "../bridge/index.js";
import { OAuthTokenProvider } from "../qashio/auth/token-provider.js";
import { QashioClient } from "../qashio/client.js";
import { resolveBaseUrl } from "../qashio/config.js";
import type { FetchLike } from "../qashio/http.js";
import { JsonlEventPublisher, STATE_FILES, createLocalAdapters, type BindOptions, type FileSnapshotStore, type LocalAdapters } from "../local/index.js";
import { onceSucceeded } from "../once.js";
import { noTokenProblem, type Env, type LocalSettings, type StateSettings } from "./config.js";
import { CYCLE_LEASE_MS, bindToSettings, bindingOf, saltBindingOf } from "./cycle-lease.js";
import { HELD_TOKENS_EVENTS, HeldTokens } from "./held-tokens.js";
import { CycleLeaseGuard } from "./lease-guard.js";
import { LocalTokenStore, restrictTokenFile } from "./local-tokens.js";
import { statOf } from "./path-checks.js";
import { restrictStateDir } from "./state-access.js";
import { spendingRefreshes } from "./token-spending.js";
import { MemoryMetrics, observePublished, systemClock } from "./console-ports.js";
import { AUTHORIZE_AGAIN, ConfigError, FailureThenError, type SignInAgain } from "./errors.js";

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
  /**
   * Let BRIDGE_PII_SALT replace the salt fingerprint the state directory records (`run --new-pii-salt`): a switch of
   * salts on purpose. Without it, a salt other than the recorded one is refused before any provider call; with it, the
   * recorded one is (PiiSaltUnchangedError: nothing to switch).
   */
  readonly newPiiSalt?: boolean;
  /**
   * What signs in again once the token family is revoked or a new refresh token lost (exit 3): the demo's own sandbox
   * and state end with it, so it asks for a new demo. @default AUTHORIZE_AGAIN
   */
  readonly signInAgain?: SignInAgain;
  /**
   * False when the command removes the state directory as it ends (the demo without --keep): what became of held
   * tokens then names no token file, which would be gone by the time it is read. @default true
   */
  readonly tokenFileKept?: boolean;
}

/**
 * One tenant's state directory, opened for work under the cycle lease (cycle-lease.ts's `withCycleLock`) without the
 * provider: all conform-pii uses, and the part of {@link LocalBridge} the lease works with.
 */
export interface LocalState {
  readonly settings: StateSettings;
  /** What conformSnapshots reads and writes: the snapshots and quarantine, each write checked against the lease. */
  readonly transactions: Pick<TransactionCycleDeps, "tenant" | "snapshots" | "quarantine" | "pii" | "clock" | "logger">;
  readonly lock: Lock;
  /** The engines' snapshot store, also as itself: `withCycleLock` reloads it under the lease. */
  readonly snapshots: FileSnapshotStore;
  readonly clock: Clock;
  /** Device and inode of the state directory the bridge opened, as last seen (see `withCycleLock`). */
  readonly stateDirIdentity: { dev: number; ino: number };
  /** Checks the engines' writes against the cycle lease `withCycleLock` holds (absent: unchecked). */
  readonly leaseGuard?: CycleLeaseGuard;
  /** Checks the state directory's binding against the settings (`withCycleLock`: again under the lease). */
  bind(): Promise<void>;
}

/** The engine's dependencies for one tenant in local mode. */
export interface LocalBridge extends LocalState {
  readonly settings: LocalSettings;
  readonly transactions: TransactionCycleDeps;
  readonly cards: CardCycleDeps;
  readonly tokens: LocalTokenStore;
  readonly metrics: MemoryMetrics;
  readonly baseUrl: string;
  /** What signs in again once the token family is revoked or lost (LocalBridgeOptions.signInAgain, resolved). */
  readonly signInAgain: SignInAgain;
  /**
   * `supersedeConformPassOnModeChange` once per bridge (so per process), until it succeeds; `runCycle` and
   * `runRedrive` (local-cycles.ts) await it under the cycle lease before they write. The file store walks in write
   * order, so a cursor would skip nothing a cycle under another mode wrote: done as on AWS anyway, for one read, so a
   * cursor is refused after a switch away and back in either mode.
   */
  readonly supersedeConformPassOnce: () => Promise<void>;
  /**
   * Saves tokens a failed save left held in memory (see `OAuthTokenProvider.saveHeldTokens`), with a few tries; for
   * when the bridge is done, since exiting with them loses the new refresh token. No token refresh starts afterwards
   * (`OAuthTokenProvider.close`). See {@link usingLocalBridge}.
   *
   * @returns what became of them, when `failure` (what ended the work) is given and they were held: for the failure's
   *   message to end with, since that failure may have said they "will be saved again". Without a failure it is
   *   logged as a warning instead.
   * @throws TokensLostError (exit 3) when they still cannot be saved; `failure` (what ended the work, if anything)
   *   becomes its cause and part of its message.
   */
  settleTokens(failure?: unknown): Promise<string | undefined>;
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
    // What became of held tokens is said at the end of the error, the line a person reads last.
    const outcome = await bridge.settleTokens(error);
    throw outcome === undefined ? error : new FailureThenError(error, outcome);
  }
  await bridge.settleTokens();
  return result;
}

/**
 * Binds the state directory to the settings' provider, client and tenant (see {@link bindToSettings}); returns the
 * resolved base URL. For a caller that stores tokens before opening the bridge (demo, bench): bound first, the
 * tokens never sit in a directory without its binding. `bind` as bindStateDir takes it (openLocalBridge: `keepOther`).
 *
 * @throws ConfigError (exit 2) for a base URL that does not resolve, or a directory of another owner.
 * @example
 * const baseUrl = await bindLocalSettings(settings, io.env);
 */
export async function bindLocalSettings(settings: LocalSettings, env?: LocalBridgeOptions["env"], bind?: BindOptions): Promise<string> {
  let baseUrl: string;
  try {
    baseUrl = resolveBaseUrl(settings.baseUrl, env);
  } catch (error) {
    // Neither the client's message nor a settings message quotes the value (it may carry credentials).
    throw new ConfigError([{ setting: "QASHIO_BASE_URL", problem: "does not resolve to an https URL (http only for a loopback host) without credentials, query or fragment" }], {
      cause: error,
    });
  }
  await bindToSettings(settings.stateDir, bindingOf(settings, baseUrl), bind);
  return baseUrl;
}

/**
 * Opens the local adapters and the provider client. While the state directory holds no token, QASHIO_REFRESH_TOKEN
 * stands in for it (see LocalTokenStore: the seed itself is never saved).
 *
 * @throws ConfigError when no token is stored and QASHIO_REFRESH_TOKEN is not set, or the base URL cannot be resolved;
 *   TokenFileError when the token file is corrupt; PiiSaltUnchangedError (exit 2) for `newPiiSalt` with the recorded salt.
 * @example
 * const bridge = await openLocalBridge(settings, { env, logger });
 * const result = await runCycle(bridge);
 */
export async function openLocalBridge(settings: LocalSettings, options: LocalBridgeOptions): Promise<LocalBridge> {
  const newPiiSalt = options.newPiiSalt === true;
  // A flag that records nothing would read as a switch done: refused, as a setting that does not fit.
  if (newPiiSalt && settings.piiMode !== "hash") {
    throw new ConfigError([{ setting: "BRIDGE_PII_MODE", problem: `is ${settings.piiMode}: --new-pii-salt records the salt of hash mode; leave it out` }]);
  }
  // Another owner's binding stays until this bridge's first cycle binds under the lease: that owner's may be running.
  // The flag with the recorded salt is refused here, at the start only: the first cycle's bind records the new one.
  const baseUrl = await bindLocalSettings(settings, options.env, { keepOther: true, newPiiSalt, refuseRecordedPiiSalt: newPiiSalt, snapshots: true });
  const clock = options.clock ?? systemClock;
  const dir = settings.stateDir;
  const { opened, guarded, tokenFile } = openStateDir(dir, clock);
  // A state directory or token file others may read (restored, written by hand) is made private before it is used.
  restrictStateDir(dir, (text) => options.logger.warn(text));
  restrictTokenFile(tokenFile, (text) => options.logger.warn(text));
  const signInAgain = options.signInAgain ?? AUTHORIZE_AGAIN;
  const tokens = new LocalTokenStore(tokenFile, settings.refreshToken, signInAgain);
  const { lock } = opened;
  // Read once up front: a missing or unusable token stops here, before any provider call.
  if ((await tokens.load()) === undefined) {
    throw new ConfigError([{ setting: "QASHIO_REFRESH_TOKEN", problem: noTokenProblem(dir) }]);
  }
  // Left set, a spent seed is sent again by a run on an empty state directory (a mistyped BRIDGE_STATE_DIR), and the
  // provider then revokes the whole family, signing this directory out too. Said at every start until it is gone.
  if (settings.refreshToken !== undefined && !(await tokens.usesSeed())) {
    options.logger.warn(
      `QASHIO_REFRESH_TOKEN is not read while ${tokens.file} holds tokens: remove it from the environment and .env, as a run on an ` +
        "empty state directory (a mistyped BRIDGE_STATE_DIR) would send it again, and a refresh token sent twice makes the provider revoke the whole token family",
    );
  }
  const metrics = new MemoryMetrics();
  const heldTokens = new HeldTokens({ file: tokens.file, fileKept: options.tokenFileKept !== false, signInAgain, clock, logger: options.logger });
  const tokenProvider = new OAuthTokenProvider({
    baseUrl,
    clientId: settings.clientId,
    clientSecret: settings.clientSecret,
    store: tokens,
    lock,
    clock,
    fetch: options.fetch,
    // Its own warnings (a refresh postponed, a lease lost while saving, the token endpoint's retries) reach the person
    // running the bridge; none carries a token. Not those of what becomes of held tokens: HeldTokens says it, naming
    // the file.
    logger: options.logger,
    quietEvents: HELD_TOKENS_EVENTS,
    onEvent: (event) => {
      if (event === "refreshed") metrics.add("TokenRefreshes", 1);
      heldTokens.heard(event);
    },
    spending: (work) => spendingRefreshes.run(work),
  });
  const untrack = spendingRefreshes.track(tokenProvider, tokens.file);
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
  const deps = cycleDeps({
    tenant: settings.tenant,
    provider: opened.leaseGuard.provider(client),
    ...guarded,
    publisher: opened.leaseGuard.publisher(publisher),
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
    ...opened,
    tokens,
    metrics,
    clock,
    baseUrl,
    signInAgain,
    bind: () => bindToSettings(dir, bindingOf(settings, baseUrl), { newPiiSalt, snapshots: true }),
    supersedeConformPassOnce: onceSucceeded(() => supersedeConformPassOnModeChange(deps.transactions)),
    settleTokens: (failure) => heldTokens.settle(tokenProvider, untrack, failure),
  };
}

/**
 * Opens the state directory alone, for conform-pii: no token and no provider settings are needed, as no provider call
 * is made. Only its tenant and, under `hash`, the fingerprint of its salt are checked against the binding (the PII
 * salt and the conform-pii cursor are the tenant's); nothing else is recorded in it.
 *
 * @throws StateDirTakenError (exit 2) when it holds another tenant's state; PiiSaltChangedError (exit 2) when its
 *   snapshots were hashed with another salt; ConfigError when it holds no binding (with
 *   state or without: then it is no state directory), or its binding file is unreadable.
 * @example
 * const state = await openLocalState(settings, { logger });
 * const report = await runConformPii(state);
 */
export async function openLocalState(settings: StateSettings, options: Pick<LocalBridgeOptions, "logger" | "clock">): Promise<LocalState> {
  // The salt too: a pass under `hash` hashes cleartext with it, beside pseudonyms of the recorded one.
  const bind = () => bindToSettings(settings.stateDir, { tenant: settings.tenant, ...saltBindingOf(settings) }, { checkOnly: true, snapshots: true });
  await bind();
  // Every run and authorize binds the directory before storing anything, and bind refused one holding state unbound: one
  // without a binding is none the bridge used (`.` for `.state`), which a pass would report masked, leaving its locks.
  if (statOf(join(settings.stateDir, STATE_FILES.binding)) === undefined) {
    throw new ConfigError([
      {
        setting: "BRIDGE_STATE_DIR",
        problem: `${settings.stateDir} holds no state of the bridge (no ${STATE_FILES.binding}), so nothing to re-mask: set it to the directory \`run\` uses`,
      },
    ]);
  }
  const clock = options.clock ?? systemClock;
  const { opened, guarded } = openStateDir(settings.stateDir, clock);
  // A pass rewrites snapshots: in clear under `full`, so not in a directory others may read.
  restrictStateDir(settings.stateDir, (text) => options.logger.warn(text));
  const pii = { mode: settings.piiMode, salt: settings.piiSalt };
  return { settings, ...opened, clock, bind, transactions: { tenant: settings.tenant, ...guarded, pii, clock, logger: options.logger } };
}

/**
 * The state directory's adapters, with the snapshots and quarantine the engines write through: unlike on AWS, where
 * the lease outlives the invocation, each write checks the short cycle lease first, so a process stopped past it does
 * not write what it read before (lease-guard.ts).
 */
function openStateDir(dir: string, clock: Clock): {
  opened: Required<Pick<LocalState, "lock" | "snapshots" | "leaseGuard" | "stateDirIdentity">>;
  guarded: Pick<TransactionCycleDeps, "snapshots" | "quarantine">;
  tokenFile: LocalAdapters["tokens"];
} {
  const { dev, ino } = statSync(dir);
  const leaseGuard = new CycleLeaseGuard(dir, CYCLE_LEASE_MS);
  // Compaction writes too, a batch at a time within one putMany or vacuum: each batch checks the lease as well.
  const local = createLocalAdapters(dir, { clock, snapshots: { beforeCompaction: () => leaseGuard.check() } });
  return {
    opened: { lock: local.lock, snapshots: local.snapshots, leaseGuard, stateDirIdentity: { dev, ino } },
    guarded: { snapshots: leaseGuard.snapshots(local.snapshots), quarantine: leaseGuard.quarantine(local.quarantine) },
    tokenFile: local.tokens,
  };
}
