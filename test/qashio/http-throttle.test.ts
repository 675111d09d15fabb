/**
 * A 429's wait holds every request of the client, not only the one that met it: the provider throttles the token (the
 * company), so a request sent inside that wait would only meet a 429 too and spend one of its attempts on it.
 */
import { getEventListeners } from "node:events";
import { describe, expect, it, vi } from "vitest";
import { HttpCore, type Clock, type HttpRequest, type RetryOptions } from "../../shared/qashio/http.js";
import { StaticTokenProvider, type TokenProvider } from "../../shared/qashio/auth/token-provider.js";
import { DeadlineExceededError, RateLimitedError } from "../../shared/qashio/errors.js";
import { fail, heldFetch, manualClock, ok, scriptedFetch, turns } from "./helpers.js";

/** The client the throttling tests drive: `fetch` on `clock`, one token, 10 s attempts, a fixed jitter, `retry` over it. */
function core<C extends Clock = ReturnType<typeof manualClock>>(
  fetch: ConstructorParameters<typeof HttpCore>[0]["fetch"],
  clock: C = manualClock() as unknown as C,
  tokenProvider: TokenProvider = new StaticTokenProvider("token-1"),
  retry: RetryOptions = {},
) {
  const http = new HttpCore({ baseUrl: "https://api.example.test", fetch, clock, tokenProvider, timeoutMs: 10_000, retry: { random: () => 0.5, ...retry } });
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

/** Each of `qids` in turn is the one request in flight, and is answered 200. */
async function answeredOneByOne(qids: readonly string[], held: Pick<ReturnType<typeof heldFetch>, "inFlight" | "answer">, clock: { advance(ms: number): Promise<void> }) {
  for (const qid of qids) {
    expect(held.inFlight()).toEqual([qid]);
    held.answer(qid, ok([]));
    await clock.advance(0);
  }
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

  it("holds a request for no more than the 429's wait though the wall clock was stepped back an hour during it", async () => {
    // Timers run on the monotonic clock (as Node's do); only the wall clock is stepped back (NTP, a person).
    const timers = manualClock();
    let stepMs = 0;
    const clock = { ...timers, now: () => timers.now() + stepMs };
    const fetch = scriptedFetch(fail(429, [], { "retry-after": "5" }), ok([]), ok([]));
    const { http } = core(fetch, clock);
    const first = track(http.request(read("Q1")));
    await timers.advance(1000);
    stepMs = -60 * 60_000;
    const second = track(http.request(read("Q2")));
    await timers.advance(4000);
    expect(first.outcome).toMatchObject({ status: 200 });
    // Its wait began an hour before the 429's end on the stepped wall clock; it waits that 429's 5 s at most.
    await timers.advance(5000);
    expect(second.outcome).toMatchObject({ status: 200 });
    expect(sentFor(fetch, "Q2")).toBe(1);
  });

  it("holds a request whose token came after another request met a 429: it waits that out first, with the token it got", async () => {
    const { fetch, inFlight, answer } = heldFetch();
    const clock = manualClock();
    let tokens = 0;
    // Q2's token takes 1.5 s (a refresh); meanwhile Q1 meets a 429 asking 2 s.
    const tokenProvider: TokenProvider = {
      getAccessToken: async () => {
        tokens += 1;
        if (tokens === 2) await clock.sleep(1_500);
        return "token-1";
      },
      refreshAfterUnauthorized: async () => "token-1",
    };
    const { http } = core(fetch, clock, tokenProvider, { maxAttempts: 2 });
    const first = track(http.request(read("Q1")));
    await turns();
    const second = track(http.request(read("Q2")));
    await turns();
    answer("Q1", fail(429, [], { "retry-after": "2" }));
    await clock.advance(1_999);
    expect(sentFor(fetch, "Q2")).toBe(0);
    await clock.advance(1);
    // The wait over, the slow start's probe is Q1 (an attempt spent), then Q2.
    expect(inFlight()).toEqual(["Q1"]);
    answer("Q1", ok([]));
    await clock.advance(0);
    expect(inFlight()).toEqual(["Q2"]);
    // Q2's first attempt (the one handed back was never sent): a 503 leaves it its second.
    answer("Q2", fail(503));
    await clock.advance(125);
    expect(inFlight()).toEqual(["Q2"]);
    answer("Q2", ok([]));
    await clock.advance(0);
    expect(first.outcome).toMatchObject({ status: 200 });
    expect(second.outcome).toMatchObject({ status: 200 });
    expect(tokens).toBe(4);
  });

  it("ends a retry as out of time, not retried, when another request's 429 leaves it no whole attempt before its deadline", async () => {
    const { fetch, inFlight, answer } = heldFetch();
    const { http, clock } = core(fetch);
    const retried = track(http.request({ ...read("Q1"), deadline: clock.now() + 14_000 }));
    const other = track(http.request(read("Q2")));
    await turns();
    expect(inFlight()).toEqual(["Q1", "Q2"]);
    // Q1 meets a 503 (its retry waits 125 ms); meanwhile Q2 meets a 429 asking 5 s: 5 s and a 10 s attempt exceed 14 s.
    answer("Q1", fail(503));
    answer("Q2", fail(429, [], { "retry-after": "5" }));
    await clock.advance(125);
    expect(retried.outcome).toBeInstanceOf(DeadlineExceededError);
    expect((retried.outcome as Error).message).toMatch(/was not retried: the provider's rate limit leaves no whole attempt before its deadline \(last attempt: .*503/);
    await clock.advance(5_000);
    answer("Q2", ok([]));
    await clock.advance(0);
    expect(other.outcome).toMatchObject({ status: 200 });
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
    expect((late.outcome as Error).message).toContain("was not sent: the provider's rate limit leaves no whole attempt before its deadline");
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

  it.each([
    { why: "its last attempt", request: read("Q1"), maxAttempts: 1 },
    { why: "a request never retried (card issuance)", request: { ...read("Q1"), method: "POST", retry: "never" } as HttpRequest, maxAttempts: 5 },
  ])("holds the client for the Retry-After of a 429 that ends $why: the provider asked the client to wait", async ({ request, maxAttempts }) => {
    const fetch = scriptedFetch(fail(429, [], { "retry-after": "5" }), ok([]));
    const clock = manualClock();
    const { http } = core(fetch, clock, undefined, { maxAttempts });
    const first = track(http.request(request));
    await clock.advance(0);
    expect(first.outcome).toMatchObject({ name: "RateLimitedError", retryAfterMs: 5_000 });
    const second = track(http.request(read("Q2")));
    await clock.advance(4999);
    expect(sentFor(fetch, "Q2")).toBe(0);
    await clock.advance(1);
    expect(second.outcome).toMatchObject({ status: 200 });
  });

  // maxRetryAfterMs (60 s) bounds what a Retry-After may ask; the client's own backoff is waited for whatever its length.
  const longCeiling = { baseDelayMs: 90_000, maxDelayMs: 90_000 };
  const holds: { why: string; headers: Record<string, string>; retry: RetryOptions; heldMs: number }[] = [
    { why: "without Retry-After, for the backoff's ceiling", headers: {}, retry: { baseDelayMs: 200 }, heldMs: 200 },
    { why: "asking for no wait (Retry-After 0), for the backoff's ceiling", headers: { "retry-after": "0" }, retry: { baseDelayMs: 200 }, heldMs: 200 },
    { why: "without Retry-After, for a backoff ceiling past maxRetryAfterMs", headers: {}, retry: longCeiling, heldMs: 90_000 },
    { why: "asking for no wait, for a backoff ceiling past maxRetryAfterMs", headers: { "retry-after": "0" }, retry: longCeiling, heldMs: 90_000 },
    { why: "asking for exactly maxRetryAfterMs, for that wait (a retry would wait it)", headers: { "retry-after": "60" }, retry: {}, heldMs: 60_000 },
  ];
  it.each(holds)("holds the client, not refuses it, after a 429 that ends its request $why", async ({ headers, retry, heldMs }) => {
    const fetch = scriptedFetch(fail(429, [], headers), ok([]));
    const clock = manualClock();
    const { http } = core(fetch, clock, undefined, { maxAttempts: 1, maxRetryAfterMs: 60_000, ...retry });
    track(http.request(read("Q1")));
    await clock.advance(0);
    const second = track(http.request(read("Q2")));
    await clock.advance(heldMs - 1);
    expect(second.outcome).toBeUndefined();
    expect(sentFor(fetch, "Q2")).toBe(0);
    await clock.advance(1);
    expect(second.outcome).toMatchObject({ status: 200 });
  });

  it("holds the client for the backoff ceiling of the attempt a 429 without Retry-After ended, not the first one's", async () => {
    const fetch = scriptedFetch(fail(429), fail(429), fail(429), ok([]));
    const clock = manualClock();
    const { http } = core(fetch, clock, undefined, { maxAttempts: 3, baseDelayMs: 200 });
    const first = track(http.request(read("Q1")));
    // Retried after 100 and 200 ms (0.5 of the ceilings 200 and 400); the third 429 ends it at a ceiling of 800 ms.
    await clock.advance(300);
    expect(first.outcome).toBeInstanceOf(RateLimitedError);
    expect(sentFor(fetch, "Q1")).toBe(3);
    const second = track(http.request(read("Q2")));
    await clock.advance(799);
    expect(sentFor(fetch, "Q2")).toBe(0);
    await clock.advance(1);
    expect(second.outcome).toMatchObject({ status: 200 });
  });

  it("refuses requests, unsent, after a 429 that ends its request with a Retry-After past maxRetryAfterMs", async () => {
    const fetch = scriptedFetch(fail(429, [], { "retry-after": "120" }), ok([]));
    const clock = manualClock();
    const { http } = core(fetch, clock, undefined, { maxAttempts: 1, baseDelayMs: 200 });
    // A wait past maxRetryAfterMs (60 s) is not waited for: it refuses the other requests, unsent, until it passes.
    track(http.request(read("Q3")));
    await clock.advance(0);
    const fourth = track(http.request(read("Q4")));
    await clock.advance(0);
    expect(fourth.outcome).toMatchObject({ name: "RateLimitedError", retryAfterMs: 120_000 });
    expect(sentFor(fetch, "Q4")).toBe(0);
  });

  it("holds the waiters until the first wait's end when a 429 asking a shorter wait comes during it", async () => {
    const { fetch, inFlight, answer } = heldFetch();
    const clock = manualClock();
    const { http } = core(fetch, clock);
    const reads = ["Q1", "Q3"].map((qid) => track(http.request(read(qid))));
    await turns();
    answer("Q1", fail(429, [], { "retry-after": "5" }));
    await turns();
    reads.push(track(http.request(read("Q2"))));
    await clock.advance(1_000);
    // Q3, sent before the first 429, meets one asking 1 s: the client still waits until the 5 s are over.
    answer("Q3", fail(429, [], { "retry-after": "1" }));
    await clock.advance(3_999);
    expect(inFlight()).toEqual([]);
    await clock.advance(1);
    expect(inFlight()).toHaveLength(1);
    for (let round = 0; round < 3 && inFlight().length > 0; round += 1) {
      for (const qid of inFlight()) answer(qid, ok([]));
      await clock.advance(0);
    }
    for (const each of reads) expect(each.outcome).toMatchObject({ status: 200 });
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
    const { http } = core(fetch, frozen);
    await expect(http.request(read("Q1"))).resolves.toMatchObject({ status: 200 });
    // A later request waits for the same instant once, then goes (it looped on a clock that never reached it).
    await expect(http.request(read("Q2"))).resolves.toMatchObject({ status: 200 });
    expect(sleeps).toEqual([5000, 5000]);
  });

  // A real clock moves while the client works out a request's turn: here it reaches the wait's end at the request's
  // `reading`-th look at it, whichever step of the turn that is (the engine's own wait for the 429 ends a millisecond
  // early on a Node timer, so its next read comes then). Each must be sent once the wait is over.
  it.each(Array.from({ length: 8 }, (_, i) => ({ reading: i + 1 })))(
    "sends a request that comes a moment before a 429's wait ends, when the clock reaches the end at its reading $reading",
    async ({ reading }) => {
      const fetch = scriptedFetch(fail(429, [], { "retry-after": "1" }), ok([]));
      const clock = manualClock();
      const end = clock.now() + 1_000;
      let readings = Number.NEGATIVE_INFINITY;
      const moving: Clock = { now: () => ((readings += 1) >= reading ? Math.max(clock.now(), end) : clock.now()), sleep: clock.sleep };
      const { http } = core(fetch, moving, undefined, { maxAttempts: 1 });
      track(http.request(read("Q1")));
      await clock.advance(999);
      readings = 0;
      const second = track(http.request(read("Q2")));
      await clock.advance(1);
      expect(second.outcome).toMatchObject({ status: 200 });
      expect(sentFor(fetch, "Q2")).toBe(1);
    },
  );

  // A real clock moves at each of the client's looks at it; the look that decides a whole attempt still fits must be
  // the last before the send, or the request goes on a check the clock has moved past (here, past a 429's wait, the
  // look for a 429 met since its turn came after it).
  it.each(Array.from({ length: 8 }, (_, i) => ({ margin: i + 1 })))(
    "sends no request past its last start on a clock that moves at each reading of it (its last start $margin ms on)",
    async ({ margin }) => {
      const clock = manualClock();
      let moving = false;
      const ticking: Clock = {
        now: () => {
          if (moving) clock.step(1);
          return clock.now();
        },
        sleep: clock.sleep,
      };
      const sentAt: number[] = [];
      const fetch = scriptedFetch(fail(429, [], { "retry-after": "1" }), () => (sentAt.push(clock.now()), ok([])));
      const { http } = core(fetch, ticking, undefined, { maxAttempts: 1 });
      track(http.request(read("Q1")));
      await clock.advance(1_000);
      moving = true;
      const deadline = clock.now() + 10_000 + margin;
      const second = track(http.request({ ...read("Q2"), deadline }));
      await clock.advance(0);
      // Sent whole before its deadline, or not sent at all.
      if (sentAt.length === 0) expect(second.outcome).toBeInstanceOf(DeadlineExceededError);
      else expect(second.outcome).toMatchObject({ status: 200 });
      expect(sentAt.filter((at) => at + 10_000 > deadline)).toEqual([]);
    },
  );
});

describe("HttpCore after a 429 asking for a longer wait than a retry would wait", () => {
  /** Q1 meets a 429 asking `retryAfter` seconds (an hour; past maxRetryAfterMs, 60 s): it fails at once, as before. */
  async function refusedForAnHour(retryAfter = "3600") {
    const { fetch, inFlight, answer } = heldFetch();
    const clock = manualClock();
    const { http } = core(fetch, clock);
    const q1 = track(http.request(read("Q1")));
    await turns();
    answer("Q1", fail(429, [], { "retry-after": retryAfter }));
    await clock.advance(0);
    expect(q1.outcome).toBeInstanceOf(RateLimitedError);
    expect(q1.outcome).toMatchObject({ retryAfterMs: Number(retryAfter) * 1000 });
    return { http, fetch, clock, inFlight, answer };
  }

  it("refuses every request of the client at once, unsent, with the wait left, until that wait has passed", async () => {
    const { http, fetch, clock } = await refusedForAnHour();
    await clock.advance(1_000);
    // A later cycle of the same client (a warm Lambda container, `run --interval`): nothing is sent inside the wait.
    const later = track(http.request({ ...read("Q2"), deadline: clock.now() + 30_000 }));
    await turns();
    expect(later.outcome).toBeInstanceOf(RateLimitedError);
    expect(later.outcome).toMatchObject({ status: 429, retryAfterMs: 3_599_000, method: "GET", path: "/public/v1/erp/transactions" });
    expect((later.outcome as Error).message).toMatch(/^GET \/public\/v1\/erp\/transactions was not sent: the provider asked for no request before 2025-01-15T13:00:00\.000Z \(a 429's Retry-After\), 3599 s from now$/);
    expect(sentFor(fetch, "Q2")).toBe(0);
    await clock.advance(3_598_999);
    const last = track(http.request(read("Q3")));
    await turns();
    expect(last.outcome).toMatchObject({ name: "RateLimitedError", retryAfterMs: 1 });
    // A part of a second left counts as a second: "0 s from now" would read as no wait at all.
    expect((last.outcome as Error).message).toMatch(/, 1 s from now$/);
    expect(fetch.calls).toHaveLength(1);
  });

  // Provider data: a Retry-After of days, or past any date (Infinity), must neither silence the tenant for good nor turn
  // the refusal into an unreadable RangeError.
  it.each([
    ["a week", String(7 * 86_400)],
    ["past any date", "9".repeat(400)],
  ])("refuses for an hour at most when the Retry-After asks for %s, with a readable error", async (_, retryAfter) => {
    const { http, fetch, clock, answer } = await refusedForAnHour(retryAfter);
    const refused = track(http.request(read("Q2")));
    await turns();
    expect(refused.outcome).toMatchObject({ name: "RateLimitedError", retryAfterMs: 3_600_000 });
    expect((refused.outcome as Error).message).toMatch(/no request before 2025-01-15T13:00:00\.000Z \(a 429's Retry-After, capped at an hour\), 3600 s from now$/);
    await clock.advance(3_600_000);
    const probe = track(http.request(read("Q3")));
    await turns();
    expect(sentFor(fetch, "Q3")).toBe(1);
    answer("Q3", ok([]));
    await clock.advance(0);
    expect(probe.outcome).toMatchObject({ status: 200 });
  });

  it("keeps refusing until the longest wait has passed when a 429 asking a shorter long wait comes during it", async () => {
    const { fetch, answer } = heldFetch();
    const clock = manualClock();
    const { http } = core(fetch, clock);
    track(http.request(read("Q1")));
    const q2 = track(http.request(read("Q2")));
    await turns();
    answer("Q1", fail(429, [], { "retry-after": "3600" }));
    answer("Q2", fail(429, [], { "retry-after": "120" }));
    await clock.advance(0);
    expect(q2.outcome).toMatchObject({ name: "RateLimitedError", retryAfterMs: 120_000 });
    // Past the shorter wait, inside the longer: refused at once still, not held for the rest of the hour.
    await clock.advance(200_000);
    const later = track(http.request(read("Q3")));
    await turns();
    expect(later.outcome).toMatchObject({ name: "RateLimitedError", retryAfterMs: 3_400_000 });
    expect(sentFor(fetch, "Q3")).toBe(0);
  });

  it("refuses again after a second long 429 once the first refusal has passed, rather than holding requests for its wait", async () => {
    const { http, fetch, clock, answer } = await refusedForAnHour();
    await clock.advance(3_600_000);
    const probe = track(http.request(read("Q3")));
    await turns();
    answer("Q3", fail(429, [], { "retry-after": "1800" }));
    await clock.advance(0);
    expect(probe.outcome).toMatchObject({ name: "RateLimitedError", retryAfterMs: 1_800_000 });
    const refused = track(http.request(read("Q4")));
    await turns();
    expect(refused.outcome).toMatchObject({ name: "RateLimitedError", retryAfterMs: 1_800_000 });
    expect((refused.outcome as Error).message).toContain("was not sent");
    expect(sentFor(fetch, "Q4")).toBe(0);
  });

  it("starts slowly once the wait has passed, as after any other 429: one probe, then more as answers come", async () => {
    const { http, clock, inFlight, answer } = await refusedForAnHour();
    await clock.advance(3_600_000);
    const batch = ["Q2", "Q3", "Q4"].map((qid) => track(http.request(read(qid))));
    await turns();
    expect(inFlight()).toEqual(["Q2"]);
    answer("Q2", ok([]));
    await clock.advance(0);
    expect(inFlight()).toEqual(["Q3", "Q4"]);
    answer("Q3", ok([]));
    answer("Q4", ok([]));
    await clock.advance(0);
    for (const each of batch) expect(each.outcome).toMatchObject({ status: 200 });
  });

  it("ends the requests waiting for their turn and those retrying at once, unsent, when the 429 comes", async () => {
    const { fetch, inFlight, answer } = heldFetch();
    const clock = manualClock();
    const { http } = core(fetch, clock);
    const [q1, q2, q3] = ["Q1", "Q2", "Q3"].map((qid) => track(http.request(read(qid))));
    await turns();
    // Q1 meets a short wait and waits it out for its retry; Q4 starts inside it; Q2's 503 backs off.
    answer("Q1", fail(429, [], { "retry-after": "5" }));
    answer("Q2", fail(503));
    await clock.advance(0);
    const q4 = track(http.request({ ...read("Q4"), deadline: clock.now() + 60_000 }));
    await turns();
    expect(inFlight()).toEqual(["Q3"]);
    answer("Q3", fail(429, [], { "retry-after": "3600" }));
    await clock.advance(0);
    for (const each of [q1, q3, q4]) expect(each?.outcome).toBeInstanceOf(RateLimitedError);
    expect(q4?.outcome).toMatchObject({ retryAfterMs: 3_600_000 });
    // Q1's last answer is kept as the cause; Q2, out of its backoff, is refused too rather than sent again.
    expect((q1?.outcome as Error).cause).toMatchObject({ status: 429, retryAfterMs: 5_000 });
    await clock.advance(1_000);
    expect(q2?.outcome).toBeInstanceOf(RateLimitedError);
    expect((q2?.outcome as Error).cause).toMatchObject({ status: 503 });
    expect([sentFor(fetch, "Q1"), sentFor(fetch, "Q2"), sentFor(fetch, "Q3"), sentFor(fetch, "Q4")]).toEqual([1, 1, 1, 0]);
  });

  it("gets no token for a request it refuses, but lets a token already coming arrive (a refresh is never cut)", async () => {
    const { fetch, inFlight, answer } = heldFetch();
    const clock = manualClock();
    let tokens = 0;
    let refreshes = 0;
    // Q2's token (the third) takes 1.5 s (a refresh); meanwhile Q1 meets the 429.
    const tokenProvider: TokenProvider = {
      getAccessToken: async () => {
        tokens += 1;
        if (tokens === 3) await clock.sleep(1_500);
        return "token-1";
      },
      refreshAfterUnauthorized: async () => {
        refreshes += 1;
        return "token-2";
      },
    };
    const { http } = core(fetch, clock, tokenProvider);
    const q1 = track(http.request(read("Q1")));
    const q3 = track(http.request(read("Q3")));
    await turns();
    const q2 = track(http.request(read("Q2")));
    await turns();
    expect(inFlight()).toEqual(["Q1", "Q3"]);
    answer("Q1", fail(429, [], { "retry-after": "3600" }));
    await turns();
    // Q3's 401 would refresh the token for a replay that cannot be sent: it is refused before.
    answer("Q3", fail(401));
    await clock.advance(1_500);
    expect(q1.outcome).toBeInstanceOf(RateLimitedError);
    expect(q2.outcome).toBeInstanceOf(RateLimitedError);
    expect(q3.outcome).toBeInstanceOf(RateLimitedError);
    expect((q3.outcome as Error).cause).toMatchObject({ status: 401 });
    expect(tokens).toBe(3);
    expect(refreshes).toBe(0);
    expect(sentFor(fetch, "Q2")).toBe(0);
    // A request started now is refused before it asks for a token.
    track(http.request(read("Q4")));
    await turns();
    expect(tokens).toBe(3);
  });

  it("ends a stopped request as stopped, and holds nothing for a 5xx asking for a long wait", async () => {
    const { http, clock } = await refusedForAnHour();
    const stop = new AbortController();
    stop.abort();
    const stopped = track(http.request({ ...read("Q2"), stop: stop.signal }));
    await clock.advance(0);
    expect(stopped.outcome).toBeInstanceOf(DeadlineExceededError);
    const fetch = scriptedFetch(fail(503, [], { "retry-after": "3600" }), ok([]));
    const other = core(fetch);
    track(other.http.request(read("Q1")));
    await other.clock.advance(0);
    const next = track(other.http.request(read("Q2")));
    await other.clock.advance(0);
    expect(next.outcome).toMatchObject({ status: 200 });
  });
});

/** Q1 meets a 429 asking 5 s; the `waiting` reads (with `options`) start inside that wait. */
async function throttledWithWaiters(waiting: readonly string[], options: Partial<HttpRequest> = {}, clock: Clock = manualClock(), tokenProvider?: TokenProvider) {
  const { fetch, inFlight, answer } = heldFetch();
  const { http } = core(fetch, clock, tokenProvider);
  const q1 = track(http.request(read("Q1")));
  await turns();
  answer("Q1", fail(429, [], { "retry-after": "5" }));
  await turns();
  const waiters = waiting.map((qid) => track(http.request({ ...read(qid), ...options })));
  await turns();
  return { http, fetch, inFlight, answer, q1, waiters };
}

describe("HttpCore's slow start after a throttling wait", () => {
  it("sends requests concurrently while no 429 was met: four in flight at once", async () => {
    const { fetch, inFlight, answer } = heldFetch();
    const { http, clock } = core(fetch);
    const reads = ["Q1", "Q2", "Q3", "Q4"].map((qid) => track(http.request(read(qid))));
    await clock.advance(0);
    expect(inFlight()).toEqual(["Q1", "Q2", "Q3", "Q4"]);
    for (const qid of ["Q1", "Q2", "Q3", "Q4"]) answer(qid, ok([]));
    await clock.advance(0);
    for (const each of reads) expect(each.outcome).toMatchObject({ status: 200 });
  });

  it("lets one request through when the wait ends, the one that spent the most attempts, then twice as many per round answered", async () => {
    const clock = manualClock();
    const { inFlight, answer, q1, waiters } = await throttledWithWaiters(["Q2", "Q3", "Q4", "Q5"], {}, clock);
    await clock.advance(4999);
    expect(inFlight()).toEqual([]);
    await clock.advance(1);
    // The probe: Q1 has spent an attempt on the 429, the others none.
    expect(inFlight()).toEqual(["Q1"]);
    answer("Q1", ok([]));
    await clock.advance(0);
    expect(q1.outcome).toMatchObject({ status: 200 });
    expect(inFlight()).toEqual(["Q2", "Q3"]);
    // Half a round answered: its turn passes on, still two at a time.
    answer("Q2", ok([]));
    await clock.advance(0);
    expect(inFlight()).toEqual(["Q3", "Q4"]);
    // The round answered: four may go, more than wait, so the client is no longer limited.
    answer("Q3", ok([]));
    await clock.advance(0);
    expect(inFlight()).toEqual(["Q4", "Q5"]);
    answer("Q4", ok([]));
    answer("Q5", ok([]));
    await clock.advance(0);
    for (const each of waiters) expect(each.outcome).toMatchObject({ status: 200 });
  });

  it("gives the probe to the request that spent an attempt also when another comes once the clock passed the wait's end, before the waiting one woke", async () => {
    const { fetch, inFlight, answer } = heldFetch();
    const base = manualClock();
    const end = base.now() + 1_000;
    let past = false;
    // A real clock passes the wait's end before the timer of the request waiting for it has run.
    const clock: Clock = { now: () => (past ? Math.max(base.now(), end) : base.now()), sleep: base.sleep };
    const { http } = core(fetch, clock);
    const q1 = track(http.request(read("Q1")));
    await turns();
    answer("Q1", fail(429, [], { "retry-after": "1" }));
    await turns();
    past = true;
    const q2 = track(http.request(read("Q2")));
    await turns();
    await answeredOneByOne(["Q1", "Q2"], { inFlight, answer }, base);
    for (const each of [q1, q2]) expect(each.outcome).toMatchObject({ status: 200 });
  });

  it("holds a request that comes once a round's doubling is just filled by the requests in flight and waiting", async () => {
    const clock = manualClock();
    const { http, inFlight, answer, waiters } = await throttledWithWaiters(["Q2", "Q3", "Q4", "Q5", "Q6", "Q7"], {}, clock);
    await clock.advance(5000);
    answer("Q1", ok([]));
    await clock.advance(0);
    answer("Q2", ok([]));
    await clock.advance(0);
    answer("Q3", ok([]));
    await clock.advance(0);
    // The round of two answered: four may go, as many as are in flight (Q4) and waiting (Q5 to Q7), so four it stays.
    expect(inFlight()).toEqual(["Q4", "Q5", "Q6", "Q7"]);
    const late = track(http.request(read("Q8")));
    await turns();
    expect(inFlight()).toEqual(["Q4", "Q5", "Q6", "Q7"]);
    answer("Q4", ok([]));
    await clock.advance(0);
    expect(inFlight()).toEqual(["Q5", "Q6", "Q7", "Q8"]);
    for (const qid of inFlight()) answer(qid, ok([]));
    await clock.advance(0);
    for (const each of [...waiters, late]) expect(each.outcome).toMatchObject({ status: 200 });
  });

  it("leaves no listener on the stop signal once a request that waited for its turn is over (one signal stops a whole run)", async () => {
    const clock = manualClock();
    const stop = new AbortController();
    const { inFlight, answer, waiters } = await throttledWithWaiters(["Q2"], { stop: stop.signal }, clock);
    await clock.advance(5000);
    answer("Q1", ok([]));
    await clock.advance(0);
    expect(inFlight()).toEqual(["Q2"]);
    answer("Q2", ok([]));
    await clock.advance(0);
    expect(waiters[0]?.outcome).toMatchObject({ status: 200 });
    expect(getEventListeners(stop.signal, "abort")).toEqual([]);
  });

  it("starts over, one at a time after a new wait, when a request of the slow start meets a 429", async () => {
    const clock = manualClock();
    const { inFlight, answer, waiters } = await throttledWithWaiters(["Q2", "Q3", "Q4"], {}, clock);
    await clock.advance(5000);
    answer("Q1", ok([]));
    await clock.advance(0);
    expect(inFlight()).toEqual(["Q2", "Q3"]);
    answer("Q2", fail(429, [], { "retry-after": "5" }));
    answer("Q3", ok([]));
    await clock.advance(4999);
    expect(inFlight()).toEqual([]);
    await clock.advance(1);
    expect(inFlight()).toEqual(["Q2"]);
    answer("Q2", ok([]));
    await clock.advance(0);
    expect(inFlight()).toEqual(["Q4"]);
    answer("Q4", ok([]));
    await clock.advance(0);
    for (const each of waiters) expect(each.outcome).toMatchObject({ status: 200 });
  });

  it("lets one probe through, not every waiter, after a 429 of the slow start asking no wait (a jitter of 0): a 429 answers no round", async () => {
    const { fetch, inFlight, answer } = heldFetch();
    const { http, clock } = core(fetch, manualClock(), undefined, { random: () => 0 });
    const q1 = track(http.request(read("Q1")));
    await turns();
    // No Retry-After and a jitter of 0: a wait of 0, then the slow start, one request at a time.
    answer("Q1", fail(429));
    await clock.advance(0);
    expect(inFlight()).toEqual(["Q1"]);
    const waiters = ["Q2", "Q3"].map((qid) => track(http.request(read(qid))));
    await clock.advance(0);
    expect(inFlight()).toEqual(["Q1"]);
    answer("Q1", fail(429));
    await clock.advance(0);
    expect(inFlight()).toEqual(["Q2"]);
    for (const qid of ["Q2", "Q1", "Q3"]) {
      answer(qid, ok([]));
      await clock.advance(0);
    }
    for (const each of [q1, ...waiters]) expect(each.outcome).toMatchObject({ status: 200 });
  });

  it("counts requests that were getting their token when the 429 came among the slow start's: one probe when a short wait ends before their token", async () => {
    const { fetch, inFlight, answer } = heldFetch();
    const clock = manualClock();
    let tokens = 0;
    // Q2's and Q3's tokens take 1.5 s (a refresh); meanwhile Q1 meets a 429 asking 1 s, over before they come.
    const tokenProvider: TokenProvider = {
      getAccessToken: async () => {
        tokens += 1;
        if (tokens === 2 || tokens === 3) await clock.sleep(1_500);
        return "token-1";
      },
      refreshAfterUnauthorized: async () => "token-1",
    };
    const { http } = core(fetch, clock, tokenProvider);
    const reads = ["Q1", "Q2", "Q3"].map((qid) => track(http.request(read(qid))));
    await turns();
    answer("Q1", fail(429, [], { "retry-after": "1" }));
    // The wait is over, but Q2 and Q3 hold the turns they took before the 429.
    await clock.advance(1_000);
    expect(inFlight()).toEqual([]);
    // Their tokens come: they hand those turns back and wait for turns of the slow start; the probe goes alone, Q1
    // first (an attempt spent).
    await clock.advance(500);
    expect(inFlight()).toEqual(["Q1"]);
    answer("Q1", ok([]));
    await clock.advance(0);
    expect(inFlight()).toEqual(["Q2", "Q3"]);
    answer("Q2", ok([]));
    answer("Q3", ok([]));
    await clock.advance(0);
    for (const each of reads) expect(each.outcome).toMatchObject({ status: 200 });
  });

  it.each([
    ["a network error", () => new TypeError("fetch failed", { cause: { code: "ECONNRESET" } }), ["Q2"]],
    ["a 5xx", () => fail(503), ["Q2", "Q3"]],
  ] as const)("hands the turn on when the probe fails with %s: no waiter is left waiting for it", async (_what, failure, next) => {
    const clock = manualClock();
    const { inFlight, answer, q1, waiters } = await throttledWithWaiters(["Q2", "Q3"], {}, clock);
    await clock.advance(5000);
    expect(inFlight()).toEqual(["Q1"]);
    answer("Q1", failure());
    await clock.advance(0);
    // A network error says nothing of the limit: the next waiter probes. A 5xx is an answer other than a 429: it counts.
    expect(inFlight()).toEqual(next);
    for (let round = 0; round < 5 && inFlight().length > 0; round += 1) {
      for (const qid of inFlight()) answer(qid, ok([]));
      await clock.advance(1000);
    }
    expect(q1.outcome).toMatchObject({ status: 200 });
    for (const each of waiters) expect(each.outcome).toMatchObject({ status: 200 });
  });

  it("hands on the turn the probe's 429 freed for a waiter it then refuses, so the client sends again once the refusal has passed", async () => {
    const clock = manualClock();
    const { http, fetch, inFlight, answer, waiters } = await throttledWithWaiters(["Q2"], {}, clock);
    await clock.advance(5000);
    expect(inFlight()).toEqual(["Q1"]);
    // The probe's answer frees its turn for Q2, then its Retry-After of an hour refuses the client: Q2 ends unsent.
    answer("Q1", fail(429, [], { "retry-after": "3600" }));
    await clock.advance(0);
    expect(waiters[0]?.outcome).toBeInstanceOf(RateLimitedError);
    expect(sentFor(fetch, "Q2")).toBe(0);
    await clock.advance(3_600_000);
    const after = track(http.request(read("Q3")));
    await turns();
    await answeredOneByOne(["Q3"], { inFlight, answer }, clock);
    expect(after.outcome).toMatchObject({ status: 200 });
  });

  it("gets no token for a waiter the probe's 429 freed a turn for: it waits the new wait out first", async () => {
    const clock = manualClock();
    let tokens = 0;
    const tokenProvider: TokenProvider = {
      getAccessToken: async () => {
        tokens += 1;
        return "token-1";
      },
      refreshAfterUnauthorized: async () => "token-1",
    };
    const { inFlight, answer, waiters } = await throttledWithWaiters(["Q2"], {}, clock, tokenProvider);
    await clock.advance(5000);
    answer("Q1", fail(429, [], { "retry-after": "5" }));
    await clock.advance(0);
    // Q1's two attempts took a token each; Q2, though the answer freed a turn for it, none inside the new wait.
    expect(tokens).toBe(2);
    await clock.advance(5000);
    await answeredOneByOne(["Q1", "Q2"], { inFlight, answer }, clock);
    expect(tokens).toBe(4);
    expect(waiters[0]?.outcome).toMatchObject({ status: 200 });
  });

  it("hands the turn on when the probe times out", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const clock = manualClock();
      const { inFlight, waiters } = await throttledWithWaiters(["Q2"], {}, clock);
      await clock.advance(5000);
      expect(inFlight()).toEqual(["Q1"]);
      // The probe's 10 s timeout (a timer: the attempt's own, not the client's clock).
      await vi.advanceTimersByTimeAsync(10_000);
      await clock.advance(0);
      expect(inFlight()).toContain("Q2");
      expect(waiters[0]?.outcome).toBeUndefined();
    } finally {
      vi.useRealTimers();
    }
  });

  it("ends a request waiting for its turn as out of time, unsent, once no whole attempt fits before its deadline", async () => {
    const clock = manualClock();
    const start = clock.now();
    // The 5 s wait and a 10 s attempt fit in 20 s; the probe then holds the turn past the last instant Q2 could start.
    const { inFlight, answer, fetch, waiters } = await throttledWithWaiters(["Q2"], { deadline: start + 20_000 }, clock);
    await clock.advance(5000);
    expect(inFlight()).toEqual(["Q1"]);
    await clock.advance(4999);
    expect(waiters[0]?.outcome).toBeUndefined();
    await clock.advance(1);
    expect(waiters[0]?.outcome).toBeInstanceOf(DeadlineExceededError);
    expect((waiters[0]?.outcome as Error).message).toContain("was not sent: the requests held back after the provider's rate limit leave no whole attempt");
    expect(sentFor(fetch, "Q2")).toBe(0);
    answer("Q1", ok([]));
  });

  it("ends a request waiting for its turn at its last start also when the timer ends it a little early, as Node's may", async () => {
    const base = manualClock();
    // Node's timers run on the event loop's cached time: one often ends a millisecond (or more) before Date.now() is due.
    const clock: Clock = { now: base.now, sleep: (ms, signal) => base.sleep(ms > 1 ? ms - 1 : ms, signal) };
    const start = clock.now();
    const { inFlight, answer, fetch, waiters } = await throttledWithWaiters(["Q2"], { deadline: start + 20_000 }, clock);
    await base.advance(5000);
    expect(inFlight()).toEqual(["Q1"]);
    // Q2's last start (10 s before its deadline) passes while the probe holds the turn.
    await base.advance(5000);
    expect(waiters[0]?.outcome).toBeInstanceOf(DeadlineExceededError);
    expect((waiters[0]?.outcome as Error).message).toContain("was not sent");
    expect(sentFor(fetch, "Q2")).toBe(0);
    answer("Q1", ok([]));
  });

  it("ends a request waiting for its turn at once when asked to stop, and sends nothing", async () => {
    const clock = manualClock();
    const stop = new AbortController();
    const { inFlight, answer, fetch, waiters } = await throttledWithWaiters(["Q2"], { stop: stop.signal }, clock);
    await clock.advance(5000);
    expect(inFlight()).toEqual(["Q1"]);
    stop.abort();
    await clock.advance(0);
    expect(waiters[0]?.outcome).toBeInstanceOf(DeadlineExceededError);
    expect((waiters[0]?.outcome as Error).message).toContain("asked to stop");
    expect(sentFor(fetch, "Q2")).toBe(0);
    answer("Q1", ok([]));
  });

  it("does not spin waiting for a turn on a clock that does not move while sleeping (the functions' harness)", async () => {
    const now = Date.UTC(2025, 0, 15, 12, 0, 0);
    const sleeps: number[] = [];
    const frozen = { now: () => now, sleep: async (ms: number) => void sleeps.push(ms) };
    const { inFlight, answer, waiters } = await throttledWithWaiters(["Q2"], { deadline: now + 60_000 }, frozen);
    await turns(20);
    // Q1 and Q2 each waited the 5 s once, Q2 then its last start (50 s on) once: it now waits for the turn, not the clock.
    expect(inFlight()).toEqual(["Q1"]);
    expect(sleeps).toEqual([5000, 5000, 50_000]);
    answer("Q1", ok([]));
    await turns();
    expect(inFlight()).toEqual(["Q2"]);
    answer("Q2", ok([]));
    await turns();
    expect(waiters[0]?.outcome).toMatchObject({ status: 200 });
  });
});

describe("HttpCore once the throttle is over", () => {
  /** Q1 meets a 429 asking `retryAfterS` and gives up (its last attempt), leaving the client idle with a limit of one. */
  async function throttledThenIdle(retryAfterS: number, maxRetryAfterMs: number) {
    const { fetch, inFlight, answer } = heldFetch();
    const clock = manualClock();
    const { http } = core(fetch, clock, undefined, { maxAttempts: 1, maxRetryAfterMs });
    const q1 = track(http.request(read("Q1")));
    await turns();
    answer("Q1", fail(429, [], { "retry-after": String(retryAfterS) }));
    await clock.advance(0);
    expect(q1.outcome).toMatchObject({ name: "RateLimitedError" });
    const batch = () => ["Q2", "Q3", "Q4", "Q5"].map((qid) => track(http.request(read(qid))));
    return { http, clock, inFlight, answer, batch };
  }

  // The quiet that ends it: a minute after the wait's end, or as long as the wait when that was longer.
  const quiets = [
    { wait: 5, cap: 60_000, quietMs: 60_000, after: "a minute" },
    { wait: 120, cap: 180_000, quietMs: 120_000, after: "as long again as a wait longer than a minute" },
  ];

  it.each(quiets)("sends a batch concurrently again, as a client never throttled, once $after has passed since the wait ended without a 429", async ({ wait, cap, quietMs }) => {
    const { clock, inFlight, answer, batch } = await throttledThenIdle(wait, cap);
    // A 429 long past (a Lambda container kept warm, `run --interval`): nothing of it is left.
    await clock.advance(wait * 1000 + quietMs);
    const reads = batch();
    await turns();
    expect(inFlight()).toEqual(["Q2", "Q3", "Q4", "Q5"]);
    for (const qid of ["Q2", "Q3", "Q4", "Q5"]) answer(qid, ok([]));
    await clock.advance(0);
    for (const each of reads) expect(each.outcome).toMatchObject({ status: 200 });
  });

  it.each(quiets)("keeps the slow start for a batch started before $after has passed: one probe first", async ({ wait, cap, quietMs }) => {
    const { clock, inFlight, answer, batch } = await throttledThenIdle(wait, cap);
    await clock.advance(wait * 1000 + quietMs - 1);
    batch();
    await turns();
    expect(inFlight()).toEqual(["Q2"]);
    answer("Q2", ok([]));
    await clock.advance(0);
    expect(inFlight()).toEqual(["Q3", "Q4"]);
  });

  it("sends a batch concurrently again once a lone probe after the wait was answered, though within the quiet", async () => {
    const { http, clock, inFlight, answer, batch } = await throttledThenIdle(5, 60_000);
    await clock.advance(5_000);
    const probe = track(http.request(read("Q6")));
    await turns();
    answer("Q6", ok([]));
    await clock.advance(0);
    expect(probe.outcome).toMatchObject({ status: 200 });
    // Its round answered with nothing waiting: the slow start holds nothing back any more.
    batch();
    await turns();
    expect(inFlight()).toEqual(["Q2", "Q3", "Q4", "Q5"]);
  });

  it("keeps the longer quiet of an earlier, longer wait when a 429 asking a short one comes after it", async () => {
    const { http, clock, inFlight, answer, batch } = await throttledThenIdle(120, 180_000);
    await clock.advance(120_000);
    const probe = track(http.request(read("Q6")));
    await turns();
    answer("Q6", fail(429, [], { "retry-after": "5" }));
    await clock.advance(0);
    expect(probe.outcome).toMatchObject({ name: "RateLimitedError" });
    // The short wait's minute of quiet is over, the long wait's two minutes are not: a batch still starts with one probe.
    await clock.advance(5_000 + 60_000);
    batch();
    await turns();
    expect(inFlight()).toEqual(["Q2"]);
  });

  it("keeps the limit for a request that comes long after the 429 while the probe is unanswered, with nothing else waiting", async () => {
    const clock = manualClock();
    const { http, inFlight, answer } = await throttledWithWaiters([], {}, clock);
    await clock.advance(5_000 + 120_000);
    const late = track(http.request(read("Q5")));
    await turns();
    await answeredOneByOne(["Q1", "Q5"], { inFlight, answer }, clock);
    expect(late.outcome).toMatchObject({ status: 200 });
  });

  it("does not end a slow start under way, however long ago its 429: the requests in flight and waiting keep their rounds", async () => {
    const clock = manualClock();
    const { http, inFlight, answer, waiters } = await throttledWithWaiters(["Q2", "Q3", "Q4"], {}, clock);
    await clock.advance(5_000);
    expect(inFlight()).toEqual(["Q1"]);
    // The probe is slow to answer (its timeout is a timer, not this clock): a request started long after still waits.
    await clock.advance(120_000);
    const late = track(http.request(read("Q5")));
    await turns();
    expect(inFlight()).toEqual(["Q1"]);
    answer("Q1", ok([]));
    await clock.advance(0);
    expect(inFlight()).toEqual(["Q2", "Q3"]);
    for (let round = 0; round < 3 && inFlight().length > 0; round += 1) {
      for (const qid of inFlight()) answer(qid, ok([]));
      await clock.advance(0);
    }
    for (const each of [...waiters, late]) expect(each.outcome).toMatchObject({ status: 200 });
  });
});
