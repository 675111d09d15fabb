import { describe, expect, it } from "vitest";
import { MERCHANTS } from "../../sandbox/data/catalog.js";
import { seedCompanies } from "../../sandbox/data/seed.js";
import { TransactionFactory, canSpendNow, leftToReturn } from "../../sandbox/data/transactions.js";
import { TransactionStore } from "../../sandbox/data/transaction-store.js";
import type { CompanyData, TransactionRecord } from "../../sandbox/data/model.js";
import { consumedOf } from "../../sandbox/data/spend-limits.js";
import { Prng, round2 } from "../../sandbox/prng.js";
import { fillAccounts } from "./helpers.js";

const NOW = Date.parse("2025-03-15T12:00:00.000Z");

function firstCompany(seed: number): CompanyData {
  const [data] = seedCompanies({ seed, nowMs: NOW });
  if (data === undefined) throw new Error("no company seeded");
  return data;
}

/** A transaction made now, as the control surface makes one (live spend, not seeded history). */
const MADE_NOW = { timeMs: NOW, createdAt: new Date(NOW).toISOString(), syncStatus: "not_synced", nowMs: NOW, live: true } as const;

/** Money back made now (control surface) for `parent`, stored as the sandbox stores it. */
function giveBack(data: CompanyData, parent: TransactionRecord, category: "refund" | "reversal"): TransactionRecord | undefined {
  const tx = data.factory.create({ category, parent, ...MADE_NOW });
  if (tx !== undefined) data.transactions.add(tx);
  return tx;
}

describe("leftToReturn", () => {
  it("is 0, not below, for a purchase whose money back came to more than it took (a provider-side change of an amount)", () => {
    const data = firstCompany(3);
    const purchase = data.transactions.all().find((t) => t.transaction_category === "purchase" && leftToReturn(t, data) > 0);
    if (purchase === undefined) throw new Error("no purchase with something left to give back");
    const refund = giveBack(data, purchase, "refund");
    if (refund === undefined) throw new Error("no refund made");
    refund.transaction_amount = Number(purchase.transaction_amount) + 50;
    expect(leftToReturn(purchase, data)).toBe(0);
  });
});

describe("seeded money back", () => {
  it.each([1, 2, 7])("with seed %i names one of the 20 most recent purchases made before it as the purchase it gives back", (seed) => {
    let checked = 0;
    // A backlog long enough for many purchases to come before most of its refunds and reversals.
    for (const data of seedCompanies({ seed, nowMs: NOW, backlog: 300 })) {
      const purchasesSoFar: TransactionRecord[] = [];
      for (const tx of data.transactions.all()) {
        if (tx.transaction_category === "purchase") purchasesSoFar.push(tx);
        if (tx.parent_qashio_id === null) continue;
        const recent = purchasesSoFar.slice(-20).map((p) => p.qashio_id);
        expect(recent, `${tx.qashio_id} names ${tx.parent_qashio_id}`).toContain(tx.parent_qashio_id);
        if (purchasesSoFar.length > 20) checked++;
      }
    }
    expect(checked).toBeGreaterThan(10);
  });
});

describe("money back asked for with no purchase to give back", () => {
  it.each(["refund", "reversal"] as const)("makes a purchase instead of a %s naming no purchase", (category) => {
    const seeded = firstCompany(5);
    // The same company with no transactions yet: there is no purchase a refund or reversal could name.
    const data: CompanyData = { ...seeded, transactions: new TransactionStore() };
    const factory = new TransactionFactory(data, new Prng(9), 1, seeded.users[0]!);
    const tx = factory.create({ category, ...MADE_NOW });
    expect(tx).toMatchObject({ transaction_category: "purchase", parent_qashio_id: null, transaction_type: "debit" });
  });
});

describe("a transaction naming a parent purchase", () => {
  it.each(["purchase", "cash_withdrawal", "card_loading"] as const)("is money back, a refund, even when %s is asked for (§1 Refund matching: a child is a refund or reversal)", (category) => {
    const data = firstCompany(3);
    const purchase = data.transactions.all().find((t) => t.transaction_category === "purchase" && leftToReturn(t, data) > 0);
    if (purchase === undefined) throw new Error("no purchase with something left to give back");
    const tx = data.factory.create({ category, parent: purchase, ...MADE_NOW });
    expect(tx).toMatchObject({ transaction_category: "refund", parent_qashio_id: purchase.qashio_id, transaction_type: "credit" });
  });
});

