import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { acquireTimed, acquireWithin, whileHolding } from "../../shared/lease-keep-alive.js";
import { TOKEN_SAVE_MESSAGES as MESSAGES } from "../../shared/qashio/auth/token-provider.js";
import { systemClock } from "../../shared/clock.js";
import type { Clock } from "../../shared/qashio/http.js";
import { captureLogger, fakeClock, manualClock, turns, wallAndMonotonic } from "./helpers.js";

const TTL = 30_000;

/** A lease that records when (on `clock`) it was renewed and answers with `answer`. */
function recordingLease(clock: Clock, answer: (signal?: AbortSignal) => Promise<boolean> = async () => true) {
  const renewals: number[] = [];
  return {
    renewals,
    renew: (ttlMs: number, signal?: AbortSignal) => {
      expect(ttlMs).toBe(TTL);
      renewals.push(clock.now());
      return answer(signal);
    },
  };
}

/** Work that settles only when told to. */
function gated<T>() {
  let settle!: (outcome: { value: T } | { error: unknown }) => void;
  const gate = new Promise<{ value: T } | { error: unknown }>((resolve) => (settle = resolve));
  const work = async (): Promise<T> => {
    const outcome = await gate;
    if ("error" in outcome) throw outcome.error;
    return outcome.value;
  };
  return { work, resolve: (value: T) => settle({ value }), reject: (error: unknown) => settle({ error }) };
}

/** Runs gated work under `whileHolding` until its first renewal began, then settles it: whether it returned ten turns on. */
async function settleDuringFirstRenewal(lease: ReturnType<typeof recordingLease>, clock: ReturnType<typeof manualClock>, logger?: ReturnType<typeof captureLogger>) {
  const { work, resolve } = gated<string>();
  const pending = whileHolding(lease, TTL, clock, work, logger, MESSAGES);
  await clock.advance(10_000);
  expect(lease.renewals).toHaveLength(1);
  let returned = false;
  void pending.then(() => (returned = true));
  resolve("ok");
  await turns(10);
  return { pending, returned };
}

