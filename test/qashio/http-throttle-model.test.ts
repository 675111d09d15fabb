/**
 * Randomized schedules over the client's throttling wait and slow start: concurrent requests with deadlines, stops,
 * 429s, 5xx, network errors, timeouts, 401 replays, caller retries and slow or failing token providers. Whatever the
 * schedule, every request settles, no turn is lost or freed twice, nothing is sent inside a wait, past its last start
 * or after its stop, a 429 asking for longer than a retry would wait refuses every request at once, unsent, until it
 * has passed, no request waits for a turn it could have, and once the throttle is over a batch goes at once, as from a
 * client never throttled. The clock also moves by itself while the client reads it, as a real one does while code
 * runs, and requests come moments before the instants the client waits for.
 */
import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { HttpCore, type Clock, type HttpRequest, type RetryMode } from "../../shared/qashio/http.js";
import { RateLimitedError } from "../../shared/qashio/errors.js";
import type { TokenProvider } from "../../shared/qashio/auth/token-provider.js";
import { fail, heldFetch, manualClock, ok, turns } from "./helpers.js";

type Reply = "ok" | "429" | "429ra" | "429long" | "503" | "503ra" | "401" | "net";
type TokenMode = "now" | "slow" | "reject";
type Action =
  | {
      readonly kind: "start";
      readonly deadline: number | null;
      readonly stop: boolean;
      readonly retry: RetryMode;
      readonly callerRetries: number | null;
      /** Comes this many ms before the next instant the client waits for (see `nearWake`), else now. */
      readonly near: number | null;
    }
  | { readonly kind: "answer"; readonly pick: number; readonly reply: Reply; readonly ra: number }
  | { readonly kind: "advance"; readonly ms: number }
  | { readonly kind: "stop"; readonly pick: number }
  | { readonly kind: "batch"; readonly size: number }
  | { readonly kind: "nearWake"; readonly before: number };

/**
 * Time after a 429 by which the throttle is over: its wait (at most 20 s here: a Retry-After of up to 8 s, else a
 * backoff capped at maxDelayMs) and the minute of quiet after it, with a margin.
 */
const QUIET_BOUND_MS = 20_000 + 60_000 + 5_000;
/** The same after a `429long`: its wait (120 s, past maxRetryAfterMs: refused meanwhile) and as long again of quiet. */
const LONG_QUIET_BOUND_MS = 120_000 + 120_000 + 5_000;

const actionArb: fc.Arbitrary<Action> = fc.oneof(
  fc.record({
    kind: fc.constant("start" as const),
    deadline: fc.option(fc.integer({ min: 0, max: 45_000 })),
    stop: fc.boolean(),
    retry: fc.constantFrom<RetryMode>("idempotent", "idempotent", "unambiguous-only", "never"),
    callerRetries: fc.option(fc.integer({ min: 0, max: 4 }), { freq: 4 }),
    near: fc.oneof({ arbitrary: fc.constant(null), weight: 2 }, { arbitrary: fc.integer({ min: 1, max: 5 }), weight: 1 }),
  }),
  fc.record({
    kind: fc.constant("answer" as const),
    pick: fc.nat(),
    reply: fc.constantFrom<Reply>("ok", "ok", "429", "429ra", "429ra", "429long", "503", "503ra", "401", "net"),
    ra: fc.integer({ min: 0, max: 8 }),
  }),
  fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 12_000 }) }),
  fc.record({ kind: fc.constant("stop" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("batch" as const), size: fc.integer({ min: 2, max: 4 }) }),
  // Long enough, with no 429 answered meanwhile, for the throttle to be over (see QUIET_BOUND_MS).
  fc.record({ kind: fc.constant("advance" as const), ms: fc.constant(QUIET_BOUND_MS) }),
  // To a few ms before the next instant the client waits for (the wait's end, a sleep's end): where a request that
  // comes meets the clock reaching it while it works out its turn.
  fc.record({ kind: fc.constant("nearWake" as const), before: fc.integer({ min: 0, max: 5 }) }),
);

