import { describe, expect, it } from "vitest";
import { pollTransactions } from "../../shared/bridge/transactions.js";
import { KEPT_RECORDS_NAMED, REDRIVEN_RECORDS_NAMED, REDRIVE_QUARANTINE_PAGE_SIZE, keptCount, redriveQuarantined, redrivenCount } from "../../shared/bridge/redrive.js";
import { CycleAbortedError } from "../../shared/bridge/errors.js";
import { makeRig, putGlitchedValidationRecord, quarantinePublishFailures, seededRandom, slowReadsByQashioId } from "./fakes.js";

type Rig = ReturnType<typeof makeRig>;

/** Adds `count` transactions whose events fail for good, so a cycle quarantines them (quarantinePublishFailures). */
async function quarantined(rig: Rig, count: number) {
  const txns = await quarantinePublishFailures(rig, count);
  expect(rig.quarantine.records.size).toBe(count);
  return txns;
}

/**
 * Counts, at each page the quarantine hands out, the records handed out and not deleted since: what a re-drive can hold
 * at once (it holds a record from its page until it deletes it or is done with its chunk).
 */
function recordsHeldAtOnce(rig: Rig): number[] {
  const held: number[] = [];
  let handedOut = 0;
  const pages = rig.quarantine.pages.bind(rig.quarantine);
  rig.quarantine.pages = async function* (options) {
    for await (const page of pages(options)) {
      handedOut += page.length;
      held.push(handedOut);
      yield page;
    }
  };
  const remove = rig.quarantine.deleteMany.bind(rig.quarantine);
  rig.quarantine.deleteMany = async (ids) => {
    handedOut -= ids.length;
    return remove(ids);
  };
  return held;
}

/** Each page of the quarantine read takes `ms` on the rig's clock. */
function slowQuarantinePages(rig: Rig, ms: number): void {
  const pages = rig.quarantine.pages.bind(rig.quarantine);
  rig.quarantine.pages = async function* (options) {
    for await (const page of pages(options)) {
      rig.clock.advance(ms);
      yield page;
    }
  };
}

/**
 * A glitched validation record of `entityId` walked after its publish record (the walk starting at the lowest
 * id-shaped point), in a chunk of its own: pages of one record.
 */
async function glitchedRecordInChunkAfter(rig: Rig, entityId: string): Promise<void> {
  await putGlitchedValidationRecord(rig, entityId, "ffffffff-ffff-8fff-bfff-ffffffffffff");
  const pages = rig.quarantine.pages.bind(rig.quarantine);
  rig.quarantine.pages = (options) => pages({ ...options, limit: 1 });
}

