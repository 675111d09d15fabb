/**
 * Card, operational view (§2.4): `data.cards[]` of the core card list and
 * `data.card` of the card writes. Boolean-like and numeric-like values arrive as
 * strings in some responses; they are normalised to booleans and numbers here.
 */
import * as z from "zod";
import { driftEnumsFor } from "./drift.js";
import { CARD_TYPES, CORE_CARD_STATUSES } from "./enums.js";
import {
  CardIdSchema,
  booleanish,
  numberish,
  optArray,
  optBoolean,
  optFourDigitCode,
  optNumber,
  optString,
  optStringish,
} from "./primitives.js";

const drift = driftEnumsFor("CoreCard");

/** A value documented only by name that may be a flag or an amount: normalised either way. */
const FLAG_OR_AMOUNT = z
  .union([booleanish(), numberish()], { error: "expected a flag (a boolean, or true or false as text) or an amount (a number, or a decimal number as text), or null" })
  .nullish();
const optFlagOrAmount = () => FLAG_OR_AMOUNT;

/** `shipping_details` of a core card. */
export const ShippingDetailsSchema = z.looseObject({
  method: optString(),
  return_address: z.unknown().optional(),
  shipping_address: z.unknown().optional(),
});
export type ShippingDetails = z.output<typeof ShippingDetailsSchema>;

/** `wallets_status`: one flag per mobile wallet. */
export const WalletsStatusSchema = z.looseObject({
  apple_pay: optBoolean(),
  google_pay: optBoolean(),
  samsung_pay: optBoolean(),
});
export type WalletsStatus = z.output<typeof WalletsStatusSchema>;

/** `user_profile` of a core card (personal data of the cardholder). */
export const UserProfileSchema = z.looseObject({
  department_name: optString(),
  first_name: optString(),
  last_name: optString(),
  company_name: optString(),
  user_name: optString(),
  system_role_name: optString(),
  email: optString(),
  user_email: optString(),
  external_id: optStringish(),
  user_id: optStringish(),
  status: optString(),
  fullname: optString(),
  employee_id: optStringish(),
  department_id: optStringish(),
  managing_departments: z.unknown().optional(),
});
export type UserProfile = z.output<typeof UserProfileSchema>;

/** `transactions_limit` of a core card. */
export const TransactionsLimitSchema = z.looseObject({
  max_amount: optNumber(),
  min_amount: optNumber(),
  currency: optString(),
  period: optString(),
  frequency: optFlagOrAmount(),
  transaction_scope: optString(),
});
export type TransactionsLimit = z.output<typeof TransactionsLimitSchema>;

/** `spend_limit` object (write responses). */
export const SpendLimitSchema = z.looseObject({
  id: optStringish(),
  name: optString(),
  active: optBoolean(),
  description: optString(),
  min_amount: optNumber(),
  max_amount: optNumber(),
  currency: optString(),
  period: optString(),
  limit_type: optString(),
  frequency: optFlagOrAmount(),
  num_of_days: optNumber(),
  remote_id: optStringish(),
  external_id: optStringish(),
  remaining_balance: optNumber(),
  remaining_frequency: optNumber(),
  remote_sync: optFlagOrAmount(),
  consumed_limit: optNumber(),
  consumed_frequency: optNumber(),
  transaction_scope: optString(),
  remote_data: z.unknown().optional(),
});
export type SpendLimit = z.output<typeof SpendLimitSchema>;

/** One `advanced_velocity_limits` entry. */
export const AdvancedVelocityLimitSchema = z.looseObject({
  id: optStringish(),
  title: optString(),
  limit_by_type: optString(),
  active: optBoolean(),
  amount: optNumber(),
  currency: optString(),
  period: optString(),
  remote_linked: optBoolean(),
  remote_sync: optFlagOrAmount(),
  remaining_balance: optNumber(),
  limit_type: optString(),
  issuer: optString(),
  external_id: optStringish(),
  effective_from: optString(),
  effective_to: optString(),
  frequency: optFlagOrAmount(),
  remaining_frequency: optNumber(),
  consumed_limit: optNumber(),
  consumed_frequency: optNumber(),
  expense_category_ids: optArray(z.union([z.string(), z.number()])),
});
export type AdvancedVelocityLimit = z.output<typeof AdvancedVelocityLimitSchema>;

