/** Transaction (§2.2): list shape and single-read shape. */
import * as z from "zod";
import { driftEnumsFor } from "./drift.js";
import {
  APPROVAL_STATUSES,
  CLIENT_SYNC_STATUSES,
  ERP_SYNC_STATUSES,
  MASTER_DATA_STATUSES,
  TRANSACTION_CATEGORIES,
  TRANSACTION_STATUSES,
} from "./enums.js";
import {
  QashioIdSchema,
  TransactionIdSchema,
  UuidSchema,
  optArray,
  optBoolean,
  optFourDigitCode,
  optNumber,
  optRef,
  optString,
  optStringish,
} from "./primitives.js";

const drift = driftEnumsFor("Transaction");

/** Generic six-key entry shared by `segments`, `sync_errors` and `receipts` (§2.2). */
export const GenericEntrySchema = z.looseObject({
  id: optStringish(),
  name: optString(),
  label: optString(),
  code: optStringish(),
  erp_internal_id: optStringish(),
  erp_code: optStringish(),
});
export type GenericEntry = z.output<typeof GenericEntrySchema>;

/** One cost-allocation segment (`Location`, `Project`, ... or a custom underscore key). */
export const SegmentSchema = GenericEntrySchema;
export type Segment = GenericEntry;

/**
 * `segments`: an array of entries, or (tolerated, see spec-gaps) an object keyed
 * by segment label / custom key.
 */
export const SegmentsSchema = z
  .union([z.array(SegmentSchema), z.record(z.string(), SegmentSchema.nullable())], {
    // Said whole rather than the failing entry's path, which holds a key the provider chose.
    error: "expected a list of segment entries or an object of them by label, each entry an object of text members (its id and codes may be numbers), or null",
  })
  .nullish();
export type Segments = z.output<typeof SegmentsSchema>;

/** `erp_supplier` nested on a transaction. */
export const ErpSupplierRefSchema = z.looseObject({
  id: optString(),
  qashio_external_id: optString(),
  remote_id: optStringish(),
  remote_name: optString(),
  status: drift(MASTER_DATA_STATUSES, "erp_supplier.status", { caseInsensitive: true }).nullish(),
});
export type ErpSupplierRef = z.output<typeof ErpSupplierRefSchema>;

/** `erp_chart_of_account` nested on a transaction. */
export const ErpChartOfAccountRefSchema = z.looseObject({
  id: optString(),
  qashio_external_id: optString(),
  remote_id: optStringish(),
  remote_name: optString(),
  account_type: optString(),
  account_number: optStringish(),
  account_currency: optString(),
});
export type ErpChartOfAccountRef = z.output<typeof ErpChartOfAccountRefSchema>;

/**
 * `approved_by` nested on a transaction. The spec shows no `employee_id` nor `email`, but both are personal fields
 * (shared/bridge/pii.ts) the event schemas declare strings: sent, they are typed as the cardholder's are.
 */
export const ApprovedBySchema = z.looseObject({
  user_external_id: optStringish(),
  name: optString(),
  employee_id: optStringish(),
  email: optString(),
});
export type ApprovedBy = z.output<typeof ApprovedBySchema>;

/** One `line_items` entry. */
export const LineItemSchema = z.looseObject({
  id: optStringish(),
  amount: optNumber(),
  vat_amount: optNumber(),
  description: optString(),
  expense_category: z.unknown().optional(),
  erp_tax_rate_name: optString(),
  erp_tax_rate_remote_id: optStringish(),
  erp_chart_of_account_name: optString(),
  erp_chart_of_account_remote_id: optStringish(),
  segments: SegmentsSchema,
  created_at: optString(),
  updated_at: optString(),
});
export type LineItem = z.output<typeof LineItemSchema>;

/**
 * Transaction as returned by `GET /public/v1/erp/transactions` (§2.2, §4.3).
 * Strict on identity (`id` UUID, `qashio_id` `CT…`) so a broken record is
 * rejected (and quarantined by the engine); lenient elsewhere.
 */
