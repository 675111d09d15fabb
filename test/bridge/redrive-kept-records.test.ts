/**
 * Re-drive cases found by hand mutation testing of redrive.ts and reprocess.ts: each pins a behaviour no other test
 * held, so a small change to it (a comparison flipped, a condition dropped) fails here.
 */
import { describe, expect, it } from "vitest";
import { pollTransactions } from "../../shared/bridge/transactions.js";
import { uuidFromHex } from "../../shared/bridge/hash.js";
import { WriteDeadlineExceededError } from "../../shared/bridge/errors.js";
import { redriveQuarantined } from "../../shared/bridge/redrive.js";
import { makeRig, makeStrictRuleRig, putGlitchedValidationRecord, quarantinePublishFailures } from "./fakes.js";

type Rig = ReturnType<typeof makeRig>;

/** `count` transactions quarantined as their events failed for good (quarantinePublishFailures), and no other record. */
async function quarantinedPublishFailures(rig: Rig, count: number) {
  const txns = await quarantinePublishFailures(rig, count);
  expect(rig.quarantine.records.size).toBe(count);
  return txns;
}

/** One transaction quarantined as its event failed for good. */
async function quarantinedPublishFailure(rig: Rig) {
  const [txn] = await quarantinedPublishFailures(rig, 1);
  return txn!;
}

/** Every acknowledge runs out of time (its calls' deadline past the run's), the clock still before the run's deadline. */
function acknowledgesOutOfTime(rig: Rig): void {
  rig.provider.beforeCall = (call) => {
    if (call.op !== "acknowledgeTransactions") return;
    throw Object.assign(new Error("no time left"), { name: "DeadlineExceededError", deadline: rig.clock.now() + 15_000 });
  };
}

/** The quarantine hands out one record a page, each page read taking `ms` of the rig's clock. */
function slowSingleRecordPages(rig: Rig, ms: number): void {
  const pages = rig.quarantine.pages.bind(rig.quarantine);
  rig.quarantine.pages = async function* (options) {
    for await (const page of pages({ ...options, limit: 1 })) {
      rig.clock.advance(ms);
      yield page;
    }
  };
}

