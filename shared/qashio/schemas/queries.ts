/**
 * Query and body schemas of the §4 operations, encoding the 400 rules of §4 and
 * §8.2. Shared by the client (check before sending, typed values) and the sandbox
 * (validate incoming query strings: values coerce from strings).
 *
 * Enums are strict here: the spec answers an unknown value with 400.
 * Unknown query keys are dropped, not rejected (the spec does not say).
 */
import { isJsonObject } from "../../json-object.js";
import * as z from "zod";
import {
  APPROVAL_STATUSES,
  CARD_ACCOUNT_TYPES,
  CARD_TYPE_FILTERS,
  CLIENT_SYNC_STATUSES,
  CORE_CARD_STATUSES,
  ERP_CARD_STATUS_FILTERS,
  ERP_SYNC_STATUSES,
  MASTER_DATA_STATUSES,
  POOL_ACCOUNT_STATUS_FILTERS,
  STATEMENT_ACCOUNT_TYPES,
  TRANSACTION_CATEGORIES,
  TRANSACTION_STATUSES,
  type ErrorCode,
} from "./enums.js";
import { CardIdSchema, TransactionIdSchema } from "./primitives.js";
import { conformsTo } from "./conform.js";

// ---------------------------------------------------------------------------
// Field builders
// ---------------------------------------------------------------------------

const INTEGER_TEXT = /^\s*[+-]?\d+\s*$/;
const DATE_TEXT = /^(\d{4})-(\d{2})-(\d{2})$/;
const MONTH_TEXT = /^(\d{4})-(0[1-9]|1[0-2])$/;

/** Custom issue params carrying the §7 code to report. */
const withCode = (code: ErrorCode) => ({ code });

/**
 * A whole number, as a refinement: zod's `.int()` ends the whole parse at its issue, so the cross-field rules did not
 * run (a `page` of 1.5 left an incomplete date range of the same query unreported). Held to the safe integers, as
 * `.int()` was: past them a number is not the one sent ("9007199254740993" reads as ...992).
 */
const wholeNumber = (message: string) =>
  z
    .number({ error: message })
    .refine(Number.isInteger, { error: message })
    .min(Number.MIN_SAFE_INTEGER, { error: message })
    .max(Number.MAX_SAFE_INTEGER, { error: message });

/** Positive integer (`page`, `page_size`, `limit`); accepts `"3"` or `3`. */
const positiveInt = () =>
  z.preprocess(
    (v) => (typeof v === "string" && INTEGER_TEXT.test(v) ? Number(v) : v),
    wholeNumber("must be a positive integer").positive({ error: "must be a positive integer" }),
  );

/** Boolean filter; accepts `true`/`false` or the strings `"true"`/`"false"`. */
const booleanFilter = () =>
  z.preprocess(
    (v) => (v === "true" ? true : v === "false" ? false : v),
    z.boolean({ error: "must be true or false" }),
  );

/** Calendar date `YYYY-MM-DD` (inclusive filters, §8.2.1); impossible dates rejected. */
const dateFilter = () =>
  z.string({ error: "must be a date YYYY-MM-DD" }).refine(isCalendarDate, { message: "must be a date YYYY-MM-DD" });

/** Month `YYYY-MM` (§8.2.4). */
const monthFilter = () => z.string({ error: "must be a month YYYY-MM" }).regex(MONTH_TEXT, "must be a month YYYY-MM");

/** Exactly four digits (`card_last_four`, `last4`, `last_four`; §8.2.6). */
const lastFourFilter = () => z.string({ error: "must be exactly four digits" }).regex(/^\d{4}$/, "must be exactly four digits");

/** A strict enum filter. */
const enumFilter = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, { error: `must be one of: ${values.join(", ")}` });

/** Free text / identifier filter. */
const textFilter = () => z.string({ error: "must be a string" });

function isCalendarDate(value: string): boolean {
  const m = DATE_TEXT.exec(value);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  // setUTCFullYear, not Date.UTC: that one reads years 0-99 as 1900-1999, refusing 0099-01-01.
  const date = new Date(0);
  date.setUTCFullYear(y, mo - 1, d);
  return date.getUTCFullYear() === y && date.getUTCMonth() === mo - 1 && date.getUTCDate() === d;
}

