import { describe, expect, it } from "vitest";
import { TransactionStore } from "../../sandbox/data/transaction-store.js";
import type { ClientSyncStatus, TransactionRecord } from "../../sandbox/data/model.js";

function tx(i: number, status: ClientSyncStatus, parent: string | null = null): TransactionRecord {
  return {
    id: `id-${i}`,
    qashio_id: `CT${i}`,
    parent_id: null,
    parent_qashio_id: parent,
    company_id: "c",
    client_sync_status: status,
    transaction_category: i % 7 === 0 ? "refund" : "purchase",
    transaction_time: "",
    created_at: "",
    updated_at: "",
    modified_date: "",
    billing_amount: 0,
    clearing_amount: 0,
    transaction_fee_amount: 0,
    clearing_fee: 0,
  };
}

/** Status of the i-th record, spread so chunks hold mixed statuses. */
const statusOf = (i: number): ClientSyncStatus => (i % 3 === 0 ? "synced" : i % 11 === 0 ? "outdated" : "not_synced");

function filled(n: number): TransactionStore {
  const store = new TransactionStore();
  for (let i = 0; i < n; i++) store.add(tx(i, statusOf(i), i % 50 === 1 ? "CT0" : null));
  return store;
}

/** The reference answer: filter and slice the newest-first array. */
function expected(n: number, keep: (i: number) => boolean, offset: number, limit: number): string[] {
  const ids: string[] = [];
  for (let i = n - 1; i >= 0; i--) if (keep(i)) ids.push(`id-${i}`);
  return ids.slice(offset, offset + limit);
}

/**
 * A purchase of 100.00 on card-1 still to read, its child (a reversal unless told) of 40.00 acknowledged, and two
 * newer acknowledged ones.
 */
function reversedInPart(child = "reversal"): { s: TransactionStore; purchase: TransactionRecord } {
  const s = new TransactionStore();
  const at = { card_external_id: "card-1", transaction_time: "2025-03-10T10:00:00.000Z" };
  const purchase = { ...tx(0, "not_synced"), ...at, transaction_category: "purchase", transaction_amount: 100, billing_amount: 100 };
  s.add(purchase);
  s.add({ ...tx(1, "synced", "CT0"), ...at, transaction_category: child, transaction_amount: 40, billing_amount: 40 });
  s.add(tx(2, "synced"));
  s.add(tx(3, "synced"));
  return { s, purchase };
}

/** March 2025, the month reversedInPart's transactions are dated in, as net spend's window. */
const march = [Date.UTC(2025, 2, 1), Date.UTC(2025, 3, 1)] as const;

