/**
 * No secret (client secret, refresh token, access token) in any error message, `String(err)`,
 * `JSON.stringify(err)`, cause chain or log line, across every failure path that handles one.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { QashioClient } from "../../shared/qashio/client.js";
import { OAuthTokenProvider, StaticTokenProvider } from "../../shared/qashio/auth/token-provider.js";
import { exchangeCode, refresh } from "../../shared/qashio/auth/oauth.js";
import type { StoredTokens, TokenStore } from "../../shared/qashio/auth/token-store.js";
import type { NotFoundError } from "../../shared/qashio/errors.js";
import {
  BadRequestError,
  InvalidResponseError,
  NetworkError,
  ReauthorizationRequiredError,
  ServerError,
  TokenUnavailableError,
  UnauthorizedError,
} from "../../shared/qashio/errors.js";
import { captureLogger, fail, fakeClock, json, jwt, scriptedFetch } from "./helpers.js";

const BASE_URL = "https://api.example.test";
const CLIENT_SECRET = "cs-SECRET-client-7f3a";
const REFRESH_TOKEN = "rt-SECRET-refresh-91b2";
const ACCESS_TOKEN = jwt({ sub: "company-1", marker: "at-SECRET-access", exp: 1 });
const NEW_REFRESH_TOKEN = "rt-SECRET-rotated-55c0";
const NEW_ACCESS_TOKEN = "at-SECRET-new-access-0d1e";
const SECRETS = [CLIENT_SECRET, REFRESH_TOKEN, ACCESS_TOKEN, NEW_REFRESH_TOKEN, NEW_ACCESS_TOKEN, "at-SECRET-access"];

/** Every text an error exposes, following the cause chain. */
function textsOf(error: unknown, depth = 0): string[] {
  if (depth > 5 || error === undefined || error === null) return [];
  const texts = [String(error), JSON.stringify(error)];
  if (error instanceof Error) {
    texts.push(error.message, error.stack ?? "");
    texts.push(...textsOf(error.cause, depth + 1));
  }
  return texts;
}

function expectNoSecret(texts: readonly string[]): void {
  for (const text of texts) {
    for (const secret of SECRETS) expect(text, "a secret leaked").not.toContain(secret);
  }
}

function store(initial: StoredTokens): TokenStore & { failing: boolean } {
  let current = initial;
  return {
    failing: false,
    async load() {
      return current;
    },
    async save(tokens) {
      if (this.failing) throw new Error(`could not write ${tokens.refreshToken} / ${tokens.accessToken ?? ""}`);
      current = tokens;
    },
  };
}

/** A client on the access token that retries a failed call once at once, logging to `logger`. */
function retryingClient(fetch: ReturnType<typeof scriptedFetch>, logger: ReturnType<typeof captureLogger>): QashioClient {
  return new QashioClient({ baseUrl: BASE_URL, tokenProvider: new StaticTokenProvider(ACCESS_TOKEN), fetch, clock: fakeClock(), logger, retry: { maxAttempts: 2, random: () => 0 } });
}

function oauthProvider(fetch: ReturnType<typeof scriptedFetch>, tokenStore: TokenStore, logger = captureLogger()) {
  return new OAuthTokenProvider({
    baseUrl: BASE_URL,
    clientId: "client-1",
    clientSecret: CLIENT_SECRET,
    store: tokenStore,
    fetch,
    clock: fakeClock(),
    logger,
  });
}

const echoingBody = {
  error: "invalid_grant",
  error_description: `refresh token ${REFRESH_TOKEN} was reused by client with secret ${CLIENT_SECRET}`,
};

