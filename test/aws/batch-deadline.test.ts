/**
 * A DynamoDB batch write whose retry waits in a backoff while the invocation ends (middy's early timeout returns,
 * Lambda freezes the container with the timer pending) must not send again when the container thaws for a later
 * invocation: that page's snapshots would land over what a later cycle stored. On DynamoDB Local, with a clock that
 * jumps past the deadline during the backoff (the freeze).
 */
import { BatchGetCommand, BatchWriteCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DynamoQuarantine } from "../../shared/aws/quarantine.js";
import { DynamoSnapshotStore } from "../../shared/aws/snapshot-store.js";
import { ReadDeadlineExceededError, WriteDeadlineExceededError, pollTransactions, redriveQuarantined } from "../../shared/bridge/index.js";
import { PUBLISH_FAILURE_PREFIX, redrivenCount } from "../../shared/bridge/redrive.js";
import type { Clock, QuarantineRecord, SnapshotKey } from "../../shared/bridge/ports.js";
import { makeRig } from "../bridge/fakes.js";
import { createTestTable, type TestTable } from "./support/dynamo.js";

/** How long the container stays frozen in a backoff: well past the cycle's deadline and its calls' grace. */
const FROZEN_MS = 10 * 60_000;

type Fault = "unprocessed" | "throttled";

/** As the SDK surfaces a throttled batch once its own attempts are spent. */
const throttled = () =>
  Object.assign(new Error("throughput exceeded"), { name: "ProvisionedThroughputExceededException", $fault: "client", $metadata: { httpStatusCode: 400, attempts: 3 } });

/**
 * `doc` whose first `faults` calls of `operation` (BatchWriteItem unless told) do not reach DynamoDB: answered with
 * every entry unprocessed, or throttled as a whole. `sent()` counts the calls of `operation` made (the first included).
 */
function faultyBatch(
  doc: DynamoDBDocumentClient,
  fault: Fault,
  operation: "BatchGetItem" | "BatchWriteItem" = "BatchWriteItem",
  faults = 1,
): { doc: DynamoDBDocumentClient; sent: () => number } {
  let sent = 0;
  const send = async (command: unknown) => {
    const get = command instanceof BatchGetCommand;
    if (get ? operation === "BatchGetItem" : command instanceof BatchWriteCommand && operation === "BatchWriteItem") {
      sent += 1;
      if (sent <= faults) {
        if (fault === "throttled") throw throttled();
        const { RequestItems } = (command as BatchGetCommand | BatchWriteCommand).input;
        return get ? { Responses: {}, UnprocessedKeys: RequestItems, $metadata: {} } : { UnprocessedItems: RequestItems, $metadata: {} };
      }
    }
    return (doc.send as (c: unknown) => Promise<unknown>)(command);
  };
  return { doc: new Proxy(doc, { get: (target, name, receiver) => (name === "send" ? send : Reflect.get(target, name, receiver)) }), sent: () => sent };
}

/**
 * `doc` whose first BatchWriteItem is where the container freezes: it lands, answered after FROZEN_MS on `clock`.
 * `sent()` counts the BatchWriteItem calls made.
 */
function freezingInFirstBatchWrite(doc: DynamoDBDocumentClient, clock: Clock): { doc: DynamoDBDocumentClient; sent: () => number } {
  let sent = 0;
  const send = async (command: unknown) => {
    if (command instanceof BatchWriteCommand) {
      sent += 1;
      if (sent === 1) (clock as Clock & { advance(ms: number): void }).advance(FROZEN_MS);
    }
    return (doc.send as (c: unknown) => Promise<unknown>)(command);
  };
  return { doc: new Proxy(doc, { get: (target, name, receiver) => (name === "send" ? send : Reflect.get(target, name, receiver)) }), sent: () => sent };
}

/** `clock` as the adapters see it, except that a backoff sleep is where the container freezes: it ends FROZEN_MS later. */
const freezingIn = (clock: Clock): Clock => ({
  now: () => clock.now(),
  sleep: async () => {
    (clock as Clock & { advance(ms: number): void }).advance(FROZEN_MS);
  },
});

