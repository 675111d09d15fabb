import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { HttpCore, realSleep, type HttpRequest, type RetryEvent, type RetryMode } from "../../shared/qashio/http.js";
import { redactSecrets } from "../../shared/qashio/redact.js";
import { parseRetryAfter } from "../../shared/qashio/retry-after.js";
import { StaticTokenProvider, type TokenProvider } from "../../shared/qashio/auth/token-provider.js";
import {
  BadRequestError,
  DeadlineExceededError,
  ForbiddenError,
  InvalidResponseError,
  NetworkError,
  NotFoundError,
  RateLimitedError,
  RetryDeferredError,
  ServerError,
  TimeoutError,
  QashioError,
  UnauthorizedError,
} from "../../shared/qashio/errors.js";
import { captureLogger, fail, fakeClock, hangingReply, json, manualClock, ok, REQUEST_ID, scriptedFetch } from "./helpers.js";

const BASE_URL = "https://api.example.test";

function core(fetch: ReturnType<typeof scriptedFetch>, extra: Partial<ConstructorParameters<typeof HttpCore>[0]> = {}) {
  const clock = fakeClock();
  const tokenProvider = new StaticTokenProvider(["token-1", "token-2"]);
  const logger = captureLogger();
  const http = new HttpCore({ baseUrl: BASE_URL, fetch, clock, tokenProvider, logger, retry: { random: () => 0.5 }, ...extra });
  return { http, clock, tokenProvider, logger };
}

const read = (retry: RetryMode = "idempotent"): HttpRequest => ({
  method: "GET",
  path: "/public/v1/erp/transactions",
  query: { page: 1, client_sync_status: "not_synced", exclude_from_sync: false, employee_id: undefined },
  auth: "bearer",
  retry,
});

afterEach(() => {
  vi.useRealTimers();
});

