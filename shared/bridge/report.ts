/**
 * What one cycle did: returned by the poll functions and carried by their errors.
 */
import type { PullStatus } from "./provider.js";

/** Why a cycle ended. */
export type CycleOutcome =
  /** Every pullable item was handled (as far as the provider listed them). */
  | "complete"
  /** The time budget ran out; the rest is picked up by the next cycle. */
  | "deadline"
  /** The per-cycle page bound was hit (a provider that keeps adding items); resumes next cycle. */
  | "page_limit"
  /**
   * The publisher took none of the events of two batches in a row, of 20 events or more together, for now (throttled
   * or down): the walk stopped there instead of going through the backlog in vain; those items stay pending and the
   * next cycle re-sends them.
   */
  | "publisher_unavailable"
  /** A dependency failed; see the thrown error. */
  | "aborted";

/** Counters of one cycle. */
export interface CycleReport {
  readonly kind: "transactions" | "cards";
  outcome: CycleOutcome;
  /** Items received from list calls (including re-reads of the same item). */
  pulled: number;
  /** Distinct items handled (diffed, quarantined or found unchanged). */
  handled: number;
  /** Events published, by event type. */
  published: Record<string, number>;
  /** Events the publisher did not take: rejected for good, or deferred. */
  publishFailed: number;
  /** Of `publishFailed`, events that failed for now (transient): their items stay pending and are re-sent next cycle. */
  publishDeferred: number;
  /** Items handled that had not changed since their snapshot (no event). */
  unchanged: number;
  quarantined: number;
  acknowledged: number;
  /**
   * Ids the provider refused by name on acknowledge (`transaction_ids.<i>`): their events are published, but they stay
   * listed and the next cycle tries them again (metric `AcknowledgeRefused`).
   */
  acknowledgeRefused: number;
  /** Provider calls made (lists, acknowledges, parent reads, card detail reads). */
  providerCalls: number;
  /**
   * Age in seconds of the oldest change pulled and not delivered, else of the oldest published in this cycle
   * (docs/spec-gaps.md). Not delivered includes the oldest transactions the cycle could not reach: a `not_synced` pass
   * paused at its share of the budget with more listed reads the list's last page once and counts its items as
   * pending, but for one whose snapshot holds the state listed (delivered, its acknowledge refused). 0 also when the
   * cycle pulled nothing; the SyncLagSeconds metric is then sent only by a complete transaction cycle whose lists
   * counted nothing waiting (never by a card cycle, nor by a re-drive, which does not list the backlog).
   */
  syncLagSeconds: number;
  /**
   * Transactions listed under each pull status when the cycle first read that list (`total_records` of its first page,
   * which may move while the cycle runs; metric `TransactionsBacklog`). Only the statuses whose count the provider gave;
   * absent when it gave none (a card cycle, a re-drive, a cycle stopped before its first read).
   */
  backlog?: Partial<Record<PullStatus, number>>;
  durationMs: number;
}

/** A zeroed report. */
export function emptyReport(kind: CycleReport["kind"]): CycleReport {
  return {
    kind,
    outcome: "complete",
    pulled: 0,
    handled: 0,
    published: {},
    publishFailed: 0,
    publishDeferred: 0,
    unchanged: 0,
    quarantined: 0,
    acknowledged: 0,
    acknowledgeRefused: 0,
    providerCalls: 0,
    syncLagSeconds: 0,
    durationMs: 0,
  };
}

/** Total events published in a report. */
export function totalPublished(report: CycleReport): number {
  let total = 0;
  for (const n of Object.values(report.published)) total += n;
  return total;
}
