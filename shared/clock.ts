/**
 * The one clock type and the one real clock, shared by the engine, the provider client, the AWS adapters and the CLI;
 * tests inject fakes instead.
 */

/** A real timer wait; an abort clears the timer, so a cancelled wait does not keep the process alive. */
export function realSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
  });
}

/** Time source; tests inject a fake so nothing really sleeps. The engine's port and the client's clock are this. */
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
  /** Resolves after `ms`, or early once `signal` aborts (fakes may ignore it). */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** Wall-clock time and real timers. */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: realSleep,
};

/**
 * The never-stepped clock (`performance.now`) that lines up with `clock`: only {@link systemClock}'s, as a fake
 * clock's time does not line up with it (a clock built on the system clock, as AWS's corrected one, may be given it).
 */
export function monotonicFor(clock: Clock): (() => number) | undefined {
  return clock === systemClock ? () => performance.now() : undefined;
}

/**
 * `clock` as a wait or deadline that runs out in real time reads it (a lease's: the file lock measures its expiry on the
 * monotonic clock): never behind the time that really passed, on `elapsed` (a monotonic reading), since `askedAt` (on
 * `clock`). A wall clock stepped back (NTP, a person) would otherwise stretch the wait or deadline by the step: an hour's
 * wait for a held lease, a 429's retry presenting the refresh token after another process, holding the lease by then,
 * had spent it. A wall clock stepped forward only ends it sooner. Real time is counted from this call on.
 * `elapsed` defaults to {@link monotonicFor} `clock`; a clock without one is returned as it is.
 */
export function leaseTimeClock(clock: Clock, askedAt: number, elapsed = monotonicFor(clock)): Clock {
  if (elapsed === undefined) return clock;
  const from = Math.max(askedAt, clock.now());
  const elapsedAt = elapsed();
  // Whole milliseconds, as the wall clock's: waits worked out from two readings stay whole.
  return { now: () => Math.max(clock.now(), from + Math.floor(elapsed() - elapsedAt)), sleep: (ms, signal) => clock.sleep(ms, signal) };
}