/**
 * Schedules, half of them short: a request meets a wait's end with nothing else in flight or waiting (nothing whose
 * end would hand it the room) mostly early in a schedule, before requests pile up.
 */
const scheduleArb = fc.oneof(fc.array(actionArb, { maxLength: 8 }), fc.array(actionArb, { maxLength: 40 }));

const TIMEOUT_MS = 10_000;
/**
 * How far the clock moves by itself at the client's readings of it, in turn (cycled; none when empty), as a real clock
 * moves while code runs between two readings.
 */
const driftArb = fc.array(fc.constantFrom(0, 1, 1, 2), { maxLength: 4 });
/** The most the clock moves by itself in one schedule: well inside the margins of the quiet bounds above. */
const DRIFT_BUDGET_MS = 1_000;
/** How late a sleep for a wait's end may end, the clock having moved by itself between its reading and the sleep. */
const LATE_WAKE_MS = 50;
const settingsArb = fc.record({ maxAttempts: fc.integer({ min: 1, max: 5 }), jitter: fc.constantFrom(0, 0.5, 0.999), drift: driftArb });

interface Started {
  readonly id: string;
  readonly deadline?: number;
  readonly stop?: AbortController;
  settled: boolean;
  outcome?: unknown;
}

function replyFor(reply: Reply, ra: number): Response | Error {
  switch (reply) {
    case "ok":
      return ok([]);
    case "429":
      return fail(429);
    case "429ra":
      return fail(429, [], { "retry-after": String(ra) });
    case "429long":
      return fail(429, [], { "retry-after": "120" });
    case "503":
      return fail(503);
    case "503ra":
      return fail(503, [], { "retry-after": String(ra) });
    case "401":
      return fail(401);
    case "net":
      return new TypeError("fetch failed", { cause: { code: "ECONNRESET" } });
  }
}

interface Settings {
  readonly maxAttempts: number;
  readonly jitter: number;
  /** See {@link driftArb}. */
  readonly drift?: readonly number[];
  /** `harness`: a clock whose sleeps only yield, time moving only when the schedule advances it (test/functions). */
  readonly clock?: "manual" | "harness";
}

/** The functions harness's clock: a sleep yields once and moves no time; the count of sleeps shows a spin. */
function harnessClock() {
  const base = manualClock();
  let now = base.now();
  let sleeps = 0;
  return {
    now: () => now,
    sleep: async () => {
      sleeps += 1;
      await new Promise((resolve) => setImmediate(resolve));
    },
    get sleeps() {
      return sleeps;
    },
    nextWake: undefined,
    step(ms: number) {
      now += ms;
    },
    async advance(ms: number) {
      now += ms;
      await turns();
    },
  };
}

