/**
 * How new spend moves the balances of the accounts cards draw on (spec-gaps, Balances). A card spends its account's
 * balance (its own, or its pool's) less the pending authorisations of every card on that account (§4.9). Spend made
 * now is authorised against that and held until it clears; money back for spend raises the account. Seeded balances
 * and history stay as seeded, the seeded spend not yet cleared held as new spend is (holdSeeded): only what happens
 * after seeding moves them.
 */
import { round2 } from "../prng.js";
import { accountBalanceOf, poolOf, type CardRecord, type CompanyData, type TransactionRecord } from "./model.js";
import { calendarWindow, windowIndex } from "./periods.js";

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

/** Approval statuses (§2.2) that approve a transaction. */
const APPROVALS: ReadonlySet<string> = new Set(["approved", "admin_approved"]);

/** Whether the card's own account is on auto top-up (a pool card's account is its pool's, topped up as the pool is). */
function ownAutoTopUp(card: CardRecord): boolean {
  return card.poolAccountId === null && card.autoTopUpEnabled && card.autoTopUpAmount > 0;
}

/**
 * The `velocity_period` the card's own account is topped up per (and when low), as its settings say: on auto top-up and
 * not loading on transaction approval instead. Null for a pool card, whose account is its pool's (§2.5 gives a pool
 * no period), and for a card off auto top-up or loading on approval.
 */
export function topUpPeriodOf(card: CardRecord): string | null {
  return ownAutoTopUp(card) && !card.autoLoadOnTransactionApproval ? card.velocityPeriod : null;
}

/** Whether the card's own account is topped up per period now: its settings say so and the card is Active (one that cannot spend gets no top-up, spec-gaps). */
function topsUpByPeriod(card: CardRecord): boolean {
  return card.status === "Active" && topUpPeriodOf(card) !== null;
}

/** What tops up the account a card draws on, as the ERP card read's `auto_top_up_configuration` shows it. */
export interface TopUpSetting {
  readonly trigger: "manual" | "transaction_approval" | "balance_below_threshold";
  /** What a top-up adds, from the funding account. */
  readonly amount: number;
  /** The low-balance amount below which what the account can still spend sets off a `balance_below_threshold` top-up. */
  readonly threshold: number;
}

/**
 * The top-up of the account `card` draws on. A card with its own account follows its settings: `manual` while auto
 * top-up is off, `transaction_approval` while it loads on approval, else `balance_below_threshold`, adding its
 * `auto_top_up_amount`. A pool card's account is its pool's, so its pool's `topup_type` says (`auto_topup`:
 * `balance_below_threshold`, else `manual`), adding the pool's low-balance amount (§2.5 gives a pool no top-up amount).
 */
export function topUpSettingOf(card: CardRecord, data: Pick<CompanyData, "pools">): TopUpSetting {
  if (card.poolAccountId === null) {
    const trigger = !card.autoTopUpEnabled ? "manual" : card.autoLoadOnTransactionApproval ? "transaction_approval" : "balance_below_threshold";
    return { amount: card.autoTopUpAmount, trigger, threshold: card.lowBalanceNotificationAmount };
  }
  const pool = poolOf(card, data);
  const low = pool?.lowBalanceNotificationAmount ?? 0;
  return { amount: low, trigger: pool?.topupType === "auto_topup" ? "balance_below_threshold" : "manual", threshold: low };
}

/**
 * The auto top-up of the account `card` draws on when low: what it adds, from the funding account, once what the
 * account can still spend falls below its threshold. Undefined when the account has none.
 */
function autoTopUpOf(card: CardRecord, data: Accounts): TopUpSetting | undefined {
  const setting = topUpSettingOf(card, data);
  return setting.trigger === "balance_below_threshold" ? setting : undefined;
}

/**
 * Tops up the account `card` draws on from the funding account by `amount`, or less so that the account stays within
 * its allowed_max_balance (a card's `card_usage_type_amount`, §4.9) and the funding account above 0 (nothing when
 * neither has room).
 */
function topUp(card: CardRecord, data: CompanyData, amount: number): void {
  const added = round2(Math.min(amount, roomOf(card, data), data.company.fundingBalance));
  if (added <= 0) return;
  move(card, data, added);
  data.company.fundingBalance = round2(data.company.fundingBalance - added);
}

