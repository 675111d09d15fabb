/**
 * What a failed provider call says of QASHIO_BASE_URL: a token endpoint that answered as no OAuth server does, a host
 * no name server knows, a port that completes no TLS handshake, or a loopback port nothing listens on. Shared by the
 * cycles' failures and authorize's code exchange; light to load (no engine).
 */
import { causeMatching } from "../bridge/errors.js";
import { TOKEN_PATH } from "../qashio/auth/oauth.js";
import { isLoopbackHost } from "../qashio/config.js";
import { NetworkError } from "../qashio/errors.js";

/**
 * Statuses of a token endpoint that is no OAuth server: a redirect (a web site moving to https or www., or to a sign-in
 * page; RFC 6749 answers a token request itself), nothing there, or no POST taken there.
 */
const NO_TOKEN_ENDPOINT = new Set([301, 302, 303, 307, 308, 404, 405, 501]);

/**
 * A hint for a failure that most likely comes of the base URL `baseUrl`, held by `setting` (QASHIO_BASE_URL, or the
 * QASHIO_*_URL a named environment reads, which is the one to check): its token endpoint answered as no OAuth server
 * does (a redirect, 404, 405, 501, or a body that is not JSON), its host is not found, an https connection to it
 * completed no TLS handshake, or it is a loopback address that refused the connection (the sandbox not started,
 * or another port); else empty. Without it, a cycle's failure says only that the next cycle resumes.
 *
 * @example
 * ```ts
 * baseUrlHint(refused, "http://127.0.0.1:4010");
 * // "; nothing listens on 127.0.0.1:4010, where QASHIO_BASE_URL points: is the sandbox running? (npm run sandbox -- --port 4010)"
 * ```
 */
export function baseUrlHint(error: unknown, baseUrl: string, setting = "QASHIO_BASE_URL"): string {
  const answer = causeMatching(
    error,
    (e): e is Error =>
      e instanceof Error &&
      (e as { path?: unknown }).path === TOKEN_PATH &&
      // InvalidResponseError: a body that is not JSON, or not a token set.
      (NO_TOKEN_ENDPOINT.has((e as { status?: number }).status ?? 0) || e.name === "InvalidResponseError"),
  );
  if (answer !== undefined) return `; the token endpoint answered as no OAuth server does: is ${setting} (${baseUrl}) the provider's API?`;
  // A host no name server knows is most likely mistyped; refused or reset connections come with outages too, except
  // on this machine's own address, which no provider serves.
  const reason = causeMatching(error, (e): e is NetworkError => e instanceof NetworkError)?.reason;
  if (reason === "ENOTFOUND") return `; the host of ${setting} (${baseUrl}) was not found: check the setting, or this machine's name resolution`;
  if (reason !== undefined && completedNoTlsHandshake(reason)) return noTlsHint(baseUrl, setting);
  return reason === "ECONNREFUSED" ? nothingListensHint(baseUrl, setting) : "";
}

/**
 * Reasons of an https connection that completed no TLS handshake: a port serving plain http, such as the sandbox's
 * under an `https://` typed for it, or a TLS server too old for this client (TLS 1.0 only), which this client's
 * transport reports with the same EPROTO; fetch names the former ERR_SSL_WRONG_VERSION_NUMBER. Certificate failures
 * are not among them: they have codes of their own.
 */
const NO_TLS_HANDSHAKE: ReadonlySet<string> = new Set(["EPROTO", "ERR_SSL_WRONG_VERSION_NUMBER"]);

/** Whether a connection failing with system code `reason` completed no TLS handshake (a plain http port, or TLS < 1.2). */
export function completedNoTlsHandshake(reason: string): boolean {
  return NO_TLS_HANDSHAKE.has(reason);
}

/**
 * For an https `baseUrl` that completed no TLS handshake: which address, and for a loopback one, the sandbox's http
 * address.
 */
export function noTlsHint(baseUrl: string, setting: string): string {
  const url = URL.canParse(baseUrl) ? new URL(baseUrl) : undefined;
  if (url === undefined) return "";
  const port = portOf(url);
  const address = `${url.hostname}:${port}`;
  const sandbox = !isLoopbackHost(url.hostname)
    ? ""
    : reachesSandbox(url.hostname)
      ? ` (the sandbox serves plain http: http://${address})`
      : ` (the sandbox serves plain http on 127.0.0.1 only: http://127.0.0.1:${port})`;
  return `; ${address}, where ${setting} points, completed no TLS handshake: does its port serve https, with TLS 1.2 or later?${sandbox}`;
}

/** The port `url` connects to: its own, else its scheme's (443 for https, 80 for http). */
export function portOf(url: URL): number {
  return Number(url.port || (url.protocol === "https:" ? 443 : 80));
}

/** For a refused connection to `baseUrl`: when it is a loopback address, that the sandbox may not run there; else empty. */
function nothingListensHint(baseUrl: string, setting: string): string {
  const url = URL.canParse(baseUrl) ? new URL(baseUrl) : undefined;
  if (url === undefined || !isLoopbackHost(url.hostname)) return "";
  const port = portOf(url);
  const only = reachesSandbox(url.hostname) ? "" : "; it listens on 127.0.0.1 only";
  return `; nothing listens on ${url.hostname}:${port}, where ${setting} points: is the sandbox running? (npm run sandbox -- --port ${port}${only})`;
}

/**
 * Whether a sandbox running on this machine answers at loopback host `hostname`: `npm run sandbox` binds 127.0.0.1
 * alone, not [::1] or another 127.x address.
 */
function reachesSandbox(hostname: string): boolean {
  return hostname === "127.0.0.1" || hostname === "localhost";
}
