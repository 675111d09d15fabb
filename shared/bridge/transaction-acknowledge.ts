/**
 * The transaction acknowledge protocol: ids sent in calls of at most a page, refusals by name left listed, an attempt
 * that fails for now left to a fresh read of its ids. Used by the transaction cycle (see transactions.ts) once per
 * batch, through the ports the run gives it.
 */
import { logToken } from "../log-token.js";
import { providerRefusal, retryDeferred } from "./provider-errors.js";
import type { ProviderCallOptions } from "./provider.js";
import type { Logger, Metrics } from "./ports.js";
import type { CycleReport } from "./report.js";

/** What {@link TransactionAcknowledger.acknowledge} did with its ids. */
export interface AckOutcome {
  readonly acknowledged: number;
  readonly readAgain: readonly string[];
}

export const NOTHING_ACKNOWLEDGED: AckOutcome = { acknowledged: 0, readAgain: [] };

/**
 * How a run leaves an acknowledge that fails for now, which is not sent again as it was (see
 * {@link TransactionAcknowledger.acknowledge}): while a status pass walks (`readsPage`), to a fresh read of its page; in
 * a re-drive, which reads by id, to the next cycle, which lists the transactions again. `failedBefore` counts failed
 * attempts in a row.
 */
export interface AckRetry {
  failedBefore: number;
  readonly readsPage: boolean;
}

/** What the acknowledge needs of the run it serves: its logger, metrics and report, its provider calls and waits. */
export interface AcknowledgePorts {
  readonly logger: Pick<Logger, "warn">;
  readonly metrics: Pick<Metrics, "add">;
  /** Counts the ids acknowledged and those the provider refused. */
  readonly report: Pick<CycleReport, "acknowledged" | "acknowledgeRefused">;
  /**
   * Acknowledges `ids` as the run calls the provider (counted, held to its deadline), telling the client the attempts
   * that failed before (`callerRetries`) when given; a failure `expected` holds is an answer, not a provider error.
   */
  acknowledgeTransactions(
    step: string,
    ids: string[],
    callerRetries: ProviderCallOptions["callerRetries"],
    expected: (err: unknown) => boolean,
  ): Promise<unknown>;
  /** Waits as the run waits (its clock; a stop request ends the wait early). */
  wait(ms: number): Promise<void>;
  /** The page size the run's list calls ask for now (lowered for the rest of the cycle when the provider rejects it). */
  pageSize(): number;
}

const ACK_ID_FIELD = /^transaction_ids\.(\d+)$/;

/**
 * Indexes of the acknowledge body's ids a provider error names (`transaction_ids.<i>`), when it names ids and nothing
 * else; undefined otherwise (the failure is then not about particular ids).
 */
function refusedAckIndexes(err: unknown, count: number): Set<number> | undefined {
  const entries = providerRefusal(err)?.errors ?? [];
  if (entries.length === 0) return undefined;
  const refused = new Set<number>();
  for (const entry of entries) {
    const field = entry?.field;
    const match = typeof field === "string" ? ACK_ID_FIELD.exec(field) : null;
    const index = match ? Number(match[1]) : NaN;
    if (!(index < count)) return undefined;
    refused.add(index);
  }
  return refused;
}

/** Counted by the client as a retried attempt (its onRetry), as before. */
const failedForNow = (err: unknown): boolean => retryDeferred(err) !== undefined;

/** The acknowledges of one transaction run. */
export class TransactionAcknowledger {
  constructor(private readonly ports: AcknowledgePorts) {}

