/**
 * QashioClient and the OAuth helpers against the sandbox, for the operations the other suites reach only raw:
 * ERP card and pool account pages and walks, statements-by-account walks, Retry-After on a 503 fault,
 * token-family revocation seen through OAuthTokenProvider, failed code exchanges, and the token endpoint's and the
 * API's refusals and faults as the client reads them.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { QashioClient } from "../../shared/qashio/client.js";
import { OAuthTokenProvider, StaticTokenProvider } from "../../shared/qashio/auth/token-provider.js";
import { exchangeCode, refresh } from "../../shared/qashio/auth/oauth.js";
import type { StoredTokens, TokenStore } from "../../shared/qashio/auth/token-store.js";
import { BadRequestError, ForbiddenError, NotFoundError, RateLimitedError, ReauthorizationRequiredError, ServerError, UnauthorizedError } from "../../shared/qashio/errors.js";
import { AUTHORIZATION_CODE_TTL_SECONDS } from "../../sandbox/index.js";
import { BASE, CLIENT, REDIRECT_URI, harness, instantClock, tokensFor, type Harness, type Row } from "./helpers.js";

const OAUTH = { baseUrl: BASE, clientId: CLIENT.client_id, clientSecret: CLIENT.client_secret };

let h: Harness;
beforeEach(async () => {
  h = await harness();
});

async function rawList(path: string): Promise<Row[]> {
  const { body } = await h.json(`${path}${path.includes("?") ? "&" : "?"}page_size=100`);
  return body.data as Row[];
}

describe("ERP cards through the client", () => {
  it("lists one page with its pagination block", async () => {
    const page = await h.client.listErpCards({ page_size: 3 });
    expect(page.data).toHaveLength(3);
    expect(page.pagination).toMatchObject({ page: 1, page_size: 3, has_next: true });
    expect(page.requestId).toBeTruthy();
  });

  it("walks every card across pages, each once, in the sandbox's order", async () => {
    const ids: string[] = [];
    for await (const card of h.client.iterateErpCards({ page_size: 2 })) ids.push(card.id);
    expect(ids).toEqual((await rawList("/public/v1/erp/cards")).map((c) => c.id));
    expect(ids.length).toBeGreaterThan(2);
  });

  it("walks only the cards matching a status filter", async () => {
    const statuses = new Set<string>();
    for await (const card of h.client.iterateErpCards({ status: "active", page_size: 2 })) statuses.add(String(card.status));
    expect([...statuses]).toEqual(["Active"]);
  });
});

describe("pool accounts through the client", () => {
  it("lists one page and walks them all", async () => {
    const page = await h.client.listPoolAccounts({ page_size: 1 });
    expect(page.data).toHaveLength(1);
    expect(page.pagination.has_next).toBe(true);
    const ids: string[] = [];
    for await (const pool of h.client.iteratePoolAccounts({ page_size: 1 })) ids.push(pool.id);
    expect(ids).toEqual((await rawList("/public/v1/erp/pool_accounts")).map((p) => p.id));
  });
});

describe("statements of one account through the client", () => {
  it("walks every monthly period across the inner pagination", async () => {
    const [summary] = await rawList("/public/v1/erp/statements");
    const accountId = String(summary?.account_external_id);
    const { body } = await h.json(`/public/v1/erp/statements/${accountId}?page_size=100`);
    const months: string[] = [];
    for await (const period of h.client.iterateStatementsByAccount(accountId, { page_size: 2 })) months.push(period.statement_period.month);
    expect(months).toEqual((body.data.data as Row[]).map((p) => p.statement_period.month));
    expect(months.length).toBeGreaterThan(2);
  });
});

describe("Retry-After on a 5xx from the sandbox", () => {
  it("waits the asked time once and then reads the page", async () => {
    const clock = instantClock();
    const client = new QashioClient({
      baseUrl: BASE,
      tokenProvider: new StaticTokenProvider(h.tokens.access_token),
      fetch: h.sandbox.fetch,
      clock,
      retry: { random: () => 0 },
    });
    const fault = await h.sandbox.fetch(`${BASE}/_sandbox/faults`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ path_prefix: "/public/v1/erp/cards", status: 503, count: 1, retry_after: 7 }),
    });
    expect(fault.status).toBe(201);
    const page = await client.listErpCards();
    expect(page.data.length).toBeGreaterThan(0);
    expect(clock.sleeps).toEqual([7000]);
  });
});

/** A store of its own per process, both starting from the same saved tokens. */
function storeFrom(snapshot: StoredTokens): TokenStore & { current(): StoredTokens | undefined } {
  let current: StoredTokens | undefined = { ...snapshot };
  return {
    current: () => current,
    load: async () => current,
    save: async (tokens) => {
      current = tokens;
    },
  };
}

