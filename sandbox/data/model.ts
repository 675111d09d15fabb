/**
 * In-memory records of the sandbox. Views (sandbox/views.ts) turn them into the
 * response shapes of spec §2; records keep what the views need and nothing more.
 */
import type { Hold } from "./balances.js";
import type { TransactionStore } from "./transaction-store.js";
import type { TransactionFactory } from "./transactions.js";

export type ClientSyncStatus = "not_synced" | "synced" | "outdated";
export type ErpCardStatus = "Active" | "Inactive" | "Suspended" | "Terminated" | "Draft" | "Cancelled";

export interface SandboxCompany {
  readonly id: string;
  readonly name: string;
  readonly legalName: string;
  readonly country: string;
  readonly currency: string;
  readonly createdAt: string;
  /** When false, every API call of a token of this company answers 403 (validate too). */
  apiAccessEnabled: boolean;
  /** Key of the earlier connector generation (§9). */
  readonly apiKey: string;
  readonly fundingAccountId: string;
  fundingBalance: number;
}

export interface UserProfile {
  readonly userId: string;
  readonly externalId: string;
  readonly firstName: string;
  readonly lastName: string;
  readonly email: string;
  readonly employeeId: string;
  readonly department: string;
  readonly role: "Admin" | "End User";
}

export interface SegmentEntry {
  readonly id: string;
  readonly name: string;
  readonly label: string;
  readonly code: string;
  readonly erp_internal_id: string;
  readonly erp_code: string;
}

/** Master-data record (§2.6) with its resource-specific fields in `extra`. */
export interface MasterRecord {
  readonly id: string;
  readonly remote_id: string;
  remote_name: string;
  status: "draft" | "active" | "inactive";
  is_deleted: boolean;
  readonly created_at: string;
  updated_at: string;
  readonly extra: Readonly<Record<string, unknown>>;
}

export interface PoolAccountRecord {
  readonly id: string;
  readonly accountName: string;
  status: "Active" | "Inactive" | "Suspended" | "Terminated";
  readonly currency: string;
  readonly topupType: string;
  readonly allowedMaxBalance: number;
  readonly lowBalanceNotificationActive: boolean;
  readonly lowBalanceNotificationAmount: number;
  readonly createdBy: UserProfile;
  readonly managers: readonly UserProfile[];
  readonly createdAt: string;
  balance: number;
}

export interface SpendLimit {
  active: boolean;
  period: string;
  maxAmount: number;
  /** Transactions permitted per period; 0: no count (what its window consumed: `consumedOf`). */
  frequency: number;
  updatedAt: string;
}

export interface CardRecord {
  readonly id: string;
  nickname: string;
  status: ErpCardStatus;
  readonly cardType: "Virtual" | "Physical";
  readonly lastFour: string;
  readonly holder: UserProfile;
  readonly accountType: "reloadable" | "pool";
  /** Funding account: the card's own account, or its pool account's id. */
  readonly accountExternalId: string;
  readonly poolAccountId: string | null;
  readonly currency: string;
  allowedMaxBalance: number;
  topupType: string;
  velocityPeriod: string;
  cardUsageType: string;
  autoTopUpAmount: number;
  autoTopUpEnabled: boolean;
  /**
   * Auto top-up on the approval of the card's spend instead of per `velocity_period` or when low (§2.4
   * `auto_load_on_transaction_approval`; §4.9's update does not take it: set in the dashboard, control surface).
   */
  autoLoadOnTransactionApproval: boolean;
  /** Sandbox time (epoch ms) the card's next top-up per `velocity_period` falls due (`topUpByPeriod`). */
  nextTopUpMs: number;
  readonly floatManagementEnabled: boolean;
  cardReplaced: boolean;
  replacedByCardId: string | null;
  readonly atmWithdrawalAllowed: boolean;
  readonly countryLimitsActive: boolean;
  readonly categoryLimitsActive: boolean;
  readonly lowBalanceNotificationActive: boolean;
  readonly lowBalanceNotificationAmount: number;
  readonly segments: readonly SegmentEntry[];
  readonly customSegments: readonly SegmentEntry[];
  issuedAt: string | null;
  activatedAt: string | null;
  terminatedAt: string | null;
  readonly createdAt: string;
  updatedAt: string;
  /** The card's own account's balance; 0 on a pool card, which spends its pool's (`accountBalanceOf`). */
  balance: number;
  pendingAuthorisations: number;
  spendLimit: SpendLimit;
  readonly allowedCountries: readonly string[];
  readonly blockedCountries: readonly string[];
  readonly allowedMccs: readonly string[];
}

