/**
 * The whole mutable sandbox: seeded companies, OAuth, faults, pending suspensions,
 * clock and latency. Route handlers and the control surface both go through it.
 */
import { isDeepStrictEqual } from "node:util";
import { LATEST_SANDBOX_TIME_MS, SandboxClock } from "./clock.js";
import { followApproved, followCleared, followNew, forgetGone, topUpByPeriod } from "./data/balances.js";
import type { BuildableCategory } from "./data/transactions.js";
import { isClosed, type CardRecord, type CompanyData, type ErpCardStatus, type SpendLimit, type TransactionRecord } from "./data/model.js";
import { seedCompanies } from "./data/seed.js";
import { checkTransactionPatch, STAMPED_FIELDS } from "./data/transaction-patch.js";
import { NotFoundError, ValidationError, type FieldError } from "./errors.js";
import { FaultQueue } from "./faults.js";
import { OAuthServer } from "./oauth.js";

/** Time between an accepted suspension and its commit (sandbox seconds, at most 60 per the issue). */
export const SUSPENSION_PROCESSING_SECONDS = 30;

/** Largest page a list accepts; over it is a 400 `OUT_OF_RANGE` (spec: not shown). */
export const MAX_PAGE_SIZE = 100;

/** Largest acknowledge batch (spec: not shown). */
export const MAX_ACKNOWLEDGE_BATCH = 1000;

/** Default seed when none is given. */
export const DEFAULT_SEED = 1;

interface PendingSuspension {
  readonly card: CardRecord;
  readonly dueMs: number;
}

export interface ResetOptions {
  readonly seed?: number;
  /** Backlog size of one company (every transaction `not_synced`). */
  readonly transactions?: number;
  /** Company that gets the backlog (default: the first). */
  readonly companyId?: string;
}

/** The 400 `status` `INVALID_STATE` of a status change the card's state forbids. */
function statusRefused(message: string, summary: string): ValidationError {
  return new ValidationError([{ field: "status", code: "INVALID_STATE", message }], summary);
}

/** The 400 of a suspension the card's state forbids (§4.9), through the API or the dashboard; `why` says what forbids it. */
export function suspensionRefused(why: string): ValidationError {
  return statusRefused(`${why} and cannot be suspended`, "Card cannot be suspended in its current state");
}

export class SandboxState {
  readonly clock: SandboxClock;
  readonly oauth: OAuthServer;
  readonly faults = new FaultQueue();
  latencyMs: number;
  seed: number;
  /** Transactions a company holds beyond those still to read (see {@link forgetOldTransactions}); undefined: all. */
  readonly retainTransactions: number | undefined;
  private companies = new Map<string, CompanyData>();
  private pending: PendingSuspension[] = [];

  constructor(options: {
    seed: number;
    startTime: number;
    latencyMs: number;
    realTime: boolean;
    accessTokenTtlSeconds: number;
    retainTransactions?: number;
  }) {
    this.clock = new SandboxClock(options.startTime, options.realTime);
    this.oauth = new OAuthServer(this.clock, options.accessTokenTtlSeconds);
    this.latencyMs = options.latencyMs;
    this.seed = options.seed;
    this.retainTransactions = options.retainTransactions;
    this.reset({ seed: options.seed });
  }

  /** Re-seeds all data; OAuth grants, clock and latency survive (company ids are fixed). */
  reset(options: ResetOptions = {}): void {
    if (options.companyId !== undefined && !this.companies.has(options.companyId) && this.companies.size > 0) {
      throw new NotFoundError("Unknown company", "company_id");
    }
    this.seed = options.seed ?? this.seed;
    const data = seedCompanies({
      seed: this.seed,
      nowMs: this.clock.nowMs(),
      backlog: options.transactions,
      backlogCompanyId: options.companyId,
    });
    this.companies = new Map(data.map((d) => [d.company.id, d]));
    for (const company of data) this.forgetOldTransactions(company);
    this.pending = [];
    this.faults.clear();
  }

  /**
   * With a retention bound, forgets the company's acknowledged transactions older than its newest
   * {@link retainTransactions}, except parents of held ones (TransactionStore.forgetBeyondNewest), so a long-running
   * demo holds constant memory. Without one, a company keeps every transaction, as the provider does.
   */
  private forgetOldTransactions(data: CompanyData): void {
    if (this.retainTransactions === undefined) return;
    forgetGone(data, data.transactions.forgetBeyondNewest(this.retainTransactions));
  }