// ---------------------------------------------------------------------------
// Cross-field rules (run even when some fields failed, so every offender is reported)
// ---------------------------------------------------------------------------

type RangeRule = { from: string; to: string; together?: boolean; ordered?: boolean };

function rangeRules(rules: readonly RangeRule[]) {
  return (value: Record<string, unknown>, ctx: z.RefinementCtx) => {
    // The rules run even when the object check failed: `null`, an array or a scalar has its type issue already.
    if (!isJsonObject(value)) return;
    for (const { from, to, together, ordered } of rules) {
      const a = value[from];
      const b = value[to];
      if (together && (a === undefined) !== (b === undefined)) {
        const missing = a === undefined ? from : to;
        ctx.addIssue({
          code: "custom",
          path: [missing],
          message: `${from} and ${to} must be sent together`,
          params: withCode("REQUIRED"),
        });
      }
      if (ordered && typeof a === "string" && typeof b === "string" && isCalendarDate(a) && isCalendarDate(b) && a > b) {
        ctx.addIssue({
          code: "custom",
          path: [to],
          message: `${to} must not be before ${from}`,
          params: withCode("INVALID_RANGE"),
        });
      }
    }
  };
}

const always = { when: () => true };

const pagingShape = { page: positiveInt().optional(), page_size: positiveInt().optional() };

// ---------------------------------------------------------------------------
// Query schemas (one per list endpoint of §4)
// ---------------------------------------------------------------------------

/** `GET /public/v1/erp/transactions` (§4.3); the time range needs both ends. */
export const TransactionsQuerySchema = z
  .object({
    ...pagingShape,
    qashio_id: textFilter().optional(),
    parent_qashio_id: textFilter().optional(),
    transaction_status: enumFilter(TRANSACTION_STATUSES).optional(),
    transaction_category: enumFilter(TRANSACTION_CATEGORIES).optional(),
    erp_sync_status: enumFilter(ERP_SYNC_STATUSES).optional(),
    approval_status: enumFilter(APPROVAL_STATUSES).optional(),
    card_last_four: lastFourFilter().optional(),
    employee_id: textFilter().optional(),
    transaction_currency: textFilter().optional(),
    billing_currency: textFilter().optional(),
    transaction_time_from: dateFilter().optional(),
    transaction_time_to: dateFilter().optional(),
    client_sync_status: enumFilter(CLIENT_SYNC_STATUSES).optional(),
    exclude_from_sync: booleanFilter().optional(),
  })
  .superRefine(rangeRules([{ from: "transaction_time_from", to: "transaction_time_to", together: true }]), always);
export type TransactionsQuery = z.output<typeof TransactionsQuerySchema>;

/** `GET /public/v1/erp/cards` (§4.4); either end of a range alone, inverted ranges rejected. */
export const ErpCardsQuerySchema = z
  .object({
    ...pagingShape,
    status: enumFilter(ERP_CARD_STATUS_FILTERS).optional(),
    card_type: enumFilter(CARD_TYPE_FILTERS).optional(),
    account_type: enumFilter(CARD_ACCOUNT_TYPES).optional(),
    pool_account_id: textFilter().optional(),
    user_id: textFilter().optional(),
    last4: lastFourFilter().optional(),
    issued_time_from: dateFilter().optional(),
    issued_time_to: dateFilter().optional(),
    created_time_from: dateFilter().optional(),
    created_time_to: dateFilter().optional(),
  })
  .superRefine(
    rangeRules([
      { from: "issued_time_from", to: "issued_time_to", ordered: true },
      { from: "created_time_from", to: "created_time_to", ordered: true },
    ]),
    always,
  );
export type ErpCardsQuery = z.output<typeof ErpCardsQuerySchema>;

/** `GET /public/v1/erp/pool_accounts` (§4.5); `status=all` switches the filter off. */
export const PoolAccountsQuerySchema = z
  .object({
    ...pagingShape,
    status: enumFilter(POOL_ACCOUNT_STATUS_FILTERS).optional(),
    manager_id: textFilter().optional(),
    created_by: textFilter().optional(),
    created_time_from: dateFilter().optional(),
    created_time_to: dateFilter().optional(),
  })
  .superRefine(rangeRules([{ from: "created_time_from", to: "created_time_to", ordered: true }]), always);
export type PoolAccountsQuery = z.output<typeof PoolAccountsQuerySchema>;

