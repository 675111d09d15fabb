/**
 * Waiting for a lease, and keeping it alive while a piece of work runs: the token save under the refresh lease
 * (shared/qashio/auth, and `authorize`), the rotation's secret write (shared/aws/rotation.ts) and a local cycle under
 * its file lock (shared/cli/cycle-lease.ts). Structural types only, so every lock adapter fits.
 */
import { leaseTimeClock, type Clock } from "./clock.js";
import { errorLabel } from "./error-label.js";

/** A held lease that can be extended (the bridge's `LockHandle`, the client's `RefreshLockHandle`). */
export interface RenewableLease {
  /** Extends the lease by `ttlMs` from now; false when it was lost. May stop early, rejecting, once `signal` aborts. */
  renew(ttlMs: number, signal?: AbortSignal): Promise<boolean>;
}

/** A lock that hands out {@link RenewableLease}s (the bridge's `Lock`, the client's `RefreshLock`). */
export interface LeaseSource<H extends RenewableLease> {
  /** Tries once; undefined when another owner holds an unexpired lease on `name`. */
  tryAcquire(name: string, ttlMs: number): Promise<H | undefined>;
}

/** How long {@link acquireWithin} tries, and how often. */
export interface LeaseWait {
  readonly waitMs: number;
  readonly pollMs: number;
  /** Stops the wait early (undefined is returned), e.g. on Ctrl-C. */
  readonly signal?: AbortSignal;
  /** Called once, when the first try finds the lease held (a person may be told that it waits). */
  readonly onWait?: () => void;
  /**
   * Milliseconds on a clock that is never stepped: `waitMs` is real time, not stretched by a wall clock stepped back
   * (see `leaseTimeClock`). @default performance.now with the system clock; none with another
   */
  readonly elapsed?: () => number;
}

/**
 * Takes the lease `name` for `ttlMs`, trying every `pollMs` while another owner holds it, for at most `waitMs` (real
 * time, where there is a monotonic clock: {@link LeaseWait.elapsed}); undefined when it stayed held that long, or
 * `wait.signal` aborted (the caller names what it gives up). A throwing `tryAcquire` throws.
 *
 * @example
 * ```ts
 * const handle = await acquireWithin(lock, "qashio-token-refresh", 30_000, { waitMs: 20_000, pollMs: 250 }, systemClock);
 * ```
 */
export async function acquireWithin<H extends RenewableLease>(
  lock: LeaseSource<H>,
  name: string,
  ttlMs: number,
  wait: LeaseWait,
  clock: Clock,
): Promise<H | undefined> {
  const start = clock.now();
  // A wall clock stepped back an hour mid-wait would otherwise keep `bridge run` or `authorize` polling an hour more.
  const waited = leaseTimeClock(clock, start, wait.elapsed);
  for (let tries = 0; ; tries += 1) {
    if (wait.signal?.aborted) return undefined;
    const handle = await lock.tryAcquire(name, ttlMs);
    if (handle) return handle;
    if (tries === 0 && wait.waitMs > 0) wait.onWait?.();
    if (waited.now() - start >= wait.waitMs) return undefined;
    await clock.sleep(wait.pollMs, wait.signal);
  }
}

/**
 * {@link acquireWithin}, also telling when the try that took the lease began: a lease's expiry counts from about then
 * (the DynamoDB lease sets it before its put), not from when a slow answer came back.
 *
 * @example
 * ```ts
 * const taken = await acquireTimed(lock, "qashio-token-refresh", 30_000, { waitMs: 20_000, pollMs: 250 }, systemClock);
 * if (taken) refreshBy(taken.askedAt + 15_000);
 * ```
 */
export async function acquireTimed<H extends RenewableLease>(
  lock: LeaseSource<H>,
  name: string,
  ttlMs: number,
  wait: LeaseWait,
  clock: Clock,
): Promise<{ handle: H; askedAt: number } | undefined> {
  let askedAt = clock.now();
  const timed: LeaseSource<H> = {
    tryAcquire: (lockName, ttl) => {
      askedAt = clock.now();
      return lock.tryAcquire(lockName, ttl);
    },
  };
  const handle = await acquireWithin(timed, name, ttlMs, wait, clock);
  return handle && { handle, askedAt };
}

