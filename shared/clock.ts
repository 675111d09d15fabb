/**
 * The one real clock, shared by the provider client, the AWS adapters and the CLI (each layer re-exports it under its
 * own `Clock` type, which all have this shape); tests inject fakes instead.
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

/** Wall-clock time and real timers. */
export const systemClock: { now(): number; sleep(ms: number, signal?: AbortSignal): Promise<void> } = {
  now: () => Date.now(),
  sleep: realSleep,
};
