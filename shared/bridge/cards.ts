/**
 * The card cycle: walk the ERP card list (or only its suspended slice), diff each card against its snapshot,
 * publish card events, then write snapshots. Cards have no acknowledge: the snapshots, and a cursor that lets a walk
 * cut short resume where it stopped, are all the state.
 */
import { contentHash } from "./hash.js";
import type { Change } from "./diff.js";
import { CycleRun } from "./cycle.js";
import { concernsEveryCall, failedCallOf, isPageSizeRejection, isTokenFailure, statusOf } from "./provider-errors.js";
import { changeTime, lastModified, nextSequence, storedSequence, versionTime } from "./versions.js";
import { DEFAULT_MAX_PAGES, type CardCycleDeps, type CycleOptions } from "./deps.js";
import type { EventType } from "./events/schemas.js";
import { withoutTruncationMarker } from "./events/truncation-marker.js";
import type { BridgeEvent, QuarantineRecord, Snapshot, SnapshotKey } from "./ports.js";
import type { CycleReport } from "./report.js";
import { ServedPageSize } from "./page-size.js";
import { endsList, heldBy, listedTotal, listsMore, NOT_PAGING, otherPageAnswered, pageEntries, repeatsPage, servedPageSize, type PageEntry, type ProviderCallOptions, type ProviderPage, type WalkedPage } from "./provider.js";
import { RecentIds } from "./recent-ids.js";
import { cardIdOf, cardKey } from "./card-keys.js";
import { cardEventType, isStatusMove } from "./card-status.js";
import { CardDetailReads, isViewChange, withLastConfiguration, type CardEntry } from "./card-details.js";
import { WalkCursorStore, type CardCycleMode, type StoredCursor, type WalkCursor } from "./card-cursor.js";
import { WalkPosition } from "./card-walk-position.js";

// Re-exported for the modules that import them from the card cycle.
export { CARD_KEY_PREFIX, cardKey } from "./card-keys.js";
export { walkCursorKey, type CardCycleMode } from "./card-cursor.js";
export { cardEventType } from "./card-status.js";


/** Options of {@link pollCards}. */
export interface CardCycleOptions extends CycleOptions {
  /** @default "full" */
  readonly mode?: CardCycleMode;
  /** Where in each page the detail reads start, as a fraction in [0, 1) (tests pass a seeded one). @default Math.random */
  readonly random?: () => number;
}

/**
 * When a card change happened, from the card's own timestamps, so an event re-sent after a crash keeps its time:
 * for `card.created` the card's `created_at`, else `issued_at` (both before a later `updated_at`, which is not when
 * it was created but, as a time of the card's own, still keeps a re-sent event's time where the detection time would not);
 * for a change `updated_at` / `modified_date` if the provider sends one, otherwise the latest `*_at` member that
 * changed (e.g. `terminated_at`, `activated_at`). Undefined when the card carries none (e.g. a suspension): the
 * caller then uses the detection time.
 */
export function cardChangedAt(object: Readonly<Record<string, unknown>>, changes?: readonly Change[]): number | undefined {
  const stamped = lastModified(object);
  if (!changes) return changeTime(object["created_at"]) ?? changeTime(object["issued_at"]) ?? stamped;
  if (stamped !== undefined) return stamped;
  let latest: number | undefined;
  for (const change of changes) {
    if (!/^\/[^/]+_at$/.test(change.path)) continue;
    const at = changeTime(change.after);
    if (at !== undefined && (latest === undefined || at > latest)) latest = at;
  }
  return latest;
}

/**
 * What the card walk's check of a smaller page size a page stated found (see `CardRun.renumberedIn`): the provider
 * answered the same cards in that `size` (it numbers its pages in it), other cards, or the check could not tell (it
 * failed for that call alone, or rows without an id).
 */
interface Renumbering {
  readonly size: number;
  readonly found: "same" | "other" | "unknown";
}

/**
 * What listing the walk's next page gave (see `CardRun.listNext`): the page, with its check of a smaller size; a stop
 * (the outcome); or `pastEnd`, the page asked, when a resumed walk's cursor points past the list.
 */
