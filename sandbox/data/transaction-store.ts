/**
 * Transactions of one company, kept in creation order with per-status counts per
 * chunk, so list queries never sort and the hot filter (`client_sync_status` alone)
 * finds its page in O(n / CHUNK + CHUNK + page) and acknowledging is O(batch).
 */
import type { ClientSyncStatus, TransactionRecord } from "./model.js";
import { NetSpend } from "./net-spend.js";
import { SpendLedger } from "./spend-ledger.js";

const CHUNK = 512;
const STATUSES: readonly ClientSyncStatus[] = ["not_synced", "synced", "outdated"];

/** Narrowing of one list query; `predicate` carries every other filter. */
export interface TransactionQuery {
  readonly clientSyncStatus?: ClientSyncStatus;
  readonly qashioId?: string;
  readonly parentQashioId?: string;
  readonly predicate?: (tx: TransactionRecord) => boolean;
}

export interface TransactionPage {
  readonly total: number;
  readonly items: TransactionRecord[];
}

export class TransactionStore {
  /** Oldest first: appending keeps the order, reading backwards gives newest first. */
  private readonly items: TransactionRecord[] = [];
  private readonly indexById = new Map<string, number>();
  private readonly indexByQashioId = new Map<string, number>();
  private readonly childrenByParentQashioId = new Map<string, number[]>();
  private readonly chunkCounts: Record<ClientSyncStatus, number[]> = { not_synced: [], synced: [], outdated: [] };
  private readonly totals: Record<ClientSyncStatus, number> = { not_synced: 0, synced: 0, outdated: 0 };
  /**
   * What the forgotten children of a parent still held gave back (`transaction_amount`), by its qashio_id: all of them
   * (refunds and reversals), and the reversals among them.
   */
  private readonly forgottenReturns = new Map<string, { all: number; reversed: number }>();
  /** What each card's spend consumed, by day (spend limits' windows): kept as transactions come, change and go. */
  readonly spend = new SpendLedger();
  /** The company's net spend by day (company summary): kept as transactions come, change and go. */
  readonly netSpend = new NetSpend();

  get size(): number {
    return this.items.length;
  }

  /** Appends a transaction newer than every stored one. */
  add(tx: TransactionRecord): void {
    this.index(tx);
    this.follow(tx);
  }

  /** A stored transaction changed in place (control PATCH): what it consumed and spent is counted as it is now. */
  changed(tx: TransactionRecord): void {
    if (this.get(tx.id) === tx) this.follow(tx);
  }

  private follow(tx: TransactionRecord): void {
    this.spend.follow(tx, this);
    this.netSpend.follow(tx);
  }

  private index(tx: TransactionRecord): void {
    const index = this.items.length;
    this.items.push(tx);
    this.indexById.set(tx.id, index);
    this.indexByQashioId.set(tx.qashio_id, index);
    if (tx.parent_qashio_id !== null) {
      const children = this.childrenByParentQashioId.get(tx.parent_qashio_id);
      if (children) children.push(index);
      else this.childrenByParentQashioId.set(tx.parent_qashio_id, [index]);
    }
    const chunk = Math.floor(index / CHUNK);
    for (const status of STATUSES) {
      const counts = this.chunkCounts[status];
      if (counts.length <= chunk) counts.push(0);
    }
    this.chunkCounts[tx.client_sync_status][chunk] = (this.chunkCounts[tx.client_sync_status][chunk] ?? 0) + 1;
    this.totals[tx.client_sync_status]++;
  }

  get(id: string): TransactionRecord | undefined {
    const index = this.indexById.get(id);
    return index === undefined ? undefined : this.items[index];
  }

  /** The transactions that name `qashioId` as their parent (refunds and reversals of a purchase), oldest first. */
  childrenOf(qashioId: string): TransactionRecord[] {
    return (this.childrenByParentQashioId.get(qashioId) ?? []).map((index) => this.items[index]!);
  }