describe("redriveQuarantined: records kept, and why", () => {
  it("keeps a glitched validation record's not-found why when a later chunk's read of its transaction by the trusted qashio_id is not reached", async () => {
    const rig = makeRig();
    const txn = await quarantinedPublishFailure(rig);
    const glitched = "00000000-0000-8000-8000-000000000001";
    await putGlitchedValidationRecord(rig, txn.id, glitched);
    // The glitched record is walked first (its own chunk, read and not found); the deadline passes as the page of the
    // publish record is read, so the second chunk's read by the trusted reference is not made: it tells nothing.
    slowSingleRecordPages(rig, 1_000);

    const report = await redriveQuarantined(rig.deps, { chunkRecords: 1, random: () => 0, deadline: rig.clock.now() + 1_500 });
    expect(report.cycle.outcome).toBe("deadline");
    expect(report.keptByWhy).toEqual({
      "not found by its qashio_id, which no publish record confirms": 1,
      "not reached before the deadline": 1,
    });
    expect(report.kept.find((k) => k.record.id === glitched)?.why).toBe("not found by its qashio_id, which no publish record confirms");
    expect(rig.quarantine.records.size).toBe(2);
  });

  // Two versions stamped alike by the provider: the snapshot shows delivered only what was quarantined before it was
  // written, so a record quarantined after it (or in the same millisecond) holds a state it may not cover.
  it.each([
    { what: "one of them quarantined after the snapshot was written", offsets: [-60_000, 60_000] },
    { what: "quarantined in the millisecond the snapshot was written", offsets: [0] },
  ])("keeps glitched validation records of a transaction its snapshot does not show delivered: $what", async ({ offsets }) => {
    const rig = makeRig();
    const txn = await quarantinedPublishFailure(rig);
    await redriveQuarantined(rig.deps);
    expect(rig.quarantine.records.size).toBe(0);
    const written = Date.parse(rig.snapshots.data.get(`transaction:${txn.id}`)!.updatedAt);
    const ids = offsets.map((_, i) => `00000000-0000-8000-8000-00000000000${i + 1}`);
    for (const [i, offset] of offsets.entries()) {
      await rig.quarantine.put({
        id: ids[i]!,
        kind: "transaction",
        reason: "validation: qashio_id: malformed",
        raw: { id: txn.id, qashio_id: "CTX", updated_at: txn.updated_at, memo: `version ${i}` },
        at: new Date(written + offset).toISOString(),
        entityId: txn.id,
      });
    }
    rig.clock.advance(120_000);

    const report = await redriveQuarantined(rig.deps);
    expect(report.redriven).toEqual([]);
    expect(report.keptByWhy).toEqual({ "not found by its qashio_id, which no publish record confirms": offsets.length });
    expect([...rig.quarantine.records.keys()].sort()).toEqual(ids);
  });

  it("keeps a record a batch did not deliver as not reached when a parent read of that batch runs out of time", async () => {
    const rig = makeRig();
    const refund = rig.provider.addTransaction({ transaction_category: "refund", parent_qashio_id: "QPARENT-UNKNOWN" });
    rig.publisher.reject = () => "AccessDeniedException: not allowed";
    await pollTransactions(rig.deps);
    rig.publisher.reject = () => undefined;
    expect([...rig.quarantine.records.values()].map((r) => r.entityId)).toEqual([refund.id]);
    rig.provider.beforeCall = (call) => {
      if (call.op === "listTransactions" && call.query.qashio_id === "QPARENT-UNKNOWN") {
        throw Object.assign(new Error("no time left"), { name: "DeadlineExceededError", deadline: rig.clock.now() + 15_000 });
      }
    };

    const report = await redriveQuarantined(rig.deps, { deadline: rig.clock.now() + 10_000 });
    expect(report.cycle.outcome).toBe("deadline");
    expect(report.kept.filter((k) => k.record.entityId === refund.id).map((k) => k.why)).toEqual(["not reached before the deadline"]);
    expect(report.keptByWhy["its event was not published"]).toBeUndefined();
    expect(rig.publisher.ofType("transaction.created").map((e) => e.detail.subject.id)).not.toContain(refund.id);
  });

  it("walks a record whose id is the walk's random starting point, once", async () => {
    const rig = makeRig();
    const txn = await quarantinedPublishFailure(rig);
    const [record] = [...rig.quarantine.records.values()];
    // random () => 0 starts the walk at the id of all-zero digits.
    const start = uuidFromHex("0".repeat(32));
    await rig.quarantine.deleteMany([record!.id]);
    await rig.quarantine.put({ ...record!, id: start });

    const report = await redriveQuarantined(rig.deps, { random: () => 0 });
    expect(report.considered).toBe(1);
    expect(report.redriven.map((r) => r.id)).toEqual([start]);
    expect(rig.quarantine.records.size).toBe(0);
    expect(rig.publisher.ofType("transaction.created").map((e) => e.detail.subject.id)).toEqual([txn.id]);
  });

  it("comes round to its starting point and reads no further: the records past it are read once, not walked again", async () => {
    const rig = makeRig();
    await quarantinedPublishFailures(rig, 3);
    let handedOut = 0;
    const pages = rig.quarantine.pages.bind(rig.quarantine);
    rig.quarantine.pages = async function* (options) {
      for await (const page of pages({ ...options, limit: 1 })) {
        handedOut += page.length;
        yield page;
      }
    };
    // random () => 0 starts the walk before every record: the pass from the store's start reads one page, past it.
    const report = await redriveQuarantined(rig.deps, { random: () => 0 });
    expect(report.considered).toBe(3);
    expect(report.redriven).toHaveLength(3);
    expect(handedOut).toBe(3 + 1);
  });

  it("closes the store's page reader when its walk stops before the end, as a store holding a cursor needs", async () => {
    const rig = makeRig();
    await quarantinedPublishFailures(rig, 3);
    const readers = { opened: 0, closed: 0 };
    const pages = rig.quarantine.pages.bind(rig.quarantine);
    rig.quarantine.pages = async function* (options) {
      readers.opened += 1;
      try {
        for await (const page of pages({ ...options, limit: 1 })) {
          rig.clock.advance(10_000);
          yield page;
        }
      } finally {
        readers.closed += 1;
      }
    };
    // The deadline passes with the second page: the walk stops there, the third record not looked at.
    const report = await redriveQuarantined(rig.deps, { random: () => 0, deadline: rig.clock.now() + 15_000 });
    expect(report.notScanned).toBe(true);
    expect(report.considered).toBe(2);
    expect(readers).toEqual({ opened: 1, closed: 1 });
  });

  it("keeps the records of a delivered batch whose delete ran out of time as not reached, for the next run to delete", async () => {
    const rig = makeRig();
    const txn = await quarantinedPublishFailure(rig);
    const remove = rig.quarantine.deleteMany.bind(rig.quarantine);
    const deadline = rig.clock.now() + 10_000;
    rig.quarantine.deleteMany = () => Promise.reject(new WriteDeadlineExceededError("not deleted", deadline));

    const report = await redriveQuarantined(rig.deps, { deadline });
    expect(report.cycle.outcome).toBe("deadline");
    expect(report.redriven).toEqual([]);
    expect(report.keptByWhy).toEqual({ "not reached before the deadline": 1 });
    expect(rig.publisher.ofType("transaction.created").map((e) => e.detail.subject.id)).toEqual([txn.id]);

    rig.quarantine.deleteMany = remove;
    const next = await redriveQuarantined(rig.deps);
    expect(next.redriven).toHaveLength(1);
    expect(rig.quarantine.records.size).toBe(0);
    expect(rig.publisher.ofType("transaction.created")).toHaveLength(1);
  });

  it("keeps every transaction after a batch that ran out of time as not reached, none lost from the count", async () => {
    const rig = makeRig();
    await quarantinedPublishFailures(rig, 3);
    acknowledgesOutOfTime(rig);

    const report = await redriveQuarantined(rig.deps, { deadline: rig.clock.now() + 10_000, pageSize: 1 });
    expect(report.cycle.outcome).toBe("deadline");
    expect(report.redriven).toHaveLength(1);
    expect(report.keptByWhy).toEqual({ "not reached before the deadline": 2 });
  });

  it("keeps a validation record whose transaction, found by its qashio_id, still fails validation, though its snapshot holds a state as new as the record's", async () => {
    const { rig } = makeStrictRuleRig();
    const txn = rig.provider.addTransaction();
    await pollTransactions(rig.deps);
    const written = Date.parse(rig.snapshots.data.get(`transaction:${txn.id}`)!.updatedAt);
    const record = "00000000-0000-8000-8000-000000000001";
    await rig.quarantine.put({
      id: record,
      kind: "transaction",
      reason: "validation: memo: not allowed",
      raw: { id: txn.id, qashio_id: txn.qashio_id, updated_at: txn.updated_at, memo: "REFUND?" },
      at: new Date(written - 60_000).toISOString(),
      entityId: txn.id,
    });
    rig.clock.advance(60_000);
    rig.provider.changeTransaction(txn.id, { memo: "REFUND?" });

    const report = await redriveQuarantined(rig.deps);
    expect(report.redriven).toEqual([]);
    expect(report.keptByWhy).toEqual({ "its current state still fails validation": 1 });
    expect(rig.quarantine.records.has(record)).toBe(true);
  });

  it("asks for no further chunk once one ended out of time, though the deadline has not passed on the clock", async () => {
    const rig = makeRig();
    await quarantinedPublishFailures(rig, 3);
    const pages = rig.quarantine.pages.bind(rig.quarantine);
    rig.quarantine.pages = (options) => pages({ ...options, limit: 1 });
    acknowledgesOutOfTime(rig);

    const report = await redriveQuarantined(rig.deps, { chunkRecords: 1, random: () => 0, deadline: rig.clock.now() + 10_000 });
    expect(report.cycle.outcome).toBe("deadline");
    expect(rig.provider.calls.filter((c) => c.op === "listTransactions" && c.query.qashio_id !== undefined)).toHaveLength(1);
    expect(report.considered).toBe(1);
    expect(report.notScanned).toBe(true);
    expect(rig.quarantine.records.size).toBe(2);
  });
});
