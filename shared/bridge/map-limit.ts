/**
 * Bounded concurrency for port calls: the engine's single provider reads (see mapSingleReads) and the AWS adapters'
 * batch reads, batch writes and event publishing.
 */

/**
 * Maps with at most `limit` calls in flight, keeping input order in the result. After a call fails no new one starts,
 * and the first failure is thrown only once the calls in flight have ended: nothing is written after the caller
 * learned that the whole failed (a snapshot write landing after the cycle gave up its lease could overwrite what the
 * next cycle wrote).
 */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  // Below 1 no call would start and every result be missing: a snapshot read finding nothing, a write doing nothing.
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`mapLimit's limit must be an integer of 1 or more, got ${limit}`);
  const results = new Array<R>(items.length);
  let next = 0;
  let failure: { readonly error: unknown } | undefined;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (failure === undefined && next < items.length) {
      const index = next;
      next += 1;
      try {
        results[index] = await fn(items[index] as T, index);
      } catch (error) {
        failure ??= { error };
      }
    }
  });
  await Promise.all(workers);
  if (failure !== undefined) throw failure.error;
  return results;
}
