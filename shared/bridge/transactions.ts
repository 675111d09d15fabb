/**
 * The transaction cycle: pull `not_synced`, then `outdated`, the order the spec suggests (§1), `not_synced` pausing at
 * {@link NOT_SYNCED_BUDGET_SHARE} of the budget for `outdated`'s turn; per page diff against snapshots,
 * publish, write snapshots, then acknowledge. See README.md (The engine), docs/events.md and docs/spec-gaps.md.
 */
import { recordHash, releaseJson } from "./hash.js";
import { applyPiiInPlace, type PiiPolicy } from "./pii.js";
import type { Change } from "./diff.js";
import { CycleRun } from "./cycle.js";
import { failedCallOf, isTokenFailure } from "./provider-errors.js";
import { lastModified, nextSequence, storedSequence, versionTime } from "./versions.js";
import { withoutSyncStatus } from "./quarantine-id.js";
import { withoutTruncationMarker } from "./events/truncation-marker.js";
import { RecentIds } from "./recent-ids.js";
import { DEFAULT_MAX_PAGES, type CycleOptions, type TransactionCycleDeps } from "./deps.js";
import type { BridgeEvent, PublishFailure, QuarantineRecord, Snapshot, SnapshotKey } from "./ports.js";
import { ServedPageSize } from "./page-size.js";
import { aliasSnapshot, namesItself, ParentLookup, type TransactionIds } from "./parents.js";
import { isAcknowledgeableId, optionalString } from "./transaction-ids.js";
import { INVALID_VERSION, itemKey, ListedCopies, withCopies, type FreshEntries } from "./listed-copies.js";
import { NOTHING_ACKNOWLEDGED, TransactionAcknowledger, type AckRetry } from "./transaction-acknowledge.js";
import { endsList, heldBy, listedTotal, listsMore, NOT_PAGING, otherPageAnswered, pageEntries, repeatsPage, type PageEntry, type ProviderPage, type PullStatus, type WalkedPage } from "./provider.js";
import type { CycleOutcome, CycleReport } from "./report.js";

// Where the engine's index and its importers take it from.
export { transactionAliasKey } from "./parents.js";

/**
 * Share of a cycle's budget the `not_synced` pass takes before the `outdated` list gets its turn; a pass stopped there
 * goes on after it with whatever time is left. New transactions that arrive faster than a cycle takes them would
 * otherwise hold the `outdated` list back for ever.
 */
export const NOT_SYNCED_BUDGET_SHARE = 0.75;

/** How a pass over one pull status ended: as a cycle may, or at the time given it (`until`), before the deadline. */
type PassOutcome = CycleOutcome | "until";

/** Options of {@link pollTransactions}. */
export type TransactionCycleOptions = CycleOptions;

/** Snapshot key of a transaction. */
export function transactionKey(id: string): SnapshotKey {
  return `transaction:${id}`;
}

/**
 * The transaction as the bridge diffs, stores and publishes it: without `client_sync_status` (the provider's delivery
 * bookkeeping, not business data; quarantine ids leave it out too, see withoutSyncStatus) nor a member named as the
 * bridge's trim marker (see withoutTruncationMarker), PII per tenant.
 * A shallow copy in the provider's key order (nested objects shared, never mutated), hashed with {@link recordHash}.
 * A volatile field the provider sent stays a member whose value is `undefined`: JSON text (hashes, snapshots, events)
 * leaves it out, and a diff takes it for absent.
 */
export function normaliseTransaction(data: Readonly<Record<string, unknown>>, pii: PiiPolicy): Record<string, unknown> {
  // Object spread copies the whole object in one step, keeping its hidden class (about 1 us for 65 members, against
  // 2.5-4 for an object rest that leaves one member out, and deleting a member would go to dictionary mode, which
  // makes JSON.stringify ~25% slower); own `__proto__` members stay members.
  const out = { ...withoutTruncationMarker(data) };
  if (out["client_sync_status"] !== undefined) out["client_sync_status"] = undefined;
  // Replaces values of existing members only, and copies nested objects it changes.
  applyPiiInPlace(out, pii);
  return out;
}

/** A valid transaction of the current batch. */
interface Item extends TransactionIds {
  readonly raw: unknown;
  readonly object: Record<string, unknown>;
  readonly hash: string;
  readonly changedAtMs?: number;
}

/** A page's transactions on their way through {@link TransactionRun.processBatch}. */
interface Batch {
  /** Valid items, one per id. */
  readonly items: Item[];
  /** Records of the invalid ones, then of events failed for good. */
  readonly quarantine: QuarantineRecord[];
  /** Ids to acknowledge: the invalid ones with a usable id, then the unchanged, published and failed-for-good ones. */
  readonly ackIds: string[];
  /** Invalid items without a usable id: they stay listed. */
  unacknowledgeable: number;
  /** Ids of the invalid items: quarantined, so done with in this cycle as the valid ones once delivered. */
  readonly invalid: string[];
}