describe("whileHolding", () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => void unhandled.push(reason);
  beforeEach(() => {
    unhandled.length = 0;
    process.on("unhandledRejection", onUnhandled);
  });
  afterEach(() => {
    process.off("unhandledRejection", onUnhandled);
  });

  it("passes work's result and work's error through unchanged, a synchronous throw included", async () => {
    const clock = manualClock();
    const lease = recordingLease(clock);
    const result = { saved: true };
    await expect(whileHolding(lease, TTL, clock, async () => result, undefined, MESSAGES)).resolves.toBe(result);
    const error = new Error("disk full");
    await expect(whileHolding(lease, TTL, clock, async () => Promise.reject(error), undefined, MESSAGES)).rejects.toBe(error);
    await expect(
      whileHolding(
        lease,
        TTL,
        clock,
        () => {
          throw error;
        },
        undefined,
        MESSAGES,
      ),
    ).rejects.toBe(error);
    expect(lease.renewals).toEqual([]);
  });

  // A renewal extends the lease from about when it was sent (the DynamoDB lease sets the expiry before its put): counting
  // the next one from when a slow answer came back would leave the lease that much closer to running out.
  it.each([
    ["at once", 0],
    ["6 s after it was sent", 6_000],
  ])("renews every third of the TTL while work runs, each renewal answered %s, and leaves no timer pending once it settles", async (_answered, answerMs) => {
    const clock = manualClock();
    const start = clock.now();
    const lease = recordingLease(clock, async (signal) => {
      if (answerMs > 0) await clock.sleep(answerMs, signal);
      return true;
    });
    const { work, resolve } = gated<string>();
    const pending = whileHolding(lease, TTL, clock, work, undefined, MESSAGES);
    await clock.advance(35_000);
    expect(lease.renewals.map((at) => at - start)).toEqual([10_000, 20_000, 30_000]);
    resolve("ok");
    expect(await pending).toBe("ok");
    expect(clock.sleeping).toBe(0);
    await clock.advance(60_000);
    expect(lease.renewals).toHaveLength(3);
  });

  // `since` is when the lease was taken: 15 s ago (a slow refresh ran first) leaves 15 s of it, so the first renewal is
  // due at once; 4 s ago, 6 s from now.
  it.each([
    [15_000, [0, 10_000, 20_000]],
    [4_000, [6_000, 16_000]],
  ])("counts the first renewal from when the lease was taken (%i ms ago), then renews every third of the TTL", async (ago, expected) => {
    const clock = manualClock();
    const start = clock.now();
    const lease = recordingLease(clock);
    const { work, resolve } = gated<string>();
    const pending = whileHolding(lease, TTL, clock, work, undefined, MESSAGES, start - ago);
    await clock.advance(0);
    await clock.advance(25_000);
    expect(lease.renewals.map((at) => at - start)).toEqual(expected);
    resolve("ok");
    expect(await pending).toBe("ok");
  });

  // The lease's expiry runs on the holder's real time (the file lock's on the boot's monotonic clock too): a wall clock
  // stepped back an hour (NTP, a person) while work runs must not put the next renewal an hour away.
  it.each(["a wait", "a renewal"])("renews every third of the TTL in real time when the wall clock is stepped back during %s", async (during) => {
    const real = manualClock();
    let stepped = 0;
    const stepBack = () => void (stepped = 3_600_000);
    const wall: Clock = { now: () => real.now() - stepped, sleep: real.sleep };
    const start = real.now();
    const lease = recordingLease(real, async () => {
      if (during === "a renewal") stepBack();
      return true;
    });
    const { work, resolve } = gated<string>();
    const pending = whileHolding(lease, TTL, wall, work, undefined, MESSAGES);
    await real.advance(5_000);
    if (during === "a wait") stepBack();
    await real.advance(30_000);
    expect(lease.renewals.map((at) => at - start)).toEqual([10_000, 20_000, 30_000]);
    resolve("ok");
    expect(await pending).toBe("ok");
  });

  it("keeps work's result when the logger, renew or the clock throws, with no unhandled rejection", async () => {
    const brokenLogger = {
      warn: () => {
        throw new Error("logger broke");
      },
    };
    const answers: Array<() => Promise<boolean>> = [
      async () => false,
      () => {
        throw new Error("renew threw synchronously");
      },
      async () => Promise.reject(new Error("renew rejected")),
    ];
    const clock = manualClock();
    const lease = recordingLease(clock, () => (answers.shift() ?? (async () => true))());
    const { work, resolve } = gated<string>();
    const pending = whileHolding(lease, TTL, clock, work, brokenLogger, MESSAGES);
    await clock.advance(45_000);
    expect(lease.renewals).toHaveLength(4); // renewals go on after each failure
    resolve("ok");
    expect(await pending).toBe("ok");

    let reads = 0;
    const brokenClock: Clock = {
      now: () => {
        reads += 1;
        if (reads > 1) throw new Error("clock broke");
        return 0;
      },
      sleep: async () => undefined,
    };
    const logger = captureLogger();
    const second = gated<string>();
    const failing = whileHolding(recordingLease(clock), TTL, brokenClock, second.work, logger, MESSAGES);
    await turns(10);
    const error = new Error("save failed");
    second.reject(error);
    await expect(failing).rejects.toBe(error);
    expect(logger.lines).toEqual([{ level: "warn", message: expect.stringMatching(/renewing .* failed/), attributes: { error: "Error" } }]);

    const sleepless: Clock = { now: () => 0, sleep: () => Promise.reject(new Error("no timers")) };
    const slowOk = async () => {
      await turns(3);
      return "ok";
    };
    await expect(whileHolding(recordingLease(clock), TTL, sleepless, slowOk, brokenLogger, MESSAGES)).resolves.toBe("ok");
    await turns(10);
    expect(unhandled).toEqual([]);
  });

  it("runs work and keeps its result when the clock throws at its very first reading, logging one failed renewal", async () => {
    const logger = captureLogger();
    const brokenClock: Clock = {
      now: () => {
        throw new Error("clock broke");
      },
      sleep: async () => undefined,
    };
    const lease = recordingLease(manualClock());
    await expect(whileHolding(lease, TTL, brokenClock, async () => "ok", logger, MESSAGES)).resolves.toBe("ok");
    expect(logger.lines).toEqual([{ level: "warn", message: MESSAGES.failed, attributes: { error: "Error" } }]);
    expect(lease.renewals).toEqual([]);
  });

  it("cuts a renewal in flight short when work settles, and returns only once it has ended, without a warning", async () => {
    const clock = manualClock();
    const logger = captureLogger();
    let ended = false;
    // A renewal that hangs (a silent endpoint) until its signal aborts, as the DynamoDB lease's does.
    const lease = recordingLease(clock, (signal) =>
      new Promise<boolean>((_resolve, reject) =>
        signal?.addEventListener("abort", () => {
          ended = true;
          reject(Object.assign(new Error("aborted"), { name: "AbortError" }));
        }),
      ),
    );
    const { pending, returned } = await settleDuringFirstRenewal(lease, clock, logger);
    expect(returned).toBe(true);
    expect(ended).toBe(true);
    expect(await pending).toBe("ok");
    expect(logger.lines).toEqual([]);
  });

  it("warns that the lease was lost when a renewal finds it gone, and that a renewal failed (with the error's name) when one throws", async () => {
    const clock = manualClock();
    const logger = captureLogger();
    const answers: Array<() => Promise<boolean>> = [async () => false, async () => Promise.reject(new TypeError("socket hang up"))];
    const lease = recordingLease(clock, () => (answers.shift() ?? (async () => true))());
    const { work, resolve } = gated<string>();
    const pending = whileHolding(lease, TTL, clock, work, logger, MESSAGES);
    await clock.advance(25_000);
    resolve("ok");
    expect(await pending).toBe("ok");
    expect(logger.lines).toEqual([
      { level: "warn", message: MESSAGES.lost, attributes: undefined },
      { level: "warn", message: MESSAGES.failed, attributes: { error: "TypeError" } },
    ]);
  });

  it("returns only once a renewal in flight has ended, when the renewal does not stop at the abort (the file lock checks, then writes)", async () => {
    const clock = manualClock();
    let endRenewal!: () => void;
    const lease = recordingLease(clock, () => new Promise<boolean>((resolve) => (endRenewal = () => resolve(true))));
    const { pending, returned } = await settleDuringFirstRenewal(lease, clock);
    expect(returned, "returned (and the caller could release) while a renewal was still writing").toBe(false);
    endRenewal();
    expect(await pending).toBe("ok");
  });

  it("begins no renewal once work has settled, though one fell due while the keep-alive slept", async () => {
    let now = 0;
    // Sleeps until aborted: the renewal due at 10 s is still waited for when work settles at 20 s.
    const clock: Clock = { now: () => now, sleep: (_ms, signal) => new Promise<void>((resolve) => signal?.addEventListener("abort", () => resolve(), { once: true })) };
    const lease = recordingLease(clock);
    const { work, resolve } = gated<string>();
    const pending = whileHolding(lease, TTL, clock, work, undefined, MESSAGES);
    await turns(3);
    now = 20_000;
    resolve("ok");
    expect(await pending).toBe("ok");
    expect(lease.renewals).toEqual([]);
  });

  it("returns once work settles when the clock's sleep does not stop at the abort (a fake's may not)", async () => {
    let wake!: () => void;
    const clock: Clock = { now: () => 0, sleep: () => new Promise<void>((resolve) => (wake = resolve)) };
    const { work, resolve } = gated<string>();
    const pending = whileHolding(recordingLease(clock), TTL, clock, work, undefined, MESSAGES);
    let returned = false;
    void pending.then(() => (returned = true));
    await turns(3);
    resolve("ok");
    await turns(10);
    expect(returned, "waited for the keep-alive's sleep to run out").toBe(true);
    wake();
  });

  it("lets work run, and renews nothing early, when the clock's sleeps return at once without time moving (a fake clock)", async () => {
    let sleeps = 0;
    const frozen: Clock = {
      now: () => 0,
      sleep: async () => {
        // A keep-alive that never yields would spin here for ever: end it, so the test fails instead of hanging.
        sleeps += 1;
        if (sleeps > 1_000) throw new Error("the keep-alive never yielded to work");
      },
    };
    const logger = captureLogger();
    const lease = recordingLease(frozen);
    const slowOk = async () => {
      await turns(3);
      return "ok";
    };
    expect(await whileHolding(lease, TTL, frozen, slowOk, logger, MESSAGES)).toBe("ok");
    expect(logger.lines).toEqual([]);
    expect(lease.renewals).toEqual([]);
  });
});

