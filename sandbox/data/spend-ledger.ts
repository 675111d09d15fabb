/**
 * What each card's spend consumed, by UTC day of its `transaction_time` (spec-gaps, Spend limits): a spend limit's
 * window (`consumedOf`) sums the days from its start instead of walking the store's transactions, which at a large
 * store took a purchase hundreds of milliseconds. Totals are whole cents, so adding and taking back stays exact.
 */
import { SPEND_CATEGORIES, amountOf } from "./balances.js";
import type { TransactionRecord } from "./model.js";

const DAY_MS = 86_400_000;

/** What a card's spend consumed: fee-inclusive amount in cents and transactions. */
interface Use {
  cents: number;
  count: number;
}

/** What one transaction adds to its card's day, kept so that a change or a recount takes exactly that back. */
interface Entry extends Use {
  readonly card: string;
  readonly day: number;
}

export class SpendLedger {
  private readonly byCard = new Map<string, Map<number, Use>>();
  private readonly entries = new Map<string, Entry>();

  /** Counts `tx` as it is now (stored, or changed in place), in place of what it counted before. */
  follow(tx: TransactionRecord): void {
    this.takeBack(tx.id);
    const day = Math.floor(Date.parse(tx.transaction_time) / DAY_MS);
    const card = tx.card_external_id;
    if (!SPEND_CATEGORIES.has(tx.transaction_category) || !Number.isFinite(day) || typeof card !== "string") return;
    const entry: Entry = { card, day, cents: Math.round(amountOf(tx) * 100), count: 1 };
    this.entries.set(tx.id, entry);
    this.move(entry, 1);
  }

  /**
   * A transaction the store forgot: what it consumed stays counted (the provider forgets nothing; forgetting must not
   * give limit room back), only its entry goes.
   */
  forget(id: string): void {
    this.entries.delete(id);
  }

  /** What the card's spend dated at or after `startMs` consumed (-Infinity: all of it). */
  consumed(cardId: string, startMs: number): { readonly cents: number; readonly count: number } {
    let cents = 0;
    let count = 0;
    for (const [day, use] of this.byCard.get(cardId) ?? []) {
      if (day * DAY_MS < startMs) continue;
      cents += use.cents;
      count += use.count;
    }
    return { cents, count };
  }

  private takeBack(id: string): void {
    const entry = this.entries.get(id);
    if (entry === undefined) return;
    this.entries.delete(id);
    this.move(entry, -1);
  }

  private move(entry: Entry, sign: 1 | -1): void {
    let days = this.byCard.get(entry.card);
    if (days === undefined) this.byCard.set(entry.card, (days = new Map()));
    const use = days.get(entry.day) ?? { cents: 0, count: 0 };
    use.cents += sign * entry.cents;
    use.count += sign * entry.count;
    if (use.count === 0 && use.cents === 0) days.delete(entry.day);
    else days.set(entry.day, use);
  }
}
