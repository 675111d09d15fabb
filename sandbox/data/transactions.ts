/**
 * Builds realistic transactions for one company: merchants, MCCs, FX, VAT, fees,
 * segments, line items, receipts, and refunds/reversals naming their purchase.
 */
import type { Prng} from "../prng.js";
import { round2 } from "../prng.js";
import { TRANSACTION_CATEGORIES } from "../../shared/qashio/schemas/enums.js";
import { SPEND_CATEGORIES, spendableOf } from "./balances.js";
import { MCC_DESCRIPTIONS, MERCHANTS, convert, type MerchantProfile } from "./catalog.js";
import { homeOf } from "./home-country.js";
import { limitRoomOf, windowStart } from "./spend-limits.js";
import { allowsMerchant } from "./restrictions.js";
import { poolOf, type CardRecord, type ClientSyncStatus, type CompanyData, type MasterRecord, type TransactionRecord, type UserProfile } from "./model.js";

const DAY_MS = 86_400_000;

/** Refunds and reversals without a named parent follow one of this many most recent purchases. */
const RECENT_PURCHASES = 20;

/** Categories the factory can build: every one the spec lists (§2.2). */
export const BUILDABLE_CATEGORIES = TRANSACTION_CATEGORIES;
export type BuildableCategory = (typeof BUILDABLE_CATEGORIES)[number];

const CATEGORY_WEIGHTS: readonly (readonly [BuildableCategory, number])[] = [
  ["purchase", 70],
  ["refund", 7],
  ["reversal", 5],
  ["card_loading", 6],
  ["card_unloading", 2],
  ["cash_withdrawal", 3],
  ["cashback", 2],
  ["deposit", 2],
  ["account_transfer", 3],
];

/** MCC of an ATM (`mcc_code` of a cash withdrawal), which a card's category limits must allow for one made now. */
const ATM_MCC = "6011";

/** Least a card's account must be able to pay, fee included, for spend made now to go on it (billing currency). */
const LEAST_SPEND = 1;

/** The fee on a billing amount (`fee_charges`): a cash withdrawal 2% + 10, a foreign purchase 2%, anything else none. */
function feeTerms(category: BuildableCategory, foreign: boolean): { readonly rate: number; readonly fixed: number } {
  if (category === "cash_withdrawal") return { rate: 0.02, fixed: 10 };
  return category === "purchase" && foreign ? { rate: 0.02, fixed: 0 } : { rate: 0, fixed: 0 };
}

function feeOf(category: BuildableCategory, billingAmount: number, foreign: boolean): number {
  const { rate, fixed } = feeTerms(category, foreign);
  return rate === 0 && fixed === 0 ? 0 : round2(billingAmount * rate + fixed);
}

/** The most spend made now on `card` may take, fee included: what its account can still spend, within its spend limit. */
function roomOf(card: CardRecord, data: CompanyData, nowMs: number): number {
  return Math.min(spendableOf(card, data), limitRoomOf(card, data, nowMs));
}

/**
 * The most seeded spend at `timeMs` may take on `card`: what its enforced spend limit still allows when `timeMs` lies in
 * the limit's current window (the one holding sandbox now, `nowMs`), else Infinity. Seeded balances are figures, so
 * only the limit bounds it (spec-gaps, Spend limits).
 */
function seededRoomOf(card: CardRecord, data: CompanyData, timeMs: number, nowMs: number): number {
  const start = windowStart(card.spendLimit.period, nowMs);
  return start !== undefined && timeMs < start ? Infinity : limitRoomOf(card, data, nowMs);
}

/** Whether `room` takes the least spend of `category`, its fee included. */
function takesLeast(room: number, category: BuildableCategory): boolean {
  const { rate, fixed } = feeTerms(category, true);
  return room >= round2(LEAST_SPEND * (1 + rate) + fixed);
}

/**
 * Whether spend of `category` made now (`nowMs`) can go on `card`: it can take the least, its fee included (`roomOf`),
 * and its country and category limits allow it somewhere (`allowsSpendNow`). The one rule spend made now and the demo
 * pick cards by.
 */