describe("secrets stay out of errors and logs", () => {
  it("when the refresh token is rejected and the body echoes it", async () => {
    const logger = captureLogger();
    const fetch = scriptedFetch(json(401, echoingBody));
    const provider = oauthProvider(fetch, store({ refreshToken: REFRESH_TOKEN, accessToken: ACCESS_TOKEN, accessTokenExpiresAt: 0 }), logger);
    const error = await provider.getAccessToken().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReauthorizationRequiredError);
    expect((error as Error).cause).toBeInstanceOf(UnauthorizedError);
    expectNoSecret([...textsOf(error), logger.text()]);
  });

  it("when the token endpoint answers 400 with an echoing body", async () => {
    const fetch = scriptedFetch(json(400, { ...echoingBody, error: "invalid_request" }));
    const error = await exchangeCode(
      { baseUrl: BASE_URL, clientId: "client-1", clientSecret: CLIENT_SECRET, fetch, clock: fakeClock() },
      { code: "code-1", redirectUri: "https://app.example/cb" },
    ).catch((e: unknown) => e);
    expect((error as Error).name).toBe("BadRequestError");
    expect((error as Error).message).toContain("invalid_request");
    expectNoSecret(textsOf(error));
  });

  it("when a token response carrying tokens fails its schema", async () => {
    const fetch = scriptedFetch(json(200, { access_token: NEW_ACCESS_TOKEN, refresh_token: NEW_REFRESH_TOKEN, token_type: "MAC" }));
    const provider = oauthProvider(fetch, store({ refreshToken: REFRESH_TOKEN }));
    const error = (await provider.getAccessToken().catch((e: unknown) => e)) as InvalidResponseError;
    expect(error).toBeInstanceOf(InvalidResponseError);
    expect(error.issues.map((i) => i.path)).toEqual(["token_type"]);
    expectNoSecret([...textsOf(error), JSON.stringify(error.issues)]);
  });

  it("when the token store cannot save and its error quotes the tokens", async () => {
    const fetch = scriptedFetch(json(200, { access_token: NEW_ACCESS_TOKEN, refresh_token: NEW_REFRESH_TOKEN, token_type: "Bearer" }));
    const tokenStore = store({ refreshToken: REFRESH_TOKEN });
    tokenStore.failing = true;
    const error = await oauthProvider(fetch, tokenStore).getAccessToken().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TokenUnavailableError);
    expectNoSecret(textsOf(error));
  });

  it("when the API keeps answering 401 to the access tokens", async () => {
    const logger = captureLogger();
    const fetch = scriptedFetch(fail(401));
    const client = new QashioClient({
      baseUrl: BASE_URL,
      tokenProvider: new StaticTokenProvider([ACCESS_TOKEN, NEW_ACCESS_TOKEN]),
      fetch,
      clock: fakeClock(),
      logger,
    });
    const error = await client.listTransactions().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnauthorizedError);
    expectNoSecret([...textsOf(error), logger.text()]);
  });

  it("when a 401 envelope quotes the bearer token that was sent", async () => {
    // Echoes whichever token it was sent, so both the first call and the replay after refresh quote one.
    const echo401 = (call: { headers: Record<string, string> }) => {
      const token = (call.headers.authorization ?? "").replace("Bearer ", "");
      return json(401, {
        status_code: 401,
        message: `Bearer ${token} is not valid`,
        errors: [{ field: "authorization", code: "INVALID_TOKEN", message: `token ${token} has expired` }],
      });
    };
    const client = new QashioClient({
      baseUrl: BASE_URL,
      tokenProvider: new StaticTokenProvider([ACCESS_TOKEN, NEW_ACCESS_TOKEN]),
      fetch: scriptedFetch(echo401),
      clock: fakeClock(),
    });
    const error = (await client.listTransactions().catch((e: unknown) => e)) as UnauthorizedError;
    expect(error).toBeInstanceOf(UnauthorizedError);
    expect(error.message).toBe("GET /public/v1/erp/transactions answered 401");
    expect(error.providerText).toEqual({ message: "Bearer *** is not valid", errors: ["token *** has expired"] });
    expectNoSecret([...textsOf(error), JSON.stringify(error.errors), JSON.stringify(error.providerText)]);
  });

  it("when the replay after a 401 is answered with the rejected token quoted", async () => {
    // A proxy (or a provider) that quotes the token it last rejected: the replay's answer carries the previous token,
    // in its text and its request id, never the one the replay sent.
    const logger = captureLogger();
    const quotesOld = (status: number) =>
      json(
        status,
        { status_code: status, message: `token ${ACCESS_TOKEN} was revoked`, errors: [{ field: "authorization", code: "INVALID_TOKEN", message: `${ACCESS_TOKEN}` }] },
        { "x-request-id": `echo:${ACCESS_TOKEN}` },
      );
    for (const status of [401, 503]) {
      const client = new QashioClient({
        baseUrl: BASE_URL,
        tokenProvider: new StaticTokenProvider([ACCESS_TOKEN, NEW_ACCESS_TOKEN]),
        fetch: scriptedFetch(fail(401), quotesOld(status)),
        clock: fakeClock(),
        logger,
        retry: { maxAttempts: 2, random: () => 0 },
      });
      const error = (await client.getCompanySummary().catch((e: unknown) => e)) as UnauthorizedError | ServerError;
      expect(error.status).toBe(status);
      expect(error.requestId).toBeUndefined();
      expect(error.providerText).toEqual({ message: "token *** was revoked", errors: ["***"] });
      expectNoSecret([...textsOf(error), JSON.stringify(error.errors), JSON.stringify(error.providerText), logger.text()]);
    }
  });

  it("when a 400 envelope quotes the bearer token in its message and errors[]", async () => {
    const body = {
      status_code: 400,
      message: `request with ${ACCESS_TOKEN} rejected`,
      errors: [
        { field: "page", code: "INVALID_VALUE", message: `page must be positive (token ${ACCESS_TOKEN})` },
        { field: null, code: "INVALID_REQUEST", message: `${ACCESS_TOKEN}` },
      ],
    };
    const client = new QashioClient({
      baseUrl: BASE_URL,
      tokenProvider: new StaticTokenProvider(ACCESS_TOKEN),
      fetch: scriptedFetch(json(400, body)),
      clock: fakeClock(),
    });
    const error = (await client.getCompanySummary().catch((e: unknown) => e)) as BadRequestError;
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.message).toBe("GET /public/v1/erp/company/summary answered 400");
    expect(error.providerText).toEqual({ message: "request with *** rejected", errors: ["page must be positive (token ***)", "***"] });
    expectNoSecret([...textsOf(error), JSON.stringify(error.errors), JSON.stringify(error.providerText)]);
  });

  it("when an echoed token sits right at the message's length cut", async () => {
    const body = { status_code: 400, message: `${"x".repeat(190)}${ACCESS_TOKEN}`, errors: [] };
    const client = new QashioClient({
      baseUrl: BASE_URL,
      tokenProvider: new StaticTokenProvider(ACCESS_TOKEN),
      fetch: scriptedFetch(json(400, body)),
      clock: fakeClock(),
    });
    const error = (await client.getCompanySummary().catch((e: unknown) => e)) as BadRequestError;
    expect(error.providerText?.message).toContain("***");
    expectNoSecret([...textsOf(error), JSON.stringify(error.providerText)]);
    expect(error.providerText?.message).not.toContain(ACCESS_TOKEN.slice(0, 10));
  });

  it("when the network error quotes the request", async () => {
    const logger = captureLogger();
    const fetch = scriptedFetch(new TypeError(`fetch failed: Authorization: Bearer ${ACCESS_TOKEN}`));
    const client = retryingClient(fetch, logger);
    const error = await client.getCompanySummary().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NetworkError);
    expect(logger.lines.length).toBeGreaterThan(0);
    expectNoSecret([...textsOf(error), logger.text()]);
  });

  it("when the answer's request id quotes a secret the request sent", async () => {
    // A gateway that echoes the request into meta.request_id or x-request-id: the id goes on the error, the retry log
    // line and, through the engine, the CLI's message.
    const codeEcho = (call: { body?: unknown }) =>
      json(401, { error: "invalid_grant", meta: { request_id: (call.body as { code: string }).code } });
    const exchange = await exchangeCode(
      { baseUrl: BASE_URL, clientId: "client-1", clientSecret: CLIENT_SECRET, fetch: scriptedFetch(codeEcho), clock: fakeClock() },
      { code: "code-SECRET-auth-77aa", redirectUri: "https://app.example/cb" },
    ).catch((e: unknown) => e);
    expect(exchange).toBeInstanceOf(UnauthorizedError);
    expect((exchange as UnauthorizedError).requestId).toBeUndefined();
    for (const text of textsOf(exchange)) expect(text).not.toContain("code-SECRET-auth-77aa");

    const logger = captureLogger();
    const bearerEcho = (call: { headers: Record<string, string> }) =>
      json(503, { status_code: 503, message: "down", errors: [] }, { "x-request-id": `echo:${call.headers.authorization ?? ""}` });
    const client = retryingClient(scriptedFetch(bearerEcho), logger);
    const error = await client.getCompanySummary().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServerError);
    expect(logger.lines.length).toBeGreaterThan(0);
    expectNoSecret([...textsOf(error), logger.text()]);

    const echoed = new QashioClient({
      baseUrl: BASE_URL,
      tokenProvider: new StaticTokenProvider(ACCESS_TOKEN),
      fetch: scriptedFetch(json(200, { status_code: 200, success: true, data: {}, meta: { request_id: ACCESS_TOKEN } })),
      clock: fakeClock(),
    });
    const acknowledged = await echoed.acknowledgeTransactions(["3f6c1a52-8d4e-4b7a-9c21-5e0f7d9a1b01"]);
    expect(acknowledged.requestId).toBeUndefined();
  });

  it("keeps a request id that quotes no secret", async () => {
    const client = new QashioClient({
      baseUrl: BASE_URL,
      tokenProvider: new StaticTokenProvider(ACCESS_TOKEN),
      fetch: scriptedFetch(json(404, { status_code: 404, message: "no", errors: [] }, { "x-request-id": "3f6c1a52-8d4e-4b7a-9c21-5e0f7d9a1b01" })),
      clock: fakeClock(),
    });
    const error = (await client.getCompanySummary().catch((e: unknown) => e)) as NotFoundError;
    expect(error.requestId).toBe("3f6c1a52-8d4e-4b7a-9c21-5e0f7d9a1b01");
  });

  it("when the full OAuth path succeeds (logs only)", async () => {
    const logger = captureLogger();
    const fetch = scriptedFetch(
      json(200, { access_token: NEW_ACCESS_TOKEN, refresh_token: NEW_REFRESH_TOKEN, token_type: "Bearer" }),
      fail(503),
      json(200, { status_code: 200, success: true, data: {} }),
    );
    const provider = oauthProvider(fetch, store({ refreshToken: REFRESH_TOKEN }), logger);
    const client = new QashioClient({ baseUrl: BASE_URL, tokenProvider: provider, fetch, clock: fakeClock(), logger, retry: { random: () => 0 } });
    await client.getCompanySummary();
    expect(logger.lines.some((l) => l.level === "warn")).toBe(true);
    expectNoSecret([logger.text()]);
  });
});

