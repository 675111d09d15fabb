import { describe, expect, it } from "vitest";
import { pollTransactions } from "../../shared/bridge/transactions.js";
import { REDRIVE_READ_PAGES } from "../../shared/bridge/reprocess.js";
import { KEPT_RECORDS_NAMED, REDRIVE_QUARANTINE_PAGE_SIZE, redriveQuarantined, redrivenCount } from "../../shared/bridge/redrive.js";
import { DEFAULT_DEADLINE_GRACE_MS } from "../../shared/bridge/deps.js";
import { CycleAbortedError, ReadDeadlineExceededError } from "../../shared/bridge/errors.js";
import type { StoreCallOptions } from "../../shared/bridge/ports.js";
import { makeRig, makeStrictRuleRig, putGlitchedValidationRecord, quarantinePublishFailures, seededRandom, slowReadsByQashioId } from "./fakes.js";
import { clientOverFake } from "./provider-client.js";

/**
 * A rig whose transaction validator refuses a memo of "REFUND?" while `strict` is on (a rule that wrongly refuses good
 * provider data), and one transaction a cycle quarantined for validation and acknowledged under it.
 */
async function quarantineUnderStrictRule(options: { publishedBefore?: boolean } = {}) {
  const { rig, rule } = makeStrictRuleRig();
  const txn = rig.provider.addTransaction(options.publishedBefore ? {} : { memo: "REFUND?" });
  if (options.publishedBefore) {
    await pollTransactions(rig.deps);
    rig.provider.changeTransaction(txn.id, { memo: "REFUND?" });
  }
  await pollTransactions(rig.deps);
  expect(rig.provider.pending()).toEqual([]);
  expect([...rig.quarantine.records.values()].map((r) => [r.entityId, r.reason])).toEqual([[txn.id, "validation: memo: not allowed"]]);
  return { rig, rule, txn };
}

/** The rig's deps with a snapshot store whose writes fail ("disk full"), its reads working. */
function withSnapshotWritesFailing(rig: ReturnType<typeof makeRig>) {
  const { snapshots } = rig;
  const failingWrites = {
    getMany: snapshots.getMany.bind(snapshots),
    putMany: () => Promise.reject(new Error("disk full")),
    scan: snapshots.scan.bind(snapshots),
    vacuum: snapshots.vacuum.bind(snapshots),
  };
  return { ...rig.deps, snapshots: failingWrites };
}

/**
 * A rig whose transaction's publish record a re-drive delivered, then a validation record of that state put with a
 * glitched qashio_id (`CTX`, found nowhere): its snapshot shows it delivered.
 */
async function glitchedRecordOfDelivered() {
  const rig = makeRig();
  const [txn] = await quarantinePublishFailures(rig);
  await redriveQuarantined(rig.deps);
  await putGlitchedValidationRecord(rig, txn!.id, "00000000-0000-8000-8000-000000000001", { updated_at: txn!.updated_at });
  return rig;
}

/** The ids of each deleteMany call the rig's quarantine gets from now on. */
function deleteManyCalls(rig: ReturnType<typeof makeRig>): string[][] {
  const calls: string[][] = [];
  const remove = rig.quarantine.deleteMany.bind(rig.quarantine);
  rig.quarantine.deleteMany = async (ids) => {
    calls.push([...ids]);
    return remove(ids);
  };
  return calls;
}