export function canSpendNow(card: CardRecord, data: CompanyData, category: BuildableCategory, nowMs: number): boolean {
  return allowsSpendNow(card, data, category) && takesLeast(roomOf(card, data, nowMs), category);
}

/**
 * Whether `card`'s country and category limits let spend of `category` made now go on it: a cash withdrawal at an ATM
 * in the company's country, anything else at some merchant (`merchantsFor`).
 */
function allowsSpendNow(card: CardRecord, data: CompanyData, category: BuildableCategory): boolean {
  if (category === "cash_withdrawal") return allowsMerchant(card, data.company.country, ATM_MCC);
  return merchantsFor(card).length > 0;
}

/** The merchants `card`'s limits allow a purchase at; every one when it has none active, in the catalogue's order. */
function merchantsFor(card: CardRecord | undefined): readonly MerchantProfile[] {
  return card === undefined || (!card.countryLimitsActive && !card.categoryLimitsActive) ? MERCHANTS : MERCHANTS.filter((m) => allowsMerchant(card, m.country, m.mcc));
}

/** Categories forced early in a seeded history so every kind is present. */
const SPECIAL_SEQUENCE: readonly BuildableCategory[] = [
  "card_loading",
  "refund",
  "cash_withdrawal",
  "reversal",
  "card_unloading",
  "account_transfer",
  "refund",
  "cashback",
  "deposit",
];

const MEMOS: readonly string[] = [
  "Quarterly licence renewal",
  "Client workshop in Riyadh",
  "Team offsite",
  "Replacement for damaged equipment",
  "Conference travel",
  "Monthly subscription",
  "Campaign for product launch",
  "Site visit",
];

export interface CreateOptions {
  readonly category?: BuildableCategory;
  readonly parent?: TransactionRecord;
  /** Sandbox time the transaction happened (epoch ms). */
  readonly timeMs: number;
  /** `created_at` (ISO); newest-first order is creation order. */
  readonly createdAt: string;
  readonly syncStatus: ClientSyncStatus;
  /** Sandbox "now" (epoch ms): nothing is cleared in the future. */
  readonly nowMs: number;
  /** Spend happening now (not seeded history): only a card whose status is `Active` now makes it. */
  readonly live?: boolean;
}

/**
 * What is left of a purchase to give back (its `transaction_amount`, in its currency): what its refunds and reversals
 * so far have not, those a retention bound forgot included. A provider refuses money back beyond what was spent
 * (spec-gaps, Balances).
 */
export function leftToReturn(purchase: TransactionRecord, data: Pick<CompanyData, "transactions">): number {
  const held = data.transactions.childrenOf(purchase.qashio_id).reduce((sum, child) => sum + Number(child.transaction_amount), 0);
  const returned = held + data.transactions.forgottenReturnsOf(purchase.qashio_id);
  return Math.max(0, round2(Number(purchase.transaction_amount) - returned));
}

export class TransactionFactory {
  private readonly supplierByKey: Map<string, MasterRecord>;
  private readonly accountByNumber: Map<string, MasterRecord>;
  private readonly taxByCode: Map<string, MasterRecord>;
  private readonly spendCards: CardRecord[];
  /** The {@link RECENT_PURCHASES} most recent purchases, oldest first: those a refund may follow; none older is kept. */
  private readonly purchases: TransactionRecord[] = [];
  private readonly refCache = new Map<string, Readonly<Record<string, unknown>>>();
  /** Card activation and termination stamps, parsed: a seeded history asks for them for each of its transactions. */
  private readonly stampTimes = new Map<string, number>();
  private readonly approvedBy: Readonly<Record<string, unknown>>;
  private readonly segmentsByLabel: Map<string, CompanyData["segments"][number][]>;
  /** Sequence behind `qashio_id`, so ids stay unique even for a batch built before it is stored. */
  private lastSeq: number;

