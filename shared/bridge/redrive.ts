/**
 * Re-drive of quarantined transactions: a transaction whose event failed for good, or that failed validation with a
 * usable id, was quarantined and acknowledged, so no cycle pulls it again. Once the cause is fixed (the bus, or a
 * validation rule that refused good provider data), the re-drive reads each such transaction again and runs it
 * through the cycle's own batch path; a record is deleted only once its transaction's current state is delivered.
 */
import { storeDeadlineExceeded, WriteDeadlineExceededError } from "./errors.js";
import { uuidFromHex } from "./hash.js";
import { quarantineReason } from "./quarantine-id.js";
import type { CycleOptions, TransactionCycleDeps } from "./deps.js";
import type { Quarantine, QuarantineRecord, StoreCallOptions } from "./ports.js";
import type { CycleReport } from "./report.js";
import { reprocessTransactions, type ReprocessedChunk, type TransactionRef, type UnconfirmedRef } from "./reprocess.js";
import { isAcknowledgeableId } from "./transaction-ids.js";
import { lastModified } from "./versions.js";
import { isJsonObject } from "../json-object.js";

/** Reason prefix of a record quarantined because its event failed for good (see `CycleRun.quarantineRecord`). */
export const PUBLISH_FAILURE_PREFIX = quarantineReason("publish", "");

/** Reason prefix of a record quarantined because it failed validation (see `CycleRun.quarantineRecord`). */
export const VALIDATION_FAILURE_PREFIX = quarantineReason("validation", "");

/**
 * A quarantine record as the re-drive holds and reports it: without its raw body (read once, when its page is in hand),
 * so a re-drive of a large quarantine holds ids and reasons, never every body at once.
 */
export type RedriveRecord = Omit<QuarantineRecord, "raw">;

/**
 * Kept records a re-drive names one by one (a warn line each; the Lambda's result lists their ids; the report holds
 * them), those kept for a cause before those only not reached: a re-drive of a large quarantine keeps most records as
 * not reached, run after run, and a line, an id or an entry for each would flood the log, outgrow the 6 MB a Lambda may
 * return and the memory of one chunk. The rest are counted by why.
 */
export const KEPT_RECORDS_NAMED = 100;

/**
 * Deleted records a re-drive names (the report holds them): the first so many. A run over a large quarantine deletes
 * hundreds of thousands, and a list of them all would hold the memory the chunks spare; the rest are counted.
 */
export const REDRIVEN_RECORDS_NAMED = 100;

/** Quarantine records read per page while the re-drive gathers what to read again. */
export const REDRIVE_QUARANTINE_PAGE_SIZE = 100;

/**
 * Re-drivable records gathered (ids and reasons, a few hundred bytes each) before they are read again and their
 * delivered ones deleted, and the walk goes on: the re-drive holds one chunk, not the quarantine (a rule that refused
 * good provider data may have quarantined a whole backlog). A chunk ends with its page, so it holds at most this many
 * plus one page.
 */
export const REDRIVE_CHUNK_RECORDS = 5_000;

/** A quarantine record the re-drive left in place, and why. */
export interface KeptRecord {
  readonly record: RedriveRecord;
  readonly why:
    | "no transaction id or qashio_id in the record"
    | "not found at the provider"
    | typeof UNCONFIRMED_MISS
    | "its qashio_id lists only other transactions"
    | "its qashio_id lists more transactions than a re-drive reads"
    | "the provider refuses to read it by its qashio_id"
    | "not reached before the deadline"
    | "its current state still fails validation"
    | "its event was not published";
}

