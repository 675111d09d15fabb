/**
 * What each card's spend consumed, by UTC day of its `transaction_time` (spec-gaps, Spend limits): a spend limit's
 * window (`consumedOf`) sums the days from its start instead of walking the store's transactions, which at a large
 * store took a purchase hundreds of milliseconds. A reversal takes its share of its purchase off the purchase's day
 * (a reversed authorisation was never spent); a refund takes nothing.
 */
import { SPEND_CATEGORIES, amountOf, shareOf } from "./balances.js";
import { DayTotals } from "./day-totals.js";
import type { TransactionRecord } from "./model.js";

/** The store's lookups a purchase's reversals are found with. */
export interface Family {
  getByQashioId(qashioId: string): TransactionRecord | undefined;
  childrenOf(qashioId: string): TransactionRecord[];
  /** What the reversals of a purchase the store forgot reversed, while the purchase is held. */
  forgottenReversalsOf(qashioId: string): number;
}

export class SpendLedger {
  /** By card. */
  private readonly totals = new DayTotals();

  /**
   * Counts `tx` as it is now (stored, or changed in place), in place of what it counted before; a child (reversal or
   * refund) recounts its purchase, whose reversals it may have changed.
   */
  follow(tx: TransactionRecord, family: Family): void {
    this.count(tx, family);
    const parent = tx.parent_qashio_id === null ? undefined : family.getByQashioId(tx.parent_qashio_id);
    if (parent !== undefined) this.count(parent, family);
  }

  /**
   * Spend counts its fee-inclusive amount less what its reversals reversed of it, and as a transaction until they
   * reversed all of it (a reversal after a partial refund reverses only the rest: the refunded part stays spent).
   */
  private count(tx: TransactionRecord, family: Family): void {
    const card = tx.card_external_id;
    if (!SPEND_CATEGORIES.has(tx.transaction_category) || typeof card !== "string") {
      this.totals.remove(tx.id);
      return;
    }
    const reversals = family.childrenOf(tx.qashio_id).filter((child) => child.transaction_category === "reversal");
    const reversed = reversals.reduce((sum, r) => sum + Number(r.transaction_amount), family.forgottenReversalsOf(tx.qashio_id));
    const whole = Math.round(amountOf(tx) * 100);
    const cents = whole - Math.min(whole, Math.round(shareOf(tx, reversed) * 100));
    // Compared in cents: summed as floats, reversals of all of it in parts can fall short of it (0.12 + 0.05 < 0.17).
    const reversedCents = Math.round(reversed * 100);
    this.totals.set(tx.id, card, tx.transaction_time, { cents, count: reversedCents > 0 && reversedCents >= Math.round(Number(tx.transaction_amount) * 100) ? 0 : 1 });
  }

  /**
   * A transaction the store forgot: what it consumed stays counted (the provider forgets nothing; forgetting must not
   * give limit room back), only its entry goes.
   */
  forget(tx: TransactionRecord): void {
    this.totals.keep(tx.id);
  }

  /** What the card's spend dated from `startMs` (-Infinity: the first) to before `endMs` consumed. */
  consumed(cardId: string, startMs: number, endMs = Infinity): { readonly cents: number; readonly count: number } {
    return this.totals.sum(cardId, startMs, endMs);
  }
}