  constructor(
    private readonly data: CompanyData,
    private readonly prng: Prng,
    private readonly ordinal: number,
    private readonly approver: UserProfile,
  ) {
    this.supplierByKey = new Map(data.suppliers.map((s) => [String(s.extra.key), s]));
    this.accountByNumber = new Map(data.chartOfAccounts.map((a) => [String(a.extra.account_number), a]));
    this.taxByCode = new Map(data.taxRates.map((t) => [String(t.extra.tax_rate_code), t]));
    this.spendCards = data.cards.filter((c) => c.status === "Active" || c.status === "Suspended" || c.status === "Terminated");
    this.lastSeq = data.transactions.size;
    this.approvedBy = Object.freeze({ user_external_id: approver.externalId, name: `${approver.firstName} ${approver.lastName}` });
    this.segmentsByLabel = new Map();
    for (const segment of data.segments) {
      const list = this.segmentsByLabel.get(segment.label);
      if (list) list.push(segment);
      else this.segmentsByLabel.set(segment.label, [segment]);
    }
    for (const tx of data.transactions.all()) if (tx.transaction_category === "purchase") this.rememberPurchase(tx);
  }

  /**
   * Fills the store with `count` past transactions, oldest first. `mixed`: the older
   * 40% were acknowledged (some changed since: `outdated`), the rest `not_synced`;
   * `backlog`: every one `not_synced`.
   */
  seedHistory(count: number, nowMs: number, mode: "mixed" | "backlog"): void {
    const spanMs = (count > 1000 ? 365 : 60) * DAY_MS;
    const start = nowMs - spanMs;
    const step = (spanMs - 3_600_000) / Math.max(1, count);
    const syncedCount = mode === "mixed" ? Math.floor(count * 0.4) : 0;
    const newest = this.data.transactions.newest();
    let lastCreatedMs = newest ? Date.parse(newest.created_at) : -Infinity;
    for (let i = 0; i < count; i++) {
      const timeMs = Math.floor(start + i * step + this.prng.next() * step * 0.9);
      const special = mode === "mixed" && i >= 3 && (i - 3) % 3 === 0 ? SPECIAL_SEQUENCE[(i - 3) / 3] : undefined;
      const syncStatus: ClientSyncStatus = i < syncedCount ? (i % 5 === 2 ? "outdated" : "synced") : "not_synced";
      // Lists are newest first by creation order: at big backlogs the jitter can exceed the gap, so keep created_at rising.
      lastCreatedMs = Math.max(timeMs + this.prng.int(1_000, 90_000), lastCreatedMs + 1);
      const tx = this.create({
        category: special,
        timeMs,
        createdAt: new Date(lastCreatedMs).toISOString(),
        syncStatus,
        nowMs,
      });
      // Spend made now can find no card to pay for it, a cash withdrawal no card allowing ATM use.
      if (tx !== undefined) this.data.transactions.add(tx);
    }
  }

  /**
   * Builds one transaction (not stored); undefined for spend made now that no card's account can pay for, for a cash
   * withdrawal no card allowing ATM use can make, and for a
   * refund or reversal of a purchase given back in full (spec-gaps, Balances).
   */
  create(options: CreateOptions): TransactionRecord | undefined {
    let category: BuildableCategory = options.category ?? this.prng.weighted(CATEGORY_WEIGHTS);
    let parent = options.parent;
    if ((category === "refund" || category === "reversal") && parent === undefined) {
      parent = this.recentPurchase();
      if (parent === undefined) category = "purchase";
    }
    if (parent !== undefined && category !== "refund" && category !== "reversal") category = "refund";
    // A seeded history keeps its size: a cash withdrawal no card allowing ATM use could have made then is a purchase,
    // and a purchase no card active then had spend limit room for is a card loading. Neither check draws.
    if (category === "cash_withdrawal" && options.live !== true && !this.spendCards.some((card) => card.atmWithdrawalAllowed && this.canSeedSpend(card, category, options))) {
      category = "purchase";
    }
    if (category === "purchase" && parent === undefined && options.live !== true) {
      const activeThen = this.spendCards.filter((card) => this.canSpendAt(card, options.timeMs));
      if (activeThen.length > 0 && !activeThen.some((card) => this.canSeedSpend(card, "purchase", options))) category = "card_loading";
    }
    const tx = this.build(category, parent, options);
    if (tx !== undefined && category === "purchase") this.rememberPurchase(tx);
    return tx;
  }