/** `card_product` (write responses). */
export const CardProductSchema = z.looseObject({
  id: optStringish(),
  name: optString(),
  status: optString(),
  description: optString(),
  pan_format_token: optStringish(),
  track_format_token: optStringish(),
  proxy_format_token: optStringish(),
  remote_id: optStringish(),
  external_id: optStringish(),
  notification_template_remote_id: optStringish(),
  auth_settings_allowed_list_status_active: optBoolean(),
  currency_settings: z.unknown().optional(),
  pin_settings: z.unknown().optional(),
});
export type CardProduct = z.output<typeof CardProductSchema>;

/** An amount, or a limit object (the list and write responses differ). */
const optAmountOrLimit = () =>
  z.union([numberish(), SpendLimitSchema], { error: "expected an amount (a number, or a decimal number as text) or a limit object, or null" }).nullish();

/** Core card, normalised (§2.4). Status and card type keep the provider's case. */
export const CoreCardSchema = z.looseObject({
  id: CardIdSchema,
  nickname: optString(),
  card_number: optString(),
  card_type: drift(CARD_TYPES, "card_type", { caseInsensitive: true }).nullish(),
  status: drift(CORE_CARD_STATUSES, "status", { caseInsensitive: true }).nullish(),
  display_status: optString(),
  user_name: optString(),
  user_email: optString(),
  company_name: optString(),
  velocity_period: optString(),
  allow_atm: optBoolean(),
  allow_replace_card: optBoolean(),
  card_replaced: optBoolean(),
  return_card: optBoolean(),
  shipping_card: optBoolean(),
  terminated_at: optString(),
  spend_restriction_type: optString(),
  last_four: optFourDigitCode(),
  limit_amount_notification: optFlagOrAmount(),
  card_balance_running_low_notification: optFlagOrAmount(),
  allowed_countries_list: z.unknown().optional(),
  allowed_countries_list_active: optBoolean(),
  foreign_entity: z.unknown().optional(),
  atm_restricted_at: optString(),
  issuer: optString(),
  allowed_mccs_active: optBoolean(),
  spend_limit_active: optBoolean(),
  atm_limit_active: optBoolean(),
  auto_top_up_amount: optNumber(),
  auto_load_on_transaction_approval: optBoolean(),
  tokenization_status: optString(),
  account_type: optString(),
  account_id: optStringish(),
  currency: optString(),
  show_pool_balance_to_cardholder: optBoolean(),
  is_manager: optBoolean(),
  is_account_manager: optBoolean(),
  is_dept_manager: optBoolean(),
  can_edit_all_time_limit: optBoolean(),
  can_reset_limit: optBoolean(),
  reset_summary: z.unknown().optional(),
  issued_at: optString(),
  first_activated_at: optString(),
  external_id: optStringish(),
  replaced_by_card_external_id: optStringish(),
  replaced_by_card_id: optStringish(),
  card_usage_type: optString(),
  card_usage_type_amount: optNumber(),
  account_balance: optNumber(),
  shipment_tracking: z.unknown().optional(),
  spend_limit: optAmountOrLimit(),
  atm_limit: optAmountOrLimit(),
  shipping_address: z.unknown().optional(),
  card_template: z.unknown().optional(),
  erp_bank_account: z.unknown().optional(),
  step_up_auth_delegated_user_profile: z.unknown().optional(),
  created_at: optString(),
  atm_transactions_limit_active: optBoolean(),
  atm_transactions_limit: optAmountOrLimit(),
  transactions_limit_active: optBoolean(),
  transactions_limit: TransactionsLimitSchema.nullish(),
  department: z.unknown().optional(),
  location: z.unknown().optional(),
  division: z.unknown().optional(),
  project: z.unknown().optional(),
  return_address: z.unknown().optional(),
  expense_categories: z.unknown().optional(),
  merchants: z.unknown().optional(),
  merchant_groups: z.unknown().optional(),
  custom_segments: z.unknown().optional(),
  shipping_details: ShippingDetailsSchema.nullish(),
  wallets_status: WalletsStatusSchema.nullish(),
  user_profile: UserProfileSchema.nullish(),
  advanced_velocity_limits: optArray(AdvancedVelocityLimitSchema),
  card_product: CardProductSchema.nullish(),
});
export type CoreCard = z.output<typeof CoreCardSchema>;