/** What a batch leaves to do once delivered (events and snapshots written): ids and counts only, no objects. */
interface Delivery {
  /** Ids to acknowledge (see {@link Batch.ackIds}). */
  readonly ackIds: string[];
  /** Invalid items without a usable id: they stay listed. */
  readonly unacknowledgeable: number;
  /** Ids done with in this cycle once acknowledged: every item but the deferred ones (an invalid one is quarantined). */
  readonly settled: readonly string[];
  /** Items whose event failed for now: they stay listed, unacknowledged. */
  readonly deferred: number;
}

/** How a batch's acknowledge went. */
interface BatchOutcome {
  /** Every item acknowledged: none stays listed (no usable id, an event failed for now, refused or read again). */
  readonly allAcknowledged: boolean;
  /** Ids whose acknowledge failed for now and is left to a fresh read of them (see {@link TransactionRun.ackRetry}). */
  readonly readAgain: readonly string[];
}

/** An event to publish for an item: a first sighting, or a change from its snapshot. */
interface Publication {
  readonly item: Item;
  readonly type: "transaction.created" | "transaction.changed";
  readonly before?: Snapshot;
  readonly changes?: Change[];
}

/** An item whose snapshot is rewritten without an event (same data, another hash). */
interface SilentWrite {
  readonly item: Item;
  readonly before: Snapshot;
}

/**
 * What a list held by its latest read: `total_records`, the cycle's acknowledged count when it was sent, and how many
 * items the provider puts on a page, as the cycle's answers showed it (see {@link ServedPageSize}).
 */
interface ListedCount {
  readonly total: number;
  readonly acknowledgedBefore: number;
  readonly pageSize: number;
}

/** A pull status over all its passes in this cycle (see {@link TransactionRun.statusPasses}). */
interface StatusRecord {
  /** List calls made; the run's `maxPages` bounds them. */
  calls: number;
  readonly handled: RecentIds;
  readonly awaitingReRead: Set<string>;
}

/**
 * Where one pass over a pull status is (see {@link TransactionRun.drain}): one object per pass, never per page or item,
 * so the walk's steps share its position without closures over the loop's locals.
 */
interface StatusWalk {
  readonly status: PullStatus;
  /** Epoch ms at which the pass stops as at the deadline, with outcome `until`. */
  readonly until: number | undefined;
  readonly record: StatusRecord;
  /** What the list held by its latest answer (see {@link TransactionRun.lookAtOldestWaiting}). */
  listed: ListedCount | undefined;
  /** The page the walk is at. */
  page: number;
  /** Items on the pages the walk moved past in this pass (they stayed listed): listed above the page it is at. */
  passed: number;
  /** The page the walk last moved past: a provider answering its rows again for the next one repeats it. */
  movedPast: WalkedPage | undefined;
  /** Whether a batch reads the next page while it is processed: off once items stay listed, as they shift the pages. */
  readAhead: boolean;
}

/** One run of the transaction cycle ({@link pollTransactions}); the re-drive's run extends it (see reprocess.ts). */
export class TransactionRun extends CycleRun {
  private readonly maxPages: number;
  /** The parents of the refunds and reversals this run publishes (see ParentLookup). */
  private readonly parentLookup: ParentLookup;
  /** How an acknowledge that fails for now is left (see AckRetry): set as the run starts walking or reading by id. */
  protected ackRetry: AckRetry | undefined;
  private readonly acknowledger: TransactionAcknowledger;
  /** The copies and versions the passes meet on their pages (see ListedCopies). */
  private readonly listedCopies: ListedCopies;
  /**
   * Per pull status, over all its passes in this cycle: the list calls made ({@link maxPages} bounds them), the ids
   * handled, so a pass that goes on after the `outdated` list does not take again what stayed listed (a refused id),
   * and the ids awaiting a fresh read (see {@link drain}), which a pass stopped at its share leaves to the next.
   */
  private readonly statusPasses = new Map<PullStatus, StatusRecord>();
  /**
   * What the lists' answers in this cycle showed of the size the provider serves a page (both statuses list the same
   * endpoint): the look at the list's end numbers its page in it. Weighed over every answer, so a page short of what a
   * fuller one held (an item left out) does not aim the look past the end (see ServedPageSize).
   */
  private readonly pageSizes = new ServedPageSize();

  constructor(
    override readonly deps: TransactionCycleDeps,
    private readonly options: TransactionCycleOptions,
  ) {
    super(deps, "transactions", options);
    this.maxPages = options.maxPages ?? DEFAULT_MAX_PAGES;
    this.parentLookup = new ParentLookup({
      logger: deps.logger,
      clock: deps.clock,
      readSnapshots: (step, keys) => this.read(step, (call) => deps.snapshots.getMany(keys, call)),
      listTransactions: (step, query) => this.provider(step, (call) => deps.provider.listTransactions(query, call)),
    });
    this.listedCopies = new ListedCopies({
      logger: deps.logger,
      validators: this.validators,
      contentHashOf: (data) => recordHash(normaliseTransaction(data, deps.pii)),
    });
    this.acknowledger = new TransactionAcknowledger({
      logger: deps.logger,
      metrics: deps.metrics,
      report: this.report,
      acknowledgeTransactions: (step, ids, callerRetries, expected) =>
        this.provider(step, (call) => deps.provider.acknowledgeTransactions(ids, callerRetries ? { ...call, callerRetries } : call), expected),
      wait: (ms) => this.wait(ms),
      pageSize: () => this.pageSize,
    });
  }

