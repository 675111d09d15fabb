/**
 * The card detail reads: a page's cards as their single reads show them (spec §2.3: only those carry the configuration
 * objects), the fast path's page without the cards already recorded in the status listed, and what a card taken as
 * listed keeps of its last read. Used by the card cycle (see cards.ts) through the ports the run gives it.
 */
import { cardIdOf, cardKey } from "./card-keys.js";
import { isStatusMove } from "./card-status.js";
import type { Change } from "./diff.js";
import { conformPii, type PiiPolicy } from "./pii.js";
import type { Logger, Snapshot, SnapshotKey } from "./ports.js";
import { failedCallOf, isTokenFailure, mapSingleReads, statusOf } from "./provider-errors.js";
import { pageEntries, SINGLE_READ_CONCURRENCY, type PageEntry, type ProviderPage } from "./provider.js";
import type { ValidationResult } from "./validate.js";
import { ERP_CARD_DETAIL_KEYS } from "../qashio/schemas/erp-card.js";

/** Members only a card's single read carries (spec §2.3): the configuration objects. */
const DETAIL_ONLY_KEYS: ReadonlySet<string> = new Set(ERP_CARD_DETAIL_KEYS);

/**
 * A page entry after card details: `asListed` when its single read failed and the list's view stands in for it;
 * `rejectedDetail` when that read answered something the bridge cannot take (quarantined under the card asked for,
 * the card taken as listed).
 */
export interface CardEntry extends PageEntry {
  readonly asListed?: true;
  /** The card validator's result for `raw`, when the detail step already ran it (the page step then does not again). */
  readonly checked?: ValidationResult;
  readonly rejectedDetail?: { readonly cardId: string; readonly raw: unknown; readonly reason: string };
}

/** What the detail reads need of the run: its logger, draws, card validator, deadline, and store and provider calls. */
export interface CardDetailPorts {
  readonly logger: Pick<Logger, "info" | "warn">;
  /** Where in each page the reads start, as a fraction in [0, 1). */
  random(): number;
  validateCard(raw: unknown): ValidationResult;
  /** True once the cycle's deadline passed. */
  pastDeadline(): boolean;
  /** True once a stop (Ctrl-C, SIGTERM) was requested. */
  stopRequested(): boolean;
  /** True for a failure that ends the cycle for want of time (see CycleRun.outOfTime). */
  outOfTime(err: unknown): boolean;
  /** Reads one card as the run calls the provider (counted, held to its deadline); `expected` failures are no provider error. */
  readCard(step: string, id: string, expected: (err: unknown) => boolean): Promise<ProviderPage>;
  /** Reads snapshots as the run reads its store (held to its calls' deadline). */
  readSnapshots(step: string, keys: readonly SnapshotKey[]): Promise<Map<SnapshotKey, Snapshot>>;
}

/** The detail reads of one card walk: once a page's reads all failed, the rest of the walk takes cards as listed. */
export class CardDetailReads {
  /** Set once a page's detail reads all failed (see `read`): the rest of the walk takes cards as listed, without reading them. */
  private failing = false;

  constructor(private readonly ports: CardDetailPorts) {}

