/**
 * Who is calling: a bearer access token (§5) bound to one company, or on the
 * legacy prefix an `x-api-key` with `companyId` (§9 rule 3).
 */
import type { MiddlewareHandler } from "hono";
import { ForbiddenError, UnauthorizedError, ValidationError } from "./errors.js";
import type { SandboxContext, SandboxEnv } from "./http.js";

/** Bearer middleware: verifies the token and binds the company; 403 when the company's API access is disabled. */
export function bearerAuth(): MiddlewareHandler<SandboxEnv> {
  return async (c, next) => {
    const state = c.get("state");
    const grant = state.oauth.verifyAccessToken(bearerToken(c.req.header("authorization")));
    const data = state.company(grant.companyId);
    if (!data) throw new UnauthorizedError("Access token names an unknown company");
    if (!data.company.apiAccessEnabled) throw new ForbiddenError("API access is disabled for this company");
    c.set("grant", grant);
    c.set("data", data);
    await next();
  };
}

/**
 * The challenge of a legacy `401`: the earlier generation takes an `x-api-key`, not the bearer token it refuses, so
 * the Bearer challenge would send a client to a credential that cannot work there (no scheme is registered for it).
 */
export const LEGACY_API_KEY_CHALLENGE = 'ApiKey realm="sandbox", header="x-api-key"';

/** A legacy `401` (the sandbox's own or an injected one). */
export function legacyUnauthorized(message?: string): UnauthorizedError {
  return new UnauthorizedError(message, undefined, LEGACY_API_KEY_CHALLENGE);
}

/** Legacy middleware: `x-api-key` names the integration, `companyId` must be its company. */
export function apiKeyAuth(): MiddlewareHandler<SandboxEnv> {
  return async (c, next) => {
    const state = c.get("state");
    const key = c.req.header("x-api-key");
    if (!key) throw legacyUnauthorized("Missing x-api-key header");
    const data = state.listCompanies().find((d) => d.company.apiKey === key);
    if (!data) throw legacyUnauthorized("Invalid x-api-key");
    // One value, as every key a query takes (checkQuery): a second id beside the key's own company names another.
    const [companyId, ...more] = new URL(c.req.url).searchParams.getAll("companyId");
    if (more.length > 0) throw new ValidationError([{ field: "companyId", code: "INVALID_FORMAT", message: "companyId takes one value per request" }]);
    if (!companyId) throw new ValidationError([{ field: "companyId", code: "REQUIRED", message: "companyId is required" }]);
    if (companyId !== data.company.id) throw new ForbiddenError("x-api-key does not belong to this companyId", "companyId");
    if (!data.company.apiAccessEnabled) throw new ForbiddenError("API access is disabled for this company");
    c.set("data", data);
    await next();
  };
}

/** 403 unless the bearer token was granted `scope` (legacy API keys hold every read scope). */
export function requireScope(c: SandboxContext, scope: string): void {
  const grant = c.get("grant");
  if (grant === undefined) {
    if (scope.endsWith(":write")) throw new ForbiddenError(`scope ${scope} is required`);
    return;
  }
  if (!grant.scopes.has(scope)) throw new ForbiddenError(`scope ${scope} is required`);
}

/**
 * The token of an `Authorization: Bearer` header; undefined when none is sent (no header, or `Bearer` alone). A header
 * of another form (another scheme, a bare token, text after the token) is malformed: a 401 saying so, not "missing".
 */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined || /^\s*(Bearer\s*)?$/i.test(header)) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match?.[1]) throw new UnauthorizedError("Malformed Authorization header: expected Bearer <token>");
  return match[1];
}