  /**
   * `not_synced` until its share of the budget ({@link NOT_SYNCED_BUDGET_SHARE}), then `outdated`, then `not_synced`
   * again for the time left when its first pass stopped at its share. Each pass ends the cycle when it stops for the
   * deadline, the publisher or a failure; one stopped at the page bound (per status) does not hold back the other list.
   */
  async run(): Promise<CycleReport> {
    this.ackRetry = { failedBefore: 0, readsPage: true };
    const { deadline } = this.options;
    const now = this.deps.clock.now();
    const share = deadline === undefined ? undefined : now + Math.floor(Math.max(0, deadline - now) * NOT_SYNCED_BUDGET_SHARE);
    const goesOn = (passed: PassOutcome): boolean => passed === "complete" || passed === "page_limit";
    let outcome = await this.pass("not_synced", share);
    if (goesOn(outcome) || outcome === "until") {
      const outdated = await this.pass("outdated");
      if (outcome === "until" && goesOn(outdated)) outcome = await this.pass("not_synced");
      // The pass that stopped the cycle names its outcome; else the page bound, when either list stopped at it.
      if (!goesOn(outdated) || outcome === "complete") outcome = outdated;
    }
    // `until` ends the first pass only, and another pass always follows it: never the cycle's outcome.
    this.report.outcome = outcome === "until" ? "deadline" : outcome;
    return this.finish();
  }

  /** {@link drain}, with a call stopped for want of time ending it as `deadline`. */
  private pass(status: PullStatus, until?: number): Promise<PassOutcome> {
    return this.drain(status, until).catch((err: unknown) => {
      if (this.outOfTime(err)) return "deadline" as const;
      throw err;
    });
  }

  private list(status: PullStatus, page: number): Promise<ProviderPage> {
    return this.listPage(`list ${status} transactions`, (size, call) =>
      this.deps.provider.listTransactions({ client_sync_status: status, page, page_size: size }, call),
    );
  }

  /**
   * Drains one pull status. Acknowledged items leave the filtered list, so the batch after the one in hand always
   * sits on the page after it: the walk reads that page while the current batch is processed (hiding provider
   * latency) and otherwise re-reads the same page. It moves on only when a page holds nothing new (items that stay
   * listed despite an acknowledge), and confirms the end with a plain read after a read-ahead chain, so a read that
   * raced an acknowledge cannot skip a batch. The page bound and the deadline guarantee termination.
   * Handled ids are remembered for a few pages only (see {@link RecentIds}), so memory does not grow with the backlog,
   * except for ids the provider keeps listing after they were handled (met again: kept for the rest of the pass), such
   * as items whose events failed for now. A publisher that takes none of two batches in a row, of 20 events or more
   * together, ends the pass (see {@link CycleRun.publisherUnavailable}), so an outage of the bus does not walk, and
   * remember, the whole backlog. `until` (epoch ms, before the deadline) stops the pass there as the deadline would,
   * with outcome `until`.
   */
  private async drain(status: PullStatus, until?: number): Promise<PassOutcome> {
    const walk = this.walkOf(status, until);
    const { record } = walk;
    const { handled } = record;
    let inHand: ProviderPage | undefined;
    let fromReadAhead = false;
    for (;;) {
      const stop = this.stopOf(walk);
      if (stop !== undefined) {
        // A page in hand (read ahead) goes unprocessed: its items count towards the lag.
        this.leftBehind(inHand, handled);
        if (stop === "until") await this.lookAtOldestWaiting(walk);
        return stop;
      }
      if (!inHand) {
        if (record.calls >= this.maxPages) return "page_limit";
        const firstRead = record.calls === 0;
        inHand = await this.readPage(walk, walk.page, walk.passed);
        if (firstRead) this.noteBacklog(status, inHand);
        fromReadAhead = false;
        if (!this.keepIfAsAsked(walk, inHand)) return "page_limit";
      }
      // `let`: the page's objects are dropped below before the awaits, see there.
      let result: ProviderPage | undefined = inHand;
      inHand = undefined;
      let items: PageEntry[] | undefined = this.countPulled(result);
      // A read-ahead page's count is not weighed: it shows the list before the last acknowledge (a plain read confirms).
      const isLast = endsList(result, items.length, fromReadAhead ? undefined : walk.passed);

      let found: FreshEntries | undefined = this.listedCopies.freshOf(items, handled);
      const { freshKeys } = found;
      if (found.fresh.length === 0) {
        // A read-ahead page shows the list before the last acknowledge: decide on a plain read of the page.
        if (fromReadAhead) continue;
        if (isLast) return this.completed(walk);
        if (!this.moveOn(walk, result, items)) return "page_limit";
        continue;
      }

      const next = this.readAheadOf(walk, isLast);
      let ahead: ProviderPage | undefined;
      // Observed below; a failure of the batch must not leave it unhandled, nor wait for it.
      next?.then((read) => (ahead = read), () => undefined);
      // Copies side by side that stay listed would otherwise be taken in turn on every re-read.
      const copies = found.repeated.size > 0 ? this.listedCopies.versionsOfCopies(found) : undefined;
      const wholePage = found.fresh.length === items.length;
      const versions = new Map<string, string | readonly string[]>();
      const batch = this.processBatch(found.fresh, undefined, versions);
      // The page's objects are the batch's now: held here, they would live through its acknowledge and the read-ahead,
      // waits in which young-generation GCs run and copy whatever is still reachable.
      result = items = found = undefined;
      const outcome = await batch.catch((error: unknown) => {
        // Stopped mid-batch (a write refused past the deadline, a failure): a page already read ahead is left behind.
        this.leftBehind(ahead, handled);
        throw error;
      });
      this.noteHandled(walk, freshKeys, versions, copies, outcome);
      const { allAcknowledged, readAgain } = outcome;
      if (next && readAgain.length > 0) {
        // Read before the failed acknowledge's wait: a change made during it would be acknowledged unseen, which the
        // fresh read is for. Dropped (its items count towards the lag until read again), and the page read plainly.
        this.leftBehind(await next.catch(() => undefined), handled);
        continue;
      }
      if (next) {
        const read = await next;
        if (this.keepReadAheadIfAsked(walk, read)) {
          inHand = read;
          fromReadAhead = true;
        }
        continue;
      }
      // The whole last page was new and acknowledged: nothing can be left behind it in this pass.
      if (isLast && !fromReadAhead && wholePage && allAcknowledged) return this.completed(walk);
    }
  }

