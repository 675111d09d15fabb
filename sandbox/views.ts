/**
 * Response shapes of spec §2 built from the sandbox records. Every view returns a
 * fresh object, so a caller may not mutate sandbox state through it.
 */
import { homeOf } from "./data/home-country.js";
import { topUpPeriodOf, topUpSettingOf } from "./data/balances.js";
import { accountBalanceOf } from "./data/model.js";
import { allowedCategoriesOf } from "./data/restrictions.js";
import type {
  CardRecord,
  CompanyData,
  MasterRecord,
  PoolAccountRecord,
  SandboxCompany,
  StatementAccount,
  StatementRecord,
  TransactionRecord,
  UserProfile,
} from "./data/model.js";
import { round2 } from "./prng.js";
import { enforcesCount, type Consumption } from "./data/spend-limits.js";

const DETAIL_ONLY_FIELDS = ["transaction_status", "transaction_fee_amount", "clearing_fee"] as const;

/** Transaction as listed (§2.2): `billing_amount` and `clearing_amount` include fees (rule 1). */
export function transactionListView(tx: TransactionRecord): Record<string, unknown> {
  const view: Record<string, unknown> = { ...tx };
  for (const field of DETAIL_ONLY_FIELDS) delete view[field];
  view.billing_amount = round2(tx.billing_amount + tx.transaction_fee_amount);
  view.clearing_amount = tx.clearing_amount === 0 ? 0 : round2(tx.clearing_amount + tx.clearing_fee);
  return view;
}

/** Single-transaction read (§2.2 rules 2-3): pre-fee amounts, fees apart, `erp_company`. */
export function transactionDetailView(tx: TransactionRecord, company: SandboxCompany): Record<string, unknown> {
  return {
    ...tx,
    erp_company: {
      id: company.id,
      name: company.name,
      business_legal_name: company.legalName,
      company_country: company.country,
      parent_company_id: null,
      // A company whose API access is off is answered 403 before any read reaches here.
      status: "active",
      is_deleted: false,
      updated_at: company.createdAt,
      created_at: company.createdAt,
    },
  };
}

function masked(card: CardRecord): string {
  return `**** **** **** ${card.lastFour}`;
}

/** `atm_configuration` limits (§2.3): none, as the sandbox enforces none (`allow_atm` alone governs ATM use). */
const NO_ATM_LIMIT = { frequency: null, max_amount: null, number_of_withdrawals: null, limit_per_withdrawal: null } as const;

/** ERP card (§2.3), list shape. */
export function erpCardView(card: CardRecord, company: SandboxCompany): Record<string, unknown> {
  return {
    id: card.id,
    card_nickname: card.nickname,
    status: card.status,
    card_type: card.cardType,
    masked_card_number: masked(card),
    cardholder: { name: fullName(card.holder), email: card.holder.email, employee_id: card.holder.employeeId },
    company_name: company.name,
    account_external_id: card.accountExternalId,
    account_type: card.accountType,
    card_currency: card.currency,
    allowed_max_balance: card.allowedMaxBalance,
    topup_type: card.topupType,
    float_management_enabled: card.floatManagementEnabled,
    card_replaced: card.cardReplaced,
    purchase_limits_active: card.spendLimit.active,
    transaction_limits_active: enforcesCount(card.spendLimit),
    country_limits_active: card.countryLimitsActive,
    category_limits_active: card.categoryLimitsActive,
    atm_withdrawal_allowed: card.atmWithdrawalAllowed,
    low_balance_notification_active: card.lowBalanceNotificationActive,
    low_balance_notification_amount: card.lowBalanceNotificationAmount,
    segments: card.segments.map((s) => ({ ...s })),
    custom_segments: card.customSegments.map((s) => ({ ...s })),
    issued_at: card.issuedAt,
    activated_at: card.activatedAt,
    terminated_at: card.terminatedAt,
    created_at: card.createdAt,
  };
}