export const TransactionSchema = z.looseObject({
  // Identity
  id: TransactionIdSchema,
  qashio_id: QashioIdSchema,
  parent_id: optRef(UuidSchema),
  parent_qashio_id: optRef(QashioIdSchema),
  company_id: optStringish(),
  // Merchant
  merchant_name: optString(),
  merchant_city: optString(),
  merchant_country: optString(),
  mcc_code: optFourDigitCode(),
  mcc_description: optString(),
  // Amounts (fee-inclusive in lists, rule 1)
  transaction_amount: optNumber(),
  transaction_currency: optString(),
  billing_amount: optNumber(),
  billing_currency: optString(),
  clearing_amount: optNumber(),
  vat_amount: optNumber(),
  fee_charges: optNumber(),
  // Timing
  transaction_time: optString(),
  cleared_at: optString(),
  created_at: optString(),
  updated_at: optString(),
  modified_date: optString(),
  // Classification
  transaction_type: optString(),
  transaction_category: drift(TRANSACTION_CATEGORIES, "transaction_category").nullish(),
  clearing_status: optString(),
  settlement_status: optString(),
  message_type: optString(),
  status_code: optStringish(),
  // Card and holder (card_holder_* are personal data, rule 4)
  card_name: optString(),
  card_external_id: optString(),
  card_last_four: optFourDigitCode(),
  card_holder_name: optString(),
  card_holder_email: optString(),
  employee_id: optStringish(),
  pool_account_name: optString(),
  pool_external_id: optString(),
  // Accounting
  erp_supplier: ErpSupplierRefSchema.nullish(),
  erp_chart_of_account: ErpChartOfAccountRefSchema.nullish(),
  erp_supplier_name: optString(),
  erp_chart_of_account_name: optString(),
  chart_of_account_number: optStringish(),
  erp_tax_rate_name: optString(),
  expense_category_name: optString(),
  vendor_trn: optStringish(),
  purchase_order_number: optStringish(),
  rrn: optStringish(),
  supplier_qashio_external_id: optString(),
  chart_of_account_qashio_external_id: optString(),
  erp_supplier_remote_id: optStringish(),
  erp_tax_rate_remote_id: optStringish(),
  erp_chart_of_account_remote_id: optStringish(),
  // Sync and approval
  client_sync_status: drift(CLIENT_SYNC_STATUSES, "client_sync_status").nullish(),
  erp_sync_status: drift(ERP_SYNC_STATUSES, "erp_sync_status").nullish(),
  erp_sync_type: optString(),
  exclude_from_sync: optBoolean(),
  sync_errors: optArray(GenericEntrySchema),
  approval_status: drift(APPROVAL_STATUSES, "approval_status").nullish(),
  approved_date_time: optString(),
  approved_by: ApprovedBySchema.nullish(),
  // Detail
  memo: optString(),
  transaction_description: optString(),
  segments: SegmentsSchema,
  line_items: optArray(LineItemSchema),
  receipts: optArray(GenericEntrySchema),
  visible: optBoolean(),
});
export type Transaction = z.output<typeof TransactionSchema>;

/** `erp_company` of the single-transaction read (§2.2 rule 3). */
export const ErpCompanySchema = z.looseObject({
  id: optStringish(),
  name: optString(),
  business_legal_name: optString(),
  company_country: optString(),
  parent_company_id: optStringish(),
  status: optString(),
  is_deleted: optBoolean(),
  updated_at: optString(),
  created_at: optString(),
});
export type ErpCompany = z.output<typeof ErpCompanySchema>;

/**
 * Transaction as returned by `GET /public/v1/erp/transactions/{id}` (§2.2 rule 2):
 * the list shape plus `transaction_status`, the fee amounts and `erp_company`.
 * Here `billing_amount` / `clearing_amount` are pre-fee.
 */
export const TransactionDetailSchema = TransactionSchema.extend({
  transaction_status: driftEnumsFor("TransactionDetail")(TRANSACTION_STATUSES, "transaction_status").nullish(),
  transaction_fee_amount: optNumber(),
  clearing_fee: optNumber(),
  erp_company: ErpCompanySchema.nullish(),
});
export type TransactionDetail = z.output<typeof TransactionDetailSchema>;