type ListedPage =
  | { readonly result: ProviderPage; readonly page: number; readonly renumbering: Renumbering | undefined }
  | { readonly stop: "deadline" | "page_limit" }
  | { readonly pastEnd: number };

class CardRun extends CycleRun {
  /**
   * Cards taken in the last few pages, with the version (content hash) each was taken in: a card met again was shifted
   * onto the next page by cards issued meanwhile, and a walk of every card the company has need not hold all their
   * ids. One met again further on, or met again in another version than it was last taken in (its status moved
   * between the two list reads, or moved back), is diffed again: skipping it would drop a move this walk saw, lost
   * for good if undone before the next read. One met again
   * is not kept for the rest of the walk: the walk's offset moves on whatever it meets, and each card issued under the
   * walk would otherwise add one.
   */
  private readonly seen = new RecentIds();
  /** Set once a page of this cycle is walked: a deadline among a later page's detail reads leaves that page whole (see `CardDetailReads.read`). */
  private walkedPage = false;
  /** Cards a page the provider serves, once it served fewer than asked (this cycle, or the walk this one resumes). */
  private servedSize: number | undefined;
  /** What the walk's answers showed of the size served: it learns a smaller one once (see ServedPageSize). */
  private pageSizes = new ServedPageSize({ lowersOnce: true });
  private readonly mode: CardCycleMode;
  private readonly cursors: WalkCursorStore;
  private readonly details: CardDetailReads;

  constructor(
    override readonly deps: CardCycleDeps,
    private readonly options: CardCycleOptions,
  ) {
    super(deps, "cards", options);
    this.mode = options.mode ?? "full";
    const readSnapshots = (step: string, keys: readonly SnapshotKey[]): Promise<Map<SnapshotKey, Snapshot>> => this.read(step, (call) => deps.snapshots.getMany(keys, call));
    const writeSnapshots = (step: string, snapshots: readonly Snapshot[]): Promise<void> => this.write(step, (call) => deps.snapshots.putMany(snapshots, call));
    this.cursors = new WalkCursorStore({ clock: deps.clock, readSnapshots, writeSnapshots }, this.mode);
    this.details = new CardDetailReads({
      logger: deps.logger,
      random: options.random ?? Math.random,
      validateCard: (raw) => this.validators.card(raw),
      pastDeadline: () => this.pastDeadline(),
      stopRequested: () => options.signal?.aborted === true,
      outOfTime: (err) => this.outOfTime(err),
      readCard: (step, id, expected) => this.provider(step, (call) => deps.provider.readErpCard(id, call), expected),
      readSnapshots,
    });
  }

  async run(): Promise<CycleReport> {
    // Counted as it starts, whatever its outcome: Heartbeat-PollCards of a fast-path tenant reads FullCardWalks to see
    // that the full walk's schedule still runs (a failing walk is the Errors alarm's), which the fast ticks' invocations
    // hide; Heartbeat-SuspendedCards reads FastPathCardWalks, which the full walks' invocations would hide.
    this.deps.metrics.add(this.mode === "full" ? "FullCardWalks" : "FastPathCardWalks", 1, "Count");
    const cursor = await this.cursorInTime();
    if (cursor === undefined) {
      this.report.outcome = "deadline";
      return this.finish();
    }
    const walk = this.resume(cursor);
    await this.walkPages(walk);
    await this.saveCursor(cursor, walk);
    return this.finish();
  }

  /** The cursor the walk resumes from; undefined when its read stopped retrying at the deadline. */
  private async cursorInTime(): Promise<StoredCursor | undefined> {
    try {
      return await this.cursors.read();
    } catch (err) {
      // The read stopped retrying at the deadline (a throttled table): nothing walked, nothing to write.
      if (!this.outOfTime(err)) throw err;
      return undefined;
    }
  }