  private rememberPurchase(tx: TransactionRecord): void {
    this.purchases.push(tx);
    if (this.purchases.length > RECENT_PURCHASES) this.purchases.shift();
  }

  private recentPurchase(): TransactionRecord | undefined {
    // A sandbox with a retention bound may have forgotten one: a refund must name a purchase it still holds, and one
    // not yet given back in full.
    const held = this.purchases.filter((tx) => this.data.transactions.get(tx.id) === tx && leftToReturn(tx, this.data) > 0);
    if (held.length === 0) return undefined;
    // Refunds follow recent purchases more often than old ones.
    return held[held.length - 1 - this.prng.int(0, held.length - 1)];
  }

  private build(category: BuildableCategory, parent: TransactionRecord | undefined, o: CreateOptions): TransactionRecord | undefined {
    const p = this.prng;
    const company = this.data.company;
    const billingCurrency = company.currency;
    const card = parent ? (this.data.cards.find((c) => c.id === parent.card_external_id) ?? p.pick(this.spendCards)) : this.cardFor(category, o.timeMs, o.live === true, o.nowMs);
    if (card === undefined) return undefined;
    const holder = card.holder;
    const merchant = this.merchantFor(category, parent, o.live === true ? card : undefined);
    let transactionAmount: number;
    let transactionCurrency: string;
    if (parent) {
      transactionCurrency = String(parent.transaction_currency);
      const parentAmount = Number(parent.transaction_amount);
      const left = leftToReturn(parent, this.data);
      if (left <= 0) return undefined;
      // A reversal reverses what is left of the purchase; a refund gives back some of it, never more than is left.
      transactionAmount = Math.min(left, category === "reversal" || p.chance(0.5) ? parentAmount : round2(parentAmount * p.int(20, 90) / 100));
    } else if (merchant) {
      transactionCurrency = merchant.currency;
      transactionAmount = p.money(merchant.min, merchant.max);
    } else {
      transactionCurrency = billingCurrency;
      transactionAmount = category === "cashback" ? p.money(5, 250) : category === "cash_withdrawal" ? p.pick([200, 500, 1000, 1500]) : p.pick([1_000, 2_500, 5_000, 10_000]);
    }
    const foreign = transactionCurrency !== billingCurrency;
    // Spend made now is authorised against what its account can still spend and its spend limit still allows (§4.9),
    // seeded spend in a limit's current window against what the limit still allowed then: never more.
    if (parent === undefined && SPEND_CATEGORIES.has(category)) {
      const room = o.live === true ? roomOf(card, this.data, o.nowMs) : seededRoomOf(card, this.data, o.timeMs, o.nowMs);
      transactionAmount = this.within(transactionAmount, transactionCurrency, category, room);
    }
    const billingAmount = convert(transactionAmount, transactionCurrency, billingCurrency);
    const fee = feeOf(category, billingAmount, foreign);
    const clearedMs = o.timeMs + p.int(1, 2) * DAY_MS + p.int(0, 6 * 3_600_000);
    const cleared = clearedMs <= o.nowMs;
    const supplier = merchant ? this.supplierByKey.get(merchant.supplier) : undefined;
    const account = merchant
      ? this.accountByNumber.get(merchant.account)
      : this.accountByNumber.get(category === "cashback" || category === "cash_withdrawal" ? "6900" : "1150");
    const tax = this.taxFor(merchant, category);
    const taxRate = Number(tax?.extra.total_tax_rate ?? 0);
    const vat = tax && tax.extra.tax_rate_code !== "RC" ? round2((billingAmount * taxRate) / (100 + taxRate)) : 0;
    const credit = category === "refund" || category === "reversal" || category === "card_loading" || category === "deposit" || category === "cashback";
    const pool = poolOf(card, this.data);
    const approval = this.approvalFor(o.syncStatus);
    const erpSync = o.syncStatus === "not_synced" ? p.weighted<string>([["draft", 4], ["pending", 3], ["validated", 3], ["not_validated", 1], ["failed", 1]]) : "success";
    const segments = this.segmentsFor();
    const createdMs = Date.parse(o.createdAt);
    const updatedMs = Math.max(createdMs, cleared ? clearedMs : createdMs) + (o.syncStatus === "outdated" ? p.int(2, 6) * DAY_MS : 0);
    const updatedAt = new Date(Math.min(updatedMs, Math.max(o.nowMs, createdMs))).toISOString();
    const description = this.describe(category, merchant, parent, card);
    const tx: TransactionRecord = {
      id: p.uuid(),
      qashio_id: `CT${this.ordinal}${String(++this.lastSeq).padStart(9, "0")}`,
      parent_id: parent ? parent.id : null,
      parent_qashio_id: parent ? parent.qashio_id : null,
      company_id: company.id,
      merchant_name: merchant ? merchant.name : this.pseudoMerchant(category),
      merchant_city: merchant ? merchant.city : category === "cash_withdrawal" ? homeOf(company.country).atm.city : null,
      merchant_country: merchant ? merchant.country : category === "cash_withdrawal" ? company.country : null,
      mcc_code: merchant ? merchant.mcc : category === "cash_withdrawal" ? ATM_MCC : null,
      mcc_description: merchant ? (MCC_DESCRIPTIONS[merchant.mcc] ?? null) : category === "cash_withdrawal" ? (MCC_DESCRIPTIONS[ATM_MCC] ?? null) : null,
      transaction_amount: transactionAmount,
      transaction_currency: transactionCurrency,
      billing_amount: billingAmount,
      billing_currency: billingCurrency,
      clearing_amount: cleared ? billingAmount : 0,
      vat_amount: vat,
      fee_charges: fee,
      transaction_time: new Date(o.timeMs).toISOString(),
      cleared_at: cleared ? new Date(clearedMs).toISOString() : null,
      created_at: o.createdAt,
      updated_at: updatedAt,
      modified_date: updatedAt,
      transaction_type: credit ? "credit" : "debit",
      transaction_category: category,
      clearing_status: cleared ? "cleared" : "pending",
      settlement_status: cleared ? "settled" : "unsettled",
      message_type: category === "reversal" ? "reversal" : cleared ? "clearing" : "authorization",
      status_code: "00",
      card_name: card.nickname,
      card_external_id: card.id,
      card_last_four: card.lastFour,
      card_holder_name: `${holder.firstName} ${holder.lastName}`,
      card_holder_email: holder.email,
      employee_id: holder.employeeId,
      pool_account_name: pool ? pool.accountName : null,
      pool_external_id: pool ? pool.id : null,
      erp_supplier: supplier ? this.supplierRef(supplier) : null,
      erp_chart_of_account: account ? this.accountRef(account) : null,
      erp_supplier_name: supplier ? supplier.remote_name : null,
      erp_chart_of_account_name: account ? account.remote_name : null,
      chart_of_account_number: account ? String(account.extra.account_number) : null,
      erp_tax_rate_name: tax ? tax.remote_name : null,
      expense_category_name: merchant ? merchant.expenseCategory : null,
      vendor_trn: merchant && merchant.country === company.country ? `100${p.digits(12)}` : null,
      purchase_order_number: category === "purchase" && p.chance(0.25) ? `PO-${new Date(o.timeMs).getUTCFullYear()}-${p.digits(4)}` : null,
      rrn: p.digits(12),
      supplier_qashio_external_id: supplier ? String(supplier.extra.qashio_external_id) : null,
      chart_of_account_qashio_external_id: account ? String(account.extra.qashio_external_id) : null,
      erp_supplier_remote_id: supplier ? supplier.remote_id : null,
      erp_tax_rate_remote_id: tax ? tax.remote_id : null,
      erp_chart_of_account_remote_id: account ? account.remote_id : null,
      client_sync_status: o.syncStatus,
      erp_sync_status: erpSync,
      erp_sync_type: category === "purchase" || category === "refund" || category === "reversal" ? "expense" : "bank_transfer",
      exclude_from_sync: category === "account_transfer" && p.chance(0.5),
      sync_errors: erpSync === "failed" || erpSync === "not_validated" ? [this.syncError()] : [],
      approval_status: approval.status,
      // Approved some hours after creation, but never after now: an approval still to come is no approval (§2.2).
      approved_date_time: approval.approved ? new Date(Math.min(createdMs + p.int(1, 48) * 3_600_000, Math.max(o.nowMs, createdMs))).toISOString() : null,
      approved_by: approval.approved ? this.approvedBy : null,
      memo: p.chance(0.35) ? p.pick(MEMOS) : null,
      transaction_description: description,
      segments,
      line_items: category === "purchase" && merchant ? this.lineItems(merchant, billingAmount, vat, tax, account, segments, o.createdAt) : [],
      receipts: category === "purchase" && p.chance(0.7) ? [this.receipt()] : [],
      visible: true,
      transaction_status: o.syncStatus === "not_synced" ? p.weighted<string>([["draft", 5], ["pushed", 3], ["failed", 1]]) : "synced",
      transaction_fee_amount: fee,
      clearing_fee: cleared ? fee : 0,
    };
    return tx;
  }


