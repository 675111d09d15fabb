/**
 * A 429's wait holds every request of the client, not only the one that met it: the provider throttles the token (the
 * company), so a request sent inside that wait would only meet a 429 too and spend one of its attempts on it.
 */
import { describe, expect, it } from "vitest";
import { HttpCore, type HttpRequest } from "../../shared/qashio/http.js";
import { StaticTokenProvider } from "../../shared/qashio/auth/token-provider.js";
import { DeadlineExceededError } from "../../shared/qashio/errors.js";
import { fail, manualClock, ok, scriptedFetch } from "./helpers.js";

function core(fetch: ReturnType<typeof scriptedFetch>) {
  const clock = manualClock();
  const http = new HttpCore({ baseUrl: "https://api.example.test", fetch, clock, tokenProvider: new StaticTokenProvider("token-1"), timeoutMs: 10_000, retry: { random: () => 0.5 } });
  return { http, clock };
}

const read = (qid: string): HttpRequest => ({ method: "GET", path: "/public/v1/erp/transactions", query: { qashio_id: qid }, auth: "bearer", retry: "idempotent" });

/** Settles into `outcome` (a response or an error) without an unhandled rejection. */
function track(pending: Promise<unknown>): { outcome?: unknown } {
  const box: { outcome?: unknown } = {};
  pending.then(
    (value) => (box.outcome = value),
    (error: unknown) => (box.outcome = error),
  );
  return box;
}

const sentFor = (fetch: ReturnType<typeof scriptedFetch>, qid: string) => fetch.calls.filter((c) => c.url.searchParams.get("qashio_id") === qid).length;

describe("HttpCore after a 429", () => {
  it("holds a request started inside another request's Retry-After until it ends, so it meets no 429 of its own", async () => {
    const fetch = scriptedFetch(fail(429, [], { "retry-after": "5" }), ok([]));
    const { http, clock } = core(fetch);
    const first = track(http.request(read("Q1")));
    await clock.advance(1000);
    const second = track(http.request(read("Q2")));
    await clock.advance(3999);
    expect(sentFor(fetch, "Q2")).toBe(0);
    await clock.advance(1);
    expect(first.outcome).toMatchObject({ status: 200 });
    expect(second.outcome).toMatchObject({ status: 200 });
    expect(sentFor(fetch, "Q1")).toBe(2);
    expect(sentFor(fetch, "Q2")).toBe(1);
  });

  it("ends a request as out of time, unsent, when the wait leaves no whole attempt before its deadline", async () => {
    const fetch = scriptedFetch(fail(429, [], { "retry-after": "5" }), ok([]));
    const { http, clock } = core(fetch);
    track(http.request(read("Q1")));
    await clock.advance(0);
    // 5 s of wait and a 10 s attempt do not fit in 14 s.
    const late = track(http.request({ ...read("Q2"), deadline: clock.now() + 14_000 }));
    await clock.advance(0);
    expect(late.outcome).toBeInstanceOf(DeadlineExceededError);
    expect((late.outcome as Error).message).toContain("was not sent");
    expect(sentFor(fetch, "Q2")).toBe(0);
    // One that fits waits and is sent.
    const inTime = track(http.request({ ...read("Q3"), deadline: clock.now() + 15_000 }));
    await clock.advance(5000);
    expect(inTime.outcome).toMatchObject({ status: 200 });
  });

  it("ends the wait at once when asked to stop, and sends nothing", async () => {
    const fetch = scriptedFetch(fail(429, [], { "retry-after": "30" }), ok([]));
    const { http, clock } = core(fetch);
    track(http.request(read("Q1")));
    await clock.advance(0);
    const stop = new AbortController();
    const stopped = track(http.request({ ...read("Q2"), stop: stop.signal }));
    await clock.advance(1000);
    stop.abort();
    await clock.advance(0);
    expect(stopped.outcome).toBeInstanceOf(DeadlineExceededError);
    expect((stopped.outcome as Error).message).toContain("asked to stop");
    expect(sentFor(fetch, "Q2")).toBe(0);
  });

  it("does not hold other requests for a 5xx's Retry-After: that answer is about the one request", async () => {
    const fetch = scriptedFetch(fail(503, [], { "retry-after": "5" }), ok([]));
    const { http, clock } = core(fetch);
    track(http.request(read("Q1")));
    await clock.advance(1000);
    const second = track(http.request(read("Q2")));
    await clock.advance(0);
    expect(second.outcome).toMatchObject({ status: 200 });
  });

  it("waits each instant out once: a clock that does not move while sleeping (the functions' harness) cannot hold a request", async () => {
    const fetch = scriptedFetch(fail(429, [], { "retry-after": "5" }), ok([]), ok([]));
    const now = Date.UTC(2025, 0, 15, 12, 0, 0);
    const sleeps: number[] = [];
    const frozen = { now: () => now, sleep: async (ms: number) => void sleeps.push(ms) };
    const http = new HttpCore({ baseUrl: "https://api.example.test", fetch, clock: frozen, tokenProvider: new StaticTokenProvider("token-1"), timeoutMs: 10_000, retry: { random: () => 0.5 } });
    await expect(http.request(read("Q1"))).resolves.toMatchObject({ status: 200 });
    // A later request waits for the same instant once, then goes (it looped on a clock that never reached it).
    await expect(http.request(read("Q2"))).resolves.toMatchObject({ status: 200 });
    expect(sleeps).toEqual([5000, 5000]);
  });
});
