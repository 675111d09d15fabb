/**
 * `bridge authorize`: the OAuth authorization-code flow for a person (spec §4.2, §5 rule 4).
 * A random `state`, the authorize URL printed (and opened when possible), the redirect received
 * on a loopback port, `state` checked, the code exchanged, the tokens stored. Tokens are never printed.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { TokenStore } from "../qashio/auth/token-store.js";
import { buildAuthorizeUrl, createState, exchangeCode, stateMatches } from "../qashio/auth/oauth.js";
import { isInvalidClient, isRejectedGrant, storedTokensOf } from "../qashio/auth/token-provider.js";
import { BadRequestError, clientMayBeRefused } from "../qashio/errors.js";
import type { FetchLike } from "../qashio/http.js";
import type { TokenSet } from "../qashio/schemas/index.js";
import { baseUrlHint } from "./base-url-hint.js";
import { DEFAULT_SCOPES } from "./cycle-scopes.js";
import { formatDuration } from "./duration.js";
import { AUTHORIZE_AGAIN, AuthorizeError, ClientCredentialsRejectedError, UsageError, type SignInAgain } from "./errors.js";
import { portRefusal } from "./port-refusal.js";

/** Path of the loopback redirect URI. */
export const CALLBACK_PATH = "/callback";

export interface AuthorizeOptions {
  /** Provider base URL (token endpoint). */
  readonly baseUrl: string;
  /** The variable holding {@link baseUrl}, named by a failed code exchange's hint: QASHIO_BASE_URL by default. */
  readonly baseUrlSetting?: string;
  /** Authorization screen address ({authorize_url}); the sandbox serves it at its base URL. */
  readonly authorizeUrl: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly scope: string;
  /** Loopback port; 0 picks a free one (the provider must allow any loopback port then). */
  readonly port: number;
  readonly timeoutMs: number;
  /** Where the token set goes. */
  readonly store: TokenStore;
  /** Called with the URL the person must open (print it, try to open it). */
  readonly onAuthorizeUrl: (url: string) => void | Promise<void>;
  readonly fetch?: FetchLike;
  /** Aborts the wait (Ctrl-C). */
  readonly signal?: AbortSignal;
  /**
   * Called for each redirect refused for carrying another `state` (an old browser tab, or another local user's
   * request): it is answered 400 and the wait goes on.
   */
  readonly onForeignRedirect?: () => void;
  /**
   * How the person signs in again after a denial or a timeout: `authorize` once more, or for the demo, which signs in
   * by itself against its own sandbox (no --scope to check), a new demo. @default AUTHORIZE_AGAIN
   */
  readonly signInAgain?: SignInAgain;
}

export interface AuthorizeResult {
  /** Scopes the provider granted. */
  readonly scope?: string;
  readonly redirectUri: string;
}

