/** Pool account (§2.5). */
import * as z from "zod";
import { driftEnumsFor } from "./drift.js";
import { POOL_ACCOUNT_STATUSES } from "./enums.js";
import { optArray, optBoolean, optNumber, optString, optStringish } from "./primitives.js";

const drift = driftEnumsFor("PoolAccount");

/** A user reference on a pool account (`created_by`, `account_managers[]`). */
export const PoolAccountUserSchema = z.looseObject({
  user_id: optStringish(),
  name: optString(),
  email: optString(),
});
export type PoolAccountUser = z.output<typeof PoolAccountUserSchema>;

/** Pool account as returned by `GET /public/v1/erp/pool_accounts` (§4.5). */
export const PoolAccountSchema = z.looseObject({
  id: z.string().min(1),
  account_name: optString(),
  status: drift(POOL_ACCOUNT_STATUSES, "status", { caseInsensitive: true }).nullish(),
  currency: optString(),
  topup_type: optString(),
  allowed_max_balance: optNumber(),
  low_balance_notification_active: optBoolean(),
  low_balance_notification_amount: optNumber(),
  company_name: optString(),
  created_by: PoolAccountUserSchema.nullish(),
  account_managers: optArray(PoolAccountUserSchema),
  created_at: optString(),
});
export type PoolAccount = z.output<typeof PoolAccountSchema>;