/** Single ERP card read (§2.3): the list shape plus the configuration objects. */
export function erpCardDetailView(card: CardRecord, data: CompanyData): Record<string, unknown> {
  const topUp = topUpSettingOf(card, data);
  return {
    ...erpCardView(card, data.company),
    purchase_limits: {
      enabled: card.spendLimit.active,
      amount: card.spendLimit.maxAmount,
      frequency: card.spendLimit.period,
      limit_currency: card.currency,
      number_of_purchases: card.spendLimit.frequency,
    },
    country_limits: {
      restriction_mode: card.countryLimitsActive ? "allow_list" : "none",
      allowed_countries: [...card.allowedCountries],
      blocked_countries: [...card.blockedCountries],
    },
    merchant_category_limits: {
      restriction_type: card.categoryLimitsActive ? "allow" : "none",
      categories: allowedCategoriesOf(card),
      merchant_groups: [],
    },
    // Both show what tops up the account the card draws on: a pool card's is its pool's (spec-gaps, Balances).
    topup_configuration: {
      auto_topup_enabled: topUp.trigger !== "manual",
      auto_topup_amount: topUp.amount,
      // The period the account's top-ups follow: none while auto top-up is off, loads on approval or on a pool card (spec-gaps, Balances).
      frequency: topUpPeriodOf(card),
    },
    auto_top_up_configuration: { ...topUp, period: topUpPeriodOf(card) },
    // No ATM limit is enforced (only whether ATM use is allowed), so none is shown (spec-gaps, Cards and users).
    atm_configuration: { atm_withdrawal_allowed: card.atmWithdrawalAllowed, ...NO_ATM_LIMIT },
  };
}

/** Spend-limit object of the write responses (§2.4), with what the limit's current window consumed. */
function spendLimitObject(card: CardRecord, consumed: Consumption): Record<string, unknown> {
  const limit = card.spendLimit;
  return {
    id: `SL-${card.id}`,
    name: `${card.nickname} spend limit`,
    active: limit.active,
    description: null,
    min_amount: 0,
    max_amount: limit.maxAmount,
    currency: card.currency,
    period: limit.period,
    limit_type: "SPEND",
    frequency: limit.frequency,
    num_of_days: null,
    remote_id: null,
    external_id: `SL${card.id.slice(2)}`,
    remaining_balance: round2(Math.max(0, limit.maxAmount - consumed.amount)),
    // Null, as atm_limit, when no count is enforced: 0 would read as no transaction left.
    remaining_frequency: enforcesCount(limit) ? Math.max(0, limit.frequency - consumed.count) : null,
    remote_sync: true,
    consumed_limit: consumed.amount,
    consumed_frequency: consumed.count,
    transaction_scope: "ALL",
    remote_data: null,
  };
}

/** Flags the provider sometimes sends as `"true"`/`"false"` (§2.4). */
const STRING_TYPED_FLAGS = [
  "allow_atm",
  "card_replaced",
  "return_card",
  "allowed_mccs_active",
  "spend_limit_active",
  "atm_limit_active",
  "is_manager",
  "transactions_limit_active",
] as const;

/** Amounts the provider sometimes sends as numeric strings (§2.4). */
const STRING_TYPED_AMOUNTS = ["auto_top_up_amount", "account_balance", "card_usage_type_amount", "atm_limit"] as const;

/**
 * Whether this card is shown with the string-typed values of §2.4 in the core list: about half the cards,
 * chosen by id so a card looks the same on every page and every poll.
 */
export function isStringTypedInList(card: CardRecord): boolean {
  let sum = 0;
  for (const ch of card.id) sum += ch.charCodeAt(0);
  return sum % 2 === 0;
}

/** Rewrites a core card view the way some provider responses look: flags as strings, amounts as numeric strings. */
function withStringTypedValues(view: Record<string, unknown>, card: CardRecord): void {
  for (const key of STRING_TYPED_FLAGS) {
    if (typeof view[key] === "boolean") view[key] = String(view[key]);
  }
  for (const key of STRING_TYPED_AMOUNTS) {
    if (typeof view[key] === "number") view[key] = view[key].toFixed(2);
  }
  // §2.4 shows `Virtual` next to `PHYSICAL`/`VIRTUAL`.
  view.card_type = card.cardType;
}

