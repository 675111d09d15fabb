/**
 * Request core of the provider API client: timeout, bearer auth with one refresh-and-replay on 401,
 * retries with exponential backoff and full jitter on 429 / 5xx / network failures. The client-wide throttling after a
 * 429 is rate-gate.ts's, a failed answer's typed error comes from response-errors.ts, the redaction of the request's
 * secrets from redact.ts.
 */
import {
  InvalidResponseError,
  NetworkError,
  RateLimitedError,
  RetryAfterError,
  RetryDeferredError,
  ServerError,
  TimeoutError,
  UnauthorizedError,
  statusClassOf,
  type QashioError,
  type StatusClass,
} from "./errors.js";
import type { TokenProvider } from "./auth/token-provider.js";
import { MAX_RESPONSE_BODY_BYTES, nodeHttpFetch, RESPONSE_TOO_LARGE } from "./node-transport.js";
import { attemptFits, outOfTime, throwIfStopped } from "./out-of-time.js";
import { RateGate } from "./rate-gate.js";
import { safeRequestId, secretsOf } from "./redact.js";
import { bodyText, codingNote, errorForResponse, networkReasonOf, parseJson, requestIdOf, type ResponseBody } from "./response-errors.js";
import { realSleep, systemClock, type Clock } from "../clock.js";
import type { FetchLike, ResponseHeaders } from "./fetch-like.js";

export type { FetchInit, FetchLike, FetchResponse, ResponseHeaders } from "./fetch-like.js";

/** Time source (shared/clock.ts); tests inject a fake so nothing really sleeps. */
export type { Clock };

/** Structured logger; structurally a subset of the bridge's `Logger` port. */
export interface ClientLogger {
  debug(message: string, attributes?: Readonly<Record<string, unknown>>): void;
  warn(message: string, attributes?: Readonly<Record<string, unknown>>): void;
}

/** Retry settings. */
export interface RetryOptions {
  /** Total attempts including the first. @default 5 */
  readonly maxAttempts?: number;
  /** Backoff base: the cap of the first retry's jittered delay. @default 250 */
  readonly baseDelayMs?: number;
  /** Cap of any computed backoff delay. @default 20_000 */
  readonly maxDelayMs?: number;
  /**
   * Longest `Retry-After` (429 or 5xx) honoured; a longer one ends the retries with the error's `retryAfterMs`, and a
   * 429's refuses every request of the client, unsent, until it has passed. @default 60_000
   */
  readonly maxRetryAfterMs?: number;
  /** Uniform [0, 1) source for the jitter. @default Math.random */
  readonly random?: () => number;
}

// Re-exported: the client's public API and its tests name the shared clock from here.
export { realSleep, systemClock };

export const DEFAULT_TIMEOUT_MS = 10_000;
export const DEFAULT_RETRY: Required<RetryOptions> = {
  maxAttempts: 5,
  baseDelayMs: 250,
  maxDelayMs: 20_000,
  maxRetryAfterMs: 60_000,
  random: Math.random,
};

/**
 * When a failed request may be sent again.
 * - `idempotent`: reads, PUTs, acknowledge: retried on 429, 5xx, network errors and timeouts.
 * - `unambiguous-only`: non-idempotent POSTs (velocity limit, invitations) and the token requests (a code and a refresh
 *   token are single use): retried only on 429 (the provider did not process it).
 * - `never`: card issuance (spec §7 rule 3): no automatic retry at all.
 * A 401 is replayed once after a token refresh in every mode: the provider rejected it before processing.
 */
export type RetryMode = "idempotent" | "unambiguous-only" | "never";

export type QueryValue = string | number | boolean | null | undefined;

