/**
 * Provider base URLs. Nothing is hard-coded: named deployments are read from the environment,
 * anything else must be a literal https URL (http only for a loopback host, such as a local sandbox).
 */
import { ClientConfigurationError } from "./errors.js";

/** Named provider deployments of spec intro: {base_url}, {base_url_eu}, {base_url_sandbox}. */
export type QashioDeployment = "production" | "eu" | "sandbox";

/** Environment variable holding the base URL of each named deployment. */
export const BASE_URL_ENV_VARS: Readonly<Record<QashioDeployment, string>> = {
  production: "QASHIO_PRODUCTION_URL",
  eu: "QASHIO_EU_URL",
  sandbox: "QASHIO_SANDBOX_URL",
};

/** Environment variable holding the authorization screen address ({authorize_url}). */
export const AUTHORIZE_URL_ENV_VAR = "QASHIO_AUTHORIZE_URL";

/** Path of the authorization screen under {authorize_url} (spec §4.2): appended to it, so never part of QASHIO_AUTHORIZE_URL. */
export const AUTHORIZE_PATH = "/oauth2/authorize";

type Env = Readonly<Record<string, string | undefined>>;

function isDeployment(value: string): value is QashioDeployment {
  return Object.hasOwn(BASE_URL_ENV_VARS, value);
}

/**
 * Where a rejected URL points, for an error message: ` (host api.example)` when `value` parses, carries no credentials
 * and holds no `@` at all (a password with `/` in it moves the apparent host into the password, and one with `@`
 * leaves part of itself in the host); else nothing. The value itself is never quoted: its user:password part, query
 * string or fragment may hold a secret, and masking them by pattern misses odd passwords.
 */
function hostHint(value: string): string {
  if (value.includes("@")) return "";
  try {
    const url = new URL(value);
    return url.username || url.password || !url.host ? "" : ` (host ${url.host})`;
  } catch {
    return "";
  }
}

/**
 * Checks that `value` is an absolute https URL (http only for a loopback host) without credentials, query or
 * fragment, and returns it without a trailing slash.
 *
 * @param source - what the value came from, named in the error (e.g. `QASHIO_EU_URL`).
 * @param problemOf - the check: {@link baseUrlProblem}, or {@link authorizeUrlProblem} for the authorize screen.
 * @throws ClientConfigurationError naming the source and the problem, never the value (at most its host).
 */
export function normaliseBaseUrl(value: string, source = "base URL", problemOf: (value: string) => string | undefined = baseUrlProblem): string {
  const problem = problemOf(value);
  if (problem !== undefined) throw new ClientConfigurationError(`${source}${hostHint(value)} ${problem}`);
  return normalisedAddress(value);
}

/** An address its check (e.g. {@link baseUrlProblem}) found no problem with, in the parser's form, no trailing slash. */
export function normalisedAddress(checked: string): string {
  return new URL(checked).href.replace(/\/+$/, "");
}

/**
 * True for a host name that can only be this machine: `localhost`, 127.0.0.0/8, `[::1]`, as the WHATWG URL parser
 * writes them (lower case, IPv4 in dotted decimal, IPv6 compressed in brackets).
 *
 * @example
 * ```ts
 * isLoopbackHost(new URL("http://127.1:4010").hostname); // true ("127.0.0.1")
 * isLoopbackHost("api.example"); // false
 * ```
 */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === "localhost" || hostname === "[::1]" || /^127(?:\.\d{1,3}){3}$/.test(hostname);
}

/**
 * Why `value` cannot be a provider base URL, worded without the value (it may carry credentials), or undefined
 * when it can. Settings readers report this next to the setting's name. The client secret and tokens travel to this
 * address, so it must use https; plain http is accepted only for a loopback host (a local sandbox, tests).
 */
export function baseUrlProblem(value: string): string | undefined {
  const problem = addressProblem(value);
  if (problem !== undefined) return problem;
  // A sign-in address pasted from the browser: accepted, it failed only at the first call (on AWS, with no hint).
  if (SIGN_IN_PATH.test(new URL(value).pathname)) {
    return "must not end with an OAuth path (/oauth2, /oauth2/validate or /oauth2/authorize), as an address pasted from a sign-in page does: give the address the API's paths follow, such as https://api.example.com";
  }
  return undefined;
}

/**
 * Why `value` cannot be the authorization screen's address ({authorize_url}), as {@link baseUrlProblem} words it, or
 * undefined when it can. Unlike a base URL it may end with /oauth2 (the screen may live there), but not with
 * {@link AUTHORIZE_PATH}, which is appended to it.
 */
