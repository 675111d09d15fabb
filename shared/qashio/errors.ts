/**
 * Typed errors of the provider API client.
 *
 * Every error carries what a caller needs to act (status, the envelope's `errors[]`, the request id,
 * the method and the path without its query string) and never a secret: no token, no client secret,
 * no query string, no raw response body. The one refresh token a token error is about (the rotated one to save, the
 * refused one to mark) sits in a private field, read by a method only: no serialiser or logger reaches it. The
 * provider's free text is never in `message` (it may quote personal data); see {@link ProviderText}.
 */

/**
 * One entry of the provider's error envelope `errors[]` (spec §7). For a provider answer, `message` is empty: the
 * entry's text is in {@link QashioError.providerText}. The client's own request checks fill it with their own words.
 */
export interface ProviderErrorDetail {
  readonly field: string | null;
  readonly code: string;
  readonly message: string;
}

/**
 * The provider's own free text of one error answer: the envelope's `message` and each `errors[].message`, in order,
 * with the secrets the request sent (also URL-encoded or JSON-escaped) replaced by `***`. It may still quote personal
 * data the provider echoed, so it is never part of an error's `message`, and it sits on a non-enumerable property that
 * `JSON.stringify`, Powertools Logger and `util.inspect` leave out. Read it explicitly, when debugging by hand.
 */
export interface ProviderText {
  /** The envelope's top-level `message` (at most 200 characters), when it had one. */
  readonly message?: string;
  /** `errors[i].message` for each entry of `errors[]`, in the same order. */
  readonly errors: readonly string[];
}

/** A schema problem found in a response, reduced to what is safe to log (no input values). */
export interface ResponseIssue {
  readonly path: string;
  readonly code: string;
  readonly message: string;
}

/** Context every client error carries. */
export interface QashioErrorContext {
  /** HTTP status, when a response was received. */
  readonly status?: number;
  /** The provider's `errors[]` (or, for client-side checks, one entry per offending field). */
  readonly errors?: readonly ProviderErrorDetail[];
  /** `meta.request_id` of the body, else the `x-request-id` header. */
  readonly requestId?: string;
  readonly method?: string;
  /** Request path only: never a query string. */
  readonly path?: string;
  /** The provider's free text, kept off `message` and out of serialisation (see {@link ProviderText}). */
  readonly providerText?: ProviderText;
}

/** Base class of every error the provider API client throws. */
export class QashioError extends Error {
  override name = "QashioError";
  readonly status?: number;
  readonly errors: readonly ProviderErrorDetail[];
  readonly requestId?: string;
  readonly method?: string;
  readonly path?: string;
  /**
   * The provider's free text of the answer, for debugging by hand: non-enumerable, so no logger or serialiser
   * writes it out. It may quote personal data; never log it. See {@link ProviderText}.
   */
  declare readonly providerText?: ProviderText;

  constructor(message: string, context: QashioErrorContext = {}, options?: ErrorOptions) {
    super(message, options);
    this.status = context.status;
    this.errors = context.errors ?? [];
    this.requestId = context.requestId;
    this.method = context.method;
    this.path = context.path;
    if (context.providerText !== undefined) {
      Object.defineProperty(this, "providerText", { value: context.providerText, enumerable: false, writable: false, configurable: true });
    }
  }
}

/** 400: the provider rejected the request (malformed id, unknown enum, incomplete range, failed validation). */
export class BadRequestError extends QashioError {
  override name = "BadRequestError";
}

/** The client refused to send a request whose query or body breaks a rule of the spec; no network call was made. */
export class InvalidRequestError extends BadRequestError {
  override name = "InvalidRequestError";
  /** Names of the offending fields, in the order found. */
  readonly fields: readonly string[];

  constructor(message: string, context: QashioErrorContext = {}, options?: ErrorOptions) {
    super(message, context, options);
    this.fields = this.errors.map((e) => e.field ?? "(request)");
  }
}

