/**
 * The re-drive's reads by qashio_id: a few at a time, as card details and refund parents are read, with the outcome of
 * reads made one after another (events, their order and ids; records not reached kept; token failures).
 */
import { describe, expect, it } from "vitest";
import { pollTransactions } from "../../shared/bridge/transactions.js";
import { redriveQuarantined } from "../../shared/bridge/redrive.js";
import { ReauthorizationNeededError } from "../../shared/bridge/errors.js";
import { SINGLE_READ_CONCURRENCY, type ProviderPage } from "../../shared/bridge/provider.js";
import { ReauthorizationRequiredError } from "../../shared/qashio/errors.js";
import { countReadsInFlight, isReadByQashioId, laterTurn, makeRig, orderOfReads, seededRandom, type TestRig } from "./fakes.js";

/** A rig with `count` transactions quarantined for a publish that failed for good; publishing works again after. */
async function quarantined(count: number) {
  const rig = makeRig();
  const txns = Array.from({ length: count }, () => rig.provider.addTransaction());
  rig.publisher.reject = () => "AccessDeniedException: not allowed";
  await pollTransactions(rig.deps);
  rig.publisher.reject = () => undefined;
  expect(rig.quarantine.records.size).toBe(count);
  rig.provider.calls.length = 0;
  return { rig, txns };
}


/**
 * Has the provider answer the re-drive's reads by `txn`'s qashio_id with `answer(page, own)`, `own` being the row the
 * list holds for it; other reads are answered as before. Returns the pages those reads asked for, in order.
 */
function answerReadsOf(rig: TestRig, txn: { qashio_id: string }, answer: (page: number, own: unknown) => ProviderPage): number[] {
  const list = rig.provider.listTransactions.bind(rig.provider);
  const pagesRead: number[] = [];
  rig.provider.listTransactions = async (query) => {
    if (query.qashio_id !== txn.qashio_id) return list(query);
    pagesRead.push(query.page);
    return answer(query.page, (await list({ ...query, page: 1 })).data[0]);
  };
  return pagesRead;
}


