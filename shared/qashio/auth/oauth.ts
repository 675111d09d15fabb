/**
 * OAuth 2.0 operations of spec §4.2 and §5: authorize URL, code exchange, refresh, validate.
 * Token and validate responses have no envelope, and their error bodies are unknown: error messages
 * carry at most an OAuth error code, never the body (it may echo a secret).
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import { TokenSetSchema, ValidateResponseSchema, parseWithDrift, type TokenSet } from "../schemas/index.js";
import { IncompleteTokenSetError, InvalidResponseError } from "../errors.js";
import { HttpCore, type HttpCoreOptions } from "../http.js";
import { issuesOf } from "../parse.js";
import { AUTHORIZE_PATH } from "../config.js";

export const TOKEN_PATH = "/oauth2/token";
export const VALIDATE_PATH = "/oauth2/validate";
export { AUTHORIZE_PATH } from "../config.js";

/** Settings shared by the token operations: the transport's (no token provider: these calls make the tokens). */
export interface OAuthClientOptions extends Omit<HttpCoreOptions, "tokenProvider"> {
  readonly clientId: string;
  /** Confidential; sent only in token request bodies, never logged. */
  readonly clientSecret: string;
}

/** Parameters of the authorization screen redirect (spec §4.2, §5 rule 4a). */
export interface AuthorizeUrlParams {
  /** {authorize_url} (see config.ts `resolveAuthorizeUrl`). */
  readonly authorizeUrl: string;
  readonly clientId: string;
  readonly redirectUri: string;
  /** Scopes, space-separated or as a list (e.g. `["transactions:read", "cards:read"]`). */
  readonly scope: string | readonly string[];
  /** Opaque anti-forgery value; see {@link createState} and {@link stateMatches}. */
  readonly state: string;
}

/**
 * Builds the URL the user is sent to for approval.
 *
 * @example
 * ```ts
 * const state = createState();
 * const url = buildAuthorizeUrl({ authorizeUrl, clientId, redirectUri: "https://app.example/cb", scope: ["transactions:read"], state });
 * ```
 */
export function buildAuthorizeUrl(params: AuthorizeUrlParams): string {
  const url = new URL(`${params.authorizeUrl.replace(/\/+$/, "")}${AUTHORIZE_PATH}`);
  url.searchParams.set("response_type", "code");
  url.searchParams.set("client_id", params.clientId);
  url.searchParams.set("redirect_uri", params.redirectUri);
  url.searchParams.set("scope", typeof params.scope === "string" ? params.scope : params.scope.join(" "));
  url.searchParams.set("state", params.state);
  return url.href;
}

/**
 * A fresh unguessable `state` value (256 random bits, base64url).
 *
 * @example
 * ```ts
 * const state = createState(); // keep it in the user's session until the redirect returns
 * ```
 */
export function createState(): string {
  return randomBytes(32).toString("base64url");
}

/**
 * Constant-time check of the `state` returned on the redirect against the one sent (spec §5 rule 4b).
 *
 * @example
 * ```ts
 * if (!stateMatches(session.state, query.state)) throw new Error("forged redirect");
 * ```
 */
export function stateMatches(expected: string, received: string | null | undefined): boolean {
  if (typeof received !== "string") return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(received);
  return a.length === b.length && a.length > 0 && timingSafeEqual(a, b);
}

function coreFor(options: Omit<OAuthClientOptions, "clientId" | "clientSecret">): HttpCore {
  return new HttpCore({
    baseUrl: options.baseUrl,
    fetch: options.fetch,
    clock: options.clock,
    timeoutMs: options.timeoutMs,
    retry: options.retry,
    logger: options.logger,
    onRetry: options.onRetry,
  });
}