  /** Every company, in seed order. */
  listCompanies(): CompanyData[] {
    return [...this.companies.values()];
  }

  company(companyId: string): CompanyData | undefined {
    return this.companies.get(companyId);
  }

  /** The company or a 404 naming the control routes' path parameter (unknown ids and ids of nothing look the same). */
  requireCompany(companyId: string): CompanyData {
    const data = this.companies.get(companyId);
    if (!data) throw new NotFoundError("Company not found", "companyId");
    return data;
  }

  requireCard(data: CompanyData, cardId: string): CardRecord {
    const card = data.cards.find((c) => c.id === cardId);
    // The path parameter named, as the ERP card read's 404 names it.
    if (!card) throw new NotFoundError("Card not found", "cardId");
    return card;
  }

  /**
   * Commits what fell due by now (sandbox time), in time order: suspensions whose processing delay has passed, and
   * top-ups per period. A period that started before a suspension was committed found its card still Active.
   */
  settle(): void {
    const now = this.clock.nowMs();
    const due = this.pending.filter((p) => p.dueMs <= now).sort((a, b) => a.dueMs - b.dueMs);
    for (const { dueMs } of due) {
      this.topUpByPeriod(dueMs);
      this.commitSuspensions(dueMs);
    }
    this.topUpByPeriod(now);
  }

  /** Makes every company's top-ups per period that fell due by `ms`. */
  private topUpByPeriod(ms: number): void {
    for (const data of this.companies.values()) topUpByPeriod(data, ms);
  }

  /** Commits the suspensions due by `now`. */
  private commitSuspensions(now: number): void {
    const due = this.pending.filter((p) => p.dueMs <= now);
    if (due.length === 0) return;
    this.pending = this.pending.filter((p) => p.dueMs > now);
    for (const { card } of due) {
      // Only Active cards are queued, and a dashboard change drops the request (setCardStatus).
      card.status = "Suspended";
      card.updatedAt = this.clock.stampIso();
    }
  }

  /** Whether a suspension of the card is queued and not yet committed. */
  isSuspensionPending(card: CardRecord): boolean {
    return this.pending.some((p) => p.card === card);
  }

  /** Queues a suspension, committed after {@link SUSPENSION_PROCESSING_SECONDS}. */
  queueSuspension(card: CardRecord): void {
    if (this.isSuspensionPending(card)) return;
    this.pending.push({ card, dueMs: this.clock.nowMs() + SUSPENSION_PROCESSING_SECONDS * 1000 });
  }

  /** Moves the clock and commits what became due; a move the clock cannot make is a 400 and changes nothing. */
  advanceClock(seconds: number): void {
    if (!this.clock.tryAdvance(seconds)) {
      throw new ValidationError([{ field: "advance_seconds", code: "OUT_OF_RANGE", message: `advance_seconds must keep the clock at or before ${new Date(LATEST_SANDBOX_TIME_MS).toISOString()}` }]);
    }
    this.settle();
  }

  /**
   * Acknowledges a batch: all ids must be this company's, else nothing changes and
   * each unknown id gets a `NOT_FOUND` entry. O(batch).
   */
  acknowledge(data: CompanyData, ids: readonly string[]): string[] {
    const errors: FieldError[] = [];
    const found: TransactionRecord[] = [];
    ids.forEach((id, i) => {
      const tx = data.transactions.get(id);
      if (tx) found.push(tx);
      else errors.push({ field: `transaction_ids.${i}`, code: "NOT_FOUND", message: `transaction_ids.${i} is not a transaction of this company` });
    });
    if (errors.length > 0) throw new ValidationError(errors, "Some transactions were not found");
    for (const tx of found) data.transactions.setSyncStatus(tx, "synced");
    this.forgetOldTransactions(data);
    return [...new Set(found.map((tx) => tx.id))];
  }

