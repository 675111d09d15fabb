/**
 * The parent lookup of refunds and reversals: which transaction a `parent_qashio_id` names, for the event's `parent`.
 * Used by the transaction cycle (see transactions.ts) once per batch, through the ports the run gives it.
 */
import { isJsonObject } from "../json-object.js";
import { recordHash } from "./hash.js";
import { mapSingleReads, refusedForReference, statusOf } from "./provider-errors.js";
import { listedTotal, pageEntries, type PageEntry, type ProviderPage, type TransactionListQuery } from "./provider.js";
import type { Clock, Logger, Snapshot, SnapshotKey } from "./ports.js";
import { isAcknowledgeableId, optionalString } from "./transaction-ids.js";

/** Parent references remembered as not found, at most (see `ParentLookup.parentsNotFound`). */
const PARENTS_NOT_FOUND_LIMIT = 1_000;

/** The warning of a parent read whose row the client's schema refused with an id that is no transaction UUID. */
const INVALID_PARENT_ROW = "provider answered the parent read with a row refused as invalid provider data (its id is no transaction UUID); published without parent";

/** Snapshot key of the alias `qashio_id -> id`, which lets a refund find its parent without a provider read. */
export function transactionAliasKey(qashioId: string): SnapshotKey {
  return `transaction:qashio_id:${qashioId}`;
}

/** The snapshot of the alias `qashioId -> id` (see {@link transactionAliasKey}). */
export function aliasSnapshot(id: string, qashioId: string, updatedAt: string): Snapshot {
  const alias = { id, qashio_id: qashioId };
  // Its members are in sorted order, so recordHash equals contentHash here without sorting keys per item.
  return { key: transactionAliasKey(qashioId), hash: recordHash(alias), object: alias, updatedAt };
}

/** A transaction's own ids and those it names its parent by. */
export interface TransactionIds {
  readonly id: string;
  readonly qashioId?: string;
  readonly parentQashioId?: string;
  readonly parentId?: string;
}

/** What the lookup needs of the run it serves: its logger and clock, and its store and provider calls. */
export interface ParentLookupPorts {
  readonly logger: Pick<Logger, "warn">;
  readonly clock: Pick<Clock, "now">;
  /** Reads snapshots as the run reads its store (held to its calls' deadline). */
  readSnapshots(step: string, keys: readonly SnapshotKey[]): Promise<Map<SnapshotKey, Snapshot>>;
  /** Lists transactions as the run calls the provider (counted, held to its deadline). */
  listTransactions(step: string, query: TransactionListQuery): Promise<ProviderPage>;
}

/** Parents by parent qashio_id, and the aliases of those a provider read found, to write with the batch's snapshots. */
export interface ResolvedParents {
  readonly parents: Map<string, string>;
  readonly aliases: Snapshot[];
}

/**
 * Parent `{id}` per parent qashio_id, for one run: from the item's own `parent_id`, the same page, the snapshot store's
 * alias (written with a transaction's first snapshot, and with the batch of a refund whose parent a read found), else
 * one provider read per distinct parent and run. Unresolvable, listed by that read as more than one transaction,
 * answered without its exact filter (a row under another reference), refused by the provider for this reference alone
 * (a 4xx other than 401, 403, 408, 429), or the transaction itself: no parent. Memory stays at one page, plus a
 * bounded set of references not found: nothing is kept per transaction seen.
 */
export class ParentLookup {
  /**
   * Parent qashio_ids a provider read did not find, found more than one transaction for, or answered unfiltered, in
   * this run (not read again in it). Parents found need no entry: their alias is written with the batch's snapshots,
   * where the next refund's store lookup finds it. Bounded, so a backlog of refunds of unknown parents cannot grow it
   * past a few pages' worth.
   */
  private readonly parentsNotFound = new Set<string>();

  constructor(private readonly ports: ParentLookupPorts) {}

  /**
   * The parents of `items`, whose page is `page`. Also returns the aliases of parents a provider read found, to write
   * with the batch's snapshots.
   */
  async resolve(items: readonly TransactionIds[], page: readonly TransactionIds[]): Promise<ResolvedParents> {
    const { resolved, missing } = this.knownParents(items, page);
    if (missing.size === 0) return { parents: resolved, aliases: [] };
    return this.readParents(resolved, missing);
  }

