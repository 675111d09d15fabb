import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import { buildAuthorizeUrl, createState, exchangeCode, refresh, stateMatches, validate } from "../../shared/qashio/auth/oauth.js";
import { jwtExpiry, jwtTimes } from "../../shared/qashio/auth/jwt.js";
import { OAuthTokenProvider, isInvalidClient, isRejectedGrant } from "../../shared/qashio/auth/token-provider.js";
import type { StoredTokens } from "../../shared/qashio/auth/token-store.js";
import { ForbiddenError, IncompleteTokenSetError, InvalidResponseError, RateLimitedError, UnauthorizedError } from "../../shared/qashio/errors.js";
import { captureLogger, fakeClock, hangingReply, json, jwt, scriptedFetch } from "./helpers.js";
import type { RetryEvent } from "../../shared/qashio/http.js";

const BASE_URL = "https://api.example.test";
const tokenSet = { access_token: "at-1", token_type: "Bearer", refresh_token: "rt-2", scope: "cards:read" };

describe("authorization-code helpers", () => {
  it("builds the authorize URL with response_type, client_id, redirect_uri, scope and state", () => {
    const url = new URL(
      buildAuthorizeUrl({
        authorizeUrl: "https://auth.example.test/",
        clientId: "client-1",
        redirectUri: "https://app.example/callback?x=1",
        scope: ["transactions:read", "cards:read"],
        state: "st-1",
      }),
    );
    expect(url.origin + url.pathname).toBe("https://auth.example.test/oauth2/authorize");
    expect(Object.fromEntries(url.searchParams)).toEqual({
      response_type: "code",
      client_id: "client-1",
      redirect_uri: "https://app.example/callback?x=1",
      scope: "transactions:read cards:read",
      state: "st-1",
    });
  });

  it("creates unguessable states and compares them exactly", () => {
    const a = createState();
    expect(a).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(createState()).not.toBe(a);
    expect(stateMatches(a, a)).toBe(true);
    expect(stateMatches(a, `${a}x`)).toBe(false);
    // Of the same length, by content: a forged state is as long as ours (mutant: the bytes left uncompared went unseen).
    expect(stateMatches(a, createState())).toBe(false);
    expect(stateMatches(a, `${a.slice(0, -1)}${a.endsWith("A") ? "B" : "A"}`)).toBe(false);
    expect(stateMatches(a, null)).toBe(false);
    expect(stateMatches("", "")).toBe(false);
  });

  it("exchanges a code with the authorization_code grant as JSON, without a bearer token", async () => {
    const fetch = scriptedFetch(json(200, tokenSet));
    const result = await exchangeCode(
      { baseUrl: BASE_URL, clientId: "client-1", clientSecret: "secret", fetch, clock: fakeClock() },
      { code: "code-1", redirectUri: "https://app.example/callback" },
    );
    expect(result.refresh_token).toBe("rt-2");
    const call = fetch.calls[0]!;
    expect(call.method).toBe("POST");
    expect(call.url.pathname).toBe("/oauth2/token");
    expect(call.headers["content-type"]).toBe("application/json");
    expect(call.headers.authorization).toBeUndefined();
    expect(call.body).toEqual({
      grant_type: "authorization_code",
      client_id: "client-1",
      client_secret: "secret",
      code: "code-1",
      redirect_uri: "https://app.example/callback",
    });
  });

  it("does not replay a code after a 5xx (a code is single use) but does after a 429", async () => {
    const options = { baseUrl: BASE_URL, clientId: "c", clientSecret: "s", clock: fakeClock() };
    const after500 = scriptedFetch(json(500, {}), json(200, tokenSet));
    await expect(exchangeCode({ ...options, fetch: after500 }, { code: "x", redirectUri: "y" })).rejects.toMatchObject({ status: 500 });
    expect(after500.calls).toHaveLength(1);
    const after429 = scriptedFetch(json(429, {}, { "retry-after": "1" }), json(200, tokenSet));
    await refresh({ ...options, fetch: after429 }, "rt-1");
    expect(after429.calls).toHaveLength(2);
  });

  it("maps an expired or used code to UnauthorizedError and keeps the OAuth error code", async () => {
    const fetch = scriptedFetch(json(401, { error: "invalid_grant", error_description: "code expired" }));
    const error = await exchangeCode({ baseUrl: BASE_URL, clientId: "c", clientSecret: "s", fetch, clock: fakeClock() }, { code: "x", redirectUri: "y" }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(UnauthorizedError);
    expect((error as UnauthorizedError).errors).toEqual([{ field: null, code: "invalid_grant", message: "" }]);
  });

  it("stores the exchanged tokens through OAuthTokenProvider.authorizeWithCode", async () => {
    const saved: StoredTokens[] = [];
    const clock = fakeClock();
    const access = jwt({ exp: Math.floor(clock.now() / 1000) + 900 });
    const provider = new OAuthTokenProvider({
      baseUrl: BASE_URL,
      clientId: "c",
      clientSecret: "s",
      clock,
      fetch: scriptedFetch(json(200, { ...tokenSet, access_token: access })),
      store: { load: async () => saved.at(-1), save: async (t) => void saved.push(t) },
    });
    await provider.authorizeWithCode("code-1", "https://app.example/cb");
    expect(saved).toEqual([{ accessToken: access, accessTokenExpiresAt: clock.now() + 900_000, refreshToken: "rt-2", scope: "cards:read" }]);
    expect(await provider.getAccessToken()).toBe(access);
  });
});

describe("token requests' transport settings", () => {
  it("retries on the clock, within the limits, and with the report and logger they are given", async () => {
    const clock = fakeClock();
    const logger = captureLogger();
    const retries: RetryEvent[] = [];
    const fetch = scriptedFetch(json(429, {}, { "retry-after": "1" }), json(200, tokenSet));
    await refresh({ baseUrl: BASE_URL, clientId: "c", clientSecret: "s", clock, fetch, logger, onRetry: (event) => retries.push(event) }, "rt-1");
    // mutants: the clock, onRetry and logger left out of the token requests' transport went unseen
    expect(clock.sleeps).toEqual([1000]);
    expect(retries).toMatchObject([{ status: 429, path: "/oauth2/token", attempt: 1 }]);
    expect(logger.lines.map((l) => l.level)).toEqual(["warn"]);

    // mutant: the retry limits left out went unseen (the default allows five attempts)
    const once = scriptedFetch(json(429, {}, { "retry-after": "1" }), json(200, tokenSet));
    const limited = { baseUrl: BASE_URL, clientId: "c", clientSecret: "s", clock: fakeClock(), fetch: once, retry: { maxAttempts: 1 } };
    await expect(exchangeCode(limited, { code: "x", redirectUri: "y" })).rejects.toBeInstanceOf(RateLimitedError);
    expect(once.calls).toHaveLength(1);
  });

  it("gives a token request the timeout it is given, not the default", async () => {
    const options = { baseUrl: BASE_URL, clientId: "c", clientSecret: "s", clock: fakeClock(), fetch: scriptedFetch(hangingReply()), timeoutMs: 20 };
    // mutant: timeoutMs left out of the token requests' transport went unseen
    await expect(exchangeCode(options, { code: "x", redirectUri: "y" })).rejects.toMatchObject({ name: "TimeoutError", timeoutMs: 20 });
  });
});

describe("refresh answered 200 with a body that is not a token set", () => {
  const refreshAnswered = (body: unknown) =>
    refresh({ baseUrl: BASE_URL, clientId: "c", clientSecret: "s", clock: fakeClock(), fetch: scriptedFetch(json(200, body)) }, "rt-1").catch((e: unknown) => e);

  it("hands the new refresh token it carries to the caller, through a private field only", async () => {
    const error = await refreshAnswered({ ...tokenSet, token_type: "mac" });
    expect(error).toBeInstanceOf(IncompleteTokenSetError);
    expect((error as IncompleteTokenSetError).rotatedRefreshToken()).toBe("rt-2");
    // Logs name an error by its name: a reader must see that a rotated token is at stake, not a plain bad answer.
    expect((error as Error).name).toBe("IncompleteTokenSetError");
    expect((error as IncompleteTokenSetError).issues).toEqual([{ path: "token_type", code: "invalid_format", message: "must be Bearer" }]);
    // Named in the message too, which is what the logs show of it.
    expect((error as Error).message).toBe("POST /oauth2/token answered 200 with a body that is not a token set (token_type), though it carries a new refresh token");
    expect(`${(error as Error).message} ${JSON.stringify(error)} ${inspect(error, { showHidden: true, depth: 5 })}`).not.toContain("rt-2");
  });

  it("is a plain InvalidResponseError when no refresh token came back (nothing to keep)", async () => {
    for (const body of [{ access_token: "at-1", token_type: "Bearer" }, { ...tokenSet, refresh_token: "" }, "not json"]) {
      const error = await refreshAnswered(body);
      expect(error).toBeInstanceOf(InvalidResponseError);
      expect(error).not.toBeInstanceOf(IncompleteTokenSetError);
    }
  });

  it("keeps the answer's status and request id on the error, which is what a provider's support asks for", async () => {
    const fetch = scriptedFetch(json(200, { access_token: "at-1", token_type: "Bearer" }, { "x-request-id": "req-7" }));
    const error = await refresh({ baseUrl: BASE_URL, clientId: "c", clientSecret: "s", clock: fakeClock(), fetch }, "rt-1").catch((e: unknown) => e);
    // mutant: the request id dropped from the error's context went unseen
    expect(error).toMatchObject({ status: 200, requestId: "req-7", method: "POST", path: "/oauth2/token" });
  });
});

describe("validate", () => {
  it("returns active for a valid token", async () => {
    const fetch = scriptedFetch(json(200, { active: true }));
    expect(await validate({ baseUrl: BASE_URL, fetch, clock: fakeClock() }, "at-1")).toEqual({ active: true });
    expect(fetch.calls[0]!.headers.authorization).toBe("Bearer at-1");
  });

  it("returns active false as the provider sent it (§4.2: a boolean), not as valid", async () => {
    const fetch = scriptedFetch(json(200, { active: false }));
    expect(await validate({ baseUrl: BASE_URL, fetch, clock: fakeClock() }, "at-1")).toEqual({ active: false });
  });

  it("retries a 5xx, as a read", async () => {
    const fetch = scriptedFetch(json(503, {}), json(200, { active: true }));
    const clock = fakeClock();
    expect(await validate({ baseUrl: BASE_URL, fetch, clock, retry: { random: () => 0 } }, "at-1")).toEqual({ active: true });
    expect(fetch.calls).toHaveLength(2);
  });

  it("maps 401 and 403 (API access disabled) to typed errors without refreshing", async () => {
    await expect(validate({ baseUrl: BASE_URL, fetch: scriptedFetch(json(401, {})), clock: fakeClock() }, "t")).rejects.toBeInstanceOf(UnauthorizedError);
    await expect(validate({ baseUrl: BASE_URL, fetch: scriptedFetch(json(403, {})), clock: fakeClock() }, "t")).rejects.toBeInstanceOf(ForbiddenError);
  });

  it("keeps the rate-limit wait on a 429 beyond the allowed Retry-After", async () => {
    const fetch = scriptedFetch(json(429, {}, { "retry-after": "120" }));
    const error = await validate({ baseUrl: BASE_URL, fetch, clock: fakeClock() }, "t").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitedError);
    expect((error as RateLimitedError).retryAfterMs).toBe(120_000);
  });
});