  /** Why the pass stops before its next page, if it does: the deadline, its own stop (`until`), or the publisher. */
  private stopOf(walk: StatusWalk): PassOutcome | undefined {
    if (this.pastDeadline()) return "deadline";
    if (this.untilPassed(walk)) return "until";
    return this.publisherUnavailable() ? "publisher_unavailable" : undefined;
  }

  /**
   * Keeps a plain read that answered the page the walk asked for: true. Past page 1 the walk needs that page: one
   * answered in its place is logged and left behind (its items count towards the lag), false, and the pass stops at
   * the page bound (see otherPageAnswered).
   */
  private keepIfAsAsked(walk: StatusWalk, answer: ProviderPage): boolean {
    const answered = otherPageAnswered(answer, walk.page);
    if (answered === undefined) return true;
    this.deps.logger.warn(NOT_PAGING, { list: walk.status, asked: walk.page, answered });
    this.leftBehind(answer, walk.record.handled);
    return false;
  }

  /**
   * Counts a page's entries as pulled (the report and `TransactionsPulled`) and returns them. Listed again, none of
   * them awaits a fresh read any more, in either status: they are taken off each status's `awaitingReRead` (see
   * {@link completed}).
   */
  private countPulled(page: ProviderPage): PageEntry[] {
    const entries = pageEntries(page);
    for (const other of this.statusPasses.values()) {
      if (other.awaitingReRead.size > 0) for (const entry of entries) other.awaitingReRead.delete(itemKey(entry.raw));
    }
    this.report.pulled += entries.length;
    if (entries.length > 0) this.deps.metrics.add("TransactionsPulled", entries.length, "Count");
    return entries;
  }

  /**
   * Moves the walk past a page read plainly that holds nothing new: its items stay listed despite an acknowledge (see
   * {@link drain}). False, and the pass stops at the page bound, when the provider answers again the page it moved
   * past (see repeatsPage).
   */
  private moveOn(walk: StatusWalk, page: ProviderPage, entries: readonly PageEntry[]): boolean {
    // Keys of a page moved past only, off the hot path (pages of new transactions).
    const read: WalkedPage = { page: walk.page, size: this.pageSize, total: listedTotal(page), keys: entries.map((entry) => itemKey(entry.raw)) };
    if (repeatsPage(read, walk.movedPast)) {
      this.deps.logger.warn(NOT_PAGING, { list: walk.status, asked: walk.page, repeats: walk.page - 1 });
      return false;
    }
    walk.movedPast = read;
    walk.passed += entries.length;
    walk.page += 1;
    return true;
  }

  /**
   * Reads the page after the walk's while its batch is processed (acknowledged items leave the list, so the next batch
   * sits there), when the walk reads ahead and may: not at the list's end, the page bound or the pass's time.
   */
  private readAheadOf(walk: StatusWalk, isLast: boolean): Promise<ProviderPage> | undefined {
    if (!walk.readAhead || isLast || walk.record.calls >= this.maxPages || this.pastDeadline() || this.untilPassed(walk)) return undefined;
    return this.readPage(walk, walk.page + 1, undefined);
  }

