/**
 * docs/spec-gaps.md's "Provider API client" section, its subsections "Retries, limits, timeouts", "Transport" and
 * "Addresses and versions", held to the client: the numbers, names and messages it states, read from the doc and
 * checked against the code's exported constants or its behaviour, and the code it cites for each choice.
 */
import { afterEach, describe, expect, it } from "vitest";
import { PATHS } from "../../shared/qashio/client.js";
import { BASE_URL_ENV_VARS, resolveAuthorizeUrl, resolveBaseUrl } from "../../shared/qashio/config.js";
import { ClientConfigurationError, QashioError, statusClassOf } from "../../shared/qashio/errors.js";
import { DEFAULT_RETRY, DEFAULT_TIMEOUT_MS, HttpCore, type FetchLike } from "../../shared/qashio/http.js";
import { MAX_RESPONSE_BODY_BYTES, nodeHttpFetch, RESPONSE_TOO_LARGE, TransportError } from "../../shared/qashio/node-transport.js";
import { DEFAULT_MAX_PAGES, pagesByHasNext, pagesByNextPage } from "../../shared/qashio/pagination.js";
import { safeRequestId } from "../../shared/qashio/redact.js";
import { SANDBOX_IN_PROCESS_URL } from "../../sandbox/index.js";
import { numbersSaid, quotedNames, textsSaid } from "../doc-text.js";
import { expectCitationsHold, seconds, specGapsPart } from "../spec-gaps-section.js";
import { fail, fakeClock, heldFetch, json, manualClock, ok, pagination, scriptedFetch, turns } from "./helpers.js";
import { closeLoopbacks, closedPortUrl, eventually, loopback } from "./loopback.js";

/** The three subsections, line breaks read as spaces: from "Retries, limits, timeouts" to the section's end. */
const CLIENT = specGapsPart("Provider API client", "Retries, limits, timeouts", "Addresses and versions");

const said = (pattern: RegExp): number[][] => numbersSaid(CLIENT, pattern);
const quoted = (pattern: RegExp): string[][] => textsSaid(CLIENT, pattern);
const MIB = 1024 * 1024;

const read = { method: "GET", path: "/public/v1/erp/transactions", auth: "none", retry: "idempotent" } as const;

afterEach(closeLoopbacks);

/** The error a request ends with, or a failure of the test when it succeeds. */
async function errorOf(pending: Promise<unknown>): Promise<QashioError> {
  const outcome = await pending.then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(outcome).toBeInstanceOf(QashioError);
  return outcome as QashioError;
}

