/**
 * What a provider's answer becomes when it is not a success: a non-2xx its typed error (method, path, status and an
 * allow-listed code in the message, never the provider's free text), a fetch failure its short reason; and a body read
 * as JSON, which the success path shares.
 */
import { isJsonObject } from "../json-object.js";
import {
  BadRequestError,
  ForbiddenError,
  NotFoundError,
  QashioError,
  RateLimitedError,
  ServerError,
  UnauthorizedError,
  type ProviderErrorDetail,
  type ProviderText,
  type QashioErrorContext,
} from "./errors.js";
import type { ResponseHeaders } from "./fetch-like.js";
import { decodeUtf8, parseDataPiecewise } from "./json-body.js";
import { redactSecrets, safeErrorToken, safeRequestId } from "./redact.js";
import { parseRetryAfter } from "./retry-after.js";
import { ERROR_CODES, ErrorEnvelopeSchema } from "./schemas/index.js";

/** A response body as read: text, or the chunks of a 2xx body (see FetchResponse.chunks). */
export type ResponseBody = string | readonly Buffer[];

/** The body as text, as fetch's `text()` gives it. */
export function bodyText(body: ResponseBody): string {
  return typeof body === "string" ? body : decodeUtf8(body);
}

/** Reads the request id from `meta.request_id` of a body, else the `x-request-id` header. */
export function requestIdOf(body: unknown, headers: ResponseHeaders): string | undefined {
  if (isJsonObject(body) && isJsonObject(body.meta) && typeof body.meta.request_id === "string" && body.meta.request_id) {
    return body.meta.request_id;
  }
  return headers.get("x-request-id") ?? undefined;
}

/** Content codings as a header lists them (`gzip`, `br`, `gzip, br`); another value is not quoted. */
const CONTENT_CODINGS = /^[\w.+-]{1,32}(?:\s*,\s*[\w.+-]{1,32}){0,3}$/;

/**
 * Why a body that is not JSON may be so: a content coding the transport does not undo (it asks for identity, and a
 * proxy compressed anyway; spec-gaps, Compression). Only on the failure path, as a fetch that decodes (global fetch)
 * keeps the header over a body it already decoded.
 */
export function codingNote(headers: ResponseHeaders): string {
  const coding = headers.get("content-encoding")?.trim();
  if (!coding || coding.toLowerCase() === "identity") return "";
  const named = CONTENT_CODINGS.test(coding) ? `Content-Encoding ${coding}` : "a Content-Encoding";
  return `: it came in ${named}, though identity was asked for (a proxy compressing on its own?)`;
}

/** One entry of the envelope's `errors[]`, as read: its free text apart, since it never goes on the error itself. */
interface EnvelopeEntry {
  readonly detail: ProviderErrorDetail;
  readonly text: string;
}

/**
 * The envelope's `errors[]`, `field` and `code` passed through {@link safeErrorToken} and each entry's `message` taken
 * out as its text; read tolerantly when the body breaks the schema, since it must still give a typed error.
 */
function envelopeEntriesOf(body: unknown, secrets: readonly string[]): EnvelopeEntry[] {
  const entry = (field: string | null, code: string, text: string): EnvelopeEntry => ({
    detail: { field: field === null ? null : safeErrorToken(field, secrets), code: safeErrorToken(code, secrets), message: "" },
    text,
  });
  const envelope = ErrorEnvelopeSchema.safeParse(body);
  if (envelope.success) return envelope.data.errors.map(({ field, code, message }) => entry(field, code, message));
  if (!isJsonObject(body) || !Array.isArray(body.errors)) return [];
  return body.errors
    .filter(isJsonObject)
    .map((e) =>
      entry(typeof e.field === "string" ? e.field : null, typeof e.code === "string" ? e.code : "UNKNOWN", typeof e.message === "string" ? e.message : ""),
    );
}

/**
 * OAuth error codes reported as they are: RFC 6749 §5.2 (token endpoint), RFC 6749 §4.1.2.1's `access_denied` (the
 * sandbox's validate answers it on a 403), `server_error` and `temporarily_unavailable` (the sandbox's token and
 * validate failures: a 5xx, a 429), RFC 6750 §3.1 (the validate operation is a bearer-protected resource) and the
 * codes of the spec §7 envelope (`ERROR_CODES`). Any other code is reported as `unknown_error`: it could be a
 * credential a gateway echoed.
 */