describe("jwtTimes", () => {
  it("reads exp and iat in milliseconds, each only when numeric", () => {
    expect(jwtTimes(jwt({ exp: 1_700_000_900, iat: 1_700_000_000 }))).toEqual({ expiresAt: 1_700_000_900_000, issuedAt: 1_700_000_000_000 });
    expect(jwtTimes(jwt({ exp: 1_700_000_900, iat: "then" }))).toEqual({ expiresAt: 1_700_000_900_000 });
    expect(jwtTimes("opaque-token")).toEqual({});
    expect(jwtTimes("a.!!!.c")).toEqual({});
  });

  it("reads only three-part tokens, and no claim JSON makes infinite (1e400)", () => {
    const payload = (text: string) => Buffer.from(text).toString("base64url");
    const claims = payload(JSON.stringify({ exp: 1_700_000_900, iat: 1_700_000_000 }));
    // A payload without a signature, or with a part too many, is not a JWT: its claims are not read.
    expect(jwtTimes(`h.${claims}`)).toEqual({});
    expect(jwtTimes(`h.${claims}.s.x`)).toEqual({});
    expect(jwtTimes(`h.${claims}.s`)).toEqual({ expiresAt: 1_700_000_900_000, issuedAt: 1_700_000_000_000 });
    expect(jwtTimes(`h.${payload('{"exp":1e400,"iat":-1e400}')}.s`)).toEqual({});
  });

  it("reads no claims from a JSON payload that is no object (null, a number, a string, an array), and throws nothing", () => {
    const payload = (text: string) => Buffer.from(text).toString("base64url");
    for (const json of ["null", "1700000900", '"exp"', "[1700000900]"]) expect(jwtTimes(`h.${payload(json)}.s`)).toEqual({});
  });
});