  /**
   * Parents resolved without a read (own `parent_id`, the same page), and the parent qashio_ids still to look up (not
   * those this run's reads did not find); references of an item to itself are dropped with a warning. A reference
   * the page lists as more than one transaction is not looked up (its alias or a read would pick one): no parent, as
   * when a read lists more than one.
   */
  private knownParents(items: readonly TransactionIds[], page: readonly TransactionIds[]): { resolved: Map<string, string>; missing: Set<string> } {
    const resolved = new Map<string, string>();
    const missing = new Set<string>();
    let onPage: Map<string, string> | undefined;
    /** How many transactions the page lists under a qashio_id it lists more than once (items are one per id). */
    let shared: Map<string, number> | undefined;
    /** Those of them a refund without its own `parent_id` names, with their counts. */
    let ambiguous: Map<string, number> | undefined;
    for (const item of items) {
      const qid = item.parentQashioId;
      if (!qid) continue;
      // A consumer walking parent links to the original purchase would loop on a refund of itself.
      if (namesItself(item)) {
        this.ports.logger.warn("transaction names itself as its parent; published without parent", { id: item.id });
        continue;
      }
      if (!onPage) {
        onPage = new Map();
        for (const other of page) {
          if (!other.qashioId) continue;
          if (onPage.has(other.qashioId)) (shared ??= new Map()).set(other.qashioId, (shared.get(other.qashioId) ?? 1) + 1);
          else onPage.set(other.qashioId, other.id);
        }
      }
      if (item.parentId) {
        resolved.set(qid, item.parentId);
        continue;
      }
      const listed = shared?.get(qid);
      if (listed !== undefined) (ambiguous ??= new Map()).set(qid, listed);
      else {
        const known = onPage.get(qid);
        if (known) resolved.set(qid, known);
        else if (!this.parentsNotFound.has(qid)) missing.add(qid);
      }
    }
    // Once per reference; one another refund of the page names by its own parent_id is resolved by that (see
    // TransactionRun.eventsFor).
    if (ambiguous) for (const [qid, listed] of ambiguous) if (!resolved.has(qid)) this.ambiguousParent(qid, listed);
    return { resolved, missing };
  }

  /** Warns that the provider lists `listed` transactions under one parent reference: the refunds naming it get none. */
  private ambiguousParent(parentQashioId: string, listed: number): void {
    this.ports.logger.warn("provider lists more than one transaction for the parent reference; published without parent", { parentQashioId, listed });
  }