const masterDataShape = {
  ...pagingShape,
  remote_id: textFilter().optional(),
  remote_name: textFilter().optional(),
  status: enumFilter(MASTER_DATA_STATUSES).optional(),
  is_deleted: booleanFilter().optional(),
  created_at_from: dateFilter().optional(),
  created_at_to: dateFilter().optional(),
  updated_at_from: dateFilter().optional(),
  updated_at_to: dateFilter().optional(),
};

const masterDataRanges = rangeRules([
  { from: "created_at_from", to: "created_at_to", together: true },
  { from: "updated_at_from", to: "updated_at_to", together: true },
]);

/** Common query of the four master-data lists (§4.6); both ends of each range together. */
export const MasterDataQuerySchema = z.object(masterDataShape).superRefine(masterDataRanges, always);
export type MasterDataQuery = z.output<typeof MasterDataQuerySchema>;

/** `GET /public/v1/erp/bank_accounts`. */
export const BankAccountsQuerySchema = MasterDataQuerySchema;
export type BankAccountsQuery = MasterDataQuery;
/** `GET /public/v1/erp/tax_rates`. */
export const TaxRatesQuerySchema = MasterDataQuerySchema;
export type TaxRatesQuery = MasterDataQuery;
/** `GET /public/v1/erp/suppliers`. */
export const SuppliersQuerySchema = MasterDataQuerySchema;
export type SuppliersQuery = MasterDataQuery;

/** `GET /public/v1/erp/chart_of_accounts`: the common set plus account filters. */
export const ChartOfAccountsQuerySchema = z
  .object({
    ...masterDataShape,
    account_number: textFilter().optional(),
    account_type: textFilter().optional(),
    account_currency: textFilter().optional(),
  })
  .superRefine(masterDataRanges, always);
export type ChartOfAccountsQuery = z.output<typeof ChartOfAccountsQuerySchema>;

/** `GET /public/v1/erp/statements` (§4.7). */
export const StatementsQuerySchema = z.object({
  ...pagingShape,
  month: monthFilter().optional(),
  account_type: enumFilter(STATEMENT_ACCOUNT_TYPES).optional(),
  account_id: textFilter().optional(),
});
export type StatementsQuery = z.output<typeof StatementsQuerySchema>;

/** `GET /public/v1/erp/statements/{statementAccountId}` (§4.7); months independent. */
export const StatementsByAccountQuerySchema = z.object({
  ...pagingShape,
  from_month: monthFilter().optional(),
  to_month: monthFilter().optional(),
});
export type StatementsByAccountQuery = z.output<typeof StatementsByAccountQuerySchema>;

/** `GET /public/v1/core/cards` (§4.9); `limit` is an alternative to `page_size`. */
export const CoreCardsQuerySchema = z.object({
  ...pagingShape,
  limit: positiveInt().optional(),
});
export type CoreCardsQuery = z.output<typeof CoreCardsQuerySchema>;

/** `GET /public/v1/core/cards/balance` (§4.9): `nickname` or `last_four` required. */
export const CardBalanceQuerySchema = z
  .object({
    nickname: textFilter().min(1, "must not be empty").optional(),
    last_four: lastFourFilter().optional(),
    status: enumFilter(CORE_CARD_STATUSES).optional(),
  })
  .superRefine((value: Record<string, unknown>, ctx) => {
    if (!isJsonObject(value)) return;
    if (value["nickname"] === undefined && value["last_four"] === undefined) {
      ctx.addIssue({
        code: "custom",
        path: [],
        message: "nickname or last_four is required",
        params: withCode("REQUIRED"),
      });
    }
  }, always);
export type CardBalanceQuery = z.output<typeof CardBalanceQuerySchema>;

/** Default `page_size` per list (§8.1), for the sandbox and for documentation. */
export const DEFAULT_PAGE_SIZES = {
  transactions: 10,
  bank_accounts: 10,
  chart_of_accounts: 10,
  suppliers: 10,
  tax_rates: 10,
  erp_cards: 20,
  pool_accounts: 20,
  statements: 20,
  core_cards: 20,
  statements_by_account: 12,
} as const;

// ---------------------------------------------------------------------------
// Path parameters
// ---------------------------------------------------------------------------

