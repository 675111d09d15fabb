/**
 * A re-drive's reads by qashio_id lower the run's page size when the provider rejects it, while a batch is in hand
 * from an earlier window of reads: the next window must still read on, and the batch go out, rather than the run
 * asking for an empty window again and again (a hang no deadline ends: nothing awaits a timer or a call).
 */
import { describe, expect, it, vi } from "vitest";
import { reprocessTransactions, type ReprocessedChunk, type TransactionRef } from "../../shared/bridge/reprocess.js";
import type * as ProviderErrors from "../../shared/bridge/provider-errors.js";
import { makeRig, txnId } from "./fakes.js";

/** Empty windows a run may ask for before the test calls it a hang (the code asks for none). */
const EMPTY_WINDOWS_ALLOWED = 50;

vi.mock("../../shared/bridge/provider-errors.js", async (importOriginal) => {
  const original = await importOriginal<typeof ProviderErrors>();
  let emptyWindows = 0;
  return {
    ...original,
    // Throws instead of spinning for ever, so a regression fails this test rather than hang its worker.
    mapSingleReads: <T, R>(items: readonly T[], read: (item: T, index: number) => Promise<R>): Promise<R[]> => {
      if (items.length === 0 && ++emptyWindows > EMPTY_WINDOWS_ALLOWED) throw new Error("the re-drive asks for an empty window of reads again and again");
      return original.mapSingleReads(items, read);
    },
  };
});

const PAGE_SIZE_REJECTED = Object.assign(new Error("page_size out of range"), {
  name: "BadRequestError",
  status: 400,
  errors: [{ field: "page_size", code: "OUT_OF_RANGE", message: "too large" }],
});

describe("reprocessTransactions: a read that lowers the page size below the batch in hand", () => {
  it("reads the next window and delivers the batch, every ref told as delivered or missing", async () => {
    const rig = makeRig();
    const found = Array.from({ length: 15 }, () => rig.provider.addTransaction());
    /** Refs to references the provider lists nothing under: read, not found, nothing pushed to the batch. */
    const nowhere = (from: number, count: number): TransactionRef[] =>
      Array.from({ length: count }, (_, i) => ({ id: txnId(1000 + from + i), qashioId: `CTX${String(from + i).padStart(6, "0")}` }));
    // Window 1 (20 refs): 15 found, held as the batch (under the page of 20); window 2 (the 5 left of a page): found
    // nowhere, their reads rejected at 20 a page, so the size drops to 10, under the 15 in hand; then 5 more refs.
    const rejectedAt20 = new Set(nowhere(5, 5).map((ref) => ref.qashioId));
    const refs = [...found.map((t) => ({ id: t.id, qashioId: t.qashio_id })), ...nowhere(0, 5), ...nowhere(5, 5), ...nowhere(10, 5)];
    rig.provider.beforeCall = (call) => {
      if (call.op === "listTransactions" && call.query.page_size === 20 && rejectedAt20.has(call.query.qashio_id ?? "")) throw PAGE_SIZE_REJECTED;
    };
    const chunks: ReprocessedChunk[] = [];
    async function* oneChunk(): AsyncIterable<readonly TransactionRef[]> {
      yield refs;
    }

    const report = await reprocessTransactions(rig.deps, oneChunk(), { pageSize: 20, afterChunk: (chunk) => chunks.push(chunk) });

    expect(report.outcome).toBe("complete");
    expect(chunks).toHaveLength(1);
    expect([...chunks[0]!.delivered].sort()).toEqual(found.map((t) => t.id).sort());
    expect([...chunks[0]!.missing].sort()).toEqual(refs.slice(15).map((r) => r.id).sort());
    expect(rig.publisher.ofType("transaction.created")).toHaveLength(15);
    // Window 2 read at 20, rejected, then at 10; the last five at 10 only, each once.
    const readAt10 = rig.provider.calls.flatMap((c) => (c.op === "listTransactions" && c.query.page_size === 10 ? [c.query.qashio_id] : []));
    expect(readAt10.sort()).toEqual(refs.slice(20).map((r) => r.qashioId).sort());
    expect(rig.provider.pending()).toEqual([]);
  });
});