  /**
   * Looks `missing` parents up in the snapshot store's aliases, else with one provider read each, SINGLE_READ_CONCURRENCY
   * at a time; adds them to `resolved`. The aliases of parents found by a read come back too, for the batch to write
   * with its snapshots, so the next refund of one needs no read: an alias is written with a transaction's first snapshot
   * only, and a write cut short (a DynamoDB batch failed) may have lost it. The reads' answers are taken in `missing`'s
   * order, whichever came first. A failed read stops the batch once the reads in flight ended, none starting after it
   * (see mapSingleReads), as a read made one after another did; a token failure any of them met is the one thrown.
   */
  private async readParents(resolved: Map<string, string>, missing: ReadonlySet<string>): Promise<ResolvedParents> {
    const aliases = await this.ports.readSnapshots("read parent snapshots", [...missing].map(transactionAliasKey));
    const unaliased: string[] = [];
    for (const qid of missing) {
      const id = optionalString(aliases.get(transactionAliasKey(qid))?.object["id"]);
      if (id) resolved.set(qid, id);
      else unaliased.push(qid);
    }
    const pages = await mapSingleReads(unaliased, (qid) => this.readParent(qid));
    const learned: Snapshot[] = [];
    unaliased.forEach((qid, i) => {
      const page = pages[i];
      const entries = page ? pageEntries(page) : [];
      // More than one transaction for one qashio_id (the provider contradicting itself): the first row may be another
      // than the one the refund means, so none is taken, as for a parent not found.
      const ids = new Set<string>();
      const filtered = addIdsListedUnder(qid, entries, ids);
      const listed = page ? Math.max(listedTotal(page) ?? 0, ids.size) : 0;
      if (!filtered) {
        // A row under another reference: the provider left out the exact filter (spec §8.2), so its count is of another
        // list, and a warning of a reference listing several transactions would send ops after duplicates there are not.
        this.ports.logger.warn("provider did not apply the exact qashio_id filter to the parent read (spec §8.2); published without parent", { parentQashioId: qid });
      } else if (listed > 1) {
        this.ambiguousParent(qid, listed);
      } else {
        // The first row naming a transaction under the reference (a malformed one names none), also when the client's
        // schema rejected it (a parent quarantined for a field of its own): its identity is still the parent's, taken
        // only when it is a transaction UUID.
        const first = entries.find(({ raw }) => isJsonObject(raw) && raw["qashio_id"] === qid && optionalString(raw["id"]) !== undefined);
        const rowId = first && isJsonObject(first.raw) ? optionalString(first.raw["id"]) : undefined;
        const id = rowId !== undefined && (first?.rejected === undefined || isAcknowledgeableId(rowId)) ? rowId : undefined;
        if (id) {
          learned.push(aliasSnapshot(id, qid, new Date(this.ports.clock.now()).toISOString()));
          resolved.set(qid, id);
          return;
        }
        // Found but unusable: a row the schema refused whose id is no UUID is invalid provider data, not a missing
        // parent. Named by its field only; its body may hold personal data.
        if (rowId !== undefined) this.ports.logger.warn(INVALID_PARENT_ROW, { parentQashioId: qid, field: "id" });
        else if (page) this.ports.logger.warn("parent transaction not found", { parentQashioId: qid });
      }
      if (this.parentsNotFound.size >= PARENTS_NOT_FOUND_LIMIT) this.parentsNotFound.clear();
      this.parentsNotFound.add(qid);
    });
    return { parents: resolved, aliases: learned };
  }

  /** One provider read of a parent by its qashio_id; undefined when the provider refuses it for this reference alone. */
  private readParent(qid: string): Promise<ProviderPage | undefined> {
    return this.ports.listTransactions("read parent transaction", { qashio_id: qid, page: 1, page_size: 1 }).catch((err: unknown) => {
      // The parent is optional: a read the provider refuses for this reference alone (a 400 for an odd id, a 414
      // for a long one) must not stop every cycle at this page. Anything else (401, 403, 429, 5xx, or a 400 from
      // the token endpoint: a revoked family) still does.
      if (!refusedForReference(err)) throw err;
      this.ports.logger.warn("provider refused the parent read; published without parent", { parentQashioId: qid, status: statusOf(err) });
      return undefined;
    });
  }
}

/**
 * Adds to `ids` the ids of the rows of `entries` listed under `qashioId`; false when a row is listed under another
 * reference (the provider ignoring the exact filter, spec §8.2). A malformed row (not an object, without `qashio_id` or
 * `id`) names no transaction: it is neither, so it does not end a re-drive's walk (only the ref's row is taken there;
 * a cycle listing such a row quarantines it).
 */
export function addIdsListedUnder(qashioId: string, entries: readonly PageEntry[], ids: Set<string>): boolean {
  let filtered = true;
  for (const { raw } of entries) {
    const row = isJsonObject(raw) ? raw : undefined;
    const listedAs = optionalString(row?.["qashio_id"]);
    const id = optionalString(row?.["id"]);
    if (listedAs !== undefined && listedAs !== qashioId) filtered = false;
    else if (listedAs !== undefined && id !== undefined) ids.add(id);
  }
  return filtered;
}

/** True for a transaction naming itself as its parent, by `parent_qashio_id` or by `parent_id`: it gets no parent. */
export function namesItself(item: TransactionIds): boolean {
  return (item.parentQashioId !== undefined && item.parentQashioId === item.qashioId) || item.parentId === item.id;
}