/**
 * One transaction cycle, with a deadline 30 s away, of a fresh rig holding one new transaction, over `table` reached
 * through `faulty` (a backoff being where the container freezes); `reader` reads the table without faults.
 */
async function cycleOverFaultyTable(table: TestTable, tenant: string, faulty: { readonly doc: DynamoDBDocumentClient }) {
  const rig = makeRig({ tenant });
  const snapshots = new DynamoSnapshotStore({ doc: faulty.doc, tableName: table.tableName, tenant, clock: freezingIn(rig.clock), backoff: { random: () => 0.5 } });
  const txn = rig.provider.addTransaction();
  const report = await pollTransactions({ ...rig.deps, snapshots }, { deadline: rig.clock.now() + 30_000 });
  return { rig, txn, report, reader: new DynamoSnapshotStore({ doc: table.doc, tableName: table.tableName, tenant }) };
}

describe("DynamoDB batch writes held to the cycle's deadline", () => {
  let table: TestTable;
  beforeAll(async () => {
    table = await createTestTable();
  });
  afterAll(async () => table.drop());

  it.each<Fault>(["unprocessed", "throttled"])(
    "a snapshot write %s at first is not sent again past the deadline: the cycle ends `deadline`, unacknowledged",
    async (fault) => {
      const tenant = `frozen-${fault}`;
      const faulty = faultyBatch(table.doc, fault);

      const { rig, txn, report, reader } = await cycleOverFaultyTable(table, tenant, faulty);

      // Recognised by the engine as out of time, not a store failure: a clean end, no abort.
      expect(report.outcome).toBe("deadline");
      expect(rig.metrics.points.filter((p) => p.name === "CycleErrors")).toEqual([]);
      // No resend after the thaw: the first call only, and nothing of it written.
      expect(faulty.sent()).toBe(1);
      expect((await reader.getMany([`transaction:${txn.id}`])).size).toBe(0);
      // Published, not acknowledged: the next cycle redoes the page, re-sending the same event id.
      expect(rig.publisher.ofType("transaction.created")).toHaveLength(1);
      expect(rig.provider.pending().map((t) => t.id)).toEqual([txn.id]);
      const first = rig.publisher.events[0]?.detail.id;
      expect(await pollTransactions({ ...rig.deps, snapshots: reader })).toMatchObject({ outcome: "complete" });
      expect(rig.publisher.events.map((e) => e.detail.id)).toEqual([first, first]);
      expect((await reader.getMany([`transaction:${txn.id}`])).size).toBe(1);
    },
  );

  it.each<Fault>(["unprocessed", "throttled"])("putMany rejects with WriteDeadlineExceededError, not sending again, once the deadline passed in the backoff (%s)", async (fault) => {
    const rig = makeRig();
    const faulty = faultyBatch(table.doc, fault);
    const tenant = `direct-${fault}`;
    const store = new DynamoSnapshotStore({ doc: faulty.doc, tableName: table.tableName, tenant, clock: freezingIn(rig.clock) });
    const deadline = rig.clock.now() + 1_000;
    const error = await store.putMany([{ key: "card:a", hash: "h", object: {}, updatedAt: "2026-03-01T12:00:00.000Z" }], { deadline }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WriteDeadlineExceededError);
    expect(error).toMatchObject({ deadline, ...(fault === "throttled" ? { cause: { name: "ProvisionedThroughputExceededException" } } : {}) });
    expect(faulty.sent()).toBe(1);
    // Without a deadline the same fault is retried through, as before.
    const again = faultyBatch(table.doc, fault);
    await new DynamoSnapshotStore({ doc: again.doc, tableName: table.tableName, tenant, clock: freezingIn(rig.clock) }).putMany([
      { key: "card:a", hash: "h", object: {}, updatedAt: "2026-03-01T12:00:00.000Z" },
    ]);
    expect(again.sent()).toBe(2);
  });

  it.each<Fault>(["unprocessed", "throttled"])("counts a backoff ending at the deadline itself as past it, one ending a millisecond before as not (%s)", async (fault) => {
    const start = Date.parse("2026-03-01T12:00:00Z");
    const deadline = start + 1_000;
    /** A clock whose backoff sleeps end `before` ms short of the deadline. */
    const endingAt = (before: number): Clock => {
      let time = start;
      return { now: () => time, sleep: async () => void (time = deadline - before) };
    };
    const snapshot = { key: "card:edge" as SnapshotKey, hash: "h", object: {}, updatedAt: "2026-03-01T12:00:00.000Z" };
    const atDeadline = faultyBatch(table.doc, fault);
    const late = new DynamoSnapshotStore({ doc: atDeadline.doc, tableName: table.tableName, tenant: `edge-${fault}`, clock: endingAt(0), backoff: { random: () => 0.5 } });
    await expect(late.putMany([snapshot], { deadline })).rejects.toBeInstanceOf(WriteDeadlineExceededError);
    expect(atDeadline.sent()).toBe(1);
    const justBefore = faultyBatch(table.doc, fault);
    const inTime = new DynamoSnapshotStore({ doc: justBefore.doc, tableName: table.tableName, tenant: `edge-${fault}`, clock: endingAt(1), backoff: { random: () => 0.5 } });
    await inTime.putMany([snapshot], { deadline });
    expect(justBefore.sent()).toBe(2);
  });

  it("putMany starts no batch past the deadline: one whose turn comes after a call the container froze in is not sent", async () => {
    const rig = makeRig();
    const tenant = "frozen-later-batch";
    const faulty = freezingInFirstBatchWrite(table.doc, rig.clock);
    // One batch in flight at a time: the second of the two batches (26 snapshots) starts after the first's call.
    const store = new DynamoSnapshotStore({ doc: faulty.doc, tableName: table.tableName, tenant, clock: rig.clock, concurrency: 1 });
    const keys = Array.from({ length: 26 }, (_, i): SnapshotKey => `card:c${String(i).padStart(2, "0")}`);
    const deadline = rig.clock.now() + 1_000;
    const error = await store.putMany(keys.map((key) => ({ key, hash: "h", object: {}, updatedAt: "2026-03-01T12:00:00.000Z" })), { deadline }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WriteDeadlineExceededError);
    expect(faulty.sent()).toBe(1);
    const stored = await new DynamoSnapshotStore({ doc: table.doc, tableName: table.tableName, tenant }).getMany(keys);
    expect([...stored.keys()].sort()).toEqual(keys.slice(0, 25));
  });

  it("deleteMany starts no call past the deadline: the one after a call the container froze in is not sent", async () => {
    const rig = makeRig();
    const tenant = "frozen-later-delete";
    const faulty = freezingInFirstBatchWrite(table.doc, rig.clock);
    const quarantine = new DynamoQuarantine({ doc: faulty.doc, tableName: table.tableName, tenant, clock: rig.clock });
    const ids = Array.from({ length: 26 }, (_, i) => `0b7c1c36-0000-4000-8000-${String(i).padStart(12, "0")}`);
    for (const id of ids) await quarantine.put({ id, kind: "card", reason: "invalid", raw: { id }, at: new Date(rig.clock.now()).toISOString() });
    const deadline = rig.clock.now() + 1_000;
    const error = await quarantine.deleteMany(ids, { deadline }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WriteDeadlineExceededError);
    expect(error).toMatchObject({ doneIds: ids.slice(0, 25) });
    expect(faulty.sent()).toBe(1);
    expect((await quarantine.list()).map((r) => r.id)).toEqual(ids.slice(25));
  });

  it("deleteMany stopped at the deadline with part of a call unprocessed names the records that call deleted, not the others", async () => {
    const rig = makeRig();
    const tenant = "frozen-part-unprocessed";
    const ids = ["0b7c1c36-0000-4000-8000-000000000001", "0b7c1c36-0000-4000-8000-000000000002", "0b7c1c36-0000-4000-8000-000000000003"];
    let sent = 0;
    // The first call: DynamoDB processes the first two deletes and leaves the third unprocessed.
    const send = async (command: unknown) => {
      if (command instanceof BatchWriteCommand && ++sent === 1) {
        const requests = command.input.RequestItems?.[table.tableName] ?? [];
        await table.doc.send(new BatchWriteCommand({ RequestItems: { [table.tableName]: requests.slice(0, 2) } }));
        return { UnprocessedItems: { [table.tableName]: requests.slice(2) }, $metadata: {} };
      }
      return (table.doc.send as (c: unknown) => Promise<unknown>)(command);
    };
    const doc = new Proxy(table.doc, { get: (target, name, receiver) => (name === "send" ? send : Reflect.get(target, name, receiver)) });
    const writer = new DynamoQuarantine({ doc: table.doc, tableName: table.tableName, tenant, clock: rig.clock });
    for (const id of ids) await writer.put({ id, kind: "card", reason: "invalid", raw: { id }, at: new Date(rig.clock.now()).toISOString() });
    const quarantine = new DynamoQuarantine({ doc, tableName: table.tableName, tenant, clock: freezingIn(rig.clock) });

    const error = await quarantine.deleteMany(ids, { deadline: rig.clock.now() + 1_000 }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(WriteDeadlineExceededError);
    expect(sent).toBe(1);
    expect((error as WriteDeadlineExceededError).doneIds).toEqual(ids.slice(0, 2));
    expect((await writer.list()).map((r) => r.id)).toEqual(ids.slice(2));
  });

  it("a re-drive's quarantine delete is not sent again past the deadline: the records stay, the run ends `deadline`", async () => {
    const tenant = "frozen-redrive";
    const faulty = faultyBatch(table.doc, "unprocessed");
    const rig = makeRig({ tenant });
    const quarantine = new DynamoQuarantine({ doc: faulty.doc, tableName: table.tableName, tenant, clock: freezingIn(rig.clock) });
    const txn = rig.provider.addTransaction();
    const record: QuarantineRecord = {
      id: "0b7c1c36-0000-4000-8000-000000000001",
      kind: "transaction",
      entityId: txn.id,
      reason: `${PUBLISH_FAILURE_PREFIX}event bus refused it`,
      raw: { id: txn.id, qashio_id: txn.qashio_id },
      at: new Date(rig.clock.now()).toISOString(),
    };
    await quarantine.put(record);

    const report = await redriveQuarantined({ ...rig.deps, quarantine }, { deadline: rig.clock.now() + 30_000 });

    expect(report.cycle.outcome).toBe("deadline");
    expect(faulty.sent()).toBe(1);
    expect((await quarantine.list()).map((r) => r.id)).toEqual([record.id]);
    expect(report.kept.map((k) => k.why)).toEqual(["not reached before the deadline"]);
  });

  it("a re-drive whose quarantine delete stops at the deadline part way counts the records it deleted re-driven, and keeps only those left", async () => {
    const tenant = "frozen-redrive-part";
    const rig = makeRig({ tenant });
    // The first of the delete's two calls (26 records) lands as the container freezes; the second is not sent.
    const faulty = freezingInFirstBatchWrite(table.doc, rig.clock);
    const quarantine = new DynamoQuarantine({ doc: faulty.doc, tableName: table.tableName, tenant, clock: rig.clock });
    const txn = rig.provider.addTransaction();
    const ids = Array.from({ length: 26 }, (_, i) => `0b7c1c36-0000-4000-8000-${String(i).padStart(12, "0")}`);
    for (const id of ids) {
      await quarantine.put({
        id,
        kind: "transaction",
        entityId: txn.id,
        reason: `${PUBLISH_FAILURE_PREFIX}event bus refused it`,
        raw: { id: txn.id, qashio_id: txn.qashio_id },
        at: new Date(rig.clock.now()).toISOString(),
      });
    }

    const report = await redriveQuarantined({ ...rig.deps, quarantine }, { deadline: rig.clock.now() + 30_000 });

    expect(report.cycle.outcome).toBe("deadline");
    expect(faulty.sent()).toBe(1);
    const left = (await quarantine.list()).map((r) => r.id);
    expect(left).toEqual(ids.slice(25));
    expect(report.kept.map((k) => k.record.id)).toEqual(left);
    expect(redrivenCount(report)).toBe(25);
  });
});

describe("DynamoDB batch reads held to the cycle's deadline", () => {
  let table: TestTable;
  beforeAll(async () => {
    table = await createTestTable();
  });
  afterAll(async () => table.drop());

  it.each<Fault>(["unprocessed", "throttled"])("getMany rejects with ReadDeadlineExceededError, not sending again, once the deadline passed in the backoff (%s)", async (fault) => {
    const rig = makeRig();
    const tenant = `read-${fault}`;
    const key: SnapshotKey = "card:a";
    await new DynamoSnapshotStore({ doc: table.doc, tableName: table.tableName, tenant }).putMany([{ key, hash: "h", object: {}, updatedAt: "2026-03-01T12:00:00.000Z" }]);
    const faulty = faultyBatch(table.doc, fault, "BatchGetItem");
    const store = new DynamoSnapshotStore({ doc: faulty.doc, tableName: table.tableName, tenant, clock: freezingIn(rig.clock) });
    const deadline = rig.clock.now() + 1_000;
    const error = await store.getMany([key], { deadline }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReadDeadlineExceededError);
    expect(error).toMatchObject({ deadline, ...(fault === "throttled" ? { cause: { name: "ProvisionedThroughputExceededException" } } : {}) });
    expect(faulty.sent()).toBe(1);
    // Without a deadline the same fault is retried through, as before.
    const again = faultyBatch(table.doc, fault, "BatchGetItem");
    const found = await new DynamoSnapshotStore({ doc: again.doc, tableName: table.tableName, tenant, clock: freezingIn(rig.clock) }).getMany([key]);
    expect([...found.keys()]).toEqual([key]);
    expect(again.sent()).toBe(2);
  });

  it("getMany starts no batch past the deadline: one whose turn comes after a call that ran past it is not sent", async () => {
    const rig = makeRig();
    const tenant = "read-later-batch";
    let sent = 0;
    const send = async (command: unknown) => {
      if (command instanceof BatchGetCommand && ++sent === 1) rig.clock.advance(FROZEN_MS);
      return (table.doc.send as (c: unknown) => Promise<unknown>)(command);
    };
    const doc = new Proxy(table.doc, { get: (target, name, receiver) => (name === "send" ? send : Reflect.get(target, name, receiver)) });
    // One batch in flight at a time: the second of the two batches (101 keys) starts after the first's call.
    const store = new DynamoSnapshotStore({ doc, tableName: table.tableName, tenant, clock: rig.clock, concurrency: 1 });
    const keys = Array.from({ length: 101 }, (_, i): SnapshotKey => `card:c${String(i).padStart(3, "0")}`);
    const error = await store.getMany(keys, { deadline: rig.clock.now() + 1_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReadDeadlineExceededError);
    expect(sent).toBe(1);
  });

  it.each<Fault>(["unprocessed", "throttled"])(
    "a cycle whose snapshot read stays %s past the deadline ends `deadline`: nothing of the batch published or acknowledged, the next cycle delivers it",
    async (fault) => {
      const tenant = `read-cycle-${fault}`;
      // The table keeps answering so: without the deadline, the read would retry until its attempts ran out.
      const faulty = faultyBatch(table.doc, fault, "BatchGetItem", Number.POSITIVE_INFINITY);

      const { rig, txn, report, reader } = await cycleOverFaultyTable(table, tenant, faulty);

      // Out of time, not a store failure: a clean end, no abort, and the read not sent again past the deadline.
      expect(report.outcome).toBe("deadline");
      expect(rig.metrics.points.filter((p) => p.name === "CycleErrors")).toEqual([]);
      expect(faulty.sent()).toBe(1);
      // Read before anything else of the batch: nothing published, stored or acknowledged.
      expect(rig.publisher.events).toEqual([]);
      expect(rig.provider.pending().map((t) => t.id)).toEqual([txn.id]);
      expect((await reader.getMany([`transaction:${txn.id}`])).size).toBe(0);
      // The next cycle, the table answering again, delivers it.
      expect(await pollTransactions({ ...rig.deps, snapshots: reader })).toMatchObject({ outcome: "complete" });
      expect(rig.publisher.ofType("transaction.created").map((e) => e.detail.subject.id)).toEqual([txn.id]);
      expect(rig.provider.pending()).toEqual([]);
      expect((await reader.getMany([`transaction:${txn.id}`])).size).toBe(1);
    },
  );
});