/** One request as the client describes it. */
export interface HttpRequest {
  readonly method: "GET" | "POST" | "PUT";
  /** Path relative to the base URL, starting with `/`, without a query string. */
  readonly path: string;
  readonly query?: Readonly<Record<string, QueryValue>>;
  readonly body?: unknown;
  readonly retry: RetryMode;
  /** `bearer`: token from the TokenProvider; `none`: no Authorization header; `{ token }`: that token, no refresh. */
  readonly auth: "bearer" | "none" | { readonly token: string };
  /** How error bodies look: the standard envelope (spec §7) or the token/validate operations' unknown shape. */
  readonly errorBody?: "envelope" | "oauth";
  /**
   * Epoch ms by which the request and its retries must be over: an attempt starts only when its whole timeout fits
   * before it (an attempt cut short could be processed unanswered). For work under a lease, which must not outlive it,
   * and for a cycle with a time budget. A request stopped by it throws `DeadlineExceededError`.
   */
  readonly deadline?: number;
  /**
   * A stop request (Ctrl-C): once it aborts, no further attempt starts and a retry's wait ends early; the request then
   * throws `DeadlineExceededError`, as when out of time. The attempt under way is never cut: it may be processed.
   */
  readonly stop?: AbortSignal;
  /**
   * The caller sends the request again itself, after refreshing what it sends: a failed attempt the client would retry
   * is not sent again but thrown as a `RetryDeferredError` carrying the wait the retry would have had.
   * `failedBefore` counts the caller's failed attempts so far, for the backoff and the attempt limit: the failure of
   * the last attempt allowed is thrown as it is.
   */
  readonly callerRetries?: { readonly failedBefore: number };
  /**
   * A 2xx answer counts whatever its body: one that is not JSON gives `body` undefined instead of an
   * `InvalidResponseError` (for an operation whose response the spec does not show, such as acknowledge).
   */
  readonly anyBody?: boolean;
}

/** A 2xx response with its JSON body (undefined when empty, or not JSON under `anyBody`). */
export interface HttpResponse {
  readonly status: number;
  readonly body: unknown;
  readonly requestId?: string;
}

export interface HttpCoreOptions {
  /** Provider base URL (see config.ts `resolveBaseUrl`). */
  readonly baseUrl: string;
  readonly tokenProvider?: TokenProvider;
  /** @default nodeHttpFetch (node:http with keep-alive) */
  readonly fetch?: FetchLike;
  /** @default systemClock */
  readonly clock?: Clock;
  /** Per-attempt timeout covering headers and body. @default 10_000 */
  readonly timeoutMs?: number;
  readonly retry?: RetryOptions;
  readonly logger?: ClientLogger;
  /** Called for each failed attempt that is retried (e.g. to count ProviderErrors); a throw from it is ignored. */
  readonly onRetry?: (event: RetryEvent) => void;
}


/**
 * A failed attempt the client is about to send again (after a backoff, or after a token refresh on 401).
 * The failure that ends a call is not reported here: it is thrown, and the caller counts it.
 * Carries no token, query string or body.
 */
export interface RetryEvent {
  /** HTTP status, when a response arrived. */
  readonly status?: number;
  readonly statusClass: StatusClass;
  readonly method: string;
  /** Request path only, never a query string. */
  readonly path: string;
  /** Error class name (`ServerError`, `NetworkError`, ...). */
  readonly error: string;
  /** 1-based number of the attempt that failed. */
  readonly attempt: number;
  /** Wait before the next attempt (0 for the replay after a 401 refresh). */
  readonly delayMs: number;
}

type Attempt =
  | { readonly kind: "response"; readonly status: number; readonly headers: ResponseHeaders; readonly body: ResponseBody }
  | { readonly kind: "failure"; readonly error: QashioError };

/**
 * The wait a 429's or 5xx's `Retry-After` asks for, undefined when none or none at all (`0`, a date already past): a
 * limiter rounding its window's rest down to whole seconds says `0` until the window ends, and retrying at once would
 * spend every attempt in one burst inside it, so the backoff applies then, as without the header.
 */
function askedWaitOf(error: QashioError): number | undefined {
  const asked = error instanceof RetryAfterError ? error.retryAfterMs : undefined;
  return asked === undefined || asked <= 0 ? undefined : asked;
}