async function postToken(options: OAuthClientOptions, body: Record<string, string>, deadline?: number): Promise<TokenSet> {
  // A code and a refresh token are single use: only a 429 (not processed) is safe to send again.
  const response = await coreFor(options).request({
    method: "POST",
    path: TOKEN_PATH,
    body,
    auth: "none",
    retry: "unambiguous-only",
    errorBody: "oauth",
    deadline,
  });
  const parsed = parseWithDrift(TokenSetSchema, response.body);
  if (parsed.success) return parsed.data;
  const issues = issuesOf(parsed.error);
  // The fields by name only, never a value: the message is what logs show (the body holds tokens).
  const message = `POST ${TOKEN_PATH} answered ${response.status} with a body that is not a token set (${[...new Set(issues.map((i) => i.path))].join(", ")})`;
  const context = { status: response.status, requestId: response.requestId, method: "POST", path: TOKEN_PATH, issues };
  // A refresh token in the answer replaced the one sent, whatever else is wrong with it: the caller must keep it.
  const rotated = RotatedRefreshTokenSchema.safeParse(response.body);
  if (rotated.success) throw new IncompleteTokenSetError(`${message}, though it carries a new refresh token`, context, rotated.data.refresh_token);
  throw new InvalidResponseError(message, context);
}

const RotatedRefreshTokenSchema = TokenSetSchema.pick({ refresh_token: true });

/**
 * Exchanges an authorization code for a token set (`grant_type=authorization_code`).
 * Not retried on ambiguous failures: a code is single use.
 *
 * @throws UnauthorizedError (invalid, expired or used code; bad client credentials), BadRequestError (redirect_uri mismatch).
 * @example
 * ```ts
 * const tokens = await exchangeCode({ baseUrl, clientId, clientSecret }, { code, redirectUri });
 * ```
 */
export function exchangeCode(options: OAuthClientOptions, grant: { code: string; redirectUri: string }): Promise<TokenSet> {
  return postToken(options, {
    grant_type: "authorization_code",
    client_id: options.clientId,
    client_secret: options.clientSecret,
    code: grant.code,
    redirect_uri: grant.redirectUri,
  });
}

/**
 * Refreshes with `grant_type=refresh_token`. The sent refresh token is consumed: persist the returned one
 * before using the new access token. Not retried on ambiguous failures: replaying a consumed refresh token
 * revokes the whole token family (spec §5 rule 6). With `deadline` (epoch ms), the call and its retries are over by
 * then: a refresh made under a lease must not outlive it.
 *
 * @throws UnauthorizedError when the refresh token is invalid, expired, revoked or reused.
 * @throws IncompleteTokenSetError when the answer is not a usable token set but carries a new refresh token: save that
 * one (the sent one is spent) before anything else.
 * @example
 * ```ts
 * const next = await refresh({ baseUrl, clientId, clientSecret }, stored.refreshToken);
 * await store.save({ refreshToken: next.refresh_token, accessToken: next.access_token });
 * ```
 */
export function refresh(options: OAuthClientOptions, refreshToken: string, deadline?: number): Promise<TokenSet> {
  return postToken(
    options,
    {
      grant_type: "refresh_token",
      client_id: options.clientId,
      client_secret: options.clientSecret,
      refresh_token: refreshToken,
    },
    deadline,
  );
}

/**
 * Checks a token at `GET /oauth2/validate`: valid and API access enabled for the company.
 *
 * @throws UnauthorizedError (token missing, expired, revoked), ForbiddenError (API access disabled).
 * @example
 * ```ts
 * const { active } = await validate({ baseUrl }, accessToken);
 * ```
 */
export async function validate(
  options: Omit<OAuthClientOptions, "clientId" | "clientSecret">,
  accessToken: string,
): Promise<{ active: boolean }> {
  const response = await coreFor(options).request({
    method: "GET",
    path: VALIDATE_PATH,
    auth: { token: accessToken },
    retry: "idempotent",
    errorBody: "oauth",
  });
  const parsed = ValidateResponseSchema.safeParse(response.body);
  if (!parsed.success) {
    throw new InvalidResponseError(`GET ${VALIDATE_PATH} answered ${response.status} without a boolean "active"`, {
      status: response.status,
      requestId: response.requestId,
      method: "GET",
      path: VALIDATE_PATH,
      issues: issuesOf(parsed.error),
    });
  }
  return { active: parsed.data.active };
}
