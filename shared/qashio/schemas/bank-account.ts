/** Bank account master-data record (§2.6). */
import * as z from "zod";
import { masterDataShape } from "./master-data.js";
import { optBoolean, optString, optStringish } from "./primitives.js";

/** Bank account as returned by `GET /public/v1/erp/bank_accounts`. */
export const BankAccountSchema = z.looseObject({
  ...masterDataShape("BankAccount"),
  account_type: optString(),
  account_number: optStringish(),
  reconciliation_account: optBoolean(),
});
export type BankAccount = z.output<typeof BankAccountSchema>;