function isRetryable(error: QashioError, mode: RetryMode): boolean {
  if (mode === "never") return false;
  if (error instanceof RateLimitedError) return true;
  if (mode === "unambiguous-only") return false;
  return error instanceof ServerError || error instanceof NetworkError || error instanceof TimeoutError;
}

/**
 * The request core shared by `QashioClient` and the OAuth helpers.
 *
 * Retries are hand-written rather than taken from a library: the logic is ~40 lines, and it needs an
 * injectable clock (tests never sleep), `Retry-After` in both forms, and per-request retry modes.
 */
export class HttpCore {
  readonly baseUrl: string;
  private readonly fetchFn: FetchLike;
  private readonly clock: Clock;
  private readonly timeoutMs: number;
  private readonly retry: Required<RetryOptions>;
  private readonly tokenProvider?: TokenProvider;
  private readonly logger?: ClientLogger;
  private readonly onRetry?: (event: RetryEvent) => void;
  /** The client-wide throttling after a provider's 429: each attempt takes a turn there and frees it after. */
  private readonly gate: RateGate;

  constructor(options: HttpCoreOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.fetchFn = options.fetch ?? nodeHttpFetch;
    this.clock = options.clock ?? systemClock;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.retry = { ...DEFAULT_RETRY, ...options.retry };
    this.tokenProvider = options.tokenProvider;
    this.logger = options.logger;
    this.onRetry = options.onRetry;
    this.gate = new RateGate(this.clock, this.timeoutMs);
  }

