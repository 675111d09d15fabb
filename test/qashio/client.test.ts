import { describe, expect, it } from "vitest";
import { QashioClient } from "../../shared/qashio/client.js";
import { OAuthTokenProvider, StaticTokenProvider } from "../../shared/qashio/auth/token-provider.js";
import type { StoredTokens } from "../../shared/qashio/auth/token-store.js";
import { DeadlineExceededError, InvalidRequestError, InvalidResponseError, RateLimitedError, RetryDeferredError, ServerError, TimeoutError } from "../../shared/qashio/errors.js";
import type { DriftReport } from "../../shared/qashio/schemas/index.js";
import { issuesOf } from "../../shared/qashio/parse.js";
import type { RetryEvent } from "../../shared/qashio/http.js";
import { pagesByHasNext, type WalkOptions } from "../../shared/qashio/pagination.js";
import * as z from "zod";
import {
  CARD_ID,
  TRANSACTION_ID,
  bankAccountFixture,
  cardBalanceFixture,
  chartOfAccountFixture,
  coreCardFixture,
  coreCardWriteFixture,
  erpCardDetailFixture,
  erpCardFixture,
  invitationResultFixture,
  poolAccountFixture,
  statementSummaryFixture,
  statementsByAccountFixture,
  supplierFixture,
  taxRateFixture,
  transactionDetailFixture,
  transactionFixture,
} from "./schemas/fixtures.js";
import { captureLogger, fail, fakeClock, hangingReply, json, ok, pagination, routedFetch, scriptedFetch, type RecordedCall } from "./helpers.js";

const BASE_URL = "https://api.example.test";
const SECOND_TX = "6a1d8b6f-3e5c-4a7b-8c2f-4d9e3b8f0a21";

function clientWith(fetch: ReturnType<typeof scriptedFetch>, extra: { onDrift?: (w: DriftReport) => void; onRetry?: (e: RetryEvent) => void } = {}) {
  const logger = captureLogger();
  const clock = fakeClock();
  const client = new QashioClient({
    baseUrl: BASE_URL,
    tokenProvider: new StaticTokenProvider("access-1"),
    fetch,
    clock,
    logger,
    retry: { random: () => 0 },
    ...extra,
  });
  return { client, logger, clock };
}

const listOf = (items: unknown[], page = 1, totalPages = 1) => ok(items, { pagination: pagination(page, totalPages) });

describe("QashioClient reads", () => {
  it.each([
    ["listTransactions", (c: QashioClient) => c.listTransactions({ client_sync_status: "not_synced", page_size: 50 }), "/public/v1/erp/transactions", transactionFixture()],
    ["listErpCards", (c: QashioClient) => c.listErpCards({ status: "active", last4: "4821" }), "/public/v1/erp/cards", erpCardFixture()],
    ["listPoolAccounts", (c: QashioClient) => c.listPoolAccounts({ status: "all" }), "/public/v1/erp/pool_accounts", poolAccountFixture()],
    ["listBankAccounts", (c: QashioClient) => c.listBankAccounts({ is_deleted: false }), "/public/v1/erp/bank_accounts", bankAccountFixture()],
    ["listChartOfAccounts", (c: QashioClient) => c.listChartOfAccounts({ account_currency: "AED" }), "/public/v1/erp/chart_of_accounts", chartOfAccountFixture()],
    ["listTaxRates", (c: QashioClient) => c.listTaxRates({ updated_at_from: "2024-01-01", updated_at_to: "2024-01-31" }), "/public/v1/erp/tax_rates", taxRateFixture()],
    ["listSuppliers", (c: QashioClient) => c.listSuppliers({ remote_name: "careem" }), "/public/v1/erp/suppliers", supplierFixture()],
    ["listStatements", (c: QashioClient) => c.listStatements({ month: "2024-04", account_type: "Card" }), "/public/v1/erp/statements", statementSummaryFixture()],
  ])("%s reads one page with a checked query and parses its items", async (_name, call, path, item) => {
    const fetch = scriptedFetch(listOf([item]));
    const { client } = clientWith(fetch);
    const page = await call(client);
    expect(fetch.calls[0]!.url.pathname).toBe(path);
    expect(fetch.calls[0]!.method).toBe("GET");
    expect(page.data).toHaveLength(1);
    expect(page.invalid).toEqual([]);
    expect(page.pagination.has_next).toBe(false);
  });

  it.each([
    ["listTransactions", (c: QashioClient) => c.listTransactions(), transactionFixture()],
    ["listErpCards", (c: QashioClient) => c.listErpCards(), erpCardFixture()],
    ["listPoolAccounts", (c: QashioClient) => c.listPoolAccounts(), poolAccountFixture()],
    ["listBankAccounts", (c: QashioClient) => c.listBankAccounts(), bankAccountFixture()],
    ["listChartOfAccounts", (c: QashioClient) => c.listChartOfAccounts(), chartOfAccountFixture()],
    ["listTaxRates", (c: QashioClient) => c.listTaxRates(), taxRateFixture()],
    ["listSuppliers", (c: QashioClient) => c.listSuppliers(), supplierFixture()],
    ["listStatements", (c: QashioClient) => c.listStatements(), statementSummaryFixture()],
  ])("%s sets an item that does not match its schema aside in invalid, keeping the others", async (_name, call, item) => {
    const { client } = clientWith(scriptedFetch(listOf([item, { id: 42 }])));
    const page = await call(client);
    expect(page.data).toEqual([item]);
    expect(page.invalid.map((each) => each.index)).toEqual([1]);
  });

  it("refuses an ERP card read answered 200 without success: true, which is no success envelope (spec §4.1)", async () => {
    for (const body of [{ status_code: 200, success: false, data: erpCardDetailFixture() }, { status_code: 200, data: erpCardDetailFixture() }]) {
      const { client } = clientWith(scriptedFetch(json(200, body)));
      await expect(client.readErpCard(CARD_ID)).rejects.toBeInstanceOf(InvalidResponseError);
    }
  });

  it("quarantines an ERP card read by id that does not match its schema rather than returning it", async () => {
    const { client } = clientWith(scriptedFetch(ok({ id: 42 })));
    const read = await client.readErpCard(CARD_ID);
    expect(read.data).toEqual([]);
    expect(read.invalid).toHaveLength(1);
  });

  it("rejects a core cards answer whose data is not {cards, page_info} with InvalidResponseError", async () => {
    const { client } = clientWith(scriptedFetch(ok({ items: [coreCardFixture()] })));
    await expect(client.listCoreCards()).rejects.toBeInstanceOf(InvalidResponseError);
  });

  it.each([
    ["no page_info", { cards: [coreCardFixture()] }],
    ["a page_info without its counts", { cards: [coreCardFixture()], page_info: { current_page: 1 } }],
  ])("rejects a core cards answer with %s with InvalidResponseError: its paging could not be followed", async (_what, data) => {
    const { client } = clientWith(scriptedFetch(ok(data)));
    await expect(client.listCoreCards()).rejects.toBeInstanceOf(InvalidResponseError);
  });

  it("sends booleans and numbers of the query as text", async () => {
    const fetch = scriptedFetch(listOf([]));
    const { client } = clientWith(fetch);
    await client.listTransactions({ exclude_from_sync: false, page: 2, page_size: 25 });
    expect(fetch.calls[0]!.url.search).toBe("?page=2&page_size=25&exclude_from_sync=false");
  });

  it("reads one transaction by UUID with the detail fields", async () => {
    const fetch = scriptedFetch(ok(transactionDetailFixture()));
    const { client } = clientWith(fetch);
    const tx = await client.getTransaction(TRANSACTION_ID);
    expect(fetch.calls[0]!.url.pathname).toBe(`/public/v1/erp/transactions/${TRANSACTION_ID}`);
    expect(tx.id).toBe(TRANSACTION_ID);
  });

  it("reads one ERP card with its configuration objects", async () => {
    const fetch = scriptedFetch(ok(erpCardDetailFixture()));
    const { client } = clientWith(fetch);
    const card = await client.getErpCard(CARD_ID);
    expect(fetch.calls[0]!.url.pathname).toBe(`/public/v1/erp/cards/${CARD_ID}`);
    expect(card.id).toBe(CARD_ID);
  });

  it("reads statements by account with the account fields and the inner pagination", async () => {
    const fetch = scriptedFetch(ok(statementsByAccountFixture()));
    const { client } = clientWith(fetch);
    const page = await client.getStatementsByAccount(CARD_ID, { from_month: "2024-01" });
    expect(fetch.calls[0]!.url.pathname).toBe(`/public/v1/erp/statements/${CARD_ID}`);
    expect(page).toMatchObject({ page: 1, totalPages: 2, total: 14, account: { account_external_id: CARD_ID, account_type: "Card" } });
    for (const key of ["data", "page", "total_pages", "total"]) expect(page.account).not.toHaveProperty(key);
    expect(page.data).toHaveLength(2);
  });

  it("sets a statement period that does not match its schema aside in invalid, keeping the account and the other periods", async () => {
    const fixture = statementsByAccountFixture();
    const { client } = clientWith(scriptedFetch(ok({ ...fixture, data: [fixture.data[0], { statement_period: "April" }] })));
    const page = await client.getStatementsByAccount(CARD_ID);
    expect(page.data.map((period) => period.statement_period.month)).toEqual(["2024-04"]);
    expect(page.invalid.map((each) => each.index)).toEqual([1]);
    expect(page.account.account_external_id).toBe(CARD_ID);
  });

  it.each([
    ["no account_external_id", { account_external_id: undefined }],
    ["an empty account_external_id", { account_external_id: "" }],
    ["a total_pages that is not an integer", { total_pages: "2" }],
    ["an inner data that is not an array", { data: {} }],
  ])("rejects a statements-by-account answer with %s with InvalidResponseError", async (_what, change) => {
    const { client } = clientWith(scriptedFetch(ok({ ...statementsByAccountFixture(), ...change })));
    await expect(client.getStatementsByAccount(CARD_ID)).rejects.toBeInstanceOf(InvalidResponseError);
  });

  it("encodes a statement account id into one path segment (the id is any text, not a checked CA id)", async () => {
    const fetch = scriptedFetch(ok(statementsByAccountFixture()));
    const { client } = clientWith(fetch);
    await client.getStatementsByAccount("acct/../1?x=#");
    expect(fetch.calls[0]!.url.pathname).toBe("/public/v1/erp/statements/acct%2F..%2F1%3Fx%3D%23");
    expect(fetch.calls[0]!.url.search).toBe("");
  });

  it("sends a statement account id trimmed, as it was checked (a pasted id with blanks around it)", async () => {
    const fetch = scriptedFetch(ok(statementsByAccountFixture()));
    const { client } = clientWith(fetch);
    await client.getStatementsByAccount(` ${CARD_ID}\n`);
    expect(fetch.calls[0]!.url.pathname).toBe(`/public/v1/erp/statements/${CARD_ID}`);
  });

  it.each([
    ["readErpCard", (c: QashioClient) => c.readErpCard(CARD_ID), erpCardDetailFixture()],
    ["getStatementsByAccount", (c: QashioClient) => c.getStatementsByAccount(CARD_ID), statementsByAccountFixture()],
    ["suspendCard", (c: QashioClient) => c.suspendCard(CARD_ID), { message: "Status change is being processed" }],
    ["updateCard", (c: QashioClient) => c.updateCard(CARD_ID, { nickname: "x" }), { card: coreCardWriteFixture() }],
    ["updateVelocityLimit", (c: QashioClient) => c.updateVelocityLimit(CARD_ID, { spend_limit_active: true }), { card: coreCardWriteFixture() }],
  ])("%s gives the answer's request id", async (_name, call, data) => {
    const { client } = clientWith(scriptedFetch(ok(data, { meta: { request_id: "req-read-7", timestamp: "2025-01-15T12:00:00Z" } })));
    expect((await call(client)).requestId).toBe("req-read-7");
  });

  it("reads the company summary as received (shape not in the spec)", async () => {
    const fetch = scriptedFetch(ok({ total_balance: 10, currency: "AED" }));
    const { client } = clientWith(fetch);
    expect(await client.getCompanySummary()).toEqual({ total_balance: 10, currency: "AED" });
    expect(fetch.calls[0]!.url.pathname).toBe("/public/v1/erp/company/summary");
  });

  it("reads core cards with page_info and card balances", async () => {
    const fetch = scriptedFetch(
      ok({ cards: [coreCardFixture()], page_info: { current_page: 1, per_page: 20, total_entries: 1, total_pages: 1, next_page: null, previous_page: null, offset: 0 } }),
      ok(cardBalanceFixture()),
    );
    const { client } = clientWith(fetch);
    const page = await client.listCoreCards({ limit: 5 });
    expect(page.data[0]!.id).toBe(CARD_ID);
    expect(page.pageInfo.next_page).toBeNull();
    const balance = await client.getCardBalance({ last_four: "4821" });
    expect(balance.cards[0]!.card_id).toBe(CARD_ID);
    expect(fetch.calls[1]!.url.pathname).toBe("/public/v1/core/cards/balance");
    expect(fetch.calls[1]!.url.searchParams.get("last_four")).toBe("4821");
  });


  it("retries a read on a 5xx (spec §7 rule 2)", async () => {
    const fetch = scriptedFetch(fail(503), listOf([transactionFixture()]));
    const { client } = clientWith(fetch);
    expect((await client.listTransactions()).data).toHaveLength(1);
    expect(fetch.calls).toHaveLength(2);
  });

  it("parses bank accounts with their own schema: a non-boolean reconciliation_account is set aside", async () => {
    const { client } = clientWith(scriptedFetch(listOf([bankAccountFixture({ reconciliation_account: "yes" })])));
    expect((await client.listBankAccounts()).invalid.map((each) => each.index)).toEqual([0]);
  });

  it("validates with the client's retry settings and logger", async () => {
    const fetch = scriptedFetch(json(503, { error: "temporarily_unavailable" }), json(200, { active: true }));
    const logger = captureLogger();
    const client = new QashioClient({ baseUrl: BASE_URL, tokenProvider: new StaticTokenProvider("access-1"), fetch, clock: fakeClock(), logger, retry: { maxAttempts: 1 } });
    await expect(client.validate()).rejects.toBeInstanceOf(ServerError);
    expect(fetch.calls).toHaveLength(1);
    const retried = clientWith(scriptedFetch(json(503, { error: "temporarily_unavailable" }), json(200, { active: true })));
    await retried.client.validate();
    expect(retried.logger.lines).toContainEqual(expect.objectContaining({ level: "warn", attributes: expect.objectContaining({ path: "/oauth2/validate" }) }));
  });

  it("validates the current token at /oauth2/validate", async () => {
    const fetch = scriptedFetch(json(200, { active: true }));
    const { client } = clientWith(fetch);
    expect(await client.validate()).toEqual({ active: true });
    expect(fetch.calls[0]!.url.pathname).toBe("/oauth2/validate");
    expect(fetch.calls[0]!.headers.authorization).toBe("Bearer access-1");
  });

  it("times a validate attempt out at the client's timeoutMs, as every other call's", async () => {
    const client = new QashioClient({ baseUrl: BASE_URL, tokenProvider: new StaticTokenProvider("access-1"), fetch: scriptedFetch(hangingReply()), clock: fakeClock(), timeoutMs: 20, retry: { maxAttempts: 1 } });
    await expect(client.validate()).rejects.toMatchObject({ name: "TimeoutError", timeoutMs: 20 });
  });

  it("reports a retried validate attempt to onRetry, as every other call's", async () => {
    const fetch = scriptedFetch(json(503, { error: "temporarily_unavailable" }), json(200, { active: true }));
    const events: RetryEvent[] = [];
    const { client } = clientWith(fetch, { onRetry: (e) => events.push(e) });
    expect(await client.validate()).toEqual({ active: true });
    expect(events).toEqual([expect.objectContaining({ status: 503, statusClass: "5xx", method: "GET", path: "/oauth2/validate", attempt: 1 })]);
  });
});

