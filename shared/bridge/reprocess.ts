/**
 * The re-drive's reprocessing: reads chosen transactions again by qashio_id and runs them through the transaction
 * cycle's batch path (diff, publish, snapshot, quarantine, acknowledge), in one run. The re-drive of quarantined
 * transactions (redrive.ts) is built on it.
 */
import { storeDeadlineExceeded } from "./errors.js";
import type { CycleOptions, TransactionCycleDeps } from "./deps.js";
import type { RunKind } from "./cycle.js";
import { addIdsListedUnder } from "./parents.js";
import type { Snapshot, SnapshotKey, StoreCallOptions } from "./ports.js";
import { ServedPageSize } from "./page-size.js";
import { endsList, pageEntries, type PageEntry, type ProviderPage } from "./provider.js";
import { mapSingleReads, refusedForReference, statusOf } from "./provider-errors.js";
import type { CycleReport } from "./report.js";
import { INVALID_VERSION, itemKey } from "./listed-copies.js";
import { transactionKey, TransactionRun } from "./transactions.js";
import { lastModified } from "./versions.js";

/** A re-drive's read not made, or not finished, before the deadline (see `RedriveRun.readByQashioId`). */
const UNREACHED = Symbol("unreached");
/** A re-drive's read the provider refused for its reference alone (see `RedriveRun.readByQashioId`). */
const REFUSED = Symbol("refused");

/** A re-drive's read by qashio_id: the ref's own row, or how many other transactions it lists under that qashio_id. */
interface ReadById {
  readonly entry?: PageEntry;
  readonly others: number;
  /** The list went on past REDRIVE_READ_PAGES pages without the ref's row. */
  readonly tooMany?: boolean;
}

/** A transaction to read again: its id, and its qashio_id (the only exact-match filter of the list, spec §4.3). */
export interface TransactionRef {
  readonly id: string;
  readonly qashioId: string;
  /**
   * Delivered by an earlier chunk of the same run: not read again (a record's qashio_id may be glitched, where the one
   * it was read by was trusted), only handed to `afterBatch` as delivered with the chunk's first batch.
   */
  readonly delivered?: true;
  /**
   * Set when no publish record confirms `qashioId` (a validation record's, maybe the very field that failed): what its
   * records hold of the state they were quarantined in. A read by it that finds the transaction nowhere (or lists only
   * others, or is refused for that reference) then settles it as delivered when its snapshot proves a state as new
   * reached the bus (see shownDelivered).
   */
  readonly unconfirmed?: UnconfirmedRef;
}

/** Of the records of a {@link TransactionRef} read by an unconfirmed qashio_id: their newest state. */
export interface UnconfirmedRef {
  /** Newest provider change time (updated_at, else modified_date) of their bodies, in ms; absent when one has none. */
  readonly changedAt?: number;
  /** When the last of them was quarantined (its `at`), in ms. */
  readonly quarantinedAt: number;
}

/**
 * True when `snapshot` proves a transaction's state at least as new as its unconfirmed records' reached the bus: the
 * provider's change time of the state it holds is no older than theirs, and it was written after the last of them was
 * quarantined (so read after: runs are serialised by the cycle lock and the provider's state only moves on), which
 * also orders two states the provider stamped alike.
 */
function shownDelivered(snapshot: Snapshot | undefined, unconfirmed: UnconfirmedRef): boolean {
  if (snapshot === undefined || unconfirmed.changedAt === undefined) return false;
  const published = lastModified(snapshot.object);
  return published !== undefined && published >= unconfirmed.changedAt && Date.parse(snapshot.updatedAt) > unconfirmed.quarantinedAt;
}

/**
 * Pages of a qashio_id a re-drive reads at most for one record (spec §4.3: newest first, walked with `has_next`, §8.1):
 * one reference can list many transactions (a parent with its refunds and reversals, a reused reference), the record's
 * own behind newer ones. A bound, so a reference listing thousands costs a run at most this many reads a record.
 */
export const REDRIVE_READ_PAGES = 10;