describe("redriveQuarantined", () => {
  it("publishes a transaction whose event failed for good, then deletes its record, keeping one still invalid", async () => {
    const broken = (raw: unknown) => (raw as { broken?: boolean }).broken === true;
    const rig = makeRig(
      { pii: { mode: "redact" } },
      { validators: { transaction: (raw) => (broken(raw) ? { success: false, reason: "broken" } : { success: true, data: raw as Record<string, unknown> }) } },
    );
    const failed = rig.provider.addTransaction();
    const invalid = rig.provider.addTransaction();
    rig.provider.rawOverrides.set(invalid.id, { id: invalid.id, qashio_id: invalid.qashio_id, broken: true });
    rig.publisher.reject = (e) => (e.detail.subject.id === failed.id ? "AccessDeniedException: not allowed" : undefined);
    await pollTransactions(rig.deps);
    expect(rig.provider.pending()).toEqual([]);
    expect(rig.quarantine.records.size).toBe(2);

    rig.publisher.reject = () => undefined;
    const report = await redriveQuarantined(rig.deps);
    expect(report.considered).toBe(2);
    expect(report.kept.map((k) => [k.record.entityId, k.why])).toEqual([[invalid.id, "its current state still fails validation"]]);
    expect(report.redriven.map((r) => r.entityId)).toEqual([failed.id]);
    expect(rig.publisher.ofType("transaction.created").map((e) => e.detail.subject)).toEqual([
      // The refused event never reached the bus, so the re-driven one is still the subject's first.
      { type: "transaction", id: failed.id, qashio_id: failed.qashio_id, sequence: 1 },
    ]);
    expect(rig.snapshots.data.has(`transaction:${failed.id}`)).toBe(true);
    expect([...rig.quarantine.records.values()].map((r) => r.entityId)).toEqual([invalid.id]);
    expect(rig.provider.calls.filter((c) => c.op === "listTransactions" && c.query.qashio_id === failed.qashio_id)).toHaveLength(1);
  });

  it("logs itself as the re-drive, not a cycle, and sends a SyncLagSeconds point only for what it delivered (an empty one knows no backlog)", async () => {
    const rig = makeRig();
    const empty = await redriveQuarantined(rig.deps);
    expect(empty.considered).toBe(0);
    expect(rig.metrics.points.filter((p) => p.name === "SyncLagSeconds")).toEqual([]);
    expect(rig.logger.lines.map((l) => l.message)).toContain("re-drive complete");
    expect(rig.logger.lines.map((l) => l.message)).not.toContain("transactions cycle complete");

    const [txn] = await quarantinePublishFailures(rig);
    rig.metrics.points.length = 0;
    rig.clock.ms = Date.parse(txn!.updated_at) + 120_000;
    await redriveQuarantined(rig.deps);
    expect(rig.metrics.points.filter((p) => p.name === "SyncLagSeconds").map((p) => p.value)).toEqual([120]);
  });

  it("sends no TransactionsBacklog point: its reads by qashio_id list no backlog, though their pages carry total_records", async () => {
    const rig = makeRig();
    await quarantinePublishFailures(rig, 2);
    // Still listed, so the reads by qashio_id are not the only transactions the provider holds.
    rig.provider.addTransaction();
    rig.metrics.points.length = 0;
    const report = await redriveQuarantined(rig.deps);
    expect(report.redriven).toHaveLength(2);
    expect(rig.provider.calls.some((c) => c.op === "listTransactions" && c.query.qashio_id !== undefined)).toBe(true);
    expect(rig.metrics.points.filter((p) => p.name === "TransactionsBacklog")).toEqual([]);
    expect(report.cycle.backlog).toBeUndefined();
  });

  it("on a 403 says the provider refuses the access and still that the records are kept for the next redrive", async () => {
    const rig = makeRig();
    await quarantinePublishFailures(rig);
    rig.provider.beforeCall = (call) => {
      if (call.op === "listTransactions") throw Object.assign(new Error("answered 403"), { name: "ForbiddenError", status: 403 });
    };
    const error = await redriveQuarantined(rig.deps).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CycleAbortedError);
    expect((error as Error).message).toMatch(/^re-drive stopped: .*the provider refuses this access .*; records not re-driven yet are kept: run `redrive` again/);
    expect(rig.quarantine.records.size).toBe(1);
  });

  it("re-drives a failed transaction.changed against the last published state", async () => {
    const rig = makeRig();
    const txn = rig.provider.addTransaction();
    await pollTransactions(rig.deps);
    rig.provider.changeTransaction(txn.id, { memo: "edited" });
    rig.publisher.reject = () => "MalformedDetail: bad";
    await pollTransactions(rig.deps);
    rig.publisher.reject = () => undefined;
    await redriveQuarantined(rig.deps);
    const [changed] = rig.publisher.ofType("transaction.changed");
    expect(changed?.detail.data.changes).toContainEqual({ path: "/memo", before: "", after: "edited" });
    expect(rig.quarantine.records.size).toBe(0);
  });

  it("stops reading at the deadline, deletes the records of every batch it finished, and the next run goes on", async () => {
    const rig = makeRig();
    for (let i = 0; i < 25; i += 1) rig.provider.addTransaction();
    rig.publisher.reject = () => "AccessDeniedException: not allowed";
    await pollTransactions(rig.deps);
    expect(rig.quarantine.records.size).toBe(25);
    rig.publisher.reject = () => undefined;

    // Each read by qashio_id takes a second; the run has 12.
    slowReadsByQashioId(rig, 1_000);
    const first = await redriveQuarantined(rig.deps, { pageSize: 5, deadline: rig.clock.now() + 12_000 });
    expect(first.cycle.outcome).toBe("deadline");
    // 12 read before the deadline, in batches of 5, 5 and 2: all published and their records gone.
    expect(first.redriven).toHaveLength(12);
    expect(first.kept).toHaveLength(13);
    expect(first.kept.every((k) => k.why === "not reached before the deadline")).toBe(true);
    expect(rig.quarantine.records.size).toBe(13);

    const second = await redriveQuarantined(rig.deps, { pageSize: 5, deadline: rig.clock.now() + 60_000 });
    expect(second).toMatchObject({ considered: 13, kept: [] });
    expect(second.cycle.outcome).toBe("complete");
    expect(rig.quarantine.records.size).toBe(0);
    expect(new Set(rig.publisher.ofType("transaction.created").map((e) => e.detail.subject.id)).size).toBe(25);
  });

  it.each([
    ["its deadline passed", (now: number) => ({ deadline: now })],
    ["it was asked to stop", () => ({ signal: AbortSignal.abort() })],
  ])("reads no page of the quarantine when %s before it starts: every record left for the next run, none looked at", async (_, stop) => {
    const rig = makeRig();
    await quarantinePublishFailures(rig, 3);
    const pageSizes = rig.quarantine.readInPagesOnly();
    const report = await redriveQuarantined(rig.deps, stop(rig.clock.now()));
    expect(pageSizes).toEqual([]);
    expect(report).toMatchObject({ considered: 0, redriven: [], kept: [], notScanned: true });
    expect(rig.quarantine.records.size).toBe(3);
  });

  it("reads the quarantine a page at a time and keeps no record's body, so a large quarantine is not held whole", async () => {
    const rig = makeRig();
    const txns = await quarantinePublishFailures(rig, 230);
    expect(rig.quarantine.records.size).toBe(230);
    const pageSizes = rig.quarantine.readInPagesOnly();
    const stillFailing = new Set(txns.slice(0, 3).map((t) => t.id));
    rig.publisher.reject = (e) => (stillFailing.has(e.detail.subject.id) ? "AccessDeniedException: still not allowed" : undefined);

    const report = await redriveQuarantined(rig.deps);
    expect(report).toMatchObject({ considered: 230 });
    expect(redrivenCount(report)).toBe(227);
    expect(report.kept.map((k) => k.record.entityId).sort()).toEqual([...stillFailing].sort());
    expect(pageSizes.length).toBeGreaterThanOrEqual(3);
    expect(Math.max(...pageSizes)).toBeLessThanOrEqual(REDRIVE_QUARANTINE_PAGE_SIZE);
    expect([...report.redriven, ...report.kept.map((k) => k.record)].filter((r) => "raw" in r)).toEqual([]);
  });

  it("names the first kept records one by one and counts the rest by why, so a large quarantine kept does not flood the log", async () => {
    const rig = makeRig();
    await quarantinePublishFailures(rig, KEPT_RECORDS_NAMED + 30);
    rig.publisher.reject = () => "AccessDeniedException: still not allowed";

    const report = await redriveQuarantined(rig.deps);
    expect(report.kept).toHaveLength(KEPT_RECORDS_NAMED);
    expect(report).toMatchObject({ keptNotNamed: 30, keptByWhy: { "its event was not published": KEPT_RECORDS_NAMED + 30 } });
    const named = rig.logger.lines.filter((l) => l.message === "quarantine record kept by the re-drive");
    expect(named).toHaveLength(KEPT_RECORDS_NAMED);
    expect(new Set(named.map((l) => l.attributes?.["quarantineId"])).size).toBe(KEPT_RECORDS_NAMED);
    expect(named.map((l) => l.attributes?.["quarantineId"]).sort()).toEqual(report.kept.map((k) => k.record.id).sort());
    const summary = rig.logger.lines.find((l) => l.message === "quarantined transactions re-driven");
    // The summary line docs/runbook.md names, at info: a function at its default level shows it.
    expect(summary?.level).toBe("info");
    expect(summary?.attributes).toMatchObject({ kept: KEPT_RECORDS_NAMED + 30, keptByWhy: { "its event was not published": KEPT_RECORDS_NAMED + 30 }, keptNotNamed: 30 });
  });

  it("leaves keptNotNamed out while every kept record is named", async () => {
    const rig = makeRig();
    await quarantinePublishFailures(rig, KEPT_RECORDS_NAMED);
    rig.publisher.reject = () => "AccessDeniedException: still not allowed";
    const report = await redriveQuarantined(rig.deps);
    expect(report.kept).toHaveLength(KEPT_RECORDS_NAMED);
    expect(report).not.toHaveProperty("keptNotNamed");
  });

  it("leaves redrivenNotNamed out while every deleted record is named", async () => {
    const rig = makeRig();
    await quarantinePublishFailures(rig, 3);
    const report = await redriveQuarantined(rig.deps);
    expect(report.redriven).toHaveLength(3);
    expect(report).not.toHaveProperty("redrivenNotNamed");
  });

  it("reads the records in every order over runs, each as likely first (a fair shuffle, not only rotations)", async () => {
    const rig = makeRig();
    const txns = await quarantinePublishFailures(rig, 3);
    rig.publisher.reject = () => "AccessDeniedException: still not allowed";
    const byQashioId = new Map(txns.map((t, i) => [t.qashio_id, i]));
    const random = seededRandom(5);
    const orders = new Map<string, number>();
    const firsts = [0, 0, 0];
    for (let run = 0; run < 120; run += 1) {
      rig.provider.calls.length = 0;
      await redriveQuarantined(rig.deps, { random });
      const order = rig.provider.calls.flatMap((c) => (c.op === "listTransactions" && c.query.qashio_id !== undefined ? [byQashioId.get(c.query.qashio_id)!] : []));
      expect(order).toHaveLength(3);
      orders.set(order.join(""), (orders.get(order.join("")) ?? 0) + 1);
      firsts[order[0]!] = (firsts[order[0]!] ?? 0) + 1;
    }
    expect([...orders.keys()].sort()).toEqual(["012", "021", "102", "120", "201", "210"]);
    for (const count of firsts) expect(count).toBeGreaterThan(20);
  });

  it("takes records in a new order each run, so ones that keep failing cannot hold the others back at every deadline", async () => {
    const rig = makeRig();
    const txns = Array.from({ length: 10 }, () => rig.provider.addTransaction());
    rig.publisher.reject = () => "AccessDeniedException: not allowed";
    await pollTransactions(rig.deps);
    const listed = (await rig.quarantine.list()).map((r) => r.entityId);
    // The first four records in list order keep failing; every run has time for four reads.
    const failing = new Set(listed.slice(0, 4));
    rig.publisher.reject = (e) => (failing.has(e.detail.subject.id) ? "AccessDeniedException: still not allowed" : undefined);
    slowReadsByQashioId(rig, 1_000);
    const random = seededRandom(7);
    for (let run = 0; run < 20 && rig.quarantine.records.size > 4; run += 1) {
      await redriveQuarantined(rig.deps, { pageSize: 2, deadline: rig.clock.now() + 4_000, random });
    }
    expect([...rig.quarantine.records.values()].map((r) => r.entityId).sort()).toEqual([...failing].sort());
    expect(txns.filter((t) => !failing.has(t.id)).every((t) => rig.publisher.ofType("transaction.created").some((e) => e.detail.subject.id === t.id))).toBe(true);
  });

  it("ends with outcome deadline, not an abort, when the last batch's acknowledge runs out of time, and drops its delivered records", async () => {
    const rig = makeRig();
    await quarantinePublishFailures(rig, 3);
    rig.provider.beforeCall = (call) => {
      if (call.op !== "acknowledgeTransactions") return;
      throw Object.assign(new Error("no time left"), { name: "DeadlineExceededError", deadline: rig.clock.now() + 15_000 });
    };
    const report = await redriveQuarantined(rig.deps, { deadline: rig.clock.now() + 10_000 });
    expect(report.cycle.outcome).toBe("deadline");
    // Read before the deadline and published: their records go although the acknowledge ran out of time.
    expect(report.redriven).toHaveLength(3);
    expect(rig.quarantine.records.size).toBe(0);
    expect(rig.publisher.ofType("transaction.created")).toHaveLength(3);
  });

  it("keeps the records of a batch published but refused its snapshot write past the calls' deadline, and the next run re-sends the same ids and drops them", async () => {
    const rig = makeRig();
    await quarantinePublishFailures(rig, 3);
    const publish = rig.publisher.publish.bind(rig.publisher);
    rig.publisher.publish = async (events, options) => {
      const result = await publish(events, options);
      // A bus that throttled up to the deadline it was given, or a container frozen and thawed after its lease lapsed.
      rig.clock.advance(10 * 60_000);
      return result;
    };
    const report = await redriveQuarantined(rig.deps, { deadline: rig.clock.now() + 10_000 });
    expect(report.cycle.outcome).toBe("deadline");
    expect(rig.snapshots.data.size).toBe(0);
    // Published, yet no snapshot holds that state: the records stay, so a later run stores it.
    expect(report.redriven).toEqual([]);
    expect(rig.quarantine.records.size).toBe(3);
    const sent = rig.publisher.ids;

    rig.publisher.publish = publish;
    const next = await redriveQuarantined(rig.deps, { deadline: rig.clock.now() + 10_000 });
    expect(next.redriven).toHaveLength(3);
    expect(rig.quarantine.records.size).toBe(0);
    expect(rig.publisher.ids.filter((id) => sent.includes(id))).toHaveLength(6);
    expect([...rig.snapshots.data.keys()].filter((key) => !key.startsWith("transaction:qashio_id:"))).toHaveLength(3);
  });

  it("deletes each batch's delivered records with one deleteMany call, never a kept one", async () => {
    const rig = makeRig();
    const txns = await quarantinePublishFailures(rig, 8);
    const failing = txns[0]!.id;
    rig.publisher.reject = (e) => (e.detail.subject.id === failing ? "AccessDeniedException: still not allowed" : undefined);
    const calls = deleteManyCalls(rig);
    const report = await redriveQuarantined(rig.deps, { pageSize: 4 });
    // Two batches of 4, the failing transaction in one of them: one call each, for the 7 delivered.
    expect(calls.map((ids) => ids.length).sort()).toEqual([3, 4]);
    expect(calls.flat().sort()).toEqual(report.redriven.map((r) => r.id).sort());
    expect(report.kept.map((k) => k.record.entityId)).toEqual([failing]);
    expect(calls.flat()).not.toContain(report.kept[0]?.record.id);
    expect([...rig.quarantine.records.values()].map((r) => r.entityId)).toEqual([failing]);
  });

  it("calls deleteMany for no batch that delivered nothing (a guarded store checks its lease on each call)", async () => {
    const rig = makeRig();
    await quarantinePublishFailures(rig, 4);
    rig.publisher.reject = () => "AccessDeniedException: still not allowed";
    const calls = deleteManyCalls(rig);
    const report = await redriveQuarantined(rig.deps, { pageSize: 2 });
    expect(report.keptByWhy).toEqual({ "its event was not published": 4 });
    expect(calls).toEqual([]);
  });

  it("holds each delete to the calls' deadline (the run's plus its grace): a delete sent again late could remove a record put again since", async () => {
    const rig = makeRig();
    await quarantinePublishFailures(rig, 2);
    const given: (StoreCallOptions | undefined)[] = [];
    const remove = rig.quarantine.deleteMany.bind(rig.quarantine);
    rig.quarantine.deleteMany = async (ids: readonly string[], options?: StoreCallOptions) => {
      given.push(options);
      return remove(ids);
    };
    const deadline = rig.clock.now() + 60_000;
    const report = await redriveQuarantined(rig.deps, { deadline, pageSize: 1 });
    expect(redrivenCount(report)).toBe(2);
    expect(given).toEqual([{ deadline: deadline + DEFAULT_DEADLINE_GRACE_MS }, { deadline: deadline + DEFAULT_DEADLINE_GRACE_MS }]);
  });

  it("keeps the records of a finished batch deleted when a later batch fails", async () => {
    const rig = makeRig();
    for (let i = 0; i < 6; i += 1) rig.provider.addTransaction();
    rig.publisher.reject = () => "AccessDeniedException: not allowed";
    await pollTransactions(rig.deps);
    let published = 0;
    rig.publisher.reject = () => undefined;
    const publish = rig.publisher.publish.bind(rig.publisher);
    rig.publisher.publish = async (events) => {
      // The second batch's publish call throws: nothing known published, the run aborts.
      if (published++ > 0) throw new Error("bus down");
      return publish(events);
    };
    await expect(redriveQuarantined(rig.deps, { pageSize: 3 })).rejects.toBeInstanceOf(CycleAbortedError);
    expect(rig.quarantine.records.size).toBe(3);
  });

  it("keeps the record when the event fails again or the transaction is gone", async () => {
    const rig = makeRig();
    const again = rig.provider.addTransaction();
    const gone = rig.provider.addTransaction();
    rig.publisher.reject = () => "oversized: too big";
    await pollTransactions(rig.deps);
    rig.provider.transactions.splice(rig.provider.transactions.indexOf(gone), 1);
    const report = await redriveQuarantined(rig.deps);
    expect(report.redriven).toEqual([]);
    expect(Object.fromEntries(report.kept.map((k) => [k.record.entityId, k.why]))).toEqual({
      [again.id]: "its event was not published",
      [gone.id]: "not found at the provider",
    });
    expect(rig.quarantine.records.size).toBe(2);
    expect(rig.logger.lines.filter((l) => l.level === "warn" && l.message === "quarantine record kept by the re-drive")).toHaveLength(2);
  });

  it("deletes every record of a transaction whose events failed in several versions once its current state is published", async () => {
    const rig = makeRig();
    const [txn] = await quarantinePublishFailures(rig);
    rig.provider.changeTransaction(txn!.id, { memo: "second version" });
    rig.publisher.reject = () => "AccessDeniedException: not allowed";
    await pollTransactions(rig.deps);
    rig.publisher.reject = () => undefined;
    expect([...rig.quarantine.records.values()].map((r) => r.entityId)).toEqual([txn!.id, txn!.id]);
    const report = await redriveQuarantined(rig.deps);
    expect(report).toMatchObject({ considered: 2, kept: [] });
    expect(report.redriven.map((r) => r.entityId)).toEqual([txn!.id, txn!.id]);
    expect(rig.quarantine.records.size).toBe(0);
    // One read serves both records.
    expect(rig.provider.calls.filter((c) => c.op === "listTransactions" && c.query.qashio_id === txn!.qashio_id)).toHaveLength(1);
  });

  it("reads a transaction by the qashio_id of its publish record when a validation record of it holds another (a glitched reference)", async () => {
    const rig = makeRig();
    const [txn] = await quarantinePublishFailures(rig);
    // Sorted and put first: a validation record of the same transaction whose body carried a malformed reference.
    await putGlitchedValidationRecord(rig, txn!.id, "00000000-0000-8000-8000-000000000001");
    const report = await redriveQuarantined(rig.deps, { random: () => 0 });
    expect(report.kept).toEqual([]);
    expect(report.redriven.map((r) => r.entityId)).toEqual([txn!.id, txn!.id]);
    expect(rig.publisher.ofType("transaction.created").map((e) => e.detail.subject.id)).toEqual([txn!.id]);
    expect(rig.quarantine.records.size).toBe(0);
  });

  it("deletes a validation record holding a glitched qashio_id, its publish record delivered by an earlier run, once its transaction's snapshot holds a state as new as its body", async () => {
    const rig = makeRig();
    const [txn] = await quarantinePublishFailures(rig);
    await redriveQuarantined(rig.deps);
    expect(rig.quarantine.records.size).toBe(0);
    // Put before the snapshot was written (09:00), the body of the version the snapshot holds, its reference glitched.
    await putGlitchedValidationRecord(rig, txn!.id, "00000000-0000-8000-8000-000000000001", { updated_at: txn!.updated_at });
    rig.clock.advance(60_000);

    const report = await redriveQuarantined(rig.deps);
    expect(report.redriven.map((r) => r.id)).toEqual(["00000000-0000-8000-8000-000000000001"]);
    expect(report.kept).toEqual([]);
    expect(report.keptByWhy).toEqual({});
    expect(rig.quarantine.records.size).toBe(0);
    expect(rig.publisher.ofType("transaction.created")).toHaveLength(1);
  });

  it("deletes such a record alike when the provider refuses the read by its glitched qashio_id (a 400 for an odd reference)", async () => {
    const rig = makeRig();
    const [txn] = await quarantinePublishFailures(rig);
    await redriveQuarantined(rig.deps);
    await putGlitchedValidationRecord(rig, txn!.id, "00000000-0000-8000-8000-000000000001", { updated_at: txn!.updated_at });
    rig.provider.beforeCall = (call) => {
      if (call.op === "listTransactions" && call.query.qashio_id === "CTX") throw Object.assign(new Error("answered 400"), { name: "QashioApiError", status: 400 });
    };
    rig.clock.advance(60_000);

    const report = await redriveQuarantined(rig.deps);
    expect(report.redriven.map((r) => r.id)).toEqual(["00000000-0000-8000-8000-000000000001"]);
    expect(report.kept).toEqual([]);
    expect(rig.quarantine.records.size).toBe(0);
  });

  it("keeps such a record as not reached, the run ending with deadline, when the read of its transaction's snapshot runs out of time", async () => {
    const rig = await glitchedRecordOfDelivered();
    rig.clock.advance(60_000);
    // The only store read of this run: the snapshot that would show the record's state delivered.
    const deadline = rig.clock.now() + 60_000;
    rig.snapshots.getMany = () => Promise.reject(new ReadDeadlineExceededError("not read", deadline));

    const report = await redriveQuarantined(rig.deps, { deadline });
    expect(report.redriven).toEqual([]);
    // Not "not found by its qashio_id": whether its state was delivered is not known yet, and the walk had ended.
    expect(report.keptByWhy).toEqual({ "not reached before the deadline": 1 });
    expect(report.cycle.outcome).toBe("deadline");
    expect(report.notScanned).toBeUndefined();
    expect(rig.quarantine.records.size).toBe(1);
  });

  it("keeps such a record when its read by the glitched qashio_id ends past the deadline: no snapshot read starts after it", async () => {
    const rig = await glitchedRecordOfDelivered();
    rig.clock.advance(60_000);
    const deadline = rig.clock.now() + 60_000;
    rig.provider.beforeCall = (call) => {
      if (call.op === "listTransactions" && call.query.qashio_id === "CTX") rig.clock.advance(120_000);
    };

    const report = await redriveQuarantined(rig.deps, { deadline });
    expect(report.redriven).toEqual([]);
    expect(report.keptByWhy).toEqual({ "not reached before the deadline": 1 });
    expect(report.cycle.outcome).toBe("deadline");
    expect(rig.quarantine.records.size).toBe(1);
  });

  it("deletes such a record alike when its glitched qashio_id lists only another transaction", async () => {
    const rig = await glitchedRecordOfDelivered();
    // The glitched reference happens to be another transaction's.
    rig.provider.addTransaction({ qashio_id: "CTX" });
    rig.clock.advance(60_000);

    const report = await redriveQuarantined(rig.deps);
    expect(report.redriven.map((r) => r.id)).toEqual(["00000000-0000-8000-8000-000000000001"]);
    expect(report.kept).toEqual([]);
    expect(rig.quarantine.records.size).toBe(0);
  });

  it.each([
    { what: "no snapshot of its transaction is held", delivered: false, body: { updated_at: "2025-01-15T08:00:00.000Z" } },
    { what: "its transaction's snapshot is older than its body", delivered: true, body: { updated_at: "2030-01-01T00:00:00.000Z" } },
    { what: "its body holds no time to compare", delivered: true, body: {} },
  ])("keeps a validation record holding a glitched qashio_id not found, with a reason saying its reference is unconfirmed, when $what", async ({ delivered, body }) => {
    const rig = makeRig();
    const [txn] = await quarantinePublishFailures(rig);
    if (delivered) await redriveQuarantined(rig.deps);
    else rig.quarantine.records.clear();
    await putGlitchedValidationRecord(rig, txn!.id, "00000000-0000-8000-8000-000000000001", body);
    rig.clock.advance(60_000);

    const report = await redriveQuarantined(rig.deps);
    expect(report.redriven).toEqual([]);
    expect(report.keptByWhy).toEqual({ "not found by its qashio_id, which no publish record confirms": 1 });
    expect(rig.quarantine.records.size).toBe(1);
  });

  it("reads no snapshot for glitched validation records of one transaction when one body holds no time to compare: their state cannot be shown delivered", async () => {
    const rig = makeRig();
    const [txn] = await quarantinePublishFailures(rig);
    await redriveQuarantined(rig.deps);
    await putGlitchedValidationRecord(rig, txn!.id, "00000000-0000-8000-8000-000000000001", { updated_at: txn!.updated_at });
    await putGlitchedValidationRecord(rig, txn!.id, "00000000-0000-8000-8000-000000000002");
    rig.clock.advance(60_000);
    rig.snapshots.getManyCalls = 0;

    const report = await redriveQuarantined(rig.deps);
    expect(report.keptByWhy).toEqual({ "not found by its qashio_id, which no publish record confirms": 2 });
    expect(rig.snapshots.getManyCalls).toBe(0);
  });

  it.each([
    { what: "whose body holds no qashio_id (a read without the filter would list another transaction)", qashioId: false, entityId: true },
    { what: "that names no transaction id, though its body holds a qashio_id", qashioId: true, entityId: false },
  ])("keeps a publish record $what, reading nothing for it", async ({ qashioId, entityId }) => {
    const rig = makeRig();
    const txn = rig.provider.addTransaction();
    await rig.quarantine.put({
      id: "9b1f0c2e-0000-8000-8000-000000000001",
      kind: "transaction",
      reason: "publish: AccessDeniedException: not allowed",
      raw: { id: txn.id, memo: "", ...(qashioId ? { qashio_id: txn.qashio_id } : {}) },
      at: "2025-01-15T09:00:00.000Z",
      ...(entityId ? { entityId: txn.id } : {}),
    });
    const report = await redriveQuarantined(rig.deps);
    expect(report.redriven).toEqual([]);
    expect(report.kept.map((k) => [k.record.id, k.why])).toEqual([["9b1f0c2e-0000-8000-8000-000000000001", "no transaction id or qashio_id in the record"]]);
    expect(rig.provider.calls).toEqual([]);
    expect(rig.publisher.events).toEqual([]);
    expect(rig.quarantine.records.size).toBe(1);
  });

  it("keeps a record whose read by qashio_id the provider refuses for that reference alone (a 414 for a broken long one), and re-drives the others", async () => {
    const rig = makeRig();
    const [failed] = await quarantinePublishFailures(rig);
    // A transaction quarantined for its qashio_id (past MAX_REFERENCE_LENGTH) and acknowledged: isRedrivable takes it.
    const broken = rig.provider.addTransaction();
    const longId = `CT${"9".repeat(9_000)}`;
    await rig.quarantine.put({
      id: "9b1f0c2e-0000-8000-8000-000000000002",
      kind: "transaction",
      reason: "validation: qashio_id: Too big",
      raw: { id: broken.id, qashio_id: longId },
      at: "2025-01-15T09:00:00.000Z",
      entityId: broken.id,
    });
    rig.provider.beforeCall = (call) => {
      if (call.op === "listTransactions" && call.query.qashio_id === longId) throw Object.assign(new Error("answered 414"), { name: "QashioApiError", status: 414 });
    };
    const report = await redriveQuarantined(rig.deps);
    expect(report.cycle.outcome).toBe("complete");
    expect(report.redriven.map((r) => r.entityId)).toEqual([failed!.id]);
    expect(report.kept.map((k) => [k.record.entityId, k.why])).toEqual([[broken.id, "the provider refuses to read it by its qashio_id"]]);
    expect([...rig.quarantine.records.keys()]).toEqual(["9b1f0c2e-0000-8000-8000-000000000002"]);
    expect(rig.logger.lines.filter((l) => l.message === "provider refused the read by qashio_id; record kept")).toEqual([
      { level: "warn", message: "provider refused the read by qashio_id; record kept", attributes: { id: broken.id, status: 414 } },
    ]);
  });

  it.each([401, 403, 408, 429, 500])("still stops the re-drive when the read by qashio_id fails with %i, keeping the records", async (status) => {
    const rig = makeRig();
    await quarantinePublishFailures(rig);
    rig.provider.beforeCall = (call) => {
      if (call.op === "listTransactions") throw Object.assign(new Error(`answered ${status}`), { name: "QashioApiError", status });
    };
    await expect(redriveQuarantined(rig.deps)).rejects.toBeInstanceOf(CycleAbortedError);
    expect(rig.quarantine.records.size).toBe(1);
  });

  it("keeps the record as not found when the provider answers the read by qashio_id with another transaction, publishing nothing of that one", async () => {
    const rig = makeRig();
    const [failed] = await quarantinePublishFailures(rig);
    const other = rig.provider.addTransaction();
    // A provider that ignores the qashio_id filter answers with its newest transaction.
    const list = rig.provider.listTransactions.bind(rig.provider);
    rig.provider.listTransactions = (query) => list(query.qashio_id ? { page: 1, page_size: 1 } : query);
    const report = await redriveQuarantined(rig.deps);
    expect(report.redriven).toEqual([]);
    expect(report.kept.map((k) => [k.record.entityId, k.why])).toEqual([[failed!.id, "not found at the provider"]]);
    expect(rig.publisher.events).toEqual([]);
    expect(rig.snapshots.data.has(`transaction:${other.id}`)).toBe(false);
    expect(rig.provider.pending().map((t) => t.id)).toEqual([other.id]);
  });

  it("re-drives the transaction whose id the record holds when the provider lists another, newer one under the same qashio_id", async () => {
    const rig = makeRig();
    const [failed] = await quarantinePublishFailures(rig);
    // The provider contradicting itself (a qashio_id names one transaction): a newer transaction under the same reference,
    // listed first (newest first), delivered by its own cycle.
    const other = rig.provider.addTransaction({ qashio_id: failed!.qashio_id });
    await pollTransactions(rig.deps);
    rig.publisher.events.length = 0;
    const report = await redriveQuarantined(rig.deps);
    expect(report.kept).toEqual([]);
    expect(report.redriven.map((r) => r.entityId)).toEqual([failed!.id]);
    expect(rig.publisher.ofType("transaction.created").map((e) => e.detail.subject.id)).toEqual([failed!.id]);
    expect(rig.snapshots.data.has(`transaction:${other.id}`)).toBe(true);
  });

  it("says so when the provider lists only other transactions under the record's qashio_id, publishing none of them", async () => {
    const rig = makeRig();
    const [failed] = await quarantinePublishFailures(rig);
    const other = rig.provider.addTransaction({ qashio_id: failed!.qashio_id });
    rig.provider.transactions.splice(rig.provider.transactions.indexOf(failed!), 1);
    const report = await redriveQuarantined(rig.deps);
    expect(report.kept.map((k) => [k.record.entityId, k.why])).toEqual([[failed!.id, "its qashio_id lists only other transactions"]]);
    expect(rig.publisher.events).toEqual([]);
    expect(rig.snapshots.data.has(`transaction:${other.id}`)).toBe(false);
    expect(rig.logger.lines.filter((l) => l.message === "provider lists other transactions under the record's qashio_id, not this one; record kept")).toEqual([
      { level: "warn", message: "provider lists other transactions under the record's qashio_id, not this one; record kept", attributes: { id: failed!.id, listed: 1 } },
    ]);
  });

  /** A record whose transaction the provider lists under its qashio_id behind `newer` others (newest first). */
  async function behindOthers(newer: number) {
    const rig = makeRig();
    const [failed] = await quarantinePublishFailures(rig);
    for (let i = 0; i < newer; i += 1) rig.provider.addTransaction({ qashio_id: failed!.qashio_id });
    // The others are delivered by their own cycle: only the record's transaction is left to the re-drive.
    await pollTransactions(rig.deps);
    rig.publisher.events.length = 0;
    const pagesRead = () => rig.provider.calls.flatMap((c) => (c.op === "listTransactions" && c.query.qashio_id === failed!.qashio_id ? [c.query.page] : []));
    return { rig, failed: failed!, pagesRead };
  }

  it("reads further pages of the record's qashio_id until its transaction is listed, not only the first", async () => {
    // A parent with many refunds, or a reused reference: the record's transaction is on page 3 of 5 a page.
    const { rig, failed, pagesRead } = await behindOthers(12);
    const report = await redriveQuarantined(rig.deps, { pageSize: 5 });
    expect(report.kept).toEqual([]);
    expect(report.redriven.map((r) => r.entityId)).toEqual([failed.id]);
    expect(rig.publisher.ofType("transaction.created").map((e) => e.detail.subject.id)).toEqual([failed.id]);
    expect(pagesRead()).toEqual([1, 2, 3]);
  });

  it("reads one page when the transaction is on the first, and reads no further page once the list ends without it", async () => {
    const found = await behindOthers(3);
    expect((await redriveQuarantined(found.rig.deps, { pageSize: 5 })).redriven).toHaveLength(1);
    expect(found.pagesRead()).toEqual([1]);

    const gone = await behindOthers(7);
    gone.rig.provider.transactions.splice(gone.rig.provider.transactions.indexOf(gone.failed), 1);
    const report = await redriveQuarantined(gone.rig.deps, { pageSize: 5 });
    expect(report.kept.map((k) => k.why)).toEqual(["its qashio_id lists only other transactions"]);
    expect(gone.pagesRead()).toEqual([1, 2]);
    // Counted over every page read: the seven others.
    expect(gone.rig.logger.lines.find((l) => l.message.startsWith("provider lists other transactions under"))?.attributes).toEqual({ id: gone.failed.id, listed: 7 });
  });

  it("numbers the next page in the size the provider serves, or the size a rejected page_size left, skipping no row", async () => {
    const served = await behindOthers(7);
    // A provider serving at most three a page, saying so in its page_size.
    const list = served.rig.provider.listTransactions.bind(served.rig.provider);
    served.rig.provider.listTransactions = (query) => list({ ...query, page_size: Math.min(query.page_size, 3) });
    expect((await redriveQuarantined(served.rig.deps, { pageSize: 5 })).redriven).toHaveLength(1);
    expect(served.pagesRead()).toEqual([1, 2, 3]);

    const shrunk = await behindOthers(25);
    shrunk.rig.provider.beforeCall = (call) => {
      if (call.op === "listTransactions" && call.query.page === 2 && call.query.page_size === 20) {
        throw Object.assign(new Error("page_size out of range"), {
          name: "BadRequestError",
          status: 400,
          errors: [{ field: "page_size", code: "OUT_OF_RANGE", message: "too large" }],
        });
      }
    };
    expect((await redriveQuarantined(shrunk.rig.deps, { pageSize: 20 })).redriven).toHaveLength(1);
    // Page 2 in 20s was refused: rows 20 on are page 3 in 10s.
    expect(shrunk.pagesRead()).toEqual([1, 2, 3]);
    expect(shrunk.rig.provider.calls.flatMap((c) => (c.op === "listTransactions" && c.query.qashio_id ? [c.query.page_size] : []))).toEqual([20, 20, 10]);
  });

  it("numbers the next page in the size served when only a page short of the size asked, and its count, show it", async () => {
    // A provider serving at most three a page that echoes the size asked and counts has_next in it (one page of five):
    // only total_records says the list goes on. The record's transaction is the fifth row, on its page 2.
    const { rig, pagesRead } = await behindOthers(4);
    const list = rig.provider.listTransactions.bind(rig.provider);
    rig.provider.listTransactions = async (query) => {
      const page = await list({ ...query, page_size: Math.min(query.page_size, 3) });
      const total = page.pagination?.total_records ?? 0;
      return { ...page, pagination: { ...page.pagination, page_size: query.page_size, has_next: query.page < Math.ceil(total / query.page_size) } };
    };
    const report = await redriveQuarantined(rig.deps, { pageSize: 5 });
    expect(report.kept).toEqual([]);
    expect(report.redriven).toHaveLength(1);
    expect(pagesRead()).toEqual([1, 2]);
  });

  it.each([
    // Served as asked, five a page: the row left out on page 9, the record's transaction on page 10 (the last read).
    ["the size asked", 5, 45, 40],
    // Three a page: the row left out on page 5, the record's transaction alone on page 6.
    ["three a page", 3, 15, 12],
  ])("finds the transaction past a page short of one row the provider left out (serving %s, page_size echoing the size asked)", async (_, cap, newer, leftOut) => {
    // Not the last page: its has_next and count say the list goes on. Taken for the size served, the next page was
    // numbered in one row fewer, skipping the page holding the record's transaction.
    const { rig, failed, pagesRead } = await behindOthers(newer);
    const list = rig.provider.listTransactions.bind(rig.provider);
    rig.provider.listTransactions = async (query) => {
      const page = await list({ ...query, page_size: Math.min(query.page_size, cap) });
      const start = (query.page - 1) * cap;
      const data = page.data.filter((_, i) => query.qashio_id !== failed.qashio_id || start + i !== leftOut);
      return { ...page, data, pagination: { ...page.pagination, page_size: query.page_size } };
    };
    const report = await redriveQuarantined(rig.deps, { pageSize: 5 });
    expect(report.kept).toEqual([]);
    expect(report.redriven.map((r) => r.entityId)).toEqual([failed.id]);
    const pages = Math.floor(newer / cap) + 1;
    expect(pagesRead()).toEqual(Array.from({ length: pages }, (_, i) => i + 1));
  });

  /** Serves at most three rows a page, numbered in three, and leaves out the pagination block (no has_next, no count). */
  function threeAPageWithoutPagination(rig: ReturnType<typeof makeRig>) {
    const list = rig.provider.listTransactions.bind(rig.provider);
    rig.provider.listTransactions = async (query) => {
      const { data } = await list({ ...query, page_size: Math.min(query.page_size, 3) });
      return { data };
    };
  }

  it("reads on past a page short of the size asked that says neither has_next nor a count, as the cycle's walk does, up to an empty page", async () => {
    // The provider's own maximum of three a page: the record's transaction is the eighth row, on its page 3. A short
    // page without has_next is not the last (endsList): the next read is page 2, not page 1 again.
    const { rig, failed, pagesRead } = await behindOthers(7);
    threeAPageWithoutPagination(rig);
    const report = await redriveQuarantined(rig.deps, { pageSize: 5 });
    expect(report.kept).toEqual([]);
    expect(report.redriven.map((r) => r.entityId)).toEqual([failed.id]);
    expect(pagesRead()).toEqual([1, 2, 3]);

    // The list ends at a short page: an empty page says so, and the record is kept for the others listed.
    const gone = await behindOthers(3);
    gone.rig.provider.transactions.splice(gone.rig.provider.transactions.indexOf(gone.failed), 1);
    threeAPageWithoutPagination(gone.rig);
    const kept = await redriveQuarantined(gone.rig.deps, { pageSize: 5 });
    expect(kept.kept.map((k) => k.why)).toEqual(["its qashio_id lists only other transactions"]);
    expect(gone.pagesRead()).toEqual([1, 2]);
  });

  it("reads no second page when the provider ignores the qashio_id filter, listing other references", async () => {
    const { rig, failed } = await behindOthers(0);
    for (let i = 0; i < 12; i += 1) rig.provider.addTransaction();
    // Newest, so its first page holds one row under the reference beside four under others.
    rig.provider.addTransaction({ qashio_id: failed.qashio_id });
    const list = rig.provider.listTransactions.bind(rig.provider);
    rig.provider.listTransactions = (query) => list({ ...query, qashio_id: undefined, client_sync_status: undefined });
    const report = await redriveQuarantined(rig.deps, { pageSize: 5 });
    expect(report.kept.map((k) => [k.record.entityId, k.why])).toEqual([[failed.id, "its qashio_id lists only other transactions"]]);
    // The record's transaction is on page 3 of that list: not walked to.
    expect(rig.provider.calls.filter((c) => c.op === "listTransactions" && c.query.qashio_id === undefined && c.query.client_sync_status === undefined)).toHaveLength(1);
  });

  /**
   * Serves the newest `count` rows malformed, in turn: not an object, an object without qashio_id, one without id,
   * null. None is under another reference, none names a transaction.
   */
  function malformNewest(rig: ReturnType<typeof makeRig>, count: number) {
    const forms: ((t: Record<string, unknown>) => unknown)[] = [
      () => "not a transaction",
      ({ qashio_id: _, ...rest }) => rest,
      ({ id: _, ...rest }) => rest,
      () => null,
    ];
    rig.provider.transactions.slice(0, count).forEach((t, i) => rig.provider.rawOverrides.set(t.id, forms[i % forms.length]!(t)));
  }

  it("reads on past malformed rows (not an object, without qashio_id or id), neither taking them for the filter ignored nor counting them as other transactions", async () => {
    // A first page of malformed rows only: the record's transaction is on page 2.
    const { rig, failed, pagesRead } = await behindOthers(5);
    malformNewest(rig, 5);
    const report = await redriveQuarantined(rig.deps, { pageSize: 5 });
    expect(report.kept).toEqual([]);
    expect(report.redriven.map((r) => r.entityId)).toEqual([failed.id]);
    expect(pagesRead()).toEqual([1, 2]);
    // Only the record's row is taken: nothing of the malformed rows is published or quarantined.
    expect(rig.publisher.events.map((e) => e.detail.subject.id)).toEqual([failed.id]);
    expect(rig.quarantine.records.size).toBe(0);

    // Gone: the well-formed others on both pages are counted, the four malformed ones not.
    const gone = await behindOthers(7);
    gone.rig.provider.transactions.splice(gone.rig.provider.transactions.indexOf(gone.failed), 1);
    malformNewest(gone.rig, 4);
    const kept = await redriveQuarantined(gone.rig.deps, { pageSize: 5 });
    expect(kept.kept.map((k) => k.why)).toEqual(["its qashio_id lists only other transactions"]);
    expect(gone.pagesRead()).toEqual([1, 2]);
    expect(gone.rig.logger.lines.find((l) => l.message.startsWith("provider lists other transactions under"))?.attributes).toEqual({ id: gone.failed.id, listed: 3 });
  });

  it("reads no third page when the provider ignores `page`, serving again a page of malformed rows only", async () => {
    const { rig, failed } = await behindOthers(7);
    malformNewest(rig, 5);
    const asked: number[] = [];
    const list = rig.provider.listTransactions.bind(rig.provider);
    rig.provider.listTransactions = (query) => {
      if (query.qashio_id === failed.qashio_id) asked.push(query.page);
      return list(query.qashio_id ? { ...query, page: 1 } : query);
    };
    const report = await redriveQuarantined(rig.deps, { pageSize: 5 });
    // Malformed rows name no transaction: none is counted as another.
    expect(report.kept.map((k) => [k.record.entityId, k.why])).toEqual([[failed.id, "not found at the provider"]]);
    expect(asked).toEqual([1, 2]);
  });

  it(`stops at ${REDRIVE_READ_PAGES} pages a record, keeping it with a reason that says so`, async () => {
    const { rig, failed, pagesRead } = await behindOthers(REDRIVE_READ_PAGES * 5);
    const report = await redriveQuarantined(rig.deps, { pageSize: 5 });
    expect(report.cycle.outcome).toBe("complete");
    expect(report.kept.map((k) => [k.record.entityId, k.why])).toEqual([[failed.id, "its qashio_id lists more transactions than a re-drive reads"]]);
    expect(rig.publisher.events).toEqual([]);
    expect(pagesRead()).toEqual(Array.from({ length: REDRIVE_READ_PAGES }, (_, i) => i + 1));
    expect(rig.logger.lines.filter((l) => l.message.startsWith("provider lists more transactions under the record's qashio_id"))).toEqual([
      {
        level: "warn",
        message: "provider lists more transactions under the record's qashio_id than a re-drive reads, none of them this one; record kept",
        attributes: { id: failed.id, listed: REDRIVE_READ_PAGES * 5, pages: REDRIVE_READ_PAGES },
      },
    ]);
  });

  it("keeps the record as not reached when the deadline passes between two pages of its qashio_id", async () => {
    const { rig, pagesRead } = await behindOthers(7);
    slowReadsByQashioId(rig, 1_000);
    const report = await redriveQuarantined(rig.deps, { pageSize: 5, deadline: rig.clock.now() + 1_000 });
    expect(report.cycle.outcome).toBe("deadline");
    expect(report.kept.map((k) => k.why)).toEqual(["not reached before the deadline"]);
    expect(pagesRead()).toEqual([1]);
    expect(rig.quarantine.records.size).toBe(1);
  });

  it("does not send a failed acknowledge again as it was: the transaction stays listed, and a change made meanwhile reaches the next cycle", async () => {
    const rig = makeRig();
    const [txn] = await quarantinePublishFailures(rig);
    let failedOnce = false;
    const provider = clientOverFake(rig.provider, rig.clock, (call) => {
      if (call.op !== "acknowledgeTransactions" || failedOnce) return undefined;
      failedOnce = true;
      // Edited while the acknowledge fails: the client's retry of it would have marked this edit synced, unseen.
      rig.provider.changeTransaction(txn!.id, { memo: "edited during the failed acknowledge" });
      return { status: 503 };
    });
    const acks = () => rig.provider.calls.filter((c) => c.op === "acknowledgeTransactions").length;
    const acksBefore = acks();
    const report = await redriveQuarantined({ ...rig.deps, provider });
    expect(report.redriven.map((r) => r.entityId)).toEqual([txn!.id]);
    expect(rig.quarantine.records.size).toBe(0);
    // Left listed: no acknowledge reached the provider.
    expect(rig.provider.pending().map((t) => t.id)).toEqual([txn!.id]);
    expect(acks()).toBe(acksBefore);
    // Its log says where the transaction went: a re-drive reads by id, it reads no page again.
    const ackWarns = rig.logger.lines.filter((l) => l.message.startsWith("acknowledge failed for now"));
    expect(ackWarns.map((l) => l.message)).toEqual(["acknowledge failed for now; left to the next cycle, which lists the transactions again"]);

    await pollTransactions({ ...rig.deps, provider });
    const changed = rig.publisher.ofType("transaction.changed").filter((e) => e.detail.subject.id === txn!.id);
    expect(changed).toHaveLength(1);
    expect(changed[0]!.detail.data.changes).toContainEqual(expect.objectContaining({ path: "/memo", after: "edited during the failed acknowledge" }));
    expect(rig.provider.pending()).toEqual([]);
  });

  it("keeps the record while the event fails for now, and the transaction unacknowledged until a later run", async () => {
    const rig = makeRig();
    const txn = rig.provider.addTransaction();
    rig.publisher.reject = () => "NotAuthorizedForSourceException: no";
    await pollTransactions(rig.deps);
    rig.publisher.reject = () => ({ reason: "ThrottlingException", retryable: true });
    expect((await redriveQuarantined(rig.deps)).kept).toHaveLength(1);
    rig.publisher.reject = () => undefined;
    expect((await redriveQuarantined(rig.deps)).redriven).toHaveLength(1);
    expect(rig.publisher.events.map((e) => e.detail.subject.id)).toEqual([txn.id]);
  });

  it("can run again after failing between the publish and the delete: the event is not sent twice", async () => {
    const rig = makeRig();
    await quarantinePublishFailures(rig, 1, "InvalidArgument: no");
    await expect(redriveQuarantined(withSnapshotWritesFailing(rig))).rejects.toBeInstanceOf(CycleAbortedError);
    expect(rig.quarantine.records.size).toBe(1);

    const remove = rig.quarantine.deleteMany.bind(rig.quarantine);
    let deletes = 0;
    rig.quarantine.deleteMany = async (ids) => {
      if (deletes++ === 0) throw new Error("store down");
      return remove(ids);
    };
    await expect(redriveQuarantined(rig.deps)).rejects.toThrow("store down");
    expect(await redriveQuarantined(rig.deps)).toMatchObject({ considered: 1, kept: [] });
    // Sent by the first run (the snapshot write failed after it) and again with the same id by the second; not by the third.
    expect(new Set(rig.publisher.ids).size).toBe(1);
    expect(rig.publisher.events).toHaveLength(2);
    expect(rig.quarantine.records.size).toBe(0);
  });

  it("leaves an event it published but did not store to its next run, not to a cycle (the transaction is acknowledged), which re-sends it under the same id", async () => {
    const rig = makeRig();
    const [txn] = await quarantinePublishFailures(rig);
    const refused = rig.publisher.offered.map((e) => e.detail.id);
    await expect(redriveQuarantined(withSnapshotWritesFailing(rig))).rejects.toBeInstanceOf(CycleAbortedError);
    expect(rig.publisher.ids).toEqual(refused);

    const published = rig.publisher.events.length;
    await pollTransactions(rig.deps);
    expect(rig.publisher.events).toHaveLength(published);
    expect(rig.quarantine.records.size).toBe(1);

    expect(await redriveQuarantined(rig.deps)).toMatchObject({ considered: 1, kept: [] });
    expect(rig.publisher.ids).toEqual([...refused, ...refused]);
    expect(rig.snapshots.data.has(`transaction:${txn!.id}`)).toBe(true);
  });

  it("publishes a transaction quarantined for validation once the rule is fixed, writes its snapshot, acknowledges it and deletes the record", async () => {
    const { rig, rule, txn } = await quarantineUnderStrictRule();
    expect(rig.publisher.events).toEqual([]);
    rule.strict = false; // the fix, deployed
    const acks = rig.provider.count("acknowledgeTransactions");

    const report = await redriveQuarantined(rig.deps);
    expect(report).toMatchObject({ considered: 1, kept: [] });
    expect(report.redriven.map((r) => [r.entityId, r.reason])).toEqual([[txn.id, "validation: memo: not allowed"]]);
    expect(rig.publisher.ofType("transaction.created").map((e) => e.detail.subject)).toEqual([
      { type: "transaction", id: txn.id, qashio_id: txn.qashio_id, sequence: 1 },
    ]);
    expect(rig.snapshots.data.get(`transaction:${txn.id}`)?.object).toMatchObject({ id: txn.id, memo: "REFUND?" });
    expect(rig.provider.count("acknowledgeTransactions")).toBe(acks + 1);
    expect(rig.quarantine.records.size).toBe(0);

    // Idempotent: nothing left to take, nothing read or published again.
    const calls = rig.provider.calls.length;
    expect(await redriveQuarantined(rig.deps)).toMatchObject({ considered: 0, redriven: [], kept: [] });
    expect(rig.provider.calls).toHaveLength(calls);
    expect(rig.publisher.events).toHaveLength(1);
  });

  it("publishes a transaction.changed against the last published state for a later version quarantined for validation", async () => {
    const { rig, rule, txn } = await quarantineUnderStrictRule({ publishedBefore: true });
    expect(rig.publisher.ofType("transaction.created")).toHaveLength(1);
    rule.strict = false;
    const report = await redriveQuarantined(rig.deps);
    expect(report).toMatchObject({ considered: 1, kept: [] });
    const [changed] = rig.publisher.ofType("transaction.changed");
    expect(changed?.detail.subject).toMatchObject({ id: txn.id, sequence: 2 });
    expect(changed?.detail.data.changes).toContainEqual({ path: "/memo", before: "", after: "REFUND?" });
    expect(rig.quarantine.records.size).toBe(0);
  });

  it("keeps a validation record whose transaction still fails validation, under the same id (no second record, none counted new), and again on a re-run", async () => {
    const { rig, txn } = await quarantineUnderStrictRule();
    const [before] = await rig.quarantine.list();
    rig.metrics.points.length = 0;
    rig.logger.lines.length = 0;

    for (let run = 0; run < 2; run += 1) {
      const report = await redriveQuarantined(rig.deps);
      expect(report.considered).toBe(1);
      expect(report.redriven).toEqual([]);
      expect(report.kept.map((k) => [k.record.id, k.record.entityId, k.why])).toEqual([[before!.id, txn.id, "its current state still fails validation"]]);
      // Read back `synced`: its record id leaves client_sync_status out, so the batch path finds it held.
      expect([...rig.quarantine.records.keys()]).toEqual([before!.id]);
      expect(await rig.quarantine.list()).toEqual([{ ...before, raw: expect.anything() }]);
    }
    expect(rig.publisher.events).toEqual([]);
    expect(rig.snapshots.data.has(`transaction:${txn.id}`)).toBe(false);
    expect(rig.metrics.points.filter((p) => p.name === "Quarantined")).toEqual([]);
    expect(rig.logger.lines.filter((l) => l.message === "record quarantined")).toEqual([]);
    expect(rig.logger.lines.filter((l) => l.level === "warn" && l.message === "quarantine record kept by the re-drive")).toHaveLength(2);
  });

  it("leaves alone card records and validation records without an acknowledgeable id or a qashio_id, reading nothing for them", async () => {
    const rig = makeRig();
    const txn = rig.provider.addTransaction();
    const base = { kind: "transaction" as const, reason: "validation: id: Invalid UUID", at: "2025-01-15T09:00:00.000Z" };
    await rig.quarantine.put({ ...base, id: "q-1", raw: { id: "T-1", qashio_id: txn.qashio_id }, entityId: "T-1" });
    await rig.quarantine.put({ ...base, id: "q-2", raw: { qashio_id: txn.qashio_id } });
    await rig.quarantine.put({ ...base, id: "q-3", raw: { id: txn.id, qashio_id: 42 }, entityId: txn.id });
    await rig.quarantine.put({ ...base, id: "q-4", kind: "card", reason: "validation: status: bad", raw: { id: "CA1" }, entityId: "CA1" });
    // A card record shaped like a transaction's (a UUID id, a qashio_id), and a validation record with an empty qashio_id.
    await rig.quarantine.put({ ...base, id: "q-5", kind: "card", reason: "validation: status: bad", raw: { id: txn.id, qashio_id: txn.qashio_id }, entityId: txn.id });
    await rig.quarantine.put({ ...base, id: "q-6", raw: { id: txn.id, qashio_id: "" }, entityId: txn.id });
    const report = await redriveQuarantined(rig.deps);
    expect(report).toMatchObject({ considered: 0, redriven: [], kept: [] });
    expect(rig.provider.calls).toEqual([]);
    expect(rig.quarantine.records.size).toBe(6);
  });
});
