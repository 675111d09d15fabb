/**
 * The cycle's plumbing (CycleRun), seen through a transaction cycle: when a published change's lag is measured, what
 * ends a streak of batches the publisher took none of, what ends a wait early, and the level of a run's last line.
 */
import { describe, expect, it } from "vitest";
import { pollTransactions } from "../../shared/bridge/transactions.js";
import { pollCards } from "../../shared/bridge/cards.js";
import { redriveQuarantined } from "../../shared/bridge/redrive.js";
import { CycleAbortedError, ReauthorizationNeededError } from "../../shared/bridge/errors.js";
import { DeadlineExceededError, RetryDeferredError } from "../../shared/qashio/errors.js";
import { makeRig } from "./fakes.js";

/** The TokenFamilyRevoked values the rig's runs reported, in order. */
const revokedPoints = (rig: ReturnType<typeof makeRig>) => rig.metrics.points.filter((p) => p.name === "TokenFamilyRevoked").map((p) => p.value);

/** A provider error as the client throws it for a refused refresh grant. */
const refusedGrant = () => Object.assign(new Error("refresh rejected"), { name: "ReauthorizationRequiredError", status: 401 });

/** Has the publisher refuse for now every event of the publish calls `refused` picks (1 the first); returns the calls made. */
function refuseBatchesForNow(rig: ReturnType<typeof makeRig>, refused: (call: number) => boolean): () => number {
  const publish = rig.publisher.publish.bind(rig.publisher);
  let calls = 0;
  rig.publisher.publish = async (events, options) => {
    calls += 1;
    if (!refused(calls)) return publish(events, options);
    return { failed: events.map((event) => ({ event, reason: "ThrottlingException", retryable: true })) };
  };
  return () => calls;
}

/**
 * A stop request (Ctrl-C) made during the rig's first provider call, which the client then ends as out of time against
 * no deadline of its own, `cause` being the failed attempt it held, if any. Returns the stop signal to run with.
 */
function stopWhileCalling(rig: ReturnType<typeof makeRig>, cause?: Error): AbortSignal {
  const stop = new AbortController();
  rig.provider.beforeCall = () => {
    stop.abort();
    const context = { method: "GET", path: "/transactions", deadline: Number.POSITIVE_INFINITY };
    throw new DeadlineExceededError("GET /transactions not sent or retried: it was asked to stop", context, cause && { cause });
  };
  return stop.signal;
}