describe("TransactionStore", () => {
  const n = 5_000;
  const store = filled(n);

  it.each([0, 1, 99, 511, 512, 1_000, 3_300, 3_400])("pages newest first on client_sync_status alone at offset %i", (offset) => {
    for (const status of ["not_synced", "synced", "outdated"] as const) {
      const page = store.page({ clientSyncStatus: status }, offset, 100);
      expect(page.items.map((t) => t.id)).toEqual(expected(n, (i) => statusOf(i) === status, offset, 100));
      expect(page.total).toBe(expected(n, (i) => statusOf(i) === status, 0, n).length);
    }
  });

  it("pages without a filter, with a predicate, on qashio_id and on parent_qashio_id", () => {
    expect(store.page({}, 4_950, 100).items.map((t) => t.id)).toEqual(expected(n, () => true, 4_950, 100));
    const refunds = store.page({ clientSyncStatus: "not_synced", predicate: (t) => t.transaction_category === "refund" }, 10, 20);
    expect(refunds.items.map((t) => t.id)).toEqual(expected(n, (i) => statusOf(i) === "not_synced" && i % 7 === 0, 10, 20));
    expect(store.page({ qashioId: "CT42" }, 0, 10).items.map((t) => t.id)).toEqual(["id-42"]);
    expect(store.page({ qashioId: "CT42", clientSyncStatus: "not_synced" }, 0, 10).total).toBe(0);
    const children = store.page({ parentQashioId: "CT0" }, 0, 1_000);
    expect(children.items.map((t) => t.id)).toEqual(expected(n, (i) => i % 50 === 1, 0, 1_000));
    const syncedChildren = store.page({ parentQashioId: "CT0", clientSyncStatus: "synced" }, 0, 1_000);
    expect(syncedChildren.items.map((t) => t.id)).toEqual(expected(n, (i) => i % 50 === 1 && statusOf(i) === "synced", 0, 1_000));
    expect(syncedChildren.total).toBeLessThan(children.total);
  });

  it("keeps counts and pages right as statuses move", () => {
    const local = filled(2_000);
    const page = local.page({ clientSyncStatus: "not_synced" }, 0, 100);
    for (const t of page.items) local.setSyncStatus(t, "synced");
    expect(local.countByStatus("not_synced")).toBe(page.total - 100);
    const next = local.page({ clientSyncStatus: "not_synced" }, 0, 100);
    expect(next.items.some((t) => page.items.includes(t))).toBe(false);
    expect(next.total).toBe(page.total - 100);
    local.setSyncStatus(page.items[0] as TransactionRecord, "outdated");
    expect(local.page({ clientSyncStatus: "outdated" }, 0, 1).items[0]?.id).toBe(page.items[0]?.id);
  });

  it("pages each status at offsets across chunks, with and without a predicate, after statuses moved", () => {
    const local = filled(2_000);
    // Acknowledge the newest half of the newest chunk's not_synced ones (that chunk's count must shrink, or a page
    // further on skips it by too many), and leave one outdated transaction alone in its chunk.
    const newestChunk = local.all().filter((t, i) => i >= 1_536 && t.client_sync_status === "not_synced");
    for (const t of newestChunk.slice(Math.floor(newestChunk.length / 2))) local.setSyncStatus(t, "synced");
    for (const t of local.all()) if (t.client_sync_status === "outdated") local.setSyncStatus(t, "synced");
    local.setSyncStatus(local.get("id-700") as TransactionRecord, "outdated");
    const reference = (status: ClientSyncStatus, offset: number, limit: number) =>
      [...local.all()].reverse().filter((t) => t.client_sync_status === status).slice(offset, offset + limit).map((t) => t.id);
    for (const status of ["not_synced", "synced", "outdated"] as const) {
      for (let offset = 0; offset <= local.countByStatus(status); offset += 97) {
        expect(local.page({ clientSyncStatus: status }, offset, 50).items.map((t) => t.id)).toEqual(reference(status, offset, 50));
        expect(local.page({ clientSyncStatus: status, predicate: () => true }, offset, 50).items.map((t) => t.id)).toEqual(reference(status, offset, 50));
      }
    }
    expect(local.page({ clientSyncStatus: "outdated", predicate: () => true }, 0, 10).items.map((t) => t.id)).toEqual(["id-700"]);
  });

  it("pages the children of a transaction by offset and counts them all, and takes qashio_id and parent_qashio_id together", () => {
    const children = expected(n, (i) => i % 50 === 1, 0, n);
    const page = store.page({ parentQashioId: "CT0" }, 2, 3);
    expect(page.items.map((t) => t.id)).toEqual(children.slice(2, 5));
    expect(page.total).toBe(children.length);
    expect(store.page({ qashioId: "CT51", parentQashioId: "CT0" }, 0, 10).items.map((t) => t.id)).toEqual(["id-51"]);
    expect(store.page({ qashioId: "CT42", parentQashioId: "CT0" }, 0, 10).total).toBe(0);
  });

  it("counts every match of a filtered page in its total, not only those up to the page's end", () => {
    const page = store.page({ predicate: (t) => t.transaction_category === "refund" }, 0, 5);
    expect(page.items.map((t) => t.id)).toEqual(expected(n, (i) => i % 7 === 0, 0, 5));
    expect(page.total).toBe(expected(n, (i) => i % 7 === 0, 0, n).length);
  });

  it("lists a filtered page without client_sync_status over chunks that hold no acknowledged transaction", () => {
    const local = new TransactionStore();
    for (let i = 0; i < 600; i++) local.add(tx(i, "not_synced"));
    const page = local.page({ predicate: (t) => t.transaction_category === "purchase" }, 0, 3);
    expect(page.items.map((t) => t.id)).toEqual(["id-599", "id-598", "id-597"]);
    expect(page.total).toBe(600 - Math.ceil(600 / 7));
  });

  it("answers a sync-status page of a 100k store without visiting every record", () => {
    const big = new TransactionStore();
    let visited = 0;
    for (let i = 0; i < 100_000; i++) {
      const record = tx(i, "not_synced");
      big.add(
        new Proxy(record, {
          get(target, key, receiver) {
            if (key === "client_sync_status") visited++;
            return Reflect.get(target, key, receiver) as unknown;
          },
        }),
      );
    }
    visited = 0;
    const page = big.page({ clientSyncStatus: "not_synced" }, 50_000, 100);
    expect(page.items[0]?.id).toBe("id-49999");
    expect(visited).toBeLessThan(2_000);
  });
});