  /** Nested references are shared between transactions (memory for big backlogs); views copy on write. */
  private supplierRef(supplier: MasterRecord): Readonly<Record<string, unknown>> {
    let ref = this.refCache.get(supplier.id);
    if (!ref) {
      ref = Object.freeze({ id: supplier.id, qashio_external_id: supplier.extra.qashio_external_id, remote_id: supplier.remote_id, remote_name: supplier.remote_name, status: supplier.status });
      this.refCache.set(supplier.id, ref);
    }
    return ref;
  }

  private accountRef(account: MasterRecord): Readonly<Record<string, unknown>> {
    let ref = this.refCache.get(account.id);
    if (!ref) {
      ref = Object.freeze({
        id: account.id,
        qashio_external_id: account.extra.qashio_external_id,
        remote_id: account.remote_id,
        remote_name: account.remote_name,
        account_type: account.extra.account_type,
        account_number: account.extra.account_number,
        account_currency: account.extra.account_currency,
      });
      this.refCache.set(account.id, ref);
    }
    return ref;
  }

  /**
   * `amount` (in `currency`), or less so that its billing amount with its fee is at most `spendable`: the most spend
   * made now can take from its account.
   */
  private within(amount: number, currency: string, category: BuildableCategory, spendable: number): number {
    const billing = this.data.company.currency;
    const foreign = currency !== billing;
    const cost = (t: number) => {
      const billed = convert(t, currency, billing);
      return round2(billed + feeOf(category, billed, foreign));
    };
    if (cost(amount) <= spendable) return amount;
    const { rate, fixed } = feeTerms(category, foreign);
    let t = Math.min(amount, Math.floor(convert((spendable - fixed) / (1 + rate), billing, currency) * 100) / 100);
    // Cent rounding of the conversion and the fee can put it a cent or two over.
    while (t > 0 && cost(t) > spendable) t = round2(t - 0.01);
    return t;
  }