  /**
   * Keeps a page read ahead that is the one asked for: true. A provider ignoring `page` answers page 1 to a read ahead
   * too: logged, left behind (its items count towards the lag), false, and the walk's read-ahead turned off, so the
   * rest of the pass re-reads plainly (page 1 shows the next batch once the last is acknowledged, which is all such a
   * provider can be walked by).
   */
  private keepReadAheadIfAsked(walk: StatusWalk, read: ProviderPage): boolean {
    if (otherPageAnswered(read, walk.page + 1) === undefined) return true;
    this.deps.logger.warn("provider answered another page than asked to a page read ahead; reading pages plainly", { list: walk.status, asked: walk.page + 1 });
    walk.readAhead = false;
    this.leftBehind(read, walk.record.handled);
    return false;
  }

  /**
   * Records in the walk's record a batch's keys as handled in this pass, with the version of each (every copy's, for a
   * key the page listed more than once). Ids whose acknowledge is left to a fresh read are not handled: they are added
   * to `awaitingReRead`, and the plain re-read takes them again. Turns the walk's read-ahead off when items stay
   * listed. `keys` and `versions` are left as given.
   */
  private noteHandled(
    walk: StatusWalk,
    keys: ReadonlySet<string>,
    versions: ReadonlyMap<string, string | readonly string[]>,
    copies: ReadonlyMap<string, string[]> | undefined,
    { allAcknowledged, readAgain }: BatchOutcome,
  ): void {
    const { handled, awaitingReRead } = walk.record;
    for (const id of readAgain) awaitingReRead.add(id);
    // Copied only off the hot path (an acknowledge failed for now, a key listed twice on the page): a batch of new
    // transactions hands its own set and map on as they are.
    handled.add(readAgain.length > 0 ? without(keys, readAgain) : keys, copies ? withCopies(versions, copies) : versions);
    // Items that stay listed shift the pages: fall back to plain re-reads for the rest of this pass.
    if (!allAcknowledged) walk.readAhead = false;
  }

  /** The walk of a pass over `status`, at page 1, with the status's record of its earlier passes in this cycle. */
  private walkOf(status: PullStatus, until: number | undefined): StatusWalk {
    let record = this.statusPasses.get(status);
    if (!record) this.statusPasses.set(status, (record = { calls: 0, handled: new RecentIds(), awaitingReRead: new Set() }));
    return { status, until, record, listed: undefined, page: 1, passed: 0, movedPast: undefined, readAhead: this.options.readAhead ?? true };
  }

  /** Whether the pass's own stop (`until`, before the deadline) has come. */
  private untilPassed({ until }: StatusWalk): boolean {
    return until !== undefined && this.deps.clock.now() >= until;
  }

  /**
   * Lists page `n` of the walk's status, counting the call against the page bound and keeping what its answer says the
   * list holds (see {@link lookAtOldestWaiting}). `above`: the items the walk counts above page `n`, undefined for a
   * read ahead (its count is not weighed, as in `endsList`).
   */
  private async readPage(walk: StatusWalk, n: number, above: number | undefined): Promise<ProviderPage> {
    walk.record.calls += 1;
    const acknowledgedBefore = this.report.acknowledged;
    const answer = await this.list(walk.status, n);
    const total = listedTotal(answer);
    const held = heldBy(answer);
    const pageSize = this.pageSizes.weigh(answer, held, this.pageSize, listsMore(answer, held, above));
    walk.listed = total === undefined ? undefined : { total, acknowledgedBefore, pageSize };
    return answer;
  }

  /**
   * Ends a pass that walked to the end of its list. `awaitingReRead`: ids whose acknowledge failed for now (left to a
   * fresh read) and not listed since, in either status. One the status's walk completes without meeting again left the
   * list: an acknowledge applied despite its failure (a gateway's 502) took it off, so its state, delivered before that
   * acknowledge, no longer counts towards the lag.
   */
  private completed(walk: StatusWalk): PassOutcome {
    for (const id of walk.record.awaitingReRead) this.settled(id);
    return "complete";
  }

  /**
   * The backlog gauge: what `status` listed when this cycle first read it (`total_records` of that page), once per
   * status and cycle, so a pass that goes on after the `outdated` list sends no second point. SyncLagSeconds shows the
   * age of what waits (the oldest through {@link lookAtOldestWaiting}); this shows whether it shrinks. Nothing when the
   * provider does not give the count (docs/spec-gaps.md).
   */
  private noteBacklog(status: PullStatus, first: ProviderPage): void {
    const total = listedTotal(first);
    if (total === undefined) return;
    (this.report.backlog ??= {})[status] = total;
    this.deps.metrics.add("TransactionsBacklog", total, "Count", { status });
  }