describe("acquireTimed", () => {
  it("tells when the try that took the lease began, not when its slow answer came, after busy tries", async () => {
    const clock = fakeClock();
    const start = clock.now();
    let tries = 0;
    const lock = {
      async tryAcquire() {
        tries += 1;
        // Two busy tries, then one whose put is answered 12 s after it was sent.
        if (tries <= 2) return undefined;
        clock.advance(12_000);
        return { renew: async () => true };
      },
    };
    const taken = await acquireTimed(lock, "lease", TTL, { waitMs: 20_000, pollMs: 250 }, clock);
    expect(taken?.askedAt).toBe(start + 2 * 250);
    expect(clock.now()).toBe(start + 2 * 250 + 12_000);
  });

  it("gives undefined when the lease stays held", async () => {
    const clock = fakeClock();
    expect(await acquireTimed({ tryAcquire: async () => undefined }, "lease", TTL, { waitMs: 1_000, pollMs: 250 }, clock)).toBeUndefined();
  });
});

describe("acquireWithin", () => {
  const busy = () => {
    const tries: number[] = [];
    return { tries, tryAcquire: async () => void tries.push(1) };
  };

  it("tells that it waits once, as soon as the first try finds the lease held and it may wait, and never when it may not", async () => {
    const waits: string[] = [];
    const clock = fakeClock();
    const lock = busy();
    expect(await acquireWithin(lock, "lease", TTL, { waitMs: 1_000, pollMs: 250, onWait: () => waits.push(`waiting after ${lock.tries.length} try`) }, clock)).toBeUndefined();
    expect(lock.tries).toHaveLength(5);
    expect(waits).toEqual(["waiting after 1 try"]);
    expect(await acquireWithin(busy(), "lease", TTL, { waitMs: 0, pollMs: 250, onWait: () => waits.push("not waiting") }, clock)).toBeUndefined();
    expect(waits).toEqual(["waiting after 1 try"]);
  });

  /** A lease that stays held, throwing past `limit` tries: a wait stretched past its bound fails at once, not by a test timeout. */
  const heldAtMost = (limit: number) => {
    const tries: number[] = [];
    return {
      tries,
      async tryAcquire() {
        if (tries.length >= limit) throw new Error(`tried ${tries.length + 1} times: the wait outlasted its bound`);
        tries.push(1);
        return undefined;
      },
    };
  };

  it("waits its bound in real time, though the wall clock is stepped back an hour during the wait", async () => {
    const { clock, elapsed } = wallAndMonotonic({ atMs: 250, byMs: 60 * 60_000 });
    const lock = heldAtMost(10);
    expect(await acquireWithin(lock, "lease", TTL, { waitMs: 1_000, pollMs: 250, elapsed }, clock)).toBeUndefined();
    expect(lock.tries).toHaveLength(5);
    expect(elapsed()).toBe(1_000);
  });

  it("pairs the system clock with the monotonic one by default: a wall clock stepped back does not stretch the wait", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date", "performance"] });
    try {
      const lock = heldAtMost(10);
      const tryAcquire = async () => {
        // Date only: the monotonic clock (performance.now) is never stepped.
        if (lock.tries.length === 1) vi.setSystemTime(Date.now() - 60 * 60_000);
        return lock.tryAcquire();
      };
      const outcome = acquireWithin({ tryAcquire }, "lease", TTL, { waitMs: 1_000, pollMs: 250 }, systemClock).catch((error: unknown) => error);
      await vi.advanceTimersByTimeAsync(5_000);
      expect(await outcome).toBeUndefined();
      expect(lock.tries).toHaveLength(5);
    } finally {
      vi.useRealTimers();
    }
  });

  it("tries nothing once its signal has aborted (Ctrl-C before the lease was taken)", async () => {
    const lock = busy();
    const stop = new AbortController();
    stop.abort();
    expect(await acquireWithin(lock, "lease", TTL, { waitMs: 20_000, pollMs: 250, signal: stop.signal }, fakeClock())).toBeUndefined();
    expect(lock.tries).toEqual([]);
  });

  it("stops its wait between two tries at once when its signal aborts, without waiting out the poll", async () => {
    const clock = manualClock();
    const lock = busy();
    const stop = new AbortController();
    let outcome: unknown = "still waiting";
    void acquireWithin(lock, "lease", TTL, { waitMs: 20_000, pollMs: 250, signal: stop.signal }, clock).then((handle) => (outcome = handle));
    // The manual clock never moves, so only the abort can end the wait after the first try.
    await vi.waitFor(() => expect(lock.tries).toHaveLength(1));
    stop.abort();
    await vi.waitFor(() => expect(outcome).toBeUndefined());
    expect(lock.tries).toHaveLength(1);
  });
});
