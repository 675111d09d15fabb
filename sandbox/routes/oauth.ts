/**
 * OAuth operations (§4.2): the authorization screen (a real HTML page), the token
 * endpoint and validate. Errors here are OAuth-style `{ error, error_description }`.
 */
import type { Hono } from "hono";
import { AuthorizationCodeGrantSchema, checkBody, RefreshTokenGrantSchema, TokenRequestSchema, type TokenRequest } from "../../shared/qashio/schemas/index.js";
import { bearerToken } from "../auth.js";
import { BEARER_CHALLENGE, OAuthError, UnauthorizedError } from "../errors.js";
import type { SandboxContext, SandboxEnv } from "../http.js";
import type { TokenSetBody } from "../oauth.js";

/** The authorization screen's path: a browser's page, so its errors are pages too. */
export const AUTHORIZE_PATH = "/oauth2/authorize";

export function registerOAuth(app: Hono<SandboxEnv>): void {
  app.get(AUTHORIZE_PATH, authorizePage);
  app.post(AUTHORIZE_PATH, authorizeDecision);
  app.post("/oauth2/token", token);
  app.get("/oauth2/validate", validate);
}

interface AuthorizeParams {
  responseType: string;
  clientId: string;
  redirectUri: string;
  scope: string;
  /** Empty when sent twice: which one to give back is unknown. */
  state: string;
  /** The parameters sent more than once (RFC 6749 §3.1: "MUST NOT be included more than once"). */
  repeated: readonly string[];
}

const AUTHORIZE_PARAMS = ["response_type", "client_id", "redirect_uri", "scope", "state"] as const;