export const OAUTH_ERROR_CODES: ReadonlySet<string> = new Set([
  "invalid_request",
  "invalid_client",
  "invalid_grant",
  "unauthorized_client",
  "unsupported_grant_type",
  "invalid_scope",
  "access_denied",
  "server_error",
  "temporarily_unavailable",
  "invalid_token",
  "insufficient_scope",
  ...ERROR_CODES,
]);

/**
 * The OAuth-style error code (`error`, else `code`) of a token-endpoint body: itself when in {@link OAUTH_ERROR_CODES},
 * `unknown_error` for any other string, undefined when the body has none.
 */
function oauthErrorCodeOf(body: unknown): string | undefined {
  if (!isJsonObject(body)) return undefined;
  const code = body.error ?? body.code;
  if (typeof code !== "string" || code === "") return undefined;
  return OAUTH_ERROR_CODES.has(code) ? code : "unknown_error";
}

/** Token-endpoint errors carry no envelope: keep only the allow-listed OAuth error code, never its description. */
function oauthErrorDetailsOf(body: unknown): ProviderErrorDetail[] {
  const code = oauthErrorCodeOf(body);
  return code ? [{ field: null, code, message: "" }] : [];
}

/** The body as JSON (undefined when empty), a large list page parsed piecewise (json-body.ts); `ok: false` when not JSON. */
export function parseJson(body: ResponseBody): { ok: true; value: unknown } | { ok: false } {
  if (typeof body !== "string") {
    const page = parseDataPiecewise(body);
    if (page !== undefined) return { ok: true, value: page.value };
  }
  const text = bodyText(body);
  if (text.trim() === "") return { ok: true, value: undefined };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}

/**
 * Turns a non-2xx response into its typed error. The message names the method, the path, the status and, for a token
 * endpoint, its OAuth error code (allow-listed); never the provider's free text, which may quote personal data or
 * secrets. The envelope's `errors[].field` and `code` are kept only when identifiers free of the request's secrets. The
 * envelope's `message` and `errors[].message` go, with every `where.secrets` value replaced by `***`, only to the
 * error's non-enumerable `providerText`; a token endpoint's description is not kept at all.
 */
export function errorForResponse(
  status: number,
  headers: ResponseHeaders,
  text: string,
  where: { method: string; path: string; errorBody: "envelope" | "oauth"; now: number; secrets?: readonly string[] },
): QashioError {
  const parsed = parseJson(text);
  const body = parsed.ok ? parsed.value : undefined;
  const redact = (value: string): string => redactSecrets(value, where.secrets ?? []);
  const entries = where.errorBody === "envelope" ? envelopeEntriesOf(body, where.secrets ?? []) : [];
  let providerText: ProviderText | undefined;
  if (where.errorBody === "envelope" && isJsonObject(body)) {
    const message = typeof body.message === "string" && body.message ? body.message : undefined;
    providerText = {
      // Redact before cutting, so a cut can never leave part of a secret behind.
      ...(message === undefined ? {} : { message: redact(message).slice(0, 200) }),
      errors: entries.map((e) => redact(e.text)),
    };
  }
  const context: QashioErrorContext = {
    status,
    errors: where.errorBody === "envelope" ? entries.map((e) => e.detail) : oauthErrorDetailsOf(body),
    requestId: safeRequestId(requestIdOf(body, headers), where.secrets ?? []),
    method: where.method,
    path: where.path,
    ...(providerText === undefined ? {} : { providerText }),
  };
  let detail = "";
  if (where.errorBody === "oauth") {
    const code = oauthErrorCodeOf(body);
    if (code) detail = ` (${code})`;
  }
  const message = `${where.method} ${where.path} answered ${status}${detail}`;
  if (status === 400) return new BadRequestError(message, context);
  if (status === 401) return new UnauthorizedError(message, context);
  if (status === 403) return new ForbiddenError(message, context);
  if (status === 404) return new NotFoundError(message, context);
  if (status === 429) {
    return new RateLimitedError(message, { ...context, retryAfterMs: parseRetryAfter(headers.get("retry-after"), where.now, headers.get("date")) });
  }
  if (status >= 500) {
    return new ServerError(message, { ...context, retryAfterMs: parseRetryAfter(headers.get("retry-after"), where.now, headers.get("date")) });
  }
  return new QashioError(message, context);
}

/** A short reason for a fetch failure: the system error code (ECONNRESET...) or the error's name. */
export function networkReasonOf(cause: unknown): string {
  const inner = isJsonObject(cause) ? cause.cause : undefined;
  if (isJsonObject(inner) && typeof inner.code === "string") return inner.code;
  if (isJsonObject(cause) && typeof cause.code === "string") return cause.code;
  return cause instanceof Error ? cause.name : "unknown";
}
