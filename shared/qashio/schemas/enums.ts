/**
 * Enum value lists of the spec (sections 2, 3.2 and 4), as literal tuples.
 * Response schemas treat them as drift-tolerant; query schemas treat them as strict.
 */

/** `transaction_category` values listed in section 2.2 ("and further related values": drift expected). */
export const TRANSACTION_CATEGORIES = [
  "purchase",
  "refund",
  "reversal",
  "card_loading",
  "card_unloading",
  "cash_withdrawal",
  "deposit",
  "cashback",
  "account_transfer",
] as const;
export type TransactionCategory = (typeof TRANSACTION_CATEGORIES)[number];

/** `client_sync_status` (section 2.2, transitions in 3.1). */
export const CLIENT_SYNC_STATUSES = ["not_synced", "synced", "outdated"] as const;
export type ClientSyncStatus = (typeof CLIENT_SYNC_STATUSES)[number];

/** `transaction_status` of the single-transaction read (section 2.2). */
export const TRANSACTION_STATUSES = ["draft", "pushed", "synced", "failed"] as const;
export type TransactionStatus = (typeof TRANSACTION_STATUSES)[number];

/** `erp_sync_status` (section 2.2). */
export const ERP_SYNC_STATUSES = ["draft", "pending", "validated", "not_validated", "success", "failed"] as const;
export type ErpSyncStatus = (typeof ERP_SYNC_STATUSES)[number];

/** `approval_status` (section 2.2). */
export const APPROVAL_STATUSES = [
  "initiated",
  "pending",
  "approved",
  "rejected",
  "resolved",
  "review",
  "action_taken",
  "admin_approved",
  "external_dispute",
] as const;
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];

/** ERP card `status` as returned (section 2.3, capitalised). */
export const ERP_CARD_STATUSES = ["Active", "Inactive", "Suspended", "Terminated", "Draft", "Cancelled"] as const;
export type ErpCardStatus = (typeof ERP_CARD_STATUSES)[number];

/** ERP card `status` query filter values (section 4.4, lowercase). */
export const ERP_CARD_STATUS_FILTERS = ["active", "inactive", "suspended", "terminated", "draft", "cancelled"] as const;
export type ErpCardStatusFilter = (typeof ERP_CARD_STATUS_FILTERS)[number];

/** ERP card `card_type` as returned (section 2.3). */
export const CARD_TYPES = ["Virtual", "Physical"] as const;
export type CardType = (typeof CARD_TYPES)[number];

/** ERP card `card_type` query filter values (section 4.4). */
export const CARD_TYPE_FILTERS = ["virtual", "physical"] as const;
export type CardTypeFilter = (typeof CARD_TYPE_FILTERS)[number];

/** ERP card `account_type` (sections 2.3 and 4.4). */
export const CARD_ACCOUNT_TYPES = ["reloadable", "pool"] as const;
export type CardAccountType = (typeof CARD_ACCOUNT_TYPES)[number];

/** Core card `status` (section 2.4 shows lowercase; assumed the ERP card states). Also the card balance `status` filter. */
export const CORE_CARD_STATUSES = ["active", "inactive", "suspended", "terminated", "draft", "cancelled"] as const;
export type CoreCardStatus = (typeof CORE_CARD_STATUSES)[number];

/** Pool account `status` as returned (sections 2.5 and 3.2). */
export const POOL_ACCOUNT_STATUSES = ["Active", "Inactive", "Suspended", "Terminated"] as const;
export type PoolAccountStatus = (typeof POOL_ACCOUNT_STATUSES)[number];

/** Pool account `status` query filter values (section 4.5; `all` switches the filter off). */
export const POOL_ACCOUNT_STATUS_FILTERS = ["active", "inactive", "terminated", "all"] as const;
export type PoolAccountStatusFilter = (typeof POOL_ACCOUNT_STATUS_FILTERS)[number];

/** Master-data `status` (section 2.6), both returned and as a filter. */
export const MASTER_DATA_STATUSES = ["draft", "active", "inactive"] as const;
export type MasterDataStatus = (typeof MASTER_DATA_STATUSES)[number];

/** Statement `account_type` (sections 2.7 and 4.7), both returned and as a filter. */
export const STATEMENT_ACCOUNT_TYPES = ["Card", "PoolAccount", "CompanyFundAccount", "Subsidiary"] as const;
export type StatementAccountType = (typeof STATEMENT_ACCOUNT_TYPES)[number];

/** OAuth grant types of `POST /oauth2/token` (section 4.2). */
export const GRANT_TYPES = ["authorization_code", "refresh_token"] as const;
export type GrantType = (typeof GRANT_TYPES)[number];

/** Scope strings seen (section 5.8); the complete list is not shown. */
export const SCOPES = [
  "wallet:read",
  "cards:read",
  "cards:write",
  "transactions:read",
  "transactions:write",
  "users:read",
] as const;
export type Scope = (typeof SCOPES)[number];

/**
 * Error codes of the §7 envelope: the four the spec shows, plus the ones this
 * project uses for query/body checks (see docs/spec-gaps.md, "Schemas").
 */
export const ERROR_CODES = [
  "NOT_FOUND",
  "INVALID_ENUM",
  "OUT_OF_RANGE",
  "UNAUTHORIZED",
  "INVALID_FORMAT",
  "REQUIRED",
  "INVALID_RANGE",
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];