describe("HttpCore requests", () => {
  it("sends the bearer token, accept header and the query without undefined values", async () => {
    const fetch = scriptedFetch(ok([]));
    const { http } = core(fetch);
    const response = await http.request(read());
    expect(response.status).toBe(200);
    const call = fetch.calls[0]!;
    expect(call.headers.authorization).toBe("Bearer token-1");
    expect(call.headers.accept).toBe("application/json");
    expect(call.headers["content-type"]).toBeUndefined();
    expect(call.url.pathname).toBe("/public/v1/erp/transactions");
    expect([...call.url.searchParams]).toEqual([
      ["page", "1"],
      ["client_sync_status", "not_synced"],
      ["exclude_from_sync", "false"],
    ]);
  });

  it("sends a body as JSON, saying so in its content-type", async () => {
    const fetch = scriptedFetch(json(201, { success: true, data: {} }));
    await core(fetch).http.request({ method: "POST", path: "/public/v1/core/cards", body: { name: "Ops" }, auth: "bearer", retry: "never" });
    expect(fetch.calls[0]).toMatchObject({ headers: { "content-type": "application/json" }, body: { name: "Ops" } });
    // No query: no "?" either.
    expect(fetch.calls[0]?.url.href).toBe(`${BASE_URL}/public/v1/core/cards`);
  });

  it("takes the request id from meta.request_id of the body", async () => {
    const { http } = core(scriptedFetch(ok([])));
    expect((await http.request(read())).requestId).toBe(REQUEST_ID);
  });

  it("takes the request id from the x-request-id header when the body has none", async () => {
    const { http } = core(scriptedFetch(json(200, { success: true, data: [] }, { "x-request-id": "hdr-42" })));
    expect((await http.request(read())).requestId).toBe("hdr-42");
  });

  it("takes the first id of an x-request-id header a proxy added a second one to", async () => {
    const { http } = core(scriptedFetch(json(200, { success: true, data: [] }, { "x-request-id": "hdr-42, proxy-9" })));
    expect((await http.request(read())).requestId).toBe("hdr-42");
  });

  it("keeps a request id of up to 128 printable characters, and drops a longer one or one with spaces or control characters", async () => {
    const idOf = async (id: string) => (await core(scriptedFetch(json(200, { success: true, data: [] }, { "x-request-id": id }))).http.request(read())).requestId;
    const metaIdOf = async (id: string) => (await core(scriptedFetch(json(200, { success: true, data: [], meta: { request_id: id } }))).http.request(read())).requestId;
    expect(await idOf("a".repeat(128))).toBe("a".repeat(128));
    expect(await idOf("a".repeat(129))).toBeUndefined();
    expect(await metaIdOf("req id")).toBeUndefined();
    expect(await metaIdOf("req\u0007id")).toBeUndefined();
    expect(await metaIdOf("r\u00e9q")).toBeUndefined();
    expect(await metaIdOf("req-\u007f")).toBeUndefined();
    // The first id that passes, when a proxy put a bad one first.
    expect(await idOf(`${"b".repeat(129)}, hdr-2`)).toBe("hdr-2");
    const error = await core(scriptedFetch(fail(404, [], { "x-request-id": "x".repeat(129) }, null))).http.request(read()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotFoundError);
    expect((error as NotFoundError).requestId).toBeUndefined();
  });

  it("puts the request id of the header on errors whose body has no meta", async () => {
    const { http } = core(scriptedFetch(fail(404, [], { "x-request-id": "hdr-404" }, null)));
    const error = await http.request(read()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotFoundError);
    expect((error as NotFoundError).requestId).toBe("hdr-404");
  });

  it("prefers meta.request_id to an x-request-id header that differs (a proxy's own id), on a success and on an error", async () => {
    const { http } = core(scriptedFetch(json(200, { success: true, data: [], meta: { request_id: "req-body-2" } }, { "x-request-id": "proxy-9" })));
    expect((await http.request(read())).requestId).toBe("req-body-2");
    const error = await core(scriptedFetch(fail(404, [], { "x-request-id": "proxy-9" }))).http.request(read()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotFoundError);
    expect((error as NotFoundError).requestId).toBe(REQUEST_ID);
  });

  it("sends no query parameter for a null value", async () => {
    const fetch = scriptedFetch(ok([]));
    const { http } = core(fetch);
    await http.request({ ...read(), query: { page: 1, employee_id: null } });
    expect([...fetch.calls[0]!.url.searchParams]).toEqual([["page", "1"]]);
  });

  it.each(["/", "//"])("joins a base URL given with a trailing %s to the path without a double slash", async (trailing) => {
    const fetch = scriptedFetch(ok([]));
    const { http } = core(fetch, { baseUrl: `${BASE_URL}${trailing}` });
    await http.request(read());
    expect(fetch.calls[0]!.url.href).toMatch(/^https:\/\/api\.example\.test\/public\/v1\/erp\/transactions\?/);
  });

  it("takes the request id from the x-request-id header when meta.request_id is no string, on a success and on an error", async () => {
    const body = { success: true, data: [], meta: { request_id: 42, timestamp: "2025-01-15T12:00:00Z" } };
    expect((await core(scriptedFetch(json(200, body, { "x-request-id": "hdr-8" }))).http.request(read())).requestId).toBe("hdr-8");
    const failure = { status_code: 404, message: "missing", errors: [], meta: { request_id: 42 } };
    const error = await core(scriptedFetch(json(404, failure, { "x-request-id": "hdr-9" }))).http.request(read()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotFoundError);
    expect((error as NotFoundError).requestId).toBe("hdr-9");
  });

  it("takes the request id from the x-request-id header when meta.request_id is empty", async () => {
    const body = { success: true, data: [], meta: { request_id: "", timestamp: "2025-01-15T12:00:00Z" } };
    const { http } = core(scriptedFetch(json(200, body, { "x-request-id": "hdr-7" })));
    expect((await http.request(read())).requestId).toBe("hdr-7");
  });

  it("does not take a 3xx answer for a success", async () => {
    const fetch = scriptedFetch(json(300, { success: true, data: [] }), ok([]));
    const { http } = core(fetch);
    const error = await http.request(read()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QashioError);
    expect(error).toMatchObject({ status: 300 });
    expect(fetch.calls).toHaveLength(1);
  });

  it("redacts the token-endpoint credentials a request body carries from an envelope's free text", async () => {
    const clientSecret = "cs-body-secret-41";
    const refreshToken = "rt-body-secret-42";
    const body = { status_code: 400, message: `bad ${clientSecret}`, errors: [{ field: null, code: "INVALID", message: `reused ${refreshToken}` }] };
    const { http } = core(scriptedFetch(json(400, body)));
    const request: HttpRequest = {
      method: "POST",
      path: "/oauth2/token",
      body: { client_secret: clientSecret, refresh_token: refreshToken },
      auth: "none",
      retry: "never",
    };
    const error = (await http.request(request).catch((e: unknown) => e)) as BadRequestError;
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.providerText).toEqual({ message: "bad ***", errors: ["reused ***"] });
  });

  it("redacts every bearer token the request sent from an answer quoting them, the one a 401 rejected too", async () => {
    const body = { status_code: 400, message: "bad token-1", errors: [{ field: null, code: "INVALID", message: "and token-2" }] };
    const { http } = core(scriptedFetch(fail(401), json(400, body)));
    const error = (await http.request(read()).catch((e: unknown) => e)) as BadRequestError;
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.providerText).toEqual({ message: "bad ***", errors: ["and ***"] });
  });

  it("answers a 2xx with an empty or blank body as body undefined, not as a body that is not JSON", async () => {
    for (const text of ["", " \r\n"]) {
      const { http } = core(scriptedFetch(new Response(text, { status: 200 })));
      expect((await http.request(read())).body, JSON.stringify(text)).toBeUndefined();
    }
  });

  it("rejects a 2xx body that is not JSON with InvalidResponseError carrying the call's method, path and status", async () => {
    const { http } = core(scriptedFetch(new Response("<html>oops</html>", { status: 200 })));
    const error = await http.request(read()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidResponseError);
    // Logs carry the error's fields: without them the failure names no call there.
    expect(error).toMatchObject({ method: "GET", path: "/public/v1/erp/transactions", status: 200 });
  });

  it("answers a 2xx body that is not JSON as body undefined under anyBody, keeping its x-request-id", async () => {
    const { http } = core(scriptedFetch(new Response("accepted", { status: 200, headers: { "x-request-id": "req-ack" } })));
    await expect(http.request({ ...read(), anyBody: true })).resolves.toEqual({ status: 200, body: undefined, requestId: "req-ack" });
  });

  it("drops an x-request-id quoting the bearer token from a 2xx body that is not JSON, under anyBody or not", async () => {
    const answer = () => new Response("accepted", { status: 200, headers: { "x-request-id": "req-token-1" } });
    const accepted = await core(scriptedFetch(answer())).http.request({ ...read(), anyBody: true });
    expect(accepted).toEqual({ status: 200, body: undefined, requestId: undefined });
    const error = await core(scriptedFetch(answer())).http.request(read()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidResponseError);
    // The status is kept: a caller tells a 2xx it could not read from a failed answer by it.
    expect(error).toMatchObject({ status: 200, requestId: undefined });
  });

  it("names the Content-Encoding a 2xx body that is not JSON came in (a proxy compressing on its own)", async () => {
    const { http } = core(scriptedFetch(new Response("\u001f\u008b", { status: 200, headers: { "content-encoding": "gzip" } })));
    await expect(http.request(read())).rejects.toThrow(/answered 200 with a body that is not JSON: it came in Content-Encoding gzip/);
  });
});