  /**
   * The card new spend at `timeMs` goes on. Spend made now takes a card whose status is `Active` now (a card the
   * dashboard suspended stops spending, one it activated starts, a terminated one never: the dashboard cannot
   * reactivate it); the seeded history, which keeps no status history, one active then (activated, not yet
   * terminated), so a card suspended since spent before.
   * A cash withdrawal takes only such a card that allows ATM use (`atm_withdrawal_allowed`), and none when there is
   * none. Spend made now takes only a card `canSpendNow` allows (its account can pay for some, its spend limit, when
   * enforced, allows some in its window, and its country and category limits, when active, allow it somewhere: a
   * purchase at some merchant, a cash withdrawal at an ATM at home), and none when no card can (undefined: §4.9
   * balances account for what is held, a limit is enforced, and the spec names no declined transaction). Otherwise,
   * without any such card, every card that ever spent serves, so the control surface can always create what it is
   * asked for.
   */
  private cardFor(category: BuildableCategory, timeMs: number, live: boolean, nowMs: number): CardRecord | undefined {
    const spend = live && SPEND_CATEGORIES.has(category);
    const atm = category === "cash_withdrawal";
    const usable = (live ? this.data.cards.filter((card) => card.status === "Active") : this.spendCards.filter((card) => this.canSpendAt(card, timeMs)))
      .filter((card) => (!atm || card.atmWithdrawalAllowed) && (!spend || canSpendNow(card, this.data, category, nowMs)));
    if (usable.length === 0) return spend || atm ? undefined : this.prng.pick(this.spendCards);
    const picked = this.prng.pick(usable);
    if (live || !SPEND_CATEGORIES.has(category)) return picked;
    // Seeded spend: the card picked, or the next one with spend limit room (create made sure one has). Picked from
    // the same list with the same draw, so a history that never met a limit stays as it was seeded before.
    const at = usable.indexOf(picked);
    const roomy = (card: CardRecord) => takesLeast(seededRoomOf(card, this.data, timeMs, nowMs), category);
    return [...usable.slice(at), ...usable.slice(0, at)].find(roomy) ?? picked;
  }