describe("jwtExpiry", () => {
  it("reads exp in milliseconds and ignores tokens that are not JWTs", () => {
    expect(jwtExpiry(jwt({ exp: 1_700_000_000 }))).toBe(1_700_000_000_000);
    expect(jwtExpiry(jwt({ sub: "x" }))).toBeUndefined();
    expect(jwtExpiry(jwt({ exp: "soon" }))).toBeUndefined();
    expect(jwtExpiry("opaque-token")).toBeUndefined();
    expect(jwtExpiry("a.!!!.c")).toBeUndefined();
  });
});

describe("isRejectedGrant", () => {
  it("is true for a 401 and a 400 invalid_grant, false for other errors", async () => {
    const options = { baseUrl: BASE_URL, clientId: "c", clientSecret: "s", clock: fakeClock() };
    const errorFor = (status: number, body: unknown) => refresh({ ...options, fetch: scriptedFetch(json(status, body)) }, "rt").catch((e: unknown) => e);
    expect(isRejectedGrant(await errorFor(401, {}))).toBe(true);
    expect(isRejectedGrant(await errorFor(400, { error: "invalid_grant" }))).toBe(true);
    expect(isRejectedGrant(await errorFor(400, { error: "invalid_request" }))).toBe(false);
    expect(isRejectedGrant(await errorFor(500, {}))).toBe(false);
  });

  it("is false for invalid_client, which isInvalidClient recognises: a wrong client secret says nothing about the grant", async () => {
    const options = { baseUrl: BASE_URL, clientId: "c", clientSecret: "s", clock: fakeClock() };
    const errorFor = (status: number, body: unknown) => refresh({ ...options, fetch: scriptedFetch(json(status, body)) }, "rt").catch((e: unknown) => e);
    const wrongSecret = await errorFor(401, { error: "invalid_client" });
    expect(isRejectedGrant(wrongSecret)).toBe(false);
    expect(isInvalidClient(wrongSecret)).toBe(true);
    expect(isInvalidClient(await errorFor(401, { error: "invalid_grant" }))).toBe(false);
    expect(isInvalidClient(new Error("invalid_client"))).toBe(false);
  });
});