  /** Where the walk starts: a walk cut short by an earlier cycle goes on where it stopped, in the size it was served. */
  private resume(cursor: WalkCursor): WalkPosition {
    // A provider that served the walk fewer cards a page than asked numbers its pages in that size whatever is asked:
    // asked the configured size again, it would serve a page found by that size's numbering, before the first card not
    // reached, and the walk would count its offset back from there (each resumed walk losing ground, or a walk of one
    // page a cycle never moving).
    if (cursor.offset > 0 && cursor.servedSize !== undefined && cursor.servedSize < this.pageSize) {
      this.pageSize = this.servedSize = cursor.servedSize;
      this.pageSizes = new ServedPageSize({ lowersOnce: true, known: cursor.servedSize });
    }
    return new WalkPosition(cursor, this.mode);
  }

  /** Walks pages from `walk` until the list ends or the walk stops (the report's outcome says why). */
  private async walkPages(walk: WalkPosition): Promise<void> {
    const maxPages = this.options.maxPages ?? DEFAULT_MAX_PAGES;
    for (let read = 0; ; read++) {
      if (this.pastDeadline()) {
        this.report.outcome = "deadline";
        return;
      }
      if (read >= maxPages) {
        this.report.outcome = "page_limit";
        return;
      }
      const listed = await this.listNext(walk, read === 0);
      if ("stop" in listed) {
        this.report.outcome = listed.stop;
        return;
      }
      if ("pastEnd" in listed) {
        this.startAfresh(walk, listed.pastEnd);
        read = -1;
        continue;
      }
      const { result, page, renumbering } = listed;
      // The check is a list call the walk's bound counts (see renumberedIn).
      if (renumbering !== undefined) read += 1;
      const entries = pageEntries(result);
      const followed = this.followServedSize(walk, result, page, renumbering, entries.length);
      this.report.pulled += entries.length;
      if (entries.length > 0) this.deps.metrics.add("CardsPulled", entries.length, "Count");
      const from = walk.takePageStart(followed, entries.length);
      try {
        await this.processPage(entries);
        this.walkedPage = true;
      } catch (err) {
        if (!this.outOfTime(err)) throw err;
        // A card detail read (one in flight, or any on a page after the cycle's first) or the snapshots' read could not
        // finish in time; nothing of the page was published or stored (its quarantine records aside, put again
        // idempotently), so it is walked next cycle (from where the walk stood before it, and the total taken there).
        walk.backTo(from);
        this.report.outcome = "deadline";
        return;
      }
      if (this.publisherUnavailable()) {
        this.report.outcome = "publisher_unavailable";
        return;
      }
      if (walk.advance(result, page, this.pageSize, from, entries.length)) return;
    }
  }

  /** Lists cards at the walk's mode's filter: every card, or the suspended ones. */
  private listAt(query: { page: number; page_size: number }, call: ProviderCallOptions): Promise<ProviderPage> {
    return this.deps.provider.listErpCards(this.mode === "suspended-only" ? { status: "suspended", ...query } : query, call);
  }