/** `transactionId` path parameter: the UUID, never the `CT…` reference (400 otherwise). */
export const TransactionIdParamSchema = TransactionIdSchema;
/** `cardId` path parameter (`CA…`). */
export const CardIdParamSchema = CardIdSchema;

// ---------------------------------------------------------------------------
// Write bodies
// ---------------------------------------------------------------------------

const nonNegativeInt = (what: string) => wholeNumber(`must be ${what}`).nonnegative({ error: `must be ${what}` });

/** Rejects a body with none of its optional fields. */
function atLeastOneOf(fields: readonly string[]) {
  return (value: Record<string, unknown>, ctx: z.RefinementCtx) => {
    if (!isJsonObject(value)) return;
    if (fields.every((f) => value[f] === undefined)) {
      ctx.addIssue({
        code: "custom",
        path: [],
        message: `at least one of ${fields.join(", ")} is required`,
        params: withCode("REQUIRED"),
      });
    }
  };
}

/** `POST /public/v1/erp/transactions/acknowledge`: `{ transaction_ids: uuid[] }`, non-empty. */
export const AcknowledgeBodySchema = z.object({
  transaction_ids: z
    .array(z.guid({ error: "must be a transaction UUID" }), {
      error: "must be an array of transaction UUIDs",
    })
    .min(1, "must not be empty"),
});
export type AcknowledgeBody = z.output<typeof AcknowledgeBodySchema>;

const UPDATE_CARD_FIELDS = ["auto_top_up_amount", "card_usage_type_amount", "velocity_period", "card_usage_type", "nickname"] as const;

/** `PUT /public/v1/core/cards/{cardId}`: only fields sent are changed; at least one required. */
export const UpdateCardBodySchema = z
  .object({
    auto_top_up_amount: nonNegativeInt("a non-negative integer").optional(),
    card_usage_type_amount: nonNegativeInt("a non-negative integer").optional(),
    velocity_period: z.string({ error: "must be a string" }).min(1, "must not be empty").optional(),
    card_usage_type: z.string({ error: "must be a string" }).min(1, "must not be empty").optional(),
    nickname: z.string({ error: "must be a string" }).min(1, "must not be empty").optional(),
  })
  .superRefine(atLeastOneOf(UPDATE_CARD_FIELDS), always);
export type UpdateCardBody = z.output<typeof UpdateCardBodySchema>;

/** The only `status` `change_status` accepts; any other value is a 403, not a 400 (§4.9). */
export const SUSPEND_STATUS = "suspended";

/**
 * `PUT /public/v1/core/cards/{cardId}/change_status`. `status` is required (missing or `null`: 400) and any value
 * here: §4.9 refuses "any other value" than {@link SUSPEND_STATUS} with 403, empty text and non-text included.
 */
export const ChangeStatusBodySchema = z.object({
  status: z.unknown().refine((value) => value !== undefined && value !== null, { params: withCode("REQUIRED"), message: "status is required" }),
  reason: z.string({ error: "must be a string" }).optional(),
});
export type ChangeStatusBody = z.output<typeof ChangeStatusBodySchema>;

const VELOCITY_FIELDS = ["spend_limit_active", "spend_limit_period", "spend_limit_max_amount", "spend_limit_frequency"] as const;

/** `POST /public/v1/core/cards/{cardId}/update_velocity_limit`; at least one field required. */
export const UpdateVelocityLimitBodySchema = z
  .object({
    spend_limit_active: z.boolean({ error: "must be true or false" }).optional(),
    spend_limit_period: z.string({ error: "must be a string" }).min(1, "must not be empty").optional(),
    spend_limit_max_amount: nonNegativeInt("a non-negative integer").optional(),
    spend_limit_frequency: nonNegativeInt("a non-negative integer").optional(),
  })
  .superRefine(atLeastOneOf(VELOCITY_FIELDS), always);
export type UpdateVelocityLimitBody = z.output<typeof UpdateVelocityLimitBodySchema>;

/**
 * `POST /public/v1/core/user_profiles/invite`: `{ end_user: string[] }`, non-empty. An address is not checked here, an
 * empty one included: §4.10 lists one that cannot be invited under `failed_emails` and fails only a request with none valid.
 */
export const InviteBodySchema = z.object({
  end_user: z.array(z.string({ error: "must be a string" }), { error: "must be an array of email addresses" }).min(1, "must not be empty"),
});
export type InviteBody = z.output<typeof InviteBodySchema>;