  /** Whether seeded spend of `category` at `o.timeMs` could go on `card`: active then, with spend limit room. */
  private canSeedSpend(card: CardRecord, category: BuildableCategory, o: CreateOptions): boolean {
    return this.canSpendAt(card, o.timeMs) && takesLeast(seededRoomOf(card, this.data, o.timeMs, o.nowMs), category);
  }

  /** Whether `card` was active at `timeMs`: activated by then and not terminated yet. */
  private canSpendAt(card: CardRecord, timeMs: number): boolean {
    if (card.activatedAt === null || this.stampMs(card.activatedAt) > timeMs) return false;
    return card.terminatedAt === null || timeMs < this.stampMs(card.terminatedAt);
  }

  private stampMs(stamp: string): number {
    let ms = this.stampTimes.get(stamp);
    if (ms === undefined) this.stampTimes.set(stamp, (ms = Date.parse(stamp)));
    return ms;
  }

  /**
   * The merchant of a new transaction: its purchase's for money back, any for a seeded purchase (the seeded history
   * does not keep to a card's limits: spec-gaps, Cards and users), one `restrictedBy`'s limits allow for one made now.
   * The same single draw either way, so a card without limits buys where it did before.
   */
  private merchantFor(category: BuildableCategory, parent: TransactionRecord | undefined, restrictedBy: CardRecord | undefined): MerchantProfile | undefined {
    if (parent) return MERCHANTS.find((m) => m.name === parent.merchant_name);
    if (category === "purchase") return this.prng.pick(merchantsFor(restrictedBy));
    return undefined;
  }

  private pseudoMerchant(category: BuildableCategory): string {
    switch (category) {
      case "card_loading":
        return "Card top-up";
      case "card_unloading":
        return "Card unload to funding account";
      case "cash_withdrawal":
        return homeOf(this.data.company.country).atm.name;
      case "cashback":
        return "Qashio Cashback";
      case "deposit":
        return "Funding deposit";
      case "account_transfer":
        return "Transfer between accounts";
      default:
        return "Unknown merchant";
    }
  }

  private taxFor(merchant: MerchantProfile | undefined, category: BuildableCategory): MasterRecord | undefined {
    if (!merchant) return category === "cash_withdrawal" || category === "cashback" ? this.taxByCode.get("OS") : undefined;
    const home = this.data.company.country;
    if (merchant.country === home) return this.taxByCode.get(home === "SA" ? "SA15" : "SR");
    if (merchant.country === "AE" || merchant.country === "SA") return this.taxByCode.get("OS");
    return this.taxByCode.get("RC");
  }