  /**
   * Lists the page at the walk's offset and checks a smaller size it states (see renumberedIn): the page to walk, why
   * the walk stops there, or `pastEnd` (the page asked) when a resumed walk's cursor points past the list. `first`: the
   * cycle's first list call of this walk.
   */
  private async listNext(walk: WalkPosition, first: boolean): Promise<ListedPage> {
    const { mode } = this;
    let page = 1;
    let size = this.pageSize;
    // The spec leaves a page past the end open: should the provider refuse the page a saved cursor points to
    // (cards removed since) with a 400 or a 404 (both listed for this endpoint), start afresh rather than fail every
    // cycle on it. A page size it refuses is not that. Page 1 refused the same way fails the walk as before.
    const resumedPastEnd = (err: unknown): boolean => {
      const status = first && page > 1 && !isTokenFailure(err) ? statusOf(err) : undefined;
      return status === 404 || (status === 400 && !isPageSizeRejection(err));
    };
    let result;
    try {
      result = await this.listPage(
        `list ${mode} cards`,
        (asked, call) => {
          size = asked;
          page = Math.floor(walk.offset / size) + 1;
          return this.listAt({ page, page_size: size }, call);
        },
        resumedPastEnd,
      );
      // Before its cards are walked or read in detail: they are another page's (see otherPageAnswered). The walk
      // stops where it stands, its cursor at this page, and the next walk asks it again; but a resumed walk's first
      // page so answered may be one past a list that shrank, answered with an earlier page (as with a 400 or a 404);
      // answered with a later one, it is not that.
      const answered = otherPageAnswered(result, page);
      const thisPage: WalkedPage = { page, size, total: listedTotal(result), keys: pageEntries(result).map(({ raw }) => cardIdOf(raw)) };
      if (answered !== undefined) {
        this.deps.logger.warn(NOT_PAGING, { list: `${mode} cards`, asked: page, answered });
        return first && page > 1 && answered < page ? { pastEnd: page } : { stop: "page_limit" };
      }
      if (!endsList(result, thisPage.keys.length, undefined) && repeatsPage(thisPage, walk.walked)) {
        // The cards of the page walked last, the page asked named (see repeatsPage): stopped as above.
        this.deps.logger.warn(NOT_PAGING, { list: `${mode} cards`, asked: page, repeats: page - 1 });
        return { stop: "page_limit" };
      }
      walk.walked = thisPage;
      const renumbering = await this.renumberedIn(result, page, (size, call) => this.listAt({ page, page_size: size }, call));
      return { result, page, renumbering };
    } catch (err) {
      if (this.outOfTime(err)) return { stop: "deadline" };
      // A check of the page that failed is not the page refused: it was read (see renumberedIn).
      if (result !== undefined || !resumedPastEnd(err)) throw err;
      return { pastEnd: page };
    }
  }

  /** Restarts a walk whose cursor pointed past the card list (`page`, the page asked) at its first card. */
  private startAfresh(walk: WalkPosition, page: number): void {
    this.deps.logger.warn("card walk cursor points past the card list; starting afresh", { mode: this.mode, page });
    walk.restart();
  }

  /**
   * Takes the size the provider serves from a page (`result`, asked as `page`, holding `count` cards) and its check
   * (`renumbering`): the size the check followed, if it did. Changes the run's `pageSize`, `servedSize` and
   * `pageSizes` to a smaller size followed or served (logged), and records where the walk stood when a check did not
   * follow (see `WalkPosition.unsure`).
   */
  private followServedSize(walk: WalkPosition, result: ProviderPage, page: number, renumbering: Renumbering | undefined, count: number): number | undefined {
    const followed = renumbering?.found === "same" ? renumbering.size : undefined;
    // Other cards do not prove the size not served either: a card issued or removed between the page and its check
    // shifts the answer, though the provider numbers its pages in that size.
    if (renumbering !== undefined && followed === undefined) walk.doubt(renumbering.size, result);
    if (followed !== undefined) {
      this.deps.logger.warn("provider serves fewer cards a page again; asking for that size", { from: this.pageSize, to: followed });
      this.pageSize = this.servedSize = followed;
      this.pageSizes = new ServedPageSize({ lowersOnce: true, known: followed });
    }
    // A provider serving fewer cards a page than asked (its maximum is not shown, §8.3) numbers its pages in that size:
    // the walk asks for it from here on and counts its offset in it. Counted in the size asked, the offset would run
    // ahead of the cards walked, and a resumed walk's move for cards removed could land past the first not reached;
    // and a provider counting has_next in the size asked would end the walk with cards still listed. The walk learns a
    // smaller size from a short page once, whole pages before it or not (a maximum lowered under the walk); a later one
    // short of it left a card out and does not shrink it again (see ServedPageSize), unless it says a smaller size
    // that the page asked again in that size answers alike (see renumberedIn).
    const served = this.pageSizes.weigh(result, count, this.pageSize, listsMore(result, count, (page - 1) * this.pageSize));
    if (served < this.pageSize) {
      this.deps.logger.warn("provider served fewer cards a page than asked; asking for that size", { from: this.pageSize, to: served });
      this.pageSize = this.servedSize = served;
    }
    return followed;
  }