/** What {@link redriveQuarantined} did. */
export interface RedriveReport {
  /** Records the re-drive took ({@link isRedrivable}), found in the part of the quarantine it walked. */
  readonly considered: number;
  /**
   * Records deleted, their transaction's current state now published (or already was): the first
   * {@link REDRIVEN_RECORDS_NAMED}; {@link redrivenCount} counts them all.
   */
  readonly redriven: readonly RedriveRecord[];
  /** Records deleted beyond those `redriven` names (absent when it names them all). */
  readonly redrivenNotNamed?: number;
  /** Records kept: the first {@link KEPT_RECORDS_NAMED}, those kept for a cause first; `keptByWhy` counts them all. */
  readonly kept: readonly KeptRecord[];
  /** How many records were kept, by why (all of them, named or not). */
  readonly keptByWhy: Partial<Record<KeptRecord["why"], number>>;
  /** Records kept beyond those `kept` names (absent when it names them all). */
  readonly keptNotNamed?: number;
  /**
   * Present when the walk of the quarantine stopped before its end (the deadline, a stop request, or a re-read that
   * ended the run) with records left: those were not looked at, so not counted in `considered`; the next run takes
   * them. Absent when the walk handed out its last page, whatever stopped it after.
   */
  readonly notScanned?: true;
  /** The engine's report of the re-read transactions (events published, acknowledged, quarantined again). */
  readonly cycle: CycleReport;
}

/** How many records a report kept in all, named or not. */
export function keptCount(report: Pick<RedriveReport, "kept" | "keptNotNamed">): number {
  return report.kept.length + (report.keptNotNamed ?? 0);
}

/**
 * How many records a report deleted in all, named or not.
 *
 * @example
 * ```ts
 * logger.info("re-drive done", { redriven: redrivenCount(report) });
 * ```
 */
export function redrivenCount(report: Pick<RedriveReport, "redriven" | "redrivenNotNamed">): number {
  return report.redriven.length + (report.redrivenNotNamed ?? 0);
}

/** Options of {@link redriveQuarantined}. */
export interface RedriveOptions extends Pick<CycleOptions, "pageSize" | "deadline" | "signal"> {
  /** Source of the point the walk starts at and of the order records are read in within a chunk. @default Math.random */
  readonly random?: () => number;
  /** Re-drivable records gathered before they are read again. @default REDRIVE_CHUNK_RECORDS */
  readonly chunkRecords?: number;
}

const NOT_REACHED: KeptRecord["why"] = "not reached before the deadline";

/**
 * Why a validation record is kept whose qashio_id (no publish record of its transaction confirming it, so maybe the
 * very field that failed) finds nothing, and whose transaction's snapshot does not show a state as new delivered: the
 * transaction may be gone, or there under another reference (docs/runbook.md says what to check).
 */
const UNCONFIRMED_MISS = "not found by its qashio_id, which no publish record confirms";

/**
 * Why a read by an unconfirmed qashio_id keeps records that a later chunk's delivery of their transaction settles (its
 * snapshot check covers them as reprocess.ts `settledBySnapshot` does): the reference, maybe glitched, told nothing.
 */
const UNCONFIRMED_UNFOUND: ReadonlySet<KeptRecord["why"]> = new Set([
  UNCONFIRMED_MISS,
  "its qashio_id lists only other transactions",
  "the provider refuses to read it by its qashio_id",
]);

/** Kept records, counted by why, the first KEPT_RECORDS_NAMED named: those kept for a cause before those not reached. */
class KeptTally {
  readonly named: KeptRecord[] = [];
  readonly byWhy: Partial<Record<KeptRecord["why"], number>> = {};
  count = 0;

  add(record: RedriveRecord, why: KeptRecord["why"]): void {
    this.count += 1;
    this.byWhy[why] = (this.byWhy[why] ?? 0) + 1;
    if (this.named.length < KEPT_RECORDS_NAMED) this.named.push({ record, why });
    else if (why !== NOT_REACHED) {
      // A record kept for a cause asks something of someone; one not reached only asks for another run.
      const i = this.named.findIndex((k) => k.why === NOT_REACHED);
      if (i >= 0) this.named[i] = { record, why };
    }
  }

  /** Takes back records added as kept (settled after all). */
  remove(records: readonly KeptRecord[]): void {
    this.count -= records.length;
    for (const { why } of records) {
      const left = (this.byWhy[why] ?? 0) - 1;
      if (left > 0) this.byWhy[why] = left;
      else delete this.byWhy[why];
    }
    const ids = new Set(records.map(({ record }) => record.id));
    const named = this.named.filter((k) => !ids.has(k.record.id));
    this.named.splice(0, this.named.length, ...named);
  }
}

/** `items` in a random order (Fisher-Yates). */
function shuffled<T>(items: T[], random: () => number): T[] {
  for (let i = items.length - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j] as T, items[i] as T];
  }
  return items;
}