/** 401: token missing, malformed, expired or invalid (after the one refresh-and-retry already happened). */
export class UnauthorizedError extends QashioError {
  override name = "UnauthorizedError";
}

/** 403: the token is valid but may not perform the action; a wider grant is needed. */
export class ForbiddenError extends QashioError {
  override name = "ForbiddenError";
}

/** 404: the resource does not exist or belongs to another company. */
export class NotFoundError extends QashioError {
  override name = "NotFoundError";
}

/** A provider answer that may say when to try again: `Retry-After` on a 429, or on a 5xx such as a 503 in maintenance. */
export abstract class RetryAfterError extends QashioError {
  /** Wait the provider asked for (`Retry-After`), when it sent one. */
  readonly retryAfterMs?: number;

  constructor(message: string, context: QashioErrorContext & { retryAfterMs?: number } = {}, options?: ErrorOptions) {
    super(message, context, options);
    this.retryAfterMs = context.retryAfterMs;
  }
}

/** 429 after the retry budget was spent (or when the provider asked to wait longer than allowed). */
export class RateLimitedError extends RetryAfterError {
  override name = "RateLimitedError";
}

/** 5xx after the retry budget was spent, or on a request that must not be retried. */
export class ServerError extends RetryAfterError {
  override name = "ServerError";
}

/** The request failed before a response arrived (DNS, connection reset, TLS...). The outcome is unknown. */
export class NetworkError extends QashioError {
  override name = "NetworkError";
  /** Why no response came: a system code (`ENOTFOUND`, `ECONNREFUSED`, ...) or `ERR_*`, when known. */
  readonly reason?: string;

  constructor(message: string, context: QashioErrorContext & { reason?: string } = {}, options?: ErrorOptions) {
    super(message, context, options);
    if (context.reason !== undefined) this.reason = context.reason;
  }
}

/** No complete response within the per-request timeout. The outcome is unknown. */
export class TimeoutError extends QashioError {
  override name = "TimeoutError";
  readonly timeoutMs: number;

  constructor(message: string, context: QashioErrorContext & { timeoutMs: number }, options?: ErrorOptions) {
    super(message, context, options);
    this.timeoutMs = context.timeoutMs;
  }
}

/**
 * A request with a deadline (`HttpRequest.deadline`) was not sent, or not sent again, because a whole attempt could
 * no longer finish before it. `cause` holds the failure of the last attempt, when one was made. The caller is out of
 * time, not facing a provider fault: it should stop and try again later.
 */
export class DeadlineExceededError extends QashioError {
  override name = "DeadlineExceededError";
  /** The deadline (epoch ms) the request was held to. */
  readonly deadline: number;

  constructor(message: string, context: QashioErrorContext & { deadline: number }, options?: ErrorOptions) {
    super(message, context, options);
    this.deadline = context.deadline;
  }
}

/**
 * A failed attempt the client would have sent again, left to its caller (`HttpRequest.callerRetries`), who refreshes
 * what it sends first: the engine reads a page again before it acknowledges the page again (a re-drive leaves that to
 * the next cycle), since an acknowledge carries no version and a retry of the old one would mark a change made
 * meanwhile as synced unseen. The caller waits `delayMs` (the provider's `Retry-After`, else the client's backoff) and
 * calls again with `failedBefore` = `attempt`. `cause` is the attempt's failure; the last attempt the client allows fails with that failure itself.
 */
export class RetryDeferredError extends QashioError {
  override name = "RetryDeferredError";
  /** How long to wait before the next attempt. */
  readonly delayMs: number;
  /** Failed attempts so far, this one included. */
  readonly attempt: number;

  constructor(message: string, context: QashioErrorContext & { delayMs: number; attempt: number }, options?: ErrorOptions) {
    super(message, context, options);
    this.delayMs = context.delayMs;
    this.attempt = context.attempt;
  }
}

