/** Card, accounting view (§2.3): ERP card list shape and single-read (detail) shape. */
import * as z from "zod";
import { driftEnumsFor } from "./drift.js";
import { CARD_ACCOUNT_TYPES, CARD_TYPES, ERP_CARD_STATUSES } from "./enums.js";
import { CardIdSchema, fourDigitCode, optArray, optBoolean, optNumber, optString, optStringish } from "./primitives.js";
import { SegmentsSchema } from "./transaction.js";

const drift = driftEnumsFor("ErpCard");

/** `cardholder` of an ERP card. */
export const ErpCardholderSchema = z.looseObject({
  name: optString(),
  email: optString(),
  employee_id: optStringish(),
});
export type ErpCardholder = z.output<typeof ErpCardholderSchema>;

/** Card as returned by `GET /public/v1/erp/cards` (§2.3, §4.4). */
export const ErpCardSchema = z.looseObject({
  id: CardIdSchema,
  card_nickname: optString(),
  status: drift(ERP_CARD_STATUSES, "status", { caseInsensitive: true }).nullish(),
  card_type: drift(CARD_TYPES, "card_type", { caseInsensitive: true }).nullish(),
  masked_card_number: optString(),
  cardholder: ErpCardholderSchema.nullish(),
  company_name: optString(),
  account_external_id: optString(),
  // Spec: other values such as a company-account value can also appear (reported as drift).
  account_type: drift(CARD_ACCOUNT_TYPES, "account_type", { caseInsensitive: true }).nullish(),
  card_currency: optString(),
  allowed_max_balance: optNumber(),
  topup_type: optString(),
  float_management_enabled: optBoolean(),
  card_replaced: optBoolean(),
  purchase_limits_active: optBoolean(),
  transaction_limits_active: optBoolean(),
  country_limits_active: optBoolean(),
  category_limits_active: optBoolean(),
  atm_withdrawal_allowed: optBoolean(),
  low_balance_notification_active: optBoolean(),
  low_balance_notification_amount: optNumber(),
  segments: SegmentsSchema,
  custom_segments: z.unknown().optional(),
  issued_at: optString(),
  activated_at: optString(),
  terminated_at: optString(),
  created_at: optString(),
});
export type ErpCard = z.output<typeof ErpCardSchema>;

/** `purchase_limits` of the ERP card read. */
export const PurchaseLimitsSchema = z.looseObject({
  enabled: optBoolean(),
  amount: optNumber(),
  frequency: optString(),
  limit_currency: optString(),
  number_of_purchases: optNumber(),
});
export type PurchaseLimits = z.output<typeof PurchaseLimitsSchema>;

/** `country_limits` of the ERP card read. */
export const CountryLimitsSchema = z.looseObject({
  restriction_mode: optString(),
  allowed_countries: optArray(z.string()),
  blocked_countries: optArray(z.string()),
});
export type CountryLimits = z.output<typeof CountryLimitsSchema>;

/**
 * One merchant category of `merchant_category_limits`: a name and MCC codes (key names not shown). A code sent as a
 * number reads as its four digits, as a transaction's `mcc_code` does, so `742` matches the merchant's `"0742"`.
 */
export const MerchantCategorySchema = z.looseObject({
  name: optString(),
  mcc_codes: optArray(fourDigitCode()),
});
export type MerchantCategory = z.output<typeof MerchantCategorySchema>;

/** `merchant_category_limits` of the ERP card read. */
export const MerchantCategoryLimitsSchema = z.looseObject({
  restriction_type: optString(),
  categories: optArray(MerchantCategorySchema),
  merchant_groups: optArray(z.unknown()),
});
export type MerchantCategoryLimits = z.output<typeof MerchantCategoryLimitsSchema>;

/** `topup_configuration` of the ERP card read. */
export const TopupConfigurationSchema = z.looseObject({
  auto_topup_enabled: optBoolean(),
  auto_topup_amount: optNumber(),
  frequency: optString(),
});
export type TopupConfiguration = z.output<typeof TopupConfigurationSchema>;

/** `auto_top_up_configuration`: "auto top-up amount and trigger"; key names not shown, kept loose. */
export const AutoTopUpConfigurationSchema = z.looseObject({});
export type AutoTopUpConfiguration = z.output<typeof AutoTopUpConfigurationSchema>;

/** `atm_configuration` of the ERP card read. */
export const AtmConfigurationSchema = z.looseObject({
  atm_withdrawal_allowed: optBoolean(),
  frequency: optString(),
  max_amount: optNumber(),
  number_of_withdrawals: optNumber(),
  limit_per_withdrawal: optNumber(),
});
export type AtmConfiguration = z.output<typeof AtmConfigurationSchema>;

/** Card as returned by `GET /public/v1/erp/cards/{cardId}`: list shape plus configuration objects. */
export const ErpCardDetailSchema = ErpCardSchema.extend({
  purchase_limits: PurchaseLimitsSchema.nullish(),
  country_limits: CountryLimitsSchema.nullish(),
  merchant_category_limits: MerchantCategoryLimitsSchema.nullish(),
  topup_configuration: TopupConfigurationSchema.nullish(),
  auto_top_up_configuration: AutoTopUpConfigurationSchema.nullish(),
  atm_configuration: AtmConfigurationSchema.nullish(),
});
export type ErpCardDetail = z.output<typeof ErpCardDetailSchema>;

/** Members of the single ERP card read that the list does not carry: its configuration objects (spec §2.3). */
export const ERP_CARD_DETAIL_KEYS: readonly string[] = Object.keys(ErpCardDetailSchema.shape).filter((key) => !Object.hasOwn(ErpCardSchema.shape, key));
