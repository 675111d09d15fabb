import { describe, expect, it } from "vitest";
import { pollTransactions } from "../../shared/bridge/transactions.js";
import { CycleAbortedError } from "../../shared/bridge/errors.js";
import { redriveQuarantined } from "../../shared/bridge/redrive.js";
import { CrashPoint, crashingPorts, SimulatedCrash } from "./faults.js";
import { makeRig, type TestRig } from "./fakes.js";
import { expectAcknowledgedAreRecorded, expectNothingLost } from "./invariants.js";

/** A scenario: a page of new transactions and a refund, then one changed after acknowledge. */
function scenario(): { rig: TestRig; changeOne: () => void } {
  const rig = makeRig();
  const first = rig.provider.addTransaction();
  rig.provider.addTransaction();
  rig.provider.addTransaction({ transaction_category: "refund", parent_qashio_id: first.qashio_id });
  return { rig, changeOne: () => rig.provider.changeTransaction(first.id, { memo: "edited" }) };
}

describe("crash safety of the transaction cycle", () => {
  it("counts the effects of a cycle in the order publish, write snapshots, acknowledge", async () => {
    const { rig } = scenario();
    const crash = new CrashPoint(undefined);
    await pollTransactions({ ...rig.deps, ...crashingPorts(rig.deps, crash) }, { pageSize: 2, readAhead: false });
    expect(crash.effects).toEqual([
      "provider.listTransactions",
      // The refund's parent is not on this page nor in the store yet: one provider read.
      "provider.listTransactions",
      "publisher.publish",
      "snapshots.putMany",
      "provider.acknowledgeTransactions",
      "provider.listTransactions",
      "publisher.publish",
      "snapshots.putMany",
      "provider.acknowledgeTransactions",
      "provider.listTransactions",
    ]);
  });

  it("keeps the order publish, write snapshots, acknowledge per batch when reading ahead", async () => {
    const { rig } = scenario();
    const crash = new CrashPoint(undefined);
    await pollTransactions({ ...rig.deps, ...crashingPorts(rig.deps, crash) }, { pageSize: 2 });
    const writes = crash.effects.filter((e) => e !== "provider.listTransactions");
    expect(writes).toEqual([
      "publisher.publish",
      "snapshots.putMany",
      "provider.acknowledgeTransactions",
      "publisher.publish",
      "snapshots.putMany",
      "provider.acknowledgeTransactions",
    ]);
  });

  // Crash at every effect of two cycles (new items, then a change), before and after it applies.
  const points = Array.from({ length: 16 }, (_, at) => [
    { at, after: false },
    { at, after: true },
  ]).flat();
  it.each(points)("loses nothing when the process crashes at effect $at (after: $after)", async (plan) => {
    const { rig, changeOne } = scenario();
    const crash = new CrashPoint(plan);
    const crashing = { ...rig.deps, ...crashingPorts(rig.deps, crash) };
    const runs = [() => pollTransactions(crashing, { pageSize: 2 }), () => (changeOne(), pollTransactions(crashing, { pageSize: 2 }))];
    for (const run of runs) {
      // Cycles run minutes apart: publish times tell cycles apart, as the catalog's ordering rule expects.
      rig.clock.advance(60_000);
      try {
        await run();
      } catch (error) {
        if (!(error instanceof CycleAbortedError && error.cause instanceof SimulatedCrash)) throw error;
      }
      expectAcknowledgedAreRecorded(rig);
    }
    // The next process starts over with the same durable state.
    rig.clock.advance(60_000);
    await pollTransactions(rig.deps, { pageSize: 2 });
    expectNothingLost(rig);
    expect(crash.crashed || plan.at >= crash.effects.length).toBe(true);
  });

  // The quarantine path: an invalid item and an event the publisher rejects go to quarantine before the acknowledge.
  const quarantinePoints = Array.from({ length: 6 }, (_, at) => [
    { at, after: false },
    { at, after: true },
  ]).flat();
  it.each(quarantinePoints)("quarantines before acknowledging when the process crashes at effect $at (after: $after)", async (plan) => {
    const invalid = (raw: unknown) => (raw as { memo?: string }).memo === "bad";
    const rig = makeRig({}, { validators: { transaction: (raw) => (invalid(raw) ? { success: false, reason: "memo: rejected" } : { success: true, data: raw as Record<string, unknown> }) } });
    const good = rig.provider.addTransaction();
    const bad = rig.provider.addTransaction({ memo: "bad" });
    const rejected = rig.provider.addTransaction();
    rig.publisher.reject = (e) => (e.detail.subject.id === rejected.id ? "entry too large" : undefined);
    const crash = new CrashPoint(plan);
    try {
      await pollTransactions({ ...rig.deps, ...crashingPorts(rig.deps, crash) }, { pageSize: 5 });
    } catch (error) {
      if (!(error instanceof CycleAbortedError && error.cause instanceof SimulatedCrash)) throw error;
    }
    expectAcknowledgedAreRecorded(rig);
    await pollTransactions(rig.deps, { pageSize: 5 });
    expect(rig.provider.pending()).toEqual([]);
    expect(new Set([...rig.quarantine.records.values()].map((r) => r.entityId))).toEqual(new Set([bad.id, rejected.id]));
    expect(rig.quarantine.records.size).toBe(2);
    expect(new Set(rig.publisher.events.map((e) => e.detail.subject.id))).toEqual(new Set([good.id]));
    expect(crash.crashed || plan.at >= crash.effects.length).toBe(true);
  });

  it("re-sends the same event ids after a crash between publish and snapshot write", async () => {
    const rig = makeRig();
    rig.provider.addTransaction();
    const crash = new CrashPoint({ at: 2, after: false });
    await expect(pollTransactions({ ...rig.deps, ...crashingPorts(rig.deps, crash) })).rejects.toThrow(CycleAbortedError);
    expect(crash.effects.at(-1)).toBe("snapshots.putMany");
    await pollTransactions(rig.deps);
    expect(rig.publisher.events).toHaveLength(2);
    expect(rig.publisher.ids[0]).toBe(rig.publisher.ids[1]);
  });

  it("re-sends a change after a crash under the same subject.sequence and changes when the provider lists id-matched elements in another order (its id may differ: spec-gaps, provider key order)", async () => {
    const rig = makeRig();
    const txn = rig.provider.addTransaction({ line_items: [{ id: "L1", amount: 4 }, { id: "L2", amount: 6 }] });
    await pollTransactions(rig.deps);
    rig.provider.changeTransaction(txn.id, { memo: "edited" });
    const crash = new CrashPoint({ at: 2, after: true });
    await expect(pollTransactions({ ...rig.deps, ...crashingPorts(rig.deps, crash) })).rejects.toThrow(CycleAbortedError);
    expect(crash.effects.at(-1)).toBe("publisher.publish");
    const stamp = txn.updated_at;
    rig.provider.changeTransaction(txn.id, { line_items: [{ id: "L2", amount: 6 }, { id: "L1", amount: 4 }] });
    txn.updated_at = stamp;
    await pollTransactions(rig.deps);
    // A new order alone is no change: the re-send is the same change, which a consumer recognises by subject and
    // sequence (the id hashes the object as sent, as for a change of the provider's key order).
    const changed = rig.publisher.ofType("transaction.changed");
    expect(changed).toHaveLength(2);
    const [sent, resent] = changed;
    expect(resent?.detail.data.changes).toEqual(sent?.detail.data.changes);
    expect(resent?.detail.subject).toEqual(sent?.detail.subject);
    expect(sent?.detail.subject.sequence).toBeGreaterThan(1);
  });

  it("only acknowledges, publishing nothing, after a crash between snapshot write and acknowledge", async () => {
    const rig = makeRig();
    rig.provider.addTransaction();
    const crash = new CrashPoint({ at: 3, after: false });
    await expect(pollTransactions({ ...rig.deps, ...crashingPorts(rig.deps, crash) })).rejects.toThrow(CycleAbortedError);
    expect(crash.effects.at(-1)).toBe("provider.acknowledgeTransactions");
    const report = await pollTransactions(rig.deps);
    expect(rig.publisher.events).toHaveLength(1);
    expect(report).toMatchObject({ unchanged: 1, acknowledged: 1 });
  });
});

