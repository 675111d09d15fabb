/**
 * The company's net spend by UTC day of `transaction_time` as it is now, for the company summary's
 * `month_to_date_spend` (§4.8 shows none; spec-gaps, Company summary): purchases and cash withdrawals at their
 * fee-inclusive amount, less refunds and reversals at their billing amount, each on its own day. Kept as transactions
 * come, change (control `PATCH`) and are forgotten, so the summary sums a month's days instead of walking the store.
 *
 * Not the spend ledger's figures, which a spend limit needs and the summary does not: the ledger takes no refund off,
 * takes a reversal off its purchase's day (at the purchase's fee-inclusive share) rather than its own, and keeps what
 * a retention bound forgot, where the summary leaves a forgotten transaction out.
 */
import { SPEND_CATEGORIES, amountOf } from "./balances.js";
import { DayTotals } from "./day-totals.js";
import type { TransactionRecord } from "./model.js";

const MONEY_BACK: ReadonlySet<string> = new Set(["refund", "reversal"]);
/** One company's store: one key. */
const COMPANY = "company";

export class NetSpend {
  private readonly totals = new DayTotals();

  /** Counts `tx` as it is now (stored, or changed in place), in place of what it counted before. */
  follow(tx: TransactionRecord): void {
    const cents = SPEND_CATEGORIES.has(tx.transaction_category)
      ? Math.round(amountOf(tx) * 100)
      : MONEY_BACK.has(tx.transaction_category)
        ? -Math.round(tx.billing_amount * 100)
        : 0;
    if (cents === 0) this.totals.remove(tx.id);
    else this.totals.set(tx.id, COMPANY, tx.transaction_time, { cents, count: 1 });
  }

  /** A transaction the store forgot is gone as if never made: it no longer counts. */
  forget(tx: TransactionRecord): void {
    this.totals.remove(tx.id);
  }

  /** Net spend dated from `startMs` to before `endMs`. */
  between(startMs: number, endMs: number): number {
    return this.totals.sum(COMPANY, startMs, endMs).cents / 100;
  }
}
