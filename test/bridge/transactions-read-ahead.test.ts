/**
 * The transaction walk's read-ahead against a provider that answers it with another page than asked: the answer is
 * dropped, the warning names the list and the page asked, and the rest of that pass reads pages plainly (page 1 shows
 * the next batch once the last is acknowledged), so nothing is lost, and nothing taken twice, while the read-ahead
 * costs no further list calls. The next pass reads ahead again.
 *
 * And the read-ahead racing the batch in hand (published, stored and acknowledged meanwhile): one side held at a chosen
 * point (deferred promises, no timers) while the other goes on, no transaction is skipped, delivered twice,
 * acknowledged twice or counted twice.
 */
import { describe, expect, it } from "vitest";
import { pollTransactions } from "../../shared/bridge/transactions.js";
import type { PullStatus } from "../../shared/bridge/provider.js";
import { makeRig, type ProviderCall, type TestRig } from "./fakes.js";

/** Listed under the 100 a page the cycle asks: a read-ahead of page 2 while page 1 is processed, then two more pages. */
const LISTED = 250;

const READ_AHEAD_DROPPED = "provider answered another page than asked to a page read ahead; reading pages plainly";

/**
 * Makes the rig's list answer page 1, as the list holds it then and naming it page 1 (more following), whatever page
 * is asked: a provider ignoring `page`. Returns the pages asked, per status, in order.
 */
function ignoringPage(rig: TestRig): Map<PullStatus, number[]> {
  const asked = new Map<PullStatus, number[]>();
  const list = rig.provider.listTransactions.bind(rig.provider);
  rig.provider.listTransactions = (query) => {
    const status = query.client_sync_status as PullStatus;
    asked.set(status, [...(asked.get(status) ?? []), query.page]);
    return list({ ...query, page: 1 });
  };
  return asked;
}

function warnings(rig: TestRig): unknown[] {
  return rig.logger.lines.filter((l) => l.message === READ_AHEAD_DROPPED).map((l) => l.attributes);
}

/** Each transaction published once, under one event id, and acknowledged once; none left listed. */
function expectDeliveredOnce(rig: TestRig, count: number): void {
  const subjects = rig.publisher.events.map((e) => e.detail.subject.id);
  expect(new Set(subjects).size).toBe(count);
  expect(subjects).toHaveLength(count);
  expect(new Set(rig.publisher.ids).size).toBe(count);
  const acknowledged = rig.provider.calls.flatMap((c) => (c.op === "acknowledgeTransactions" ? c.ids : []));
  expect(new Set(acknowledged).size).toBe(count);
  expect(acknowledged).toHaveLength(count);
  expect(rig.provider.pending()).toEqual([]);
}