/** Transaction as stored: §2.2 fields with pre-fee `billing_amount` / `clearing_amount`. */
export interface TransactionRecord {
  readonly id: string;
  readonly qashio_id: string;
  readonly parent_id: string | null;
  readonly parent_qashio_id: string | null;
  readonly company_id: string;
  [field: string]: unknown;
  client_sync_status: ClientSyncStatus;
  transaction_category: string;
  transaction_time: string;
  created_at: string;
  updated_at: string;
  modified_date: string;
  billing_amount: number;
  clearing_amount: number;
  transaction_fee_amount: number;
  clearing_fee: number;
}

export interface StatementRecord {
  readonly account: StatementAccount;
  readonly currency: string;
  /** `YYYY-MM`. */
  readonly month: string;
  readonly from: string;
  readonly to: string;
  readonly opening: number;
  readonly closing: number;
}

/**
 * An account that can have statements (§2.1: card, pool, funding account, subsidiary). A card account
 * holds its card rather than a name: its `account_name` is the card's current nickname (§2.7, §4.7).
 */
export type StatementAccount =
  | { readonly accountExternalId: string; readonly accountType: "PoolAccount" | "CompanyFundAccount" | "Subsidiary"; readonly accountName: string }
  | { readonly accountExternalId: string; readonly accountType: "Card"; readonly card: CardRecord };

export interface AuditRecord {
  readonly at: string;
  readonly action: string;
  readonly cardId?: string;
  readonly details: Readonly<Record<string, unknown>>;
}

/** Everything one company owns. */
export interface CompanyData {
  readonly company: SandboxCompany;
  readonly users: UserProfile[];
  readonly cards: CardRecord[];
  readonly pools: PoolAccountRecord[];
  readonly bankAccounts: MasterRecord[];
  readonly chartOfAccounts: MasterRecord[];
  readonly taxRates: MasterRecord[];
  readonly suppliers: MasterRecord[];
  readonly statements: StatementRecord[];
  readonly statementAccounts: StatementAccount[];
  readonly segments: readonly SegmentEntry[];
  readonly transactions: TransactionStore;
  /** Pending authorisations of spend made since seeding, by transaction id (`sandbox/data/balances.ts`). */
  readonly holds: Map<string, Hold>;
  /** Transactions whose approval loaded their card (§2.4 `auto_load_on_transaction_approval`): each loads once. */
  readonly loadedOnApproval: Set<string>;
  /** Builds this company's new transactions (continues the company's PRNG stream). */
  factory: TransactionFactory;
  /** Addresses invited so far (lower-case). */
  readonly invited: Set<string>;
  readonly audit: AuditRecord[];
}

/** Whether the card is closed for good: no issuer reopens a Terminated or Cancelled card. */
export function isClosed(card: Pick<CardRecord, "status">): boolean {
  return card.status === "Terminated" || card.status === "Cancelled";
}

/**
 * Balance of the account a card draws on (§2.4 `account_balance` beside `account_id`): its own, or a pool card's
 * pool's, which all the pool's cards share (spec-gaps, Cards and users).
 */
export function accountBalanceOf(card: CardRecord, data: Pick<CompanyData, "pools">): number {
  if (card.poolAccountId === null) return card.balance;
  return poolOf(card, data)?.balance ?? 0;
}

/** The pool a pool card draws on; undefined for a card with its own account (or a pool the company does not hold). */
export function poolOf(card: CardRecord, data: Pick<CompanyData, "pools">): PoolAccountRecord | undefined {
  return card.poolAccountId === null ? undefined : data.pools.find((p) => p.id === card.poolAccountId);
}
