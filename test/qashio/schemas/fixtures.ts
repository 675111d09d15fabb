/**
 * Spec-shaped provider payloads (raw JSON as the provider sends it), for schema
 * tests and for anyone who needs realistic examples. Each builder returns a fresh
 * object; pass overrides to vary fields.
 */

type Overrides = Readonly<Record<string, unknown>>;

export const TRANSACTION_ID = "5f0c7a5e-2d4b-4f6a-9b1e-3c8d2a7e9f10";
export const CARD_ID = "CA7Q2M9X4K";
export const REQUEST_ID = "req-7d3f2a1b";
export const TIMESTAMP = "2024-05-14T09:30:00Z";

/** A generic six-key entry (segments, sync_errors, receipts). */
export function segmentFixture(overrides: Overrides = {}) {
  return {
    id: "seg-001",
    name: "Dubai Marina",
    label: "Location",
    code: "LOC-DXB",
    erp_internal_id: "1001",
    erp_code: "DXB",
    ...overrides,
  };
}

/** A purchase as returned by the transaction list (§2.2). */
export function transactionFixture(overrides: Overrides = {}) {
  return {
    id: TRANSACTION_ID,
    qashio_id: "CT10023456",
    parent_id: null,
    parent_qashio_id: null,
    company_id: "co_51f2",
    merchant_name: "Careem Rides",
    merchant_city: "Dubai",
    merchant_country: "ARE",
    mcc_code: "4121",
    mcc_description: "Taxicabs and Limousines",
    transaction_amount: 54.5,
    transaction_currency: "AED",
    billing_amount: 55.0,
    billing_currency: "AED",
    clearing_amount: 55.0,
    vat_amount: 2.6,
    fee_charges: 0.5,
    transaction_time: "2024-05-13T18:02:11Z",
    cleared_at: null,
    created_at: "2024-05-13T18:02:15Z",
    updated_at: "2024-05-13T18:05:00Z",
    modified_date: "2024-05-13T18:05:00Z",
    transaction_type: "debit",
    transaction_category: "purchase",
    clearing_status: "pending",
    settlement_status: "unsettled",
    message_type: "authorization",
    status_code: "00",
    card_name: "Travel card",
    card_external_id: CARD_ID,
    card_last_four: "4821",
    card_holder_name: "Aisha Rahman",
    card_holder_email: "aisha.rahman@example.com",
    employee_id: "EMP-0042",
    pool_account_name: null,
    pool_external_id: null,
    erp_supplier: {
      id: "9b2f4e1a-7c3d-4e5f-8a9b-0c1d2e3f4a5b",
      qashio_external_id: "SUP-CAREEM",
      remote_id: "V-1002",
      remote_name: "Careem Networks FZ LLC",
      status: "active",
    },
    erp_chart_of_account: {
      id: "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
      qashio_external_id: "COA-6100",
      remote_id: "6100",
      remote_name: "Travel and transport",
      account_type: "expense",
      account_number: "6100",
      account_currency: "AED",
    },
    erp_supplier_name: "Careem Networks FZ LLC",
    erp_chart_of_account_name: "Travel and transport",
    chart_of_account_number: "6100",
    erp_tax_rate_name: "VAT 5%",
    expense_category_name: "Travel",
    vendor_trn: "100234567800003",
    purchase_order_number: null,
    rrn: "413518123456",
    supplier_qashio_external_id: "SUP-CAREEM",
    chart_of_account_qashio_external_id: "COA-6100",
    erp_supplier_remote_id: "V-1002",
    erp_tax_rate_remote_id: "TAX-5",
    erp_chart_of_account_remote_id: "6100",
    client_sync_status: "not_synced",
    erp_sync_status: "pending",
    erp_sync_type: "bill",
    exclude_from_sync: false,
    sync_errors: [],
    approval_status: "pending",
    approved_date_time: null,
    approved_by: null,
    memo: "Airport to client office",
    transaction_description: "CAREEM RIDES DUBAI ARE",
    segments: [segmentFixture(), segmentFixture({ id: "seg-002", name: "Sales", label: "Department", code: "DEP-SAL" })],
    line_items: [
      {
        id: "li-1",
        amount: 54.5,
        vat_amount: 2.6,
        description: "Ride",
        expense_category: "Travel",
        erp_tax_rate_name: "VAT 5%",
        erp_tax_rate_remote_id: "TAX-5",
        erp_chart_of_account_name: "Travel and transport",
        erp_chart_of_account_remote_id: "6100",
        segments: [segmentFixture()],
        created_at: "2024-05-13T18:02:15Z",
        updated_at: "2024-05-13T18:05:00Z",
      },
    ],
    receipts: [segmentFixture({ id: "rcpt-1", name: "receipt.jpg", label: "Receipt", code: null })],
    visible: true,
    ...overrides,
  };
}