/** A stopped re-drive is not resumed by the next cycle: its records stay until the re-drive runs again. */
const REDRIVE_RUN: RunKind = {
  what: "re-drive",
  next: "records not re-driven yet are kept: run `redrive` again once the cause is fixed",
  listsBacklog: false,
};

/** What {@link reprocessTransactions} did with one chunk of transactions (see ReprocessOptions.afterChunk). */
export interface ReprocessedChunk {
  /**
   * Ids whose current state is delivered: published now and its snapshot stored, or already equal to its snapshot, or,
   * found nowhere (or refused) by an unconfirmed qashio_id, shown delivered by its snapshot (TransactionRef.unconfirmed).
   */
  readonly delivered: ReadonlySet<string>;
  /** Ids the provider does not list under their qashio_id, nor any other transaction under it. */
  readonly missing: ReadonlySet<string>;
  /** Ids whose qashio_id the provider lists only other transactions under (the provider contradicting itself). */
  readonly listsOthers: ReadonlySet<string>;
  /** Ids not listed on the first REDRIVE_READ_PAGES pages under their qashio_id, which lists more. */
  readonly listsTooMany: ReadonlySet<string>;
  /** Ids whose read by qashio_id the provider refused for that reference alone (see refusedForReference). */
  readonly refused: ReadonlySet<string>;
  /**
   * Ids whose current state fails validation: quarantined again (under the id of the record it came from when the
   * body is unchanged, so no second record) and acknowledged, as a pulled page's invalid items are.
   */
  readonly invalid: ReadonlySet<string>;
  /**
   * Ids not read before the deadline, and those found nowhere by an unconfirmed qashio_id whose snapshot could not be
   * checked by then (see settledBySnapshot); the report's outcome is then `deadline`.
   */
  readonly unreached: readonly string[];
  /**
   * Of `delivered`, those shown delivered by their snapshot alone: a state as new as their records' reached the bus,
   * not necessarily their current one, so a record of a newer state is not settled by it.
   */
  readonly shownBySnapshot: ReadonlySet<string>;
}

/** Options of {@link reprocessTransactions}. */
export interface ReprocessOptions extends Pick<CycleOptions, "pageSize" | "deadline" | "signal"> {
  /**
   * Called with each batch's delivered ids once that batch is done, and the write options (the calls' deadline) its
   * store writes are to be held to; a WriteDeadlineExceededError from it ends the run with outcome `deadline`, those
   * ids counted as not reached.
   */
  readonly afterBatch?: (delivered: ReadonlySet<string>, write: StoreCallOptions) => Promise<void>;
  /** Called with what became of each chunk's transactions once it is done, before the next chunk is asked for. */
  readonly afterChunk: (chunk: ReprocessedChunk) => void;
  /**
   * True once `chunks` handed out all it was to (the walk that builds them reached its end): a run then past its
   * deadline tried everything, and is `complete`. Without it, `chunks` ending past the deadline counts as stopped there.
   */
  readonly chunksEnded?: () => boolean;
}

/** A transaction run that reads chosen transactions again rather than walk the lists (see {@link reprocessTransactions}). */
class RedriveRun extends TransactionRun {
  /** A re-drive's read by qashio_id could not finish by the deadline: no further one starts (see readByQashioId). */
  private readsOutOfTime = false;