describe("TransactionStore.forgetBeyondNewest (the sandbox's opt-in retention)", () => {
  /** 0..n-1 in creation order, with the given status per index; `parents` maps a child index to its parent's. */
  function store(statuses: readonly ClientSyncStatus[], parents: Readonly<Record<number, number>> = {}): TransactionStore {
    const s = new TransactionStore();
    statuses.forEach((status, i) => s.add(tx(i, status, parents[i] === undefined ? null : `CT${parents[i]}`)));
    return s;
  }
  const held = (s: TransactionStore) => s.all().map((t) => t.id);
  /** The ids forgetBeyondNewest(keep) answers it forgot, newest first. */
  const forgotten = (s: TransactionStore, keep: number) => s.forgetBeyondNewest(keep).map((t) => t.id);

  it("forgets nothing while at most `keep` are held", () => {
    const s = store(["synced", "synced", "synced"]);
    expect(forgotten(s, 3)).toEqual([]);
    expect(held(s)).toEqual(["id-0", "id-1", "id-2"]);
  });

  it("forgets acknowledged ones older than the newest `keep`, never one still to read (not_synced, outdated)", () => {
    const s = store(["synced", "not_synced", "outdated", "synced", "synced", "synced", "not_synced"]);
    expect(forgotten(s, 2)).toEqual(["id-4", "id-3", "id-0"]);
    expect(held(s)).toEqual(["id-1", "id-2", "id-5", "id-6"]);
    expect(s.get("id-0")).toBeUndefined();
    expect(s.getByQashioId("CT3")).toBeUndefined();
    expect([s.countByStatus("not_synced"), s.countByStatus("outdated"), s.countByStatus("synced")]).toEqual([2, 1, 1]);
    expect(s.page({ clientSyncStatus: "not_synced" }, 0, 10).items.map((t) => t.id)).toEqual(["id-6", "id-1"]);
    expect(s.page({}, 0, 10).total).toBe(4);
  });

  it("keeps a purchase a held refund names, and forgets it with its last held refund", () => {
    // 1 and 3 are refunds of 0; 3 is among the newest two.
    const s = store(["synced", "synced", "synced", "synced", "synced"], { 1: 0, 3: 0 });
    expect(forgotten(s, 2)).toEqual(["id-2", "id-1"]);
    expect(held(s)).toEqual(["id-0", "id-3", "id-4"]);
    expect(s.page({ parentQashioId: "CT0" }, 0, 10).items.map((t) => t.id)).toEqual(["id-3"]);
    s.add(tx(5, "synced"));
    s.add(tx(6, "synced"));
    expect(forgotten(s, 2)).toEqual(["id-4", "id-3", "id-0"]);
    expect(held(s)).toEqual(["id-5", "id-6"]);
    expect(s.page({ parentQashioId: "CT0" }, 0, 10).total).toBe(0);
  });

  it("keeps what every forgotten refund of a held purchase gave back, lists its children oldest first, and drops that sum when the purchase goes", () => {
    const s = new TransactionStore();
    const at = { card_external_id: "card-1", transaction_time: "2025-03-10T10:00:00.000Z" };
    s.add({ ...tx(0, "not_synced"), ...at, transaction_category: "purchase", transaction_amount: 100, billing_amount: 100 });
    s.add({ ...tx(1, "synced", "CT0"), ...at, transaction_category: "refund", transaction_amount: 10, billing_amount: 10 });
    s.add({ ...tx(2, "synced", "CT0"), ...at, transaction_category: "refund", transaction_amount: 15, billing_amount: 15 });
    s.add(tx(3, "synced"));
    s.add(tx(4, "synced"));
    expect(s.childrenOf("CT0").map((t) => t.id)).toEqual(["id-1", "id-2"]);
    expect(forgotten(s, 2)).toEqual(["id-2", "id-1"]);
    // Both refunds, not only the last forgotten; refunds are no reversals.
    expect([s.forgottenReturnsOf("CT0"), s.forgottenReversalsOf("CT0")]).toEqual([25, 0]);
    s.setSyncStatus(s.get("id-0")!, "synced");
    s.add(tx(5, "synced"));
    s.add(tx(6, "synced"));
    expect(forgotten(s, 2)).toEqual(["id-4", "id-3", "id-0"]);
    expect(s.forgottenReturnsOf("CT0")).toBe(0);
  });

  it("pages each status right after forgetting shrank the store to fewer chunks", () => {
    // 0..9 and 512..599 still to read, the rest of the first chunk acknowledged: forgetting leaves one chunk.
    const s = new TransactionStore();
    for (let i = 0; i < 600; i++) s.add(tx(i, i < 10 || i >= 512 ? "not_synced" : "synced"));
    s.forgetBeyondNewest(88);
    const reference = [...s.all()].reverse().filter((t) => t.client_sync_status === "not_synced").map((t) => t.id);
    expect(reference).toHaveLength(98);
    expect(s.page({ clientSyncStatus: "not_synced" }, 90, 5).items.map((t) => t.id)).toEqual(reference.slice(90, 95));
  });

  it("keeps a held purchase's spend less what its forgotten reversal reversed when the purchase is counted again (spec-gaps, Spend limits)", () => {
    const { s, purchase } = reversedInPart();
    expect(s.spend.consumed("card-1", -Infinity)).toEqual({ cents: 6_000, count: 1 });
    expect(forgotten(s, 2)).toEqual(["id-1"]);
    // A control PATCH recounts it: the reversal it no longer holds still reversed 40.00 of it.
    s.changed(purchase);
    expect(s.spend.consumed("card-1", -Infinity)).toEqual({ cents: 6_000, count: 1 });
  });

  it("keeps what a forgotten purchase consumed: forgetting gives no spend limit room back (spec-gaps, Spend limits)", () => {
    const s = new TransactionStore();
    s.add({ ...tx(1, "synced"), card_external_id: "card-1", transaction_time: "2025-03-10T10:00:00.000Z", transaction_category: "purchase", transaction_amount: 100, billing_amount: 100 });
    s.add(tx(2, "synced"));
    expect(forgotten(s, 1)).toEqual(["id-1"]);
    expect(s.spend.consumed("card-1", -Infinity)).toEqual({ cents: 10_000, count: 1 });
  });

  it("keeps a held purchase's whole spend when a forgotten refund, not a reversal, gave some back and it is counted again (§4.9 spend limit; spec-gaps, Spend limits)", () => {
    const { s, purchase } = reversedInPart("refund");
    expect(s.spend.consumed("card-1", -Infinity)).toEqual({ cents: 10_000, count: 1 });
    expect(forgotten(s, 2)).toEqual(["id-1"]);
    s.changed(purchase);
    expect(s.spend.consumed("card-1", -Infinity)).toEqual({ cents: 10_000, count: 1 });
  });

  it("leaves a forgotten transaction out of the company's net spend (spec-gaps, Company summary)", () => {
    const { s } = reversedInPart();
    expect(s.netSpend.between(...march)).toBe(60);
    expect(forgotten(s, 2)).toEqual(["id-1"]);
    expect(s.netSpend.between(...march)).toBe(100);
  });

  it("counts no change of a transaction it forgot, and refuses to move the status of one it does not hold", () => {
    const { s } = reversedInPart();
    const reversal = s.get("id-1")!;
    expect(forgotten(s, 2)).toEqual(["id-1"]);
    // A PATCH of a copy a caller kept: no longer this store's, so neither spend nor net spend follows it.
    reversal.transaction_amount = 100;
    s.changed(reversal);
    expect(s.spend.consumed("card-1", -Infinity)).toEqual({ cents: 6_000, count: 1 });
    expect(s.netSpend.between(...march)).toBe(100);
    expect(() => s.setSyncStatus(reversal, "outdated")).toThrow(RangeError);
    expect([s.countByStatus("synced"), s.countByStatus("outdated")]).toEqual([2, 0]);
  });

  it("leaves the store working: statuses still move with right counts, and new ones are appended after the held", () => {
    const s = store(["synced", "synced", "not_synced", "synced", "not_synced"]);
    s.forgetBeyondNewest(1);
    const [oldest] = s.page({ clientSyncStatus: "not_synced" }, 1, 1).items;
    s.setSyncStatus(oldest as TransactionRecord, "synced");
    expect(s.countByStatus("synced")).toBe(1);
    expect(s.countByStatus("not_synced")).toBe(1);
    s.add(tx(9, "not_synced"));
    expect(s.newest()?.id).toBe("id-9");
    expect(s.page({ clientSyncStatus: "not_synced" }, 0, 10).items.map((t) => t.id)).toEqual(["id-9", "id-4"]);
  });
});