  /**
   * Acknowledges `ids` in calls of at most the page size asked for (one call for a page as asked; a provider that
   * answers with more items than asked would otherwise get an acknowledge past its own limit, every cycle); returns how
   * many were acknowledged, and counts them in the report and the `Acknowledged` metric. A call left to a fresh read
   * leaves its ids and the rest to that read. `retry`: how the run leaves a call that fails for now (see
   * {@link AckRetry}); without it, such a failure stops the run as any does.
   */
  async acknowledge(ids: readonly string[], retry: AckRetry | undefined): Promise<AckOutcome> {
    const { ports } = this;
    let acknowledged = 0;
    try {
      // Moved on by the ids sent: a page read ahead meanwhile may lower the page size, and a call of the new size that
      // started short of the last one's end would acknowledge its ids again (and count them twice).
      for (let from = 0, sent = 0; from < ids.length; from += sent) {
        const call = ids.slice(from, from + ports.pageSize());
        sent = call.length;
        const done = await this.acknowledgeCall(call, retry);
        acknowledged += done.acknowledged;
        if (done.readAgain.length > 0) return { acknowledged, readAgain: [...done.readAgain, ...ids.slice(from + sent)] };
      }
    } finally {
      // Counted as they go: a later call failing does not undo the ones before it.
      ports.report.acknowledged += acknowledged;
      if (acknowledged > 0) ports.metrics.add("Acknowledged", acknowledged, "Count");
    }
    return { acknowledged, readAgain: [] };
  }

  /**
   * Acknowledges `ids` in one call; returns how many were acknowledged. Refused for want of time, the page stays
   * listed: the next cycle finds it unchanged and acknowledges it. When the provider refuses ids by name
   * (`transaction_ids.<i>`, the whole call failing: §4.3 shows no partial success), the others are sent again, and
   * the refused ones stay listed (their events are published; the walk moves past them and each cycle tries them again)
   * instead of stopping every cycle at their page. A provider that names only the first refused id of a call (the spec
   * shows none of this) is asked again until it takes the rest: each refusal leaves out at least one id, so a page
   * costs at most one call more than it has refused ids. The refused ones are logged (ids, codes, the provider's
   * request id) and counted in `AcknowledgeRefused`, which alarms when refusals persist. A refusal that names anything
   * else stops the cycle as any failure does.
   *
   * An attempt that fails for now (429, 5xx, no answer) is not sent again as it was: the ids are returned to be read
   * again (`retry`, see {@link AckRetry}). An acknowledge carries no version (§4.3), so a retry of the old one would mark
   * a change made since the read as synced unseen. A walk waits as the client asks, reads the page again, publishes what
   * changed and acknowledges what it read last; a re-drive leaves them listed, delivered, and the next cycle finds them
   * equal to their snapshots (or publishes what changed) and acknowledges them. After the client's attempt limit in a
   * row, the failure stops the run as before.
   */
  private async acknowledgeCall(ids: readonly string[], retry: AckRetry | undefined): Promise<AckOutcome> {
    const { ports } = this;
    let pending = ids;
    while (pending.length > 0) {
      const batch = pending;
      try {
        await ports.acknowledgeTransactions("acknowledge transactions", [...batch], retry ? { failedBefore: retry.failedBefore } : undefined, failedForNow);
        if (retry) retry.failedBefore = 0;
        break;
      } catch (err) {
        const deferred = retryDeferred(err);
        if (deferred && retry) {
          retry.failedBefore = deferred.attempt;
          const { attempt, delayMs } = deferred;
          if (retry.readsPage) {
            ports.logger.warn("acknowledge failed for now; reading its transactions again before the next one", { ids: batch.length, attempt, delayMs });
            await ports.wait(delayMs);
          } else {
            ports.logger.warn("acknowledge failed for now; left to the next cycle, which lists the transactions again", { ids: batch.length, attempt });
          }
          // A refusal fails the whole call, so nothing of `ids` was acknowledged; the refused ones stay listed.
          return { acknowledged: 0, readAgain: batch };
        }
        const refused = refusedAckIndexes(err, batch.length);
        if (refused === undefined) throw err;
        pending = batch.filter((_, i) => !refused.has(i));
        const refusal = providerRefusal(err);
        ports.report.acknowledgeRefused += refused.size;
        ports.metrics.add("AcknowledgeRefused", refused.size, "Count");
        ports.logger.warn("provider refused to acknowledge some transactions; they stay listed", {
          ids: batch.filter((_, i) => refused.has(i)),
          // Checked here too: any ProviderPort may refuse, not only the client, which already checks what it throws.
          codes: [...new Set((refusal?.errors ?? []).map((e) => logToken(e?.code)))],
          ...(typeof refusal?.requestId === "string" ? { requestId: refusal.requestId } : {}),
        });
      }
    }
    return { acknowledged: pending.length, readAgain: [] };
  }
}