/**
 * True for a record the re-drive takes: a transaction's `publish` record (its event failed for good), and a
 * transaction's `validation` record that names an acknowledgeable transaction id (`entityId`, a UUID) and holds a
 * `qashio_id` in its body: such a transaction was acknowledged, so no cycle lists it again, and it can be read again.
 * Left alone: card records (a card walk finds every card again), and `validation` records without such an id (never
 * acknowledged, so the transaction stays listed and the first cycle after a fix delivers it) or without a qashio_id
 * (nothing to read it again by; docs/runbook.md, QuarantineNotEmpty). A `publish` record always passed validation, so
 * one without an id or qashio_id is taken, and kept as "no transaction id or qashio_id in the record".
 *
 * @example
 * ```ts
 * const toRedrive = (await quarantine.list()).filter(isRedrivable);
 * ```
 */
export function isRedrivable(record: QuarantineRecord): boolean {
  if (record.kind !== "transaction") return false;
  if (record.reason.startsWith(PUBLISH_FAILURE_PREFIX)) return true;
  return record.reason.startsWith(VALIDATION_FAILURE_PREFIX) && isAcknowledgeableId(record.entityId) && recordQashioId(record.raw) !== undefined;
}

/**
 * The qashio_id kept in a record's raw body (not PII, so present in every PII mode): what the re-drive reads the
 * transaction again by. A quarantine that cuts a body too large to keep keeps this member whole.
 */
export function recordQashioId(raw: unknown): string | undefined {
  const value = typeof raw === "object" && raw !== null ? (raw as Record<string, unknown>)["qashio_id"] : undefined;
  return typeof value === "string" && value !== "" ? value : undefined;
}

/**
 * Re-drives the tenant's quarantined transactions ({@link isRedrivable}: publish failures, and validation failures of
 * acknowledged transactions): reads each transaction again from the provider (by qashio_id), validates it and
 * publishes its current state as a pulled item would be (`transaction.created` when nothing was ever published for
 * it, else `transaction.changed` against the last published state), writes its snapshot, acknowledges it (an
 * acknowledge that fails for now is left to the next cycle, which lists the transaction again), then deletes the
 * record. A record whose event fails again, whose transaction still fails validation (quarantined again under the
 * same record id while its body is unchanged, so neither a second record nor a new one in `Quarantined`), whose
 * transaction is gone, or whose read by qashio_id the provider refuses, is kept. Safe to run again: a transaction already delivered is found unchanged and
 * only its record is deleted. Hold the tenant's cycle lock around it, as around a cycle.
 *
 * Memory of one chunk, not of the quarantine: the quarantine is walked a page at a time, of each record taken only its
 * ids and reason are kept, and every {@link REDRIVE_CHUNK_RECORDS} such records are read again and their delivered
 * ones deleted before the walk goes on; kept records are counted by why, the first {@link KEPT_RECORDS_NAMED} named.
 * The walk starts at a random point of the store's order and comes round to it (see walkFromRandomPoint), records are
 * read in a random order within a chunk, and the deadline and the stop signal are checked between pages: a walk that
 * stops there leaves the rest not looked at (`notScanned`, only when a record is left: see walkFromRandomPoint), for
 * the next run; a run whose walk ended tried every record, and is `complete` even when its last chunk ended late.
 *
 * @throws {CycleAbortedError} a provider, store or publisher call failed; records not yet deleted stay.
 * @example
 * ```ts
 * const report = await redriveQuarantined(deps, { deadline });
 * logger.info("re-drive done", { redriven: redrivenCount(report), kept: keptCount(report), notScanned: report.notScanned });
 * ```
 */
