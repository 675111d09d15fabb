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