  /**
   * The page's cards (`entries`; `firstPage`: the cycle's first page) as their single reads show them (see
   * `CardCycleDeps.cardDetails`), read SINGLE_READ_CONCURRENCY at a time before anything is written, so a deadline met
   * among them leaves the page whole for the next cycle, which starts with it. Not so on the cycle's first page once some
   * of its reads started before the deadline: no later cycle would have more time for it, and one that cannot read it
   * whole would hold the walk there for good. Its reads not started by the cycle's deadline are not made, and those cards
   * are taken as listed (the reads in flight finish within the calls' grace). A first page listed only after the deadline
   * is read in the grace as a later one, and a stop request leaves the page whole as before. A listed card that fails
   * validation stays as listed (it is quarantined as such). A card the read does not find (404: removed since it was
   * listed, or one the provider lists but will not show), a read that fails otherwise (after the client's retries; a
   * token failure aside, which ends the cycle, also when another read in flight ran out of time first: see
   * mapSingleReads), and a read answering what the bridge cannot take (no card, another card than asked, a card that
   * fails validation: `rejectedDetail`, quarantined) leave the card as listed, `asListed`: its status and list members
   * are still diffed, its configuration kept from its snapshot for a later walk, so one card the provider will not read,
   * or reads malformed, cannot hide its own suspension nor hold the walk. Once every read of a page failed, or the first
   * SINGLE_READ_CONCURRENCY reads of one failed with none answered, the rest of the walk (that page's reads not yet
   * started included) reads none.
   */
  async read(entries: readonly CardEntry[], firstPage: boolean): Promise<CardEntry[]> {
    let failed = 0;
    let answered = 0;
    /** Set once a read of this page starts before the cycle's deadline. */
    let readInTime = false;
    let unstarted = 0;
    const endDetails = (): void => {
      if (this.failing) return;
      this.failing = true;
      this.ports.logger.warn("card detail reads of a page all failed; the rest of this walk takes cards as listed", { failed });
    };
    // Reads start at a random card of the page and wrap around: cards whose reads keep failing at the head of a page
    // would otherwise be the first reads of every walk, end details for it each time, and hold back the limit changes
    // of every card after them for as long as they fail.
    const start = rotationStart(this.ports.random(), entries.length);
    const rotated = [...entries.slice(start), ...entries.slice(0, start)];
    const readRotated = await mapSingleReads(rotated, async (entry): Promise<CardEntry> => {
      const listed = entry.checked ?? (entry.rejected === undefined ? this.ports.validateCard(entry.raw) : undefined);
      if (!listed?.success) return listed === undefined ? entry : { ...entry, checked: listed };
      // The list's view stands in for the card: its validation is the one just made.
      const asListed = (): CardEntry => ({ ...entry, asListed: true, checked: listed });
      if (this.failing) return asListed();
      // A page no cycle can read whole would hold the walk there for good (see above); a stop says nothing of that.
      const late = this.ports.pastDeadline() && !this.ports.stopRequested();
      if (firstPage && late && readInTime) {
        unstarted += 1;
        return asListed();
      }
      if (!late) readInTime = true;
      const id = listed.data["id"] as string;
      const gone = (err: unknown): boolean => !isTokenFailure(err) && statusOf(err) === 404;
      let page;
      try {
        page = await this.ports.readCard("read card detail", id, gone);
      } catch (err) {
        if (this.ports.outOfTime(err) || isTokenFailure(err)) throw err;
        // Not a fault of the endpoint: not counted towards ending details for the walk.
        if (gone(err)) {
          this.ports.logger.info("card listed but not found when read; taken as listed", { cardId: id });
          return asListed();
        }
        failed += 1;
        const { name, status } = failedCallOf(err);
        this.ports.logger.warn("card detail read failed; the card is taken as listed, its configuration as last read", { cardId: id, error: name, status });
        // As many reads failed as run at once and none answered: the endpoint is down. The page's reads not started
        // are not made, as a page of reads each taking its retries could outlast the cycle and hold the walk there.
        if (failed >= SINGLE_READ_CONCURRENCY && answered === 0) endDetails();
        return asListed();
      }
      answered += 1;
      // An answer the bridge cannot take is quarantined, and the list's view of the card, valid, stands in for it.
      const rejected = (raw: unknown, reason: string): CardEntry => ({ ...asListed(), rejectedDetail: { cardId: id, raw, reason } });
      const [detail] = pageEntries(page);
      if (detail === undefined) return rejected(entry.raw, "(root): the card read answered no card");
      if (detail.rejected !== undefined) return rejected(detail.raw, detail.rejected);
      if (cardIdOf(detail.raw) !== id) return rejected(detail.raw, "id: the card read answered another card");
      const checked = this.ports.validateCard(detail.raw);
      if (!checked.success) return rejected(detail.raw, checked.reason);
      return { ...detail, checked };
    });
    // Back in page order: the walk's cursor and the events follow the list.
    const read = [...readRotated.slice(entries.length - start), ...readRotated.slice(0, entries.length - start)];
    if (failed > 0 && answered === 0) endDetails();
    if (unstarted > 0) this.ports.logger.warn("card detail reads not started by the cycle deadline; those cards are taken as listed", { unstarted });
    return read;
  }