/** A refund of {@link transactionFixture}, carrying its parent's references. */
export function refundFixture(overrides: Overrides = {}) {
  return transactionFixture({
    id: "e7d6c5b4-a392-4817-b6f5-e4d3c2b1a098",
    qashio_id: "CT10023999",
    parent_id: TRANSACTION_ID,
    parent_qashio_id: "CT10023456",
    transaction_category: "refund",
    transaction_amount: -54.5,
    billing_amount: -55.0,
    ...overrides,
  });
}

/** The single-transaction read (§2.2 rule 2): pre-fee amounts plus fees and company. */
export function transactionDetailFixture(overrides: Overrides = {}) {
  return transactionFixture({
    billing_amount: 54.5,
    clearing_amount: 54.5,
    transaction_status: "pushed",
    transaction_fee_amount: 0.5,
    clearing_fee: 0,
    erp_company: {
      id: "co_51f2",
      name: "Falcon Trading",
      business_legal_name: "Falcon Trading LLC",
      company_country: "ARE",
      parent_company_id: null,
      status: "active",
      is_deleted: false,
      updated_at: "2024-01-02T10:00:00Z",
      created_at: "2023-06-01T08:00:00Z",
    },
    ...overrides,
  });
}

/** An ERP card as listed (§2.3). */
export function erpCardFixture(overrides: Overrides = {}) {
  return {
    id: CARD_ID,
    card_nickname: "Travel card",
    status: "Active",
    card_type: "Virtual",
    masked_card_number: "5300 •••• •••• 4821",
    cardholder: { name: "Aisha Rahman", email: "aisha.rahman@example.com", employee_id: "EMP-0042" },
    company_name: "Falcon Trading",
    account_external_id: "ACC-88120",
    account_type: "reloadable",
    card_currency: "AED",
    allowed_max_balance: 10000,
    topup_type: "manual",
    float_management_enabled: false,
    card_replaced: false,
    purchase_limits_active: true,
    transaction_limits_active: false,
    country_limits_active: false,
    category_limits_active: true,
    atm_withdrawal_allowed: false,
    low_balance_notification_active: true,
    low_balance_notification_amount: 500,
    segments: [segmentFixture()],
    custom_segments: [],
    issued_at: "2024-01-10T08:00:00Z",
    activated_at: "2024-01-10T09:12:00Z",
    terminated_at: null,
    created_at: "2024-01-10T08:00:00Z",
    ...overrides,
  };
}

/** The single ERP card read, with the configuration objects of §2.3. */
export function erpCardDetailFixture(overrides: Overrides = {}) {
  return erpCardFixture({
    purchase_limits: { enabled: true, amount: 5000, frequency: "MONTHLY", limit_currency: "AED", number_of_purchases: 50 },
    country_limits: { restriction_mode: "allow", allowed_countries: ["ARE", "SAU"], blocked_countries: [] },
    merchant_category_limits: {
      restriction_type: "block",
      categories: [{ name: "Gambling", mcc_codes: ["7995"] }],
      merchant_groups: [],
    },
    topup_configuration: { auto_topup_enabled: true, auto_topup_amount: 1000, frequency: "MONTHLY" },
    auto_top_up_configuration: { amount: 1000, trigger: "below_threshold" },
    atm_configuration: {
      atm_withdrawal_allowed: false,
      frequency: "DAILY",
      max_amount: 0,
      number_of_withdrawals: 0,
      limit_per_withdrawal: 0,
    },
    ...overrides,
  });
}