describe("CycleRun.publish", () => {
  it("measures a published change's lag when it was published, though the cycle fails after", async () => {
    const rig = makeRig();
    const txn = rig.provider.addTransaction();
    rig.clock.ms = Date.parse(txn.updated_at) + 90_000;
    // Published 90 s after the change; the snapshot write after it hangs ten minutes and fails.
    rig.deps.snapshots.putMany = async () => {
      rig.clock.advance(600_000);
      throw new Error("snapshot write refused");
    };
    const error = await pollTransactions(rig.deps).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CycleAbortedError);
    expect(rig.publisher.events).toHaveLength(1);
    // On the bus, so delivered: its lag stopped growing when it was published.
    expect((error as CycleAbortedError).report.syncLagSeconds).toBe(90);
    expect(rig.metrics.sum("SyncLagSeconds")).toBe(90);
  });

  it("rounds a published change's lag to the nearest second, not down", async () => {
    const rig = makeRig();
    const txn = rig.provider.addTransaction();
    rig.clock.ms = Date.parse(txn.updated_at) + 90_600;
    expect((await pollTransactions(rig.deps)).syncLagSeconds).toBe(91);
    expect(rig.metrics.sum("SyncLagSeconds")).toBe(91);
  });

  it("counts an event refused for good (no retryable) as failed, neither published nor deferred, and warns of its rejection", async () => {
    const rig = makeRig();
    rig.provider.addTransaction();
    rig.publisher.reject = () => "AccessDeniedException: not allowed";
    const report = await pollTransactions(rig.deps);
    expect(report).toMatchObject({ published: {}, publishFailed: 1, publishDeferred: 0 });
    expect(rig.metrics.sum("EventsPublished")).toBe(0);
    expect(rig.metrics.sum("EventsFailed")).toBe(1);
    // The item is quarantined (a warning of its own); the publisher's warnings say it was refused, not deferred.
    const warnings = rig.logger.lines.filter((line) => line.message.includes("by the publisher")).map((line) => [line.level, line.message, line.attributes]);
    expect(warnings).toEqual([["warn", "events rejected by the publisher", { count: 1, reasons: ["AccessDeniedException: not allowed"] }]]);
  });

  it("names at most five distinct reasons in a batch's warning, each once", async () => {
    const rig = makeRig();
    for (let i = 0; i < 8; i++) rig.provider.addTransaction();
    let refused = 0;
    rig.publisher.reject = () => `reason ${Math.min(refused++, 6)}`;
    await pollTransactions(rig.deps);
    const warning = rig.logger.lines.find((line) => line.message === "events rejected by the publisher");
    expect(warning?.attributes).toEqual({ count: 8, reasons: ["reason 0", "reason 1", "reason 2", "reason 3", "reason 4"] });
  });

  it("writes no snapshots for a batch whose every event the publisher took none of for now", async () => {
    const rig = makeRig();
    rig.provider.addTransaction();
    rig.publisher.reject = () => ({ reason: "ThrottlingException", retryable: true });
    expect(await pollTransactions(rig.deps)).toMatchObject({ publishDeferred: 1, acknowledged: 0 });
    expect(rig.snapshots.putManyCalls).toBe(0);
  });

  it("starts the count of batches taken by none afresh after a batch the publisher took", async () => {
    const rig = makeRig();
    for (let i = 0; i < 80; i++) rig.provider.addTransaction();
    // Batches 1 and 3 (20 events each) are refused for now; batch 2 in between is taken whole.
    refuseBatchesForNow(rig, (call) => call === 1 || call === 3);
    const report = await pollTransactions(rig.deps, { pageSize: 20 });
    // Never two such batches in a row: the walk goes on to the end.
    expect(report).toMatchObject({ outcome: "complete", publishDeferred: 40, acknowledged: 40 });
    expect(rig.provider.pending()).toHaveLength(40);
  });

  it("counts the events of batches taken by none afresh too after a batch the publisher took", async () => {
    const rig = makeRig();
    for (let i = 0; i < 35; i++) rig.provider.addTransaction();
    // Batches of 10, 10, 10 and 5: all but the second refused for now. The last two, in a row, hold 15 events only.
    const calls = refuseBatchesForNow(rig, (call) => call !== 2);
    const report = await pollTransactions(rig.deps, { pageSize: 10 });
    // Two such batches in a row, yet fewer than PUBLISHER_UNAVAILABLE_EVENTS events since the batch taken: no stop.
    expect(calls()).toBe(4);
    expect(report).toMatchObject({ outcome: "complete", publishDeferred: 25, acknowledged: 10 });
  });
});

describe("CycleRun.provider", () => {
  it("ends a cycle without a deadline with outcome deadline, not an abort, when a provider call stops on a stop request (Ctrl-C)", async () => {
    const rig = makeRig();
    rig.provider.addTransaction();
    // The client, asked to stop, sends nothing: out of time against no deadline of its own.
    const report = await pollTransactions(rig.deps, { signal: stopWhileCalling(rig) });
    expect(report.outcome).toBe("deadline");
    expect(rig.logger.lines.map((l) => l.message)).toContain(
      "provider call not sent or retried: the cycle was asked to stop (Ctrl-C, or the Lambda invocation ending); stopping",
    );
    expect(rig.metrics.sum("CycleErrors")).toBe(0);
  });

  it("ends a cycle asked to stop while its first list kept failing with outcome deadline, not as an outage", async () => {
    const rig = makeRig();
    rig.provider.addTransaction();
    // Ctrl-C while the client retries a list the provider keeps answering 503: it stops with that failure as cause.
    const unavailable = Object.assign(new Error("service unavailable"), { status: 503 });
    // Nothing pulled yet, yet a person stopped it: not the outage a deadline reached this way would be.
    const report = await pollTransactions(rig.deps, { signal: stopWhileCalling(rig, unavailable) });
    expect(report).toMatchObject({ outcome: "deadline", pulled: 0 });
    expect(rig.metrics.sum("CycleErrors")).toBe(0);
    const warning = rig.logger.lines.find((l) => l.message.startsWith("provider call not sent or retried"));
    expect(warning?.attributes).toMatchObject({ step: "list not_synced transactions", status: 503 });
  });

  it("names no step on an abort that no step's call caused, and the one that failed on an abort a call caused", async () => {
    const throwing = makeRig({}, { validators: { transaction: () => { throw new Error("validator bug"); } } });
    throwing.provider.addTransaction();
    const bug = await pollTransactions(throwing.deps).catch((e: unknown) => e);
    expect(bug).toBeInstanceOf(CycleAbortedError);
    expect((bug as CycleAbortedError).step).toBeUndefined();
    const failing = makeRig();
    failing.provider.beforeCall = () => {
      throw new Error("provider down");
    };
    expect(((await pollTransactions(failing.deps).catch((e: unknown) => e)) as CycleAbortedError).step).toBe("list not_synced transactions");
  });
});

