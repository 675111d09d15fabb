/**
 * Snapshot reads held to the cycle's deadline: the engine hands every read the calls' deadline, and a store that stops
 * retrying there (a throttled table, ReadDeadlineExceededError) ends the run with outcome `deadline`, not an abort,
 * having published, stored and acknowledged nothing of the batch it was reading for; the next run delivers it.
 */
import { describe, expect, it } from "vitest";
import { pollCards, walkCursorKey } from "../../shared/bridge/cards.js";
import { ReadDeadlineExceededError } from "../../shared/bridge/errors.js";
import { redriveQuarantined } from "../../shared/bridge/redrive.js";
import { pollTransactions, transactionAliasKey } from "../../shared/bridge/transactions.js";
import type { SnapshotKey, SnapshotStore } from "../../shared/bridge/ports.js";
import { makeRig, type TestRig } from "./fakes.js";

/**
 * The rig's store, except that a read of keys `stops` picks, given a deadline, retries until it (the rig's clock moves
 * there) and rejects with ReadDeadlineExceededError, as the DynamoDB adapter does under a throttled table. A read
 * given no deadline goes through: an engine that does not hand the deadline on never sees the stop. `stopped()` counts
 * the reads stopped.
 */
function readsStoppedAtDeadline(rig: TestRig, stops: (keys: readonly SnapshotKey[]) => boolean): { snapshots: SnapshotStore; stopped: () => number } {
  const inner = rig.snapshots;
  let stopped = 0;
  const snapshots: SnapshotStore = {
    getMany: async (keys, options) => {
      if (options?.deadline === undefined || !stops(keys)) return inner.getMany(keys);
      stopped += 1;
      rig.clock.ms = Math.max(rig.clock.ms, options.deadline);
      throw new ReadDeadlineExceededError("BatchGetItem not sent again: its deadline passed", options.deadline);
    },
    putMany: (list) => inner.putMany(list),
    scan: (options) => inner.scan(options),
    vacuum: () => inner.vacuum(),
  };
  return { snapshots, stopped: () => stopped };
}

const cycleErrors = (rig: TestRig) => rig.metrics.points.filter((p) => p.name === "CycleErrors");