const required = (what = "must be a non-empty string") => z.string({ error: what }).min(1, what);

/** `POST /oauth2/token`, `authorization_code` grant. */
export const AuthorizationCodeGrantSchema = z.object({
  grant_type: z.literal("authorization_code"),
  client_id: required(),
  client_secret: required(),
  code: required(),
  redirect_uri: required(),
});
export type AuthorizationCodeGrant = z.output<typeof AuthorizationCodeGrantSchema>;

/** `POST /oauth2/token`, `refresh_token` grant. */
export const RefreshTokenGrantSchema = z.object({
  grant_type: z.literal("refresh_token"),
  client_id: required(),
  client_secret: required(),
  refresh_token: required(),
});
export type RefreshTokenGrant = z.output<typeof RefreshTokenGrantSchema>;

/** `POST /oauth2/token` body, both grants (§4.2). */
export const TokenRequestSchema = z.discriminatedUnion("grant_type", [AuthorizationCodeGrantSchema, RefreshTokenGrantSchema], {
  error: "must be one of: authorization_code, refresh_token",
});
export type TokenRequest = z.output<typeof TokenRequestSchema>;

// ---------------------------------------------------------------------------
// checkQuery / checkBody
// ---------------------------------------------------------------------------

/** One offending field, shaped like an entry of the §7 error envelope. */
export interface FieldError {
  readonly field: string | null;
  readonly code: ErrorCode;
  readonly message: string;
}

/** Result of {@link checkQuery} / {@link checkBody}. */
export type CheckResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly errors: FieldError[] };

/** Raw query input: a query object (typed or strings), or `URLSearchParams`. */
export type RawQuery = URLSearchParams | Readonly<Record<string, unknown>>;

/**
 * Checks a query against one of the query schemas, coercing strings, and returns
 * the typed value or one error per offending field with a §7 code:
 * `INVALID_ENUM` (value outside an enum), `OUT_OF_RANGE` (number out of range),
 * `INVALID_FORMAT` (malformed number, date, month, last four, id; or a repeated key),
 * `REQUIRED` (missing value, incomplete date range: `field` is the missing end;
 * neither `nickname` nor `last_four`: `field` is null), `INVALID_RANGE` (inverted range, on the `_to` field).
 * `null` and `undefined` values are treated as absent. Messages never echo values. A key the query does not take is
 * ignored, as the sandbox's server does (the spec does not say), unless `unknownKeys` is `"refuse"` (the client's:
 * an `INVALID_FORMAT` naming the key, where dropping a mistyped filter would send the read unfiltered).
 *
 * @example
 * ```ts
 * const r = checkQuery(TransactionsQuerySchema, new URLSearchParams("page=0&card_last_four=12"));
 * // { ok: false, errors: [
 * //   { field: "page", code: "OUT_OF_RANGE", message: "page must be a positive integer" },
 * //   { field: "card_last_four", code: "INVALID_FORMAT", message: "card_last_four must be exactly four digits" } ] }
 * ```
 */
export function checkQuery<S extends z.ZodType>(schema: S, raw: RawQuery, unknownKeys: "ignore" | "refuse" = "ignore"): CheckResult<z.output<S>> {
  const input: Record<string, unknown> = {};
  const errors: FieldError[] = [];
  const entries: [string, unknown][] =
    raw instanceof URLSearchParams ? [...new Set(raw.keys())].map((k) => [k, raw.getAll(k)]) : Object.entries(raw);
  const known = queryKeys(schema);
  for (const [key, value] of entries) {
    if (value === undefined || value === null) continue;
    // An unknown key is dropped (or refused once) however often it is sent: only a key the query takes is held to one value.
    if (known !== undefined && !known.has(key)) {
      if (unknownKeys === "refuse") errors.push({ field: key, code: "INVALID_FORMAT", message: `${key} is not a parameter of this query` });
      continue;
    }
    if (Array.isArray(value)) {
      if (value.length === 1) input[key] = value[0];
      else if (value.length > 1) {
        errors.push({ field: key, code: "INVALID_FORMAT", message: `${key} takes one value per request` });
        // Kept as the list, which no field takes: the cross-field rules see the key sent (the other end of its range is
        // still required, `last_four` answers the card balance's rule) but no date to order by; its own issue is dropped.
        input[key] = value;
      }
      continue;
    }
    input[key] = value;
  }
  const result = check(schema, input);
  if (errors.length === 0) return result;
  const more = result.ok ? [] : result.errors.filter((e) => !errors.some((x) => x.field === e.field));
  return { ok: false, errors: [...errors, ...more] };
}