describe("CycleRun.listPage", () => {
  it("warns of each page_size the provider rejected, with the size asked and the size it asks next", async () => {
    const rig = makeRig({ maxPageSize: 30 });
    for (let i = 0; i < 45; i++) rig.provider.addTransaction();
    await pollTransactions(rig.deps, { pageSize: 100 });
    const warnings = rig.logger.lines.filter((l) => l.message === "provider rejected page_size; retrying smaller").map((l) => [l.level, l.attributes]);
    expect(warnings).toEqual([["warn", { from: 100, to: 50 }], ["warn", { from: 50, to: 25 }]]);
  });

  it("keeps the size lowered by concurrent reads when a read asked at a larger size is refused after them", async () => {
    const rig = makeRig({ maxPageSize: 30 });
    const [first, second] = [rig.provider.addTransaction(), rig.provider.addTransaction()];
    rig.publisher.reject = () => "AccessDeniedException: not allowed";
    await pollTransactions(rig.deps, { pageSize: 30 });
    rig.publisher.reject = () => undefined;
    rig.provider.calls.length = 0;
    // The re-drive reads both by qashio_id at once; the first one's refusal at 100 comes back only once the second
    // read, refused at 100 and at 50, asks 25.
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const list = rig.provider.listTransactions.bind(rig.provider);
    rig.provider.listTransactions = async (query) => {
      if (query.qashio_id === first.qashio_id && query.page_size === 100) await held;
      if (query.qashio_id === second.qashio_id && query.page_size === 25) release();
      return list(query);
    };
    const report = await redriveQuarantined(rig.deps, { pageSize: 100 });
    expect(report.redriven.map((r) => r.entityId).sort()).toEqual([first.id, second.id].sort());
    // The late refusal does not raise the size back to 50, to be refused again.
    const asked = (ref: typeof first) => rig.provider.calls.flatMap((c) => (c.op === "listTransactions" && c.query.qashio_id === ref.qashio_id ? [c.query.page_size] : []));
    expect(asked(second)).toEqual([100, 50, 25]);
    expect(asked(first)).toEqual([100, 25]);
  });
});

describe("CycleRun.wait", () => {
  it("ends the wait before a fresh read of an acknowledge that failed for now once the cycle is asked to stop", async () => {
    const rig = makeRig();
    // A clock whose waits end at once when their signal is aborted, as the system clock's do.
    const clock = rig.clock;
    const deps = { ...rig.deps, clock: { now: () => clock.now(), sleep: async (ms: number, signal?: AbortSignal) => (signal?.aborted === true ? undefined : clock.advance(ms)) } };
    rig.provider.addTransaction();
    const stop = new AbortController();
    const start = clock.now();
    rig.provider.beforeCall = (call) => {
      if (call.op !== "acknowledgeTransactions") return;
      // Ctrl-C while the acknowledge fails for now: the client would wait a minute before its next attempt.
      stop.abort();
      throw new RetryDeferredError("acknowledge answered 503", { delayMs: 60_000, attempt: 1 });
    };
    await pollTransactions(deps, { signal: stop.signal });
    expect(clock.now() - start).toBeLessThan(60_000);
  });
});

