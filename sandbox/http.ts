/**
 * Envelopes (§4.1, §7), pagination blocks (§8.1) and request checks shared by the routes.
 */
import type { Context } from "hono";
import type * as z from "zod";
import { isJsonObject } from "../shared/json-object.js";
import { checkBody, checkQuery } from "../shared/qashio/schemas/index.js";
import type { CompanyData } from "./data/model.js";
import { ValidationError, type FieldError } from "./errors.js";
import type { AccessGrant } from "./oauth.js";
import type { SandboxState } from "./state.js";
import { MAX_PAGE_SIZE } from "./state.js";

/** Hono environment of the sandbox app. */
export interface SandboxEnv {
  Variables: {
    requestId: string;
    state: SandboxState;
    /** Company of the caller (set by the bearer or API-key middleware). */
    data: CompanyData;
    /** Present for bearer callers; legacy API-key callers have none (all read scopes). */
    grant?: AccessGrant;
  };
}

export type SandboxContext = Context<SandboxEnv>;

/** `meta` of both envelopes. */
export function meta(c: SandboxContext): { request_id: string; timestamp: string } {
  return { request_id: c.get("requestId"), timestamp: c.get("state").clock.nowIso() };
}

/** §4.1 success envelope. */
export function ok(
  c: SandboxContext,
  data: unknown,
  options: { status?: 200 | 201; message?: string; pagination?: Pagination } = {},
): Response {
  const status = options.status ?? 200;
  const body: Record<string, unknown> = { status_code: status, success: true };
  if (options.message !== undefined) body.message = options.message;
  body.data = data;
  if (options.pagination) body.pagination = options.pagination;
  body.meta = meta(c);
  return c.json(body, status);
}

/** §7 error envelope body (no `success` field). */
export function errorBody(c: SandboxContext, status: number, message: string, errors: readonly FieldError[]): Record<string, unknown> {
  return { status_code: status, message, errors, meta: meta(c) };
}

/** §8.1 `pagination` block. */
export interface Pagination {
  readonly page: number;
  readonly page_size: number;
  readonly total_records: number;
  readonly total_pages: number;
  readonly has_next: boolean;
  readonly has_previous: boolean;
}

export function pagination(page: number, pageSize: number, total: number): Pagination {
  const totalPages = Math.ceil(total / pageSize);
  return { page, page_size: pageSize, total_records: total, total_pages: totalPages, has_next: page < totalPages, has_previous: page > 1 };
}

/** One page of an already ordered array. */
export function slicePage<T>(items: readonly T[], page: number, pageSize: number): T[] {
  return items.slice((page - 1) * pageSize, page * pageSize);
}

/** What {@link parseQuery} checks beyond the schema, and what it leaves out. */
export interface QueryOptions {
  /** Page size fields held to {@link MAX_PAGE_SIZE} (default `page_size`). */
  readonly sizeFields?: readonly string[];
  /** Keys the schema takes that this route does not: dropped like any unknown key, however often sent. */
  readonly keysNotTaken?: readonly string[];
}

/**
 * Checks the request's query with the shared schema (the client's rule set), then the
 * sandbox's own maximum page size; throws a 400 with one entry per offending field.
 */
export function parseQuery<S extends z.ZodType>(c: SandboxContext, schema: S, options: QueryOptions = {}): z.output<S> {
  const { sizeFields = ["page_size"], keysNotTaken = [] } = options;
  const params = new URL(c.req.url).searchParams;
  for (const key of keysNotTaken) params.delete(key);
  const result = checkQuery(schema, params);
  const errors: FieldError[] = result.ok ? [] : [...result.errors];
  // Only a size field the query takes: on another endpoint (the card balance) it is an unknown key, ignored.
  const shape = (schema as { shape?: Record<string, unknown> }).shape;
  for (const field of sizeFields.filter((f) => shape !== undefined && f in shape)) {
    const raw = params.get(field);
    if (raw !== null && /^\s*\+?\d+\s*$/.test(raw) && Number(raw) > MAX_PAGE_SIZE && !errors.some((e) => e.field === field)) {
      errors.push({ field, code: "OUT_OF_RANGE", message: `${field} must be at most ${MAX_PAGE_SIZE}` });
    }
  }
  if (errors.length > 0 || !result.ok) throw new ValidationError(errors);
  return result.value;
}