  /**
   * What the children of `qashioId` this store forgot gave back (their `transaction_amount`s): forgetting a refund must
   * not make its purchase's money returnable again (leftToReturn).
   */
  forgottenReturnsOf(qashioId: string): number {
    return this.forgottenReturns.get(qashioId)?.all ?? 0;
  }

  /** What the reversals of `qashioId` this store forgot reversed: its spend, counted again, stays less that (SpendLedger). */
  forgottenReversalsOf(qashioId: string): number {
    return this.forgottenReturns.get(qashioId)?.reversed ?? 0;
  }

  getByQashioId(qashioId: string): TransactionRecord | undefined {
    const index = this.indexByQashioId.get(qashioId);
    return index === undefined ? undefined : this.items[index];
  }

  /** Newest stored transaction, if any. */
  newest(): TransactionRecord | undefined {
    return this.items[this.items.length - 1];
  }

  /** Every transaction, oldest first (for whole-store reports; not for request paths). */
  all(): readonly TransactionRecord[] {
    return this.items;
  }

  countByStatus(status: ClientSyncStatus): number {
    return this.totals[status];
  }

  /** Moves a stored transaction to another `client_sync_status`, keeping the counts right. */
  setSyncStatus(tx: TransactionRecord, status: ClientSyncStatus): void {
    if (tx.client_sync_status === status) return;
    const index = this.indexById.get(tx.id);
    if (index === undefined) throw new RangeError(`transaction ${tx.id} is not in this store`);
    const chunk = Math.floor(index / CHUNK);
    const before = tx.client_sync_status;
    this.chunkCounts[before][chunk] = (this.chunkCounts[before][chunk] ?? 0) - 1;
    this.totals[before]--;
    this.chunkCounts[status][chunk] = (this.chunkCounts[status][chunk] ?? 0) + 1;
    this.totals[status]++;
    tx.client_sync_status = status;
  }

  /**
   * Forgets every transaction older than the newest `keep` that is acknowledged (`synced`) and not the parent of a
   * held one: what a client still has to read (`not_synced`, `outdated`) and the purchase a held refund names stay,
   * and a held parent keeps what its forgotten children gave back ({@link forgottenReturnsOf}). Returns those forgotten
   * (newest first), so what others keep of them goes with them at their cost alone. O(size) when more than `keep` are held.
   */
  forgetBeyondNewest(keep: number): TransactionRecord[] {
    const beyond = this.items.length - keep;
    if (beyond <= 0) return [];
    const forgotten: TransactionRecord[] = [];
    const held: TransactionRecord[] = [];
    const parentsOfHeld = new Set<string>();
    // Newest first: a parent is older than its children (it had to exist to be named), so they are decided before it.
    for (let i = this.items.length - 1; i >= 0; i--) {
      const tx = this.items[i] as TransactionRecord;
      if (i < beyond && tx.client_sync_status === "synced" && !parentsOfHeld.has(tx.qashio_id)) {
        // Its parent, when held, keeps what it gave back; a forgotten parent keeps nothing (nothing can name it again).
        this.forgottenReturns.delete(tx.qashio_id);
        this.spend.forget(tx);
        this.netSpend.forget(tx);
        if (tx.parent_qashio_id !== null) {
          const amount = Number(tx.transaction_amount);
          const before = this.forgottenReturns.get(tx.parent_qashio_id) ?? { all: 0, reversed: 0 };
          this.forgottenReturns.set(tx.parent_qashio_id, { all: before.all + amount, reversed: before.reversed + (tx.transaction_category === "reversal" ? amount : 0) });
        }
        forgotten.push(tx);
        continue;
      }
      held.push(tx);
      if (tx.parent_qashio_id !== null) parentsOfHeld.add(tx.parent_qashio_id);
    }
    if (forgotten.length > 0) this.replaceAll(held.reverse());
    return forgotten;
  }