describe("QashioClient request checks (no network call on bad input)", () => {
  async function rejected(run: (c: QashioClient) => Promise<unknown>) {
    const fetch = scriptedFetch(listOf([]));
    const { client } = clientWith(fetch);
    const error = await run(client).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidRequestError);
    expect(fetch.calls).toHaveLength(0);
    return error as InvalidRequestError;
  }

  it("names every offending transaction query field", async () => {
    const error = await rejected((c) =>
      c.listTransactions({ page: 0, card_last_four: "12", transaction_time_from: "2024-01-01", client_sync_status: "pending" as never }),
    );
    expect(error.fields).toEqual(expect.arrayContaining(["page", "card_last_four", "transaction_time_to", "client_sync_status"]));
    expect(error.message).toMatch(/card_last_four/);
    expect(error.status).toBeUndefined();
  });

  // A plain-JS caller's key the operation does not take (a mistyped filter, one of another read) would otherwise be
  // dropped, and the read answered unfiltered: a list of every transaction where only the not-synced ones were meant.
  it.each([
    ["listTransactions", (c: QashioClient) => c.listTransactions({ client_sync_staus: "not_synced" } as never), "client_sync_staus"],
    ["getCardBalance", (c: QashioClient) => c.getCardBalance({ last_four: "4821", card_id: CARD_ID } as never), "card_id"],
    ["getStatementsByAccount", (c: QashioClient) => c.getStatementsByAccount(CARD_ID, { from_month: "2024-01", month: "2024-02" } as never), "month"],
    ["listCoreCards", (c: QashioClient) => c.listCoreCards({ limit: 5, status: "active" } as never), "status"],
    ["iterateTransactions", (c: QashioClient) => c.iterateTransactions({ client_sync_staus: "not_synced" } as never).next(), "client_sync_staus"],
  ])("refuses a query key %s does not take, naming it, rather than send the read unfiltered", async (_name, run, key) => {
    const error = await rejected(run);
    expect([error.fields, error.errors.map((e) => e.code)]).toEqual([[key], ["INVALID_FORMAT"]]);
    expect(error.message).toContain(`${key} is not a parameter of this query`);
  });

  it("rejects an unrecognised account_type, a bad last4 and an inverted date range on ERP cards", async () => {
    const error = await rejected((c) =>
      c.listErpCards({ account_type: "company" as never, last4: "48a1", issued_time_from: "2024-02-01", issued_time_to: "2024-01-01" }),
    );
    expect(error.fields).toEqual(expect.arrayContaining(["account_type", "last4", "issued_time_to"]));
  });

  it("rejects a master-data range with one end only", async () => {
    const error = await rejected((c) => c.listSuppliers({ updated_at_from: "2024-01-01" }));
    expect(error.fields).toEqual(["updated_at_to"]);
  });

  it("rejects an unparseable month", async () => {
    await rejected((c) => c.listStatements({ month: "2024-13" }));
    await rejected((c) => c.getStatementsByAccount(CARD_ID, { to_month: "April" }));
  });

  it("rejects a card balance query with status only", async () => {
    const error = await rejected((c) => c.getCardBalance({ status: "active" }));
    expect(error.errors[0]!.code).toBe("REQUIRED");
    // A rule of the whole query, no one field's: named as the request, as the engine's log fields name it.
    expect(error.fields).toEqual(["(request)"]);
  });

  it("rejects a CT reference where the transaction UUID is required", async () => {
    const error = await rejected((c) => c.getTransaction("CT10023456"));
    expect(error.fields).toEqual(["transactionId"]);
    expect(error.message).not.toContain("CT10023456");
  });

  it("rejects a card id that is not a CA id, and empty write bodies", async () => {
    await rejected((c) => c.updateCard("12345", { nickname: "x" }));
    await rejected((c) => c.updateCard(CARD_ID, {}));
    await rejected((c) => c.updateVelocityLimit(CARD_ID, {}));
    await rejected((c) => c.suspendCard("nope"));
    // A plain-JS caller's suspension reason that is not text: checked with the shared body schema, before any call.
    expect((await rejected((c) => c.suspendCard(CARD_ID, { reason: 42 as unknown as string }))).fields).toEqual(["reason"]);
  });

  it("rejects an empty acknowledgement and ids that are not UUIDs", async () => {
    await rejected((c) => c.acknowledgeTransactions([]));
    await rejected((c) => c.acknowledgeTransactions(["CT10023456"]));
  });

  it("rejects an invitation without addresses", async () => {
    await rejected((c) => c.inviteUsers([]));
  });

  it("refuses a malformed ERP card id by rejecting, not by throwing before a promise exists", async () => {
    const fetch = scriptedFetch(ok(erpCardDetailFixture()));
    const { client } = clientWith(fetch);
    let call: Promise<unknown> | undefined;
    expect(() => (call = client.getErpCard("12345"))).not.toThrow();
    await expect(call).rejects.toMatchObject({ name: "InvalidRequestError", fields: ["cardId"], method: "GET", path: "/public/v1/erp/cards" });
    expect(fetch.calls).toHaveLength(0);
  });

  it("names each refused field with its code and message, and joins the messages with semicolons", async () => {
    const path = await rejected((c) => c.getTransaction("CT10023456"));
    expect(path.errors).toEqual([{ field: "transactionId", code: "INVALID_FORMAT", message: "transactionId is malformed" }]);
    const query = await rejected((c) => c.listTransactions({ page: 0, card_last_four: "12" }));
    expect(query.errors).toHaveLength(2);
    expect(query.message).toBe(`invalid query for GET /public/v1/erp/transactions, not sent: ${query.errors.map((e) => e.message).join("; ")}`);
    expect(query.errors.every((e) => e.message.length > 0)).toBe(true);
  });

  it("refuses a blank statement account id: the empty segment would read the statements list instead", async () => {
    for (const id of ["", " \t"]) expect((await rejected((c) => c.getStatementsByAccount(id))).fields).toEqual(["statementAccountId"]);
  });

  it.each([
    ["a transaction id", (c: QashioClient) => c.getTransaction("CT10023456"), "path", "GET", "/public/v1/erp/transactions"],
    ["an ERP card id", (c: QashioClient) => c.readErpCard("12345"), "path", "GET", "/public/v1/erp/cards"],
    ["a statements-by-account query", (c: QashioClient) => c.getStatementsByAccount(CARD_ID, { to_month: "April" }), "query", "GET", "/public/v1/erp/statements"],
    ["the card id of an update", (c: QashioClient) => c.updateCard("12345", { nickname: "x" }), "path", "PUT", "/public/v1/core/cards"],
    ["the card id of a velocity limit", (c: QashioClient) => c.updateVelocityLimit("12345", { spend_limit_active: true }), "path", "POST", "/public/v1/core/cards"],
  ])("names the operation's method and path, not the bad value, when it refuses %s", async (_what, run, part, method, path) => {
    const error = await rejected(run);
    expect(error).toMatchObject({ method, path });
    expect(error.message.startsWith(`invalid ${part} for ${method} ${path}, not sent: `)).toBe(true);
  });
});