  /**
   * Reads the given transactions again (but those `delivered`, settled unread), one provider read each by qashio_id,
   * SINGLE_READ_CONCURRENCY at a time (see mapSingleReads), and runs them through the batch path of a pulled page, a
   * page at a time, calling `afterBatch` with each batch's delivered ids as soon as that batch is done (so its records
   * can go before a timeout cuts the run). Reads stop at the deadline, or at a read that cannot finish by it; the refs not reached (from that read on,
   * in `refs`' order) are returned, and the outcome is `deadline`.
   */
  async reprocess(
    refs: readonly TransactionRef[],
    afterBatch?: ReprocessOptions["afterBatch"],
  ): Promise<{
    delivered: Set<string>;
    missing: Set<string>;
    listsOthers: Set<string>;
    listsTooMany: Set<string>;
    refused: Set<string>;
    invalid: Set<string>;
    unreached: string[];
    shownBySnapshot: Set<string>;
  }> {
    this.ackRetry = { failedBefore: 0, readsPage: false };
    const delivered = new Set<string>();
    const missing = new Set<string>();
    const listsOthers = new Set<string>();
    const listsTooMany = new Set<string>();
    const refused = new Set<string>();
    const invalid = new Set<string>();
    const unreached: string[] = [];
    let batch: PageEntry[] = [];
    // Delivered by an earlier chunk's read (TransactionRef.delivered): not read again, settled with the first batch.
    let deliveredBefore = refs.filter((ref) => ref.delivered === true).map((ref) => ref.id);
    const toRead = refs.filter((ref) => ref.delivered !== true);
    /** Processes the batch in hand; false when a call in it ran out of time (the cycle then ends with `deadline`). */
    const flush = async (): Promise<boolean> => {
      if (batch.length === 0 && deliveredBefore.length === 0) return true;
      const done = new Set<string>(deliveredBefore);
      deliveredBefore = [];
      const inHand = batch;
      batch = [];
      let inTime = true;
      // Filled by the validation, before any call: also when a later call of the batch runs out of time.
      const versions = new Map<string, string | readonly string[]>();
      try {
        if (inHand.length > 0) await this.processBatch(inHand, done, versions);
      } catch (err) {
        // Out of time in the acknowledge or a parent read: what was published and stored still counts.
        if (!this.outOfTime(err)) throw err;
        inTime = false;
        for (const { raw } of inHand) {
          const id = (raw as Record<string, unknown>)["id"] as string;
          if (!done.has(id)) unreached.push(id);
        }
      }
      for (const id of done) delivered.add(id);
      for (const [id, version] of versions) if (version === INVALID_VERSION) invalid.add(id);
      try {
        await afterBatch?.(done, this.storeCallOptions());
      } catch (err) {
        // Its writes stopped retrying at the calls' deadline: those records are left to the next run, as not reached.
        if (storeDeadlineExceeded(err) === undefined) throw err;
        for (const id of done) unreached.push(id);
        return false;
      }
      return inTime;
    };
    /** Processes the batch once it holds a page's worth; false when it ran out of time, the refs from `from` on then not reached. */
    const flushIfFull = async (from: number): Promise<boolean> => {
      if (batch.length < this.pageSize || (await flush())) return true;
      for (const r of toRead.slice(from)) unreached.push(r.id);
      return false;
    };
    // Read a batch's worth at a time, a few reads in flight (the memory of one page of bodies, as before), and taken in
    // the refs' order whichever answered first: the batches, events and ids are those of reads made one by one.
    let stopped = false;
    let next = 0;
    while (!stopped && next < toRead.length) {
      // A read of the last window may have lowered the page size (a page_size the provider rejected) to the batch in
      // hand or under it: a page's worth then, processed before the next window, which would otherwise be empty (read
      // again and again, for ever: nothing in it awaits a call or a timer).
      if (!(await flushIfFull(next))) {
        stopped = true;
        break;
      }
      const window = toRead.slice(next, next + this.pageSize - batch.length);
      const reads = await mapSingleReads(window, (ref) => this.readByQashioId(ref));
      for (const [k, read] of reads.entries()) {
        const i = next + k;
        if (read === UNREACHED) {
          for (const r of toRead.slice(i)) unreached.push(r.id);
          stopped = true;
          break;
        }
        const ref = toRead[i] as TransactionRef;
        if (read === REFUSED) {
          refused.add(ref.id);
          continue;
        }
        const { entry, others, tooMany } = read;
        if (entry === undefined) {
          if (tooMany === true) {
            listsTooMany.add(ref.id);
            this.deps.logger.warn("provider lists more transactions under the record's qashio_id than a re-drive reads, none of them this one; record kept", {
              id: ref.id,
              listed: others,
              pages: REDRIVE_READ_PAGES,
            });
          } else if (others > 0) {
            listsOthers.add(ref.id);
            this.deps.logger.warn("provider lists other transactions under the record's qashio_id, not this one; record kept", { id: ref.id, listed: others });
          } else missing.add(ref.id);
          continue;
        }
        this.report.pulled += 1;
        batch.push(entry);
        if (!(await flushIfFull(i + 1))) {
          stopped = true;
          break;
        }
      }
      next += window.length;
    }
    if (stopped) this.report.outcome = "deadline";
    const shownBySnapshot = new Set(await this.settledBySnapshot(toRead, [missing, listsOthers, refused], unreached, stopped));
    deliveredBefore.push(...shownBySnapshot);
    // Within the calls' grace: what was read before the deadline is published and its records go.
    if (!(await flush())) this.report.outcome = "deadline";
    return { delivered, missing, listsOthers, listsTooMany, refused, invalid, unreached, shownBySnapshot };
  }