  /**
   * At the pause of a `not_synced` pass at its share, reads the last page of the list once, when the list goes on past
   * the page the walk is at: its items, the oldest waiting, count towards the lag as pending (like a page left behind),
   * unhandled, unpublished, unacknowledged. Otherwise SyncLagSeconds sees only the newest items, those a cycle reaches,
   * and stays quiet while the oldest wait for hours under sustained load. The page number comes from `listed`, less the
   * acknowledges since (they left the list), in the size the provider serves a page. Nothing without a count, nor past
   * the deadline; a failure of the read only costs the look, except a token failure (a revoked family): every call would
   * meet it, so it stops the cycle as any call's would, not a later call, which the deadline may keep from coming
   * (docs/spec-gaps.md, SyncLagSeconds).
   * An item equal to its snapshot is delivered, not waiting (see {@link oldestUndelivered}).
   */
  private async lookAtOldestWaiting({ status, record, listed, page: reached }: StatusWalk): Promise<void> {
    if (listed === undefined || this.pastDeadline()) return;
    const waiting = listed.total - (this.report.acknowledged - listed.acknowledgedBefore);
    // Numbered in the size the provider serves: in the size asked, a provider serving fewer would show the middle of
    // the list, one serving more a page past its end.
    const last = Math.ceil(waiting / listed.pageSize);
    if (last <= reached) return;
    try {
      for (const raw of await this.oldestUndelivered(await this.list(status, last), record.handled)) this.pendingRaw(raw);
    } catch (err) {
      if (isTokenFailure(err)) throw err;
      const { name, status: httpStatus } = failedCallOf(err);
      this.deps.logger.warn("could not read the oldest transactions waiting; the lag leaves them out this cycle", {
        list: status,
        page: last,
        error: name,
        status: httpStatus,
      });
    }
  }

  /**
   * The items of the look's page not handled in this pass whose listed version is not the one their snapshot holds. One
   * the walk delivered in an earlier cycle and the provider keeps listing (its acknowledge refused by name) sits at the
   * end of the list for good: counted, its age (days) was the cycle's lag under load, although the walk, meeting it,
   * finds it unchanged and settles it. A failed snapshot read counts them all, as before the read.
   */
  private async oldestUndelivered(page: ProviderPage, handled: RecentIds): Promise<unknown[]> {
    const waiting = this.listedCopies.unhandled(page, handled).map((entry) => ({ entry, key: transactionKey(itemKey(entry.raw)) }));
    /** Listed version by snapshot key, of the valid ones (an invalid one has no snapshot to be delivered as). */
    const versions = new Map<SnapshotKey, string>();
    for (const { entry, key } of waiting) {
      const version = this.listedCopies.versionOf(entry);
      if (version !== INVALID_VERSION) versions.set(key, version);
    }
    const stored = versions.size
      ? await this.read("read snapshots of the oldest waiting", (call) => this.deps.snapshots.getMany([...versions.keys()], call)).catch(() => undefined)
      : undefined;
    return waiting.flatMap(({ entry, key }) => {
      const version = versions.get(key);
      return version !== undefined && stored?.get(key)?.hash === version ? [] : [entry.raw];
    });
  }

  /** A page read and left unprocessed holds changes still undelivered: they count towards the lag. */
  private leftBehind(page: ProviderPage | undefined, handled: RecentIds): void {
    if (page) for (const entry of this.listedCopies.unhandled(page, handled)) this.pendingRaw(entry.raw);
  }

  /**
   * One batch: validate, diff, publish, write snapshots, quarantine, acknowledge; returns how its acknowledge went
   * (see {@link BatchOutcome}: some items may stay listed, or be left to a fresh read). `delivered`, when given,
   * receives the ids whose current state is delivered (published now and stored, or equal to its snapshot);
   * `versions` the content hash of each valid item, by id, and {@link INVALID_VERSION} for an id whose copy was invalid.
   */
  protected async processBatch(entries: readonly PageEntry[], delivered?: Set<string>, versions?: Map<string, string | readonly string[]>): Promise<BatchOutcome> {
    const delivery = await this.deliver(entries, delivered, versions);
    // Returned, not awaited: the acknowledge needs ids only, and the page's objects must not be held through its wait,
    // when young-generation GCs run (they would copy them).
    return this.acknowledgeBatch(delivery);
  }