const PAGE = (title: string, body: string): string =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head>` +
  `<body style="font-family:system-ui;margin:3rem"><h1>${title}</h1><p>${body}</p></body></html>`;

function listen(server: Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      server.off("error", reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** Sends the browser its page; resolves once the page is written, so closing the server cannot cut it off. */
type Reply = (status: number, title: string, body: string) => Promise<void>;

/** A code, whose browser request waits for `reply` (sent after the exchange), or a refusal already answered. */
type Redirect = { readonly code: string; readonly reply: Reply } | { readonly error: AuthorizeError; readonly sent: Promise<void> };

/**
 * What the person does after a sign-in that ended without a code: `code` is the redirect's OAuth error (RFC 6749
 * §4.1.2.1), absent after a timeout. A denial is undone by approving; unknown or disallowed scopes by other ones; the
 * options again, since a plain `authorize` would store a sign-in meant for `--secret-id` in the state directory.
 *
 * @example
 * nextStep(AUTHORIZE_AGAIN, "access_denied"); // ": run `npm run bridge -- authorize` again, with the same options, and approve access"
 */
function nextStep(again: SignInAgain, code?: string): string {
  // The demo's sign-in is its own: the person only starts it anew.
  if (!again.sameState) return `: ${again.words}`;
  if (code === "invalid_scope") return `: check --scope (the default asks for ${DEFAULT_SCOPES}), then ${again.words} again`;
  return `: ${again.words} again, with the same options${code === "access_denied" ? ", and approve access" : ""}`;
}

/**
 * Waits for the one redirect carrying our `state`. Requests for other paths (a browser's favicon) get 404. A callback
 * request with another `state` gets 400 and changes nothing, so no other local user can end the wait; the first one
 * carrying our `state` decides the outcome.
 */
function awaitRedirect(server: Server, state: string, options: AuthorizeOptions): Promise<Redirect> {
  const { timeoutMs, signal, onForeignRedirect: onForeign, signInAgain = AUTHORIZE_AGAIN } = options;
  return new Promise((resolve) => {
    let refused = 0;
    let decided = false;
    const finish = (outcome: Redirect) => {
      decided = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      resolve(outcome);
    };
    const fail = (error: AuthorizeError, sent = Promise.resolve()) => finish({ error, sent });
    const onAbort = () => fail(new AuthorizeError("authorization cancelled"));
    const onTimeout = () => {
      const foreign = refused === 0 ? "" : ` (${refused === 1 ? "1 redirect with another state was" : `${refused} redirects with another state were`} refused)`;
      // The same --timeout would end a slow sign-in the same way, so the step names the one option to change.
      const longer = signInAgain.sameState ? `, the --timeout longer if the sign-in takes more than ${formatDuration(timeoutMs)}` : "";
      fail(new AuthorizeError(`no redirect arrived within ${formatDuration(timeoutMs)}${foreign}${nextStep(signInAgain)}${longer}`));
    };
    // A server error after listening (an accept failing with EMFILE) with no listener would be thrown as an uncaught
    // exception, ending the process mid-sign-in. It ends the wait instead; once the wait is decided it is ignored: the
    // exchange under way needs no new connection, and the server is closed after it.
    const onServerError = (error: Error) => {
      if (!decided) fail(new AuthorizeError(`the callback server on 127.0.0.1 failed while waiting for the redirect (${error.message})${nextStep(signInAgain)}`, { cause: error }));
    };
    server.on("error", onServerError);
    const timer = setTimeout(onTimeout, timeoutMs);
    signal?.addEventListener("abort", onAbort, { once: true });
    // A signal aborted before the wait began fires no event: end the wait now, not at the timeout.
    if (signal?.aborted === true) onAbort();
    // The wait ends with its server, however the sign-in ended (the caller's callback failing, say): a timer left
    // behind would keep the process alive after the error, for the whole timeout.
    server.once("close", () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    });
    server.on("request", (req: IncomingMessage, res: ServerResponse) => {
      // A target that is no URL (`//[`, which any local process or a page in the browser can send) must not throw here:
      // thrown in the listener, it ends the process, mid-exchange or mid-save too.
      const url = URL.canParse(req.url ?? "/", "http://127.0.0.1") ? new URL(req.url ?? "/", "http://127.0.0.1") : undefined;
      if (req.method !== "GET" || url?.pathname !== CALLBACK_PATH) {
        res.writeHead(404, { "content-type": "text/plain" }).end("not found");
        return;
      }
      // Listened for from the start: a browser that leaves before the page (a tab closed or reloaded during the
      // exchange) closes the response before `reply`, and a listener added then would wait for ever, as would `end`.
      const gone = new Promise<void>((done) => res.once("close", () => done()));
      const reply: Reply = (status, title, body) =>
        new Promise((done) => {
          void gone.then(done);
          if (res.destroyed) return;
          res.writeHead(status, { "content-type": "text/html; charset=utf-8", connection: "close" }).end(PAGE(title, body), done);
        });
      // The wait already ended (cancelled, timed out, or decided by an earlier redirect): answer, so that the browser
      // (or the demo following the redirect itself) is not left waiting for a page nobody will send.
      if (decided) {
        void reply(409, "Sign-in already ended", "This sign-in is no longer waiting for a redirect. The terminal says how it ended; start again from there if needed.");
        return;
      }
      // Constant-time comparison (stateMatches). Not ours: refused, and the wait goes on.
      if (!stateMatches(state, url.searchParams.get("state"))) {
        refused += 1;
        void reply(
          400,
          "Authorization refused",
          "This response does not belong to the sign-in the terminal is waiting for (state mismatch), so it was ignored. " +
            "If you started the sign-in again, use the newest address the terminal printed.",
        );
        if (!decided) onForeign?.();
        return;
      }
      const denied = url.searchParams.get("error");
      if (denied !== null) {
        const sent = reply(200, "Authorization not granted", "The provider reported that access was not granted. You can close this tab.");
        // Only the OAuth error code is echoed: it is a fixed word, never a secret.
        const code = /^[a-z_]{1,40}$/.test(denied) ? denied : "unknown_error";
        fail(new AuthorizeError(`authorization was not granted (${code})${nextStep(signInAgain, code)}`), sent);
        return;
      }
      const code = url.searchParams.get("code");
      if (code === null || code === "") {
        const sent = reply(400, "Authorization failed", "The redirect carried no code. Start again from the terminal.");
        fail(new AuthorizeError("the redirect carried no authorization code"), sent);
        return;
      }
      finish({ code, reply });
    });
  });
}

/**
 * What a refused code means (spec §4.2, §3.1), read as a refused refresh is: a 401 is a used or expired code or, when
 * it names no `invalid_grant`, possibly wrong client credentials, which authorizing again cannot mend; a 400 naming
 * `invalid_grant` (RFC 6749 §5.2) may also be a code of another client or redirect_uri, so it names those too. A 400
 * naming no OAuth code is §4.2's answer to a missing parameter, a redirect_uri mismatch and an invalid grant alike, so
 * it names the request and the code: a fresh code tells them apart. A 400 naming another code is of the request: no hint.
 */