  /** Makes `kept` (oldest first) the whole store, indexes and counts rebuilt. */
  private replaceAll(kept: readonly TransactionRecord[]): void {
    this.items.length = 0;
    this.indexById.clear();
    this.indexByQashioId.clear();
    this.childrenByParentQashioId.clear();
    for (const status of STATUSES) {
      this.chunkCounts[status].length = 0;
      this.totals[status] = 0;
    }
    // Indexed again only: what they consumed is counted already.
    for (const tx of kept) this.index(tx);
  }

  /** One page, newest first, of the transactions matching `query`. */
  page(query: TransactionQuery, offset: number, limit: number): TransactionPage {
    const status = query.clientSyncStatus;
    const predicate = (tx: TransactionRecord): boolean =>
      (status === undefined || tx.client_sync_status === status) &&
      (query.parentQashioId === undefined || tx.parent_qashio_id === query.parentQashioId) &&
      (query.predicate === undefined || query.predicate(tx));

    if (query.qashioId !== undefined) {
      const index = this.indexByQashioId.get(query.qashioId);
      const tx = index === undefined ? undefined : this.items[index];
      return this.collect(tx !== undefined && predicate(tx) ? [tx] : [], offset, limit);
    }
    if (query.parentQashioId !== undefined) {
      const indices = this.childrenByParentQashioId.get(query.parentQashioId) ?? [];
      const matches: TransactionRecord[] = [];
      for (let i = indices.length - 1; i >= 0; i--) {
        const tx = this.items[indices[i] ?? -1];
        if (tx !== undefined && predicate(tx)) matches.push(tx);
      }
      return this.collect(matches, offset, limit);
    }
    if (query.predicate === undefined) {
      if (status === undefined) {
        const end = Math.max(0, this.items.length - offset);
        const start = Math.max(0, end - limit);
        return { total: this.items.length, items: this.items.slice(start, end).reverse() };
      }
      return { total: this.totals[status], items: this.pageByStatus(status, offset, limit) };
    }
    return this.scan(predicate, status, offset, limit);
  }

  private collect(matches: TransactionRecord[], offset: number, limit: number): TransactionPage {
    return { total: matches.length, items: matches.slice(offset, offset + limit) };
  }

  /** Skips whole chunks by their counts, then reads the page. */
  private pageByStatus(status: ClientSyncStatus, offset: number, limit: number): TransactionRecord[] {
    const counts = this.chunkCounts[status];
    const out: TransactionRecord[] = [];
    let skip = offset;
    for (let chunk = counts.length - 1; chunk >= 0 && out.length < limit; chunk--) {
      const count = counts[chunk] ?? 0;
      if (count === 0) continue;
      if (skip >= count) {
        skip -= count;
        continue;
      }
      const low = chunk * CHUNK;
      for (let i = Math.min(this.items.length, low + CHUNK) - 1; i >= low && out.length < limit; i--) {
        const tx = this.items[i];
        if (tx === undefined || tx.client_sync_status !== status) continue;
        if (skip > 0) skip--;
        else out.push(tx);
      }
    }
    return out;
  }

  /** One pass, newest first, counting every match and keeping the page's. */
  private scan(
    predicate: (tx: TransactionRecord) => boolean,
    status: ClientSyncStatus | undefined,
    offset: number,
    limit: number,
  ): TransactionPage {
    const out: TransactionRecord[] = [];
    let total = 0;
    const chunks = Math.ceil(this.items.length / CHUNK);
    for (let chunk = chunks - 1; chunk >= 0; chunk--) {
      if (status !== undefined && (this.chunkCounts[status][chunk] ?? 0) === 0) continue;
      const low = chunk * CHUNK;
      for (let i = Math.min(this.items.length, low + CHUNK) - 1; i >= low; i--) {
        const tx = this.items[i];
        if (tx === undefined || !predicate(tx)) continue;
        if (total >= offset && out.length < limit) out.push(tx);
        total++;
      }
    }
    return { total, items: out };
  }
}