  /**
   * Validate, diff, publish, write snapshots, quarantine: a batch up to its acknowledge.
   *
   * Only the effects are sequenced here; each step's per-item loop is a synchronous method, so V8 optimises the loops
   * alone rather than this async method whole (20-30 ms of TurboFan on Node 20, paid by every cold process).
   */
  private async deliver(entries: readonly PageEntry[], delivered?: Set<string>, versions?: Map<string, string | readonly string[]>): Promise<Delivery> {
    const { deps } = this;
    const batch = this.validated(entries, versions);
    const { items } = batch;
    const snapshots = items.length
      ? await this.read("read snapshots", (call) => deps.snapshots.getMany(items.map((i) => transactionKey(i.id)), call))
      : new Map<SnapshotKey, Snapshot>();
    const { toPublish, silentWrites } = this.compared(batch, snapshots, delivered);
    const { parents, aliases } = await this.parentLookup.resolve(toPublish.map((p) => p.item), items);
    // Newest created first in the list; published oldest created first (not `occurred_at` order: see docs/events.md).
    toPublish.reverse();
    const events = this.eventsFor(toPublish, parents);
    const failures = await this.publish(
      events,
      toPublish.map((p) => p.item.changedAtMs),
    );
    const { writes, published, deferred } = this.afterPublish(batch, toPublish, silentWrites, events, failures);
    writes.push(...aliases);
    await this.storeSnapshots(writes, published.length);
    // Delivered once stored, not once published: a write refused past the deadline leaves the next run to store it.
    for (const id of published) delivered?.add(id);
    releaseTexts(items);
    await this.quarantine(batch.quarantine);
    return { ackIds: batch.ackIds, unacknowledgeable: batch.unacknowledgeable, settled: this.settledIds(batch, deferred), deferred: deferred.size };
  }

  /** Acknowledges a delivered batch, then settles its items but those to read again (see processBatch). */
  private async acknowledgeBatch(delivery: Delivery): Promise<BatchOutcome> {
    const { ackIds, settled } = delivery;
    const { acknowledged, readAgain } = ackIds.length ? await this.acknowledger.acknowledge(ackIds, this.ackRetry) : NOTHING_ACKNOWLEDGED;
    const unacknowledgeable = delivery.unacknowledgeable + ackIds.length - acknowledged;
    // Delivered either way; those a walk reads again count towards the lag until then.
    const again = new Set(this.ackRetry?.readsPage === true ? readAgain : []);
    for (const id of settled) if (!again.has(id)) this.settled(id);
    return { allAcknowledged: unacknowledgeable === 0 && delivery.deferred === 0, readAgain };
  }

  /** Validates a batch (one copy per key): valid items to diff, quarantine records and acknowledgeable ids of the rest. */
  private validated(entries: readonly PageEntry[], versions?: Map<string, string | readonly string[]>): Batch {
    const batch: Batch = { items: [], quarantine: [], ackIds: [], unacknowledgeable: 0, invalid: [] };
    const seen = new Set<string>();
    const copies = this.listedCopies.oneCopyPerKey(entries);
    for (const { raw, result } of copies) {
      if (!result.success) {
        const rawId = optionalString((raw as Record<string, unknown> | null)?.["id"]);
        if (rawId !== undefined) {
          versions?.set(rawId, INVALID_VERSION);
          batch.invalid.push(rawId);
        }
        batch.quarantine.push(this.quarantineRecord("transaction", "validation", result.reason, raw, rawId));
        if (isAcknowledgeableId(rawId)) batch.ackIds.push(rawId);
        else batch.unacknowledgeable += 1;
        continue;
      }
      const object = normaliseTransaction(result.data, this.deps.pii);
      const id = object["id"] as string;
      if (seen.has(id)) continue;
      seen.add(id);
      const item: Item = {
        raw,
        id,
        qashioId: optionalString(object["qashio_id"]),
        parentQashioId: optionalString(object["parent_qashio_id"]),
        parentId: optionalString(object["parent_id"]),
        object,
        hash: recordHash(object),
        changedAtMs: lastModified(object),
      };
      batch.items.push(item);
      versions?.set(id, item.hash);
      this.pending(id, item.changedAtMs);
    }
    this.report.handled += copies.length;
    return batch;
  }

  /**
   * Diffs each item against its snapshot: what to publish (created, changed), what only needs its snapshot rewritten,
   * and, for an item equal to its snapshot (a re-pull after a crash), only its acknowledge.
   */
  private compared(batch: Batch, snapshots: ReadonlyMap<SnapshotKey, Snapshot>, delivered?: Set<string>): { toPublish: Publication[]; silentWrites: SilentWrite[] } {
    const toPublish: Publication[] = [];
    const silentWrites: SilentWrite[] = [];
    for (const item of batch.items) {
      const before = snapshots.get(transactionKey(item.id));
      const changes = this.changesSince(before, item.hash, item.object);
      if (changes === "new") {
        toPublish.push({ item, type: "transaction.created" });
        continue;
      }
      if (changes === "same" || changes.length === 0) {
        // Nothing to publish; a snapshot in another form (no changes) is refreshed.
        if (changes !== "same") silentWrites.push({ item, before: before as Snapshot });
        delivered?.add(item.id);
        batch.ackIds.push(item.id);
        continue;
      }
      toPublish.push({ item, type: "transaction.changed", before, changes });
    }
    return { toPublish, silentWrites };
  }

