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
 * Ids handled in the last {@link RECENT_BATCHES} batches, plus ids seen again after being handled.
 *
 * @example
 * ```ts
 * const handled = new RecentIds();
 * handled.add(["a", "b"]);
 * handled.has("a"); // true (and "a" is now kept for the rest of the pass)
 * ```
 */
export class RecentIds {
  private readonly batches: Set<string>[] = [];
  private readonly sticky = new Set<string>();

  constructor(private readonly window = RECENT_BATCHES) {}

  /** True when `id` was handled; an id met again is kept from then on. */
  has(id: string): boolean {
    if (this.sticky.has(id)) return true;
    for (const batch of this.batches) {
      if (batch.has(id)) {
        this.sticky.add(id);
        return true;
      }
    }
    return false;
  }

  /** Records the ids of one handled batch, forgetting the oldest batch beyond the window. */
  add(ids: Iterable<string>): void {
    this.batches.push(new Set(ids));
    if (this.batches.length > this.window) this.batches.shift();
  }

  /** Ids currently remembered (what this costs in memory). */
  get size(): number {
    let n = this.sticky.size;
    for (const batch of this.batches) n += batch.size;
    return n;
  }
}
