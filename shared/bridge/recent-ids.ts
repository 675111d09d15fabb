/**
 * Which items a status pass has handled, in memory of a few pages rather than of the whole backlog.
 *
 * An acknowledged item leaves the filtered list, so the walk can only meet it again on the pages it re-reads
 * right after handling it (a read that raced the acknowledge, or a page shifted by new arrivals): the ids of
 * the last few batches cover that. An item met again after it was handled is one the provider keeps listing
 * despite the acknowledge; it is kept for the rest of the pass so the walk moves past it instead of looping.
 */

/** Batches remembered besides the sticky ids. */
export const RECENT_BATCHES = 3;

/**
 * Ids handled in the last {@link RECENT_BATCHES} batches, plus ids seen again after being handled, each with the
 * version (content hash) it was handled in, when known: a copy listed again in another version is a change to handle.
 *
 * @example
 * ```ts
 * const handled = new RecentIds();
 * handled.add(["a", "b"], new Map([["a", "hash-1"]]));
 * handled.has("a"); // true (and "a" is now kept for the rest of the pass)
 * handled.versionOf("a"); // "hash-1"
 * ```
 */
export class RecentIds {
  private readonly batches: Map<string, string | undefined>[] = [];
  private readonly sticky = new Map<string, string | undefined>();

  constructor(private readonly window = RECENT_BATCHES) {}

  /** True when `id` was handled; an id met again is kept from then on. */
  has(id: string): boolean {
    if (this.sticky.has(id)) return true;
    for (const batch of this.batches) {
      if (batch.has(id)) {
        this.sticky.set(id, batch.get(id));
        return true;
      }
    }
    return false;
  }

  /** The version `id` was last handled in, if it was handled and its version was given. */
  versionOf(id: string): string | undefined {
    for (let i = this.batches.length - 1; i >= 0; i -= 1) {
      const batch = this.batches[i] as Map<string, string | undefined>;
      if (batch.has(id)) return batch.get(id);
    }
    return this.sticky.get(id);
  }

  /** Records the ids of one handled batch (with their versions, where known), forgetting the oldest batch beyond the window. */
  add(ids: Iterable<string>, versions?: ReadonlyMap<string, string>): void {
    const batch = new Map<string, string | undefined>();
    for (const id of ids) {
      const version = versions?.get(id);
      batch.set(id, version);
      if (this.sticky.has(id)) this.sticky.set(id, version);
    }
    this.batches.push(batch);
    if (this.batches.length > this.window) this.batches.shift();
  }

  /** Ids currently remembered (what this costs in memory). */
  get size(): number {
    let n = this.sticky.size;
    for (const batch of this.batches) n += batch.size;
    return n;
  }
}