/**
 * Core (operational) card (§2.4). `write` (what the spend limit's window consumed) adds the write-response objects.
 * Write responses, and the cards {@link isStringTypedInList} picks in the list, carry string-typed flags and amounts,
 * as the spec shows.
 */
export function coreCardView(card: CardRecord, data: Pick<CompanyData, "company" | "pools">, write?: Consumption): Record<string, unknown> {
  const { company } = data;
  const status = card.status.toLowerCase();
  const view: Record<string, unknown> = {
    id: card.id,
    nickname: card.nickname,
    card_number: masked(card),
    card_type: card.cardType.toUpperCase(),
    status,
    display_status: status,
    user_name: fullName(card.holder),
    user_email: card.holder.email,
    company_name: company.name,
    velocity_period: card.velocityPeriod,
    allow_atm: card.atmWithdrawalAllowed,
    allow_replace_card: card.cardType === "Physical",
    card_replaced: card.cardReplaced,
    return_card: false,
    shipping_card: card.cardType === "Physical" && card.status === "Inactive",
    terminated_at: card.terminatedAt,
    spend_restriction_type: card.categoryLimitsActive ? "ALLOW" : "NONE",
    last_four: card.lastFour,
    limit_amount_notification: card.lowBalanceNotificationActive,
    card_balance_running_low_notification: card.lowBalanceNotificationAmount,
    allowed_countries_list: [...card.allowedCountries],
    allowed_countries_list_active: card.countryLimitsActive,
    foreign_entity: false,
    atm_restricted_at: null,
    issuer: "sandbox-issuer",
    allowed_mccs_active: card.categoryLimitsActive,
    spend_limit_active: card.spendLimit.active,
    atm_limit_active: false,
    // What tops up the account the card draws on, as the ERP read's auto_top_up_configuration (a pool card's: its pool's).
    auto_top_up_amount: topUpSettingOf(card, data).amount,
    auto_load_on_transaction_approval: card.autoLoadOnTransactionApproval,
    tokenization_status: card.status === "Active" ? "tokenized" : "not_tokenized",
    account_type: card.accountType.toUpperCase(),
    account_id: card.accountExternalId,
    currency: card.currency,
    show_pool_balance_to_cardholder: card.accountType === "pool",
    is_manager: false,
    is_account_manager: false,
    is_dept_manager: false,
    can_edit_all_time_limit: true,
    can_reset_limit: true,
    reset_summary: null,
    issued_at: card.issuedAt,
    first_activated_at: card.activatedAt,
    external_id: card.id,
    replaced_by_card_external_id: card.replacedByCardId,
    replaced_by_card_id: card.replacedByCardId,
    card_usage_type: card.cardUsageType,
    card_usage_type_amount: card.allowedMaxBalance,
    account_balance: accountBalanceOf(card, data),
    shipment_tracking: null,
    spend_limit: write ? spendLimitObject(card, write) : card.spendLimit.maxAmount,
    atm_limit: null,
    shipping_address: card.cardType === "Physical" ? { ...homeOf(company.country).office, country: company.country } : null,
    card_template: null,
    erp_bank_account: null,
    step_up_auth_delegated_user_profile: null,
    created_at: card.createdAt,
    // As in the ERP read's atm_configuration: no ATM limit is enforced, so none is on.
    atm_transactions_limit_active: false,
    atm_transactions_limit: null,
    transactions_limit_active: enforcesCount(card.spendLimit),
    transactions_limit: {
      max_amount: card.spendLimit.maxAmount,
      min_amount: 0,
      currency: card.currency,
      period: card.spendLimit.period,
      frequency: card.spendLimit.frequency,
      transaction_scope: "ALL",
    },
    department: segmentName(card, "Department"),
    location: segmentName(card, "Location"),
    division: null,
    project: null,
    return_address: null,
    expense_categories: [],
    merchants: [],
    merchant_groups: [],
    custom_segments: card.customSegments.map((s) => ({ ...s })),
    shipping_details: { method: card.cardType === "Physical" ? "courier" : null, return_address: null, shipping_address: null },
    wallets_status: { apple_pay: card.status === "Active", google_pay: false, samsung_pay: false },
    user_profile: userProfileView(card.holder, company),
    // §2.4 lists it among the card's objects without limiting it to write responses.
    advanced_velocity_limits: [],
  };
  if (write || isStringTypedInList(card)) withStringTypedValues(view, card);
  if (write) {
    view.card_product = {
      id: "CP-SANDBOX-01",
      name: `${card.cardType} corporate card`,
      status: "active",
      description: "Sandbox card product",
      pan_format_token: null,
      track_format_token: null,
      proxy_format_token: null,
      remote_id: null,
      external_id: "CPSANDBOX01",
      notification_template_remote_id: null,
      auth_settings_allowed_list_status_active: false,
      currency_settings: { currency: card.currency },
      pin_settings: null,
    };
  }
  return view;
}