  /**
   * Stores where the walk stopped. Stopped early: the next cycle starts at the first card not walked. Complete: the
   * next walk starts afresh. Stopped for an unavailable publisher: the cursor stays, so the next cycle walks again from
   * where this one started and the refused changes are not left to the walk after.
   * A walk that stopped before its first page was walked (the deadline or a stop request at the start, a list or
   * detail read out of time) keeps the total the cursor was taken with, or the next resume could not shift it and
   * would skip the cards removals pulled above it.
   */
  private async saveCursor(stored: StoredCursor, walk: WalkPosition): Promise<void> {
    if (this.report.outcome === "publisher_unavailable") return;
    const next = this.report.outcome === "complete" ? { offset: 0 } : { offset: walk.offset, total: walk.total, servedSize: this.servedSize, unsure: walk.unsure };
    await this.cursors.write(stored, next).catch((err: unknown) => {
      // Too late to write (see `write`): the cursor stays where it was, so the next walk covers this one's cards again.
      if (!this.outOfTime(err)) throw err;
      this.report.outcome = "deadline";
    });
  }

  /**
   * The smaller size the provider now numbers its pages in, when `answer` (a page at the walk's size, a smaller size
   * already learned; `list` asks that page again at a size) says one in `page_size` with no `total_pages` to count the
   * list in it: a maximum lowered again, or only the count of a page a card was left out of. Not followed, a lowered maximum's pages still come one
   * by one, but the offset counted in the old size runs ahead of the cards walked, and a resumed walk's move for cards
   * removed above lands past the first card not reached; followed every time, a page a card was left out of shrinks
   * the size on each return to it (see ServedPageSize). So the page is asked again in that size (one list call): the
   * provider numbers its pages in it only if it answers the same cards (a page other than the first, numbered in
   * the larger size, starts further down). Undefined when no check is needed. The check is a list call the walk's
   * page bound counts, made even when the page it checks took the bound's last call (one over it then): left out, a
   * walk of one page a cycle would never follow the size.
   */
  private async renumberedIn(answer: ProviderPage, page: number, list: (size: number, call: ProviderCallOptions) => Promise<ProviderPage>): Promise<Renumbering | undefined> {
    const stated = servedPageSize(answer, this.pageSize);
    if (stated === undefined || this.servedSize === undefined || answer.pagination?.total_pages !== undefined) return undefined;
    // Only a page the list goes on past: the last one's page_size counting its cards (every walk) needs no check, nor
    // an empty page, the walk ending on it or on the empty page after, in whatever size the pages are numbered.
    const held = heldBy(answer);
    if (held === 0 || !listsMore(answer, held, (page - 1) * this.pageSize)) return undefined;
    let again;
    try {
      again = await this.provider(`list ${this.mode} cards`, (call) => list(stated, call));
    } catch (err) {
      // Only a check, of a page read: failing for this call alone (a 400, a 404, a 5xx after the client's retries, no
      // answer) it is inconclusive, and the walk goes on in the size it asks, as for a page it cannot tell.
      if (this.outOfTime(err) || concernsEveryCall(err)) throw err;
      const { name, status } = failedCallOf(err);
      this.deps.logger.warn("check of the smaller page size the provider said failed; asking the same size", { page, size: stated, error: name, status });
      return { size: stated, found: "unknown" };
    }
    const ids = (p: ProviderPage): (string | undefined)[] => pageEntries(p).map(({ raw }) => cardIdOf(raw));
    const [listed, relisted] = [ids(answer), ids(again)];
    if (listed.length !== relisted.length || listed.some((id, i) => id !== undefined && relisted[i] !== undefined && id !== relisted[i])) {
      return { size: stated, found: "other" };
    }
    // Only a row naming a card shows where the page starts: rows without an id (invalid cards, quarantined) are alike
    // on any page, so one among them leaves the check inconclusive.
    return { size: stated, found: listed.includes(undefined) || relisted.includes(undefined) ? "unknown" : "same" };
  }

