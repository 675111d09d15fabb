/** A bound in time on a promise a test awaits, so a hang fails at once with its own words, not at the test timeout. */

/**
 * `settled`, or a rejection with `failure()` (worded when it fires, so it can name the state then) once `limitMs` has
 * passed without it.
 *
 * @example
 * await within(call(), 2_000, () => "no outcome within 2000 ms"); // the call's value, or that error after 2 s
 */
export async function within<T>(settled: Promise<T>, limitMs: number, failure: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(failure())), limitMs);
  });
  try {
    return await Promise.race([settled, late]);
  } finally {
    clearTimeout(timer);
  }
}