  /**
   * Sends `request`, retrying per its mode, and returns the 2xx response with its JSON body.
   *
   * @throws QashioError subclasses: the mapped status error, NetworkError, TimeoutError, InvalidResponseError.
   */
  async request(request: HttpRequest): Promise<HttpResponse> {
    const errorBody = request.errorBody ?? "envelope";
    const where = { method: request.method, path: request.path };
    let replayedAfter401 = false;
    let replayToken: string | undefined;
    // Every bearer token this request has sent, for the redaction of each answer (see secretsOf).
    const sentTokens: string[] = [];
    let attempt = request.callerRetries?.failedBefore ?? 0;
    let last: QashioError | undefined;
    // The end of the latest client-wide throttling wait this request has waited out (see RateGate.waitForTurn).
    let waitedFor = Number.NEGATIVE_INFINITY;
    for (;;) {
      attempt += 1;
      throwIfStopped(request, last);
      this.gate.throwIfRefused(request, last);
      // Not throttled (no waiter, no limit, no wait): the turn is taken at once, without an await or an allocation.
      if (!this.gate.takeTurnAtOnce(waitedFor)) waitedFor = await this.gate.waitForTurn(request, last, waitedFor, attempt);
      const sentIn = this.gate.round;
      let token: string | undefined;
      let outcome: Attempt | undefined;
      try {
        // Checked before the token too: a call that cannot be sent must not spend the refresh token on the way (a
        // refresh and its save past the invocation's end could be cut off, leaving the spent token stored).
        if (!this.attemptFits(request, 0)) throw outOfTime(request, "sent", last);
        token = replayToken ?? (await this.tokenFor(request));
        replayToken = undefined;
        // A 429 another request met while the token came: the turn is handed back, and the wait waited out and a turn
        // of the slow start it began taken first (the same attempt, with the token it got). A turn taken before that
        // 429 is one of no round: kept once the wait is over, it sent a burst past the probe.
        const throttledSince = this.gate.throttledSince(sentIn, waitedFor);
        // The clock's last reading before the send: one after it would send on a check the clock has moved past.
        if (!this.attemptFits(request, 0)) throw outOfTime(request, "sent", last);
        // A stop that came while the token did (a refresh can take seconds): the attempt has not started.
        throwIfStopped(request, last);
        if (throttledSince) {
          replayToken = token;
          attempt -= 1;
          continue;
        }
        if (token !== undefined && !sentTokens.includes(token)) sentTokens.push(token);
        outcome = await this.send(request, token);
      } finally {
        this.gate.endTurn(sentIn, outcome?.kind === "response" && outcome.status !== 429);
      }
      let error: QashioError;
      if (outcome.kind === "response") {
        const { status, headers, body } = outcome;
        const secrets = secretsOf(request, sentTokens);
        if (status >= 200 && status < 300) return this.success(status, headers, body, where, secrets, request.anyBody === true);
        error = errorForResponse(status, headers, bodyText(body), { ...where, errorBody, now: this.clock.now(), secrets });
        if (status === 401 && request.auth === "bearer" && this.tokenProvider && token !== undefined && !replayedAfter401) {
          // No refresh for a replay that could not be sent anyway (see the check before the token above).
          if (!this.attemptFits(request, 0)) throw outOfTime(request, "retried", error);
          this.gate.throwIfRefused(request, error);
          replayedAfter401 = true;
          attempt -= 1;
          this.logger?.debug("provider answered 401; refreshing the token and replaying once", { ...where, requestId: error.requestId });
          this.reportRetry(error, attempt + 1, 0);
          replayToken = await this.tokenProvider.refreshAfterUnauthorized(token, { deadline: request.deadline, requestTimeoutMs: this.timeoutMs });
          continue;
        }
      } else {
        error = outcome.error;
      }
      if (!isRetryable(error, request.retry) || attempt >= this.retry.maxAttempts) {
        // The provider asked the client to wait also when this request gives up (its last attempt, a request never
        // retried): the others are held as after a retried 429 (its Retry-After, else the backoff's ceiling whatever
        // its length: maxRetryAfterMs bounds what the provider asks, not the client's own backoff), or refused for a
        // Retry-After longer than a retry would wait.
        if (error instanceof RateLimitedError) {
          const askedMs = askedWaitOf(error);
          if (askedMs !== undefined && askedMs > this.retry.maxRetryAfterMs) this.gate.refuse(askedMs);
          else this.gate.throttle(askedMs ?? this.backoffCeiling(attempt));
        }
        throw error;
      }
      const retryAfterMs = askedWaitOf(error);
      if (retryAfterMs !== undefined && retryAfterMs > this.retry.maxRetryAfterMs) {
        // Not waited for: every request of the client is refused until it has passed (a 5xx's is its request's alone).
        if (error instanceof RateLimitedError) this.gate.refuse(retryAfterMs);
        throw error;
      }
      const delayMs = retryAfterMs ?? this.backoff(attempt);
      if (error instanceof RateLimitedError) this.gate.throttle(delayMs);
      // A retry that could not finish before the deadline is not attempted: the caller learns it is out of time.
      if (!this.attemptFits(request, delayMs)) throw outOfTime(request, "retried", error);
      this.logger?.warn("provider request failed; retrying", {
        ...where,
        status: error.status,
        error: error.name,
        requestId: error.requestId,
        attempt,
        delayMs,
      });
      this.reportRetry(error, attempt, delayMs);
      if (request.callerRetries) {
        const { status, requestId, method, path } = error;
        throw new RetryDeferredError(`${error.message}; left to the caller to retry in ${delayMs} ms`, { status, requestId, method, path, delayMs, attempt }, { cause: error });
      }
      last = error;
      // A 429's wait is the client's: the request waits it out at its next turn, among the others it holds.
      if (!(error instanceof RateLimitedError)) await this.clock.sleep(delayMs, request.stop);
    }
  }

  private reportRetry(error: QashioError, attempt: number, delayMs: number): void {
    if (!this.onRetry) return;
    const { status, method = "", path = "" } = error;
    try {
      this.onRetry({ status, statusClass: statusClassOf(error), method, path, error: error.name, attempt, delayMs });
    } catch {
      // A failing metrics hook must not turn a recoverable provider error into a failed call.
    }
  }

  /** Full jitter: uniform in [0, {@link backoffCeiling}). */
  private backoff(attempt: number): number {
    return Math.floor(this.retry.random() * this.backoffCeiling(attempt));
  }