  /** The events of `toPublish`, in its order, each with its parent when one was resolved. */
  private eventsFor(toPublish: readonly Publication[], parents: ReadonlyMap<string, string>): BridgeEvent[] {
    const events: BridgeEvent[] = [];
    for (const { item, type, before, changes } of toPublish) {
      // Its own parent_id first: `parents` holds one id per reference, which another refund of the page naming the same
      // reference with another parent_id (the provider contradicting itself) may have set.
      const found = item.parentQashioId && !namesItself(item) ? (item.parentId ?? parents.get(item.parentQashioId)) : undefined;
      // Never the transaction itself, even when another refund of the page resolved that reference to it.
      const parent = found === item.id ? undefined : found;
      events.push(
        this.buildEvent({
          type,
          kind: "transaction",
          subjectId: item.id,
          qashioId: item.qashioId,
          object: item.object,
          before,
          afterHash: item.hash,
          occurredAt: item.changedAtMs ?? this.deps.clock.now(),
          changes,
          parent: parent ? { id: parent, qashio_id: item.parentQashioId as string } : undefined,
        }),
      );
    }
    return events;
  }

  /**
   * Sorts the published items by outcome: snapshots to write (published, or rewritten without an event), a quarantine
   * record and an acknowledge for an event failed for good, nothing for one failed for now (`deferred`: no snapshot,
   * no quarantine, no acknowledge, so it stays listed and the next cycle re-sends the same event id).
   */
  private afterPublish(
    batch: Batch,
    toPublish: readonly Publication[],
    silentWrites: readonly SilentWrite[],
    events: readonly BridgeEvent[],
    failures: ReadonlyMap<string, PublishFailure>,
  ): { writes: Snapshot[]; published: string[]; deferred: Set<string> } {
    const nowMs = this.stampAfter(events);
    const now = new Date(nowMs).toISOString();
    const writes: Snapshot[] = [];
    const published: string[] = [];
    /**
     * `sequence`: the published event's, or the snapshot's own for a rewrite without an event. The alias goes with a
     * transaction's first snapshot only: a qashio_id names one transaction for good (spec §2.2, identity), so rewriting
     * it with every change only doubled the writes (and DynamoDB's write calls) of a page of changes.
     */
    const snapshotOf = (item: Item, before: Snapshot | undefined, sequence: number): void => {
      writes.push({ key: transactionKey(item.id), hash: item.hash, object: item.object, updatedAt: versionTime(nowMs, before, now), sequence });
      if (item.qashioId && before === undefined) writes.push(aliasSnapshot(item.id, item.qashioId, now));
    };
    const deferred = new Set<string>();
    for (let i = 0; i < toPublish.length; i++) {
      const { item, before } = toPublish[i] as Publication;
      const failure = failures.get((events[i] as BridgeEvent).detail.id);
      if (failure?.retryable === true) {
        deferred.add(item.id);
        continue;
      }
      if (failure) batch.quarantine.push(this.quarantineRecord("transaction", "publish", failure.reason, withoutSyncStatus(item.raw), item.id));
      else {
        snapshotOf(item, before, nextSequence(before));
        published.push(item.id);
      }
      batch.ackIds.push(item.id);
    }
    for (const { item, before } of silentWrites) snapshotOf(item, before, storedSequence(before));
    return { writes, published, deferred };
  }

  /**
   * Every item of the batch is done with in this cycle, except the deferred ones: their change counts towards the lag.
   * So are the invalid ones, quarantined: never pending when the walk meets them first, they may be when a page read and
   * left earlier in the cycle (the look at the end of the list, a read-ahead dropped at the pause) counted them, and a
   * cycle that then delivered everything would report their age as its lag.
   */
  private settledIds(batch: Batch, deferred: ReadonlySet<string>): string[] {
    const ids = [...batch.invalid];
    for (const item of batch.items) if (!deferred.has(item.id)) ids.push(item.id);
    return ids;
  }
}

/** `keys` less `ids`, in a new set. */
function without(keys: ReadonlySet<string>, ids: readonly string[]): Set<string> {
  const rest = new Set(keys);
  for (const id of ids) rest.delete(id);
  return rest;
}

/**
 * Releases the object texts kept for the items' snapshots and events (see releaseJson): both adapters that write them
 * are done, and the acknowledge that follows is a wait in which young-generation GCs would copy them.
 */
function releaseTexts(items: readonly Item[]): void {
  for (const item of items) releaseJson(item.object);
}

/**
 * Runs one transaction cycle: pulls `not_synced` then `outdated` transactions, publishes
 * `transaction.created` / `transaction.changed`, writes snapshots, then acknowledges, page by page.
 * A crash between any two effects loses nothing: the next cycle re-sends the same event ids or only acknowledges.
 *
 * @throws {ReauthorizationNeededError} the provider token family is revoked (never retried).
 * @throws {CycleAbortedError} a dependency failed; `error.report` holds what was done.
 * @example
 * ```ts
 * const report = await pollTransactions(deps, { deadline: clock.now() + 50_000 });
 * if (report.outcome !== "complete") logger.info("resuming next cycle", { ...report });
 * ```
 */
export async function pollTransactions(deps: TransactionCycleDeps, options: TransactionCycleOptions = {}): Promise<CycleReport> {
  const run = new TransactionRun(deps, options);
  return run.execute(() => run.run());
}