describe("a redirect is an answer, not followed (global fetch as the client's fetch)", () => {
  /** A loopback server answering each request with `answer`, recording what it received. */
  async function server(answer: (url: string) => { status: number; headers?: Record<string, string> }): Promise<{ url: string; received: string[]; close: () => Promise<void> }> {
    const received: string[] = [];
    const http: Server = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
      req.on("end", () => {
        received.push(`${req.method} ${req.url} ${JSON.stringify(req.headers)} ${body}`);
        const { status, headers } = answer(req.url ?? "");
        res.writeHead(status, { "content-type": "application/json", ...headers }).end("{}");
      });
    });
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    return { url, received, close: () => new Promise((resolve) => http.close(() => resolve())) };
  }

  it("sends no token request body to where a 307 from the token endpoint points", async () => {
    const elsewhere = await server(() => ({ status: 200 }));
    // Another origin (localhost, not 127.0.0.1): what a misrouted gateway or a hijacked DNS name would name.
    const provider = await server(() => ({ status: 307, headers: { location: elsewhere.url.replace("127.0.0.1", "localhost") + "/collect" } }));
    try {
      const error = await refresh({ baseUrl: provider.url, clientId: "client-1", clientSecret: CLIENT_SECRET, fetch }, REFRESH_TOKEN).catch((e: unknown) => e);
      expect(elsewhere.received).toEqual([]);
      expect(error).toMatchObject({ status: 307, path: "/oauth2/token" });
      expectNoSecret(textsOf(error));
    } finally {
      await Promise.all([elsewhere.close(), provider.close()]);
    }
  });
});