describe("QashioClient writes", () => {
  it("acknowledges with {transaction_ids: [...]} and retries it on a 5xx (idempotent)", async () => {
    const fetch = scriptedFetch(fail(503), ok({}));
    const { client } = clientWith(fetch);
    const result = await client.acknowledgeTransactions([TRANSACTION_ID, SECOND_TX]);
    expect(fetch.calls).toHaveLength(2);
    expect(fetch.calls[1]!.method).toBe("POST");
    expect(fetch.calls[1]!.url.pathname).toBe("/public/v1/erp/transactions/acknowledge");
    expect(fetch.calls[1]!.body).toEqual({ transaction_ids: [TRANSACTION_ID, SECOND_TX] });
    expect(result.acknowledged).toBe(2);
  });

  it.each([
    ["listTransactions", (c: QashioClient, deadline: number) => c.listTransactions({ client_sync_status: "not_synced" }, { deadline })],
    ["listErpCards", (c: QashioClient, deadline: number) => c.listErpCards({ page: 1 }, { deadline })],
    ["acknowledgeTransactions", (c: QashioClient, deadline: number) => c.acknowledgeTransactions([TRANSACTION_ID], { deadline })],
  ])("%s with a deadline does not wait out a Retry-After that would overrun it", async (_name, call) => {
    const fetch = scriptedFetch(fail(429, [], { "retry-after": "55" }), ok({}));
    const { client, clock } = clientWith(fetch);
    const deadline = clock.now() + 20_000;
    const error = await call(client, deadline).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect(error).toMatchObject({ deadline });
    expect(fetch.calls).toHaveLength(1);
    expect(clock.sleeps).toEqual([]);
  });

  it("spends no refresh token on a call whose deadline no attempt fits any more", async () => {
    const clock = fakeClock();
    const store = { tokens: { refreshToken: "rt-1", accessToken: "at-1", accessTokenExpiresAt: clock.now() + 30_000 } as StoredTokens, load: async () => store.tokens, save: async (t: StoredTokens) => void (store.tokens = t) };
    // The access token is within the refresh skew: a call would refresh first.
    const fetch = scriptedFetch(json(200, { access_token: "at-2", token_type: "Bearer", refresh_token: "rt-2" }), ok({}));
    const tokenProvider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: "s", store, fetch, clock });
    const client = new QashioClient({ baseUrl: BASE_URL, tokenProvider, fetch, clock });
    const error = await client.acknowledgeTransactions([TRANSACTION_ID], { deadline: clock.now() + 5_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect(fetch.calls).toEqual([]);
    expect(store.tokens.refreshToken).toBe("rt-1");
  });

  it("spends no refresh token on a 401 whose replay no longer fits the call's deadline", async () => {
    const clock = fakeClock();
    const store = { tokens: { refreshToken: "rt-1", accessToken: "at-1" } as StoredTokens, load: async () => store.tokens, save: async (t: StoredTokens) => void (store.tokens = t) };
    // The acknowledge is answered 401 as its 10 s attempt times out: 5 s of the call's 15 s are left.
    const fetch = scriptedFetch((call) => {
      clock.advance(10_000);
      return call.url.pathname.endsWith("/oauth2/token") ? json(200, { access_token: "at-2", token_type: "Bearer", refresh_token: "rt-2" }) : json(401, {});
    });
    const tokenProvider = new OAuthTokenProvider({ baseUrl: BASE_URL, clientId: "c", clientSecret: "s", store, fetch, clock });
    const client = new QashioClient({ baseUrl: BASE_URL, tokenProvider, fetch, clock });
    const error = await client.acknowledgeTransactions([TRANSACTION_ID], { deadline: clock.now() + 15_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect(fetch.calls.map((c) => c.url.pathname)).toEqual(["/public/v1/erp/transactions/acknowledge"]);
    expect(store.tokens.refreshToken).toBe("rt-1");
  });

  it("readErpCard with a deadline does not wait out a Retry-After that would overrun it", async () => {
    const fetch = scriptedFetch(fail(429, [], { "retry-after": "55" }), ok(erpCardDetailFixture()));
    const { client, clock } = clientWith(fetch);
    const deadline = clock.now() + 20_000;
    const error = await client.readErpCard(CARD_ID, { deadline }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect(fetch.calls).toHaveLength(1);
  });

  it("sends no read once its stop signal has aborted", async () => {
    const fetch = scriptedFetch(listOf([transactionFixture()]));
    const { client } = clientWith(fetch);
    await expect(client.listTransactions({}, { stop: AbortSignal.abort() })).rejects.toBeInstanceOf(DeadlineExceededError);
    expect(fetch.calls).toHaveLength(0);
  });

  it("leaves a failed acknowledgement's retry to a caller that asks for it (callerRetries), sending it once", async () => {
    const fetch = scriptedFetch(fail(503), ok({}));
    const { client } = clientWith(fetch);
    const error = await client.acknowledgeTransactions([TRANSACTION_ID], { callerRetries: { failedBefore: 0 } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RetryDeferredError);
    expect(fetch.calls).toHaveLength(1);
  });

  it("accepts an acknowledgement answered 2xx without the standard envelope, with a warning", async () => {
    const fetch = scriptedFetch(new Response(null, { status: 204 }));
    const { client, logger } = clientWith(fetch);
    await expect(client.acknowledgeTransactions([TRANSACTION_ID])).resolves.toMatchObject({ acknowledged: 1 });
    expect(logger.lines.some((l) => l.level === "warn" && l.message.includes("acknowledge"))).toBe(true);
  });

  it("accepts an acknowledgement answered 2xx with a body that is not JSON (§4.3 shows no response), once, with a warning", async () => {
    for (const reply of [new Response("OK", { status: 200, headers: { "content-type": "text/plain", "x-request-id": "req-ack-1" } }), new Response("<html>Accepted</html>", { status: 202 })]) {
      const fetch = scriptedFetch(reply);
      const { client, logger } = clientWith(fetch);
      await expect(client.acknowledgeTransactions([TRANSACTION_ID])).resolves.toMatchObject({ acknowledged: 1 });
      expect(fetch.calls).toHaveLength(1);
      expect(logger.lines.some((l) => l.level === "warn" && l.message.includes("acknowledge"))).toBe(true);
    }
  });

  it("acknowledges without a warning when the answer has the standard envelope, giving its request id", async () => {
    const { client, logger } = clientWith(scriptedFetch(ok({})));
    expect(await client.acknowledgeTransactions([TRANSACTION_ID])).toEqual({ acknowledged: 1, requestId: "req-0001" });
    expect(logger.lines.filter((l) => l.level === "warn")).toEqual([]);
  });

  it("names the path, status and request id in the warning of an acknowledgement answered without the envelope", async () => {
    const fetch = scriptedFetch(new Response("Accepted", { status: 202, headers: { "content-type": "text/plain", "x-request-id": "req-ack-2" } }));
    const { client, logger } = clientWith(fetch);
    expect(await client.acknowledgeTransactions([TRANSACTION_ID])).toEqual({ acknowledged: 1, requestId: "req-ack-2" });
    expect(logger.lines.filter((l) => l.level === "warn")).toEqual([
      { level: "warn", message: "acknowledge answered 2xx without the standard envelope", attributes: { path: "/public/v1/erp/transactions/acknowledge", status: 202, requestId: "req-ack-2" } },
    ]);
  });

  it("sends no acknowledgement once its stop signal has aborted", async () => {
    const fetch = scriptedFetch(ok({}));
    const { client } = clientWith(fetch);
    await expect(client.acknowledgeTransactions([TRANSACTION_ID], { stop: AbortSignal.abort() })).rejects.toBeInstanceOf(DeadlineExceededError);
    expect(fetch.calls).toHaveLength(0);
  });

  it("still refuses a read answered 2xx with a body that is not JSON", async () => {
    const fetch = scriptedFetch(new Response("OK", { status: 200 }));
    const { client } = clientWith(fetch);
    await expect(client.listTransactions({})).rejects.toBeInstanceOf(InvalidResponseError);
  });

  it("issues a card once, never retrying a 5xx or a network error", async () => {
    for (const reply of [fail(500), new TypeError("fetch failed")]) {
      const fetch = scriptedFetch(reply, ok({ card: coreCardFixture() }));
      const { client, clock } = clientWith(fetch);
      const error = await client.issueCard({ nickname: "New card" }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(reply instanceof Response ? ServerError : Error);
      expect(error).not.toBeInstanceOf(TimeoutError);
      expect(fetch.calls).toHaveLength(1);
      expect(clock.sleeps).toEqual([]);
    }
  });

  it("issues a card once, not even retrying a 429 (spec §7 rule 3)", async () => {
    const fetch = scriptedFetch(fail(429, [], { "retry-after": "1" }), ok({ card: coreCardFixture() }));
    const { client, clock } = clientWith(fetch);
    await expect(client.issueCard({ nickname: "New card" })).rejects.toBeInstanceOf(RateLimitedError);
    expect(fetch.calls).toHaveLength(1);
    expect(clock.sleeps).toEqual([]);
  });

  it("returns the issued card when data.card has the card shape", async () => {
    const fetch = scriptedFetch(json(201, { status_code: 201, success: true, message: "Resource created", data: { card: coreCardFixture() } }));
    const { client } = clientWith(fetch);
    const result = await client.issueCard({ nickname: "New card" });
    expect(fetch.calls[0]!.method).toBe("POST");
    expect(fetch.calls[0]!.url.pathname).toBe("/public/v1/core/cards");
    expect(fetch.calls[0]!.body).toEqual({ nickname: "New card" });
    expect(result.card?.id).toBe(CARD_ID);
  });

  it("returns an issued card's whole answer: the card, data as received, the message and the request id", async () => {
    const data = { card: coreCardFixture(), funding: { source: "pool" } };
    const fetch = scriptedFetch(json(201, { status_code: 201, success: true, message: "Resource created", data, meta: { request_id: "req-issue-1", timestamp: "2025-01-15T12:00:00Z" } }));
    const { client } = clientWith(fetch);
    expect(await client.issueCard({ nickname: "New card" })).toEqual({ card: expect.objectContaining({ id: CARD_ID }), data, message: "Resource created", requestId: "req-issue-1" });
  });

  it("returns no card when data.card does not have the card shape, keeping data as received", async () => {
    const data = { card: { id: 42, status: "issued" } };
    const { client } = clientWith(scriptedFetch(json(201, { status_code: 201, success: true, message: "Resource created", data })));
    const result = await client.issueCard({ nickname: "New card" });
    expect(result).not.toHaveProperty("card");
    expect(result.data).toEqual(data);
  });

  it("names POST and the cards path on an issued card's answer without the envelope", async () => {
    const { client } = clientWith(scriptedFetch(json(201, ["not", "an", "envelope"])));
    await expect(client.issueCard({ nickname: "New card" })).rejects.toMatchObject({ name: "InvalidResponseError", method: "POST", path: "/public/v1/core/cards", status: 201 });
  });

  it("updates a card with PUT and returns data.card", async () => {
    const fetch = scriptedFetch(ok({ card: coreCardWriteFixture() }, { message: "Resource updated" }));
    const { client } = clientWith(fetch);
    const result = await client.updateCard(CARD_ID, { velocity_period: "MONTHLY", auto_top_up_amount: 500 });
    expect(fetch.calls[0]!.method).toBe("PUT");
    expect(fetch.calls[0]!.url.pathname).toBe(`/public/v1/core/cards/${CARD_ID}`);
    expect(fetch.calls[0]!.body).toEqual({ velocity_period: "MONTHLY", auto_top_up_amount: 500 });
    expect(result.card.id).toBe(CARD_ID);
  });

  it("sends a card update and a velocity limit as checked: a key the write does not take (a plain-JS caller's) is not sent", async () => {
    const fetch = scriptedFetch(ok({ card: coreCardWriteFixture() }, { message: "Resource updated" }));
    const { client } = clientWith(fetch);
    const update = await client.updateCard(CARD_ID, { nickname: "x", status: "terminated" } as Parameters<QashioClient["updateCard"]>[1]);
    await client.updateVelocityLimit(CARD_ID, { spend_limit_active: true, card_id: "CA0" } as Parameters<QashioClient["updateVelocityLimit"]>[1]);
    expect(fetch.calls.map((c) => c.body)).toEqual([{ nickname: "x" }, { spend_limit_active: true }]);
    expect(update.message).toBe("Resource updated");
  });

  it.each([
    ["updateVelocityLimit", (c: QashioClient) => c.updateVelocityLimit(CARD_ID, { spend_limit_active: true }), ok({ card: coreCardWriteFixture() })],
    ["inviteUsers", (c: QashioClient) => c.inviteUsers(["new.hire@example.com"]), json(201, { status_code: 201, success: true, data: invitationResultFixture() })],
  ])("%s retries a 429 after its Retry-After: the provider did not process it", async (_name, call, reply) => {
    const fetch = scriptedFetch(fail(429, [], { "retry-after": "1" }), reply);
    const { client, clock } = clientWith(fetch);
    await call(client);
    expect(fetch.calls).toHaveLength(2);
    expect(clock.sleeps).toEqual([1000]);
  });

  it("suspends a card through change_status with status suspended", async () => {
    const fetch = scriptedFetch(ok({ message: "Status change is being processed" }, { message: "Resource updated" }));
    const { client } = clientWith(fetch);
    const result = await client.suspendCard(CARD_ID, { reason: "lost" });
    expect(fetch.calls[0]!.method).toBe("PUT");
    expect(fetch.calls[0]!.url.pathname).toBe(`/public/v1/core/cards/${CARD_ID}/change_status`);
    expect(fetch.calls[0]!.body).toEqual({ status: "suspended", reason: "lost" });
    expect(result.message).toBe("Status change is being processed");
  });

  it("retries a card update and a suspension on a 5xx: a PUT has the same effect when sent again (spec §7 rule 4)", async () => {
    const update = scriptedFetch(fail(503), ok({ card: coreCardWriteFixture() }));
    await clientWith(update).client.updateCard(CARD_ID, { auto_top_up_amount: 500 });
    expect(update.calls).toHaveLength(2);

    const suspend = scriptedFetch(fail(503), ok({ message: "Status change is being processed" }));
    await clientWith(suspend).client.suspendCard(CARD_ID);
    expect(suspend.calls).toHaveLength(2);
  });

  it("sets the velocity limit with POST and does not retry it on a 5xx", async () => {
    const fetch = scriptedFetch(fail(502), ok({ card: coreCardWriteFixture() }));
    const { client } = clientWith(fetch);
    await expect(client.updateVelocityLimit(CARD_ID, { spend_limit_active: true, spend_limit_period: "WEEKLY" })).rejects.toBeInstanceOf(ServerError);
    expect(fetch.calls).toHaveLength(1);
    expect(fetch.calls[0]!.method).toBe("POST");
    expect(fetch.calls[0]!.url.pathname).toBe(`/public/v1/core/cards/${CARD_ID}/update_velocity_limit`);
  });

  it("invites end users with {end_user: [...]} and returns the summary", async () => {
    const fetch = scriptedFetch(json(201, { status_code: 201, success: true, data: invitationResultFixture() }));
    const { client } = clientWith(fetch);
    const result = await client.inviteUsers(["new.hire@example.com", "already.invited@example.com"]);
    expect(fetch.calls[0]!.method).toBe("POST");
    expect(fetch.calls[0]!.url.pathname).toBe("/public/v1/core/user_profiles/invite");
    expect(fetch.calls[0]!.body).toEqual({ end_user: ["new.hire@example.com", "already.invited@example.com"] });
    expect(result.summary?.total_processed?.failed).toBe(1);
  });
  it("does not retry an invitation on a 5xx: a replay would send the emails again", async () => {
    const fetch = scriptedFetch(fail(502), json(201, { status_code: 201, success: true, data: invitationResultFixture() }));
    const { client } = clientWith(fetch);
    await expect(client.inviteUsers(["new.hire@example.com"])).rejects.toBeInstanceOf(ServerError);
    expect(fetch.calls).toHaveLength(1);
  });
});

describe("QashioClient response handling", () => {
  it("keeps an unlisted enum value and reports the drift to onDrift and the logger", async () => {
    const drift: DriftReport[] = [];
    const fetch = scriptedFetch(listOf([transactionFixture({ transaction_category: "crypto_purchase" })]));
    const { client, logger } = clientWith(fetch, { onDrift: (w) => drift.push(w) });
    const page = await client.listTransactions();
    expect(page.data[0]!.transaction_category).toBe("crypto_purchase");
    expect(drift).toEqual([expect.objectContaining({ field: "transaction_category", value: "crypto_purchase", count: 1 })]);
    expect(logger.lines.some((l) => l.level === "warn" && l.attributes?.value === "crypto_purchase")).toBe(true);
  });

  it("logs an unlisted enum value only when it is a plain identifier (free text may be personal), giving onDrift it whole", async () => {
    const drift: DriftReport[] = [];
    const fetch = scriptedFetch(listOf([transactionFixture({ approval_status: "approved by ann.holder@example.com" })]));
    const { client, logger } = clientWith(fetch, { onDrift: (w) => drift.push(w) });
    await client.listTransactions();
    expect(drift).toEqual([expect.objectContaining({ field: "approval_status", value: "approved by ann.holder@example.com" })]);
    expect(logger.lines.find((l) => l.message.startsWith("provider sent an enum value"))?.attributes).toMatchObject({ field: "approval_status", value: "?" });
    expect(logger.text()).not.toContain("ann.holder");
  });

  it("sets an item that fails its schema aside with its index instead of failing the page", async () => {
    const broken = transactionFixture({ id: 42 });
    const fetch = scriptedFetch(listOf([transactionFixture(), broken]));
    const { client } = clientWith(fetch);
    const page = await client.listTransactions();
    expect(page.data).toHaveLength(1);
    expect(page.invalid).toEqual([{ index: 1, raw: broken, issues: [expect.objectContaining({ path: "id" })] }]);
  });

  it("sets a core card that fails its schema aside too, so a core card walk ends on it unless onInvalid takes it", async () => {
    const broken = coreCardFixture({ id: 42 });
    const pageInfo = { current_page: 1, per_page: 20, total_entries: 2, total_pages: 1, next_page: null, previous_page: null, offset: 0 };
    const fetch = routedFetch(() => ok({ cards: [coreCardFixture(), broken], page_info: pageInfo }));
    const { client } = clientWith(fetch);
    const page = await client.listCoreCards();
    expect(page.data).toHaveLength(1);
    expect(page.invalid).toEqual([{ index: 1, raw: broken, issues: [expect.objectContaining({ path: "id" })] }]);
    const strict = async () => {
      for await (const _ of client.iterateCoreCards()) void _;
    };
    await expect(strict()).rejects.toBeInstanceOf(InvalidResponseError);
  });

  it("names the root as the issue path when the body is not an object at all", async () => {
    const fetch = scriptedFetch(json(200, ["not", "an", "envelope"]));
    const { client } = clientWith(fetch);
    const error = (await client.listTransactions().catch((e: unknown) => e)) as InvalidResponseError;
    expect(error).toBeInstanceOf(InvalidResponseError);
    expect(error.issues.map((i) => i.path)).toEqual(["(root)"]);
  });

  it("keeps at most 20 schema issues on an error", () => {
    const schema = z.object(Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`f${i}`, z.string()])));
    const result = schema.safeParse({});
    expect(result.success).toBe(false);
    expect(issuesOf(result.error!)).toHaveLength(20);
  });

  it("throws InvalidResponseError with the schema issues when the envelope is wrong", async () => {
    const fetch = scriptedFetch(json(200, { success: true, data: [] }));
    const { client } = clientWith(fetch);
    const error = (await client.listTransactions().catch((e: unknown) => e)) as InvalidResponseError;
    expect(error).toBeInstanceOf(InvalidResponseError);
    expect(error.issues.map((i) => i.path)).toContain("pagination");
  });

  it("puts the answer's request id, status, method and path on the InvalidResponseError of a body that does not match its schema", async () => {
    const fetch = scriptedFetch(json(200, { success: true, data: [], meta: { request_id: "req-schema-1" } }));
    const { client } = clientWith(fetch);
    const error = (await client.listTransactions().catch((e: unknown) => e)) as InvalidResponseError;
    expect(error).toBeInstanceOf(InvalidResponseError);
    expect(error).toMatchObject({ requestId: "req-schema-1", status: 200, method: "GET", path: "/public/v1/erp/transactions" });
  });

  it.each([
    ["getTransaction", (c: QashioClient) => c.getTransaction(TRANSACTION_ID), "GET", `/public/v1/erp/transactions/${TRANSACTION_ID}`],
    ["getErpCard", (c: QashioClient) => c.getErpCard(CARD_ID), "GET", `/public/v1/erp/cards/${CARD_ID}`],
    ["readErpCard", (c: QashioClient) => c.readErpCard(CARD_ID), "GET", `/public/v1/erp/cards/${CARD_ID}`],
    ["getStatementsByAccount", (c: QashioClient) => c.getStatementsByAccount(CARD_ID), "GET", `/public/v1/erp/statements/${CARD_ID}`],
    ["listCoreCards", (c: QashioClient) => c.listCoreCards(), "GET", "/public/v1/core/cards"],
    ["getCardBalance", (c: QashioClient) => c.getCardBalance({ last_four: "4821" }), "GET", "/public/v1/core/cards/balance"],
    ["issueCard", (c: QashioClient) => c.issueCard({ nickname: "x" }), "POST", "/public/v1/core/cards"],
    ["updateCard", (c: QashioClient) => c.updateCard(CARD_ID, { nickname: "x" }), "PUT", `/public/v1/core/cards/${CARD_ID}`],
    ["suspendCard", (c: QashioClient) => c.suspendCard(CARD_ID), "PUT", `/public/v1/core/cards/${CARD_ID}/change_status`],
    ["updateVelocityLimit", (c: QashioClient) => c.updateVelocityLimit(CARD_ID, { spend_limit_active: true }), "POST", `/public/v1/core/cards/${CARD_ID}/update_velocity_limit`],
    ["inviteUsers", (c: QashioClient) => c.inviteUsers(["a@example.test"]), "POST", "/public/v1/core/user_profiles/invite"],
  ])("%s names its own method and path on an answer without the success envelope (§4.1)", async (_name, call, method, path) => {
    const { client } = clientWith(scriptedFetch(json(200, { result: "ok" })));
    const error = await call(client).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidResponseError);
    expect(error).toMatchObject({ method, path, status: 200 });
    expect((error as Error).message.startsWith(`${method} ${path} answered 200 with a body that does not match its schema`)).toBe(true);
  });

  it("reports the drift of a single read, parsed whole, to onDrift too", async () => {
    const drift: DriftReport[] = [];
    const fetch = scriptedFetch(ok(erpCardDetailFixture({ status: "frozen_by_bank" })));
    const { client } = clientWith(fetch, { onDrift: (w) => drift.push(w) });
    expect((await client.getErpCard(CARD_ID)).status).toBe("frozen_by_bank");
    expect(drift).toEqual([expect.objectContaining({ field: "status", value: "frozen_by_bank" })]);
  });

  it("lists every failing field, dotted from the envelope down, and names the first in the message", async () => {
    const fetch = scriptedFetch(ok(transactionFixture({ id: 42, qashio_id: 7 })));
    const { client } = clientWith(fetch);
    const error = (await client.getTransaction(TRANSACTION_ID).catch((e: unknown) => e)) as InvalidResponseError;
    expect(error).toBeInstanceOf(InvalidResponseError);
    expect(error.issues.map((i) => i.path)).toEqual(["data.id", "data.qashio_id"]);
    expect(error.message).toMatch(/does not match its schema \(data\.id: /);
  });

  it("names the first failing field in the error's message, not only in its issues (logs show the message)", async () => {
    const fetch = scriptedFetch(json(200, { success: true, data: [] }));
    const { client } = clientWith(fetch);
    const error = (await client.listTransactions().catch((e: unknown) => e)) as InvalidResponseError;
    expect(error).toBeInstanceOf(InvalidResponseError);
    expect(error.message).toMatch(/does not match its schema \(pagination: /);
  });
});

describe("QashioClient iterators", () => {
  const ids = (n: number) => Array.from({ length: n }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`);

  it("walks every page of a pagination list while has_next", async () => {
    const all = ids(5);
    const fetch = routedFetch((call: RecordedCall) => {
      const page = Number(call.url.searchParams.get("page"));
      return listOf(all.slice((page - 1) * 2, page * 2).map((id) => transactionFixture({ id })), page, 3);
    });
    const { client } = clientWith(fetch);
    const seen: string[] = [];
    for await (const tx of client.iterateTransactions({ client_sync_status: "not_synced" })) seen.push(tx.id);
    expect(seen).toEqual(all);
    expect(fetch.calls.map((c) => c.url.searchParams.get("page"))).toEqual(["1", "2", "3"]);
    expect(fetch.calls.every((c) => c.url.searchParams.get("client_sync_status") === "not_synced")).toBe(true);
  });

  it("yields each item once when arrivals during the walk shift the pages of a newest-first list", async () => {
    // Pages of two; before page 2 is read, two transactions arrive on top: page 2 then repeats page 1.
    const [a, b, c, d, newer1, newer2] = ids(6) as [string, string, string, string, string, string];
    const lists = [[a, b, c, d], [newer1, newer2, a, b, c, d]];
    const fetch = routedFetch((call) => {
      const page = Number(call.url.searchParams.get("page"));
      const list = lists[Math.min(page - 1, 1)] as string[];
      const totalPages = Math.ceil(list.length / 2);
      return listOf(list.slice((page - 1) * 2, page * 2).map((id) => transactionFixture({ id })), page, totalPages);
    });
    const { client } = clientWith(fetch);
    const seen: string[] = [];
    for await (const tx of client.iterateTransactions({ client_sync_status: "not_synced" })) seen.push(tx.id);
    expect(seen).toEqual([a, b, c, d]);

    const cards = routedFetch((call) => {
      const page = Number(call.url.searchParams.get("page"));
      const cardIds = page === 1 ? ["CA1", "CA2"] : ["CA2", "CA3"];
      return ok({
        cards: cardIds.map((id) => coreCardFixture({ id })),
        page_info: { current_page: page, per_page: 2, total_entries: 4, total_pages: 2, next_page: page < 2 ? 2 : null, previous_page: null, offset: 0 },
      });
    });
    const cardIds: string[] = [];
    for await (const card of clientWith(cards).client.iterateCoreCards()) cardIds.push(card.id);
    expect(cardIds).toEqual(["CA1", "CA2", "CA3"]);
  });

  it("walks the core card list by page_info.next_page", async () => {
    const fetch = routedFetch((call) => {
      const page = Number(call.url.searchParams.get("page"));
      const next = page < 3 ? page + 1 : null;
      return ok({
        cards: [coreCardFixture({ id: `CA${page}` })],
        page_info: { current_page: page, per_page: 1, total_entries: 3, total_pages: 3, next_page: next, previous_page: page > 1 ? page - 1 : null, offset: page - 1 },
      });
    });
    const { client } = clientWith(fetch);
    const seen: string[] = [];
    for await (const card of client.iterateCoreCards()) seen.push(card.id);
    expect(seen).toEqual(["CA1", "CA2", "CA3"]);
  });

  it("stops a core card walk whose next_page does not advance", async () => {
    const fetch = routedFetch(() =>
      ok({ cards: [], page_info: { current_page: 1, per_page: 1, total_entries: 3, total_pages: 3, next_page: 1, previous_page: null, offset: 0 } }),
    );
    const { client } = clientWith(fetch);
    const walk = async () => {
      for await (const _ of client.iterateCoreCards()) void _;
    };
    const error = await walk().then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidResponseError);
    expect(error).toMatchObject({ message: "GET /public/v1/core/cards: page_info.next_page 1 does not advance past page 1", method: "GET", path: "/public/v1/core/cards", requestId: "req-0001" });
    expect(fetch.calls).toHaveLength(1);
  });

  it("stops a core card walk whose next_page skips a page, rather than leave that page's cards unread", async () => {
    // Page 1 says next_page 3: page 2's cards would go unread and page 3's invalid items be told as page 2's.
    const fetch = routedFetch((call) => {
      const page = Number(call.url.searchParams.get("page"));
      return ok({
        cards: [coreCardFixture({ id: `CA${page}` })],
        page_info: { current_page: page, per_page: 1, total_entries: 3, total_pages: 3, next_page: page === 1 ? 3 : null, previous_page: null, offset: page - 1 },
      });
    });
    const seen: string[] = [];
    const walk = async () => {
      for await (const card of clientWith(fetch).client.iterateCoreCards()) seen.push(card.id);
    };
    const error = await walk().then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidResponseError);
    expect(error).toMatchObject({ message: "GET /public/v1/core/cards: page_info.next_page 3 skips page 2", requestId: "req-0001", path: "/public/v1/core/cards" });
    expect(seen).toEqual(["CA1"]);
    expect(fetch.calls).toHaveLength(1);
  });

  it("names the page read in a core card walk's next_page that goes back, and the first page a far pointer skips", async () => {
    // Page 2 points back to 1 (not past page 1 alone); page 1 points to 4 (pages 2 and 3 unread, 2 the first).
    const cardsAnswering = (nextOf: (page: number) => number | null) =>
      routedFetch((call) => {
        const page = Number(call.url.searchParams.get("page"));
        return ok({ cards: [], page_info: { current_page: page, per_page: 1, total_entries: 4, total_pages: 4, next_page: nextOf(page), previous_page: null, offset: page - 1 } });
      });
    const errorOfWalk = (fetch: ReturnType<typeof routedFetch>) =>
      (async () => {
        for await (const _ of clientWith(fetch).client.iterateCoreCards()) void _;
      })().then(() => undefined, (e: unknown) => e);
    await expect(errorOfWalk(cardsAnswering((page) => (page === 1 ? 2 : 1)))).resolves.toMatchObject({
      message: "GET /public/v1/core/cards: page_info.next_page 1 does not advance past page 2",
    });
    await expect(errorOfWalk(cardsAnswering((page) => (page === 1 ? 4 : null)))).resolves.toMatchObject({
      message: "GET /public/v1/core/cards: page_info.next_page 4 skips page 2",
    });
  });

  it("stops a core card walk whose answer names another page than the one asked for, though its next_page advances", async () => {
    // Asked for page 2, the provider answers page 1's cards (current_page 1) with next_page 3: page 2's cards would go unread.
    const fetch = routedFetch((call) => {
      const page = Number(call.url.searchParams.get("page"));
      return ok({
        cards: [coreCardFixture({ id: "CA1" })],
        page_info: { current_page: 1, per_page: 1, total_entries: 3, total_pages: 3, next_page: page + 1, previous_page: null, offset: 0 },
      });
    });
    const seen: string[] = [];
    const walk = async () => {
      for await (const card of clientWith(fetch).client.iterateCoreCards({}, { maxPages: 5 })) seen.push(card.id);
    };
    const error = await walk().then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidResponseError);
    expect((error as Error).message).toBe("GET /public/v1/core/cards: asked for page 2 of a list, the provider answered page 1 and says more follow: it is not paging");
    expect(seen).toEqual(["CA1"]);
  });

  it("walks statements by account by the inner page and total_pages", async () => {
    const fetch = routedFetch((call) => {
      const page = Number(call.url.searchParams.get("page"));
      const month = `2024-0${page}`;
      return ok(
        statementsByAccountFixture({
          page,
          total_pages: 3,
          total: 3,
          data: [{ statement_period: { month, from: `${month}-01`, to: `${month}-28` }, opening_balance: 1, closing_balance: 2, currency: "AED" }],
        }),
      );
    });
    const { client } = clientWith(fetch);
    const months: string[] = [];
    for await (const period of client.iterateStatementsByAccount(CARD_ID)) months.push(period.statement_period.month);
    expect(months).toEqual(["2024-01", "2024-02", "2024-03"]);
  });

  it("ends a walk on an invalid item unless onInvalid takes it", async () => {
    const fetch = routedFetch(() => listOf([transactionFixture(), transactionFixture({ id: null })]));
    const { client } = clientWith(fetch);
    const strict = async () => {
      for await (const _ of client.iterateTransactions()) void _;
    };
    await expect(strict()).rejects.toBeInstanceOf(InvalidResponseError);

    const setAside: number[] = [];
    const seen: unknown[] = [];
    for await (const tx of client.iterateTransactions({}, { onInvalid: (item) => setAside.push(item.index) })) seen.push(tx);
    expect(seen).toHaveLength(1);
    expect(setAside).toEqual([1]);
  });

  it("carries the failing item's schema issues on the error that ends a walk without onInvalid", async () => {
    const fetch = routedFetch(() => listOf([transactionFixture(), transactionFixture({ id: null })]));
    const walk = async () => {
      for await (const _ of clientWith(fetch).client.iterateTransactions()) void _;
    };
    const error = await walk().then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidResponseError);
    expect((error as InvalidResponseError).issues).toContainEqual(expect.objectContaining({ path: "id" }));
  });

  const walks = [
    ["iterateTransactions", (c: QashioClient, options?: WalkOptions) => c.iterateTransactions({ client_sync_status: "not_synced", page_size: 1 }, options), "/public/v1/erp/transactions", transactionFixture],
    ["iterateErpCards", (c: QashioClient, options?: WalkOptions) => c.iterateErpCards({ status: "active", page_size: 1 }, options), "/public/v1/erp/cards", erpCardFixture],
    ["iteratePoolAccounts", (c: QashioClient, options?: WalkOptions) => c.iteratePoolAccounts({ status: "all", page_size: 1 }, options), "/public/v1/erp/pool_accounts", poolAccountFixture],
    ["iterateBankAccounts", (c: QashioClient, options?: WalkOptions) => c.iterateBankAccounts({ remote_name: "emirates", page_size: 1 }, options), "/public/v1/erp/bank_accounts", bankAccountFixture],
    ["iterateChartOfAccounts", (c: QashioClient, options?: WalkOptions) => c.iterateChartOfAccounts({ account_currency: "AED", page_size: 1 }, options), "/public/v1/erp/chart_of_accounts", chartOfAccountFixture],
    ["iterateTaxRates", (c: QashioClient, options?: WalkOptions) => c.iterateTaxRates({ remote_name: "vat", page_size: 1 }, options), "/public/v1/erp/tax_rates", taxRateFixture],
    ["iterateSuppliers", (c: QashioClient, options?: WalkOptions) => c.iterateSuppliers({ remote_name: "careem", page_size: 1 }, options), "/public/v1/erp/suppliers", supplierFixture],
    ["iterateStatements", (c: QashioClient, options?: WalkOptions) => c.iterateStatements({ month: "2024-04", page_size: 1 }, options), "/public/v1/erp/statements", statementSummaryFixture],
  ] as const;

  /** A second item told apart by its id where it has one (the walks that yield each id once). */
  const secondOf = (fixture: (overrides?: Readonly<Record<string, unknown>>) => object): object => {
    const first: Readonly<Record<string, unknown>> = { ...fixture() };
    return "id" in first ? fixture({ id: String(first.id).replace(/.$/, (last) => (last === "2" ? "3" : "2")) }) : fixture();
  };

  it.each(walks)("%s walks its list with the query on every page and yields the items of each", async (_name, walk, path, fixture) => {
    const first = fixture();
    const second = secondOf(fixture);
    const fetch = routedFetch((call) => {
      const page = Number(call.url.searchParams.get("page"));
      return ok([page === 1 ? first : second], { pagination: pagination(page, 2, 1) });
    });
    const items: unknown[] = [];
    for await (const item of walk(clientWith(fetch).client)) items.push(item);
    expect(items).toHaveLength(2);
    expect(fetch.calls.map((c) => c.url.pathname)).toEqual([path, path]);
    expect(fetch.calls.map((c) => c.url.searchParams.get("page"))).toEqual(["1", "2"]);
    const queryOf = (c: RecordedCall) => [...c.url.searchParams].filter(([key]) => key !== "page");
    expect(queryOf(fetch.calls[1]!)).toEqual(queryOf(fetch.calls[0]!));
    expect(queryOf(fetch.calls[0]!)).toContainEqual(["page_size", "1"]);
    expect(queryOf(fetch.calls[0]!)).toHaveLength(2);
  });

  it.each(walks.filter(([name]) => name !== "iterateStatements"))(
    "%s yields an item once when an arrival shifts it onto the next page",
    async (_name, walk, _path, fixture) => {
      const [first, second] = [fixture(), secondOf(fixture)];
      const fetch = routedFetch((call) => {
        const page = Number(call.url.searchParams.get("page"));
        return ok(page === 1 ? [first] : [first, second], { pagination: pagination(page, 2) });
      });
      const items: unknown[] = [];
      for await (const item of walk(clientWith(fetch).client)) items.push(item);
      expect(items).toHaveLength(2);
    },
  );

  it.each(walks)("%s names its own list in a walk's errors, whatever list the options carry", async (_name, walk, path) => {
    const fetch = routedFetch((call) => listOf([], Number(call.url.searchParams.get("page")), 1_000));
    const run = async () => {
      for await (const _ of walk(clientWith(fetch).client, { maxPages: 1, list: { method: "GET", path: "/elsewhere" } })) void _;
    };
    await expect(run()).rejects.toMatchObject({ message: `GET ${path}: pagination did not end within 1 pages`, path });
  });

  it("keeps the walk's page over a page in a plain-JS caller's query", async () => {
    const fetch = routedFetch((call) => listOf([], Number(call.url.searchParams.get("page")), 2));
    for await (const _ of clientWith(fetch).client.iterateTransactions({ page: 7 } as Parameters<QashioClient["iterateTransactions"]>[0])) void _;
    expect(fetch.calls.map((c) => c.url.searchParams.get("page"))).toEqual(["1", "2"]);
  });

  it("sends the walk's query with every page of the ERP cards, core cards and statements by account", async () => {
    const erpCards = routedFetch(() => listOf([erpCardFixture()]));
    for await (const _ of clientWith(erpCards).client.iterateErpCards({ status: "active" })) void _;
    expect(erpCards.calls.map((c) => c.url.searchParams.get("status"))).toEqual(["active"]);

    const pageInfo = { current_page: 1, per_page: 20, total_entries: 1, total_pages: 1, next_page: null, previous_page: null, offset: 0 };
    const coreCards = routedFetch(() => ok({ cards: [coreCardFixture()], page_info: pageInfo }));
    for await (const _ of clientWith(coreCards).client.iterateCoreCards({ page_size: 5 })) void _;
    expect(coreCards.calls.map((c) => c.url.searchParams.get("page_size"))).toEqual(["5"]);

    const statements = routedFetch(() => ok(statementsByAccountFixture({ page: 1, total_pages: 1, total: 0, data: [] })));
    for await (const _ of clientWith(statements).client.iterateStatementsByAccount(CARD_ID, { page_size: 6 })) void _;
    expect(statements.calls.map((c) => c.url.searchParams.get("page_size"))).toEqual(["6"]);
  });

  it("starts a walk of one account's statements at startPage", async () => {
    const fetch = routedFetch((call) => ok(statementsByAccountFixture({ page: Number(call.url.searchParams.get("page")), total_pages: 3, total: 0, data: [] })));
    const { client } = clientWith(fetch);
    for await (const _ of client.iterateStatementsByAccount(CARD_ID, {}, { startPage: 2 })) void _;
    expect(fetch.calls.map((c) => c.url.searchParams.get("page"))).toEqual(["2", "3"]);
  });

  it("starts a walk at startPage", async () => {
    const fetch = routedFetch((call) => listOf([], Number(call.url.searchParams.get("page")), 4));
    const { client } = clientWith(fetch);
    for await (const _ of client.iterateSuppliers({}, { startPage: 3 })) void _;
    expect(fetch.calls.map((c) => c.url.searchParams.get("page"))).toEqual(["3", "4"]);
  });

  it("names the provider's page of an invalid item in a walk that starts at startPage", async () => {
    const fetch = routedFetch((call) => {
      const page = Number(call.url.searchParams.get("page"));
      return listOf(page === 4 ? [transactionFixture({ id: null })] : [transactionFixture()], page, 4);
    });
    const { client } = clientWith(fetch);
    const pages: number[] = [];
    for await (const _ of client.iterateTransactions({}, { startPage: 3, onInvalid: (_item, page) => pages.push(page) })) void _;
    expect(pages).toEqual([4]);
    const strict = async () => {
      for await (const _ of client.iterateTransactions({}, { startPage: 3 })) void _;
    };
    await expect(strict()).rejects.toThrow("GET /public/v1/erp/transactions: item 0 of page 4 does not match its schema");
  });

  it("stops a has_next walk at once when the provider answers another page than the one asked for (it ignores page)", async () => {
    const [a, b] = ids(2) as [string, string];
    const fetch = routedFetch(() => listOf([transactionFixture({ id: a }), transactionFixture({ id: b })], 1, 3));
    const { client } = clientWith(fetch);
    const seen: string[] = [];
    const walk = async () => {
      for await (const tx of client.iterateTransactions({}, { maxPages: 50 })) seen.push(tx.id);
    };
    const error = await walk().then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidResponseError);
    expect(error).toMatchObject({
      message: "GET /public/v1/erp/transactions: asked for page 2 of a list, the provider answered page 1 and says more follow: it is not paging",
      requestId: "req-0001",
      method: "GET",
      path: "/public/v1/erp/transactions",
    });
    expect(fetch.calls).toHaveLength(2);
    expect(seen).toEqual([a, b]);
  });

  // Of two pages, page 2 asked is the last: the answer, page 1 of 2, still says more follow, so it ends no walk.
  it.each([3, 2])("yields no period twice when statements by account of %i pages answer page 1 whatever page is asked for", async (totalPages) => {
    const fetch = routedFetch(() =>
      ok(
        statementsByAccountFixture({
          page: 1,
          total_pages: totalPages,
          total: totalPages,
          data: [{ statement_period: { month: "2024-01", from: "2024-01-01", to: "2024-01-31" }, opening_balance: 1, closing_balance: 2, currency: "AED" }],
        }),
      ),
    );
    const { client } = clientWith(fetch);
    const months: string[] = [];
    const walk = async () => {
      for await (const period of client.iterateStatementsByAccount(CARD_ID)) months.push(period.statement_period.month);
    };
    await expect(walk()).rejects.toThrow(
      "GET /public/v1/erp/statements/{statementAccountId}: asked for page 2 of a list, the provider answered page 1 and says more follow: it is not paging",
    );
    expect(months).toEqual(["2024-01"]);
    expect(fetch.calls).toHaveLength(2);
  });

  it("stops a walk whose answer is a page past the one asked for, even its last (no list that shrank answers so)", async () => {
    const [a, c] = ids(3) as [string, string];
    // Asked for page 2 of three, the provider answers page 3, the last: page 2's items would go unread.
    const fetch = routedFetch((call) => (Number(call.url.searchParams.get("page")) === 1 ? listOf([transactionFixture({ id: a })], 1, 3) : listOf([transactionFixture({ id: c })], 3, 3)));
    const seen: string[] = [];
    const walk = async () => {
      for await (const tx of clientWith(fetch).client.iterateTransactions()) seen.push(tx.id);
    };
    await expect(walk()).rejects.toThrow("GET /public/v1/erp/transactions: asked for page 2 of a list, the provider answered page 3, past it: it is not paging");
    expect(seen).toEqual([a]);

    const statements = routedFetch((call) => ok(statementsByAccountFixture({ page: Number(call.url.searchParams.get("page")) + 1, total_pages: 2, total: 2, data: [] })));
    const walkStatements = async () => {
      for await (const _ of clientWith(statements).client.iterateStatementsByAccount(CARD_ID)) void _;
    };
    await expect(walkStatements()).rejects.toThrow("asked for page 1 of a list, the provider answered page 2, past it: it is not paging");
  });

  it("ends a has_next walk without error when a list that shrank under it answers its last page for a page past it", async () => {
    const [a, b, c] = ids(3) as [string, string, string];
    const fetch = routedFetch((call) => {
      const page = Number(call.url.searchParams.get("page"));
      // Page 1 of three; by page 2 the list holds two pages, and the provider answers its last for any page past it.
      return page === 1 ? listOf([transactionFixture({ id: a })], 1, 3) : listOf([transactionFixture({ id: b }), transactionFixture({ id: c })], 1, 1);
    });
    const { client } = clientWith(fetch);
    const seen: string[] = [];
    for await (const tx of client.iterateTransactions()) seen.push(tx.id);
    expect(seen).toEqual([a, b, c]);
  });

  it("walks a pagination list by has_next alone, not by total_pages (spec §8.1: clients walk pages with has_next)", async () => {
    // has_next false on page 1 of a total_pages 3 ends the walk; has_next true on page 2 of a total_pages 2 goes on.
    const blocks: Record<number, Record<string, unknown>> = {
      1: { ...pagination(1, 3), has_next: true },
      2: { ...pagination(2, 2), has_next: true },
      3: { ...pagination(3, 3), has_next: false },
    };
    const goesOn = routedFetch((call) => ok([], { pagination: blocks[Number(call.url.searchParams.get("page"))] }));
    for await (const _ of clientWith(goesOn).client.iterateSuppliers()) void _;
    expect(goesOn.calls.map((c) => c.url.searchParams.get("page"))).toEqual(["1", "2", "3"]);

    const ends = routedFetch(() => ok([], { pagination: { ...pagination(1, 3), has_next: false } }));
    for await (const _ of clientWith(ends).client.iterateSuppliers()) void _;
    expect(ends.calls).toHaveLength(1);
  });

  it("ends a walk on a page holding an invalid item before yielding any item of that page", async () => {
    const [a, b] = ids(2) as [string, string];
    const fetch = routedFetch(() => listOf([transactionFixture({ id: a }), transactionFixture({ id: null }), transactionFixture({ id: b })]));
    const seen: string[] = [];
    const walk = async () => {
      for await (const tx of clientWith(fetch).client.iterateTransactions()) seen.push(tx.id);
    };
    await expect(walk()).rejects.toThrow("GET /public/v1/erp/transactions: item 1 of page 1 does not match its schema");
    expect(seen).toEqual([]);

    const events: string[] = [];
    for await (const tx of clientWith(fetch).client.iterateTransactions({}, { onInvalid: (item) => events.push(`invalid ${item.index}`) })) events.push(tx.id);
    expect(events).toEqual(["invalid 1", a, b]);
  });

  it("keeps the walk's page over a page in a plain-JS caller's query on the core card and statements-by-account walks", async () => {
    const pageInfo = (page: number) => ({ current_page: page, per_page: 1, total_entries: 2, total_pages: 2, next_page: page < 2 ? page + 1 : null, previous_page: null, offset: 0 });
    const cards = routedFetch((call) => ok({ cards: [], page_info: pageInfo(Number(call.url.searchParams.get("page"))) }));
    for await (const _ of clientWith(cards).client.iterateCoreCards({ page: 7 } as Parameters<QashioClient["iterateCoreCards"]>[0])) void _;
    expect(cards.calls.map((c) => c.url.searchParams.get("page"))).toEqual(["1", "2"]);

    const statements = routedFetch((call) => ok(statementsByAccountFixture({ page: Number(call.url.searchParams.get("page")), total_pages: 2, total: 0, data: [] })));
    for await (const _ of clientWith(statements).client.iterateStatementsByAccount(CARD_ID, { page: 7 } as Parameters<QashioClient["iterateStatementsByAccount"]>[1])) void _;
    expect(statements.calls.map((c) => c.url.searchParams.get("page"))).toEqual(["1", "2"]);
  });

  it("carries the answer's request id on the error of a walk given no list to name", async () => {
    const walk = async () => {
      const pages = pagesByHasNext(async () => ({ requestId: "req-9", pagination: { page: 1, page_size: 1, total_records: 3, total_pages: 3, has_next: true, has_previous: false } }));
      for await (const _ of pages) void _;
    };
    const error = await walk().then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidResponseError);
    expect(error).toMatchObject({ message: "asked for page 2 of a list, the provider answered page 1 and says more follow: it is not paging", requestId: "req-9" });
  });

  it("ends a statements-by-account walk without error when an account that lost periods under it answers its last page for a page past it", async () => {
    const period = (month: string) => ({ statement_period: { month, from: `${month}-01`, to: `${month}-28` }, opening_balance: 1, closing_balance: 2, currency: "AED" });
    const fetch = routedFetch((call) =>
      // Page 1 of two; by page 2 the account holds one page, and the provider answers it for any page past it.
      Number(call.url.searchParams.get("page")) === 1
        ? ok(statementsByAccountFixture({ page: 1, total_pages: 2, total: 2, data: [period("2024-02")] }))
        : ok(statementsByAccountFixture({ page: 1, total_pages: 1, total: 1, data: [period("2024-01")] })),
    );
    const months: string[] = [];
    for await (const each of clientWith(fetch).client.iterateStatementsByAccount(CARD_ID)) months.push(each.statement_period.month);
    expect(months).toEqual(["2024-02", "2024-01"]);
    expect(fetch.calls).toHaveLength(2);
  });

  it("stops at maxPages when the provider never says the last page", async () => {
    const fetch = routedFetch((call) => listOf([], Number(call.url.searchParams.get("page")), 1_000_000));
    const { client } = clientWith(fetch);
    const walk = async () => {
      for await (const _ of client.iterateSuppliers({}, { maxPages: 4 })) void _;
    };
    await expect(walk()).rejects.toThrow("GET /public/v1/erp/suppliers: pagination did not end within 4 pages");
    expect(fetch.calls).toHaveLength(4);
  });

  it("stops at 10 000 pages by default when the provider never says the last page", async () => {
    let fetched = 0;
    const endless = pagesByHasNext(async (page) => {
      fetched += 1;
      return { pagination: { page, page_size: 1, total_records: 1_000_000, total_pages: 1_000_000, has_next: true, has_previous: page > 1 } };
    });
    const walk = async () => {
      for await (const _ of endless) void _;
    };
    await expect(walk()).rejects.toThrow(/10000 pages/);
    expect(fetched).toBe(10_000);
  });
});
