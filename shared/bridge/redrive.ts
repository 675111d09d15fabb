/**
 * Re-drive of quarantined transactions: a transaction whose event failed for good, or that failed validation with a
 * usable id, was quarantined and acknowledged, so no cycle pulls it again. Once the cause is fixed (the bus, or a
 * validation rule that refused good provider data), the re-drive reads each such transaction again and runs it
 * through the cycle's own batch path; a record is deleted only once its transaction's current state is delivered.
 */
import { quarantineReason } from "./quarantine-id.js";
import type { CycleOptions, TransactionCycleDeps } from "./deps.js";
import type { QuarantineRecord, StoreCallOptions } from "./ports.js";
import type { CycleReport } from "./report.js";
import { isAcknowledgeableId, reprocessTransactions, type TransactionRef } from "./transactions.js";

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
 * Kept records a re-drive names one by one (a warn line each; the Lambda's result lists their ids): a re-drive of a
 * large quarantine keeps most records as not reached, run after run, and a line or an id for each would flood the log
 * and outgrow the 6 MB a Lambda may return. The rest are counted by why.
 */
export const KEPT_RECORDS_NAMED = 100;

/** How many kept records go unnamed beyond {@link KEPT_RECORDS_NAMED}, as a member to spread (none when all are named). */
export function keptNotNamed(kept: readonly KeptRecord[]): { readonly keptNotNamed?: number } {
  return kept.length > KEPT_RECORDS_NAMED ? { keptNotNamed: kept.length - KEPT_RECORDS_NAMED } : {};
}

/** Quarantine records read per page while the re-drive gathers what to read again. */
export const REDRIVE_QUARANTINE_PAGE_SIZE = 100;

/** A quarantine record the re-drive left in place, and why. */
export interface KeptRecord {
  readonly record: RedriveRecord;
  readonly why:
    | "no transaction id or qashio_id in the record"
    | "not found at the provider"
    | "its qashio_id lists only other transactions"
    | "its qashio_id lists more transactions than a re-drive reads"
    | "the provider refuses to read it by its qashio_id"
    | "not reached before the deadline"
    | "its current state still fails validation"
    | "its event was not published";
}

/** What {@link redriveQuarantined} did. */
export interface RedriveReport {
  /** Records the re-drive took ({@link isRedrivable}), found in the quarantine. */
  readonly considered: number;
  /** Records deleted: their transaction's current state is now published (or already was). */
  readonly redriven: readonly RedriveRecord[];
  readonly kept: readonly KeptRecord[];
  /** The engine's report of the re-read transactions (events published, acknowledged, quarantined again). */
  readonly cycle: CycleReport;
}

/** Options of {@link redriveQuarantined}. */
export interface RedriveOptions extends Pick<CycleOptions, "pageSize" | "deadline" | "signal"> {
  /** Source of the order records are taken in. @default Math.random */
  readonly random?: () => number;
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
 * only its record is deleted. Hold the tenant's cycle lock around it, as around a cycle. The quarantine is read a page
 * at a time, and of each record taken only its ids and reason are kept: a quarantine of any size is re-driven in the
 * memory of one page of bodies (and a few hundred bytes per record).
 *
 * @throws {CycleAbortedError} a provider, store or publisher call failed; records not yet deleted stay.
 * @example
 * ```ts
 * const { redriven, kept } = await redriveQuarantined(deps);
 * logger.info("re-drive done", { redriven: redriven.length, kept: kept.length });
 * ```
 */
export async function redriveQuarantined(deps: TransactionCycleDeps, options: RedriveOptions = {}): Promise<RedriveReport> {
  let considered = 0;
  const kept: KeptRecord[] = [];
  // One transaction can hold several records (one per failed version): one read serves them all.
  // `ref` is read by the qashio_id of a publish record once one is met (`trusted`), else of the first record.
  const byTransaction = new Map<string, { ref: TransactionRef; trusted: boolean; readonly records: RedriveRecord[] }>();
  for await (const page of deps.quarantine.pages({ limit: REDRIVE_QUARANTINE_PAGE_SIZE })) {
    for (const entry of page) {
      if (!isRedrivable(entry)) continue;
      considered += 1;
      const { raw, ...record } = entry;
      const qashioId = recordQashioId(raw);
      if (record.entityId === undefined || qashioId === undefined) {
        kept.push({ record, why: "no transaction id or qashio_id in the record" });
        continue;
      }
      // A publish record's body passed validation, so its qashio_id is the one to read by; a validation record of the
      // same transaction may hold a glitched one, which would keep both "not found" run after run.
      const trusted = record.reason.startsWith(PUBLISH_FAILURE_PREFIX);
      const held = byTransaction.get(record.entityId) ?? { ref: { id: record.entityId, qashioId }, trusted, records: [] };
      if (trusted && !held.trusted) {
        held.ref = { id: record.entityId, qashioId };
        held.trusted = true;
      }
      held.records.push(record);
      byTransaction.set(record.entityId, held);
    }
  }
  const redriven: RedriveRecord[] = [];
  // Deleted batch by batch, so a run cut short (a Lambda timeout) keeps what it did and the next one goes on; one
  // deleteMany per batch, so a store deletes in its own batches (25 records a call on DynamoDB), not a call each.
  const afterBatch = async (delivered: ReadonlySet<string>, write: StoreCallOptions): Promise<void> => {
    const records = [...delivered].flatMap((id) => byTransaction.get(id)?.records ?? []);
    // Held to the calls' deadline: a delete sent again late could remove a record a later run put again under its id.
    if (records.length > 0) await deps.quarantine.deleteMany(records.map((record) => record.id), write);
    // Counted only once deleted: a failed delete throws, and what it left stays for the next run.
    redriven.push(...records);
    for (const id of delivered) byTransaction.delete(id);
  };
  // In random order: records that keep failing (or are gone) must not hold the others back run after run when a
  // deadline lets each run read only some of them.
  const { random = Math.random, ...cycle } = options;
  const refs = shuffled([...byTransaction.values()].map((held) => held.ref), random);
  const { report, missing, listsOthers, listsTooMany, refused, invalid, unreached } = await reprocessTransactions(deps, refs, { ...cycle, afterBatch });
  const notReached = new Set(unreached);
  for (const [id, held] of byTransaction) {
    const why: KeptRecord["why"] = missing.has(id)
      ? "not found at the provider"
      : listsOthers.has(id)
        ? "its qashio_id lists only other transactions"
        : listsTooMany.has(id)
          ? "its qashio_id lists more transactions than a re-drive reads"
          : refused.has(id)
            ? "the provider refuses to read it by its qashio_id"
            : invalid.has(id)
              ? "its current state still fails validation"
              : notReached.has(id)
                ? "not reached before the deadline"
                : "its event was not published";
    for (const record of held.records) kept.push({ record, why });
  }
  for (const { record, why } of kept.slice(0, KEPT_RECORDS_NAMED)) {
    deps.logger.warn("quarantine record kept by the re-drive", { quarantineId: record.id, entityId: record.entityId, why });
  }
  const keptByWhy: Partial<Record<KeptRecord["why"], number>> = {};
  for (const { why } of kept) keptByWhy[why] = (keptByWhy[why] ?? 0) + 1;
  deps.logger.info("quarantined transactions re-driven", {
    considered,
    redriven: redriven.length,
    kept: kept.length,
    keptByWhy,
    ...keptNotNamed(kept),
  });
  return { considered, redriven, kept, cycle: report };
}