/** Reads a JSON body: 400 when it is not JSON. */
export async function readJson(c: SandboxContext): Promise<unknown> {
  const text = await c.req.text();
  if (text.trim() === "") return {};
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new ValidationError([{ field: null, code: "INVALID_FORMAT", message: "request body must be JSON" }], "Malformed request body");
  }
}

/** The sandbox's cap on a body list's length (spec: not shown), e.g. ids per acknowledge. */
export interface ListCap {
  readonly field: string;
  readonly max: number;
  /** What the list holds, for the message ("ids"). */
  readonly items: string;
}

/**
 * Reads and checks a JSON write body with the shared schema, then with the sandbox's own
 * `rules` on the fields the schema accepted and its list `caps` on the body as sent;
 * throws one 400 with every offending field (§7).
 */
export async function parseBody<S extends z.ZodType>(
  c: SandboxContext,
  schema: S,
  rules: (body: z.output<S>) => FieldError[] = () => [],
  caps: readonly ListCap[] = [],
): Promise<z.output<S>> {
  const raw = await readJson(c);
  const result = checkBody(schema, raw);
  const errors: FieldError[] = result.ok ? [] : [...result.errors];
  const accepted = result.ok ? result : checkBody(schema, withoutFields(raw, errors));
  if (accepted.ok) errors.push(...rules(accepted.value).filter((e) => !errors.some((seen) => seen.field === e.field)));
  // On the list as sent: a malformed entry (its own field, `ids.3`) leaves the list unaccepted, yet its length offends too.
  for (const { field, max, items } of caps) {
    const list = isJsonObject(raw) ? raw[field] : undefined;
    if (Array.isArray(list) && list.length > max && !errors.some((e) => e.field === field)) {
      errors.push({ field, code: "OUT_OF_RANGE", message: `${field} must hold at most ${max} ${items}` });
    }
  }
  if (errors.length > 0 || !result.ok) throw new ValidationError(errors);
  return result.value;
}

/** The body without the top-level fields that already have an error. */
function withoutFields(raw: unknown, errors: readonly FieldError[]): unknown {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return raw;
  const offending = new Set(errors.map((e) => e.field?.split(".")[0]));
  return Object.fromEntries(Object.entries(raw).filter(([field]) => !offending.has(field)));
}

/** Inclusive `YYYY-MM-DD` range test on the date part of an ISO timestamp (§8.2 rule 1). */
export function inDateRange(iso: string | null | undefined, from: string | undefined, to: string | undefined): boolean {
  if (from === undefined && to === undefined) return true;
  if (!iso) return false;
  const day = iso.slice(0, 10);
  return (from === undefined || day >= from) && (to === undefined || day <= to);
}

/**
 * Currency filter (`transaction_currency`, `billing_currency`, `account_currency`): the whole ISO 4217 code, in any
 * letter case on either side, as a part of a code names no currency; an empty code names none (spec-gaps).
 */
export function sameCurrency(value: unknown, code: string | undefined): boolean {
  if (code === undefined) return true;
  return typeof value === "string" && code !== "" && value.toUpperCase() === code.toUpperCase();
}

/** Case-insensitive partial match (§8.2 rule 5); empty text is part of every value, an absent one too (spec-gaps). */
export function contains(value: unknown, needle: string | undefined): boolean {
  if (needle === undefined || needle === "") return true;
  return typeof value === "string" && value.toLowerCase().includes(needle.toLowerCase());
}

/** Waits real time, rejecting when the request is aborted (client timeouts). */
export function delay(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