function providerWith(store: TokenStore): OAuthTokenProvider {
  return new OAuthTokenProvider({ ...OAUTH, store, fetch: h.sandbox.fetch, clock: instantClock() });
}

describe("a consumed refresh token presented through OAuthTokenProvider", () => {
  it("gives ReauthorizationRequiredError, and the token the other process got is revoked with the family", async () => {
    const { refresh_token } = await tokensFor(h.sandbox, h.companyId);
    const first = storeFrom({ refreshToken: refresh_token });
    const second = storeFrom({ refreshToken: refresh_token });

    await providerWith(first).getAccessToken();
    const rotated = first.current()?.refreshToken;
    expect(rotated).toBeDefined();
    expect(rotated).not.toBe(refresh_token);

    const error = await providerWith(second).getAccessToken().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReauthorizationRequiredError);

    await expect(refresh({ ...OAUTH, fetch: h.sandbox.fetch }, String(rotated))).rejects.toBeInstanceOf(UnauthorizedError);
    const again = await providerWith(storeFrom({ refreshToken: String(rotated) })).getAccessToken().catch((e: unknown) => e);
    expect(again).toBeInstanceOf(ReauthorizationRequiredError);
  });
});

describe("exchangeCode failures against the sandbox", () => {
  const exchange = (code: string, redirectUri = REDIRECT_URI) =>
    exchangeCode({ ...OAUTH, fetch: h.sandbox.fetch, clock: instantClock() }, { code, redirectUri });
  const issue = () => h.sandbox.control.issueAuthorizationCode({ companyId: h.companyId, redirectUri: REDIRECT_URI });

  it("refuses a code used once already with UnauthorizedError", async () => {
    const code = issue();
    await expect(exchange(code)).resolves.toMatchObject({ token_type: expect.any(String) });
    await expect(exchange(code)).rejects.toBeInstanceOf(UnauthorizedError);
  });

  it("refuses an expired code with UnauthorizedError", async () => {
    const code = issue();
    h.sandbox.control.advanceClock(AUTHORIZATION_CODE_TTL_SECONDS + 1);
    await expect(exchange(code)).rejects.toBeInstanceOf(UnauthorizedError);
  });

  it("refuses a redirect URI other than the one the code was issued for with BadRequestError", async () => {
    const error = await exchange(issue(), "http://127.0.0.1:8765/other").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error).not.toBeInstanceOf(UnauthorizedError);
  });
});

