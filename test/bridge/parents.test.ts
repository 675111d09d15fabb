/**
 * Refund parent cases found by hand mutation testing of parents.ts: each pins a behaviour no other test held.
 */
import { describe, expect, it } from "vitest";
import { aliasSnapshot, ParentLookup, transactionAliasKey } from "../../shared/bridge/parents.js";
import type { Snapshot, SnapshotKey } from "../../shared/bridge/ports.js";
import type { ProviderPage, TransactionListQuery } from "../../shared/bridge/provider.js";
import { pollTransactions } from "../../shared/bridge/transactions.js";
import { isReadByQashioId, makeRig, txnId } from "./fakes.js";

describe("refund parents", () => {
  it("takes a parent a read finds whose id is no UUID when the client accepted its row: only a rejected row needs a transaction UUID", async () => {
    const rig = makeRig();
    const parent = rig.provider.addTransaction({ id: "legacy-parent-7" });
    // Acknowledged before aliases were written: only a provider read finds it.
    parent.client_sync_status = "synced";
    const refund = rig.provider.addTransaction({ transaction_category: "refund", parent_qashio_id: parent.qashio_id });

    await pollTransactions(rig.deps);
    const event = rig.publisher.events.find((e) => e.detail.subject.id === refund.id);
    expect(event?.detail.data.parent).toEqual({ id: "legacy-parent-7", qashio_id: parent.qashio_id });
  });

  it("warns of no ambiguous parent when another refund of the page names it by its own parent_id, and gives both refunds that parent", async () => {
    const rig = makeRig();
    const parent = rig.provider.addTransaction();
    // A second transaction listed under the parent's reference: the page alone cannot tell which one a refund means.
    rig.provider.addTransaction({ qashio_id: parent.qashio_id });
    const named = rig.provider.addTransaction({ transaction_category: "refund", parent_qashio_id: parent.qashio_id, parent_id: parent.id });
    const unnamed = rig.provider.addTransaction({ transaction_category: "refund", parent_qashio_id: parent.qashio_id });

    await pollTransactions(rig.deps);
    const parentOf = (id: string) => rig.publisher.events.find((e) => e.detail.subject.id === id)?.detail.data.parent;
    expect(parentOf(named.id)).toEqual({ id: parent.id, qashio_id: parent.qashio_id });
    expect(parentOf(unnamed.id)).toEqual({ id: parent.id, qashio_id: parent.qashio_id });
    expect(rig.logger.lines.filter((l) => l.message.startsWith("provider lists more than one transaction for the parent reference"))).toEqual([]);
  });

  it("gives no parent to a refund whose parent is not found when a refund of the page naming itself by parent_id names the same reference", async () => {
    const rig = makeRig();
    const self = rig.provider.addTransaction({ transaction_category: "refund", parent_qashio_id: "CT-gone" });
    self.parent_id = self.id;
    const sibling = rig.provider.addTransaction({ transaction_category: "refund", parent_qashio_id: "CT-gone" });

    await pollTransactions(rig.deps);
    // The self-reference is dropped before lookup: its own id must not stand in for the reference's parent.
    expect(rig.publisher.events.map((e) => [e.detail.subject.id, e.detail.data.parent])).toEqual([
      [self.id, undefined],
      [sibling.id, undefined],
    ]);
    expect(rig.logger.lines.filter((l) => l.message === "parent transaction not found")).toHaveLength(1);
  });

  it("resolves a refund's parent from its page without a provider read when the parent is listed unchanged, its alias lost", async () => {
    const rig = makeRig();
    const parent = rig.provider.addTransaction();
    await pollTransactions(rig.deps);
    // A write cut short lost the alias; the parent is listed again as it was delivered (nothing to publish for it).
    rig.snapshots.data.delete(transactionAliasKey(parent.qashio_id));
    parent.client_sync_status = "not_synced";
    const refund = rig.provider.addTransaction({ transaction_category: "refund", parent_qashio_id: parent.qashio_id });

    await pollTransactions(rig.deps);
    const event = rig.publisher.events.find((e) => e.detail.subject.id === refund.id);
    expect(event?.detail.data.parent).toEqual({ id: parent.id, qashio_id: parent.qashio_id });
    expect(rig.provider.calls.filter(isReadByQashioId)).toEqual([]);
  });

  it("names a parent read the provider answered without its exact qashio_id filter as such, not as a reference listing several transactions", async () => {
    const rig = makeRig();
    for (let n = 0; n < 3; n++) rig.provider.addTransaction().client_sync_status = "synced";
    const refund = rig.provider.addTransaction({ transaction_category: "refund", parent_qashio_id: "CT-unknown" });
    // The read by qashio_id answers the whole list (total_records 4), its first row another transaction.
    const list = rig.provider.listTransactions.bind(rig.provider);
    rig.provider.listTransactions = (query) => list(query.qashio_id === undefined ? query : { page: query.page, page_size: query.page_size });

    await pollTransactions(rig.deps);
    expect(rig.publisher.events.find((e) => e.detail.subject.id === refund.id)?.detail.data.parent).toBeUndefined();
    const warnings = rig.logger.lines.filter((l) => l.level === "warn").map((l) => [l.message, l.attributes]);
    expect(warnings).toEqual([
      ["provider did not apply the exact qashio_id filter to the parent read (spec §8.2); published without parent", { parentQashioId: "CT-unknown" }],
    ]);
  });
});