export async function redriveQuarantined(deps: TransactionCycleDeps, options: RedriveOptions = {}): Promise<RedriveReport> {
  const { random = Math.random, chunkRecords = REDRIVE_CHUNK_RECORDS, ...cycle } = options;
  const { deadline, signal } = cycle;
  const kept = new KeptTally();
  const redriven: RedriveRecord[] = [];
  let redrivenNotNamed = 0;
  let considered = 0;
  const walk = { ended: false };
  // One transaction can hold several records (one per failed version): one read serves them all.
  // `ref` is read by the qashio_id of a publish record once one is met (`trusted`), else of the first record.
  // `unconfirmed` gathers, while no record is trusted, what the records hold of their state (TransactionRef.unconfirmed).
  type Held = { ref: TransactionRef; trusted: boolean; unconfirmed?: UnconfirmedRef; records: RedriveRecord[] };
  /** The chunk being read again: what a batch deletes and a chunk's end keeps. */
  let inHand = new Map<string, Held>();

  /**
   * Of the transactions taken in this run (bounded by what one run reads, as `redriven` is), the trusted qashio_id of
   * those that had a publish record, and those delivered: a later chunk's records of one (a transaction's records
   * scatter over the quarantine) are read by that id rather than their own, maybe glitched, or settled as delivered
   * without a read.
   */
  const trustedInRun = new Map<string, string>();
  const deliveredInRun = new Set<string>();
  /**
   * Records kept as found nowhere, as listing only others, or as refused, when read by their own qashio_id, maybe glitched (no
   * publish record of their transaction taken yet), from every chunk that so kept them, with their why (that of a
   * later chunk's read by a trusted one once there is one): deleted with it if a later chunk delivers it by a trusted one.
   */
  const missedUntrusted = new Map<string, KeptRecord[]>();
  /** The newest state of each transaction's records in `missedUntrusted`: a later chunk's snapshot check covers them too. */
  const missedState = new Map<string, UnconfirmedRef>();

  /**
   * Refs of the re-drivable records, a chunk at a time, in a random order within it. A transaction whose records fall
   * in two chunks is read by the first; the second only deletes its records once it is delivered, else reads it again
   * by the trusted qashio_id (see trustedInRun).
   */
  async function* chunks(): AsyncGenerator<readonly TransactionRef[]> {
    let gathering = new Map<string, Held>();
    let records = 0;
    const take = (): TransactionRef[] => {
      inHand = gathering;
      gathering = new Map();
      records = 0;
      for (const { ref, trusted } of inHand.values()) if (trusted) trustedInRun.set(ref.id, ref.qashioId);
      const refs = [...inHand.values()].map(({ ref, trusted, unconfirmed }) =>
        deliveredInRun.has(ref.id)
          ? { ...ref, delivered: true as const }
          : trusted
            ? ref
            : { ...ref, unconfirmed: newestState(unconfirmed, missedState.get(ref.id)) },
      );
      return shuffled(refs, random);
    };
    const stopAsked = () => signal?.aborted === true || (deadline !== undefined && deps.clock.now() >= deadline);
    for await (const page of walkFromRandomPoint(deps.quarantine, randomRecordId(random), stopAsked, walk)) {
      for (const entry of page) {
        if (!isRedrivable(entry)) continue;
        considered += 1;
        const { raw, ...record } = entry;
        const qashioId = recordQashioId(raw);
        if (record.entityId === undefined || qashioId === undefined) {
          kept.add(record, "no transaction id or qashio_id in the record");
          continue;
        }
        // A publish record's body passed validation, so its qashio_id is the one to read by; a validation record of the
        // same transaction may hold a glitched one, which would keep both "not found" run after run.
        const readBefore = trustedInRun.get(record.entityId);
        const trusted = readBefore !== undefined || record.reason.startsWith(PUBLISH_FAILURE_PREFIX);
        const ref = { id: record.entityId, qashioId: readBefore ?? qashioId };
        const held: Held = gathering.get(record.entityId) ?? { ref, trusted, records: [] };
        if (trusted && !held.trusted) {
          held.ref = ref;
          held.trusted = true;
        }
        held.records.push(record);
        held.unconfirmed = held.trusted ? undefined : newestState(held.unconfirmed, recordState(raw, record.at));
        gathering.set(record.entityId, held);
        records += 1;
      }
      if (records >= chunkRecords) yield take();
    }
    if (gathering.size > 0) yield take();
  }

  // Deleted batch by batch, so a run cut short (a Lambda timeout) keeps what it did and the next one goes on; one
  // deleteMany per batch, so a store deletes in its own batches (25 records a call on DynamoDB), not a call each.
  const afterBatch = async (delivered: ReadonlySet<string>, write: StoreCallOptions): Promise<void> => {
    const missed = (id: string) => (missedUntrusted.get(id) ?? []).map(({ record }) => record);
    const records = [...delivered].flatMap((id) => [...(inHand.get(id)?.records ?? []), ...missed(id)]);
    try {
      // Held to the calls' deadline: a delete sent again late could remove a record a later run put again under its id.
      if (records.length > 0) await deps.quarantine.deleteMany(records.map((record) => record.id), write);
    } catch (error) {
      // Stopped at the deadline part way: the records it names deleted are re-driven, only the others kept as not reached.
      const stopped = storeDeadlineExceeded(error);
      if (stopped instanceof WriteDeadlineExceededError && stopped.doneIds !== undefined) settle(delivered, new Set(stopped.doneIds));
      throw error;
    }
    settle(delivered);
  };
  /**
   * Counts the records of `delivered` that are deleted (those of `gone`; all when not given) re-driven, and settles each
   * transaction none of whose records are left; a failed delete throws before, and what it left stays for the next run.
   */
  const settle = (delivered: ReadonlySet<string>, gone?: ReadonlySet<string>): void => {
    const isGone = (record: RedriveRecord) => gone === undefined || gone.has(record.id);
    for (const id of delivered) {
      const held = inHand.get(id);
      const earlier = missedUntrusted.get(id) ?? [];
      const deleted = [...(held?.records ?? []), ...earlier.map(({ record }) => record)].filter(isGone);
      const named = deleted.slice(0, Math.max(0, REDRIVEN_RECORDS_NAMED - redriven.length));
      redriven.push(...named);
      redrivenNotNamed += deleted.length - named.length;
      kept.remove(earlier.filter(({ record }) => isGone(record)));
      const heldLeft = held?.records.filter((record) => !isGone(record)) ?? [];
      const earlierLeft = earlier.filter(({ record }) => !isGone(record));
      if (heldLeft.length === 0 && earlierLeft.length === 0) {
        inHand.delete(id);
        deliveredInRun.add(id);
        missedUntrusted.delete(id);
        missedState.delete(id);
        continue;
      }
      if (held !== undefined) held.records = heldLeft;
      if (earlierLeft.length > 0) missedUntrusted.set(id, earlierLeft);
      else missedUntrusted.delete(id);
    }
  };
  const afterChunk = ({ missing, listsOthers, listsTooMany, refused, invalid, unreached, shownBySnapshot }: ReprocessedChunk): void => {
    // Shown delivered up to their records' state only: a later chunk's records of them are checked on their own.
    for (const id of shownBySnapshot) deliveredInRun.delete(id);
    const notReached = new Set(unreached);
    for (const [id, held] of inHand) {
      const why: KeptRecord["why"] = missing.has(id)
        ? held.trusted
          ? "not found at the provider"
          : UNCONFIRMED_MISS
        : listsOthers.has(id)
          ? "its qashio_id lists only other transactions"
          : listsTooMany.has(id)
            ? "its qashio_id lists more transactions than a re-drive reads"
            : refused.has(id)
              ? "the provider refuses to read it by its qashio_id"
              : invalid.has(id)
                ? "its current state still fails validation"
                : notReached.has(id)
                  ? NOT_REACHED
                  : "its event was not published";
      for (const record of held.records) kept.add(record, why);
      const earlier = missedUntrusted.get(id);
      if (held.trusted && why !== NOT_REACHED && earlier !== undefined) {
        // Read now by the trusted qashio_id: the earlier chunks' records of it take this read's why, the true one.
        kept.remove(earlier);
        for (const { record } of earlier) kept.add(record, why);
        missedUntrusted.set(id, earlier.map(({ record }) => ({ record, why })));
      }
      if (!held.trusted && UNCONFIRMED_UNFOUND.has(why)) {
        missedUntrusted.set(id, [...(missedUntrusted.get(id) ?? []), ...held.records.map((record) => ({ record, why }))]);
        // (A held not trusted always has a state; were it absent, one with no change time compares with nothing.)
        missedState.set(id, newestState(missedState.get(id), held.unconfirmed) ?? { quarantinedAt: Infinity });
      }
    }
    inHand = new Map();
  };
  const report = await reprocessTransactions(deps, chunks(), { ...cycle, afterBatch, afterChunk, chunksEnded: () => walk.ended });
  for (const { record, why } of kept.named) {
    deps.logger.warn("quarantine record kept by the re-drive", { quarantineId: record.id, entityId: record.entityId, why });
  }
  const keptNotNamed = kept.count > kept.named.length ? { keptNotNamed: kept.count - kept.named.length } : {};
  const redrivenAll = redrivenNotNamed > 0 ? { redriven, redrivenNotNamed } : { redriven };
  const notScanned = walk.ended ? {} : { notScanned: true as const };
  deps.logger.info("quarantined transactions re-driven", {
    considered,
    redriven: redrivenCount(redrivenAll),
    kept: kept.count,
    keptByWhy: kept.byWhy,
    ...keptNotNamed,
    ...notScanned,
  });
  return { considered, ...redrivenAll, kept: kept.named, keptByWhy: kept.byWhy, ...keptNotNamed, ...notScanned, cycle: report };
}