describe("token endpoint refusals and failures as the client reads them", () => {
  const refreshOnce = (refreshToken: string, clientSecret: string = CLIENT.client_secret) =>
    refresh({ ...OAUTH, clientSecret, fetch: h.sandbox.fetch, clock: instantClock(), retry: { maxAttempts: 1 } }, refreshToken).catch((e: unknown) => e);
  const arm = (status: number) =>
    h.sandbox.fetch(`${BASE}/_sandbox/faults`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ path_prefix: "/oauth2/token", status, count: 1 }),
    });

  // The sandbox's own refusals and its injected 429 / 5xx (spec-gaps, Data, time, faults): each a typed error whose
  // message names the status and the OAuth code the sandbox answered, none of the request's secrets.
  it.each([
    ["an unknown refresh token", undefined, "rt_unknown", undefined, UnauthorizedError, 401, "invalid_grant"],
    ["a wrong client secret", undefined, undefined, "wrong-secret", UnauthorizedError, 401, "invalid_client"],
    ["an injected 429", 429, undefined, undefined, RateLimitedError, 429, "temporarily_unavailable"],
    ["an injected 503", 503, undefined, undefined, ServerError, 503, "temporarily_unavailable"],
    ["an injected 502", 502, undefined, undefined, ServerError, 502, "server_error"],
  ])("reads %s as its typed error naming the sandbox's code", async (_what, fault, token, secret, type, status, code) => {
    if (fault !== undefined) expect((await arm(fault)).status).toBe(201);
    const error = await refreshOnce(token ?? h.tokens.refresh_token, secret);
    expect(error).toBeInstanceOf(type);
    expect(error).toMatchObject({ status, message: `POST /oauth2/token answered ${status} (${code})`, errors: [{ field: null, code, message: "" }] });
    expect(JSON.stringify(error)).not.toContain(h.tokens.refresh_token);
  });
});

describe("API refusals as the client reads them", () => {
  const UNKNOWN_TX = "2f1e7c52-0d3b-4c5a-9e8f-000000000000";
  const terminated = () => h.sandbox.control.company(h.companyId)?.cards.find((c) => c.status === "Terminated")?.id ?? "";
  const readOnly = async () => h.clientFor((await tokensFor(h.sandbox, h.companyId, "cards:read")).access_token);

  // What the engine reads off a refusal: the class by status, and the envelope's field and code (a page size the
  // provider caps, the acknowledge ids it refused), with the request id, never the provider's words in the message.
  it.each([
    ["an acknowledge of an unknown id", BadRequestError, "POST", "/public/v1/erp/transactions/acknowledge", 400, ["transaction_ids.0", "NOT_FOUND"], () => h.client.acknowledgeTransactions([UNKNOWN_TX])],
    ["a page size over the sandbox's cap", BadRequestError, "GET", "/public/v1/erp/transactions", 400, ["page_size", "OUT_OF_RANGE"], () => h.client.listTransactions({ page_size: 101 })],
    ["a suspension of a terminated card", BadRequestError, "PUT", `/public/v1/core/cards/${"{card}"}/change_status`, 400, ["status", "INVALID_STATE"], () => h.client.suspendCard(terminated())],
    ["an unknown transaction id", NotFoundError, "GET", `/public/v1/erp/transactions/${UNKNOWN_TX}`, 404, ["transactionId", "NOT_FOUND"], () => h.client.getTransaction(UNKNOWN_TX)],
    ["a read without its scope", ForbiddenError, "GET", "/public/v1/erp/transactions", 403, [null, "FORBIDDEN"], async () => (await readOnly()).listTransactions()],
    ["a token the sandbox did not sign", UnauthorizedError, "GET", "/public/v1/erp/transactions", 401, [null, "UNAUTHORIZED"], () => h.clientFor("a.b.c").listTransactions()],
  ] as const)("reads %s as its typed error with the envelope's field and code", async (_what, type, method, path, status, [field, code], call) => {
    const error = await call().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(type);
    const where = path.replace("{card}", terminated());
    expect(error).toMatchObject({ status, method, path: where, message: `${method} ${where} answered ${status}`, errors: [{ field, code, message: "" }] });
    expect((error as { requestId?: string }).requestId).toMatch(/^[0-9a-f-]{36}$/);
    // The sandbox's words are kept apart, for a person debugging by hand.
    expect((error as { providerText?: { message?: string } }).providerText?.message).toEqual(expect.any(String));
  });
});
