/**
 * Single reads SINGLE_READ_CONCURRENCY at a time (mapSingleReads) through one real client, against a provider that
 * throttles: once a read met a 429, the others wait out its Retry-After instead of meeting 429s of their own.
 */
import { describe, expect, it } from "vitest";
import { mapSingleReads } from "../../shared/bridge/provider-errors.js";
import { HttpCore, type FetchResponse } from "../../shared/qashio/http.js";
import { StaticTokenProvider } from "../../shared/qashio/auth/token-provider.js";
import { fail, manualClock, ok, turns } from "../qashio/helpers.js";
import { seededRandom } from "./fakes.js";

const WINDOW_MS = 5_000;

/**
 * A provider that takes `perWindow` requests per fixed 5 s window and answers the rest 429 with a `Retry-After` up to
 * the window's end. Each answer takes 100-190 ms (seeded), so reads overlap as over a network. Counts the requests sent
 * while a 429 the client had already received still asked it to wait, and the requests of each read.
 */
function throttlingProvider(clock: ReturnType<typeof manualClock>, perWindow: number) {
  const start = clock.now();
  const latency = seededRandom(7);
  const served = new Map<number, number>();
  let waitAskedUntil = Number.NEGATIVE_INFINITY;
  const stats = { requests: 0, sentWhileAskedToWait: 0, perRead: new Map<string, number>() };
  const fetch = async (url: string): Promise<FetchResponse> => {
    const arrived = clock.now();
    stats.requests += 1;
    const qid = new URL(url).searchParams.get("qashio_id") ?? "";
    stats.perRead.set(qid, (stats.perRead.get(qid) ?? 0) + 1);
    if (arrived < waitAskedUntil) stats.sentWhileAskedToWait += 1;
    const window = Math.floor((arrived - start) / WINDOW_MS);
    const count = (served.get(window) ?? 0) + 1;
    served.set(window, count);
    await clock.sleep(100 + Math.floor(latency() * 10) * 10);
    if (count <= perWindow) return ok([{ id: "x" }]);
    const seconds = Math.ceil((start + (window + 1) * WINDOW_MS - arrived) / 1000);
    waitAskedUntil = Math.max(waitAskedUntil, clock.now() + seconds * 1000);
    return fail(429, [], { "retry-after": String(seconds) });
  };
  return { fetch, stats };
}

/** Runs `run` on the manual clock, moving it 10 ms at a time until `run` settles. */
async function onClock<T>(clock: ReturnType<typeof manualClock>, run: () => Promise<T>): Promise<T> {
  let settled = false;
  const pending = run().finally(() => (settled = true));
  pending.catch(() => undefined);
  for (let i = 0; !settled && i < 100_000; i++) await clock.advance(10);
  await turns();
  return pending;
}

function throttledReads(perWindow: number) {
  const clock = manualClock();
  const provider = throttlingProvider(clock, perWindow);
  const http = new HttpCore({ baseUrl: "https://provider.example.test", fetch: provider.fetch, clock, tokenProvider: new StaticTokenProvider("token"), retry: { random: () => 0.5 } });
  const read = (qid: string) => http.request({ method: "GET", path: "/public/v1/erp/transactions", query: { qashio_id: qid }, auth: "bearer", retry: "idempotent" });
  return { clock, stats: provider.stats, read };
}

const qashioIds = Array.from({ length: 20 }, (_, i) => `Q${i + 1}`);

describe("single reads against a throttling provider", () => {
  it("sends no read while a 429 another read met still asks the client to wait, and reads them all", async () => {
    const { clock, stats, read } = throttledReads(3);
    const pages = await onClock(clock, () => mapSingleReads(qashioIds, read));
    expect(pages).toHaveLength(qashioIds.length);
    expect(stats.sentWhileAskedToWait).toBe(0);
  });

  // Fewer requests per window than reads run at once: when a wait ends, the reads that waited must not all go at once
  // (the burst would meet 429s again, each spending one of a read's five attempts).
  it.each([
    { perWindow: 1, perRead: 3 },
    { perWindow: 2, perRead: 2 },
  ])("reads them all against a provider taking $perWindow request(s) per window, slowly starting again after each wait", async ({ perWindow, perRead }) => {
    const { clock, stats, read } = throttledReads(perWindow);
    const pages = await onClock(clock, () => mapSingleReads(qashioIds, read));
    expect(pages).toHaveLength(qashioIds.length);
    expect(stats.sentWhileAskedToWait).toBe(0);
    // A slow start finds the window full by a 429 or two each wait: a few requests a read, not five.
    expect(stats.requests).toBeLessThanOrEqual(qashioIds.length * perRead);
    expect(Math.max(...stats.perRead.values())).toBeLessThanOrEqual(4);
  });
});