  /**
   * The fast path's page (card details on) without the cards whose snapshot records the status listed already, case
   * and blanks aside: suspended, and taken so by an earlier walk. The fast path is there for suspensions, and such a card
   * has none to report; reading its details every tick (a provider call per suspended card per tick) would only find
   * the limit and nickname changes the next full walk reads anyway. Skipped whole, not taken as listed: diffed without
   * its details against a snapshot holding them, it could not keep them apart from a change. A card with no snapshot,
   * or whose status moved, is read as before. The snapshots read are handed on for the page's diff. A card left out is
   * taken (`take`: see `CardRun.take` in cards.ts) in the version its snapshot records, so a copy a shift lists again
   * counts once; `skipped` counts those taken.
   */
  async withoutRecordedStatus(
    entries: readonly PageEntry[],
    take: (id: string, hash: string) => boolean,
  ): Promise<{ entries: CardEntry[]; snapshots: Map<SnapshotKey, Snapshot>; skipped: number }> {
    const checked = entries.map((entry): CardEntry => (entry.rejected === undefined ? { ...entry, checked: this.ports.validateCard(entry.raw) } : entry));
    const keys = checked.flatMap(({ checked: result }) => (result?.success ? [cardKey(result.data["id"] as string)] : []));
    const snapshots = keys.length === 0 ? new Map<SnapshotKey, Snapshot>() : await this.ports.readSnapshots("read snapshots", keys);
    let skipped = 0;
    const kept = checked.filter(({ checked: result }) => {
      if (!result?.success) return true;
      const id = result.data["id"] as string;
      const before = snapshots.get(cardKey(id));
      if (before === undefined || isStatusMove(before.object["status"], result.data["status"])) return true;
      if (take(id, before.hash)) skipped += 1;
      return false;
    });
    return { entries: kept, snapshots, skipped };
  }
}

/**
 * `listed`, a card taken as listed, with the configuration objects it was last read with (`before`, its snapshot, as
 * `pii` masks now) or, never read, UNKNOWN_CONFIGURATION (see withConfigurationOf).
 */
export function withLastConfiguration(listed: Readonly<Record<string, unknown>>, before: Snapshot | undefined, pii: PiiPolicy): Record<string, unknown> {
  // In the current PII form: the snapshot may predate a mode switch or a table that masks more, and what is kept
  // of it is published and stored again.
  const last = before !== undefined && isDetailView(before.object) ? conformPii(before.object, pii) : UNKNOWN_CONFIGURATION;
  return withConfigurationOf(listed, last);
}

/**
 * Index in a page of `length` entries that a draw of `random` (meant in [0, 1)) starts the reads at: always within the
 * page, as putting the page back in order assumes (a draw of 1, a negative or NaN would otherwise reorder its events).
 */
function rotationStart(draw: number, length: number): number {
  const index = Math.floor(draw * length);
  return Number.isFinite(index) && length > 0 ? ((index % length) + length) % length : 0;
}

/**
 * The configuration objects of `before` (a snapshot's object) that `listed` (a card as the list shows it) lacks, added
 * to a copy of it: a card whose single read failed keeps its last known configuration, so neither a view change nor a
 * later read's change to it is mistaken or lost. `listed` unchanged when `before` has none.
 */
function withConfigurationOf(listed: Readonly<Record<string, unknown>>, before: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const kept = [...DETAIL_ONLY_KEYS].filter((key) => Object.hasOwn(before, key) && !Object.hasOwn(listed, key));
  if (kept.length === 0) return listed;
  const object = { ...listed };
  for (const key of kept) object[key] = before[key];
  return object;
}

/**
 * The configuration of a card whose configuration was never read (first seen while its read fails, or its snapshot is
 * of the list's view: details were off until now, or every read since failed): each object `null`. Left out, they
 * would make its snapshot one of the list's view, so the first read that works would be taken for details turned on (a
 * silent view change), and the card's configuration, a limit changed in between included, would not be published; as
 * `null`, that read publishes them as a change from `null`.
 */
const UNKNOWN_CONFIGURATION: Readonly<Record<string, unknown>> = Object.freeze(Object.fromEntries([...DETAIL_ONLY_KEYS].map((key) => [key, null])));

/** True when a card object was taken from a single read: it carries at least one configuration object. */
function isDetailView(object: Readonly<Record<string, unknown>>): boolean {
  for (const key of DETAIL_ONLY_KEYS) if (Object.hasOwn(object, key)) return true;
  return false;
}

/**
 * True when `change` is a configuration object one side does not carry at all because the two sides are different
 * views: the snapshot was taken from the list and the card now from its single read (card details just turned on), or
 * the other way round. No event: the snapshot takes the new view. Between two single reads, a configuration object
 * that appears or goes (the provider omits and nulls members alike) is a real change, as is a member null on one side.
 */
export function isViewChange(change: Change, before: Readonly<Record<string, unknown>>, after: Readonly<Record<string, unknown>>, afterIsDetail: boolean): boolean {
  const key = change.path.slice(1);
  if (!DETAIL_ONLY_KEYS.has(key) || (Object.hasOwn(before, key) && Object.hasOwn(after, key))) return false;
  return isDetailView(before) !== afterIsDetail;
}