function exchangeRefusalHint(error: unknown): string {
  if (error instanceof BadRequestError && error.status === 400 && error.errors.length === 0) {
    return (
      ": the provider refused the request or the code (a 400 without an OAuth error code answers a missing parameter, a " +
      "callback address the code was not issued for and an invalid code alike): authorize again; if a fresh code is " +
      "refused the same way, the request is at fault, not the code"
    );
  }
  if (!isRejectedGrant(error)) return "";
  if (clientMayBeRefused(error)) return ": the provider refused the code (used, or older than ten minutes) or the client id and secret were: check both, then authorize again";
  if (error.status === 401) return ": the code was used or expired (it lasts ten minutes): authorize again";
  return ": the provider refused the code (used, older than ten minutes, or not issued for this client id and callback address): authorize again";
}

/** Exchanges the code and saves the token set: the browser hears "Authorized" only after both. */
async function exchangeAndSave(options: AuthorizeOptions, code: string, redirectUri: string): Promise<TokenSet> {
  let tokens: TokenSet;
  try {
    tokens = await exchangeCode(
      { baseUrl: options.baseUrl, clientId: options.clientId, clientSecret: options.clientSecret, fetch: options.fetch },
      { code, redirectUri },
    );
  } catch (error) {
    if (isInvalidClient(error)) throw new ClientCredentialsRejectedError({ cause: error });
    // The client's errors carry status and request id only, never the code or secret.
    throw new AuthorizeError(`the code exchange failed: ${(error as Error).message}${exchangeRefusalHint(error)}${baseUrlHint(error, options.baseUrl, options.baseUrlSetting)}`, {
      cause: error,
    });
  }
  // A Ctrl-C while the code was exchanged cancels as one during the wait does: whatever store follows (a lease to wait
  // for, or none), nothing is stored.
  if (options.signal?.aborted === true) throw new AuthorizeError("authorization cancelled: this sign-in was not stored");
  await options.store.save(storedTokensOf(tokens, Date.now()));
  return tokens;
}

/**
 * Runs the authorization-code flow on a loopback redirect and saves the token set to `store`.
 *
 * @throws AuthorizeError on a denial, a timeout, the callback server failing, or a failed exchange (a redirect with
 *   another state only waits on).
 * @throws UsageError when `port` is in use or this user may not listen on it (EACCES).
 * @example
 * await authorizeWithBrowser({
 *   baseUrl, authorizeUrl: baseUrl, clientId, clientSecret, scope: DEFAULT_SCOPES, port: 0, timeoutMs: 600_000,
 *   store, onAuthorizeUrl: (url) => console.log(`Open ${url}`),
 * });
 */
export async function authorizeWithBrowser(options: AuthorizeOptions): Promise<AuthorizeResult> {
  const server = createServer();
  server.keepAliveTimeout = 1;
  let port: number;
  try {
    port = await listen(server, options.port);
  } catch (error) {
    const where = `cannot listen on 127.0.0.1:${options.port} for the redirect`;
    // About the port asked for, so another --port is the fix (exit 2), not a failed sign-in.
    const refusal = portRefusal(error, options.port);
    if (refusal !== undefined) throw new UsageError(`${where}: ${refusal}`, { cause: error });
    throw new AuthorizeError(`${where}: ${(error as Error).message}`, { cause: error });
  }
  const redirectUri = `http://127.0.0.1:${port}${CALLBACK_PATH}`;
  try {
    const state = createState();
    const url = buildAuthorizeUrl({
      authorizeUrl: options.authorizeUrl,
      clientId: options.clientId,
      redirectUri,
      scope: options.scope,
      state,
    });
    const redirect = awaitRedirect(server, state, options);
    // Not awaited before the redirect: a browser that follows it at once waits for the page sent after the exchange.
    const shown = Promise.resolve().then(() => options.onAuthorizeUrl(url));
    const outcome = await Promise.race([redirect, shown.then(() => redirect)]);
    // Once the page is sent, the caller's callback (a browser following the redirect) may finish too.
    const settled = () => shown.catch(() => undefined);
    if ("error" in outcome) {
      await outcome.sent;
      await settled();
      throw outcome.error;
    }
    let tokens;
    try {
      tokens = await exchangeAndSave(options, outcome.code, redirectUri);
    } catch (error) {
      await outcome.reply(500, "Authorization failed", "The bridge could not finish signing in. The terminal says why; start again from there.");
      await settled();
      throw error;
    }
    await outcome.reply(200, "Authorized", "The bridge is authorized. You can close this tab and return to the terminal.");
    await settled();
    return { scope: tokens.scope ?? undefined, redirectUri };
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