describe("redriveQuarantined in chunks", () => {
  it("re-drives a quarantine far larger than a chunk, chunk by chunk, never holding more than a chunk and a page of records", async () => {
    const rig = makeRig();
    const txns = await quarantined(rig, 650);
    const held = recordsHeldAtOnce(rig);
    const report = await redriveQuarantined(rig.deps, { chunkRecords: 150 });
    // A chunk ends with the page that filled it: at most 150 + 99 records, never the 650.
    expect(Math.max(...held)).toBeLessThanOrEqual(150 + REDRIVE_QUARANTINE_PAGE_SIZE - 1);
    expect(report).toMatchObject({ considered: 650, kept: [] });
    expect(report.keptByWhy).toEqual({});
    expect(report.notScanned).toBeUndefined();
    expect(report.cycle.outcome).toBe("complete");
    // Named up to a bound, as kept records are: a run over a large quarantine must not list every record it deleted.
    expect(report.redriven).toHaveLength(REDRIVEN_RECORDS_NAMED);
    expect(report.redrivenNotNamed).toBe(650 - REDRIVEN_RECORDS_NAMED);
    expect(redrivenCount(report)).toBe(650);
    expect(rig.logger.lines.find((l) => l.message === "quarantined transactions re-driven")?.attributes).toMatchObject({ redriven: 650 });
    expect(rig.quarantine.records.size).toBe(0);
    expect(new Set(rig.publisher.ofType("transaction.created").map((e) => e.detail.subject.id))).toEqual(new Set(txns.map((t) => t.id)));
    // One run, one report: its counters span every chunk.
    expect(report.cycle.published["transaction.created"]).toBe(650);
  });

  it("stops walking the quarantine at the deadline: records past it are neither considered nor kept, and the report says the walk stopped", async () => {
    const rig = makeRig();
    await quarantined(rig, 450);
    slowQuarantinePages(rig, 1_000);
    // Three pages read (the deadline passes with the third): they are held, and not reached.
    const report = await redriveQuarantined(rig.deps, { deadline: rig.clock.now() + 2_500, random: () => 0 });
    expect(report.considered).toBe(300);
    expect(report.notScanned).toBe(true);
    expect(report.cycle.outcome).toBe("deadline");
    expect(report.redriven).toEqual([]);
    expect(report.keptByWhy).toEqual({ "not reached before the deadline": 300 });
    expect(keptCount(report)).toBe(300);
    expect(rig.quarantine.records.size).toBe(450);
    const summary = rig.logger.lines.find((l) => l.message === "quarantined transactions re-driven");
    expect(summary?.attributes).toMatchObject({ considered: 300, kept: 300, notScanned: true });

    // The next run, with the time it needs, goes through all of it.
    const next = await redriveQuarantined(rig.deps, { deadline: rig.clock.now() + 60_000 });
    expect(next).toMatchObject({ considered: 450, kept: [] });
    expect(next.notScanned).toBeUndefined();
    expect(rig.quarantine.records.size).toBe(0);
  });

  // 1: the chunk ends with the walk's last page, within the walk; the default: the chunk is taken once the walk ended.
  it.each([1, undefined])(
    "reports the walk whole and the run complete when every record was tried, though its last chunk (of %s records) ended past the deadline",
    async (chunkRecords) => {
      const rig = makeRig();
      await quarantined(rig, 2);
      // The walk's last page is one of the first pass (the walk starts before every id): nothing comes round after it.
      const deadline = rig.clock.now() + 1_000;
      const remove = rig.quarantine.deleteMany.bind(rig.quarantine);
      rig.quarantine.deleteMany = async (ids) => {
        rig.clock.advance(5_000);
        return remove(ids);
      };
      const report = await redriveQuarantined(rig.deps, { deadline, random: () => 0, ...(chunkRecords === undefined ? {} : { chunkRecords }) });
      expect(report).toMatchObject({ considered: 2, kept: [] });
      expect(redrivenCount(report)).toBe(2);
      expect(report.notScanned).toBeUndefined();
      expect(report.cycle.outcome).toBe("complete");
    },
  );

  it("says the walk stopped when the deadline passed before it came round, though the first pass was done", async () => {
    const rig = makeRig();
    await quarantined(rig, 2);
    // Under ids on either side of where the walk starts (0.5: an id of 8s): the first pass finds one, the other comes round.
    const records = [...rig.quarantine.records.values()];
    rig.quarantine.records.clear();
    for (const [i, id] of ["10000000-0000-8000-8000-000000000001", "f0000000-0000-8000-8000-000000000001"].entries()) {
      await rig.quarantine.put({ ...records[i]!, id });
    }
    const remove = rig.quarantine.deleteMany.bind(rig.quarantine);
    rig.quarantine.deleteMany = async (ids) => {
      rig.clock.advance(5_000);
      return remove(ids);
    };
    const report = await redriveQuarantined(rig.deps, { deadline: rig.clock.now() + 1_000, random: () => 0.5, chunkRecords: 1 });
    expect(report.considered).toBe(1);
    expect(report.redriven.map((r) => r.id)).toEqual(["f0000000-0000-8000-8000-000000000001"]);
    expect(report.notScanned).toBe(true);
    expect(report.cycle.outcome).toBe("deadline");
  });

  it("says the walk stopped when the deadline passed after a page and the read of the next one, to tell whether it was the last, failed", async () => {
    const rig = makeRig();
    await quarantined(rig, 2 * REDRIVE_QUARANTINE_PAGE_SIZE);
    const deadline = rig.clock.now() + 1_000;
    const pages = rig.quarantine.pages.bind(rig.quarantine);
    rig.quarantine.pages = async function* (options) {
      let read = 0;
      for await (const page of pages(options)) {
        // The first page takes the run past its deadline; the store then fails the read of the second.
        if (++read === 2) throw Object.assign(new Error("throttled"), { name: "ProvisionedThroughputExceededException" });
        rig.clock.advance(2_000);
        yield page;
      }
    };
    const report = await redriveQuarantined(rig.deps, { deadline, random: () => 0 });
    expect(report.considered).toBe(REDRIVE_QUARANTINE_PAGE_SIZE);
    expect(report.notScanned).toBe(true);
    expect(report.cycle.outcome).toBe("deadline");
    expect(rig.quarantine.records.size).toBe(2 * REDRIVE_QUARANTINE_PAGE_SIZE);
  });

  it("stops walking the quarantine once asked to stop (Ctrl-C), between two pages", async () => {
    const rig = makeRig();
    await quarantined(rig, 350);
    const stop = new AbortController();
    const pages = rig.quarantine.pages.bind(rig.quarantine);
    rig.quarantine.pages = async function* (options) {
      for await (const page of pages(options)) {
        // Ctrl-C while the first page is read.
        stop.abort();
        yield page;
      }
    };
    const report = await redriveQuarantined(rig.deps, { signal: stop.signal, random: () => 0 });
    expect(report.considered).toBe(REDRIVE_QUARANTINE_PAGE_SIZE);
    expect(report.notScanned).toBe(true);
    expect(report.cycle.outcome).toBe("deadline");
    expect(rig.quarantine.records.size).toBe(350);
  });

  it("starts each run at a random point of the quarantine, so records that keep failing do not hold back the others when each run reaches only some", async () => {
    const rig = makeRig();
    await quarantined(rig, 400);
    // The first page from the beginning keeps failing; every run has time to re-drive one page only (the second it
    // reads comes past the deadline, so its records are not reached).
    const first = [...rig.quarantine.records.keys()].sort().slice(0, REDRIVE_QUARANTINE_PAGE_SIZE);
    const failing = new Set(first.map((id) => rig.quarantine.records.get(id)?.entityId));
    rig.publisher.reject = (e) => (failing.has(e.detail.subject.id) ? "AccessDeniedException: still not allowed" : undefined);
    slowQuarantinePages(rig, 1_000);
    const random = seededRandom(3);
    let runs = 0;
    for (; runs < 60 && rig.quarantine.records.size > failing.size; runs += 1) {
      const held = rig.quarantine.records.size;
      const report = await redriveQuarantined(rig.deps, { deadline: rig.clock.now() + 1_500, chunkRecords: 1, random });
      // Said exactly: a run whose two pages were the whole quarantine (most re-driven by then) walked it whole.
      expect(report.notScanned).toBe(report.considered < held ? true : undefined);
      expect(report.considered).toBeLessThanOrEqual(2 * REDRIVE_QUARANTINE_PAGE_SIZE);
    }
    expect(runs).toBeLessThan(60);
    expect(new Set([...rig.quarantine.records.values()].map((r) => r.entityId))).toEqual(failing);
  });

  it("delivers a transaction whose records fall in two chunks once: the second chunk finds it unchanged and only deletes its record", async () => {
    const rig = makeRig();
    const [txn] = await quarantined(rig, 1);
    rig.provider.changeTransaction(txn!.id, { memo: "second version" });
    rig.publisher.reject = () => "AccessDeniedException: not allowed";
    await pollTransactions(rig.deps);
    rig.publisher.reject = () => undefined;
    expect([...rig.quarantine.records.values()].map((r) => r.entityId)).toEqual([txn!.id, txn!.id]);
    // Pages of one record, chunks of one record: each record is a chunk of its own.
    const pages = rig.quarantine.pages.bind(rig.quarantine);
    rig.quarantine.pages = (options) => pages({ ...options, limit: 1 });

    const report = await redriveQuarantined(rig.deps, { chunkRecords: 1 });
    expect(report).toMatchObject({ considered: 2, kept: [] });
    expect(report.redriven.map((r) => r.entityId)).toEqual([txn!.id, txn!.id]);
    expect(rig.quarantine.records.size).toBe(0);
    // Read by the first chunk alone: the second settles its record as delivered earlier in the run.
    expect(rig.provider.calls.filter((c) => c.op === "listTransactions" && c.query.qashio_id === txn!.qashio_id)).toHaveLength(1);
    expect(rig.publisher.ofType("transaction.created").map((e) => e.detail.subject.id)).toEqual([txn!.id]);
    expect(report.cycle).toMatchObject({ unchanged: 0 });
  });

  it("settles a validation record holding a glitched qashio_id, in a chunk after the one that delivered its transaction by its publish record, without reading it", async () => {
    const rig = makeRig();
    const [txn] = await quarantined(rig, 1);
    await glitchedRecordInChunkAfter(rig, txn!.id);

    const report = await redriveQuarantined(rig.deps, { chunkRecords: 1, random: () => 0 });
    expect(report).toMatchObject({ considered: 2, kept: [] });
    expect(report.keptByWhy).toEqual({});
    expect(report.redriven.map((r) => r.entityId)).toEqual([txn!.id, txn!.id]);
    expect(rig.quarantine.records.size).toBe(0);
    expect(rig.provider.calls.filter((c) => c.op === "listTransactions" && c.query.qashio_id === "CTX")).toEqual([]);
    expect(rig.publisher.ofType("transaction.created").map((e) => e.detail.subject.id)).toEqual([txn!.id]);
  });

  it("reads a validation record holding a glitched qashio_id, in a chunk after its transaction's publish record, by the publish record's qashio_id", async () => {
    const rig = makeRig();
    const [txn] = await quarantined(rig, 1);
    await glitchedRecordInChunkAfter(rig, txn!.id);
    // The cause is not fixed: both records stay, for it, not as a transaction the provider does not have.
    rig.publisher.reject = () => "AccessDeniedException: still not allowed";

    const report = await redriveQuarantined(rig.deps, { chunkRecords: 1, random: () => 0 });
    expect(report.keptByWhy).toEqual({ "its event was not published": 2 });
    expect(rig.quarantine.records.size).toBe(2);
    expect(rig.provider.calls.filter((c) => c.op === "listTransactions" && c.query.qashio_id === "CTX")).toEqual([]);
  });

  it("keeps a validation record holding a glitched qashio_id, in a chunk after its transaction's publish record, as not found at the provider when the read by the publish record's qashio_id finds nothing", async () => {
    const rig = makeRig();
    const [txn] = await quarantined(rig, 1);
    await glitchedRecordInChunkAfter(rig, txn!.id);
    rig.provider.transactions.splice(rig.provider.transactions.indexOf(txn!), 1);

    const report = await redriveQuarantined(rig.deps, { chunkRecords: 1, random: () => 0 });
    // Read by the trusted reference, both are kept as gone, not as read by an unconfirmed one.
    expect(report.keptByWhy).toEqual({ "not found at the provider": 2 });
    expect(rig.provider.calls.filter((c) => c.op === "listTransactions" && c.query.qashio_id === "CTX")).toEqual([]);
    expect(rig.quarantine.records.size).toBe(2);
  });

  // Two: the second chunk's miss must not make the run forget the first's.
  it.each([1, 2])(
    "deletes %i validation record(s) holding a glitched qashio_id, each kept not found in a chunk of its own, once a later chunk delivers its transaction by its publish record",
    async (glitched) => {
      const rig = makeRig();
      const [txn] = await quarantined(rig, 1);
      // Walked first (the walk starts just before them), each a chunk of its own: read by its glitched reference, found nowhere.
      for (let n = 1; n <= glitched; n += 1) await putGlitchedValidationRecord(rig, txn!.id, `00000000-0000-8000-8000-00000000000${n}`);
      const pages = rig.quarantine.pages.bind(rig.quarantine);
      rig.quarantine.pages = (options) => pages({ ...options, limit: 1 });

      const report = await redriveQuarantined(rig.deps, { chunkRecords: 1, random: () => 0 });
      expect(report).toMatchObject({ considered: glitched + 1, kept: [] });
      expect(report.keptByWhy).toEqual({});
      expect(report.keptNotNamed).toBeUndefined();
      expect(report.redriven.map((r) => r.entityId)).toEqual(Array.from({ length: glitched + 1 }, () => txn!.id));
      expect(rig.quarantine.records.size).toBe(0);
      expect(rig.logger.lines.filter((l) => l.message === "quarantine record kept by the re-drive")).toEqual([]);
    },
  );

  it("deletes a validation record kept as refused by its glitched qashio_id (a 400 for an odd reference) once a later chunk delivers its transaction by its publish record", async () => {
    const rig = makeRig();
    const [txn] = await quarantined(rig, 1);
    const glitched = "00000000-0000-8000-8000-000000000001";
    await putGlitchedValidationRecord(rig, txn!.id, glitched);
    const pages = rig.quarantine.pages.bind(rig.quarantine);
    rig.quarantine.pages = (options) => pages({ ...options, limit: 1 });
    rig.provider.beforeCall = (call) => {
      if (call.op === "listTransactions" && call.query.qashio_id === "CTX") throw Object.assign(new Error("answered 400"), { name: "QashioApiError", status: 400 });
    };

    const report = await redriveQuarantined(rig.deps, { chunkRecords: 1, random: () => 0 });
    expect(rig.provider.calls.filter((c) => c.op === "listTransactions" && c.query.qashio_id === "CTX")).toHaveLength(1);
    expect(report).toMatchObject({ considered: 2, kept: [] });
    expect(report.keptByWhy).toEqual({});
    expect(report.redriven.map((r) => r.id)).toContain(glitched);
    expect(rig.quarantine.records.size).toBe(0);
  });

  it("gives a validation record kept not found by its glitched qashio_id the why of a later chunk's read of its transaction by its publish record", async () => {
    const rig = makeRig();
    const [txn] = await quarantined(rig, 1);
    await putGlitchedValidationRecord(rig, txn!.id, "00000000-0000-8000-8000-000000000001");
    const pages = rig.quarantine.pages.bind(rig.quarantine);
    rig.quarantine.pages = (options) => pages({ ...options, limit: 1 });
    // The cause is not fixed: the later read by the trusted reference finds the transaction and fails to publish it.
    rig.publisher.reject = () => "AccessDeniedException: still not allowed";

    const report = await redriveQuarantined(rig.deps, { chunkRecords: 1, random: () => 0 });
    expect(report.keptByWhy).toEqual({ "its event was not published": 2 });
    expect(report.kept.map((k) => [k.record.id, k.why])).toEqual(
      expect.arrayContaining([["00000000-0000-8000-8000-000000000001", "its event was not published"]]),
    );
    expect(report.kept).toHaveLength(2);
    const warned = rig.logger.lines.filter((l) => l.message === "quarantine record kept by the re-drive").map((l) => l.attributes?.["why"]);
    expect(warned).toEqual(["its event was not published", "its event was not published"]);
    expect(rig.quarantine.records.size).toBe(2);
  });

  // A snapshot shows delivered only the states it is as new as: the record of a newer state of the same transaction,
  // in another chunk, is not deleted with the one it covers (neither as delivered in the run, nor as kept earlier).
  // Walked after the newer one, the covered one is checked with it (a delivery deletes the records kept before), so
  // both stay; a later run that walks it first deletes it.
  it.each([
    { first: "the covered record", covered: "00000000-0000-8000-8000-000000000001", newer: "00000000-0000-8000-8000-000000000002", deleted: true },
    { first: "the newer record", covered: "00000000-0000-8000-8000-000000000002", newer: "00000000-0000-8000-8000-000000000001", deleted: false },
  ])(
    "keeps a glitched validation record of a state newer than its transaction's snapshot when another chunk's record of it is shown delivered ($first walked first)",
    async ({ covered, newer, deleted }) => {
      const rig = makeRig();
      const [txn] = await quarantined(rig, 1);
      await redriveQuarantined(rig.deps);
      expect(rig.quarantine.records.size).toBe(0);
      await putGlitchedValidationRecord(rig, txn!.id, covered, { updated_at: txn!.updated_at });
      await putGlitchedValidationRecord(rig, txn!.id, newer, { updated_at: "2030-01-01T00:00:00.000Z" });
      const pages = rig.quarantine.pages.bind(rig.quarantine);
      rig.quarantine.pages = (options) => pages({ ...options, limit: 1 });
      rig.clock.advance(60_000);

      const report = await redriveQuarantined(rig.deps, { chunkRecords: 1, random: () => 0 });
      expect(report.redriven.map((r) => r.id)).toEqual(deleted ? [covered] : []);
      expect(report.kept.map((k) => k.record.id)).toEqual(deleted ? [newer] : [newer, covered]);
      expect(report.keptByWhy).toEqual({ "not found by its qashio_id, which no publish record confirms": deleted ? 1 : 2 });
      expect([...rig.quarantine.records.keys()].sort()).toEqual((deleted ? [newer] : [newer, covered]).sort());
    },
  );

  it("keeps a glitched validation record of a state newer than its transaction's snapshot when two later chunks' records of it are of the state the snapshot holds", async () => {
    const rig = makeRig();
    const [txn] = await quarantined(rig, 1);
    await redriveQuarantined(rig.deps);
    const [newer, covered, alsoCovered] = ["00000000-0000-8000-8000-000000000001", "00000000-0000-8000-8000-000000000002", "00000000-0000-8000-8000-000000000003"];
    await putGlitchedValidationRecord(rig, txn!.id, newer, { updated_at: "2030-01-01T00:00:00.000Z" });
    for (const id of [covered, alsoCovered]) await putGlitchedValidationRecord(rig, txn!.id, id, { updated_at: txn!.updated_at });
    const pages = rig.quarantine.pages.bind(rig.quarantine);
    rig.quarantine.pages = (options) => pages({ ...options, limit: 1 });
    rig.clock.advance(60_000);

    // The newer state, walked first, is never shown delivered: no later chunk's check may forget it.
    const report = await redriveQuarantined(rig.deps, { chunkRecords: 1, random: () => 0 });
    expect(report.redriven).toEqual([]);
    expect(report.keptByWhy).toEqual({ "not found by its qashio_id, which no publish record confirms": 3 });
    expect([...rig.quarantine.records.keys()].sort()).toEqual([newer, covered, alsoCovered]);
  });

  it.each([
    { what: "each counted once among those deleted", deferredFirst: false, redriven: 3, keptByWhy: {} },
    { what: "the one kept counted by the why it was given last", deferredFirst: true, redriven: 2, keptByWhy: { "its event was not published": 1 } },
  ])(
    "deletes a glitched validation record kept not found, then two publish records of its transaction in later chunks of their own: $what",
    async ({ deferredFirst, redriven, keptByWhy }) => {
      const rig = makeRig();
      const [txn] = await quarantined(rig, 1);
      rig.provider.changeTransaction(txn!.id, { memo: "second version" });
      await quarantinePublishFailures(rig, 0);
      expect([...rig.quarantine.records.values()].map((r) => r.entityId)).toEqual([txn!.id, txn!.id]);
      await putGlitchedValidationRecord(rig, txn!.id, "00000000-0000-8000-8000-000000000001");
      const pages = rig.quarantine.pages.bind(rig.quarantine);
      rig.quarantine.pages = (options) => pages({ ...options, limit: 1 });
      // The bus throttles the first chunk's publish (for now), then takes the next.
      let publishes = 0;
      rig.publisher.reject = () => (deferredFirst && publishes++ === 0 ? { reason: "ThrottlingException", retryable: true } : undefined);

      const report = await redriveQuarantined(rig.deps, { chunkRecords: 1, random: () => 0 });
      expect(redrivenCount(report)).toBe(redriven);
      expect(report.redriven.map((r) => r.id)).toContain("00000000-0000-8000-8000-000000000001");
      expect(keptCount(report)).toBe(3 - redriven);
      expect(report.keptByWhy).toEqual(keptByWhy);
      expect(rig.quarantine.records.size).toBe(3 - redriven);
    },
  );

  it("stops where its walk meets a record the store cannot decode, keeping what the chunks before it re-drove, and names the store's error", async () => {
    const rig = makeRig();
    await quarantined(rig, 350);
    const pages = rig.quarantine.pages.bind(rig.quarantine);
    let read = 0;
    rig.quarantine.pages = async function* (options) {
      for await (const page of pages(options)) {
        if (++read === 3) throw Object.assign(new Error("Quarantine item QUAR#t/q cannot be decoded"), { name: "CorruptItemError" });
        yield page;
      }
    };
    const error = await redriveQuarantined(rig.deps, { chunkRecords: 1, random: () => 0 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CycleAbortedError);
    expect((error as Error).message).toContain("CorruptItemError: Quarantine item QUAR#t/q cannot be decoded");
    expect((error as Error).cause).toMatchObject({ name: "CorruptItemError" });
    // The two pages read before it, a chunk each, are re-driven and their records gone.
    expect((error as CycleAbortedError).report.published["transaction.created"]).toBe(2 * REDRIVE_QUARANTINE_PAGE_SIZE);
    expect(rig.quarantine.records.size).toBe(350 - 2 * REDRIVE_QUARANTINE_PAGE_SIZE);
  });

  it("names the records kept for a cause before those only not reached, and counts them all by why", async () => {
    const rig = makeRig();
    await quarantined(rig, KEPT_RECORDS_NAMED + 50);
    rig.publisher.reject = () => "AccessDeniedException: still not allowed";
    // Five reads before the deadline: five kept for a cause, the rest not reached.
    slowReadsByQashioId(rig, 1_000);
    const report = await redriveQuarantined(rig.deps, { pageSize: 5, deadline: rig.clock.now() + 5_000, random: seededRandom(9) });
    expect(report.keptByWhy).toEqual({ "its event was not published": 5, "not reached before the deadline": KEPT_RECORDS_NAMED + 45 });
    expect(report.kept).toHaveLength(KEPT_RECORDS_NAMED);
    expect(report.keptNotNamed).toBe(50);
    expect(report.kept.filter((k) => k.why === "its event was not published")).toHaveLength(5);
    const named = rig.logger.lines.filter((l) => l.message === "quarantine record kept by the re-drive");
    expect(named).toHaveLength(KEPT_RECORDS_NAMED);
  });
});