/** A promise and its resolver. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = (): void => undefined;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const PAGE_SIZE_REJECTED = Object.assign(new Error("page_size out of range"), {
  name: "BadRequestError",
  status: 400,
  errors: [{ field: "page_size", code: "OUT_OF_RANGE", message: "too large" }],
});

const isReadAhead = (call: ProviderCall, page: number): boolean =>
  call.op === "listTransactions" && call.query.client_sync_status === "not_synced" && call.query.page === page;

describe("transaction walk: a page read ahead answered with another page than asked", () => {
  it("is dropped once with a warning naming the list and the page asked, and the rest of the pass reads page 1 plainly", async () => {
    const rig = makeRig();
    for (let i = 0; i < LISTED; i++) rig.provider.addTransaction();
    const asked = ignoringPage(rig);

    const report = await pollTransactions(rig.deps);

    expect(report.outcome).toBe("complete");
    expect(warnings(rig)).toEqual([{ list: "not_synced", asked: 2 }]);
    // One read ahead (page 2, answered as page 1), then plain reads of page 1 only: 100, 100, 50 new transactions.
    expect(asked.get("not_synced")).toEqual([1, 2, 1, 1]);
    expect(asked.get("outdated")).toEqual([1]);
    // The dropped answer is neither pulled nor handled: each transaction counts once.
    expect(report).toMatchObject({ pulled: LISTED, handled: LISTED, acknowledged: LISTED });
    expectDeliveredOnce(rig, LISTED);
  });

  it("turns the read-ahead off for that pass only: the outdated pass reads ahead again, and drops its answer the same way", async () => {
    const rig = makeRig();
    const changed = Array.from({ length: LISTED }, () => rig.provider.addTransaction());
    expect((await pollTransactions(rig.deps)).outcome).toBe("complete");
    for (const txn of changed) rig.provider.changeTransaction(txn.id, { memo: "changed after its acknowledge" });
    for (let i = 0; i < LISTED; i++) rig.provider.addTransaction();
    rig.publisher.events.length = 0;
    rig.provider.calls.length = 0;
    const asked = ignoringPage(rig);

    const report = await pollTransactions(rig.deps);

    expect(report.outcome).toBe("complete");
    expect(warnings(rig)).toEqual([
      { list: "not_synced", asked: 2 },
      { list: "outdated", asked: 2 },
    ]);
    expect(asked.get("not_synced")).toEqual([1, 2, 1, 1]);
    expect(asked.get("outdated")).toEqual([1, 2, 1, 1]);
    expect(report.published).toEqual({ "transaction.created": LISTED, "transaction.changed": LISTED });
    expectDeliveredOnce(rig, 2 * LISTED);
  });
});

describe("transaction walk: the page read ahead against the batch in hand", () => {
  it("acknowledges each id once when the read ahead lowers the page size while the batch's acknowledge is in flight", async () => {
    const rig = makeRig();
    for (let i = 0; i < 40; i++) rig.provider.addTransaction();
    const ackInFlight = deferred();
    const lowered = deferred();
    let rejected = false;
    rig.provider.beforeCall = async (call) => {
      // The read ahead of page 2 at 20 waits for the batch's acknowledge to go out, then is rejected: the size drops to
      // 10 while that acknowledge (20 ids, one call) waits for it.
      if (!rejected && isReadAhead(call, 2) && call.op === "listTransactions" && call.query.page_size === 20) {
        await ackInFlight.promise;
        rejected = true;
        throw PAGE_SIZE_REJECTED;
      }
      if (rejected && isReadAhead(call, 2)) lowered.resolve();
      if (call.op === "acknowledgeTransactions" && !rejected) {
        ackInFlight.resolve();
        await lowered.promise;
      }
    };

    const report = await pollTransactions(rig.deps, { pageSize: 20 });

    expect(rejected).toBe(true);
    expect(report.outcome).toBe("complete");
    expect(report.acknowledged).toBe(40);
    expect(rig.metrics.sum("Acknowledged")).toBe(40);
    // The batch in hand went out in the one call it started with, the rest in the size left.
    expect(rig.provider.calls.flatMap((c) => (c.op === "acknowledgeTransactions" ? [c.ids.length] : []))).toEqual([20, 10, 10]);
    expectDeliveredOnce(rig, 40);
  });

  it("skips no batch when the read ahead is answered after the batch's acknowledge (the list moved up under it)", async () => {
    const rig = makeRig();
    for (let i = 0; i < 30; i++) rig.provider.addTransaction();
    const acknowledged = deferred();
    let heldOnce = false;
    const acknowledge = rig.provider.acknowledgeTransactions.bind(rig.provider);
    rig.provider.acknowledgeTransactions = async (ids) => {
      const answer = await acknowledge(ids);
      acknowledged.resolve();
      return answer;
    };
    rig.provider.beforeCall = async (call) => {
      // The first read ahead (page 2) is answered only once page 1's acknowledge applied: it shows the third ten.
      if (!heldOnce && isReadAhead(call, 2)) {
        heldOnce = true;
        await acknowledged.promise;
      }
    };

    const report = await pollTransactions(rig.deps, { pageSize: 10 });

    expect(heldOnce).toBe(true);
    expect(report.outcome).toBe("complete");
    expect(report).toMatchObject({ handled: 30, acknowledged: 30 });
    expectDeliveredOnce(rig, 30);
  });

  it("leaves a page read ahead past the pass's share to the pass resumed after outdated, skipping and repeating none", async () => {
    const rig = makeRig();
    for (let i = 0; i < 30; i++) rig.provider.addTransaction();
    const start = rig.clock.now();
    const deadline = start + 100_000;
    let held = false;
    rig.provider.beforeCall = (call) => {
      // While page 1 is processed, its read ahead takes the clock past the not_synced share (75 s of 100).
      if (!held && isReadAhead(call, 2)) {
        held = true;
        rig.clock.advance(80_000);
      }
    };

    const report = await pollTransactions(rig.deps, { pageSize: 10, deadline });
    const lists = rig.provider.calls.flatMap((c) => (c.op === "listTransactions" ? [`${c.query.client_sync_status}:${c.query.page}`] : []));
    // Page 1, page 2 read ahead (past the share), the look at the list's end (page 2), outdated, then not_synced again.
    expect(lists).toEqual(["not_synced:1", "not_synced:2", "not_synced:2", "outdated:1", "not_synced:1", "not_synced:2", "not_synced:1"]);

    expect(held).toBe(true);
    // The pass paused at its share with the page read ahead in hand; the outdated pass, then not_synced again, took it.
    expect(report.outcome).toBe("complete");
    expect(report).toMatchObject({ handled: 30, acknowledged: 30 });
    expectDeliveredOnce(rig, 30);
  });
});