describe("TransactionStore spend as a control PATCH changes a child", () => {
  it("counts a purchase reversed beyond its amount as nothing spent, never less (§4.9 spend limit; spec-gaps, Spend limits)", () => {
    const { s } = reversedInPart();
    const reversal = s.get("id-1")!;
    reversal.transaction_amount = 150;
    s.changed(reversal);
    expect(s.spend.consumed("card-1", -Infinity)).toEqual({ cents: 0, count: 0 });
  });

  it("takes a refund off the company's net spend at its billing amount, not with a fee it was given (§4.8; spec-gaps, Company summary)", () => {
    const { s } = reversedInPart("refund");
    const refund = s.get("id-1")!;
    refund.transaction_fee_amount = 2;
    s.changed(refund);
    expect(s.netSpend.between(...march)).toBe(60);
  });

  it("counts nothing of a purchase a control PATCH made a card loading, however often it changes again (spec-gaps, Company summary and Spend limits)", () => {
    const s = new TransactionStore();
    const purchase: TransactionRecord = { ...tx(0, "synced"), card_external_id: "card-1", transaction_time: "2025-03-10T10:00:00.000Z", transaction_category: "purchase", transaction_amount: 100, billing_amount: 100 };
    s.add(purchase);
    expect([s.netSpend.between(...march), s.spend.consumed("card-1", -Infinity)]).toEqual([100, { cents: 10_000, count: 1 }]);
    purchase.transaction_category = "card_loading";
    s.changed(purchase);
    // Changed again (its memo), still no spend: what it counted is taken back once, not again.
    purchase.memo = "loaded by the dashboard";
    s.changed(purchase);
    expect([s.netSpend.between(...march), s.spend.consumed("card-1", -Infinity)]).toEqual([0, { cents: 0, count: 0 }]);
  });
});