/** The request's parameters from `values` (every value sent under a name), the first of each taken. */
function paramsFrom(values: (name: string) => readonly string[]): AuthorizeParams {
  const get = (name: string) => values(name)[0] ?? "";
  const repeated = AUTHORIZE_PARAMS.filter((name) => values(name).length > 1);
  return {
    responseType: get("response_type"),
    clientId: get("client_id"),
    redirectUri: get("redirect_uri"),
    scope: get("scope"),
    state: repeated.includes("state") ? "" : get("state"),
    repeated,
  };
}

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
body{font-family:system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;color:#1d2433}
fieldset{border:1px solid #ccd;border-radius:8px;padding:1rem}label{display:block;margin:.4rem 0}
button{font-size:1rem;padding:.5rem 1.2rem;margin-right:.6rem;border-radius:6px;border:1px solid #889;cursor:pointer}
button[value=approve]{background:#1f6feb;color:#fff;border-color:#1f6feb}.muted{color:#667}
</style></head>
<body>${body}</body></html>`;
}

/** The screen's error page: what a browser shows when the screen cannot go on (an injected fault's too). */
export function errorPage(message: string): string {
  return page("Authorization error", `<h1>Authorization error</h1><p id="error">${escapeHtml(message)}</p>`);
}

/** Client and redirect are checked before anything is redirected (an unknown redirect is never followed). */
function checkClient(c: SandboxContext, params: AuthorizeParams): Response | undefined {
  const oauth = c.get("state").oauth;
  // Two of either leave the client or the redirect in doubt: never redirected, as the token endpoint refuses repeats.
  if (params.repeated.includes("client_id") || params.repeated.includes("redirect_uri")) {
    return c.html(errorPage("client_id and redirect_uri must each be sent once."), 400);
  }
  if (!oauth.isClient(params.clientId)) {
    return c.html(errorPage("Unknown client_id."), 400);
  }
  if (!oauth.isRedirectUriAllowed(params.redirectUri)) {
    return c.html(errorPage("redirect_uri is not registered for this client."), 400);
  }
  return undefined;
}

function redirectWith(c: SandboxContext, redirectUri: string, values: Record<string, string>): Response {
  const url = new URL(redirectUri);
  for (const [key, value] of Object.entries(values)) if (value !== "") url.searchParams.set(key, value);
  return c.redirect(url.toString(), 302);
}

/** What both steps of the authorization screen check: a known client and redirect, and the code flow (§5 rule 4a). */
function checkRequest(c: SandboxContext, params: AuthorizeParams): Response | undefined {
  const invalid = checkClient(c, params);
  if (invalid) return invalid;
  if (params.repeated.length > 0) return redirectWith(c, params.redirectUri, { error: "invalid_request", state: params.state });
  // RFC 6749 §4.1.2.1: a missing response_type (or an empty one, §3.1) is a malformed request, another one unsupported.
  if (params.responseType === "") return redirectWith(c, params.redirectUri, { error: "invalid_request", state: params.state });
  if (params.responseType !== "code") {
    return redirectWith(c, params.redirectUri, { error: "unsupported_response_type", state: params.state });
  }
  return undefined;
}

function authorizePage(c: SandboxContext): Response {
  const query = c.req.queries();
  const params = paramsFrom((name) => query[name] ?? []);
  const invalid = checkRequest(c, params);
  if (invalid) return invalid;
  let granted: string;
  try {
    granted = c.get("state").oauth.normaliseScope(params.scope);
  } catch (error) {
    if (error instanceof OAuthError) return redirectWith(c, params.redirectUri, { error: error.error, state: params.state });
    throw error;
  }
  const companies = c
    .get("state")
    .listCompanies()
    .map((d, i) => {
      const note = d.company.apiAccessEnabled ? "" : ` <span class="muted">(API access disabled)</span>`;
      return `<label><input type="radio" name="company_id" value="${escapeHtml(d.company.id)}"${i === 0 ? " checked" : ""}> ${escapeHtml(d.company.legalName)}${note}</label>`;
    })
    .join("\n");
  const hidden = (["response_type", "client_id", "redirect_uri", "scope", "state"] as const)
    .map((name) => {
      const value = { response_type: params.responseType, client_id: params.clientId, redirect_uri: params.redirectUri, scope: params.scope, state: params.state }[name];
      return `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`;
    })
    .join("\n");
  // What the grant will hold (none asked is every scope), one item per scope.
  const scopes = granted
    .split(" ")
    .map((s) => `<li>${escapeHtml(s)}</li>`)
    .join("");
  return c.html(
    page(
      "Authorize sandbox-client",
      `<h1>Authorize ${escapeHtml(params.clientId)}</h1>
<p>The application asks for access to one company's card programme:</p><ul id="scopes">${scopes}</ul>
<form method="post" action="${AUTHORIZE_PATH}">
${hidden}
<fieldset><legend>Company</legend>
${companies}
</fieldset>
<p><button type="submit" name="decision" value="approve">Approve</button><button type="submit" name="decision" value="deny">Deny</button></p>
</form>
<p class="muted">Qashio provider sandbox. Nothing here moves real money.</p>`,
    ),
  );
}

/** Every text value of each of the decision's form fields; undefined when the body is no form that can be read (a multipart body without its parts). */
async function decisionForm(c: SandboxContext): Promise<((name: string) => string[]) | undefined> {
  let form: Record<string, unknown>;
  try {
    form = await c.req.parseBody({ all: true });
  } catch {
    return undefined;
  }
  return (name) => [form[name] ?? []].flat().filter((value): value is string => typeof value === "string");
}

async function authorizeDecision(c: SandboxContext): Promise<Response> {
  const form = await decisionForm(c);
  // A request the screen cannot read is the caller's mistake: a 400 page, as for any other it cannot go on with.
  if (form === undefined) return c.html(errorPage("The form could not be read."), 400);
  const params = paramsFrom(form);
  const invalid = checkRequest(c, params);
  if (invalid) return invalid;
  // The screen's buttons send one decision: two are no explicit approval, whichever comes first.
  const decisions = form("decision");
  if (decisions.length !== 1 || decisions[0] !== "approve") {
    return redirectWith(c, params.redirectUri, { error: "access_denied", state: params.state });
  }
  const companyIds = form("company_id");
  if (companyIds.length > 1) return c.html(errorPage("Pick one company."), 400);
  const state = c.get("state");
  const companyId = companyIds[0] ?? "";
  if (!state.company(companyId)) {
    return c.html(errorPage("Pick a company."), 400);
  }
  try {
    const code = state.oauth.issueCode({ clientId: params.clientId, redirectUri: params.redirectUri, scope: params.scope, companyId });
    return redirectWith(c, params.redirectUri, { code, state: params.state });
  } catch (error) {
    if (error instanceof OAuthError) return redirectWith(c, params.redirectUri, { error: error.error, state: params.state });
    throw error;
  }
}

/** The challenge of a `401 invalid_client` to a client that authenticated with HTTP Basic (RFC 6749 §5.2). */
const BASIC_CHALLENGE = { "www-authenticate": 'Basic realm="sandbox"' } as const;

function basicClientRefused(description: string, options?: ErrorOptions): OAuthError {
  return new OAuthError(401, "invalid_client", description, options, BASIC_CHALLENGE);
}

/** `form` with `+` read as a space, as `application/x-www-form-urlencoded` writes it. */
function formDecode(value: string): string {
  return decodeURIComponent(value.replace(/\+/g, " "));
}

/**
 * Client credentials of an `Authorization: Basic` header, if any: user and password are the client id and secret,
 * each form-urlencoded, split at the first colon (RFC 6749 §2.3.1; a secret may hold a colon, an id may not). No client
 * has an empty id or secret, so either empty is refused as wrong credentials.
 */
function basicCredentials(header: string | undefined): { clientId: string; clientSecret: string } | undefined {
  const match = /^Basic\s+(\S+)\s*$/i.exec(header ?? "");
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0) throw basicClientRefused("Basic credentials must be client_id:client_secret");
  let credentials: { clientId: string; clientSecret: string };
  try {
    credentials = { clientId: formDecode(decoded.slice(0, colon)), clientSecret: formDecode(decoded.slice(colon + 1)) };
  } catch (cause) {
    throw basicClientRefused("Basic credentials must be form-urlencoded", { cause });
  }
  // An empty id or secret is a wrong credential like any other (§4.2: 401), not a missing body parameter (400).
  if (credentials.clientId === "" || credentials.clientSecret === "") throw basicClientRefused("client authentication failed");
  return credentials;
}

/** A form-encoded token request's parameters: none sent twice, an empty one absent (RFC 6749 §3.2). */
function formParameters(params: URLSearchParams): Record<string, unknown> {
  const names = [...params.keys()];
  const repeated = [...new Set(names.filter((name, i) => names.indexOf(name) !== i))];
  if (repeated.length > 0) throw new OAuthError(400, "invalid_request", `parameters sent more than once: ${repeated.join(", ")}`);
  return Object.fromEntries([...params].filter(([, value]) => value !== ""));
}

/** Reads the token request: JSON per the spec; form encoding and HTTP Basic client auth are accepted too. */
async function tokenRequestBody(c: SandboxContext): Promise<{ body: Record<string, unknown>; basic: boolean }> {
  // A media type's type and subtype are case-insensitive (RFC 9110 §8.3.1).
  const type = (c.req.header("content-type") ?? "").toLowerCase();
  let body: Record<string, unknown>;
  if (type.includes("application/x-www-form-urlencoded")) {
    body = formParameters(new URLSearchParams(await c.req.text()));
  } else {
    const text = await c.req.text();
    try {
      const parsed: unknown = text.trim() === "" ? {} : JSON.parse(text);
      if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw new TypeError("not an object");
      body = parsed as Record<string, unknown>;
    } catch (cause) {
      throw new OAuthError(400, "invalid_request", "request body must be a JSON object", { cause });
    }
  }
  const basic = basicCredentials(c.req.header("authorization"));
  if (!basic) return { body, basic: false };
  // One authentication method per request (RFC 6749 §2.3): a client_secret in the body is a second one. A client_id
  // alone only names the client (as many clients send it), and must then name the one the header authenticates.
  if (body.client_secret !== undefined) {
    throw new OAuthError(400, "invalid_request", "client credentials were sent both in the Authorization header and in the body");
  }
  if (body.client_id !== undefined && body.client_id !== basic.clientId) {
    throw new OAuthError(400, "invalid_request", "client_id in the body is not the client the Authorization header authenticates");
  }
  return { body: { ...body, client_id: basic.clientId, client_secret: basic.clientSecret }, basic: true };
}

/**
 * The fields each grant takes (§4.2). Any other, a field the other grant takes ("not sent") included, is an unsupported
 * parameter: `400`, so a client that adds one (`scope` on a refresh, a PKCE `code_verifier`) learns it here.
 */
const GRANT_FIELDS: Readonly<Record<"authorization_code" | "refresh_token", ReadonlySet<string>>> = {
  authorization_code: new Set(Object.keys(AuthorizationCodeGrantSchema.shape)),
  refresh_token: new Set(Object.keys(RefreshTokenGrantSchema.shape)),
};

async function token(c: SandboxContext): Promise<Response> {
  const { body, basic } = await tokenRequestBody(c);
  if (body.grant_type !== "authorization_code" && body.grant_type !== "refresh_token") {
    if (body.grant_type === undefined) throw new OAuthError(400, "invalid_request", "grant_type is required");
    throw new OAuthError(400, "unsupported_grant_type", "grant_type must be authorization_code or refresh_token");
  }
  const unsupported = Object.keys(body).filter((field) => !GRANT_FIELDS[body.grant_type as "authorization_code" | "refresh_token"].has(field));
  if (unsupported.length > 0) {
    throw new OAuthError(400, "invalid_request", `unsupported parameters for grant_type ${String(body.grant_type)}: ${unsupported.join(", ")}`);
  }
  const checked = checkBody(TokenRequestSchema, body);
  if (!checked.ok) {
    const fields = checked.errors.map((e) => e.field ?? "request").join(", ");
    throw new OAuthError(400, "invalid_request", `missing or invalid parameters: ${fields}`);
  }
  const tokens = issueTokens(c, checked.value, basic);
  // RFC 6749 §5.1: a response holding tokens must not be cached, HTTP/1.0 caches included.
  c.header("cache-control", "no-store");
  c.header("pragma", "no-cache");
  return c.json(tokens, 200);
}

/** Runs the grant; a client refused after authenticating with HTTP Basic gets the Basic challenge. */
function issueTokens(c: SandboxContext, request: TokenRequest, basic: boolean): TokenSetBody {
  const oauth = c.get("state").oauth;
  try {
    return request.grant_type === "authorization_code"
      ? oauth.exchangeCode({ clientId: request.client_id, clientSecret: request.client_secret, code: request.code, redirectUri: request.redirect_uri })
      : oauth.refresh({ clientId: request.client_id, clientSecret: request.client_secret, refreshToken: request.refresh_token });
  } catch (error) {
    if (basic && error instanceof OAuthError && error.error === "invalid_client") throw basicClientRefused(error.description, { cause: error });
    throw error;
  }
}

function validate(c: SandboxContext): Response {
  const state = c.get("state");
  let grant;
  try {
    grant = state.oauth.verifyAccessToken(bearerToken(c.req.header("authorization")));
  } catch (error) {
    // Its challenge too (RFC 6750 §3: validate is a bearer-protected resource), the one the API's 401 carries.
    if (error instanceof UnauthorizedError) throw new OAuthError(401, "invalid_token", error.message, { cause: error }, error.headers);
    throw error;
  }
  const data = state.company(grant.companyId);
  if (!data) throw new OAuthError(401, "invalid_token", "token names an unknown company", undefined, { "www-authenticate": BEARER_CHALLENGE });
  if (!data.company.apiAccessEnabled) throw new OAuthError(403, "access_denied", "API access is disabled for this company");
  return c.json({ active: true, company_id: grant.companyId, client_id: grant.clientId, scope: [...grant.scopes].join(" "), exp: grant.expiresAt }, 200);
}