/** Tops up the account `card` draws on by its auto top-up when spend left it low. */
function topUpIfLow(card: CardRecord, data: CompanyData): void {
  const auto = autoTopUpOf(card, data);
  if (auto !== undefined && spendableOf(card, data) < auto.threshold) topUp(card, data, auto.amount);
}

/** When a top-up per `period` (a §4.9 `velocity_period`) falls due after `ms`: the start of the next calendar period. */
export function nextTopUpAfter(period: string, ms: number): number {
  return calendarWindow(period, ms)?.next ?? Infinity;
}

/**
 * The top-ups per `velocity_period` (§4.9 "top-up period"; `auto_top_up_amount` "added automatically on each top-up")
 * due by `nowMs`: a card that {@link topsUpByPeriod} gets its amount once for each period started since the last, within
 * topUp's bounds. A period that started while it could not is passed over, never made up later.
 */
export function topUpByPeriod(data: CompanyData, nowMs: number): void {
  for (const card of data.cards) {
    if (card.nextTopUpMs > nowMs) continue;
    // Counted, not walked: a clock moved on by millennia answers at once (nextTopUpMs is the start of a window).
    const periods = (windowIndex(card.velocityPeriod, nowMs) ?? 0) - (windowIndex(card.velocityPeriod, card.nextTopUpMs) ?? 0) + 1;
    card.nextTopUpMs = nextTopUpAfter(card.velocityPeriod, nowMs);
    if (topsUpByPeriod(card)) topUp(card, data, card.autoTopUpAmount * periods);
  }
}

/**
 * A transaction whose `approval_status` moved from `before` to an approval (from none: made approved): spend of an
 * Active card that loads on transaction approval (§2.4 `auto_load_on_transaction_approval`) tops its account up by its
 * `auto_top_up_amount`, once per transaction (approved anew after a PATCH took its approval away, it loaded already).
 */
export function followApproved(data: CompanyData, tx: TransactionRecord, before: unknown): void {
  if (APPROVALS.has(String(before)) || !APPROVALS.has(String(tx.approval_status)) || !SPEND_CATEGORIES.has(tx.transaction_category)) return;
  if (data.loadedOnApproval.has(tx.id)) return;
  const card = data.cards.find((c) => c.id === tx.card_external_id);
  if (card === undefined || card.status !== "Active" || !ownAutoTopUp(card) || !card.autoLoadOnTransactionApproval) return;
  data.loadedOnApproval.add(tx.id);
  topUp(card, data, card.autoTopUpAmount);
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
function release(data: Pick<CompanyData, "holds">, transactionId: string, part?: number): Hold | undefined {
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
  return shareOf(purchase, Number(reversal.transaction_amount));
}

/** The fee-inclusive amount of `purchase` that `amount` of its `transaction_amount` stands for. */
export function shareOf(purchase: TransactionRecord, amount: number): number {
  const whole = Number(purchase.transaction_amount);
  return whole > 0 ? round2((amountOf(purchase) * amount) / whole) : 0;
}

/**
 * A transaction made now moves its card's account: spend uncleared is held, spend cleared falls on the balance (either
 * may set off its auto top-up); a reversal releases its share of what its purchase holds (a purchase no longer held
 * gets its amount back, as a refund does); a refund raises the balance. Other categories move no balance. Spend made
 * approved loads a card that loads on approval, as an approval later does.
 */
export function followNew(data: CompanyData, tx: TransactionRecord): void {
  const card = data.cards.find((c) => c.id === tx.card_external_id);
  if (card === undefined) return;
  const category = tx.transaction_category;
  if (SPEND_CATEGORIES.has(category)) {
    if (tx.clearing_status === "cleared") move(card, data, -amountOf(tx));
    else hold(data, card, tx.id, amountOf(tx));
    topUpIfLow(card, data);
    followApproved(data, tx, undefined);
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
 * Forgets what balances keep of `forgotten`, transactions the company no longer keeps: an authorisation never cleared
 * lapses, so its amount leaves its card's pending authorisations (kept there, it would shrink what the card can spend
 * for good); the mark of a load on its approval goes (no PATCH reaches it any more). O(forgotten): balances keep
 * nothing of a transaction but what it was stored with, so only these can have gone.
 */
export function forgetGone(data: Pick<CompanyData, "holds" | "loadedOnApproval">, forgotten: readonly TransactionRecord[]): void {
  for (const { id } of forgotten) {
    release(data, id);
    data.loadedOnApproval.delete(id);
  }
}