  /**
   * Of the refs read by an unconfirmed qashio_id (TransactionRef.unconfirmed) that found them nowhere, listed only
   * others, or were refused for that reference (`unfound`), the ids whose snapshot shows them delivered (see
   * shownDelivered), taken out of those sets: a glitched reference finds nothing run after run (or is refused as odd),
   * where the snapshot of the transaction's id can tell. When that check cannot be made in time (`stopped` already, or
   * past the deadline, or its read runs out of time), they move to `unreached` and the outcome is `deadline`: what
   * became of them is not known yet, and a record kept as found nowhere would send someone looking for it.
   */
  private async settledBySnapshot(
    refs: readonly TransactionRef[],
    unfound: readonly Set<string>[],
    unreached: string[],
    stopped: boolean,
  ): Promise<string[]> {
    const candidates = refs.filter((ref) => ref.unconfirmed?.changedAt !== undefined && unfound.some((ids) => ids.has(ref.id)));
    if (candidates.length === 0) return [];
    const snapshots = stopped || this.pastDeadline() ? undefined : await this.snapshotsInTime(candidates);
    if (snapshots === undefined) {
      for (const { id } of candidates) {
        for (const ids of unfound) ids.delete(id);
        unreached.push(id);
      }
      this.report.outcome = "deadline";
      return [];
    }
    const settled = candidates.filter((ref) => shownDelivered(snapshots.get(transactionKey(ref.id)), ref.unconfirmed as UnconfirmedRef)).map((ref) => ref.id);
    for (const id of settled) for (const ids of unfound) ids.delete(id);
    return settled;
  }

  /** The snapshots of `refs`' transactions; undefined when their read runs out of time. */
  private async snapshotsInTime(refs: readonly TransactionRef[]): Promise<Map<SnapshotKey, Snapshot> | undefined> {
    try {
      return await this.read("read snapshots of transactions not found by an unconfirmed qashio_id", (call) =>
        this.deps.snapshots.getMany(refs.map((ref) => transactionKey(ref.id)), call),
      );
    } catch (err) {
      if (!this.outOfTime(err)) throw err;
      return undefined;
    }
  }