  private approvalFor(sync: ClientSyncStatus): { status: string; approved: boolean } {
    if (sync !== "not_synced") return { status: this.prng.chance(0.85) ? "approved" : "admin_approved", approved: true };
    const status = this.prng.weighted<string>([
      ["approved", 8],
      ["pending", 4],
      ["initiated", 2],
      ["review", 1],
      ["admin_approved", 1],
      ["rejected", 1],
    ]);
    return { status, approved: status === "approved" || status === "admin_approved" };
  }

  private segmentsFor() {
    const pickLabel = (label: string) => this.prng.pick(this.segmentsByLabel.get(label) ?? []);
    const out = [pickLabel("Location"), pickLabel("Department")];
    if (this.prng.chance(0.4)) out.push(pickLabel("Project"));
    if (this.prng.chance(0.5)) out.push(pickLabel("cost_centre"));
    return out;
  }

  private lineItems(
    merchant: MerchantProfile,
    billing: number,
    vat: number,
    tax: MasterRecord | undefined,
    account: MasterRecord | undefined,
    segments: unknown[],
    createdAt: string,
  ) {
    const count = Math.min(merchant.lineItems.length, this.prng.int(1, 3));
    const items = [];
    let restAmount = billing;
    let restVat = vat;
    for (let i = 0; i < count; i++) {
      const last = i === count - 1;
      const share = last ? 1 : this.prng.int(30, 70) / 100;
      const amount = last ? round2(restAmount) : round2(restAmount * share);
      const itemVat = last ? round2(restVat) : round2(restVat * share);
      restAmount -= amount;
      restVat -= itemVat;
      items.push({
        id: this.prng.uuid(),
        amount,
        vat_amount: itemVat,
        description: merchant.lineItems[i] ?? merchant.name,
        expense_category: merchant.expenseCategory,
        erp_tax_rate_name: tax ? tax.remote_name : null,
        erp_tax_rate_remote_id: tax ? tax.remote_id : null,
        erp_chart_of_account_name: account ? account.remote_name : null,
        erp_chart_of_account_remote_id: account ? account.remote_id : null,
        segments,
        created_at: createdAt,
        updated_at: createdAt,
      });
    }
    return items;
  }

  private receipt() {
    const code = this.prng.code(8);
    return { id: this.prng.uuid(), name: `receipt-${code.toLowerCase()}.pdf`, label: "Receipt", code, erp_internal_id: null, erp_code: null };
  }

  private syncError() {
    const [code, name] = this.prng.pick([
      ["TAX_RATE_REQUIRED", "Tax rate is required for this ledger account"],
      ["SUPPLIER_INACTIVE", "Supplier is inactive in the accounting system"],
      ["PERIOD_LOCKED", "Accounting period is locked"],
    ] as const);
    return { id: this.prng.uuid(), name, label: "sync_error", code, erp_internal_id: null, erp_code: null };
  }

  private describe(category: BuildableCategory, merchant: MerchantProfile | undefined, parent: TransactionRecord | undefined, card: CardRecord): string {
    switch (category) {
      case "purchase":
        return `${merchant?.name ?? "Purchase"} - ${card.nickname}`;
      case "refund":
        return `Refund from ${String(parent?.merchant_name ?? "merchant")}`;
      case "reversal":
        return `Authorisation reversed by ${String(parent?.merchant_name ?? "merchant")}`;
      case "card_loading":
        return `Top-up of ${card.nickname}`;
      case "card_unloading":
        return `Balance of ${card.nickname} returned to funding account`;
      case "cash_withdrawal":
        return "ATM cash withdrawal";
      case "cashback":
        return "Monthly cashback reward";
      case "deposit":
        return "Bank transfer into company funding account";
      case "account_transfer":
        return "Transfer from funding account to pool account";
    }
  }
}