describe("ParentLookup", () => {
  const NOW = Date.parse("2026-01-01T00:00:00Z");

  /**
   * A lookup over a store holding `stored` and a provider listing `listed` (qashio_id to id), with the keys of each
   * store read and the queries of its provider reads.
   */
  function lookupOver(stored: ReadonlyMap<string, string> = new Map(), listed: ReadonlyMap<string, string> = new Map()) {
    const storeReads: SnapshotKey[][] = [];
    const reads: TransactionListQuery[] = [];
    const lookup = new ParentLookup({
      logger: { warn: () => undefined },
      clock: { now: () => NOW },
      readSnapshots: async (_step, keys): Promise<Map<SnapshotKey, Snapshot>> => {
        storeReads.push([...keys]);
        const found = [...stored].filter(([qid]) => keys.includes(transactionAliasKey(qid)));
        return new Map(found.map(([qid, id]) => [transactionAliasKey(qid), aliasSnapshot(id, qid, "2025-01-01T00:00:00.000Z")]));
      },
      listTransactions: async (_step, query): Promise<ProviderPage> => {
        reads.push(query);
        const id = listed.get(query.qashio_id as string);
        return { data: id ? [{ id, qashio_id: query.qashio_id }] : [] };
      },
    });
    const refundOf = (n: number) => ({ id: txnId(n), parentQashioId: `CT-gone-${n}` });
    const resolveOne = (n: number) => lookup.resolve([refundOf(n)], [refundOf(n)]);
    return { lookup, storeReads, reads, resolveOne };
  }

  it("looks a batch's parents up in the store in one read naming each once, reading only those the store lacks, and dates the aliases it learns now", async () => {
    const { lookup, storeReads, reads } = lookupOver(new Map([["CT-1", txnId(901)]]), new Map([["CT-2", txnId(902)]]));
    const refunds = [
      { id: txnId(1), parentQashioId: "CT-1" },
      { id: txnId(2), parentQashioId: "CT-2" },
      { id: txnId(3), parentQashioId: "CT-2" },
    ];
    const { parents, aliases } = await lookup.resolve(refunds, refunds);
    expect(parents).toEqual(new Map([["CT-1", txnId(901)], ["CT-2", txnId(902)]]));
    expect(storeReads).toEqual([[transactionAliasKey("CT-1"), transactionAliasKey("CT-2")]]);
    expect(reads.map((q) => q.qashio_id)).toEqual(["CT-2"]);
    expect(aliases).toEqual([aliasSnapshot(txnId(902), "CT-2", new Date(NOW).toISOString())]);
    expect(aliases.map((a) => [a.key, a.object, a.updatedAt])).toEqual([[transactionAliasKey("CT-2"), { id: txnId(902), qashio_id: "CT-2" }, "2026-01-01T00:00:00.000Z"]]);
  });

  it("reads a parent not found with one row asked for, and not again in the run", async () => {
    const { reads, resolveOne } = lookupOver();
    expect((await resolveOne(1)).parents.size).toBe(0);
    await resolveOne(1);
    expect(reads).toEqual([{ qashio_id: "CT-gone-1", page: 1, page_size: 1 }]);
  });

  it("says a parent row the client's schema refused for an id that is no transaction UUID is invalid provider data, naming the field, not the row", async () => {
    const warnings: [string, unknown][] = [];
    const reads: TransactionListQuery[] = [];
    const lookup = new ParentLookup({
      logger: { warn: (message, attributes) => void warnings.push([message, attributes]) },
      clock: { now: () => NOW },
      readSnapshots: async () => new Map(),
      listTransactions: async (_step, query): Promise<ProviderPage> => {
        reads.push(query);
        // As QashioClient hands a row its schema rejected: raw, with the issue's path and message.
        const raw = { id: "legacy-parent-7", qashio_id: query.qashio_id, cardholder_name: "Jane Holder" };
        return { data: [], invalid: [{ index: 0, raw, issues: [{ path: "id", message: "Invalid UUID" }] }] };
      },
    });
    const refund = { id: txnId(1), parentQashioId: "CT-7" };

    expect((await lookup.resolve([refund], [refund])).parents.size).toBe(0);
    await lookup.resolve([refund], [refund]);
    expect(warnings).toEqual([
      ["provider answered the parent read with a row refused as invalid provider data (its id is no transaction UUID); published without parent", { parentQashioId: "CT-7", field: "id" }],
    ]);
    expect(JSON.stringify(warnings)).not.toMatch(/Jane Holder|legacy-parent-7/);
    expect(reads).toHaveLength(1);
  });

  it("forgets the parents not found once it remembers 1,000 of them, so a backlog of unknown parents cannot grow its memory", async () => {
    const { reads, resolveOne } = lookupOver();
    for (let n = 0; n < 1_000; n++) await resolveOne(n);
    // All 1,000 still remembered: the first is not read again.
    await resolveOne(0);
    expect(reads).toHaveLength(1_000);
    await resolveOne(1_000);
    expect(reads).toHaveLength(1_001);
    // The 1,001st started the set again: the first is read again, the last is still remembered.
    await resolveOne(0);
    await resolveOne(1_000);
    expect(reads.slice(1_001).map((q) => q.qashio_id)).toEqual(["CT-gone-0"]);
  });

  it("takes no parent from a read listing two rows under the reference when its total_records counts one: the rows say more than one", async () => {
    const warnings: [string, unknown][] = [];
    const lookup = new ParentLookup({
      logger: { warn: (message, attributes) => void warnings.push([message, attributes]) },
      clock: { now: () => NOW },
      readSnapshots: async () => new Map(),
      // The provider contradicting itself: its count says one, its page lists two.
      listTransactions: async (_step, query): Promise<ProviderPage> => ({
        data: [
          { id: txnId(901), qashio_id: query.qashio_id },
          { id: txnId(902), qashio_id: query.qashio_id },
        ],
        pagination: { total_records: 1 },
      }),
    });
    const refund = { id: txnId(1), parentQashioId: "CT-2" };

    const { parents, aliases } = await lookup.resolve([refund], [refund]);
    expect(parents.size).toBe(0);
    expect(aliases).toEqual([]);
    expect(warnings).toEqual([["provider lists more than one transaction for the parent reference; published without parent", { parentQashioId: "CT-2", listed: 2 }]]);
  });
});