describe("docs/spec-gaps.md, Provider API client: retries, limits, timeouts", () => {
  it("waits full-jitter backoff of the base and cap it says, attempts as many times as it says, each under its timeout", async () => {
    const [[capS = 0, baseMs = 0, attempts = 0] = []] = said(/`random\(\) \* min\((\d+) s, (\d+) ms \* 2\^\(attempt-1\)\)`, at most (\w+) attempts in total/);
    expect(said(/Per-attempt timeout (\d+) s covering headers and body/)).toEqual([[seconds(DEFAULT_TIMEOUT_MS)]]);
    // Default settings: as many attempts as said, each retry's wait a jittered share of base * 2^(attempt-1).
    const clock = fakeClock();
    const fetch = scriptedFetch(fail(503));
    await errorOf(new HttpCore({ baseUrl: "https://api.example", fetch, clock, retry: { random: () => 0.5 } }).request(read));
    expect(fetch.calls).toHaveLength(attempts);
    const ceiling = (attempt: number): number => Math.min(capS * 1000, baseMs * 2 ** (attempt - 1));
    expect(clock.sleeps).toEqual([1, 2, 3, 4].map((attempt) => Math.floor(0.5 * ceiling(attempt))));
    // Enough attempts to reach the cap: the default cap holds whatever the attempt limit.
    const longer = fakeClock();
    await errorOf(new HttpCore({ baseUrl: "https://api.example", fetch: scriptedFetch(fail(503)), clock: longer, retry: { maxAttempts: 10, random: () => 0.5 } }).request(read));
    expect(longer.sleeps).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9].map((attempt) => Math.floor(0.5 * ceiling(attempt))));
    expect(Math.max(...longer.sleeps)).toBe((capS * 1000) / 2);
  });

  it("honours a Retry-After up to the bound it says, and ends the retries at once past it", async () => {
    const bounds = said(/`maxRetryAfterMs` \((?:default )?(\d+) s(?: by default)?\)/);
    expect(bounds.length).toBeGreaterThanOrEqual(2);
    for (const [bound] of bounds) expect(bound).toBe(seconds(DEFAULT_RETRY.maxRetryAfterMs));
    const [[bound = 0] = []] = bounds;
    const waited = fakeClock();
    const within = scriptedFetch(fail(503, [], { "retry-after": String(bound) }), json(200, {}));
    await new HttpCore({ baseUrl: "https://api.example", fetch: within, clock: waited }).request(read);
    expect(waited.sleeps).toEqual([bound * 1000]);
    const past = scriptedFetch(fail(503, [], { "retry-after": String(bound + 1) }));
    const error = await errorOf(new HttpCore({ baseUrl: "https://api.example", fetch: past, clock: fakeClock() }).request(read));
    expect(past.calls).toHaveLength(1);
    expect(error).toMatchObject({ name: "ServerError", retryAfterMs: (bound + 1) * 1000 });
  });

  it("replaces a Retry-After of -1, 0 or a date already past with the backoff, as it says", async () => {
    const [[ignored = ""] = []] = quoted(/any other value, `(-?\d+)` say, is ignored; so is a wait of nothing, `0` or a date already past/);
    for (const value of [ignored, "0", new Date(Date.UTC(2025, 0, 15, 11, 0, 0)).toUTCString()]) {
      const clock = fakeClock();
      await new HttpCore({ baseUrl: "https://api.example", fetch: scriptedFetch(fail(429, [], { "retry-after": value }), json(200, {})), clock, retry: { random: () => 0.5 } }).request(read);
      expect(clock.sleeps.length, value).toBe(1);
      expect(clock.sleeps[0], value).toBeGreaterThan(0);
    }
  });

  it("refuses a client inside a long 429's wait with the message it quotes", async () => {
    const [[shape = ""] = []] = quoted(/the message `… (was not sent: the provider asked for no request before <time> \(a 429's Retry-After\), <n> s from now)`/);
    const clock = fakeClock();
    const http = new HttpCore({ baseUrl: "https://api.example", fetch: scriptedFetch(fail(429, [], { "retry-after": "600" })), clock });
    await errorOf(http.request(read));
    const refused = await errorOf(http.request(read));
    const pattern = new RegExp(`${shape.replace(/[()]/g, "\\$&").replace("<time>", "(\\S+)").replace("<n>", "(\\d+)")}$`);
    const [, time, left] = pattern.exec(refused.message) ?? [];
    expect(refused.message, String(pattern)).toMatch(pattern);
    expect(Date.parse(time ?? "")).toBe(clock.now() + 600_000);
    expect(Number(left)).toBe(600);
    expect(refused).toMatchObject({ name: "RateLimitedError", status: 429, retryAfterMs: 600_000 });
  });

  it("lifts the slow start's limit when it is more than the requests in flight and waiting, as it says, not when they just fill it", async () => {
    expect(quoted(/doubles each time as many answers other than a 429 came back as it allowed \(1, 2, 4, \.\.\.\), and once (that is more than the requests in flight and waiting) the client is unlimited again/)).toHaveLength(1);
    // After a 429 and its probe, `waiting` requests share the doubled limit of two; a request coming then is sent at
    // once when the client is unlimited again, else held until an answer.
    const lateSentAtOnce = async (waiting: readonly string[]): Promise<boolean> => {
      const clock = manualClock();
      const { fetch, inFlight, answer } = heldFetch();
      const http = new HttpCore({ baseUrl: "https://api.example", fetch, clock, retry: { random: () => 0.5 } });
      const send = (qid: string): Promise<unknown> => http.request({ ...read, query: { qashio_id: qid } });
      const probe = send("Q1");
      await turns();
      answer("Q1", fail(429, [], { "retry-after": "5" }));
      await turns();
      const others = waiting.map(send);
      await clock.advance(5000);
      answer("Q1", ok([]));
      await clock.advance(0);
      expect(inFlight()).toEqual(waiting);
      const late = send("LATE");
      await turns();
      const sent = inFlight().includes("LATE");
      const all = Promise.all([probe, ...others, late]);
      while (inFlight().length > 0) {
        for (const qid of inFlight()) answer(qid, ok([]));
        await clock.advance(0);
        await turns();
      }
      await all;
      return sent;
    };
    expect(await lateSentAtOnce(["Q2"])).toBe(true);
    expect(await lateSentAtOnce(["Q2", "Q3"])).toBe(false);
  });

  it("sorts failures into the status classes it names", () => {
    const [[classes = ""] = []] = quoted(/`statusClass` \(((?:`\w+`, )+)`network`, `timeout`, else `other`/);
    expect(classes).toBe("`4xx`, `5xx`, ");
    expect([404, 503, 302].map((status) => statusClassOf({ status, name: "QashioError" }))).toEqual(["4xx", "5xx", "other"]);
    expect(statusClassOf({ name: "NetworkError" })).toBe("network");
    expect(statusClassOf({ name: "TimeoutError" })).toBe("timeout");
  });

  it("sends the statuses §7 does not list once, as a plain QashioError with their status", async () => {
    const [[listed = ""] = []] = quoted(/Any other non-2xx \(((?:\d{3}, )+)\.\.\.;/);
    for (const status of listed.split(", ").filter(Boolean).map(Number)) {
      const fetch = scriptedFetch(json(status, {}));
      const error = await errorOf(new HttpCore({ baseUrl: "https://api.example", fetch, clock: fakeClock() }).request(read));
      expect(error.constructor, String(status)).toBe(QashioError);
      expect(error.status).toBe(status);
      expect(fetch.calls, String(status)).toHaveLength(1);
    }
  });

  it("stops a walk after the page bound it says, and words a page skipped or answered past as it quotes", async () => {
    // Written with a space between the thousands (10 000), which numbersSaid does not read.
    const [[bound = ""] = []] = quoted(/`maxPages` \(default ([\d ]+)\)/);
    expect(Number(bound.replace(/ /g, ""))).toBe(DEFAULT_MAX_PAGES);
    const list = { method: "GET", path: PATHS.transactions };
    const [[prefix = ""] = []] = quoted(/the message starts with its method and path \(`([^`]+): …`\)/);
    expect(prefix).toBe(`${list.method} ${list.path}`);

    const [[skips = ""] = []] = quoted(/skips a page \(`(next_page \d+ skips page \d+)`\)/);
    const [, next = 0, skipped = 0] = /next_page (\d+) skips page (\d+)/.exec(skips)?.map(Number) ?? [];
    const pointer = pagesByNextPage(async (page) => ({ data: [], pageInfo: { current_page: page, per_page: 0, total_entries: 0, total_pages: next, next_page: page === 1 ? next : null } }), { list, startPage: skipped - 1 });
    const skipError = await errorOf((async () => {
      for await (const _ of pointer);
    })());
    expect(skipError.message).toContain(skips);
    expect(skipError.message.startsWith(`${prefix}: `)).toBe(true);

    const [[past = ""] = []] = quoted(/stops it even there \(`(answered page \d+, past it)`\)/);
    const [, answered = 0] = /answered page (\d+)/.exec(past)?.map(Number) ?? [];
    const walk = pagesByHasNext(async (page) => ({ data: [], pagination: pagination(page === 1 ? 1 : answered, answered) as never }), { list });
    const pastError = await errorOf((async () => {
      for await (const _ of walk);
    })());
    expect(pastError.message).toContain(past);
    expect(pastError).toMatchObject({ method: list.method, path: list.path });
  });

  it("keeps a request id only of the length, characters and secret-free runs it says, the first of a list that passes", () => {
    const [[most = 0] = []] = said(/printable ASCII without spaces, at most (\d+) characters/);
    const [[run = 0] = []] = said(/nor a run of (\d+)\+ characters of one/);
    expect(safeRequestId("r".repeat(most), [])).toBe("r".repeat(most));
    expect(safeRequestId("r".repeat(most + 1), [])).toBeUndefined();
    expect(safeRequestId("req 1", [])).toBeUndefined();
    expect(safeRequestId("req-\u00e9", [])).toBeUndefined();
    const secret = "s3cr3t-t0k3n-value";
    expect(safeRequestId(`id-${secret.slice(0, run)}`, [secret])).toBeUndefined();
    expect(safeRequestId(`id-${secret.slice(0, run - 1)}`, [secret])).toBe(`id-${secret.slice(0, run - 1)}`);
    expect(quoted(/of a header holding `(id1, id2)`/)).toEqual([["id1, id2"]]);
    expect(safeRequestId("r".repeat(most + 1) + ", id2", [])).toBe("id2");
  });
});

describe("docs/spec-gaps.md, Provider API client: transport", () => {
  it("reads a response body up to the size it says, failing past it with the message it quotes, not retried", async () => {
    expect(said(/A response body is read up to (\d+) MiB \(`MAX_RESPONSE_BODY_BYTES`\)/)).toEqual([[MAX_RESPONSE_BODY_BYTES / MIB]]);
    for (const [size] of said(/a response body is read up to (\d+) MiB \(Transport/)) expect(size).toBe(MAX_RESPONSE_BODY_BYTES / MIB);
    const [[times = 0] = []] = said(/about (\d+) times a page of 100 transactions/);
    const [[pageKb = 0] = []] = said(/A page travels as about (\d+) KB/);
    expect(Math.abs(MAX_RESPONSE_BODY_BYTES / (pageKb * 1024) - times)).toBeLessThan(times * 0.1);
    const [[message = ""] = []] = quoted(/fails with `InvalidResponseError` \("([^"]+)"\), not retried/);
    const tooLarge: FetchLike = async () => ({
      status: 200,
      headers: { get: () => null },
      text: () => Promise.reject(new TransportError(RESPONSE_TOO_LARGE, "response body")),
    });
    const calls: number[] = [];
    const counted: FetchLike = (input, init) => (calls.push(1), tooLarge(input, init));
    const error = await errorOf(new HttpCore({ baseUrl: "https://api.example", fetch: counted, clock: fakeClock() }).request(read));
    expect(error.name).toBe("InvalidResponseError");
    expect(error.message).toBe(`${read.method} ${read.path} ${message}`);
    expect(calls).toHaveLength(1);
  });

  it("fails a 2xx body compressed anyway with the message it quotes, not retried", async () => {
    const [[message = ""] = []] = quoted(/it fails as `InvalidResponseError` "([^"]+)", not retried/);
    const [[coding = ""] = []] = quoted(/in Content-Encoding (\w+), though identity/);
    const fetch = scriptedFetch(new Response(new Uint8Array([0x1f, 0x8b, 0x08, 0x00, 0xff]), { status: 200, headers: { "content-encoding": coding } }));
    const error = await errorOf(new HttpCore({ baseUrl: "https://api.example", fetch, clock: fakeClock() }).request(read));
    expect(error.name).toBe("InvalidResponseError");
    expect(error.message).toBe(`${read.method} ${read.path} ${message}`);
    expect(fetch.calls).toHaveLength(1);
  });

  it("sends the headers it says, opens at most the sockets per host it says, and fails a refused connection by its code alone", async () => {
    const [[accept = ""] = []] = quoted(/Requests send `accept-encoding: (\w+)`/);
    const [[agent = ""] = []] = quoted(/Requests also send `user-agent: ([\w-]+)` unless the caller gives one/);
    const [[sockets = 0] = []] = said(/at most (\d+) sockets per host/);
    const held: (() => void)[] = [];
    const server = await loopback((_request, res) => held.push(() => res.writeHead(200).end("{}")));
    const pending = Array.from({ length: sockets + 2 }, () => nodeHttpFetch(`${server.url}/`, { headers: { "accept-encoding": "gzip" } }));
    await expect.poll(() => server.received.length).toBe(sockets);
    // More time for a socket past the bound to show up: none does while the first ones are held.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect({ connections: server.connections, requests: server.received.length }).toEqual({ connections: sockets, requests: sockets });
    while (held.length > 0 || server.received.length < sockets + 2) {
      held.shift()?.();
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await Promise.all(pending.map(async (response) => (await response).text()));
    expect(server.connections).toBe(sockets);
    expect(server.received[0]?.headers).toMatchObject({ "accept-encoding": accept, "user-agent": agent });

    const [[codes = ""] = []] = quoted(/whose message names only the system code \(([^)]+), \.\.\.\)/);
    expect(codes).toContain("`ECONNREFUSED`");
    // A port nothing listens on (bound, then released), with no pooled socket: the one above was kept alive.
    const unused = await closedPortUrl();
    const refused = await errorOf(
      new HttpCore({ baseUrl: unused, clock: fakeClock(), retry: { maxAttempts: 1 } }).request({ ...read, query: { qashio_id: "QID-SECRET-QUERY" } }),
    );
    expect(refused).toMatchObject({ name: "NetworkError", reason: "ECONNREFUSED" });
    expect(refused.message).toBe(`${read.method} ${read.path} failed before a response (ECONNREFUSED)`);
    expect(refused.cause).toBeUndefined();
  });

  it("closes an idle socket sooner than it says when the server's Keep-Alive timeout says so", async () => {
    const [[idle = 0] = []] = said(/Idle sockets close after (\d+) s, or sooner if the server's `Keep-Alive: timeout` says so/);
    // The server keeps a socket half as long as the transport would and says so (Keep-Alive: timeout=<n>); the transport
    // closes it first, so the close comes before the server's own.
    const serverKeepsMs = (idle * 1000) / 2;
    const server = await loopback((_request, res) => res.writeHead(200).end("{}"), serverKeepsMs);
    const response = await nodeHttpFetch(`${server.url}/`);
    expect(response.headers.get("keep-alive")).toBe(`timeout=${serverKeepsMs / 1000}`);
    await response.text();
    const idleFrom = Date.now();
    await eventually(() => server.closedConnections >= 1);
    expect(Date.now() - idleFrom).toBeLessThan(serverKeepsMs - 200);
  });

  it("asks an injected fetch not to follow a redirect, and fails a 3xx once with its status", async () => {
    const [[redirect = ""] = []] = quoted(/asks an injected fetch for `redirect: "(\w+)"`/);
    const fetch = scriptedFetch(new Response(null, { status: 302, headers: { location: "http://elsewhere.example/" } }));
    const inits: unknown[] = [];
    const recording: FetchLike = (input, init) => (inits.push(init.redirect), fetch(input, init));
    const error = await errorOf(new HttpCore({ baseUrl: "https://api.example", fetch: recording, clock: fakeClock() }).request(read));
    expect(inits).toEqual([redirect]);
    expect(error.constructor).toBe(QashioError);
    expect(error.status).toBe(302);
  });
});

describe("docs/spec-gaps.md, Provider API client: addresses and versions", () => {
  it("reads each named deployment from the variable it names", () => {
    const [[deployments = "", variables = ""] = []] = quoted(/`resolveBaseUrl\(((?:"\w+" \| )+)"<http\(s\) URL>"\)` reads ((?:`\w+`, )+`\w+`)/);
    const names = [...deployments.matchAll(/"(\w+)"/g)].map((m) => m[1] ?? "");
    const vars = [...variables.matchAll(/`(\w+)`/g)].map((m) => m[1] ?? "");
    expect(Object.fromEntries(names.map((name, i) => [name, vars[i]]))).toEqual(BASE_URL_ENV_VARS);
    for (const [name, variable] of Object.entries(BASE_URL_ENV_VARS)) {
      expect(resolveBaseUrl(name, { [variable]: "https://api.example/" })).toBe("https://api.example");
    }
  });

  it("takes http only for the loopback hosts it names, and gives the in-process sandbox the address it says", () => {
    const [[hosts = ""] = []] = quoted(/`http:` being accepted only for a loopback host \((.+?): a local sandbox/);
    expect(hosts).toBe("`localhost`, 127.0.0.0/8, `[::1]`");
    for (const host of ["localhost", "127.0.0.1", "127.255.0.9", "[::1]"]) expect(resolveBaseUrl(`http://${host}:4010`)).toBe(`http://${host}:4010`);
    for (const host of ["128.0.0.1", "api.example", "[::2]"]) expect(() => resolveBaseUrl(`http://${host}:4010`), host).toThrow(ClientConfigurationError);
    expect(quoted(/The in-process sandbox's base URL is `([^`]+)`/)).toEqual([[SANDBOX_IN_PROCESS_URL]]);
  });

  it("refuses the API's own paths and the sign-in paths it names, naming the setting and never the value", () => {
    const [[own = "", token = ""] = []] = quoted(/whose path holds the API's own \(`([^`]+)`, or ending in `([^`]+)`/);
    const [[signIn = ""] = []] = quoted(/ending in a sign-in path \(((?:`[^`]+`, )+`[^`]+`)/);
    const signInPaths = quotedNames(signIn);
    expect(signInPaths).toHaveLength(3);
    for (const path of [`${own}/erp`, token, ...signInPaths]) {
      const value = `https://user-free.example/base${path}`;
      expect(() => resolveBaseUrl("eu", { QASHIO_EU_URL: value }), path).toThrow(/^QASHIO_EU_URL \(host user-free\.example\) must not/);
      expect(() => resolveBaseUrl("eu", { QASHIO_EU_URL: value }), path).not.toThrow(/\/base/);
    }
    // The authorize screen's address may end in the first sign-in path, not in the one authorize appends itself.
    const [[authorizeOk = "", authorizeRefused = ""] = []] = quoted(/`QASHIO_AUTHORIZE_URL` may end in `([^`]+)`, and one ending in `([^`]+)` is refused/);
    expect(resolveAuthorizeUrl(undefined, { QASHIO_AUTHORIZE_URL: `https://auth.example${authorizeOk}` })).toBe(`https://auth.example${authorizeOk}`);
    expect(() => resolveAuthorizeUrl(undefined, { QASHIO_AUTHORIZE_URL: `https://auth.example${authorizeRefused}` })).toThrow(/QASHIO_AUTHORIZE_URL .*authorize appends itself/);
  });

  it("calls API 2.0 paths only", () => {
    const [[version = ""] = []] = quoted(/API's own \(`(\/public\/v\d+)`/);
    for (const path of Object.values(PATHS)) expect(path.startsWith(`${version}/`), path).toBe(true);
  });
});

describe("docs/spec-gaps.md, Provider API client: the code it names", () => {
  it("cites files that exist, holding each name it cites there (bare file names under shared/qashio/)", () => {
    // The shared reader resolves `auth/...` and repository paths; a bare `http.ts` is one of shared/qashio/.
    const rooted = CLIENT.replace(/`([\w-]+\.ts)`/g, "`shared/qashio/$1`");
    expect(expectCitationsHold(rooted)).toBeGreaterThan(15);
  });
});