/** The state a record holds: its body's provider change time, when it has one, and when it was quarantined. */
function recordState(raw: unknown, at: string): UnconfirmedRef {
  const changedAt = isJsonObject(raw) ? lastModified(raw) : undefined;
  const quarantinedAt = Date.parse(at);
  return changedAt === undefined ? { quarantinedAt } : { changedAt, quarantinedAt };
}

/**
 * The newest of two states of a transaction's records (either absent): the newest change time of their bodies (none
 * once one has none: its state cannot be compared) and the last time one was quarantined.
 */
function newestState(held: UnconfirmedRef | undefined, more: UnconfirmedRef | undefined): UnconfirmedRef | undefined {
  if (held === undefined || more === undefined) return held ?? more;
  const quarantinedAt = Math.max(held.quarantinedAt, more.quarantinedAt);
  return held.changedAt === undefined || more.changedAt === undefined ? { quarantinedAt } : { changedAt: Math.max(held.changedAt, more.changedAt), quarantinedAt };
}

/**
 * A random id of the shape of a record's (a UUID, see quarantineId): where a walk starts, so that each run starts at
 * another point of the store's order.
 */
function randomRecordId(random: () => number): string {
  return uuidFromHex(Array.from({ length: 32 }, () => Math.floor(random() * 16).toString(16)).join(""));
}