/** Where a failed or lost renewal is reported. */
export interface KeepAliveLogger {
  warn(message: string, fields?: Record<string, unknown>): void;
}

/** What {@link whileHolding} logs when a renewal finds the lease lost or fails (never a token). */
export interface KeepAliveMessages {
  readonly lost: string;
  readonly failed: string;
}

/**
 * Runs `work` while renewing `lease` by `ttlMs` every third of `ttlMs`, until `work` settles, and returns (or throws)
 * what `work` did, unchanged: work that must finish under the lease, whatever it takes (a token save: once the
 * provider has spent the stored refresh token, a lease lapsing before the store holds the new one lets another process
 * present the spent token, which revokes the family). A renewal that fails or finds the lease lost is logged and
 * `work` goes on. `since` is when the lease was taken or last renewed (its expiry counts from then): the first
 * renewal is due a third of `ttlMs` after it, at once when that is past, so work started late in a lease (a token save
 * after a slow refresh) does not wait until the lease is nearly out before its first renewal.
 * The keep-alive never rejects: a throwing logger, clock or `renew` cannot change the outcome nor go unhandled.
 *
 * @example
 * ```ts
 * await whileHolding(handle, 30_000, systemClock, () => store.save(tokens), logger, { lost: "lease lost", failed: "renewal failed" });
 * ```
 */
export async function whileHolding<T>(
  lease: RenewableLease,
  ttlMs: number,
  clock: Clock,
  work: () => Promise<T>,
  logger: KeepAliveLogger | undefined,
  messages: KeepAliveMessages,
  since?: number,
): Promise<T> {
  const every = Math.max(1, Math.floor(ttlMs / 3));
  const done = new AbortController();
  const settled = new Promise<void>((resolve) => done.signal.addEventListener("abort", () => resolve(), { once: true }));
  const warn = (message: string, error?: unknown): void => {
    // A renewal cut short because `work` settled is not worth a warning.
    if (done.signal.aborted) return;
    try {
      if (error === undefined) logger?.warn(message);
      else logger?.warn(message, { error: errorLabel(error) });
    } catch {
      // A broken logger must not end the keep-alive.
    }
  };
  const keepAlive = async (): Promise<void> => {
    // Read here, not as the parameter's default: a clock throwing at its first reading must not keep `work` from running.
    let due = (since ?? clock.now()) + every;
    for (;;) {
      // One event-loop turn per round: a fake clock whose sleep returns at once must not starve `work`.
      await new Promise((resolve) => setImmediate(resolve));
      if (done.signal.aborted) return;
      const before = clock.now();
      // The lease runs out in real time: a wall clock stepped back (NTP, a person) since `due` was set must not put the
      // next renewal further away than a third of the lease, or an hour's step would let it lapse mid-work.
      due = Math.min(due, before + every);
      await Promise.race([settled, clock.sleep(Math.max(0, due - before), done.signal)]);
      if (done.signal.aborted) return;
      const now = clock.now();
      // Woken early (a timer a millisecond ahead of the wall clock, a fake clock's sleep returning at once): waits on.
      // Not when the clock went back during the wait: the wait ran its whole time.
      if (now < due && now >= before) continue;
      due = now + every;
      try {
        if (!(await lease.renew(ttlMs, done.signal))) warn(messages.lost);
      } catch (error) {
        warn(messages.failed, error);
      }
    }
  };
  // A throwing clock ends the keep-alive (logged as a failed renewal); it never rejects.
  const renewing = keepAlive().catch((error: unknown) => warn(messages.failed, error));
  try {
    return await work();
  } finally {
    done.abort();
    // A renewal in flight ends before the caller releases, so it cannot extend a released lease (the file lock's
    // renew checks, then writes). The abort cuts a slow one short: the DynamoDB lease stops its request.
    await renewing;
  }
}