describe("HttpCore redirects", () => {
  it("does not follow a 3xx with global fetch: the Location is never requested, so the bearer token goes nowhere else", async () => {
    const seen: { url: string; headers: IncomingHttpHeaders }[] = [];
    const server = createServer((req, res) => {
      seen.push({ url: req.url ?? "", headers: req.headers });
      if (req.url?.startsWith("/public/")) res.writeHead(302, { location: "/elsewhere" }).end();
      else res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ success: true, data: [] }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const http = new HttpCore({ baseUrl: `http://127.0.0.1:${port}`, fetch: globalThis.fetch, tokenProvider: new StaticTokenProvider("token-1") });
      await expect(http.request(read())).rejects.toMatchObject({ status: 302 });
      expect(seen.map((each) => each.url)).toEqual(["/public/v1/erp/transactions?page=1&client_sync_status=not_synced&exclude_from_sync=false"]);
      expect(seen[0]?.headers.authorization).toBe("Bearer token-1");
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe("HttpCore status mapping without retry", () => {
  it.each([
    [400, BadRequestError],
    [403, ForbiddenError],
    [404, NotFoundError],
  ])("does not retry a %i and throws its typed error with the envelope's errors", async (status, type) => {
    const fetch = scriptedFetch(fail(status, [{ field: "card_last_four", code: "INVALID_ENUM", message: "bad" }]), ok([]));
    const { http, clock } = core(fetch);
    const error = await http.request(read()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(type);
    expect(fetch.calls).toHaveLength(1);
    expect(clock.sleeps).toEqual([]);
    expect(error).toMatchObject({
      // Named as its class in logs, which carry the name, not the prototype.
      name: type.name,
      status,
      requestId: REQUEST_ID,
      method: "GET",
      path: "/public/v1/erp/transactions",
      errors: [{ field: "card_last_four", code: "INVALID_ENUM", message: "" }],
    });
    expect((error as BadRequestError).providerText?.errors).toEqual(["bad"]);
  });

  it.each([408, 409, 413, 422])("does not retry a %i, which spec §7 gives no action for, and throws a plain QashioError carrying it", async (status) => {
    const fetch = scriptedFetch(fail(status), ok([]));
    const { http, clock } = core(fetch);
    const error = await http.request(read()).catch((e: unknown) => e);
    expect((error as QashioError).constructor).toBe(QashioError);
    // Named as such in logs, not as a bare Error.
    expect(error).toMatchObject({ name: "QashioError", status, method: "GET", path: "/public/v1/erp/transactions" });
    expect(fetch.calls).toHaveLength(1);
    expect(clock.sleeps).toEqual([]);
  });

  it("keeps the query string out of the error's path and message", async () => {
    const { http } = core(scriptedFetch(fail(400)));
    const error = (await http.request(read()).catch((e: unknown) => e)) as BadRequestError;
    expect(error.path).not.toContain("?");
    expect(error.message).not.toContain("not_synced");
  });
});

describe("HttpCore 401 handling", () => {
  it("refreshes once and replays once with the new token", async () => {
    const fetch = scriptedFetch(fail(401), ok([]));
    const { http, tokenProvider, clock, logger } = core(fetch);
    await http.request(read());
    expect(tokenProvider.refreshCount).toBe(1);
    expect(fetch.calls.map((c) => c.headers.authorization)).toEqual(["Bearer token-1", "Bearer token-2"]);
    expect(clock.sleeps).toEqual([]);
    expect(logger.lines).toContainEqual(expect.objectContaining({ level: "debug", message: "provider answered 401; refreshing the token and replaying once" }));
  });

  it("replays with the token refreshAfterUnauthorized returned, not with a new getAccessToken", async () => {
    const fetch = scriptedFetch(fail(401), ok([]));
    const rejected: string[] = [];
    const tokenProvider: TokenProvider = {
      getAccessToken: async () => "token-current",
      refreshAfterUnauthorized: async (token) => {
        rejected.push(token);
        return "token-refreshed";
      },
    };
    const { http } = core(fetch, { tokenProvider });
    await http.request(read());
    expect(rejected).toEqual(["token-current"]);
    expect(fetch.calls.map((c) => c.headers.authorization)).toEqual(["Bearer token-current", "Bearer token-refreshed"]);
  });

  it("bounds getting the token, and its refresh after the 401, by the request's deadline and attempt timeout", async () => {
    const asked: unknown[] = [];
    const tokenProvider: TokenProvider = {
      getAccessToken: async (options) => {
        asked.push(["get", options]);
        return "token-1";
      },
      refreshAfterUnauthorized: async (_rejected, options) => {
        asked.push(["refresh", options]);
        return "token-2";
      },
    };
    const { http, clock } = core(scriptedFetch(fail(401), ok([])), { tokenProvider, timeoutMs: 5_000 });
    const deadline = clock.now() + 60_000;
    await http.request({ ...read(), deadline });
    expect(asked).toEqual([
      ["get", { deadline, requestTimeoutMs: 5_000 }],
      ["refresh", { deadline, requestTimeoutMs: 5_000 }],
    ]);
  });

  it("with a deadline, neither refreshes nor replays after a 401 when the replay could not finish before it", async () => {
    const clock = fakeClock();
    // The 401 comes 6 s in: 9 s of the call's 15 s are left for a 10 s attempt.
    const fetch = scriptedFetch(() => {
      clock.advance(6_000);
      return fail(401);
    });
    const { http, tokenProvider } = core(fetch, { clock, timeoutMs: 10_000 });
    const error = await http.request({ ...read(), deadline: clock.now() + 15_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect((error as Error).message).toMatch(/was not retried: .*\(last attempt: .*401/);
    expect((error as Error).cause).toBeInstanceOf(UnauthorizedError);
    expect(tokenProvider.refreshCount).toBe(0);
    expect(fetch.calls).toHaveLength(1);
  });

  it("gives up with UnauthorizedError when the replay is answered 401 too", async () => {
    const fetch = scriptedFetch(fail(401), fail(401), ok([]));
    const { http, tokenProvider } = core(fetch);
    await expect(http.request(read())).rejects.toBeInstanceOf(UnauthorizedError);
    expect(tokenProvider.refreshCount).toBe(1);
    expect(fetch.calls).toHaveLength(2);
  });

  it("sends no bearer request at all without a token provider: UnauthorizedError, not a request without Authorization", async () => {
    const fetch = scriptedFetch(ok([]));
    const http = new HttpCore({ baseUrl: BASE_URL, fetch, clock: fakeClock() });
    const error = await http.request(read()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnauthorizedError);
    expect((error as Error).message).toContain("no token provider configured");
    expect(fetch.calls).toHaveLength(0);
  });

  it("neither refreshes nor replays a request sent with a token of its own (auth: { token })", async () => {
    const fetch = scriptedFetch(fail(401), ok([]));
    const { http, tokenProvider } = core(fetch);
    await expect(http.request({ ...read(), auth: { token: "given-token" } })).rejects.toBeInstanceOf(UnauthorizedError);
    expect(tokenProvider.refreshCount).toBe(0);
    expect(fetch.calls.map((c) => c.headers.authorization)).toEqual(["Bearer given-token"]);
  });

  it("replays card issuance after a 401, since the provider rejected it before processing", async () => {
    const fetch = scriptedFetch(fail(401), json(201, { success: true, data: {} }));
    const { http } = core(fetch);
    await http.request({ method: "POST", path: "/public/v1/core/cards", body: {}, auth: "bearer", retry: "never" });
    expect(fetch.calls).toHaveLength(2);
  });
});

describe("HttpCore retries left to the caller (callerRetries)", () => {
  const ack = (failedBefore: number): HttpRequest => ({
    method: "POST",
    path: "/public/v1/erp/transactions/acknowledge",
    body: { transaction_ids: [] },
    auth: "bearer",
    retry: "idempotent",
    callerRetries: { failedBefore },
  });

  it("does not send a failed attempt again: throws RetryDeferredError with the backoff the retry would have had", async () => {
    const fetch = scriptedFetch(fail(503), ok([]));
    const events: RetryEvent[] = [];
    const { http, clock } = core(fetch, { onRetry: (event) => events.push(event) });
    const error = (await http.request(ack(0)).catch((e: unknown) => e)) as RetryDeferredError;
    expect(error).toBeInstanceOf(RetryDeferredError);
    expect(error).toMatchObject({ status: 503, attempt: 1, delayMs: 125, path: "/public/v1/erp/transactions/acknowledge" });
    expect(error.cause).toBeInstanceOf(ServerError);
    expect(error.message).toMatch(/; left to the caller to retry in 125 ms$/);
    expect(fetch.calls).toHaveLength(1);
    // The caller waits, not the client; the failure is reported as a retried attempt, as an internal retry is.
    expect(clock.sleeps).toEqual([]);
    expect(events.map((e) => [e.status, e.attempt, e.delayMs])).toEqual([[503, 1, 125]]);
  });

  it("carries Retry-After as the wait, and counts the caller's earlier failures in the backoff", async () => {
    const limited = (await core(scriptedFetch(fail(429, [], { "retry-after": "3" }))).http.request(ack(0)).catch((e: unknown) => e)) as RetryDeferredError;
    expect(limited).toMatchObject({ name: "RetryDeferredError", status: 429, requestId: REQUEST_ID, delayMs: 3000, attempt: 1 });
    // random() = 0.5 of the third attempt's ceiling, 1000.
    const third = (await core(scriptedFetch(fail(500))).http.request(ack(2)).catch((e: unknown) => e)) as RetryDeferredError;
    expect(third).toMatchObject({ name: "RetryDeferredError", delayMs: 500, attempt: 3 });
  });

  it("throws the failure itself at the attempt limit, and never defers what is not retried", async () => {
    const last = await core(scriptedFetch(fail(500))).http.request(ack(4)).catch((e: unknown) => e);
    expect(last).toBeInstanceOf(ServerError);
    const refused = await core(scriptedFetch(fail(400))).http.request(ack(0)).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(BadRequestError);
  });

  it("still replays a 401 after a refresh within the call, and succeeds without deferring", async () => {
    const fetch = scriptedFetch(fail(401), ok([]));
    const { http } = core(fetch);
    await expect(http.request(ack(0))).resolves.toMatchObject({ status: 200 });
    expect(fetch.calls.map((c) => c.headers.authorization)).toEqual(["Bearer token-1", "Bearer token-2"]);
  });

  it("is out of time rather than deferred when the retry could not finish before the deadline", async () => {
    const clock = fakeClock();
    const fetch = scriptedFetch(fail(429, [], { "retry-after": "14" }));
    const { http } = core(fetch, { clock });
    const error = await http.request({ ...ack(0), deadline: clock.now() + 15_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DeadlineExceededError);
  });
});

describe("HttpCore retries", () => {
  it("honours Retry-After in seconds on a 429", async () => {
    const fetch = scriptedFetch(fail(429, [], { "retry-after": "3" }), ok([]));
    const { http, clock } = core(fetch);
    await http.request(read());
    expect(fetch.calls).toHaveLength(2);
    expect(clock.sleeps).toEqual([3000]);
  });

  it("honours Retry-After as an HTTP date on a 429", async () => {
    const clock = fakeClock();
    const at = new Date(clock.now() + 7000).toUTCString();
    const fetch = scriptedFetch(fail(429, [], { "retry-after": at }), ok([]));
    const { http } = core(fetch, { clock });
    await http.request(read());
    expect(clock.sleeps).toEqual([7000]);
  });

  it("reads a Retry-After date against the answer's Date, so a provider clock 2 min ahead still gets its 5 s wait", async () => {
    const clock = fakeClock();
    const served = clock.now() + 120_000;
    const headers = { date: new Date(served).toUTCString(), "retry-after": new Date(served + 5000).toUTCString() };
    const fetch = scriptedFetch(fail(429, [], headers), ok([]));
    const { http } = core(fetch, { clock });
    await http.request(read());
    // On this host's clock the date is 125 s away, past the 60 s allowed: the call failed instead of waiting 5 s.
    expect(fetch.calls).toHaveLength(2);
    expect(clock.sleeps).toEqual([5000]);
  });

  it("reads a Retry-After date against the answer's Date, so a provider clock 2 min behind does not retry at once", async () => {
    const clock = fakeClock();
    const served = clock.now() - 120_000;
    const headers = { date: new Date(served).toUTCString(), "retry-after": new Date(served + 5000).toUTCString() };
    const fetch = scriptedFetch(fail(503, [], headers), ok([]));
    const { http } = core(fetch, { clock });
    await http.request(read());
    expect(clock.sleeps).toEqual([5000]);
  });

  it("stops at once with RateLimitedError.retryAfterMs when Retry-After exceeds the allowed wait", async () => {
    const fetch = scriptedFetch(fail(429, [], { "retry-after": "3600" }), ok([]));
    const { http, clock } = core(fetch);
    const error = (await http.request(read()).catch((e: unknown) => e)) as RateLimitedError;
    expect(error).toBeInstanceOf(RateLimitedError);
    expect(error.retryAfterMs).toBe(3_600_000);
    expect(fetch.calls).toHaveLength(1);
    expect(clock.sleeps).toEqual([]);
  });

  it("honours a Retry-After exactly as long as the allowed wait", async () => {
    const fetch = scriptedFetch(fail(429, [], { "retry-after": "60" }), ok([]));
    const { http, clock } = core(fetch, { retry: { random: () => 0.5, maxRetryAfterMs: 60_000 } });
    await http.request(read());
    expect(fetch.calls).toHaveLength(2);
    expect(clock.sleeps).toEqual([60_000]);
  });

  it("allows a Retry-After of up to 60 s by default", async () => {
    const sixty = scriptedFetch(fail(429, [], { "retry-after": "60" }), ok([]));
    const honoured = core(sixty);
    await honoured.http.request(read());
    expect(sixty.calls).toHaveLength(2);
    expect(honoured.clock.sleeps).toEqual([60_000]);

    const longer = scriptedFetch(fail(429, [], { "retry-after": "61" }), ok([]));
    const refused = core(longer);
    await expect(refused.http.request(read())).rejects.toMatchObject({ name: "RateLimitedError", retryAfterMs: 61_000 });
    expect(longer.calls).toHaveLength(1);
    expect(refused.clock.sleeps).toEqual([]);
  });

  it("backs off as without Retry-After when its value is negative, rather than retrying at once", async () => {
    const fetch = scriptedFetch(fail(429, [], { "retry-after": "-1" }), ok([]));
    const { http, clock } = core(fetch);
    await http.request(read());
    expect(clock.sleeps).toEqual([125]);
  });

  it.each([
    ["0", "0"],
    ["a fraction rounding to 0 ms", "0.0001"],
    ["a date already past", "Sun, 06 Nov 1994 08:49:37 GMT"],
  ])("backs off as without Retry-After when it asks for no wait (%s), rather than spending every attempt at once", async (_what, value) => {
    for (const status of [429, 503]) {
      const fetch = scriptedFetch(fail(status, [], { "retry-after": value }), fail(status, [], { "retry-after": value }), ok([]));
      const { http, clock } = core(fetch);
      await http.request(read());
      expect(fetch.calls).toHaveLength(3);
      expect(clock.sleeps).toEqual([125, 250]);
    }
  });

  it("honours Retry-After on a 503 instead of the computed backoff", async () => {
    const fetch = scriptedFetch(fail(503, [], { "retry-after": "4" }), ok([]));
    const { http, clock } = core(fetch);
    await http.request(read());
    expect(fetch.calls).toHaveLength(2);
    expect(clock.sleeps).toEqual([4000]);
  });

  it("stops at once with ServerError.retryAfterMs when a 5xx asks for a wait beyond the allowed one", async () => {
    const fetch = scriptedFetch(fail(503, [], { "retry-after": "120" }), ok([]));
    const { http, clock } = core(fetch, { retry: { random: () => 0.5, maxRetryAfterMs: 60_000 } });
    const error = (await http.request(read()).catch((e: unknown) => e)) as ServerError;
    expect(error).toBeInstanceOf(ServerError);
    expect(error.retryAfterMs).toBe(120_000);
    expect(fetch.calls).toHaveLength(1);
    expect(clock.sleeps).toEqual([]);
  });

  it("retries 5xx with full-jitter exponential backoff until success", async () => {
    const fetch = scriptedFetch(fail(503), fail(500), fail(502), ok([]));
    const { http, clock } = core(fetch);
    await http.request(read());
    expect(fetch.calls).toHaveLength(4);
    // random() = 0.5 of ceilings 250, 500, 1000
    expect(clock.sleeps).toEqual([125, 250, 500]);
  });

  it("caps the attempts and throws the last ServerError", async () => {
    const fetch = scriptedFetch(fail(500));
    const { http, clock } = core(fetch, { retry: { maxAttempts: 3, random: () => 0.5 } });
    const error = await http.request(read()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServerError);
    expect(fetch.calls).toHaveLength(3);
    expect(clock.sleeps).toHaveLength(2);
  });

  it("uses five attempts by default", async () => {
    const fetch = scriptedFetch(fail(500));
    const { http } = core(fetch);
    await expect(http.request(read())).rejects.toBeInstanceOf(ServerError);
    expect(fetch.calls).toHaveLength(5);
  });

  it("caps each backoff delay at maxDelayMs", async () => {
    const fetch = scriptedFetch(fail(500));
    const { http, clock } = core(fetch, { retry: { maxAttempts: 10, maxDelayMs: 1000, random: () => 0.999 } });
    await expect(http.request(read())).rejects.toBeInstanceOf(ServerError);
    expect(Math.max(...clock.sleeps)).toBeLessThan(1000);
    expect(clock.sleeps.slice(-3)).toEqual([999, 999, 999]);
  });

  it("caps each backoff delay at 20 s by default", async () => {
    const fetch = scriptedFetch(fail(500));
    const { http, clock } = core(fetch, { retry: { maxAttempts: 10, random: () => 0.999 } });
    await expect(http.request(read())).rejects.toBeInstanceOf(ServerError);
    // 250 ms doubling: 249, 499, 999, 1998, 3996, 7992, 15984, then the 20 s cap (random() 0.999 of it).
    expect(clock.sleeps).toEqual([249, 499, 999, 1998, 3996, 7992, 15984, 19980, 19980]);
  });

  it("retries a network error and then succeeds", async () => {
    const fetch = scriptedFetch(new TypeError("fetch failed", { cause: { code: "ECONNRESET" } }), ok([]));
    const { http, clock } = core(fetch);
    await http.request(read());
    expect(fetch.calls).toHaveLength(2);
    expect(clock.sleeps).toHaveLength(1);
  });

  it("throws NetworkError naming the system error code when the network keeps failing", async () => {
    const fetch = scriptedFetch(new TypeError("fetch failed", { cause: { code: "ECONNREFUSED" } }));
    const { http } = core(fetch, { retry: { maxAttempts: 2, random: () => 0 } });
    const error = (await http.request(read()).catch((e: unknown) => e)) as NetworkError;
    expect(error).toBeInstanceOf(NetworkError);
    expect(error.message).toContain("ECONNREFUSED");
    // Kept apart too, so the CLI can tell a host not found (a mistyped QASHIO_BASE_URL) from an outage.
    expect(error.reason).toBe("ECONNREFUSED");
    expect(fetch.calls).toHaveLength(2);
  });

  it("keeps the query string out of a network failure's message and path", async () => {
    const fetch = scriptedFetch(new TypeError("fetch failed", { cause: { code: "ECONNRESET" } }));
    const { http } = core(fetch, { retry: { maxAttempts: 1 } });
    const error = (await http.request(read()).catch((e: unknown) => e)) as NetworkError;
    expect(error).toBeInstanceOf(NetworkError);
    expect(error.message).toBe("GET /public/v1/erp/transactions failed before a response (ECONNRESET)");
    expect(error.path).toBe("/public/v1/erp/transactions");
  });

  it("names a failure by its own code when its cause has none, else by the error's name", async () => {
    const failures: [Error, string][] = [
      [Object.assign(new Error("socket hang up"), { code: "ECONNRESET" }), "ECONNRESET"],
      [new TypeError("fetch failed"), "TypeError"],
    ];
    for (const [failure, reason] of failures) {
      const { http } = core(scriptedFetch(failure), { retry: { maxAttempts: 1 } });
      const error = (await http.request(read()).catch((e: unknown) => e)) as NetworkError;
      expect(error).toBeInstanceOf(NetworkError);
      expect(error.reason).toBe(reason);
      expect(error.message).toBe(`GET /public/v1/erp/transactions failed before a response (${reason})`);
    }
  });

  it("times out a request that gets no answer, then retries it", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const fetch = scriptedFetch(hangingReply(), ok([]));
    const { http } = core(fetch, { timeoutMs: 1000 });
    const pending = http.request(read());
    await vi.advanceTimersByTimeAsync(1000);
    await expect(pending).resolves.toMatchObject({ status: 200 });
    expect(fetch.calls).toHaveLength(2);
  });

  it("times out an answer whose body stalls after the headers (the timeout covers the body too), then retries it", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    // Headers and the start of the body arrive; the rest never does, until the attempt is aborted.
    const stalledBody = (_call: unknown, signal: AbortSignal | undefined) => {
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('{"success":true,"data":['));
          signal?.addEventListener("abort", () => controller.error(new DOMException("This operation was aborted", "AbortError")));
        },
      });
      return new Response(body, { status: 200, headers: { "content-type": "application/json" } });
    };
    const fetch = scriptedFetch(stalledBody, ok([]));
    const { http } = core(fetch, { timeoutMs: 1000 });
    let outcome: unknown;
    void http.request(read()).then(
      (response) => (outcome = response),
      (error: unknown) => (outcome = error),
    );
    await vi.advanceTimersByTimeAsync(1000);
    expect(outcome).toMatchObject({ status: 200 });
    expect(fetch.calls).toHaveLength(2);
  });

  it("clears an attempt's timeout timer once it is answered, so no timer outlives the request (a CLI would stay up for it)", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const { http } = core(scriptedFetch(fail(503), new TypeError("fetch failed"), ok([])), { timeoutMs: 1000 });
    await expect(http.request(read())).resolves.toMatchObject({ status: 200 });
    expect(vi.getTimerCount()).toBe(0);
  });

  it("throws TimeoutError carrying the timeout when every attempt times out", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const fetch = scriptedFetch(hangingReply());
    const { http } = core(fetch, { timeoutMs: 2500, retry: { maxAttempts: 2, random: () => 0 } });
    const pending = http.request(read()).catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(5000);
    const error = (await pending) as TimeoutError;
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error.timeoutMs).toBe(2500);
    expect(error.message).toBe("GET /public/v1/erp/transactions got no response within 2500 ms");
    expect(fetch.calls).toHaveLength(2);
  });

  it("with a deadline, does not retry when the attempt after the provider's wait could not finish before it", async () => {
    // Retry-After 14 s with 15 s left: the retry would have 1 s of its 10 s timeout, so it could be processed unanswered.
    const fetch = scriptedFetch(fail(429, [], { "retry-after": "14" }), ok([]));
    const { http, clock } = core(fetch, { timeoutMs: 10_000 });
    const deadline = clock.now() + 15_000;
    const error = await http.request({ ...read("unambiguous-only"), deadline }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect(error).toMatchObject({ deadline, cause: expect.any(RateLimitedError) });
    expect((error as Error).message).toContain("answered 429");
    expect(fetch.calls).toHaveLength(1);
    expect(clock.sleeps).toEqual([]);
  });

  it("with a deadline, retries while the wait and a whole attempt fit before it", async () => {
    const fetch = scriptedFetch(fail(429, [], { "retry-after": "3" }), fail(429, [], { "retry-after": "3" }), ok([]));
    const { http, clock } = core(fetch, { timeoutMs: 5000 });
    await expect(http.request({ ...read("unambiguous-only"), deadline: clock.now() + 11_000 })).resolves.toMatchObject({ status: 200 });
    expect(clock.sleeps).toEqual([3000, 3000]);
  });

  it("with a deadline, stops retrying at the first retry that no longer fits", async () => {
    const fetch = scriptedFetch(fail(429, [], { "retry-after": "3" }), fail(429, [], { "retry-after": "3" }), ok([]));
    const { http, clock } = core(fetch, { timeoutMs: 5000 });
    const error = await http.request({ ...read("unambiguous-only"), deadline: clock.now() + 10_999 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect((error as Error).cause).toBeInstanceOf(RateLimitedError);
    expect(fetch.calls).toHaveLength(2);
    expect(clock.sleeps).toEqual([3000]);
  });

  it("once asked to stop, starts no further attempt: the failed one is the last, and the call rejects as out of time", async () => {
    const stop = new AbortController();
    const fetch = scriptedFetch(fail(503, [], { "retry-after": "8" }), ok([]));
    // The stop arrives while the client reports the retry it is about to wait for.
    const { http } = core(fetch, { onRetry: () => stop.abort() });
    const error = await http.request({ ...read(), stop: stop.signal }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect((error as Error).message).toMatch(/was not retried: it was asked to stop \(last attempt: .*503/);
    expect(fetch.calls).toHaveLength(1);

    const none = scriptedFetch(ok([]));
    const stopped = AbortSignal.abort();
    const unsent = await core(none).http.request({ ...read(), stop: stopped }).catch((e: unknown) => e);
    expect((unsent as Error).message).toMatch(/was not sent: it was asked to stop/);
    // Stopped without a deadline: the error names none (held to no deadline), not the epoch.
    expect(unsent).toMatchObject({ name: "DeadlineExceededError", deadline: Number.POSITIVE_INFINITY });
    expect(none.calls).toHaveLength(0);
  });

  it("once asked to stop during a retry's wait, ends the wait at once and sends nothing more", async () => {
    const clock = manualClock();
    const stop = new AbortController();
    const fetch = scriptedFetch(fail(503, [], { "retry-after": "30" }), ok([]));
    const { http } = core(fetch, { clock });
    let outcome: unknown;
    void http.request({ ...read(), stop: stop.signal }).then(
      (response) => (outcome = response),
      (error: unknown) => (outcome = error),
    );
    await clock.advance(1000);
    expect(clock.sleeping).toBe(1);
    stop.abort();
    await clock.advance(0);
    expect(outcome).toBeInstanceOf(DeadlineExceededError);
    expect(fetch.calls).toHaveLength(1);
  });

  it("with a deadline, sends nothing when getting the token used up the time a whole attempt needed", async () => {
    const fetch = scriptedFetch(ok([]));
    const clock = fakeClock();
    // A token that takes 6 s to get (a refresh waiting for its lease): 9 s of the call's 15 s are left for a 10 s attempt.
    const tokenProvider: TokenProvider = {
      getAccessToken: async () => {
        clock.advance(6_000);
        return "token-late";
      },
      refreshAfterUnauthorized: async () => "token-late",
    };
    const { http } = core(fetch, { clock, tokenProvider, timeoutMs: 10_000 });
    const error = await http.request({ ...read(), deadline: clock.now() + 15_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect(fetch.calls).toHaveLength(0);
  });

  it("once asked to stop while getting the token, sends nothing", async () => {
    const fetch = scriptedFetch(ok([]));
    const stop = new AbortController();
    // The stop (Ctrl-C) comes while the token is on its way (a refresh, or one waiting for its lease).
    const tokenProvider: TokenProvider = {
      getAccessToken: async () => {
        stop.abort();
        return "token-late";
      },
      refreshAfterUnauthorized: async () => "token-late",
    };
    const { http } = core(fetch, { tokenProvider });
    const error = await http.request({ ...read(), stop: stop.signal }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect((error as Error).message).toMatch(/was not sent: it was asked to stop/);
    expect(fetch.calls).toHaveLength(0);
  });

  it("with a deadline, sends nothing when a whole attempt no longer fits before it, and gets no token for it", async () => {
    const fetch = scriptedFetch(ok([]));
    // A token could be a refresh: one spent, and saved past the invocation's end, for a call that is never sent.
    const getAccessToken = vi.fn(async () => "token-1");
    const { http, clock } = core(fetch, { timeoutMs: 10_000, tokenProvider: { getAccessToken, refreshAfterUnauthorized: getAccessToken } });
    const error = await http.request({ ...read(), deadline: clock.now() + 9_999 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect((error as Error).cause).toBeUndefined();
    expect(getAccessToken).not.toHaveBeenCalled();
    expect(fetch.calls).toHaveLength(0);
  });

  it("logs each retry with method, path, status and delay", async () => {
    const fetch = scriptedFetch(fail(503), ok([]));
    const { http, logger } = core(fetch);
    await http.request(read());
    expect(logger.lines).toContainEqual(
      expect.objectContaining({
        level: "warn",
        message: "provider request failed; retrying",
        attributes: expect.objectContaining({ method: "GET", path: "/public/v1/erp/transactions", status: 503, error: "ServerError", requestId: REQUEST_ID, attempt: 1, delayMs: 125 }),
      }),
    );
  });
});

describe("HttpCore retry modes", () => {
  const issue: HttpRequest = { method: "POST", path: "/public/v1/core/cards", body: {}, auth: "bearer", retry: "never" };
  const invite: HttpRequest = { ...issue, path: "/public/v1/core/user_profiles/invite", retry: "unambiguous-only" };

  it.each([
    ["a 5xx", fail(503)],
    ["a 429", fail(429, [], { "retry-after": "1" })],
    ["a network error", new TypeError("fetch failed")],
  ])("never retries card issuance after %s", async (_label, reply) => {
    const fetch = scriptedFetch(reply, ok({}));
    const { http, clock } = core(fetch);
    await expect(http.request(issue)).rejects.toBeDefined();
    expect(fetch.calls).toHaveLength(1);
    expect(clock.sleeps).toEqual([]);
  });

  it("never retries card issuance after a timeout", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const fetch = scriptedFetch(hangingReply(), ok({}));
    const { http } = core(fetch, { timeoutMs: 1000 });
    const pending = http.request(issue).catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(1000);
    expect(await pending).toBeInstanceOf(TimeoutError);
    expect(fetch.calls).toHaveLength(1);
  });

  it("retries a non-idempotent POST after a 429 but not after a 5xx", async () => {
    const after429 = scriptedFetch(fail(429), ok({}));
    await core(after429).http.request(invite);
    expect(after429.calls).toHaveLength(2);

    const after500 = scriptedFetch(fail(500), ok({}));
    await expect(core(after500).http.request(invite)).rejects.toBeInstanceOf(ServerError);
    expect(after500.calls).toHaveLength(1);
  });

  it("does not retry a non-idempotent POST after a network error or a timeout: it may have been processed", async () => {
    const afterNetwork = scriptedFetch(new TypeError("fetch failed", { cause: { code: "ECONNRESET" } }), ok({}));
    const network = core(afterNetwork);
    await expect(network.http.request(invite)).rejects.toBeInstanceOf(NetworkError);
    expect(afterNetwork.calls).toHaveLength(1);
    expect(network.clock.sleeps).toEqual([]);

    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const afterTimeout = scriptedFetch(hangingReply(), ok({}));
    const pending = core(afterTimeout, { timeoutMs: 1000 }).http.request(invite).catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(1000);
    expect(await pending).toBeInstanceOf(TimeoutError);
    expect(afterTimeout.calls).toHaveLength(1);
  });
});

describe("HttpCore onRetry hook", () => {
  function withHook(fetch: ReturnType<typeof scriptedFetch>, extra: Partial<ConstructorParameters<typeof HttpCore>[0]> = {}) {
    const events: RetryEvent[] = [];
    return { ...core(fetch, { onRetry: (event) => events.push(event), ...extra }), events };
  }

  it("reports every retried failure with its status class, method and path, and not the final success", async () => {
    const fetch = scriptedFetch(fail(503), fail(429, [], { "retry-after": "1" }), new TypeError("fetch failed"), ok([]));
    const { http, events } = withHook(fetch);
    await http.request(read());
    expect(events.map((e) => [e.status, e.statusClass, e.error, e.attempt])).toEqual([
      [503, "5xx", "ServerError", 1],
      [429, "4xx", "RateLimitedError", 2],
      [undefined, "network", "NetworkError", 3],
    ]);
    expect(events[0]).toMatchObject({ method: "GET", path: "/public/v1/erp/transactions", delayMs: 125 });
    expect(events[1]?.delayMs).toBe(1000);
  });

  it("reports a 500 with the 5xx class", async () => {
    const { http, events } = withHook(scriptedFetch(fail(500), ok([])));
    await http.request(read());
    expect(events.map((e) => [e.status, e.statusClass])).toEqual([[500, "5xx"]]);
  });

  it("reports the 401 that was replayed after a refresh", async () => {
    const { http, events } = withHook(scriptedFetch(fail(401), ok([])));
    await http.request(read());
    expect(events).toEqual([
      { status: 401, statusClass: "4xx", method: "GET", path: "/public/v1/erp/transactions", error: "UnauthorizedError", attempt: 1, delayMs: 0 },
    ]);
  });

  it("does not report the failure that ends the call, so a caller counting thrown errors counts it once", async () => {
    const { http, events } = withHook(scriptedFetch(fail(500)), { retry: { maxAttempts: 3, random: () => 0 } });
    await expect(http.request(read())).rejects.toBeInstanceOf(ServerError);
    expect(events.map((e) => e.attempt)).toEqual([1, 2]);
  });

  it("reports timeouts with the timeout class", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const { http, events } = withHook(scriptedFetch(hangingReply(), ok([])), { timeoutMs: 1000 });
    const pending = http.request(read());
    await vi.advanceTimersByTimeAsync(1000);
    await pending;
    expect(events.map((e) => e.statusClass)).toEqual(["timeout"]);
  });

  it("keeps the request going when the hook throws", async () => {
    const fetch = scriptedFetch(fail(502), ok([]));
    const { http } = core(fetch, {
      onRetry: () => {
        throw new Error("metrics backend down");
      },
    });
    await expect(http.request(read())).resolves.toMatchObject({ status: 200 });
  });

  it("puts no token or query string in the event", async () => {
    const { http, events } = withHook(scriptedFetch(fail(401), fail(503), ok([])));
    await http.request(read());
    expect(events).toHaveLength(2);
    expect(JSON.stringify(events)).not.toMatch(/token-|not_synced|\?/);
  });
});

describe("parseRetryAfter", () => {
  it("reads delta seconds, HTTP dates, past dates and garbage", () => {
    const now = Date.UTC(2025, 0, 1);
    expect(parseRetryAfter("2", now)).toBe(2000);
    expect(parseRetryAfter(new Date(now + 1500).toUTCString(), now)).toBe(1000);
    expect(parseRetryAfter(new Date(now - 60_000).toUTCString(), now)).toBe(0);
    expect(parseRetryAfter("soon", now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });

  it("ignores a value that is neither delta seconds nor an HTTP date, though Date.parse reads it as a past date", () => {
    const now = Date.UTC(2025, 0, 1);
    // V8 reads each of these as a day of 2001, which would make the retry start at once.
    for (const value of ["-1", "+5", "1.5.3", "Sun 12", "2 3"]) expect(parseRetryAfter(value, now), value).toBeUndefined();
    expect(parseRetryAfter("Sunday, 06-Nov-94 08:49:37 GMT", now)).toBe(0);
  });

  it("reads an asctime date as GMT, as RFC 9110 defines it, whatever the local time zone", () => {
    const zone = process.env.TZ;
    process.env.TZ = "Asia/Dubai";
    try {
      expect(parseRetryAfter("Wed Jan  1 00:00:09 2025", Date.UTC(2025, 0, 1))).toBe(9000);
    } finally {
      if (zone === undefined) delete process.env.TZ;
      else process.env.TZ = zone;
    }
  });

  it("keeps a zone the date names instead of reading its time as GMT", () => {
    // Not an HTTP-date strictly, but dated unambiguously: 01:00:09 at +0100 is 9 s after midnight GMT, not an hour later.
    expect(parseRetryAfter("Wed, 01 Jan 2025 01:00:09 +0100", Date.UTC(2025, 0, 1))).toBe(9000);
    expect(parseRetryAfter("Wed, 01 Jan 2025 00:00:09 UTC", Date.UTC(2025, 0, 1))).toBe(9000);
  });

  it("counts a date from the answer's Date when it has a readable one, else from now", () => {
    const now = Date.UTC(2025, 0, 1);
    const served = "Wed, 01 Jan 2025 00:02:00 GMT";
    expect(parseRetryAfter("Wed, 01 Jan 2025 00:02:05 GMT", now, served)).toBe(5000);
    expect(parseRetryAfter("Wed, 01 Jan 2025 00:01:55 GMT", now, served)).toBe(0);
    expect(parseRetryAfter("Wed, 01 Jan 2025 00:00:05 GMT", now, "yesterday")).toBe(5000);
    expect(parseRetryAfter("Wed, 01 Jan 2025 00:00:05 GMT", now, null)).toBe(5000);
    // Shaped as a date but no day there is: unreadable, so counted from now (a Retry-After so shaped is ignored).
    expect(parseRetryAfter("Wed, 01 Jan 2025 00:00:05 GMT", now, "Wed, 99 Jan 2025 00:02:00 GMT")).toBe(5000);
    expect(parseRetryAfter("Wed, 01 Foo 2025 00:00:05 GMT", now, served)).toBeUndefined();
    // Delta seconds need no clock at all.
    expect(parseRetryAfter("7", now, served)).toBe(7000);
  });

  it("reads delta seconds with whitespace around them, as a fetch that does not trim header values gives them", () => {
    expect(parseRetryAfter(" 5 ", Date.UTC(2025, 0, 1))).toBe(5000);
  });

  it("reads fractional delta seconds as seconds", () => {
    expect(parseRetryAfter("1.5", Date.UTC(2025, 0, 1))).toBe(1500);
  });

  it("reads fractional delta seconds to the nearest millisecond, not one short where the product in floating point falls below it", () => {
    // 1.005 * 1000 is 1004.999...: cut to whole milliseconds, the wait would end a millisecond before the one asked.
    expect(parseRetryAfter("1.005", Date.UTC(2025, 0, 1))).toBe(1005);
  });
});

describe("redactSecrets", () => {
  it("redacts a secret quoted URL-encoded with lowercase hex", () => {
    expect(redactSecrets("Authorization: Bearer tok%2bwith%2fslash%3d", ["tok+with/slash="])).toBe("Authorization: Bearer ***");
  });

  it("redacts a secret quoted form-encoded, a space as +", () => {
    expect(redactSecrets("body was client_secret=s3cret+with+space", ["s3cret with space"])).toBe("body was client_secret=***");
  });

  it("redacts a secret quoted JSON-escaped, as in a request body the provider echoes", () => {
    expect(redactSecrets('echo {"client_secret":"pa\\"ss\\\\word"}', ['pa"ss\\word'])).toBe('echo {"client_secret":"***"}');
  });

  it("redacts every occurrence of a secret, not only the first", () => {
    expect(redactSecrets("got tok-1a2b, expected tok-1a2b", ["tok-1a2b"])).toBe("got ***, expected ***");
  });

  it("redacts a secret quoted as sent when it holds a character that both URL and JSON escape", () => {
    expect(redactSecrets('client_secret pa"ss is wrong', ['pa"ss'])).toBe("client_secret *** is wrong");
  });

  it("redacts a secret that contains another one whole, leaving no part of it", () => {
    expect(redactSecrets("sent rt-abc-rotated and rt-abc", ["rt-abc", "rt-abc-rotated"])).toBe("sent *** and ***");
  });
});

describe("realSleep", () => {
  it("resolves when its signal aborts and clears its timer, so a cancelled wait does not keep the process alive", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const stop = new AbortController();
    const waiting = realSleep(10_000, stop.signal);
    expect(vi.getTimerCount()).toBe(1);
    stop.abort();
    await waiting;
    expect(vi.getTimerCount()).toBe(0);
    await realSleep(10_000, stop.signal);
    expect(vi.getTimerCount()).toBe(0);
  });
});