  /** min(cap, base * 2^(attempt-1)). */
  private backoffCeiling(attempt: number): number {
    return Math.min(this.retry.maxDelayMs, this.retry.baseDelayMs * 2 ** (attempt - 1));
  }

  private async tokenFor(request: HttpRequest): Promise<string | undefined> {
    if (request.auth === "none") return undefined;
    if (typeof request.auth === "object") return request.auth.token;
    if (!this.tokenProvider) throw new UnauthorizedError("no token provider configured", { method: request.method, path: request.path });
    // The request's deadline bounds a refresh the token needs as well (see TokenRequestOptions.deadline).
    return this.tokenProvider.getAccessToken({ deadline: request.deadline, requestTimeoutMs: this.timeoutMs });
  }

  private success(status: number, headers: ResponseHeaders, body: ResponseBody, where: { method: string; path: string }, secrets: readonly string[], anyBody: boolean): HttpResponse {
    const parsed = parseJson(body);
    if (!parsed.ok) {
      if (anyBody) return { status, body: undefined, requestId: safeRequestId(headers.get("x-request-id") ?? undefined, secrets) };
      throw new InvalidResponseError(`${where.method} ${where.path} answered ${status} with a body that is not JSON${codingNote(headers)}`, {
        ...where,
        status,
        requestId: safeRequestId(headers.get("x-request-id") ?? undefined, secrets),
      });
    }
    return { status, body: parsed.value, requestId: safeRequestId(requestIdOf(parsed.value, headers), secrets) };
  }

  private url(request: HttpRequest): string {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(request.query ?? {})) {
      if (value !== undefined && value !== null) params.append(key, String(value));
    }
    const search = params.toString();
    return `${this.baseUrl}${request.path}${search ? `?${search}` : ""}`;
  }

  /** Whether an attempt starting `delayMs` from now ends, at its timeout, by the request's deadline (if any). */
  private attemptFits(request: HttpRequest, delayMs: number): boolean {
    return attemptFits(this.clock, this.timeoutMs, request, delayMs);
  }

  private async send(request: HttpRequest, token: string | undefined): Promise<Attempt> {
    const where = { method: request.method, path: request.path };
    const headers: Record<string, string> = { accept: "application/json" };
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    if (request.body !== undefined) headers["content-type"] = "application/json";
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.timeoutMs);
    let status: number | undefined;
    try {
      const response = await this.fetchFn(this.url(request), {
        method: request.method,
        headers,
        body: request.body === undefined ? undefined : JSON.stringify(request.body),
        signal: controller.signal,
        redirect: "manual",
      });
      status = response.status;
      // Only a successful body is parsed piecewise; an error body is read as text (errorForResponse).
      const body = status >= 200 && status < 300 && response.chunks ? await response.chunks() : await response.text();
      return { kind: "response", status: response.status, headers: response.headers, body };
    } catch (cause) {
      if (controller.signal.aborted) {
        return {
          kind: "failure",
          error: new TimeoutError(`${where.method} ${where.path} got no response within ${this.timeoutMs} ms`, {
            ...where,
            timeoutMs: this.timeoutMs,
          }),
        };
      }
      // The cause is kept by name only: some fetch errors quote the full URL, query string included.
      const reason = networkReasonOf(cause);
      if (reason === RESPONSE_TOO_LARGE) {
        // Not retried: an answer that size is no page the client asked for, and each retry would read as much again.
        const limit = `${MAX_RESPONSE_BODY_BYTES / (1024 * 1024)} MiB`;
        return {
          kind: "failure",
          error: new InvalidResponseError(`${where.method} ${where.path} answered ${status ?? "?"} with a body over ${limit}`, { ...where, status }),
        };
      }
      return { kind: "failure", error: new NetworkError(`${where.method} ${where.path} failed before a response (${reason})`, { ...where, reason }) };
    } finally {
      clearTimeout(timer);
    }
  }
}