  /**
   * One read of a transaction by its qashio_id for {@link reprocess}: the row whose `id` is the ref's, and how many other
   * transactions the answer lists under that qashio_id (the provider contradicting itself). A whole page is asked for,
   * not one row: newest first, the first row may be another transaction than the ref's; while the ref's row is not
   * listed and the list goes on (a parent with many refunds, a reused reference), the next page is read, up to
   * REDRIVE_READ_PAGES (`tooMany` past them). Only that row is kept, so the reads in hand hold one body each.
   * `UNREACHED` once past the deadline, also between two pages, or once a read could not finish by it (none starts
   * after such a read, as none did when read one by one); `REFUSED` when the provider refuses it for this reference
   * alone. Any other failure is thrown.
   */
  private async readByQashioId(ref: TransactionRef): Promise<ReadById | typeof UNREACHED | typeof REFUSED> {
    /** Ids of the other transactions listed under the ref's qashio_id. */
    const others = new Set<string>();
    /** Every row read, malformed ones included (see itemKey): a page holding none not read before ends the walk. */
    const rowsRead = new Set<string>();
    /** Rows of the list the pages read so far cover. */
    let above = 0;
    /** What this reference's answers showed of the size the provider serves a page: its pages are numbered in it. */
    const served = new ServedPageSize();
    for (let reads = 1; ; reads += 1) {
      if (this.readsOutOfTime || this.pastDeadline()) return UNREACHED;
      let page: ProviderPage;
      let asked = 0;
      let pageNo = 1;
      try {
        page = await this.listPage("read transaction by qashio_id", (size, call) => {
          // The page holding row `above`: a size that shrank meanwhile may repeat rows already read, never skip one.
          asked = size;
          pageNo = Math.floor(above / served.in(size)) + 1;
          return this.deps.provider.listTransactions({ qashio_id: ref.qashioId, page: pageNo, page_size: asked }, call);
        });
      } catch (err) {
        // A read refused for this qashio_id alone (a broken one, quarantined for it) must not stop every re-drive.
        if (refusedForReference(err)) {
          this.deps.logger.warn("provider refused the read by qashio_id; record kept", { id: ref.id, status: statusOf(err) });
          return REFUSED;
        }
        if (!this.outOfTime(err)) throw err;
        this.readsOutOfTime = true;
        return UNREACHED;
      }
      const entries = pageEntries(page);
      const entry = entries.find(({ raw }) => (raw as Record<string, unknown> | null)?.["id"] === ref.id);
      if (entry) return { entry, others: 0 };
      const seen = rowsRead.size;
      for (const { raw } of entries) rowsRead.add(itemKey(raw));
      const newRows = rowsRead.size > seen;
      const filtered = addIdsListedUnder(ref.qashioId, entries, others);
      // A page short of the size asked that is not the last, its page_size echoing the size asked or absent: its has_next
      // or count says the list goes on, or it says neither (endsList: only an empty page is then the last, as in the
      // cycle's walk). The provider serves that many a page and numbers its pages in it (as the card walk reads it),
      // unless a fuller page showed more (a row left out, see ServedPageSize). Numbered in the size asked, the next read
      // would be this page again, and the walk would stop with rows still listed.
      const held = entries.length;
      const pageSize = served.weigh(page, held, asked, !endsList(page, held, (pageNo - 1) * served.in(asked)));
      const start = (pageNo - 1) * pageSize;
      // Read on only while the page is the filtered list going on: a row under another reference means the provider
      // ignored the exact filter (spec §8.2), and walking on would read its whole list; a page of rows all read before
      // (a provider ignoring `page`) would read the same rows up to the bound.
      if (!newRows || !filtered || endsList(page, entries.length, start)) return { others: others.size };
      if (reads >= REDRIVE_READ_PAGES) return { others: others.size, tooMany: true };
      // The rows of the page as the provider numbers it: one it left out of the page still counts.
      above = Math.max(above, start + Math.max(pageSize, entries.length));
    }
  }
}

/**
 * Reads the given transactions again, a chunk at a time, and runs them through the same path as a pulled page (diff,
 * publish, snapshot, quarantine, acknowledge), all in one run (one report, one log line). A chunk is asked for only
 * once the one before is done, so a caller that builds each from a walk holds one chunk; once a chunk stops at the
 * deadline (or a stop request) no other is asked for, and a walk that ends early at it ends the run with `deadline`.
 * Internal to the engine: the re-drive of quarantined transactions is built on it.
 *
 * @throws {CycleAbortedError} a dependency failed; `error.report` holds what was done.
 * @example
 * ```ts
 * const report = await reprocessTransactions(deps, chunks, { afterChunk: ({ delivered, missing }) => settle(delivered, missing) });
 * ```
 */
export async function reprocessTransactions(
  deps: TransactionCycleDeps,
  chunks: AsyncIterable<readonly TransactionRef[]>,
  options: ReprocessOptions,
): Promise<CycleReport> {
  const { afterBatch, afterChunk, chunksEnded, ...cycle } = options;
  const run = new RedriveRun(deps, cycle);
  return run.execute(async () => {
    for await (const refs of chunks) {
      afterChunk(await run.reprocess(refs, afterBatch));
      if (run.report.outcome !== "complete") break;
    }
    // The walk that builds the chunks stops early at the deadline or a stop request: what it did not reach waits.
    if (run.report.outcome === "complete" && run.pastDeadline() && chunksEnded?.() !== true) run.report.outcome = "deadline";
    return run.finish(REDRIVE_RUN);
  }, REDRIVE_RUN);
}