function segmentName(card: CardRecord, label: string): string | null {
  return card.segments.find((s) => s.label === label)?.name ?? null;
}

function userProfileView(user: UserProfile, company: SandboxCompany): Record<string, unknown> {
  return {
    department_name: user.department,
    first_name: user.firstName,
    last_name: user.lastName,
    company_name: company.name,
    user_name: user.email,
    system_role_name: user.role,
    email: user.email,
    user_email: user.email,
    external_id: user.externalId,
    user_id: user.userId,
    status: "active",
    fullname: fullName(user),
    employee_id: user.employeeId,
    department_id: null,
    managing_departments: [],
  };
}

/** Pool account (§2.5). */
export function poolAccountView(pool: PoolAccountRecord, company: SandboxCompany): Record<string, unknown> {
  return {
    id: pool.id,
    account_name: pool.accountName,
    status: pool.status,
    currency: pool.currency,
    topup_type: pool.topupType,
    allowed_max_balance: pool.allowedMaxBalance,
    low_balance_notification_active: pool.lowBalanceNotificationActive,
    low_balance_notification_amount: pool.lowBalanceNotificationAmount,
    company_name: company.name,
    created_by: { user_id: pool.createdBy.userId, name: fullName(pool.createdBy) },
    account_managers: pool.managers.map((m) => ({ user_id: m.userId, name: fullName(m), email: m.email })),
    created_at: pool.createdAt,
  };
}

/** Master-data record (§2.6) without the sandbox-internal `key`. */
export function masterRecordView(record: MasterRecord): Record<string, unknown> {
  const { key: _key, ...extra } = record.extra;
  return {
    id: record.id,
    remote_id: record.remote_id,
    remote_name: record.remote_name,
    status: record.status,
    is_deleted: record.is_deleted,
    created_at: record.created_at,
    updated_at: record.updated_at,
    ...extra,
  };
}

/** `account_name` of a statement account: a card account's is its card's current nickname (§2.7, §4.7). */
export function statementAccountName(account: StatementAccount): string {
  return account.accountType === "Card" ? account.card.nickname : account.accountName;
}

/** Statement summary (§2.7). */
export function statementView(statement: StatementRecord, companyId: string): Record<string, unknown> {
  return {
    account_external_id: statement.account.accountExternalId,
    account_name: statementAccountName(statement.account),
    account_type: statement.account.accountType,
    company_id: companyId,
    currency: statement.currency,
    statement_period: { month: statement.month, from: statement.from, to: statement.to },
    opening_balance: statement.opening,
    closing_balance: statement.closing,
  };
}

/** One period of the statements-by-account read (§4.7). */
export function statementPeriodView(statement: StatementRecord): Record<string, unknown> {
  return {
    statement_period: { month: statement.month, from: statement.from, to: statement.to },
    opening_balance: statement.opening,
    closing_balance: statement.closing,
    currency: statement.currency,
  };
}

export function fullName(user: UserProfile): string {
  return `${user.firstName} ${user.lastName}`;
}
