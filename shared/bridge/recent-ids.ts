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
 * versions (content hashes) it was handled in, where known: a copy listed again in a version not handled yet is a
 * change to handle, one in any version already handled is not (so copies the provider keeps listing side by side on a
 * page, every one of whose versions is recorded, are not taken in turn on every re-read).
 *
 * @example
 * ```ts
 * const handled = new RecentIds();
 * handled.add(["a", "b"], new Map([["a", "hash-1"]]));
 * handled.has("a"); // true (and "a" is now kept for the rest of the pass)
 * handled.versionsOf("a"); // Set { "hash-1" }
 * ```
 */
export class RecentIds {
  /** Per batch: id -> the version(s) it was handled in (undefined: none given). */
  private readonly batches: Map<string, string | readonly string[] | undefined>[] = [];
  /** Ids met again: every version they were handled in since (a set only for these few). */
  private readonly sticky = new Map<string, Set<string>>();

  constructor(private readonly window = RECENT_BATCHES) {}

  /** True when `id` was handled; an id met again is kept from then on. */
  has(id: string): boolean {
    if (this.sticky.has(id)) return true;
    for (const batch of this.batches) {
      if (batch.has(id)) {
        this.sticky.set(id, new Set(this.versionsOf(id)));
        return true;
      }
    }
    return false;
  }

  /**
   * Every version `id` was handled in while remembered; empty when none was given (or it was not handled). Unlike
   * {@link has}, an id met again is not kept: for a walk whose offset only moves on (the card walk), which an id met
   * again cannot hold, so that keeping it would only grow with the cards shifted.
   */
  versionsOf(id: string): ReadonlySet<string> {
    const all = new Set(this.sticky.get(id));
    for (const batch of this.batches) {
      const version = batch.get(id);
      if (typeof version === "string") all.add(version);
      else for (const one of version ?? []) all.add(one);
    }
    return all;
  }

  /**
   * The version `id` was last handled in, from the newest remembered batch that holds it (the last of its versions
   * there); undefined when none was given or it is no longer remembered. For a walk that takes each copy it meets
   * (the card walk), where only the latest version is what its snapshot holds: a copy back in an earlier one is a move.
   */
  lastVersionOf(id: string): string | undefined {
    for (let i = this.batches.length - 1; i >= 0; i--) {
      const batch = this.batches[i] as Map<string, string | readonly string[] | undefined>;
      if (!batch.has(id)) continue;
      const version = batch.get(id);
      return typeof version === "string" ? version : version?.at(-1);
    }
    return undefined;
  }

  /** Records the ids of one handled batch (with their versions, where known), forgetting the oldest batch beyond the window. */
  add(ids: Iterable<string>, versions?: ReadonlyMap<string, string | readonly string[]>): void {
    const batch = new Map<string, string | readonly string[] | undefined>();
    for (const id of ids) {
      const version = versions?.get(id);
      batch.set(id, version);
      const sticky = this.sticky.get(id);
      if (sticky !== undefined && version !== undefined) for (const one of typeof version === "string" ? [version] : version) sticky.add(one);
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
