/**
 * The sandbox's Hono application: request ids, control surface, latency and faults,
 * OAuth, the current API under `/public/v1` and the earlier generation under `/legacy`.
 */
import { randomUUID } from "node:crypto";
import { Hono, type Context } from "hono";
import { apiKeyAuth, bearerAuth, legacyUnauthorized } from "./auth.js";
import { ApiError, BEARER_CHALLENGE, ForbiddenError, NotFoundError, OAuthError, UnauthorizedError } from "./errors.js";
import type { FaultSpec } from "./faults.js";
import { delay, errorBody, type SandboxEnv } from "./http.js";
import { registerControl } from "./routes/control.js";
import { registerCore } from "./routes/core.js";
import { CURRENT_ERP_PATHS, LEGACY_ERP_OPTIONS, LEGACY_ERP_PATHS, registerAcknowledge, registerErpReads } from "./routes/erp.js";
import { AUTHORIZE_PATH, errorPage, registerOAuth } from "./routes/oauth.js";
import type { SandboxState } from "./state.js";

/** Prefix of the earlier connector generation's paths (§9; its host is not shown). */
export const LEGACY_PREFIX = "/legacy";

const STATUS_MESSAGES: Readonly<Record<number, string>> = {
  429: "Too many requests",
  500: "Internal server error",
  502: "Bad gateway",
  503: "Service unavailable",
  504: "Gateway timeout",
};

const FAULT_CODES: Readonly<Record<number, string>> = { 429: "RATE_LIMITED", 503: "SERVICE_UNAVAILABLE" };

/**
 * Statuses the sandbox gives for real: injected, they carry the same §7 entry and headers (401's challenge, the API
 * key's on the earlier generation's paths).
 */
const OWN_ERRORS: Readonly<Record<number, (path: string) => ApiError>> = {
  401: (path) => (path.startsWith(`${LEGACY_PREFIX}/`) ? legacyUnauthorized() : new UnauthorizedError()),
  403: () => new ForbiddenError(),
  404: () => new NotFoundError(),
};

/**
 * The OAuth code the token and validate operations give for a refusal of their own (sandbox/routes/oauth.ts), which an
 * injected one carries too: a 401 from the token endpoint is a refused grant (`invalid_client` would tell the client
 * its credentials are wrong); validate never answers 400 itself, so its 400 is RFC 6750 §3.1's `invalid_request`.
 */
const OAUTH_OWN_CODES: Readonly<Record<string, Readonly<Record<number, string>>>> = {
  "/oauth2/token": { 400: "invalid_request", 401: "invalid_grant" },
  "/oauth2/validate": { 400: "invalid_request", 401: "invalid_token", 403: "access_denied" },
};

/** The headers of those refusals: validate's 401 challenges as the API's does (RFC 6750 §3). */
const OAUTH_OWN_HEADERS: Readonly<Record<string, Readonly<Record<number, Readonly<Record<string, string>>>>>> = {
  "/oauth2/validate": { 401: { "www-authenticate": BEARER_CHALLENGE } },
};

/**
 * The OAuth code of an injected status no OAuth operation gives itself (RFC 6749 §4.1.2.1's codes; the spec names
 * none, §7): a 401 or 403 is a refusal, `access_denied`, not `server_error`, that section's stand-in for a 500.
 */
const OAUTH_FAULT_CODES: Readonly<Record<number, string>> = {
  401: "access_denied",
  403: "access_denied",
  429: "temporarily_unavailable",
  503: "temporarily_unavailable",
};

/** A `malformed` fault's page on the authorization screen: an error page cut off mid-way, as a dropped answer leaves it. */
const CUT_PAGE = errorPage("Service unavailable").slice(0, 120);

/**
 * The answer `fault` gives instead of the handler's; undefined for a delay alone. Built apart from the context's
 * headers, so an answer that replaces a served one carries none of the handler's (`www-authenticate`, `retry-after`).
 */
