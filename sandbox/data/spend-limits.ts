/**
 * A card's spend limit (§4.9 `update_velocity_limit`): while `spend_limit_active`, the card's spend in each
 * `spend_limit_period` window takes at most `spend_limit_max_amount` in at most `spend_limit_frequency` transactions
 * (0: no count). What the window's spend consumed is kept by the store's ledger as transactions come, change and go
 * (spec-gaps, Spend limits).
 */
import { round2 } from "../prng.js";
import type { CardRecord, CompanyData, SpendLimit } from "./model.js";
import { calendarWindow } from "./periods.js";

/** What a card's spend in its limit's current window took: fee-inclusive amount (card currency) and transactions. */
export interface Consumption {
  readonly amount: number;
  readonly count: number;
}

const NONE: Consumption = { amount: 0, count: 0 };

/**
 * The `period` window holding `nowMs`, from `start` to before `next` (epoch ms): calendar windows in UTC, a week from
 * Monday; all time for `ALL_TIME`; undefined for `PER_TRANSACTION`, whose every transaction is a window of its own.
 */
function windowOf(period: string, nowMs: number): { readonly start: number; readonly next: number } | undefined {
  if (period === "PER_TRANSACTION") return undefined;
  return calendarWindow(period, nowMs) ?? { start: -Infinity, next: Infinity };
}

/** Start (epoch ms) of the `period` window holding `nowMs` (`windowOf`). */
export function windowStart(period: string, nowMs: number): number | undefined {
  return windowOf(period, nowMs)?.start;
}

/**
 * What `card`'s purchases and cash withdrawals dated (as they are now) in its limit's window holding `nowMs` consumed,
 * forgotten ones included, less what reversals reversed (refunds give none back): read from the store's ledger, not
 * a walk of its transactions.
 */
export function consumedOf(card: CardRecord, data: Pick<CompanyData, "transactions">, nowMs: number): Consumption {
  const window = windowOf(card.spendLimit.period, nowMs);
  if (window === undefined) return NONE;
  // Spend dated after the window (a control PATCH may date it so) is its own window's, not this one's.
  const { cents, count } = data.transactions.spend.consumed(card.id, window.start, window.next);
  return { amount: round2(cents / 100), count };
}

/**
 * Whether the limit's count (`spend_limit_frequency`) stops spend: while the limit is enforced, a count is set and
 * there is a window to count in (`PER_TRANSACTION` bounds the amount alone). What the views show as the count's flag.
 */
export function enforcesCount(limit: SpendLimit): boolean {
  return limit.active && limit.frequency > 0 && windowStart(limit.period, 0) !== undefined;
}

/**
 * The most spend made now on `card` may take (fee included) within its limit: Infinity while the limit is not
 * enforced, 0 once its window's count is used up.
 */
export function limitRoomOf(card: CardRecord, data: Pick<CompanyData, "transactions">, nowMs: number): number {
  const limit = card.spendLimit;
  if (!limit.active) return Infinity;
  const used = consumedOf(card, data, nowMs);
  if (enforcesCount(limit) && used.count >= limit.frequency) return 0;
  return Math.max(0, round2(limit.maxAmount - used.amount));
}
