/**
 * Work a process (a Lambda container, a local bridge) needs done once before it goes on, such as a check before its
 * first write: shared by every caller once it succeeded, run again after a failure.
 */

/**
 * `work` as a function that runs it on its first call and hands every later call the same promise, unless that
 * promise rejected: a failure is not kept, so the next call runs `work` again rather than skip it for good (and
 * callers in flight together share one run, and its failure).
 *
 * @example
 * ```ts
 * const checked = onceSucceeded(() => check(deps));
 * await checked(); // reads; later calls resolve at once
 * ```
 */
export function onceSucceeded(work: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | undefined;
  return () =>
    (done ??= work().catch((error: unknown) => {
      done = undefined;
      throw error;
    }));
}