function faultAnswer(c: Context<SandboxEnv>, fault: FaultSpec): Response | undefined {
  // The authorization screen is a browser's page (§4.2): a failure there reaches the user as a page, as from a
  // gateway in front of it, not as JSON the browser would print (spec-gaps, faults).
  const onPage = c.req.path === AUTHORIZE_PATH;
  const type = onPage ? "text/html; charset=UTF-8" : "application/json";
  const answer = (status: number, body: string | null, headers: Record<string, string> = {}) =>
    new Response(body, { status, headers: { ...(body === null ? {} : { "content-type": type }), "x-request-id": c.get("requestId"), ...headers } });
  if (fault.malformed) return answer(fault.status ?? 200, onPage ? CUT_PAGE : '{"status_code": 200, "success": true, "data": [ <truncated');
  if (fault.status === undefined) return undefined;
  const headers: Record<string, string> = fault.retryAfter === undefined ? {} : { "retry-after": String(fault.retryAfter) };
  if (fault.bare) return answer(fault.status, null, headers);
  const message = STATUS_MESSAGES[fault.status] ?? "Injected failure";
  if (onPage) return answer(fault.status, errorPage(`${fault.status} ${message}`), headers);
  if (c.req.path.startsWith("/oauth2/")) {
    const own = OAUTH_OWN_CODES[c.req.path]?.[fault.status];
    const error = own ?? OAUTH_FAULT_CODES[fault.status] ?? "server_error";
    const ownHeaders = OAUTH_OWN_HEADERS[c.req.path]?.[fault.status] ?? {};
    return answer(fault.status, JSON.stringify({ error, error_description: message }), { ...ownHeaders, ...headers });
  }
  const own = OWN_ERRORS[fault.status]?.(c.req.path);
  if (own) return answer(own.status, JSON.stringify(errorBody(c, own.status, own.message, own.errors)), { ...own.headers, ...headers });
  const code = FAULT_CODES[fault.status] ?? (fault.status >= 500 ? "INTERNAL_ERROR" : "INJECTED_FAULT");
  return answer(fault.status, JSON.stringify(errorBody(c, fault.status, message, [{ field: null, code, message }])), headers);
}

/** Builds the app bound to one sandbox state. */
export function buildApp(state: SandboxState): Hono<SandboxEnv> {
  const app = new Hono<SandboxEnv>();

  app.use("*", async (c, next) => {
    const requestId = randomUUID();
    c.set("requestId", requestId);
    c.set("state", state);
    state.settle();
    await next();
    c.header("x-request-id", requestId);
  });

  registerControl(app);

  // Latency and faults apply to the provider API only, not to the control surface.
  app.use("*", async (c, next) => {
    if (c.req.path.startsWith("/_sandbox")) return next();
    const signal = c.req.raw.signal;
    await delay(state.latencyMs, signal);
    // Sandbox time went on during the wait (a clock that follows real time): commit what fell due meanwhile, so the
    // answer, stamped now, does not show a state older than its own `meta.timestamp`.
    state.settle();
    const fault = state.faults.take(c.req.method, c.req.path);
    if (!fault) return next();
    // Served first, its answer then replaced: the write stands though the caller never learns it.
    if (fault.applied) await next();
    await delay(fault.delayMs ?? 0, signal);
    state.settle();
    const answer = faultAnswer(c, fault);
    if (!fault.applied) return answer ?? next();
    if (answer === undefined) return;
    // After next() a returned answer is ignored: the served one is dropped and this one set in its place.
    c.res = undefined;
    c.res = answer;
  });

  registerOAuth(app);

  const erp = new Hono<SandboxEnv>();
  erp.use("*", bearerAuth());
  registerErpReads(erp, CURRENT_ERP_PATHS);
  registerAcknowledge(erp);
  app.route("/public/v1/erp", erp);

  const core = new Hono<SandboxEnv>();
  core.use("*", bearerAuth());
  registerCore(core);
  app.route("/public/v1/core", core);

  const legacy = new Hono<SandboxEnv>();
  legacy.use("*", apiKeyAuth());
  registerErpReads(legacy, LEGACY_ERP_PATHS, LEGACY_ERP_OPTIONS);
  app.route(LEGACY_PREFIX, legacy);

  app.notFound((c) => c.json(errorBody(c, 404, "Resource not found", [{ field: null, code: "NOT_FOUND", message: "no such endpoint" }]), 404));

  app.onError((error, c) => {
    c.header("x-request-id", c.get("requestId"));
    // The caller gave up (timeout): nobody reads this answer.
    if (c.req.raw.signal.aborted) return c.body(null, 499 as 200);
    if (error instanceof OAuthError || error instanceof ApiError) {
      for (const [name, value] of Object.entries(error.headers)) c.header(name, value);
    }
    if (error instanceof OAuthError) {
      return c.json({ error: error.error, error_description: error.description }, error.status);
    }
    if (error instanceof ApiError) {
      return c.json(errorBody(c, error.status, error.message, error.errors), error.status as 400);
    }
    console.error("sandbox: unexpected error", error);
    return c.json(errorBody(c, 500, "Internal server error", [{ field: null, code: "INTERNAL_ERROR", message: "unexpected sandbox error" }]), 500);
  });

  return app;
}