/** A core card as listed (§2.4), with the string-typed booleans and numbers some responses carry. */
export function coreCardFixture(overrides: Overrides = {}) {
  return {
    id: CARD_ID,
    nickname: "Travel card",
    card_number: "530012******4821",
    card_type: "PHYSICAL",
    status: "active",
    display_status: "active",
    user_name: "Aisha Rahman",
    user_email: "aisha.rahman@example.com",
    company_name: "Falcon Trading",
    velocity_period: "MONTHLY",
    allow_atm: "false",
    allow_replace_card: "true",
    card_replaced: false,
    return_card: "false",
    shipping_card: true,
    terminated_at: null,
    spend_restriction_type: "none",
    last_four: "4821",
    allowed_countries_list: ["ARE"],
    allowed_countries_list_active: "false",
    issuer: "issuer-a",
    allowed_mccs_active: false,
    spend_limit_active: "true",
    atm_limit_active: "false",
    auto_top_up_amount: "1000",
    auto_load_on_transaction_approval: "false",
    tokenization_status: "tokenized",
    account_type: "reloadable",
    account_id: "ACC-88120",
    currency: "AED",
    show_pool_balance_to_cardholder: "false",
    is_manager: false,
    is_account_manager: "false",
    is_dept_manager: "false",
    can_edit_all_time_limit: "true",
    can_reset_limit: true,
    issued_at: "2024-01-10T08:00:00Z",
    first_activated_at: "2024-01-10T09:12:00Z",
    external_id: "ext-4821",
    replaced_by_card_external_id: null,
    replaced_by_card_id: null,
    card_usage_type: "RELOADABLE",
    card_usage_type_amount: "10000",
    account_balance: "2350.75",
    spend_limit: "5000",
    atm_limit: 0,
    created_at: "2024-01-10T08:00:00Z",
    atm_transactions_limit_active: "false",
    transactions_limit_active: "true",
    transactions_limit: {
      max_amount: "2000",
      min_amount: "0",
      currency: "AED",
      period: "DAILY",
      frequency: "10",
      transaction_scope: "all",
    },
    shipping_details: { method: "courier", return_address: null, shipping_address: { city: "Dubai" } },
    wallets_status: { apple_pay: "true", google_pay: false, samsung_pay: "false" },
    user_profile: {
      first_name: "Aisha",
      last_name: "Rahman",
      fullname: "Aisha Rahman",
      email: "aisha.rahman@example.com",
      user_id: "usr_1001",
      status: "active",
      employee_id: "EMP-0042",
    },
    advanced_velocity_limits: [
      { id: "avl-1", title: "Daily cap", active: "true", amount: "500", currency: "AED", period: "DAILY", frequency: "5" },
    ],
    ...overrides,
  };
}

/** `data.card` of a card write: spend limit and card product as objects. */
export function coreCardWriteFixture(overrides: Overrides = {}) {
  return coreCardFixture({
    card_type: "Virtual",
    spend_limit: {
      id: "sl-1",
      name: "Monthly",
      active: true,
      min_amount: 0,
      max_amount: 5000,
      currency: "AED",
      period: "MONTHLY",
      frequency: 30,
      remaining_balance: "4200.00",
      consumed_limit: "800.00",
    },
    card_product: { id: "cp-1", name: "Corporate Virtual", status: "active", auth_settings_allowed_list_status_active: "false" },
    ...overrides,
  });
}

/** A pool account (§2.5). */
export function poolAccountFixture(overrides: Overrides = {}) {
  return {
    id: "PA-2201",
    account_name: "Marketing pool",
    status: "Active",
    currency: "AED",
    topup_type: "manual",
    allowed_max_balance: 50000,
    low_balance_notification_active: true,
    low_balance_notification_amount: 2500,
    company_name: "Falcon Trading",
    created_by: { user_id: "usr_1", name: "Omar Said" },
    account_managers: [{ user_id: "usr_2", name: "Lina Haddad", email: "lina.haddad@example.com" }],
    created_at: "2023-11-01T07:00:00Z",
    ...overrides,
  };
}

const masterDataBase = {
  remote_id: "R-1",
  remote_name: "Record",
  status: "active",
  is_deleted: false,
  created_at: "2023-09-01T00:00:00Z",
  updated_at: "2024-04-01T00:00:00Z",
};

/** A bank account master-data record (§2.6). */
export function bankAccountFixture(overrides: Overrides = {}) {
  return {
    ...masterDataBase,
    id: "4d3c2b1a-0f9e-4d8c-b7a6-5f4e3d2c1b0a",
    remote_id: "BANK-01",
    remote_name: "Emirates NBD Current",
    account_type: "bank",
    account_number: "1012345678901",
    reconciliation_account: true,
    ...overrides,
  };
}

/** A chart-of-account (ledger account) record (§2.6). */
export function chartOfAccountFixture(overrides: Overrides = {}) {
  return {
    ...masterDataBase,
    id: "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
    remote_id: "6100",
    remote_name: "Travel and transport",
    qashio_external_id: "COA-6100",
    account_number: "6100",
    account_type: "expense",
    account_currency: "AED",
    description: "Taxis, flights and hotels",
    ...overrides,
  };
}

/** A tax rate record (§2.6). */
export function taxRateFixture(overrides: Overrides = {}) {
  return {
    ...masterDataBase,
    id: "7a6b5c4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d",
    remote_id: "TAX-5",
    remote_name: "VAT 5%",
    tax_rate_code: "SR",
    total_tax_rate: 5,
    country_code: "AE",
    ...overrides,
  };
}

