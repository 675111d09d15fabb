/**
 * How new spend moves the balances of the accounts cards draw on (spec-gaps, Balances). A card spends its account's
 * balance (its own, or its pool's) less the pending authorisations of every card on that account (§4.9). Spend made
 * now is authorised against that and held until it clears; money back for spend raises the account. Seeded balances
 * and history stay as seeded, the seeded spend not yet cleared held as new spend is (holdSeeded): only what happens
 * after seeding moves them.
 */
import { round2 } from "../prng.js";
import { accountBalanceOf, poolOf, type CardRecord, type CompanyData, type TransactionRecord } from "./model.js";

type Accounts = Pick<CompanyData, "cards" | "pools">;

/** A pending authorisation of new spend: the card it was made on and the fee-inclusive amount it holds. */
export interface Hold {
  readonly card: CardRecord;
  readonly amount: number;
}

/** Categories of spend a card makes, authorised against its account and held until they clear. */
export const SPEND_CATEGORIES: ReadonlySet<string> = new Set(["purchase", "cash_withdrawal"]);

/** What the account `card` draws on can still spend: its balance less the holds of every card on it (§4.9). */
export function spendableOf(card: CardRecord, data: Accounts): number {
  const held = data.cards.reduce((sum, other) => (other.accountExternalId === card.accountExternalId ? sum + other.pendingAuthorisations : sum), 0);
  return round2(accountBalanceOf(card, data) - held);
}

/** What a transaction takes from or gives its account: its billing amount with its fee (§2.2 rule 1, as listed). */
export function amountOf(tx: TransactionRecord): number {
  return round2(tx.billing_amount + tx.transaction_fee_amount);
}

/** Moves the balance of the account `card` draws on by `by`. */
function move(card: CardRecord, data: Accounts, by: number): void {
  const pool = poolOf(card, data);
  if (pool) pool.balance = round2(pool.balance + by);
  else if (card.poolAccountId === null) card.balance = round2(card.balance + by);
}

/** Room left below the account's allowed_max_balance (§2.3, §2.5: the most it may hold). */
function roomOf(card: CardRecord, data: Accounts): number {
  const pool = poolOf(card, data);
  return Math.max(0, round2((pool ? pool.allowedMaxBalance : card.allowedMaxBalance) - accountBalanceOf(card, data)));
}

/** Money back to the card's account; what it cannot hold goes to the company's funding account. */
function credit(card: CardRecord, data: CompanyData, amount: number): void {
  const kept = Math.min(amount, roomOf(card, data));
  move(card, data, kept);
  data.company.fundingBalance = round2(data.company.fundingBalance + amount - kept);
}

/**
 * The auto top-up of the account `card` draws on: what it adds, from the funding account, once what the account can
 * still spend falls below its threshold (the low-balance amount, shown as `auto_top_up_configuration.threshold`). A
 * card with its own account has one while auto top-up is on; a pool while its `topup_type` is `auto_topup`, adding its
 * low-balance amount (§2.5 gives a pool no top-up amount). Undefined when the account has none.
 */
function autoTopUpOf(card: CardRecord, data: Accounts): { readonly amount: number; readonly threshold: number } | undefined {
  if (card.poolAccountId === null) {
    return card.autoTopUpEnabled && card.autoTopUpAmount > 0 ? { amount: card.autoTopUpAmount, threshold: card.lowBalanceNotificationAmount } : undefined;
  }
  const pool = poolOf(card, data);
  return pool?.topupType === "auto_topup" ? { amount: pool.lowBalanceNotificationAmount, threshold: pool.lowBalanceNotificationAmount } : undefined;
}

/**
 * Tops up the account `card` draws on when spend left it low and it is on auto top-up: its amount, or less so that the
 * account stays within its allowed_max_balance and the funding account above 0 (nothing when neither has room).
 */
function topUpIfLow(card: CardRecord, data: CompanyData): void {
  const auto = autoTopUpOf(card, data);
  if (auto === undefined || spendableOf(card, data) >= auto.threshold) return;
  const amount = round2(Math.min(auto.amount, roomOf(card, data), data.company.fundingBalance));
  if (amount <= 0) return;
  move(card, data, amount);
  data.company.fundingBalance = round2(data.company.fundingBalance - amount);
}

/** Money paid into the company's funding account (control surface: a bank transfer made outside the API). */
export function deposit(data: CompanyData, amount: number): void {
  data.company.fundingBalance = round2(data.company.fundingBalance + amount);
}

/** Holds `amount` of transaction `transactionId` on `card` until it clears, is reversed or lapses. */
function hold(data: CompanyData, card: CardRecord, transactionId: string, amount: number): void {
  card.pendingAuthorisations = round2(card.pendingAuthorisations + amount);
  data.holds.set(transactionId, { card, amount });
}

