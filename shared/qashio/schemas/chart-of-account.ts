/** Chart of account (ledger account) master-data record (§2.6). */
import * as z from "zod";
import { masterDataShape } from "./master-data.js";
import { optString, optStringish } from "./primitives.js";

/** Ledger account as returned by `GET /public/v1/erp/chart_of_accounts`. */
export const ChartOfAccountSchema = z.looseObject({
  ...masterDataShape("ChartOfAccount"),
  qashio_external_id: optString(),
  account_number: optStringish(),
  account_type: optString(),
  account_currency: optString(),
  description: optString(),
});
export type ChartOfAccount = z.output<typeof ChartOfAccountSchema>;
