/**
 * How a status pass tells the transactions a page lists apart: the key an item counts as handled under, the version of
 * a listed copy, which entries it has not handled as they are listed now, and one copy per key for a batch. Used by the
 * transaction cycle (see transactions.ts) per page, through the ports the run gives it.
 */
import { contentHash } from "./hash.js";
import { wellFormedEntityId } from "./entity-id.js";
import { pageEntries, type PageEntry, type ProviderPage } from "./provider.js";
import type { Logger } from "./ports.js";
import type { RecentIds } from "./recent-ids.js";
import type { ValidationResult, Validators } from "./validate.js";

/** The version a pass records for an id whose copy was invalid: no content hash equals it. */
export const INVALID_VERSION = "invalid";

/** Key under which an item counts as handled within one status pass. */
export function itemKey(raw: unknown): string {
  const id = typeof raw === "object" && raw !== null ? (raw as Record<string, unknown>)["id"] : undefined;
  return typeof id === "string" && id !== "" ? id : `sha:${contentHash(raw)}`;
}

/** What {@link ListedCopies.freshOf} finds on a page. */
export interface FreshEntries {
  readonly fresh: PageEntry[];
  readonly keysOfFresh: string[];
  readonly freshKeys: Set<string>;
  readonly repeated: Set<string>;
}

/** What the bookkeeping needs of the run it serves: its logger, its transaction validator and content hash. */
export interface ListedCopiesPorts {
  readonly logger: Pick<Logger, "warn">;
  readonly validators: Pick<Validators, "transaction">;
  /** The content hash the batch computes for a valid transaction (normalised, PII applied). */
  contentHashOf(data: Record<string, unknown>): string;
}

/** `versions` with each copied key's versions in place of the batch's one (see {@link ListedCopies.versionsOfCopies}). */
export function withCopies(
  versions: ReadonlyMap<string, string | readonly string[]>,
  copies: ReadonlyMap<string, string[]>,
): Map<string, string | readonly string[]> {
  const all = new Map(versions);
  for (const [key, list] of copies) all.set(key, list);
  return all;
}

/** The copies and versions a transaction run's status passes meet on their pages. */
export class ListedCopies {
  constructor(private readonly ports: ListedCopiesPorts) {}

  /** The entries of a page read and left that this pass has not handled as they are listed now. */
  unhandled(page: ProviderPage, handled: RecentIds): PageEntry[] {
    return pageEntries(page).filter((entry) => !this.handledAsListed(handled, itemKey(entry.raw), entry));
  }

  /** The version of each copy of a key listed more than once on the page, by key (see {@link handledAsListed}). */
  versionsOfCopies({ fresh, keysOfFresh, repeated }: FreshEntries): Map<string, string[]> {
    const copies = new Map<string, string[]>();
    fresh.forEach((entry, i) => {
      const key = keysOfFresh[i] as string;
      if (!repeated.has(key)) return;
      const list = copies.get(key) ?? [];
      list.push(this.versionOf(entry));
      copies.set(key, list);
    });
    return copies;
  }

  /**
   * The entries of a page not handled in this pass as they are listed now, with their keys (in order, and as a set)
   * and the keys the page lists more than once: the batch keeps one copy, and every copy's version counts as handled.
   */
  freshOf(items: readonly PageEntry[], handled: RecentIds): FreshEntries {
    const fresh: PageEntry[] = [];
    /** The key of each entry of `fresh`, in order (an id-less item's key is a content hash: computed once). */
    const keysOfFresh: string[] = [];
    const freshKeys = new Set<string>();
    const repeated = new Set<string>();
    for (const entry of items) {
      const key = itemKey(entry.raw);
      if (this.handledAsListed(handled, key, entry)) continue;
      // A key repeated within the page goes along too: the batch picks which copy to keep.
      if (freshKeys.has(key)) repeated.add(key);
      freshKeys.add(key);
      fresh.push(entry);
      keysOfFresh.push(key);
    }
    return { fresh, keysOfFresh, freshKeys, repeated };
  }

  /**
   * Whether `entry` was handled in this pass as it is listed now. A valid copy listed again in a version not handled
   * yet (it changed while the walk went on, and a read-ahead page or a shifted one shows it; or an invalid copy of it
   * was quarantined before) is not: it is handled again, as a change, rather than dropped as a duplicate. An invalid
   * copy met again is. `key` is the entry's item key. Costs a hash only for ids met again.
   */
  private handledAsListed(handled: RecentIds, key: string, entry: PageEntry): boolean {
    if (!handled.has(key)) return false;
    const versions = handled.versionsOf(key);
    if (versions.size === 0) return true;
    const version = this.versionOf(entry);
    return version === INVALID_VERSION || versions.has(version);
  }

  /** The version a pass records for a listed copy: its content hash as the batch computes it, or INVALID_VERSION. */
  versionOf(entry: PageEntry): string {
    if (entry.rejected !== undefined) return INVALID_VERSION;
    const result = this.ports.validators.transaction(entry.raw);
    return result.success ? this.ports.contentHashOf(result.data) : INVALID_VERSION;
  }

  /**
   * Validates a batch, keeping one copy of each key (id) the page lists more than once: a valid copy over a rejected
   * one, which would otherwise be quarantined and acknowledged in its place; else the first. Copies that differ are
   * logged, as the provider then contradicts itself within one page.
   */
  oneCopyPerKey(entries: readonly PageEntry[]): { raw: unknown; result: ValidationResult }[] {
    const kept = new Map<string, { raw: unknown; result: ValidationResult }>();
    for (const { raw, rejected } of entries) {
      const result: ValidationResult = rejected === undefined ? this.ports.validators.transaction(raw) : { success: false, reason: rejected };
      const key = itemKey(raw);
      const other = kept.get(key);
      if (!other) {
        kept.set(key, { raw, result });
        continue;
      }
      const replace = !other.result.success && result.success;
      if (contentHash(other.raw) !== contentHash(raw)) {
        this.ports.logger.warn("transaction listed twice on one page with different content", {
          // The key is the id as sent, which an invalid copy may hold anything in (an email).
          id: wellFormedEntityId("transaction", key),
          kept: replace ? "later copy (the earlier is invalid)" : "earlier copy",
        });
      }
      if (replace) kept.set(key, { raw, result });
    }
    return [...kept.values()];
  }
}