describe("re-drive reads by qashio_id", () => {
  it("reads the quarantined transactions SINGLE_READ_CONCURRENCY at a time, not one after another, one read each", async () => {
    const { rig, txns } = await quarantined(10);
    const reads = countReadsInFlight(rig);
    const report = await redriveQuarantined(rig.deps, { pageSize: 4 });
    expect(report.cycle.outcome).toBe("complete");
    expect(reads.most()).toBe(SINGLE_READ_CONCURRENCY);
    expect(rig.provider.calls.filter(isReadByQashioId)).toHaveLength(txns.length);
    expect(report.redriven).toHaveLength(txns.length);
    expect(rig.quarantine.records.size).toBe(0);
  });

  it("publishes the same events, in the same order and with the same ids, and deletes in the same batches, whichever read answers first", async () => {
    const run = async (laterStartedAnswerFirst: boolean) => {
      const { rig } = await quarantined(9);
      const { started, answered } = orderOfReads(rig, laterStartedAnswerFirst);
      const deleted: string[][] = [];
      const deleteMany = rig.quarantine.deleteMany.bind(rig.quarantine);
      rig.quarantine.deleteMany = async (ids) => {
        deleted.push([...ids]);
        return deleteMany(ids);
      };
      await redriveQuarantined(rig.deps, { pageSize: 4, random: seededRandom(11) });
      return { started, answered, deleted, events: rig.publisher.events.map((e) => [e.detail.id, e.detail.subject.id]) };
    };
    const inOrder = await run(false);
    const reversed = await run(true);
    expect(inOrder.answered).toEqual(inOrder.started);
    // The case this test is about: answers out of the order the reads started in.
    expect(reversed.answered).not.toEqual(reversed.started);
    expect(reversed.started).toEqual(inOrder.started);
    expect(reversed.events).toEqual(inOrder.events);
    expect(reversed.deleted).toEqual(inOrder.deleted);
    expect(inOrder.deleted.map((ids) => ids.length)).toEqual([4, 4, 1]);
  });

  it("reads no further ahead than the batch in hand has room for: a record refused leaves the next reads to the one place left", async () => {
    const { rig } = await quarantined(9);
    let reads = 0;
    rig.provider.beforeCall = (call) => {
      if (!isReadByQashioId(call)) return;
      reads += 1;
      // The first read is refused for its reference alone: the first batch of 4 needs a fifth read.
      if (reads === 1) throw Object.assign(new Error("uri too long"), { name: "ProviderError", status: 414 });
    };
    let readsAtFirstPublish: number | undefined;
    rig.publisher.reject = () => {
      readsAtFirstPublish ??= reads;
      return undefined;
    };
    const report = await redriveQuarantined(rig.deps, { pageSize: 4 });
    expect(readsAtFirstPublish).toBe(5);
    expect(reads).toBe(9);
    expect(report.redriven).toHaveLength(8);
    expect(report.kept).toHaveLength(1);
  });

  it("stops at a read that cannot finish by the deadline: starts none after it, re-drives the records read before it, keeps the rest as not reached", async () => {
    const { rig, txns } = await quarantined(10);
    const deadline = rig.clock.now() + 60_000;
    const order: string[] = [];
    rig.provider.beforeCall = async (call) => {
      if (call.op !== "listTransactions" || call.query.qashio_id === undefined) return;
      order.push(call.query.qashio_id);
      // The third read cannot finish by the deadline: the client refuses to send it, as QashioClient does.
      if (order.length === 3) throw Object.assign(new Error("no time left"), { name: "DeadlineExceededError", deadline });
      await laterTurn();
    };
    const report = await redriveQuarantined(rig.deps, { deadline });
    expect(report.cycle.outcome).toBe("deadline");
    expect(rig.metrics.sum("CycleErrors")).toBe(0);
    // Those in flight when it stopped ended; no read started after it.
    expect(order).toHaveLength(SINGLE_READ_CONCURRENCY);
    const idOf = new Map(txns.map((t) => [t.qashio_id, t.id]));
    // The records read before it; the one in flight after it is not taken.
    expect(report.redriven.map((r) => r.entityId).sort()).toEqual(order.slice(0, 2).map((qid) => idOf.get(qid)).sort());
    expect(report.kept).toHaveLength(8);
    expect(report.kept.every((k) => k.why === "not reached before the deadline")).toBe(true);
    expect(rig.quarantine.records.size).toBe(8);

    rig.provider.beforeCall = () => undefined;
    const next = await redriveQuarantined(rig.deps);
    expect(next.cycle.outcome).toBe("complete");
    expect(rig.quarantine.records.size).toBe(0);
    expect(new Set(rig.publisher.ofType("transaction.created").map((e) => e.detail.subject.id)).size).toBe(txns.length);
  });

  it.each([
    ["ran out of time", (deadline: number) => Object.assign(new Error("no time left"), { name: "DeadlineExceededError", deadline })],
    ["failed with a 500", () => Object.assign(new Error("failure 500"), { name: "ServerError", status: 500 })],
  ])("stops with ReauthorizationNeededError when a read meets a revoked token family, also when another read in flight %s first", async (_, firstFailure) => {
    const { rig } = await quarantined(6);
    const deadline = rig.clock.now() + 60_000;
    let reads = 0;
    rig.provider.beforeCall = async (call) => {
      if (!isReadByQashioId(call)) return;
      const n = ++reads;
      if (n === 1) throw firstFailure(deadline);
      await laterTurn();
      if (n === 2) throw new ReauthorizationRequiredError("refresh token rejected", { status: 400, method: "POST", path: "/oauth2/token" });
    };
    await expect(redriveQuarantined(rig.deps, { deadline })).rejects.toBeInstanceOf(ReauthorizationNeededError);
    expect(rig.metrics.sum("TokenFamilyRevoked")).toBe(1);
    expect(rig.publisher.events).toEqual([]);
    expect(rig.quarantine.records.size).toBe(6);
  });

  it("reads on past pages under the record's qashio_id holding only rows without an id, each page of other such rows, to the record's row", async () => {
    const { rig, txns } = await quarantined(1);
    const [txn] = txns as [(typeof txns)[number]];
    // Newest first, two pages of malformed rows (no id) under the same qashio_id come before the record's row.
    const idless = (page: number) => [0, 1].map((i) => ({ qashio_id: txn.qashio_id, amount: `row ${page}.${i}` }));
    const pagesRead = answerReadsOf(rig, txn, (page, own) => ({
      data: page < 3 ? idless(page) : [own],
      pagination: { page, page_size: 2, total_records: 5, total_pages: 3, has_next: page < 3 },
    }));
    const report = await redriveQuarantined(rig.deps, { pageSize: 2 });
    expect(pagesRead).toEqual([1, 2, 3]);
    expect(report.redriven.map((r) => r.entityId)).toEqual([txn.id]);
    expect(rig.quarantine.records.size).toBe(0);
  });

  it("numbers the pages after one holding more rows than its page_size in the rows it held, reading none of them again", async () => {
    const { rig, txns } = await quarantined(1);
    const [txn] = txns as [(typeof txns)[number]];
    // Pages of 6 by the provider's page_size and total_pages, yet its first answer holds rows 0 to 11; row 12 is the record's.
    const rows = Array.from({ length: 12 }, (_, i) => ({ id: `T-other-${i}`, qashio_id: txn.qashio_id }));
    const pagesRead = answerReadsOf(rig, txn, (page, own) => ({
      data: page === 1 ? rows : page === 2 ? rows.slice(6) : [own],
      pagination: { page, page_size: 6, total_records: 13, total_pages: 3, has_next: page < 3 },
    }));
    const report = await redriveQuarantined(rig.deps, { pageSize: 10 });
    expect(pagesRead).toEqual([1, 3]);
    expect(report.redriven.map((r) => r.entityId)).toEqual([txn.id]);
  });

  it("numbers the pages in the size a provider serves without saying, when only its count says the list goes on", async () => {
    const { rig, txns } = await quarantined(1);
    const [txn] = txns as [(typeof txns)[number]];
    // Asked 10, it serves 3 a page, saying has_next false on every page while its total_records counts 9: row 6 is the record's.
    const rows: unknown[] = Array.from({ length: 9 }, (_, i) => ({ id: `T-other-${i}`, qashio_id: txn.qashio_id }));
    const pagesRead = answerReadsOf(rig, txn, (page, own) => ({
      data: rows.map((row, i) => (i === 6 ? own : row)).slice((page - 1) * 3, page * 3),
      pagination: { page, total_records: 9, has_next: false },
    }));
    const report = await redriveQuarantined(rig.deps, { pageSize: 10 });
    expect(pagesRead).toEqual([1, 2, 3]);
    expect(report.redriven.map((r) => r.entityId)).toEqual([txn.id]);
  });
});