  /**
   * Records card `id` as taken from this page in version `hash` (in `onPage`, the page's cards so far), unless it is a
   * copy: taken on this page already, or last taken in this version on the walk's recent pages. A card inserted at the
   * top shifts the next page by one, so the same card can be listed twice; a copy in any other version is a change this
   * walk saw, one back to a version taken before included (suspended, then reactivated: its snapshot holds the
   * suspension).
   */
  private take(onPage: Map<string, string>, id: string, hash: string): boolean {
    if (onPage.has(id) || this.seen.lastVersionOf(id) === hash) return false;
    onPage.set(id, hash);
    return true;
  }

  private async processPage(listed: readonly PageEntry[]): Promise<void> {
    const { deps } = this;
    /** The cards taken from this page, by id, with the version each was taken in. */
    const onPage = new Map<string, string>();
    const known = deps.cardDetails === true && this.mode === "suspended-only" ? await this.details.withoutRecordedStatus(listed, (id, hash) => this.take(onPage, id, hash)) : undefined;
    if (known !== undefined) {
      // Found unchanged as far as this walk looks.
      this.report.handled += known.skipped;
      this.report.unchanged += known.skipped;
    }
    const entries: readonly CardEntry[] = deps.cardDetails === true ? await this.details.read(known?.entries ?? listed, !this.walkedPage) : listed;
    const quarantine: QuarantineRecord[] = [];
    /** Records of detail reads the bridge could not take: their cards are walked as listed, so not counted as handled again. */
    let rejectedDetails = 0;
    const valid: { id: string; object: Record<string, unknown>; hash: string; asListed?: true }[] = [];
    for (const { raw, rejected, asListed, rejectedDetail, checked } of entries) {
      if (rejectedDetail !== undefined) {
        // Under the card asked for, whose read is broken: an answer naming another card would send ops to the wrong one.
        quarantine.push(this.quarantineRecord("card", "validation", rejectedDetail.reason, rejectedDetail.raw, rejectedDetail.cardId));
        rejectedDetails += 1;
      }
      const result = checked ?? (rejected === undefined ? this.validators.card(raw) : { success: false as const, reason: rejected });
      if (!result.success) {
        quarantine.push(this.quarantineRecord("card", "validation", result.reason, raw, cardIdOf(raw)));
        continue;
      }
      const object = this.pii(withoutTruncationMarker(result.data));
      valid.push({ id: object["id"] as string, object, hash: contentHash(object), ...(asListed ? { asListed } : {}) });
    }
    // The fast path's were read before its detail reads; a detail read answers the card asked for or is rejected, so
    // every card is among them.
    const snapshots =
      known?.snapshots ??
      (valid.length === 0 ? new Map<SnapshotKey, Snapshot>() : await this.read("read snapshots", (call) => deps.snapshots.getMany(valid.map((i) => cardKey(i.id)), call)));
    const items: typeof valid = [];
    for (const listedItem of valid) {
      let item = listedItem;
      if (item.asListed) {
        const object = withLastConfiguration(item.object, snapshots.get(cardKey(item.id)), deps.pii);
        if (object !== item.object) item = { ...item, object, hash: contentHash(object) };
      }
      // Taken in the version it is diffed and stored in, its configuration as last read included: a copy a shift lists
      // again, read once and taken as listed once, is then the same card met twice, not a second card.
      if (this.take(onPage, item.id, item.hash)) items.push(item);
    }
    this.seen.add(onPage.keys(), onPage);
    this.report.handled += items.length + quarantine.length - rejectedDetails;
    // Cards whose limits this walk could not see, each once: persistent, it alarms (CardDetailsUnread). A fast tick's
    // count apart: its ticks, many per full walk, would put one passing failure in several of the alarm's periods, and
    // the full walk reads those cards too.
    const unread = items.reduce((count, item) => count + (item.asListed === true ? 1 : 0), 0);
    if (unread > 0) this.deps.metrics.add(this.mode === "full" ? "CardDetailsUnread" : "FastPathCardDetailsUnread", unread, "Count");
    await this.quarantine(quarantine);
    if (items.length === 0) return;

    const now = deps.clock.now();
    const nowIso = new Date(now).toISOString();
    const events: BridgeEvent[] = [];
    type Item = (typeof items)[number];
    /** Cards whose event is published below, with the snapshot it was diffed against. */
    const pending: { item: Item; before: Snapshot | undefined }[] = [];
    const silent: Snapshot[] = [];
    const snapshotOf = (item: Item, before: Snapshot | undefined, at: number, atIso: string, sequence: number): Snapshot => ({
      key: cardKey(item.id),
      hash: item.hash,
      object: item.object,
      updatedAt: versionTime(at, before, atIso),
      sequence,
    });
    for (const item of items) {
      const before = snapshots.get(cardKey(item.id));
      const { object } = item;
      // A status differing only in case or blanks is not a change, nor is a move between the list's and the detail's view.
      const changes = this.changesSince(
        before,
        item.hash,
        object,
        (c, was) => (c.path !== "/status" || isStatusMove(was.object["status"], object["status"])) && !isViewChange(c, was.object, object, deps.cardDetails === true),
      );
      if (changes === "same") continue;
      if (changes === "new") {
        if (!deps.emitCardCreated) {
          silent.push(snapshotOf(item, before, now, nowIso, storedSequence(before)));
          continue;
        }
        events.push(this.cardEvent("card.created", item, undefined, now));
        pending.push({ item, before });
        continue;
      }
      if (changes.length === 0) {
        silent.push(snapshotOf(item, before, now, nowIso, storedSequence(before)));
        continue;
      }
      const was = before as Snapshot;
      const type = cardEventType(was.object["status"], object["status"]);
      events.push(this.cardEvent(type, item, before, now, changes));
      pending.push({ item, before });
    }
    const failures = await this.publish(events, events.map(() => undefined));
    // Stamped after the publish, as transactions are.
    const writtenAt = this.stampAfter(events);
    const writtenIso = new Date(writtenAt).toISOString();
    // A card whose event failed keeps its old snapshot, so the next walk detects and re-sends the change.
    const published = pending
      .filter((_, i) => !failures.has((events[i] as BridgeEvent).detail.id))
      .map(({ item, before }) => snapshotOf(item, before, writtenAt, writtenIso, nextSequence(before)));
    await this.storeSnapshots([...silent, ...published], published.length);
  }

