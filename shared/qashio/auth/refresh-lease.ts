/**
 * The refresh lease: the lock port and its defaults, when a refresh under it must end, and taking it, keeping it alive
 * through a save, keeping it held for unsaved tokens and releasing it (never failing a call for a release, never
 * logging a token).
 */
import { DeadlineExceededError, TokenUnavailableError } from "../errors.js";
import type { ClientLogger, Clock } from "../http.js";
import { acquireTimed, whileHolding, type KeepAliveMessages } from "../../lease-keep-alive.js";

/** A held cross-process lease (structurally the bridge's `LockHandle`). */
export interface RefreshLockHandle {
  /** Extends the lease by `ttlMs` from now; false when it was lost. May stop early, rejecting, once `signal` aborts. */
  renew(ttlMs: number, signal?: AbortSignal): Promise<boolean>;
  release(): Promise<void>;
}

/** Cross-process mutual exclusion (structurally the bridge's `Lock` port). */
export interface RefreshLock {
  tryAcquire(name: string, ttlMs: number): Promise<RefreshLockHandle | undefined>;
  /** Who holds `name` now, in words for a person, where the lock can tell (see the bridge's `Lock.holderOf`). */
  holderOf?(name: string): Promise<string | undefined>;
}

export const DEFAULT_LOCK_NAME = "qashio-token-refresh";
export const DEFAULT_LOCK_TTL_MS = 30_000;
export const DEFAULT_LOCK_WAIT_MS = 20_000;
export const DEFAULT_LOCK_POLL_MS = 250;

/**
 * When a refresh under a lease asked for at `acquiredAt` must be over: half-way through the lease. A 429 with a long
 * Retry-After could otherwise keep retrying after the lease lapsed, while another process, holding the lease by
 * then, presents the same refresh token: a reuse that revokes the whole family. The second half is for the saves.
 * `acquiredAt` is when the try that took the lease began ({@link acquireTimed}), not when it answered: the lease's
 * expiry counts from its request, so a put slowed by retries has already used part of it.
 */
export function refreshDeadline(acquiredAt: number, lockTtlMs: number): number {
  return acquiredAt + Math.floor(lockTtlMs / 2);
}

/** What the keep-alive of a token save logs (never a token); rotation saves tokens too. */
export const TOKEN_SAVE_MESSAGES: KeepAliveMessages = {
  lost: "token refresh lease lost while saving the rotated tokens; another process may refresh with the spent token",
  failed: "renewing the token refresh lease failed while saving the rotated tokens",
};

/** What the renewal of a lease kept for unsaved tokens logs (never a token). */
const KEPT_LEASE_MESSAGES: KeepAliveMessages = {
  lost: "token refresh lease kept for rotated tokens not yet saved was lost; another process may refresh with the spent token",
  failed: "renewing the token refresh lease kept for rotated tokens not yet saved failed",
};

/** A refresh its caller's deadline stopped before anything was sent: a caller with a later deadline may still start one. */
export class RefreshNotStartedError extends DeadlineExceededError {}

/** The provider options the refresh lease is taken with (see `OAuthTokenProviderOptions`). */
export interface RefreshLeaseOptions {
  readonly lock?: RefreshLock;
  readonly lockName?: string;
  readonly lockWaitMs?: number;
  readonly lockPollMs?: number;
  readonly logger?: ClientLogger;
  /** The wait for the lease is real time on it (see `LeaseWait.elapsed`). */
  readonly elapsed?: () => number;
}

/** Takes, keeps and releases one provider's refresh lease, `ttlMs` long (none at all without a `lock`). */
export class RefreshLeases {
  /** The renewal of a lease kept for unsaved tokens (see {@link keepHeld}), while it runs. */
  private keeping?: { readonly stop: () => void; readonly stopped: Promise<void> };

  constructor(
    private readonly options: RefreshLeaseOptions,
    readonly ttlMs: number,
    private readonly clock: Clock,
  ) {}