async function runSchedule(actions: readonly Action[], tokenPlan: readonly TokenMode[], settings: Settings = { maxAttempts: 5, jitter: 0.5 }): Promise<void> {
  const harness = settings.clock === "harness" ? harnessClock() : undefined;
  const clock = harness ?? manualClock();
  // The client's view of the clock: it moves by itself at the readings the settings pick (see driftArb).
  const drift = settings.drift ?? [];
  let readings = 0;
  let drifted = 0;
  const clientClock: Clock = {
    now: () => {
      const ms = drift.length === 0 ? 0 : Math.min(drift[readings % drift.length] ?? 0, DRIFT_BUDGET_MS - drifted);
      readings += 1;
      if (ms > 0) {
        drifted += ms;
        clock.step(ms);
      }
      return clock.now();
    },
    sleep: (ms, signal) => clock.sleep(ms, signal),
  };
  const violations: string[] = [];
  const started: Started[] = [];
  // The client's own counters (its rate gate's), read once the schedule has settled and at each send.
  const internals = () =>
    (http as unknown as { gate: { notBefore: number; refusedUntil: number; inFlight: number; inFlightLimit: number; turnWaiters: { waited: number }[]; slowStarts: number } }).gate;
  const { fetch, held } = heldFetch((call): { round: number } => {
    const id = call.url.searchParams.get("qashio_id") ?? "";
    const request = started.find((r) => r.id === id);
    const now = clock.now();
    if (!harness && now < internals().notBefore) violations.push(`${id} sent at ${now} inside the wait to ${internals().notBefore}`);
    // No sleep ends a refusal: it holds on any clock. The client's own end counts from the instant it read the 429.
    const refusal = Math.max(refusedUntil, internals().refusedUntil ?? Number.NEGATIVE_INFINITY);
    if (now < refusal) violations.push(`${id} sent at ${now} inside the refusal to ${refusal}`);
    if (request?.deadline !== undefined && now + TIMEOUT_MS > request.deadline) violations.push(`${id} sent past its last start`);
    if (request?.stop?.signal.aborted) violations.push(`${id} sent after its stop`);
    const round: number = internals().slowStarts;
    const inRound = held.filter((h) => h.round === round).length + 1;
    if (inRound > internals().inFlightLimit) violations.push(`${id} sent as the ${inRound}th of its round, over the limit ${internals().inFlightLimit}`);
    return { round };
  });
  // When a batch the idle client starts goes as if never throttled: QUIET_BOUND_MS (LONG_QUIET_BOUND_MS) after a 429.
  let quietAt = Number.NEGATIVE_INFINITY;
  // The end of the latest `429long`'s wait, as the model sees it: until then every request is refused, unsent.
  let refusedUntil = Number.NEGATIVE_INFINITY;
  let tokenCalls = 0;
  // The checks after the schedule get their token at once.
  let plan = tokenPlan;
  const token = async (): Promise<string> => {
    const mode = plan.length === 0 ? "now" : plan[tokenCalls++ % plan.length];
    if (mode === "slow") await clock.sleep(1_500);
    if (mode === "reject") throw new Error("token store unavailable");
    return "token-1";
  };
  const tokenProvider: TokenProvider = { getAccessToken: token, refreshAfterUnauthorized: token };
  const http = new HttpCore({ baseUrl: "https://api.example.test", fetch, clock: clientClock, tokenProvider, timeoutMs: TIMEOUT_MS, retry: { random: () => settings.jitter, maxAttempts: settings.maxAttempts } });

  const start = (options: Omit<Partial<HttpRequest>, "stop"> & { stop?: boolean } = {}): Started => {
    const id = `R${started.length + 1}`;
    const stop = options.stop ? new AbortController() : undefined;
    const entry: Started = { id, deadline: options.deadline, stop, settled: false };
    started.push(entry);
    const request: HttpRequest = {
      method: options.retry === "never" ? "POST" : "GET",
      path: "/public/v1/erp/transactions",
      query: { qashio_id: id },
      auth: "bearer",
      retry: options.retry ?? "idempotent",
      ...(options.deadline === undefined ? {} : { deadline: options.deadline }),
      ...(stop ? { stop: stop.signal } : {}),
      ...(options.callerRetries ? { callerRetries: options.callerRetries } : {}),
    };
    const refusedAt = clock.now();
    const refusalEnd = refusedUntil;
    const driftedBefore = drifted;
    http.request(request).then(
      () => (entry.settled = true),
      (error: unknown) => {
        entry.settled = true;
        entry.outcome = error;
      },
    );
    // Inside a refusal a request ends at once (before any await), unsent, with the wait left: the wait from the
    // client's reading, which the clock's moves while it read (this call's, and the one that read the 429's) bound.
    const driftedInCall = drifted - driftedBefore;
    if (refusedAt + driftedInCall < refusalEnd) {
      const [least, most] = [refusalEnd - refusedAt - driftedInCall, refusalEnd - refusedAt + drifted];
      void Promise.resolve().then(() => {
        const left = entry.outcome instanceof RateLimitedError ? entry.outcome.retryAfterMs : undefined;
        const refused = left !== undefined && left >= least && left <= most;
        if (!refused) violations.push(`${id} started ${refusalEnd - refusedAt} ms before the refusal's end was not refused at once`);
      });
    }
    return entry;
  };
  /** Nothing that time can move: every request settled, no attempt's timeout timer set and no sleep under way. */
  const idle = () => started.every((r) => r.settled) && held.length === 0 && vi.getTimerCount() === 0 && (!("sleeping" in clock) || clock.sleeping === 0);
  // Moves the client's clock and the attempts' timeout timers on together, 250 ms at a time; once idle, the rest at
  // once (no step between could see anything: the quiet waits after a 429 took most of the file's time in steps).
  const advance = async (ms: number) => {
    let left = ms;
    do {
      const step = idle() ? left : Math.min(250, left);
      await clock.advance(step);
      await vi.advanceTimersByTimeAsync(step);
      left -= step;
    } while (left > 0);
  };
  /** To `before` ms before the next instant the client waits for (the wait's end, a sleep's end), if any. */
  const nearWake = async (before: number) => {
    const now = clock.now();
    const next = [internals().notBefore, clock.nextWake].filter((at): at is number => at !== undefined && at > now).sort((a, b) => a - b)[0];
    if (next !== undefined) await advance(Math.max(0, next - now - before));
  };

  /**
   * Once the client has stopped reading the clock, no request waits for a turn it could have: past the wait, with room.
   * A sleep for the wait's end that the clock's moves made end a moment after it (as a real timer's does) ends first.
   */
  const expectNoTurnLost = async () => {
    for (let late = 0; ; late += 1) {
      for (let i = 0, before = -1; i < 10 && readings !== before; i += 1) {
        before = readings;
        await turns();
      }
      const { notBefore, inFlight, inFlightLimit, turnWaiters } = internals();
      const due = turnWaiters.filter((w) => notBefore <= w.waited || clock.now() >= notBefore).length;
      if (due === 0 || inFlight >= inFlightLimit) return;
      const wake = clock.nextWake;
      if (late < 3 && wake !== undefined && wake - clock.now() <= LATE_WAKE_MS) {
        await advance(wake - clock.now());
        continue;
      }
      violations.push(`${due} request(s) past the wait to ${notBefore} not given the room (${inFlight} of ${inFlightLimit} in flight)`);
      return;
    }
  };

  for (const action of actions) {
    const { inFlight } = internals();
    if (inFlight < 0 || inFlight > started.filter((r) => !r.settled).length) violations.push(`inFlight ${inFlight} with ${started.filter((r) => !r.settled).length} unsettled`);
    if (action.kind === "start") {
      if (action.near !== null) await nearWake(action.near);
      start({
        deadline: action.deadline === null ? undefined : clock.now() + action.deadline,
        stop: action.stop,
        retry: action.retry,
        callerRetries: action.callerRetries === null ? undefined : { failedBefore: action.callerRetries },
      });
      await turns();
    } else if (action.kind === "answer") {
      const target = held[action.pick % Math.max(held.length, 1)];
      const at = clock.now();
      if (target && action.reply.startsWith("429")) quietAt = Math.max(quietAt, at + (action.reply === "429long" ? LONG_QUIET_BOUND_MS : QUIET_BOUND_MS));
      target?.answer(replyFor(action.reply, action.ra));
      await advance(0);
      // Read (at `at`: the clock did not move), the 429 refuses the client for its whole Retry-After.
      if (target && action.reply === "429long") refusedUntil = Math.max(refusedUntil, at + 120_000);
    } else if (action.kind === "batch") {
      const idle = internals().inFlight === 0 && internals().turnWaiters.length === 0;
      const batch = Array.from({ length: action.size }, () => start());
      // Taken at once, as by a client never throttled: each took its turn before its first await.
      if (idle && clock.now() >= quietAt && (internals().inFlight !== action.size || internals().turnWaiters.length > 0)) {
        violations.push(`${batch.map((r) => r.id).join(",")} held back ${clock.now() - quietAt} ms past the quiet after the latest 429 (limit ${internals().inFlightLimit})`);
      }
      await turns();
    } else if (action.kind === "advance") {
      await advance(action.ms);
    } else if (action.kind === "nearWake") {
      await nearWake(action.before);
    } else if (action.kind === "stop") {
      const withStop = started.filter((r) => r.stop && !r.settled);
      withStop[action.pick % Math.max(withStop.length, 1)]?.stop?.abort();
      await advance(0);
    }
    await expectNoTurnLost();
    // Inside a refusal no request waits for its turn: the ones waiting when it came were ended with it.
    if (clock.now() < refusedUntil && internals().turnWaiters.length > 0) {
      violations.push(`${internals().turnWaiters.length} request(s) waiting for a turn inside the refusal to ${refusedUntil}`);
    }
  }
  // Everything answered from now on: every request must settle.
  for (let i = 0; i < 1_000 && (held.length > 0 || started.some((r) => !r.settled)); i += 1) {
    for (const entry of [...held]) entry.answer(ok([]));
    await advance(500);
  }
  expect(violations).toEqual([]);
  expect(started.filter((r) => !r.settled).map((r) => r.id)).toEqual([]);
  if (harness) expect(harness.sleeps).toBeLessThan(50 * (started.length + 1));
  expect(internals().inFlight).toBe(0);
  expect(internals().turnWaiters).toEqual([]);
  // Once the throttle is over (also a refusal's, see LONG_QUIET_BOUND_MS), a batch goes at once, as from a client never
  // throttled.
  plan = [];
  await advance(LONG_QUIET_BOUND_MS);
  const first = [start(), start(), start(), start()];
  await turns();
  expect(held.map((h) => h.qid)).toEqual(first.map((r) => r.id));
  for (const entry of [...held]) entry.answer(ok([]));
  await advance(0);
  expect(first.every((r) => r.settled)).toBe(true);
  // A fresh request once any wait is over is sent at once.
  const fresh = start();
  await turns();
  expect(held.map((h) => h.qid)).toEqual([fresh.id]);
  held[0]?.answer(ok([]));
  await advance(0);
  expect(fresh.settled).toBe(true);
  // And, that probe answered, a batch goes concurrently.
  const batch = [start(), start(), start(), start()];
  await turns();
  expect(held.map((h) => h.qid)).toEqual(batch.map((r) => r.id));
  for (const entry of [...held]) entry.answer(ok([]));
  await advance(0);
  expect(batch.every((r) => r.settled)).toBe(true);
  expect(internals().inFlight).toBe(0);
  expect(violations).toEqual([]);
}

describe("HttpCore's throttling under random schedules", () => {
  afterEach(() => vi.useRealTimers());

  it("settles every request, frees every turn once and sends nothing inside a wait, past a last start or after a stop (token at once)", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    await fc.assert(
      fc.asyncProperty(scheduleArb, settingsArb, async (actions, settings) => runSchedule(actions, [], settings)),
      { numRuns: 60 },
    );
  });

  it("the same on a clock whose sleeps move no time (the functions' harness): nothing spins or hangs", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    await fc.assert(
      fc.asyncProperty(scheduleArb, fc.array(fc.constantFrom<TokenMode>("now", "slow", "reject"), { maxLength: 6 }), settingsArb, async (actions, plan, settings) =>
        runSchedule(actions, plan, { ...settings, clock: "harness" }),
      ),
      { numRuns: 60 },
    );
  });

  it("the same with token providers that are slow or reject", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    await fc.assert(
      fc.asyncProperty(scheduleArb, fc.array(fc.constantFrom<TokenMode>("now", "slow", "reject"), { maxLength: 6 }), settingsArb, async (actions, plan, settings) =>
        runSchedule(actions, plan, settings),
      ),
      { numRuns: 60 },
    );
  });
});