describe("seeded purchases", () => {
  it.each([1, 7, 42])("with seed %i itemise what their merchant sells, one line each, and tag some with a Project and some with a cost_centre", (seed) => {
    for (const data of seedCompanies({ seed, nowMs: NOW })) {
      const labels = new Set<string>();
      for (const tx of data.transactions.all().filter((t) => t.transaction_category === "purchase")) {
        const merchant = MERCHANTS.find((m) => m.name === tx.merchant_name);
        const descriptions = (tx.line_items as { description: string }[]).map((item) => item.description);
        // The merchant's own line items, none twice: no stand-in for one it does not sell.
        expect([tx.qashio_id, descriptions.every((d) => merchant?.lineItems.includes(d)), new Set(descriptions).size]).toEqual([tx.qashio_id, true, descriptions.length]);
        for (const segment of tx.segments as { label: string }[]) labels.add(segment.label);
      }
      // Location and Department on every one (seed.test.ts), Project and cost_centre on some.
      expect([...labels].sort()).toEqual(["Department", "Location", "Project", "cost_centre"]);
    }
  });

  // Details a provider's purchase carries and nothing else does (the spec shows the fields, not when they are set).
  it.each([1, 7, 42])("with seed %i keeps line items, receipts and a PO number to purchases, a TRN to merchants at home, and exclusion from sync to transfers", (seed) => {
    const seen = { items: 0, receipts: 0, trn: 0, excluded: 0 };
    for (const data of seedCompanies({ seed, nowMs: NOW })) {
      for (const tx of data.transactions.all()) {
        const purchase = tx.transaction_category === "purchase";
        const items = (tx.line_items as unknown[]).length;
        const receipts = (tx.receipts as unknown[]).length;
        const po = tx.purchase_order_number !== null;
        expect([tx.qashio_id, items > 0, receipts > 0 && !purchase, po && !purchase]).toEqual([tx.qashio_id, purchase, false, false]);
        const home = tx.mcc_code !== null && tx.merchant_country === data.company.country && tx.transaction_category !== "cash_withdrawal";
        expect([tx.qashio_id, tx.vendor_trn !== null]).toEqual([tx.qashio_id, home]);
        if (tx.exclude_from_sync === true) expect([tx.qashio_id, tx.transaction_category]).toEqual([tx.qashio_id, "account_transfer"]);
        seen.items += items > 0 ? 1 : 0;
        seen.receipts += receipts > 0 ? 1 : 0;
        seen.trn += tx.vendor_trn !== null ? 1 : 0;
        seen.excluded += tx.exclude_from_sync === true ? 1 : 0;
      }
    }
    expect(Object.values(seen).every((n) => n > 0), JSON.stringify(seen)).toBe(true);
  });
});

describe("seeded sync state", () => {
  it.each([1, 7, 42])("with seed %i shows what the client acknowledged as approved and in the ERP, and sync errors on exactly a failed or unvalidated ERP sync", (seed) => {
    const acknowledged = new Set<string>();
    const errored = new Set<string>();
    for (const data of seedCompanies({ seed, nowMs: NOW })) {
      for (const tx of data.transactions.all()) {
        const errors = (tx.sync_errors as unknown[]).length;
        expect([tx.qashio_id, errors > 0]).toEqual([tx.qashio_id, tx.erp_sync_status === "failed" || tx.erp_sync_status === "not_validated"]);
        if (errors > 0) errored.add(String(tx.erp_sync_status));
        if (tx.client_sync_status === "not_synced") continue;
        acknowledged.add(tx.client_sync_status);
        const state = [tx.erp_sync_status, tx.transaction_status, ["approved", "admin_approved"].includes(String(tx.approval_status))];
        expect([tx.qashio_id, ...state]).toEqual([tx.qashio_id, "success", "synced", true]);
      }
    }
    expect([[...acknowledged].sort(), [...errored].sort()]).toEqual([["outdated", "synced"], ["failed", "not_validated"]]);
  });
});

describe("seeded tax rates", () => {
  it.each([1, 7, 42])("with seed %i rates a cash withdrawal and a cashback Out of Scope, and a card loading none", (seed) => {
    const rated = new Map<string, Set<string | null>>();
    for (const data of seedCompanies({ seed, nowMs: NOW })) {
      for (const tx of data.transactions.all()) {
        const names = rated.get(tx.transaction_category) ?? new Set();
        names.add(tx.erp_tax_rate_name as string | null);
        rated.set(tx.transaction_category, names);
      }
    }
    expect([rated.get("cash_withdrawal"), rated.get("cashback"), rated.get("card_loading")]).toEqual([new Set(["Out of Scope"]), new Set(["Out of Scope"]), new Set([null])]);
  });
});

