/**
 * The re-drive's reprocessing on its own (redrive.ts is built on it): what it tells of each chunk (ReprocessedChunk), and
 * its outcome, as any caller sees them.
 */
import { describe, expect, it } from "vitest";
import { pollTransactions } from "../../shared/bridge/transactions.js";
import { reprocessTransactions, type ReprocessedChunk, type TransactionRef } from "../../shared/bridge/reprocess.js";
import { WriteDeadlineExceededError } from "../../shared/bridge/errors.js";
import { makeRig, type TestRig } from "./fakes.js";

async function* oneChunk(refs: readonly TransactionRef[]): AsyncIterable<readonly TransactionRef[]> {
  yield refs;
}

/** Reprocesses `refs` as one chunk; returns the run's report and what it told of the chunk. */
async function reprocessOnce(rig: TestRig, refs: readonly TransactionRef[], deadline?: number) {
  const chunks: ReprocessedChunk[] = [];
  const report = await reprocessTransactions(rig.deps, oneChunk(refs), { deadline, afterChunk: (chunk) => chunks.push(chunk) });
  expect(chunks).toHaveLength(1);
  return { report, chunk: chunks[0]! };
}

/**
 * A transaction published and stored, and a ref to it by a glitched reference that finds nothing, its records
 * quarantined before that store with a body of the state stored (see TransactionRef.unconfirmed).
 */
async function storedUnderGlitchedRef(rig: TestRig): Promise<TransactionRef> {
  const txn = rig.provider.addTransaction();
  await pollTransactions(rig.deps);
  rig.clock.advance(60_000);
  return { id: txn.id, qashioId: "CTX", unconfirmed: { changedAt: Date.parse(txn.updated_at), quarantinedAt: rig.clock.now() - 120_000 } };
}

describe("reprocessTransactions", () => {
  it("is complete when it read every ref within its deadline, though no caller says its chunks ended", async () => {
    const rig = makeRig();
    const txn = rig.provider.addTransaction();
    const { report, chunk } = await reprocessOnce(rig, [{ id: txn.id, qashioId: txn.qashio_id }], rig.clock.now() + 60_000);
    expect(report.outcome).toBe("complete");
    expect([...chunk.delivered]).toEqual([txn.id]);
  });

  it("counts a transaction published and stored before its batch's acknowledge ran out of time as delivered, not also as not reached", async () => {
    const rig = makeRig();
    const txns = [rig.provider.addTransaction(), rig.provider.addTransaction()];
    rig.provider.beforeCall = (call) => {
      if (call.op !== "acknowledgeTransactions") return;
      throw Object.assign(new Error("no time left"), { name: "DeadlineExceededError", deadline: rig.clock.now() + 15_000 });
    };
    const refs = txns.map((t) => ({ id: t.id, qashioId: t.qashio_id }));
    const { report, chunk } = await reprocessOnce(rig, refs, rig.clock.now() + 10_000);
    expect(report.outcome).toBe("deadline");
    expect(rig.publisher.ofType("transaction.created")).toHaveLength(2);
    expect([...chunk.delivered].sort()).toEqual(txns.map((t) => t.id).sort());
    expect(chunk.unreached).toEqual([]);
  });

  it("tells a ref found nowhere by its unconfirmed qashio_id yet shown delivered by its snapshot as delivered only, not also as missing", async () => {
    const rig = makeRig();
    const glitched = await storedUnderGlitchedRef(rig);
    const { report, chunk } = await reprocessOnce(rig, [glitched]);
    expect(report.outcome).toBe("complete");
    expect([...chunk.shownBySnapshot]).toEqual([glitched.id]);
    expect([...chunk.delivered]).toEqual([glitched.id]);
    expect([...chunk.missing]).toEqual([]);
  });

  it("reads no snapshot once a batch's deletes ran out of time: a ref found nowhere by its unconfirmed qashio_id is not reached", async () => {
    const rig = makeRig();
    const glitched = await storedUnderGlitchedRef(rig);
    const [a, b] = [rig.provider.addTransaction(), rig.provider.addTransaction()];
    const refs = [glitched, ...[a, b].map((t) => ({ id: t.id, qashioId: t.qashio_id }))];
    let deletes = 0;
    const chunks: ReprocessedChunk[] = [];
    const report = await reprocessTransactions(rig.deps, oneChunk(refs), {
      pageSize: 1,
      // The first batch's deletes stop at the calls' deadline (a throttled table); a later call would go through.
      afterBatch: async () => {
        if (++deletes === 1) throw new WriteDeadlineExceededError("not deleted", rig.clock.now());
      },
      afterChunk: (chunk) => chunks.push(chunk),
    });
    expect(report.outcome).toBe("deadline");
    expect(deletes).toBe(1);
    // Whether its state was delivered is not known: not reached, rather than found nowhere.
    expect([...chunks[0]!.missing]).toEqual([]);
    expect([...chunks[0]!.shownBySnapshot]).toEqual([]);
    expect(chunks[0]!.unreached).toEqual([a.id, b.id, glitched.id]);
  });

  it("hands each delivered id to afterBatch once: a ref delivered by an earlier chunk goes with the first batch only", async () => {
    const rig = makeRig();
    const [a, b] = [rig.provider.addTransaction(), rig.provider.addTransaction()];
    const before = "00000000-0000-8000-8000-0000000000d1";
    const refs: TransactionRef[] = [{ id: before, qashioId: "QD1", delivered: true }, ...[a, b].map((t) => ({ id: t.id, qashioId: t.qashio_id }))];
    const batches: string[][] = [];
    const chunks: ReprocessedChunk[] = [];
    const report = await reprocessTransactions(rig.deps, oneChunk(refs), {
      pageSize: 1,
      afterBatch: async (delivered) => {
        batches.push([...delivered]);
      },
      afterChunk: (chunk) => chunks.push(chunk),
    });
    expect(report.outcome).toBe("complete");
    // A caller deletes each batch's records and counts them: an id handed twice would be counted twice.
    expect(batches).toEqual([[before, a.id], [b.id]]);
    expect([...chunks[0]!.delivered].sort()).toEqual([before, a.id, b.id].sort());
  });
});