/** Takes `part` of a hold (all of it when undefined) off its card; what it took, or undefined when there was none. */
function release(data: CompanyData, transactionId: string, part?: number): Hold | undefined {
  const hold = data.holds.get(transactionId);
  if (hold === undefined) return undefined;
  const amount = part === undefined ? hold.amount : Math.min(part, hold.amount);
  if (amount < hold.amount) data.holds.set(transactionId, { card: hold.card, amount: round2(hold.amount - amount) });
  else data.holds.delete(transactionId);
  hold.card.pendingAuthorisations = Math.max(0, round2(hold.card.pendingAuthorisations - amount));
  return { card: hold.card, amount };
}

/**
 * What of its purchase's hold a reversal releases: the fee-inclusive purchase in the share of it the reversal reverses
 * (all of it when nothing was given back before; after a partial refund only the rest, the refunded part staying held
 * until the purchase clears, as the refund already gave it back).
 */
function reversedShare(reversal: TransactionRecord, purchase: TransactionRecord): number {
  const whole = Number(purchase.transaction_amount);
  return whole > 0 ? round2((amountOf(purchase) * Number(reversal.transaction_amount)) / whole) : 0;
}

/**
 * A transaction made now moves its card's account: spend uncleared is held, spend cleared falls on the balance (either
 * may set off its auto top-up); a reversal releases its share of what its purchase holds (a purchase no longer held
 * gets its amount back, as a refund does); a refund raises the balance. Other categories move no balance.
 */
export function followNew(data: CompanyData, tx: TransactionRecord): void {
  const card = data.cards.find((c) => c.id === tx.card_external_id);
  if (card === undefined) return;
  const category = tx.transaction_category;
  if (SPEND_CATEGORIES.has(category)) {
    if (tx.clearing_status === "cleared") move(card, data, -amountOf(tx));
    else hold(data, card, tx.id, amountOf(tx));
    topUpIfLow(card, data);
  } else if (category === "reversal") {
    const purchase = tx.parent_id === null ? undefined : data.transactions.get(tx.parent_id);
    if (purchase === undefined || release(data, purchase.id, reversedShare(tx, purchase)) === undefined) credit(card, data, amountOf(tx));
  } else if (category === "refund") {
    credit(card, data, amountOf(tx));
  }
}

/**
 * The holds of the seeded history, which moves no balance: each purchase or cash withdrawal not yet cleared holds its
 * fee-inclusive amount on its card, as new spend does, or what its account can still spend when that is less (seeded
 * balances are figures, not sums of the history), and a reversal of one releases its share. So every seeded pending
 * authorisation is a transaction's, which its clearing, or a retention bound forgetting it, releases.
 */
export function holdSeeded(data: CompanyData): void {
  for (const card of data.cards) card.pendingAuthorisations = 0;
  data.holds.clear();
  for (const tx of data.transactions.all()) {
    const category = tx.transaction_category;
    if (SPEND_CATEGORIES.has(category) && tx.clearing_status !== "cleared") {
      const card = data.cards.find((c) => c.id === tx.card_external_id);
      const amount = card === undefined ? 0 : Math.min(amountOf(tx), spendableOf(card, data));
      if (card !== undefined && amount > 0) hold(data, card, tx.id, amount);
    } else if (category === "reversal" && tx.parent_id !== null) {
      const purchase = data.transactions.get(tx.parent_id);
      if (purchase !== undefined) release(data, purchase.id, reversedShare(tx, purchase));
    }
  }
}

/**
 * A held transaction that cleared: its hold goes and its account's balance falls by what cleared, its `clearing_amount`
 * with its `clearing_fee` (a clearing may take more or less than was authorised), or by what it held when the clearing
 * names no amount (`clearing_amount` left at 0). That leaves room below its allowed_max_balance for an auto top-up a
 * full account could not take.
 */
export function followCleared(data: CompanyData, tx: TransactionRecord): void {
  const hold = release(data, tx.id);
  if (hold === undefined) return;
  move(hold.card, data, tx.clearing_amount > 0 ? -round2(tx.clearing_amount + tx.clearing_fee) : -hold.amount);
  topUpIfLow(hold.card, data);
}

/**
 * Forgets the holds of transactions the company no longer keeps: an authorisation never cleared lapses, so its amount
 * leaves its card's pending authorisations (kept there, it would shrink what the card can spend for good).
 */
export function forgetHolds(data: CompanyData): void {
  for (const id of data.holds.keys()) if (data.transactions.get(id) === undefined) release(data, id);
}