// NOW's MONTHLY window opens 2025-03-01: seeded spend dated in it keeps to the limit as seeded, earlier spend to none.
describe("seeded spend and the cards' spend limits (spec-gaps, Spend limits)", () => {
  const WINDOW_START = Date.parse("2025-03-01T00:00:00.000Z");
  const DAY_MS = 86_400_000;

  /** Seed 5's first company with every card's limit enforced MONTHLY with nothing left, and a factory of its own. */
  function usedUp() {
    const data = firstCompany(5);
    for (const card of data.cards) card.spendLimit = { ...card.spendLimit, active: true, period: "MONTHLY", maxAmount: 0, frequency: 0 };
    return { data, factory: new TransactionFactory(data, new Prng(9), 1, data.users[0]!) };
  }

  function activeAt(data: CompanyData, timeMs: number) {
    return data.cards.filter((c) => c.activatedAt !== null && Date.parse(c.activatedAt) <= timeMs && (c.terminatedAt === null || timeMs < Date.parse(c.terminatedAt)));
  }

  function seededPurchase(factory: TransactionFactory, timeMs: number) {
    return factory.create({ category: "purchase", timeMs, createdAt: new Date(timeMs + 60_000).toISOString(), syncStatus: "not_synced", nowMs: NOW });
  }

  it.each(["2025-03-01T00:00:00.000Z", "2025-03-06T00:00:00.000Z"])("makes a purchase at %s, in the window, that no card active then has room for a card loading", (at) => {
    const { data, factory } = usedUp();
    const timeMs = Date.parse(at);
    expect(activeAt(data, timeMs).length).toBeGreaterThan(0);
    expect(seededPurchase(factory, timeMs)).toMatchObject({ transaction_category: "card_loading", transaction_type: "credit" });
  });

  it("bounds a purchase dated before the window by no limit", () => {
    const { data, factory } = usedUp();
    const timeMs = WINDOW_START - 1;
    expect(activeAt(data, timeMs).length).toBeGreaterThan(0);
    const tx = seededPurchase(factory, timeMs);
    expect(tx?.transaction_category).toBe("purchase");
    expect(Number(tx?.billing_amount)).toBeGreaterThan(5);
  });

  it("puts a purchase in the window the card drawn has no room for on the card active then with room, lowered to fit", () => {
    const { data, factory } = usedUp();
    const timeMs = WINDOW_START + 5 * DAY_MS;
    const active = activeAt(data, timeMs);
    expect(active.length).toBeGreaterThan(1);
    const roomy = active[active.length - 1]!;
    // Room for 5 more in its window, fee included.
    roomy.spendLimit = { ...roomy.spendLimit, maxAmount: round2(consumedOf(roomy, data, NOW).amount + 5) };
    for (let i = 0; i < 8; i++) {
      const tx = seededPurchase(factory, timeMs);
      const cost = round2(Number(tx?.billing_amount) + Number(tx?.fee_charges));
      expect([tx?.transaction_category, tx?.card_external_id, cost > 0 && cost <= 5]).toEqual(["purchase", roomy.id, true]);
    }
  });
});

// A cash withdrawal made now is at an ATM in the company's own country (`merchant_country`, MCC 6011), so a card's
// country limits allow it by that country, not the UAE's (spec-gaps, Cards and users).
describe("cash withdrawals made now by a Saudi company", () => {
  it.each([
    ["SA", true],
    ["AE", false],
  ])("go on a card whose country limits allow only %s: %s", (country, allowed) => {
    const data = seedCompanies({ seed: 5, nowMs: NOW }).find((d) => d.company.country === "SA");
    if (data === undefined) throw new Error("no Saudi company seeded");
    fillAccounts(data);
    const card = data.cards.find((c) => c.status === "Active" && c.atmWithdrawalAllowed);
    if (card === undefined) throw new Error("no Active card allowing ATM use");
    Object.assign(card, { countryLimitsActive: true, allowedCountries: [country], categoryLimitsActive: false });
    // Every other card's account out of money: the withdrawal can go on this one alone.
    for (const other of data.cards) if (other !== card) other.pendingAuthorisations = 1e9;
    expect(canSpendNow(card, data, "cash_withdrawal", NOW)).toBe(allowed);
    const tx = data.factory.create({ category: "cash_withdrawal", ...MADE_NOW });
    expect(tx === undefined ? undefined : [tx.card_external_id, tx.merchant_country, tx.mcc_code]).toEqual(allowed ? [card.id, "SA", "6011"] : undefined);
  });
});

describe("a factory made over a store already holding purchases", () => {
  it("gives money back asked for without a purchase on one of the 20 most recent it holds", () => {
    const data = firstCompany(5);
    const recent = data.transactions.all().filter((t) => t.transaction_category === "purchase").slice(-20).map((t) => t.qashio_id);
    const factory = new TransactionFactory(data, new Prng(9), 1, data.users[0]!);
    const tx = factory.create({ category: "refund", ...MADE_NOW });
    expect([tx?.transaction_category, recent.includes(String(tx?.parent_qashio_id))]).toEqual(["refund", true]);
  });
});

describe("seeded outdated transactions", () => {
  it.each([1, 7, 42])("with seed %i were updated days after their last clearing or creation: changed since the client acknowledged them", (seed) => {
    const gaps = seedCompanies({ seed, nowMs: NOW }).flatMap((data) => data.transactions.all().filter((tx) => tx.client_sync_status === "outdated"))
      .map((tx) => Date.parse(tx.updated_at) - Math.max(Date.parse(tx.created_at), tx.cleared_at === null ? -Infinity : Date.parse(String(tx.cleared_at))));
    expect(gaps.length).toBeGreaterThan(0);
    expect(gaps.filter((gap) => gap < 2 * 86_400_000)).toEqual([]);
  });
});