describe("snapshot reads held to the cycle's deadline", () => {
  it("a transaction batch whose snapshot read stops at the deadline is neither published nor acknowledged; the next cycle delivers it", async () => {
    const rig = makeRig();
    const txn = rig.provider.addTransaction();
    const held = readsStoppedAtDeadline(rig, (keys) => keys.includes(`transaction:${txn.id}`));

    const report = await pollTransactions({ ...rig.deps, snapshots: held.snapshots }, { deadline: rig.clock.now() + 30_000 });

    expect(report.outcome).toBe("deadline");
    expect(held.stopped()).toBe(1);
    expect(cycleErrors(rig)).toEqual([]);
    expect(rig.publisher.events).toEqual([]);
    expect(rig.snapshots.data.size).toBe(0);
    expect(rig.provider.pending().map((t) => t.id)).toEqual([txn.id]);
    expect(await pollTransactions(rig.deps)).toMatchObject({ outcome: "complete" });
    expect(rig.publisher.ofType("transaction.created").map((e) => e.detail.subject.id)).toEqual([txn.id]);
    expect(rig.provider.pending()).toEqual([]);
  });

  it("logs the runbook's warning, naming the step, when a snapshot read stops retrying at the deadline", async () => {
    const rig = makeRig();
    const txn = rig.provider.addTransaction();
    const held = readsStoppedAtDeadline(rig, (keys) => keys.includes(`transaction:${txn.id}`));

    await pollTransactions({ ...rig.deps, snapshots: held.snapshots }, { deadline: rig.clock.now() + 30_000 });

    // docs/runbook.md sends an operator looking for this line, with its step, when a throttled table ends cycles.
    const warnings = rig.logger.lines.filter((line) => line.message === "store call stopped retrying at the calls' deadline; stopping");
    expect(warnings.map((line) => [line.level, line.attributes])).toEqual([["warn", { step: "read snapshots" }]]);
  });

  it("a refund whose parent alias read stops at the deadline is not published without its parent: the next cycle publishes it with it", async () => {
    const rig = makeRig();
    const purchase = rig.provider.addTransaction();
    await pollTransactions(rig.deps);
    const refund = rig.provider.addTransaction({ transaction_category: "refund", parent_qashio_id: purchase.qashio_id });
    const held = readsStoppedAtDeadline(rig, (keys) => keys.includes(transactionAliasKey(purchase.qashio_id)));

    const report = await pollTransactions({ ...rig.deps, snapshots: held.snapshots }, { deadline: rig.clock.now() + 30_000 });

    expect(report.outcome).toBe("deadline");
    expect(held.stopped()).toBe(1);
    expect(cycleErrors(rig)).toEqual([]);
    expect(rig.publisher.events.map((e) => e.detail.subject.id)).toEqual([purchase.id]);
    expect(rig.provider.pending().map((t) => t.id)).toEqual([refund.id]);
    await pollTransactions(rig.deps);
    expect(rig.publisher.ofType("transaction.created").find((e) => e.detail.subject.id === refund.id)?.detail.data.parent).toEqual({
      id: purchase.id,
      qashio_id: purchase.qashio_id,
    });
  });

  it("a re-drive whose snapshot read stops at the deadline keeps the record as not reached, and the next run delivers it", async () => {
    const rig = makeRig();
    const txn = rig.provider.addTransaction();
    rig.publisher.reject = () => "AccessDeniedException: not allowed";
    await pollTransactions(rig.deps);
    rig.publisher.reject = () => undefined;
    const events = rig.publisher.events.length;
    const held = readsStoppedAtDeadline(rig, (keys) => keys.includes(`transaction:${txn.id}`));

    const report = await redriveQuarantined({ ...rig.deps, snapshots: held.snapshots }, { deadline: rig.clock.now() + 30_000 });

    expect(report.cycle.outcome).toBe("deadline");
    expect(held.stopped()).toBe(1);
    expect(report.kept.map((k) => [k.record.entityId, k.why])).toEqual([[txn.id, "not reached before the deadline"]]);
    expect(rig.publisher.events).toHaveLength(events);
    expect([...rig.quarantine.records.values()].map((r) => r.entityId)).toEqual([txn.id]);
    expect((await redriveQuarantined(rig.deps)).redriven.map((r) => r.entityId)).toEqual([txn.id]);
  });

  it("a card walk whose cursor read stops at the deadline ends `deadline` before listing anything", async () => {
    const rig = makeRig();
    rig.provider.addCard();
    const held = readsStoppedAtDeadline(rig, (keys) => keys.includes(walkCursorKey("full")));

    const report = await pollCards({ ...rig.deps, snapshots: held.snapshots }, { deadline: rig.clock.now() + 30_000 });

    expect(report.outcome).toBe("deadline");
    expect(held.stopped()).toBe(1);
    expect(cycleErrors(rig)).toEqual([]);
    expect(rig.provider.count("listErpCards")).toBe(0);
    expect(rig.snapshots.data.size).toBe(0);
  });

  it("a card page whose snapshot read stops at the deadline is neither published nor stored, its cursor kept; the next walk delivers it", async () => {
    const rig = makeRig();
    const card = rig.provider.addCard();
    const held = readsStoppedAtDeadline(rig, (keys) => keys.includes(`card:${card["id"] as string}`));

    const report = await pollCards({ ...rig.deps, snapshots: held.snapshots }, { deadline: rig.clock.now() + 30_000 });

    expect(report.outcome).toBe("deadline");
    expect(held.stopped()).toBe(1);
    expect(cycleErrors(rig)).toEqual([]);
    expect(rig.publisher.events).toEqual([]);
    expect(rig.snapshots.data.size).toBe(0);
    expect(await pollCards(rig.deps)).toMatchObject({ outcome: "complete" });
    expect(rig.snapshots.data.has(`card:${card["id"] as string}`)).toBe(true);
  });
});