/**
 * The quarantine's pages in the store's order of ids, from after `start` to the end, then from the beginning up to
 * `start` (each record held and left alone comes once): records that keep failing, or a deadline that lets each run
 * reach only some, cannot hold the same records back run after run. `stopAsked` is checked before each page is read.
 * `walk.ended` is set once the walk came round; a walk stopped after a page (`stopAsked`, or its reader done with it)
 * reads one page more, not handed out, to tell whether that page was the last, so a run that handled every record is
 * not reported as having left some unlooked-at.
 */
async function* walkFromRandomPoint(
  quarantine: Quarantine,
  start: string,
  stopAsked: () => boolean,
  walk: { ended: boolean },
): AsyncGenerator<readonly QuarantineRecord[]> {
  if (stopAsked()) return;
  const pages = pagesAround(quarantine, start)[Symbol.asyncIterator]();
  // From a page handed out until the walk goes on: a stop there (stopAsked, or the reader done) may be at the end.
  let atPage = false;
  try {
    for (let next = await pages.next(); next.done !== true; next = await pages.next()) {
      atPage = true;
      yield next.value;
      if (stopAsked()) return;
      atPage = false;
    }
    walk.ended = true;
  } finally {
    // Not after a failed read: that page is still to be walked. A failed look counts as a page still to walk.
    if (atPage) walk.ended = await pages.next().then(({ done }) => done === true, () => false);
    await pages.return?.(undefined);
  }
}

/** {@link walkFromRandomPoint}'s pages, every one read: from after `start` to the end, then from the beginning up to it. */
async function* pagesAround(quarantine: Quarantine, start: string): AsyncGenerator<readonly QuarantineRecord[]> {
  yield* quarantine.pages({ limit: REDRIVE_QUARANTINE_PAGE_SIZE, after: start });
  for await (const page of quarantine.pages({ limit: REDRIVE_QUARANTINE_PAGE_SIZE })) {
    const before = page.filter((record) => record.id <= start);
    if (before.length > 0) yield before;
    if (before.length < page.length) return;
  }
}