/** The keys a query schema takes, when it is an object schema (refinements keep the shape); else undefined. */
function queryKeys(schema: z.ZodType): ReadonlySet<string> | undefined {
  const shape = (schema as { shape?: unknown }).shape;
  return shape !== null && typeof shape === "object" ? new Set(Object.keys(shape)) : undefined;
}

/**
 * Checks a JSON write body (acknowledge, card update, change status, velocity
 * limit, invite, token request) with the same error entries as {@link checkQuery}.
 * A body already in its checked form is returned as it is (the same object), so
 * callers must not change it while it is being sent.
 *
 * @example
 * ```ts
 * checkBody(AcknowledgeBodySchema, { transaction_ids: [] });
 * // { ok: false, errors: [{ field: "transaction_ids", code: "REQUIRED", message: "transaction_ids must not be empty" }] }
 * ```
 */
export function checkBody<S extends z.ZodType>(schema: S, raw: unknown): CheckResult<z.output<S>> {
  return check(schema, raw);
}

function check<S extends z.ZodType>(schema: S, input: unknown): CheckResult<z.output<S>> {
  // Already what zod would return (an acknowledge body of ids, once a page): keep it, as the client's list parsing does.
  if (conformsTo(schema)(input)) return { ok: true, value: input };
  const result = schema.safeParse(input);
  if (result.success) return { ok: true, value: result.data as z.output<S> };
  const errors: FieldError[] = [];
  const seen = new Set<string | null>();
  for (const issue of result.error.issues) {
    const field = issue.path.length === 0 ? null : issue.path.map(String).join(".");
    if (seen.has(field)) continue;
    seen.add(field);
    errors.push(toFieldError(issue, field, valueAt(input, issue.path)));
  }
  return { ok: false, errors };
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let current: unknown = input;
  for (const key of path) {
    if (current === null || typeof current !== "object") return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}

function toFieldError(issue: z.core.$ZodIssue, field: string | null, value: unknown): FieldError {
  const name = field ?? "request";
  const say = (message: string) => (field === null ? message : `${field} ${message}`);
  switch (issue.code) {
    case "custom": {
      const code = (issue.params?.["code"] as ErrorCode | undefined) ?? "INVALID_FORMAT";
      return { field, code, message: issue.params?.["code"] ? issue.message : say(issue.message) };
    }
    case "invalid_value":
      return { field, code: "INVALID_ENUM", message: say(issue.message) };
    case "invalid_union":
      if (value === undefined) return { field, code: "REQUIRED", message: `${name} is required` };
      return { field, code: issue.discriminator ? "INVALID_ENUM" : "INVALID_FORMAT", message: say(issue.message) };
    case "too_small":
      if (issue.origin === "array" || (issue.origin === "string" && Number(issue.minimum) === 1)) {
        return { field, code: "REQUIRED", message: say(issue.message) };
      }
      return { field, code: "OUT_OF_RANGE", message: say(issue.message) };
    case "too_big":
      return { field, code: "OUT_OF_RANGE", message: say(issue.message) };
    case "invalid_type":
      if (value === undefined) return { field, code: "REQUIRED", message: `${name} is required` };
      return { field, code: "INVALID_FORMAT", message: say(issue.message) };
    default:
      return { field, code: "INVALID_FORMAT", message: say(issue.message) };
  }
}

/**
 * Serialises a checked query value for the wire (`true` → `"true"`, numbers as
 * decimal text); absent values are left out.
 *
 * @example
 * ```ts
 * toSearchParams({ page: 2, exclude_from_sync: false }).toString(); // "page=2&exclude_from_sync=false"
 * ```
 */
export function toSearchParams(value: Readonly<Record<string, unknown>>): URLSearchParams {
  const params = new URLSearchParams();
  for (const [key, v] of Object.entries(value)) {
    if (v === undefined || v === null) continue;
    params.set(key, typeof v === "string" ? v : String(v));
  }
  return params;
}