export function authorizeUrlProblem(value: string): string | undefined {
  const problem = addressProblem(value);
  if (problem !== undefined) return problem;
  // The screen's whole address, pasted from a browser, would send the person to .../oauth2/authorize/oauth2/authorize.
  if (new URL(value).pathname.replace(/\/+$/, "").toLowerCase().endsWith(AUTHORIZE_PATH)) {
    return `ends with ${AUTHORIZE_PATH}, which authorize appends itself: give the address before it`;
  }
  return undefined;
}

/** What every provider address must satisfy: {@link baseUrlProblem} without the sign-in paths. */
function addressProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "is not an absolute http(s) URL";
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && isLoopbackHost(url.hostname))) {
    return "must use https (http is accepted only for a loopback host: localhost, 127.0.0.0/8 or ::1)";
  }
  if (url.username || url.password) return "must not carry credentials (user:password@)";
  // A listener given port 0 takes any free one, so no server is reached there: every call would be refused.
  if (url.port === "0") return "names port 0, on which no server listens: give the port the provider (or the sandbox) listens on";
  // An empty `?` or `#` leaves search and hash empty but stays in href, where every request path would follow it. The
  // parser percent-encodes both characters elsewhere, so one left in href is a query or fragment.
  if (url.search || url.hash || /[?#]/.test(url.href)) return "must not carry a query string or fragment";
  // The client puts /public/v1/... and /oauth2/token after the base URL: one holding them (a pasted endpoint) would
  // double them, and every call would answer 404.
  if (API_OWN_PATH.test(url.pathname)) return "must not hold the API's own path (/public/v1 or /oauth2/token): give the address it follows, such as https://api.example.com";
  return undefined;
}

/** A base URL path holding what the client appends itself (any case: a pasted endpoint either way). */
const API_OWN_PATH = /\/public\/v1(?:\/|$)|\/oauth2\/token\/?$/i;

/** A base URL path ending where the sign-in pages and token check live (any case), trailing slash or not. */
const SIGN_IN_PATH = /\/oauth2(?:\/validate|\/authorize)?\/?$/i;

/**
 * Resolves the provider base URL from a deployment name or a literal URL.
 *
 * @param target - `"production"`, `"eu"`, `"sandbox"` (read from `QASHIO_PRODUCTION_URL`, `QASHIO_EU_URL`,
 *   `QASHIO_SANDBOX_URL`) or a literal `https://` URL (`http://` only for a loopback host).
 * @param env - environment to read; defaults to `process.env`.
 * @throws ClientConfigurationError naming the setting and the problem (never the value) or the missing variable.
 * @example
 * ```ts
 * const baseUrl = resolveBaseUrl(process.env.QASHIO_TARGET ?? "sandbox");
 * resolveBaseUrl("http://localhost:4010"); // "http://localhost:4010"
 * ```
 */
export function resolveBaseUrl(target: string, env: Env = process.env): string {
  const trimmed = target.trim();
  const named = trimmed.toLowerCase();
  if (isDeployment(named)) {
    const variable = BASE_URL_ENV_VARS[named];
    const value = env[variable]?.trim();
    if (!value) {
      throw new ClientConfigurationError(`deployment "${named}" needs ${variable} to be set to its base URL`);
    }
    return normaliseBaseUrl(value, variable);
  }
  if (/^https?:\/\//i.test(trimmed)) return normaliseBaseUrl(trimmed, "base URL");
  // Not quoted: a mistyped URL may still carry a password.
  throw new ClientConfigurationError(
    `base URL target is neither a deployment (${Object.keys(BASE_URL_ENV_VARS).join(", ")}) nor an http(s) URL`,
  );
}

/**
 * Resolves the authorization screen address from `QASHIO_AUTHORIZE_URL` or an explicit URL.
 *
 * @example
 * ```ts
 * const authorizeUrl = resolveAuthorizeUrl(undefined, { QASHIO_AUTHORIZE_URL: "https://auth.example" });
 * ```
 */
export function resolveAuthorizeUrl(explicit: string | undefined, env: Env = process.env): string {
  const given = explicit?.trim();
  const value = given || env[AUTHORIZE_URL_ENV_VAR]?.trim();
  if (!value) throw new ClientConfigurationError(`authorize URL needs ${AUTHORIZE_URL_ENV_VAR} to be set`);
  // A blank explicit URL gives way to the variable, which the error must then name.
  return normaliseBaseUrl(value, given ? "authorize URL" : AUTHORIZE_URL_ENV_VAR, authorizeUrlProblem);
}