  /**
   * New transactions "appearing" now (control surface): `not_synced`; fewer than `count` when spend finds no account to
   * pay, or when the purchase a refund or reversal names has been given back in full.
   */
  createTransactions(data: CompanyData, options: { count: number; category?: BuildableCategory; parentQashioId?: string }): TransactionRecord[] {
    let parent: TransactionRecord | undefined;
    if (options.parentQashioId !== undefined) {
      parent = data.transactions.getByQashioId(options.parentQashioId);
      if (!parent) throw new ValidationError([{ field: "parent_qashio_id", code: "NOT_FOUND", message: "parent_qashio_id is not a transaction of this company" }]);
      if (parent.transaction_category !== "purchase") {
        throw new ValidationError([{ field: "parent_qashio_id", code: "INVALID_ENUM", message: "parent_qashio_id must name a purchase" }]);
      }
    }
    const created: TransactionRecord[] = [];
    for (let i = 0; i < options.count; i++) {
      const createdAt = this.clock.stampIso();
      // Made at its stamp, one reading of the clock: a clock following real time may pass a window's end between two,
      // and spend dated in one window would be weighed against the next one's limit.
      const timeMs = Date.parse(createdAt);
      const tx = data.factory.create({
        // A child without a named category is a refund.
        category: options.category ?? (parent ? "refund" : undefined),
        parent,
        timeMs,
        createdAt,
        syncStatus: "not_synced",
        nowMs: timeMs,
        live: true,
      });
      // Spend no card's account can pay for is not made, nor money back for a purchase given back in full (spec-gaps, Balances).
      if (tx === undefined) continue;
      data.transactions.add(tx);
      followNew(data, tx);
      created.push(tx);
    }
    this.forgetOldTransactions(data);
    return created;
  }

  /**
   * A change made at the provider: fields replaced, `updated_at` moves, `synced` becomes `outdated`.
   * A patch that changes no value is no change (§3.1) and leaves the transaction as it was.
   */
  patchTransaction(data: CompanyData, id: string, fields: Record<string, unknown>): TransactionRecord {
    const tx = data.transactions.get(id);
    // The control route's path parameter named, as requireCard names `cardId`.
    if (!tx) throw new NotFoundError("Transaction not found", "id");
    const errors = checkTransactionPatch(tx, fields);
    if (errors.length > 0) throw new ValidationError(errors);
    const changes = Object.entries(fields).filter(([field, value]) => !STAMPED_FIELDS.has(field) && !isDeepStrictEqual(tx[field], value));
    if (changes.length === 0) return tx;
    const approvalBefore = tx.approval_status;
    for (const [field, value] of changes) tx[field] = value;
    const stamp = this.clock.stampIso();
    tx.updated_at = stamp;
    tx.modified_date = stamp;
    if (tx.client_sync_status === "synced") data.transactions.setSyncStatus(tx, "outdated");
    data.transactions.changed(tx);
    if (tx.clearing_status === "cleared") followCleared(data, tx);
    followApproved(data, tx, approvalBefore);
    return tx;
  }

  /**
   * A spend limit change, through §4.9's `update_velocity_limit` or made in the provider's dashboard (control surface):
   * what `changes` leaves out stays; the card shows it changed.
   */
  setSpendLimit(card: CardRecord, changes: Partial<Pick<SpendLimit, "active" | "period" | "maxAmount" | "frequency">>): void {
    const limit = card.spendLimit;
    if (changes.active !== undefined) limit.active = changes.active;
    if (changes.period !== undefined) limit.period = changes.period;
    if (changes.maxAmount !== undefined) limit.maxAmount = changes.maxAmount;
    if (changes.frequency !== undefined) limit.frequency = changes.frequency;
    limit.updatedAt = this.clock.stampIso();
    card.updatedAt = limit.updatedAt;
  }

  /**
   * A status change made in the provider's dashboard (control surface). A 400 `INVALID_STATE`: any move out of
   * Terminated or Cancelled (final at every issuer; §3.2 names the states only), and suspending a card never
   * activated (§3.1 suspends only an active card, so a suspended card always shows its activation).
   */
  setCardStatus(card: CardRecord, status: ErpCardStatus): void {
    if (card.status === status) return;
    if (isClosed(card)) throw statusRefused(`card is ${card.status.toLowerCase()}, which is final`, "Card cannot change status in its current state");
    if (status === "Suspended" && card.activatedAt === null) throw suspensionRefused("card was never activated");
    // The dashboard wins over a queued suspension: it must not commit later, and a retry must see the new state.
    this.pending = this.pending.filter((p) => p.card !== card);
    const stamp = this.clock.stampIso();
    // Leaving Draft issues the card, as every seeded card past Draft was (spec-gaps, Card timestamps).
    if (card.issuedAt === null && status !== "Draft") card.issuedAt = stamp;
    if (status === "Active" && card.activatedAt === null) card.activatedAt = stamp;
    // Terminated is final, so its stamp, once set, stays (spec-gaps, Card timestamps).
    if (status === "Terminated") card.terminatedAt = stamp;
    card.status = status;
    card.updatedAt = stamp;
  }
}