describe("CycleRun.finish", () => {
  it("reports the run's duration on the cycle's clock, to the millisecond", async () => {
    const rig = makeRig();
    let first = true;
    rig.provider.beforeCall = () => {
      if (first) rig.clock.advance(1_234);
      first = false;
    };
    expect((await pollTransactions(rig.deps)).durationMs).toBe(1_234);
    expect(rig.metrics.points.filter((p) => p.name === "CycleDurationMs").map((p) => p.value)).toEqual([1_234]);
  });

  it("puts the whole report on the run's last line, as ops read it in the function log", async () => {
    const rig = makeRig();
    rig.provider.addTransaction();
    const report = await pollTransactions(rig.deps);
    const last = rig.logger.lines.find((line) => line.message === "transactions cycle complete");
    expect(last?.attributes).toEqual({ ...report });
    expect(last?.attributes).toMatchObject({ pulled: 1, published: { "transaction.created": 1 }, acknowledged: 1 });
  });

  it("logs an aborted cycle's last line at error, one stopped by the publisher at warn, a complete one at info", async () => {
    const levelOf = async (rig: ReturnType<typeof makeRig>, outcome: string) => {
      await pollTransactions(rig.deps, { pageSize: 10 }).catch(() => undefined);
      return rig.logger.lines.find((line) => line.message === `transactions cycle ${outcome}`)?.level;
    };
    const aborted = makeRig();
    aborted.provider.beforeCall = () => {
      throw new Error("provider down");
    };
    expect(await levelOf(aborted, "aborted")).toBe("error");
    const unavailable = makeRig();
    for (let i = 0; i < 30; i++) unavailable.provider.addTransaction();
    unavailable.publisher.reject = () => ({ reason: "ThrottlingException", retryable: true });
    expect(await levelOf(unavailable, "publisher_unavailable")).toBe("warn");
    expect(await levelOf(makeRig(), "complete")).toBe("info");
  });
});

describe("TokenFamilyRevoked, a gauge of the token family's state", () => {
  it("reports 0 for a cycle of either kind the provider answered, a listing with nothing in it too", async () => {
    const rig = makeRig();
    rig.provider.addTransaction();
    rig.provider.addCard();
    await pollTransactions(rig.deps);
    await pollCards(rig.deps);
    // Nothing left to pull: the list's answer alone shows the family alive.
    expect(await pollTransactions(rig.deps)).toMatchObject({ outcome: "complete", pulled: 0 });
    expect(revokedPoints(rig)).toEqual([0, 0, 0]);
  });

  it("reports 0 for a cycle that failed after a provider answer, for a reason other than the token", async () => {
    const rig = makeRig();
    rig.provider.addTransaction();
    rig.provider.beforeCall = (call) => {
      if (call.op === "acknowledgeTransactions") throw new Error("provider down");
    };
    expect(await pollTransactions(rig.deps).catch((e: unknown) => e)).toBeInstanceOf(CycleAbortedError);
    expect(revokedPoints(rig)).toEqual([0]);
  });

  it("reports nothing for a run without a provider answer: a failed first list, a deadline before it, an empty re-drive", async () => {
    const rig = makeRig();
    rig.provider.addTransaction();
    rig.provider.beforeCall = () => {
      throw Object.assign(new Error("internal error"), { status: 500 });
    };
    expect(await pollTransactions(rig.deps).catch((e: unknown) => e)).toBeInstanceOf(CycleAbortedError);
    expect(await pollCards(rig.deps).catch((e: unknown) => e)).toBeInstanceOf(CycleAbortedError);
    rig.provider.beforeCall = () => undefined;
    expect((await pollTransactions(rig.deps, { deadline: rig.clock.now() - 1 })).outcome).toBe("deadline");
    expect((await redriveQuarantined(rig.deps)).considered).toBe(0);
    expect(revokedPoints(rig)).toEqual([]);
  });

  it("reports 0 for a re-drive whose reads the provider answered", async () => {
    const rig = makeRig();
    rig.provider.addTransaction();
    rig.publisher.reject = () => "AccessDeniedException: not allowed";
    await pollTransactions(rig.deps);
    rig.publisher.reject = () => undefined;
    rig.metrics.points.length = 0;
    expect((await redriveQuarantined(rig.deps)).considered).toBe(1);
    expect(revokedPoints(rig)).toEqual([0]);
  });

  it("reports 1, and only 1, for a run the revoked family stopped, though the provider answered it before", async () => {
    for (const kind of ["transactions", "cards"] as const) {
      const rig = makeRig();
      for (let i = 0; i < 15; i++) {
        rig.provider.addTransaction();
        rig.provider.addCard();
      }
      let calls = 0;
      rig.provider.beforeCall = () => {
        calls += 1;
        // The access token ran out after the first page; its refresh was refused.
        if (calls > 1) throw refusedGrant();
      };
      const run = kind === "transactions" ? pollTransactions(rig.deps, { pageSize: 10 }) : pollCards(rig.deps, { pageSize: 10 });
      expect(await run.catch((e: unknown) => e), kind).toBeInstanceOf(ReauthorizationNeededError);
      expect(calls, kind).toBeGreaterThan(1);
      expect(revokedPoints(rig), kind).toEqual([1]);
    }
  });
});