  /**
   * Waits for the refresh lease; `askedAt` is when the try that took it began (its expiry counts from about then).
   * `latestAskAt`: the wait ends by then too (a refresh asked for later could not end by its caller's deadline).
   */
  async acquire(latestAskAt?: number): Promise<{ handle: RefreshLockHandle; askedAt: number } | undefined> {
    const { lock } = this.options;
    if (!lock) return undefined;
    const name = this.options.lockName ?? DEFAULT_LOCK_NAME;
    const waitMs = Math.min(this.options.lockWaitMs ?? DEFAULT_LOCK_WAIT_MS, latestAskAt === undefined ? Infinity : Math.max(0, latestAskAt - this.clock.now()));
    const taken = await acquireTimed(lock, name, this.ttlMs, { waitMs, pollMs: this.options.lockPollMs ?? DEFAULT_LOCK_POLL_MS, elapsed: this.options.elapsed }, this.clock);
    if (!taken) {
      // Cut short by the caller's deadline: out of time, not a lease stuck elsewhere.
      if (latestAskAt !== undefined && this.clock.now() >= latestAskAt) throw this.tooLate(latestAskAt + this.ttlMs);
      const holder = await lock.holderOf?.(name).catch(() => undefined);
      throw new TokenUnavailableError(`token refresh lock "${name}" still held by another process${holder ? ` (${holder})` : ""} after ${waitMs} ms`);
    }
    return taken;
  }

  /**
   * Renews `handle`, kept for unsaved tokens, every third of the lease until {@link stopKeeping}, or until a renewal
   * finds it lost (logged once: renewing cannot win it back).
   */
  keepHeld(handle: RefreshLockHandle): void {
    let stop!: () => void;
    const until = new Promise<void>((resolve) => (stop = resolve));
    let lost = false;
    const lease = {
      renew: async (ttlMs: number, signal?: AbortSignal) => {
        // Found lost by the renewal before, which logged it: the renewals end here.
        if (lost) {
          stop();
          return false;
        }
        lost = !(await handle.renew(ttlMs, signal));
        return !lost;
      },
    };
    const keeping = { stop, stopped: whileHolding(lease, this.ttlMs, this.clock, () => until, this.options.logger, KEPT_LEASE_MESSAGES) };
    this.keeping = keeping;
    void keeping.stopped.then(() => {
      if (this.keeping === keeping) this.keeping = undefined;
    });
  }

  /**
   * Stops renewing the kept lease and waits for a renewal in flight: whoever uses the lease next (a re-save, which
   * renews and releases it) must not have a late renewal extend it after its release.
   */
  stopKeeping(): Promise<void> {
    this.keeping?.stop();
    return this.keeping?.stopped ?? Promise.resolve();
  }

  /**
   * Releases a refresh lease without ever failing the call: what the call did (tokens saved, a revoked family found)
   * must reach the caller, not a throttled DynamoDB delete; an unreleased lease runs out by itself.
   */
  async release(handle: RefreshLockHandle): Promise<void> {
    await handle.release().catch(() => this.options.logger?.warn("releasing the token refresh lease failed; it runs out by itself"));
  }

  /**
   * Throws when a refresh starting at `startAt` (its lease asked for then) could not end, saved, by `deadline`: the
   * whole lease, since the save may take its second half (see {@link TokenRequestOptions.deadline}).
   */
  assertFits(deadline: number | undefined, startAt: number): void {
    if (deadline !== undefined && startAt + this.ttlMs > deadline) throw this.tooLate(deadline);
  }

  /** The error of a refresh not started because it could not end by `deadline`. */
  private tooLate(deadline: number): DeadlineExceededError {
    return new RefreshNotStartedError(`token refresh not started: its ${this.ttlMs} ms lease would end after the calling request's deadline`, { deadline });
  }

  /**
   * Runs a token save, renewing `handle` (when there is a lease) while it runs: see {@link whileHolding}. `since`: when
   * the lease was asked for, when not just now.
   */
  keepingAlive(handle: RefreshLockHandle | undefined, save: () => Promise<void>, since?: number): Promise<void> {
    return handle ? whileHolding(handle, this.ttlMs, this.clock, save, this.options.logger, TOKEN_SAVE_MESSAGES, since) : save();
  }
}
