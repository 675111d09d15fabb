/** Statements (§2.7, §4.7): summary list entries and the per-account read. */
import * as z from "zod";
import { driftEnumsFor } from "./drift.js";
import { STATEMENT_ACCOUNT_TYPES } from "./enums.js";
import { optNumber, optString, optStringish } from "./primitives.js";

/** `statement_period`: month `YYYY-MM`, from/to `YYYY-MM-DD` (kept as strings). */
export const StatementPeriodSchema = z.looseObject({
  month: z.string(),
  from: optString(),
  to: optString(),
});
export type StatementPeriod = z.output<typeof StatementPeriodSchema>;

/** One account for one calendar month, from `GET /public/v1/erp/statements`. */
export const StatementSummarySchema = z.looseObject({
  account_external_id: z.string().min(1),
  account_name: optString(),
  account_type: driftEnumsFor("StatementSummary")(STATEMENT_ACCOUNT_TYPES, "account_type").nullish(),
  company_id: optStringish(),
  currency: optString(),
  statement_period: StatementPeriodSchema,
  opening_balance: optNumber(),
  closing_balance: optNumber(),
});
export type StatementSummary = z.output<typeof StatementSummarySchema>;

/** One period of `GET /public/v1/erp/statements/{statementAccountId}`. */
export const StatementPeriodBalanceSchema = z.looseObject({
  statement_period: StatementPeriodSchema,
  opening_balance: optNumber(),
  closing_balance: optNumber(),
  currency: optString(),
});
export type StatementPeriodBalance = z.output<typeof StatementPeriodBalanceSchema>;

/**
 * `data` of `GET /public/v1/erp/statements/{statementAccountId}`: the periods with
 * their own inner pagination (`page`, `total_pages`, `total`); `account_type` is
 * null when the account has no statements.
 */
export const StatementsByAccountSchema = z.looseObject({
  account_external_id: z.string().min(1),
  account_name: optString(),
  account_type: driftEnumsFor("StatementsByAccount")(STATEMENT_ACCOUNT_TYPES, "account_type").nullish(),
  page: z.number().int(),
  total_pages: z.number().int(),
  total: z.number().int(),
  data: z.array(StatementPeriodBalanceSchema),
});
export type StatementsByAccount = z.output<typeof StatementsByAccountSchema>;