/** The response body was not JSON or did not match its schema. Carries the schema issues, never the body. */
export class InvalidResponseError extends QashioError {
  override name = "InvalidResponseError";
  readonly issues: readonly ResponseIssue[];

  constructor(message: string, context: QashioErrorContext & { issues?: readonly ResponseIssue[] } = {}, options?: ErrorOptions) {
    super(message, context, options);
    this.issues = context.issues ?? [];
  }
}

/**
 * A 200 token answer that is not a usable token set (no access token, not `Bearer`, a bad `expires_in`) but carries a
 * new refresh token. The refresh token sent is spent by then: the caller must save this one before anything else, or
 * the next refresh presents the spent one and revokes the whole family. It sits in a private field, which no logger,
 * serialiser or `util.inspect` reads: get it with {@link rotatedRefreshToken}, never put it in a log.
 */
export class IncompleteTokenSetError extends InvalidResponseError {
  override name = "IncompleteTokenSetError";
  readonly #rotatedRefreshToken: string;

  constructor(message: string, context: QashioErrorContext & { issues?: readonly ResponseIssue[] }, rotatedRefreshToken: string) {
    super(message, context);
    this.#rotatedRefreshToken = rotatedRefreshToken;
  }

  /** The new refresh token the answer carried: the one to save. */
  rotatedRefreshToken(): string {
    return this.#rotatedRefreshToken;
  }
}

/**
 * The refresh token was rejected (reused, revoked, expired) and no other process rotated it: the token family is
 * gone and an operator must re-authorize the integration. Wrong client credentials (`invalid_client`) are not this.
 */
export class ReauthorizationRequiredError extends QashioError {
  override name = "ReauthorizationRequiredError";
  /**
   * True for a 401 that named no `invalid_grant`: spec §4.2 answers wrong client credentials with a 401 too, so the
   * refusal may be of the client id or secret, the family intact (re-authorizing with wrong credentials fails as well).
   */
  readonly clientMayBeRefused: boolean;
  readonly #refusedRefreshToken?: string;

  constructor(message: string, context: QashioErrorContext = {}, options?: ErrorOptions & { readonly refusedRefreshToken?: string }) {
    super(message, context, options);
    this.clientMayBeRefused = clientMayBeRefused(context);
    this.#refusedRefreshToken = options?.refusedRefreshToken;
  }

  /**
   * The refresh token the token endpoint refused, when the error came from a refusal: a revoked mark names what holds
   * this one, never a token stored since (a re-authorization landing while the refresh ran).
   */
  refusedRefreshToken(): string | undefined {
    return this.#refusedRefreshToken;
  }
}

/** True for a token endpoint 401 that names no `invalid_grant` (see {@link ReauthorizationRequiredError.clientMayBeRefused}). */
export function clientMayBeRefused(refusal: Pick<QashioErrorContext, "status" | "errors">): boolean {
  return refusal.status === 401 && !(refusal.errors ?? []).some((e) => e.code === "invalid_grant");
}

/** No stored tokens, a failed token save, or the cross-process refresh lock could not be taken in time. */
export class TokenUnavailableError extends QashioError {
  override name = "TokenUnavailableError";
}

/** A base URL or another client setting is missing or malformed. */
export class ClientConfigurationError extends QashioError {
  override name = "ClientConfigurationError";
}

/** `status_class` of a failed provider call, as the ProviderErrors metric names it. */
export type StatusClass = "4xx" | "5xx" | "network" | "timeout" | "other";

/**
 * The `status_class` of a failure: `4xx`/`5xx` by status, else `timeout` or `network` by error name, else `other`. By
 * name, so the engine classifies what reaches it through its steps (it holds no client classes) as the client does.
 */
export function statusClassOf(failure: { readonly status?: number; readonly name: string }): StatusClass {
  const { status, name } = failure;
  if (status !== undefined) return status >= 500 ? "5xx" : status >= 400 ? "4xx" : "other";
  if (name === "TimeoutError") return "timeout";
  if (name === "NetworkError") return "network";
  return "other";
}