  private cardEvent(
    type: EventType,
    item: { id: string; object: Record<string, unknown>; hash: string },
    before: Snapshot | undefined,
    now: number,
    changes?: readonly Change[],
  ): BridgeEvent {
    return this.buildEvent({
      type,
      kind: "card",
      subjectId: item.id,
      object: item.object,
      before,
      afterHash: item.hash,
      occurredAt: cardChangedAt(item.object, changes) ?? now,
      changes,
    });
  }
}

/**
 * Runs one card cycle. `mode: "full"` walks every ERP card; `"suspended-only"` walks only `status=suspended`
 * (one small list call) to surface suspensions quickly between full walks; with card details it reads only the cards
 * not yet recorded suspended (see `CardDetailReads.withoutRecordedStatus`). First sightings are recorded
 * silently unless `emitCardCreated` is set. A walk stopped by the deadline or the page bound resumes in the next
 * cycle of the same mode at the first card it did not reach.
 *
 * @throws {ReauthorizationNeededError} the provider token family is revoked (never retried).
 * @throws {CycleAbortedError} a dependency failed; `error.report` holds what was done.
 * @example
 * ```ts
 * await pollCards(deps, { mode: "suspended-only", deadline: clock.now() + 10_000 });
 * ```
 */
export async function pollCards(deps: CardCycleDeps, options: CardCycleOptions = {}): Promise<CycleReport> {
  const run = new CardRun(deps, options);
  return run.execute(() => run.run());
}