/** A supplier record (§2.6). */
export function supplierFixture(overrides: Overrides = {}) {
  return {
    ...masterDataBase,
    id: "9b2f4e1a-7c3d-4e5f-8a9b-0c1d2e3f4a5b",
    remote_id: "V-1002",
    remote_name: "Careem Networks FZ LLC",
    qashio_external_id: "SUP-CAREEM",
    ...overrides,
  };
}

/** A statement summary (§2.7). */
export function statementSummaryFixture(overrides: Overrides = {}) {
  return {
    account_external_id: CARD_ID,
    account_name: "Travel card",
    account_type: "Card",
    company_id: "co_51f2",
    currency: "AED",
    statement_period: { month: "2024-04", from: "2024-04-01", to: "2024-04-30" },
    opening_balance: 1200.0,
    closing_balance: 845.25,
    ...overrides,
  };
}

/** `data` of the statements-by-account read (§4.7), with its inner pagination. */
export function statementsByAccountFixture(overrides: Overrides = {}) {
  return {
    account_external_id: CARD_ID,
    account_name: "Travel card",
    account_type: "Card",
    page: 1,
    total_pages: 2,
    total: 14,
    data: [
      {
        statement_period: { month: "2024-04", from: "2024-04-01", to: "2024-04-30" },
        opening_balance: 1200.0,
        closing_balance: 845.25,
        currency: "AED",
      },
      {
        statement_period: { month: "2024-03", from: "2024-03-01", to: "2024-03-31" },
        opening_balance: 300.0,
        closing_balance: 1200.0,
        currency: "AED",
      },
    ],
    ...overrides,
  };
}

/** A token set (§2.8). */
export function tokenSetFixture(overrides: Overrides = {}) {
  return {
    access_token: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0ZXN0In0.c2lnbmF0dXJl",
    token_type: "Bearer",
    refresh_token: "rt_3f9a0c1d2e",
    scope: "transactions:read transactions:write cards:read",
    ...overrides,
  };
}

/** `data` of the card balance read (§4.9). */
export function cardBalanceFixture(overrides: Overrides = {}) {
  return {
    company_balance: { amount: 125000.5, currency: "AED" },
    cards: [{ card_id: CARD_ID, nickname: "Travel card", last_four: "4821", status: "active", balance: 2350.75, currency: "AED" }],
    ...overrides,
  };
}

/** `data` of an invitation processed immediately (§4.10). */
export function invitationResultFixture(overrides: Overrides = {}) {
  return {
    message: "Invitations processed",
    summary: {
      success_emails: { end_user: ["new.hire@example.com"] },
      failed_emails: { end_user: ["already.invited@example.com"] },
      total_processed: { success: 1, failed: 1, total: 2 },
    },
    ...overrides,
  };
}

/** `pagination` block (§8.1). */
export function paginationFixture(overrides: Overrides = {}) {
  return { page: 1, page_size: 10, total_records: 23, total_pages: 3, has_next: true, has_previous: false, ...overrides };
}

/** `page_info` of the core card list (§4.9). */
export function pageInfoFixture(overrides: Overrides = {}) {
  return {
    current_page: 1,
    per_page: 20,
    total_entries: 31,
    total_pages: 2,
    next_page: 2,
    previous_page: null,
    offset: 0,
    ...overrides,
  };
}

/** `meta` of an envelope. */
export function metaFixture(overrides: Overrides = {}) {
  return { request_id: REQUEST_ID, timestamp: TIMESTAMP, ...overrides };
}

/** A success envelope around `data` (§4.1). */
export function successEnvelopeFixture(data: unknown, overrides: Overrides = {}) {
  return { status_code: 200, success: true, data, meta: metaFixture(), ...overrides };
}

/** A list envelope with `pagination` (§4.1, §8.1). */
export function listEnvelopeFixture(items: unknown[], overrides: Overrides = {}) {
  return successEnvelopeFixture(items, { pagination: paginationFixture({ total_records: items.length }), ...overrides });
}

/** An error envelope (§7): no `success` field. */
export function errorEnvelopeFixture(overrides: Overrides = {}) {
  return {
    status_code: 400,
    message: "Validation failed",
    errors: [
      { field: "card_last_four", code: "INVALID_FORMAT", message: "card_last_four must be exactly four digits" },
      { field: null, code: "INVALID_ENUM", message: "unknown value" },
    ],
    meta: metaFixture(),
    ...overrides,
  };
}