describe("crash safety of the re-drive", () => {
  /** A rig holding five transactions quarantined because their events failed for good; publishing works again. */
  async function quarantined(): Promise<{ rig: TestRig; ids: readonly string[] }> {
    const rig = makeRig();
    const ids = Array.from({ length: 5 }, () => rig.provider.addTransaction().id);
    rig.publisher.reject = () => "AccessDeniedException: not allowed";
    await pollTransactions(rig.deps);
    rig.publisher.reject = () => undefined;
    expect(rig.quarantine.records.size).toBe(5);
    return { rig, ids };
  }

  it("deletes a batch's records with one call, after its publish, snapshot write and acknowledge", async () => {
    const { rig } = await quarantined();
    const crash = new CrashPoint(undefined);
    await redriveQuarantined({ ...rig.deps, ...crashingPorts(rig.deps, crash) }, { pageSize: 2 });
    const batch = ["publisher.publish", "snapshots.putMany", "provider.acknowledgeTransactions", "quarantine.deleteMany"];
    expect(crash.effects.filter((e) => e !== "provider.listTransactions")).toEqual([...batch, ...batch, ...batch]);
  });

  // Five reads and three batches of four effects.
  const points = Array.from({ length: 17 }, (_, at) => [
    { at, after: false },
    { at, after: true },
  ]).flat();
  it.each(points)("deletes only delivered transactions' records, and the next run ends the rest with the same event ids, when it crashes at effect $at (after: $after)", async (plan) => {
    const { rig, ids } = await quarantined();
    const crash = new CrashPoint(plan);
    try {
      await redriveQuarantined({ ...rig.deps, ...crashingPorts(rig.deps, crash) }, { pageSize: 2 });
    } catch (error) {
      if (!(error instanceof CycleAbortedError && error.cause instanceof SimulatedCrash)) throw error;
    }
    const held = new Set([...rig.quarantine.records.values()].map((r) => r.entityId));
    for (const id of ids) if (!held.has(id)) expect(rig.snapshots.data.has(`transaction:${id}`)).toBe(true);
    await redriveQuarantined(rig.deps, { pageSize: 2 });
    expect(rig.quarantine.records.size).toBe(0);
    const eventIds = new Map<string, Set<string>>();
    for (const e of rig.publisher.events) eventIds.set(e.detail.subject.id, (eventIds.get(e.detail.subject.id) ?? new Set()).add(e.detail.id));
    expect([...eventIds.keys()].sort()).toEqual([...ids].sort());
    expect([...eventIds.values()].every((sent) => sent.size === 1)).toBe(true);
    expect(crash.crashed || plan.at >= crash.effects.length).toBe(true);
  });
});
