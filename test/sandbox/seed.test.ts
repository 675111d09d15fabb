import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { seedCompanies } from "../../sandbox/data/seed.js";
import type { CompanyData } from "../../sandbox/data/model.js";
import { MERCHANTS, MCC_DESCRIPTIONS } from "../../sandbox/data/catalog.js";
import { TransactionDetailSchema } from "../../shared/qashio/schemas/index.js";
import { coreCardView, transactionDetailView } from "../../sandbox/views.js";
import { consumedOf } from "../../sandbox/data/spend-limits.js";
import { homeOf } from "../../sandbox/data/home-country.js";
import { round2 } from "../../sandbox/prng.js";

const NOW = Date.parse("2025-03-15T12:00:00.000Z");

function snapshot(data: CompanyData[]): unknown {
  return data.map((d) => ({
    company: d.company,
    users: d.users,
    cards: d.cards,
    pools: d.pools,
    master: [d.bankAccounts, d.chartOfAccounts, d.taxRates, d.suppliers],
    statements: d.statements,
    transactions: d.transactions.all(),
  }));
}

type SeededTransaction = ReturnType<CompanyData["transactions"]["all"]>[number];

// The companies of three seeds: between them their histories reach every merchant of the catalogue (asserted below),
// so a check walked over them leaves no merchant, MCC or currency unchecked.
function* seededCompanies(): Generator<CompanyData> {
  for (const seed of [1, 7, 42]) yield* seedCompanies({ seed, nowMs: NOW });
}

function* seededTransactions(): Generator<{ data: CompanyData; tx: SeededTransaction }> {
  for (const data of seededCompanies()) for (const tx of data.transactions.all()) yield { data, tx };
}

describe("seeded data", () => {
  it("is identical for the same seed and time, and differs for another seed", () => {
    const a = seedCompanies({ seed: 42, nowMs: NOW });
    const b = seedCompanies({ seed: 42, nowMs: NOW });
    const c = seedCompanies({ seed: 43, nowMs: NOW });
    expect(JSON.stringify(snapshot(a))).toBe(JSON.stringify(snapshot(b)));
    expect(JSON.stringify(snapshot(a))).not.toBe(JSON.stringify(snapshot(c)));
    expect(a.map((d) => d.company.id)).toEqual(c.map((d) => d.company.id));
  });

  it.each([1, 2, 99, 123_456])("with seed %i gives every company at least 25 transactions, 15 not_synced, across categories", (seed) => {
    for (const data of seedCompanies({ seed, nowMs: NOW })) {
      const all = data.transactions.all();
      expect(all.length).toBeGreaterThanOrEqual(25);
      expect(data.transactions.countByStatus("not_synced")).toBeGreaterThanOrEqual(15);
      expect(data.transactions.countByStatus("synced")).toBeGreaterThan(0);
      expect(data.transactions.countByStatus("outdated")).toBeGreaterThan(0);
      const categories = new Set(all.map((t) => t.transaction_category));
      for (const kind of ["purchase", "refund", "reversal", "card_loading", "card_unloading", "cash_withdrawal"]) expect(categories).toContain(kind);
      for (const tx of all) {
        expect(TransactionDetailSchema.safeParse(transactionDetailView(tx, data.company)).success).toBe(true);
        expect(tx.created_at <= new Date(NOW).toISOString()).toBe(true);
        if (tx.parent_qashio_id !== null) {
          const parent = data.transactions.getByQashioId(tx.parent_qashio_id);
          expect(parent?.transaction_category).toBe("purchase");
          expect(parent?.id).toBe(tx.parent_id);
          expect(parent && parent.created_at < tx.created_at).toBe(true);
          expect(Number(tx.transaction_amount)).toBeLessThanOrEqual(Number(parent?.transaction_amount));
        }
      }
    }
  });

  it.each([1, 2, 99, 123_456])("with seed %i dates nothing of a transaction after now: approval, clearing, update, line items", (seed) => {
    // §2.2: approved_date_time, cleared_at and updated_at are when those things happened; an approval still to come
    // would contradict approval_status "approved" in the same answer.
    const now = new Date(NOW).toISOString();
    let approved = 0;
    for (const data of seedCompanies({ seed, nowMs: NOW })) {
      for (const tx of data.transactions.all()) {
        for (const field of ["transaction_time", "cleared_at", "created_at", "updated_at", "modified_date", "approved_date_time"]) {
          const stamp = tx[field] as string | null;
          if (stamp !== null) expect(stamp <= now, `${tx.qashio_id} ${field} ${stamp}`).toBe(true);
        }
        const approvedAt = tx.approved_date_time as string | null;
        // An approval names who approved along with when, and only an approval that happened does (§2.2 approved_by).
        const approvedStatus = ["approved", "admin_approved"].includes(String(tx.approval_status));
        expect([tx.qashio_id, approvedAt !== null, tx.approved_by !== null]).toEqual([tx.qashio_id, approvedStatus, approvedStatus]);
        if (approvedAt !== null) {
          approved++;
          expect(approvedAt >= tx.created_at, `${tx.qashio_id} approved before it was created`).toBe(true);
        }
        for (const item of tx.line_items as { created_at: string; updated_at: string }[]) expect(item.created_at <= now && item.updated_at <= now).toBe(true);
      }
    }
    expect(approved).toBeGreaterThan(0);
  });

  it("keeps transactions in creation order with unique ids and qashio ids", () => {
    for (const data of seedCompanies({ seed: 5, nowMs: NOW })) {
      const all = data.transactions.all();
      const created = all.map((t) => t.created_at);
      expect([...created].sort()).toEqual(created);
      expect(new Set(all.map((t) => t.id)).size).toBe(all.length);
      expect(new Set(all.map((t) => t.qashio_id)).size).toBe(all.length);
    }
  });

  it("looks like real card spend: known merchants with their MCC, several currencies, segments and line items that add up", () => {
    const [data] = seedCompanies({ seed: 11, nowMs: NOW });
    const purchases = (data?.transactions.all() ?? []).filter((t) => t.transaction_category === "purchase");
    const currencies = new Set(purchases.map((t) => t.transaction_currency));
    expect(currencies.size).toBeGreaterThanOrEqual(2);
    for (const tx of purchases) {
      const merchant = MERCHANTS.find((m) => m.name === tx.merchant_name);
      expect(merchant?.mcc).toBe(tx.mcc_code);
      expect(tx.mcc_description).toBe(MCC_DESCRIPTIONS[String(tx.mcc_code)]);
      const segments = tx.segments as { label: string }[];
      expect(segments.map((s) => s.label)).toEqual(expect.arrayContaining(["Location", "Department"]));
      const items = tx.line_items as { amount: number }[];
      expect(items.length).toBeGreaterThan(0);
      expect(items.reduce((sum, i) => sum + i.amount, 0)).toBeCloseTo(tx.billing_amount, 1);
    }
  });

  it("names on every transaction a ledger account the company's chart of accounts serves, and on a merchant's the supplier, account and home tax rate its catalogue entry names", () => {
    // §2.1: the erp_* remote ids cross-reference master-data records; a catalogue key that resolves to none leaves them null.
    const merchants = new Set<string>();
    for (const { data, tx } of seededTransactions()) {
      const account = data.chartOfAccounts.find((a) => a.remote_id === tx.erp_chart_of_account_remote_id);
      expect([tx.qashio_id, account?.extra.account_number]).toEqual([tx.qashio_id, tx.chart_of_account_number]);
      const merchant = MERCHANTS.find((m) => m.name === tx.merchant_name);
      if (merchant === undefined) continue;
      const supplier = data.suppliers.find((s) => s.remote_id === tx.erp_supplier_remote_id);
      expect([tx.qashio_id, supplier?.extra.key, supplier?.remote_name, tx.chart_of_account_number])
        .toEqual([tx.qashio_id, merchant.supplier, tx.erp_supplier_name, merchant.account]);
      // A purchase at home is taxed at a rate of the company's own country (§2.6 country_code).
      const tax = data.taxRates.find((t) => t.remote_id === tx.erp_tax_rate_remote_id);
      if (tx.transaction_category === "purchase" && merchant.country === data.company.country) {
        expect([tx.qashio_id, tax?.extra.country_code]).toEqual([tx.qashio_id, data.company.country]);
      }
      merchants.add(merchant.name);
    }
    expect(MERCHANTS.filter((m) => !merchants.has(m.name)).map((m) => m.name)).toEqual([]);
  });

  it("gives every merchant country as an ISO 3166-1 alpha-2 code and every currency as an ISO 4217 code", () => {
    // A country written otherwise ("UAE") would also pass a home merchant off as one abroad, with its reverse charge.
    const countries = new Set<string>();
    for (const { tx } of seededTransactions()) {
      const country = tx.merchant_country as string | null;
      if (country !== null) countries.add(country);
      expect([tx.qashio_id, country === null || /^[A-Z]{2}$/.test(country), /^[A-Z]{3}$/.test(String(tx.transaction_currency)), /^[A-Z]{3}$/.test(String(tx.billing_currency))])
        .toEqual([tx.qashio_id, true, true, true]);
    }
    expect(countries.size).toBeGreaterThan(2);
  });

  it("bills each transaction's amount in the company's currency at the fixed rates docs/spec-gaps.md states, to the cent", () => {
    const gaps = readFileSync(new URL("../../docs/spec-gaps.md", import.meta.url), "utf8").replace(/\s+/g, " ");
    const stated = /billing_amount` \(.*?\): the `transaction_amount` at fixed rates to the AED \((.*?)\)/.exec(gaps);
    expect(stated).not.toBeNull();
    const aedPer: Record<string, number> = { AED: 1 };
    for (const [, currency, rate] of stated![1]!.matchAll(/1 ([A-Z]{3}) = ([\d.]+) AED/g)) aedPer[currency!] = Number(rate);
    expect(Object.keys(aedPer).sort()).toEqual(["AED", "EUR", "GBP", "SAR", "USD"]);
    const pairs = new Set<string>();
    for (const { data, tx } of seededTransactions()) {
      const [from, to] = [String(tx.transaction_currency), String(tx.billing_currency)];
      const billed = round2((Number(tx.transaction_amount) * aedPer[from]!) / aedPer[to]!);
      expect([tx.qashio_id, from, to, tx.billing_amount]).toEqual([tx.qashio_id, from, data.company.currency, billed]);
      pairs.add(`${from}>${to}`);
    }
    // Every stated rate is used, into both billing currencies.
    for (const pair of ["USD>AED", "EUR>AED", "GBP>AED", "SAR>AED", "USD>SAR", "AED>SAR", "SAR>SAR", "AED>AED"]) expect(pairs, pair).toContain(pair);
  });

  // No seeded company is in another country yet: one that is must get no city of another country's (as a Saudi
  // company once got Dubai), only none.
  it("names no city for the home places of a country it does not know", () => {
    const home = homeOf("GB");
    expect([home.atm.city, home.office.city]).toEqual([null, null]);
  });

  it("makes a company's cash withdrawals at, and ships its physical cards to, the home places docs/spec-gaps.md names for its country", () => {
    const gaps = readFileSync(new URL("../../docs/spec-gaps.md", import.meta.url), "utf8").replace(/\s+/g, " ");
    const atm = /ATM at home \(`([^`]+)` in (\w+) for a UAE company, `([^`]+)` in (\w+) for a Saudi one;/.exec(gaps);
    const office = /`\{ line1, city, country \}`: `([^`]+)`, (\w+), for a UAE company; `([^`]+)`, (\w+), for a Saudi one/.exec(gaps);
    expect([atm, office].map((stated) => stated !== null)).toEqual([true, true]);
    const atmOf: Record<string, string[]> = { AE: atm!.slice(1, 3), SA: atm!.slice(3, 5) };
    const officeOf: Record<string, Record<string, string | undefined>> = {
      AE: { line1: office![1], city: office![2], country: "AE" },
      SA: { line1: office![3], city: office![4], country: "SA" },
    };
    const seen = new Set<string>();
    for (const data of seededCompanies()) {
      const country = data.company.country;
      for (const tx of data.transactions.all().filter((t) => t.transaction_category === "cash_withdrawal")) {
        expect([tx.qashio_id, tx.merchant_name, tx.merchant_city]).toEqual([tx.qashio_id, ...atmOf[country]!]);
        seen.add(`atm ${country}`);
      }
      for (const card of data.cards.filter((c) => c.cardType === "Physical")) {
        expect([card.id, coreCardView(card, data).shipping_address]).toEqual([card.id, officeOf[country]]);
        seen.add(`office ${country}`);
      }
    }
    expect([...seen].sort()).toEqual(["atm AE", "atm SA", "office AE", "office SA"]);
  });

  it("describes every seeded transaction's MCC, and a merchant in the UAE or Saudi Arabia charges in its country's currency", () => {
    const homeCurrency: Record<string, string> = { AE: "AED", SA: "SAR" };
    const merchants = new Set<unknown>();
    for (const { tx } of seededTransactions()) {
      if (tx.mcc_code === null) continue;
      expect([tx.qashio_id, typeof tx.mcc_description, String(tx.mcc_description).length > 0]).toEqual([tx.qashio_id, "string", true]);
      const home = homeCurrency[String(tx.merchant_country)];
      if (tx.transaction_category === "purchase" && home !== undefined) {
        expect([tx.qashio_id, tx.merchant_name, tx.transaction_currency]).toEqual([tx.qashio_id, tx.merchant_name, home]);
      }
      merchants.add(tx.merchant_name);
    }
    // The histories reach every merchant of the catalogue, so none of its MCCs or currencies goes unchecked.
    expect(MERCHANTS.filter((m) => !merchants.has(m.name)).map((m) => m.name)).toEqual([]);
  });

  it("seeds tax rates whose names state the rate they carry (a name without a percentage carries 0)", () => {
    for (const data of seedCompanies({ seed: 1, nowMs: NOW })) {
      for (const rate of data.taxRates) {
        const named = /(\d+(?:\.\d+)?)%/.exec(rate.remote_name);
        expect([rate.remote_name, rate.extra.total_tax_rate]).toEqual([rate.remote_name, named === null ? 0 : Number(named[1])]);
      }
    }
  });

  it("ships each company's physical cards to an office in a city of its own country, a virtual card nowhere", () => {
    const countries = new Set<string>();
    for (const data of seedCompanies({ seed: 7, nowMs: NOW })) {
      const homeCities = new Set(MERCHANTS.filter((m) => m.country === data.company.country).map((m) => m.city));
      for (const card of data.cards) {
        const address = coreCardView(card, data).shipping_address as { city?: unknown; country?: unknown } | null;
        const expected = card.cardType === "Physical" ? [true, data.company.country] : [false, undefined];
        expect([card.id, address !== null && homeCities.has(String(address.city)), address?.country]).toEqual([card.id, ...expected]);
        if (card.cardType === "Physical") countries.add(data.company.country);
      }
    }
    // Both countries the seed has, so neither city rule holds by the other's chance.
    expect([...countries].sort()).toEqual(["AE", "SA"]);
  });

  // Values the spec leaves to the service (spec-gaps, Transactions: fees, VAT, message_type, erp_sync_type), each as
  // the transaction's kind says, whatever the seed.
  it.each([1, 7, 42])("with seed %i classifies each transaction by its kind: fee, VAT, message_type, erp_sync_type, transaction_type, status_code, an ATM's MCC, clearing, settlement and line items", (seed) => {
    const homeRate: Record<string, string> = { AE: "Standard Rated 5%", SA: "KSA Standard Rated 15%" };
    const seen = new Set<string>();
    for (const data of seedCompanies({ seed, nowMs: NOW })) {
      for (const tx of data.transactions.all()) {
        const category = tx.transaction_category;
        const billing = Number(tx.billing_amount);
        const foreign = tx.transaction_currency !== tx.billing_currency;
        const fee = category === "cash_withdrawal" ? round2(billing * 0.02 + 10) : category === "purchase" && foreign ? round2(billing * 0.02) : 0;
        const message = category === "reversal" ? "reversal" : tx.cleared_at === null ? "authorization" : "clearing";
        const syncType = ["purchase", "refund", "reversal"].includes(category) ? "expense" : "bank_transfer";
        // Money coming to the card's account is a credit: money back, a load, a deposit, a cashback.
        const type = ["refund", "reversal", "card_loading", "deposit", "cashback"].includes(category) ? "credit" : "debit";
        expect([tx.qashio_id, tx.fee_charges, tx.message_type, tx.erp_sync_type, tx.transaction_type]).toEqual([tx.qashio_id, fee, message, syncType, type]);
        // An approved authorisation, whatever its kind (spec-gaps, Sandbox: `status_code` "00").
        expect([tx.qashio_id, tx.status_code]).toEqual([tx.qashio_id, "00"]);
        // Nothing is cleared, nor a clearing fee taken, before the clearing; then the fee charged (§2.2 rule 2).
        const cleared = tx.cleared_at === null ? [0, 0] : [billing, fee];
        expect([tx.qashio_id, tx.clearing_amount, tx.clearing_fee]).toEqual([tx.qashio_id, ...cleared]);
        // A purchase's line items share out its amount and its VAT to the cent.
        const items = tx.line_items as { amount: number; vat_amount: number }[];
        if (items.length > 0) {
          const sum = (key: "amount" | "vat_amount") => round2(items.reduce((total, item) => total + item[key], 0));
          expect([tx.qashio_id, sum("amount"), sum("vat_amount")]).toEqual([tx.qashio_id, billing, tx.vat_amount]);
        }
        // A reverse charge is accounted for by the buyer: no VAT in the amount.
        if (tx.erp_tax_rate_name === "Reverse Charge 5%") expect([tx.qashio_id, tx.vat_amount]).toEqual([tx.qashio_id, 0]);
        // Settled once cleared, not before (spec-gaps, Data, time, faults).
        const settlement = tx.cleared_at === null ? ["pending", "unsettled"] : ["cleared", "settled"];
        expect([tx.qashio_id, tx.clearing_status, tx.settlement_status]).toEqual([tx.qashio_id, ...settlement]);
        // The reverse charge is for a merchant outside the UAE and Saudi Arabia only; any other rate's VAT is in the amount.
        const tax = data.taxRates.find((t) => t.remote_id === tx.erp_tax_rate_remote_id);
        if (tx.mcc_code !== null && category === "purchase") {
          const abroad = !["AE", "SA"].includes(String(tx.merchant_country));
          expect([tx.qashio_id, tax?.extra.tax_rate_code === "RC"]).toEqual([tx.qashio_id, abroad]);
        }
        if (tax !== undefined && tax.extra.tax_rate_code !== "RC") {
          const rate = Number(tax.extra.total_tax_rate);
          expect([tx.qashio_id, tx.vat_amount]).toEqual([tx.qashio_id, round2((billing * rate) / (100 + rate))]);
        }
        // An ATM at home: its MCC, in the company's country, in a city of that country.
        if (category === "cash_withdrawal") {
          const homeCities = new Set(MERCHANTS.filter((m) => m.country === data.company.country).map((m) => m.city));
          expect([tx.qashio_id, tx.mcc_code, tx.merchant_country, homeCities.has(String(tx.merchant_city))]).toEqual([tx.qashio_id, "6011", data.company.country, true]);
        }
        if (category === "purchase" && tx.merchant_country === data.company.country) {
          expect([tx.qashio_id, tx.erp_tax_rate_name]).toEqual([tx.qashio_id, homeRate[data.company.country]]);
          seen.add(`home ${data.company.country}`);
        }
        // A merchant in the other of the two countries: out of scope of the company's VAT.
        if (category === "purchase" && ["AE", "SA"].includes(String(tx.merchant_country)) && tx.merchant_country !== data.company.country) {
          expect([tx.qashio_id, tx.erp_tax_rate_name, tx.vat_amount]).toEqual([tx.qashio_id, "Out of Scope", 0]);
          seen.add(`neighbour ${data.company.country}`);
        }
        seen.add(`${category} ${foreign ? "foreign" : "home"} ${tx.erp_tax_rate_name === "Reverse Charge 5%" ? "RC" : ""}`.trim());
      }
    }
    for (const kind of ["home AE", "home SA", "neighbour AE", "neighbour SA", "purchase home", "purchase foreign RC", "cash_withdrawal home", "reversal foreign RC", "refund foreign RC"]) {
      expect(seen, kind).toContain(kind);
    }
  });

  it("seeds card funding that agrees with itself: auto top-up on exactly when its amount is positive and the type says so", () => {
    for (const seed of [1, 2, 3, 42]) {
      const cards = seedCompanies({ seed, nowMs: NOW }).flatMap((d) => d.cards);
      for (const card of cards) {
        const expectedType = card.poolAccountId !== null ? "pool" : card.autoTopUpEnabled ? "auto_topup" : "manual";
        expect([card.topupType, card.autoTopUpEnabled, card.autoTopUpAmount > 0]).toEqual([expectedType, card.autoTopUpEnabled, card.autoTopUpEnabled]);
      }
      expect(new Set(cards.map((c) => c.topupType))).toEqual(new Set(["pool", "auto_topup", "manual"]));
    }
  });

  it("has cards of every status, both types and funding models, pool accounts and master data per company", () => {
    for (const data of seedCompanies({ seed: 3, nowMs: NOW })) {
      expect(new Set(data.cards.map((c) => c.status))).toEqual(new Set(["Active", "Inactive", "Suspended", "Terminated", "Draft", "Cancelled"]));
      expect(new Set(data.cards.map((c) => c.cardType))).toEqual(new Set(["Virtual", "Physical"]));
      expect(new Set(data.cards.map((c) => c.accountType))).toEqual(new Set(["reloadable", "pool"]));
      expect(data.pools.length).toBeGreaterThanOrEqual(2);
      expect(data.suppliers.length).toBeGreaterThan(10);
      expect(data.chartOfAccounts.length).toBeGreaterThan(10);
      expect(data.taxRates.length).toBeGreaterThan(3);
      expect(data.bankAccounts.length).toBeGreaterThan(1);
      expect(data.cards.filter((c) => c.poolAccountId !== null).every((c) => data.pools.some((p) => p.id === c.poolAccountId))).toBe(true);
    }
  });

  it("allows ATM withdrawals on exactly the physical cards, as an issued card does: a virtual card has no ATM to use", () => {
    for (const data of seedCompanies({ seed: 3, nowMs: NOW })) {
      expect(data.cards.map((c) => [c.id, c.atmWithdrawalAllowed])).toEqual(data.cards.map((c) => [c.id, c.cardType === "Physical"]));
    }
  });

  it("marks card_replaced on exactly the card replaced, which names its replacement: a card of the company still Active", () => {
    for (const seed of [1, 42]) {
      for (const data of seedCompanies({ seed, nowMs: NOW })) {
        const replaced = data.cards.filter((c) => c.cardReplaced);
        expect(replaced.map((c) => c.status)).toEqual(["Terminated"]);
        for (const card of data.cards) expect([card.nickname, card.replacedByCardId !== null]).toEqual([card.nickname, card.cardReplaced]);
        const replacement = data.cards.find((c) => c.id === replaced[0]?.replacedByCardId);
        expect([replacement?.status, replacement?.cardType]).toEqual(["Active", replaced[0]?.cardType]);
      }
    }
  });

  it("creates the replacement of a terminated card within a day of its termination", () => {
    for (const seed of [1, 42]) {
      for (const data of seedCompanies({ seed, nowMs: NOW })) {
        const replaced = data.cards.find((c) => c.cardReplaced)!;
        const replacement = data.cards.find((c) => c.id === replaced.replacedByCardId)!;
        const apart = Math.abs(Date.parse(replacement.createdAt) - Date.parse(replaced.terminatedAt!));
        expect([replaced.nickname, apart < 86_400_000]).toEqual([replaced.nickname, true]);
      }
    }
  });

  it("sets no card's spend limit above the most its account may hold, some cut down to it", () => {
    let capped = 0;
    for (const seed of [1, 2, 3]) {
      for (const data of seedCompanies({ seed, nowMs: NOW })) {
        for (const card of data.cards) {
          const most = card.poolAccountId === null ? card.allowedMaxBalance : data.pools.find((p) => p.id === card.poolAccountId)!.allowedMaxBalance;
          expect([card.nickname, card.spendLimit.maxAmount <= most]).toEqual([card.nickname, true]);
          if (card.spendLimit.maxAmount === most) capped++;
        }
      }
    }
    expect(capped, "some drawn limit was above the account's most").toBeGreaterThan(0);
  });

  it("creates each company before anything of it: its cards, pools, master data and transactions", () => {
    for (const data of seedCompanies({ seed: 1, nowMs: NOW })) {
      const stamps = [
        ...data.cards.map((c) => c.createdAt),
        ...data.pools.map((p) => p.createdAt),
        ...[data.bankAccounts, data.chartOfAccounts, data.taxRates, data.suppliers].flat().map((r) => r.created_at),
        ...data.transactions.all().map((t) => t.created_at),
      ];
      expect(stamps.filter((stamp) => stamp < data.company.createdAt)).toEqual([]);
    }
  });

  it("dates every master record within the past: created before updated, updated a day or more before now", () => {
    const dayBefore = new Date(NOW - 86_400_000).toISOString();
    for (const seed of [1, 2]) {
      for (const data of seedCompanies({ seed, nowMs: NOW })) {
        for (const r of [data.bankAccounts, data.chartOfAccounts, data.taxRates, data.suppliers].flat()) {
          expect([r.remote_id, r.created_at <= r.updated_at, r.updated_at <= dayBefore]).toEqual([r.remote_id, true, true]);
        }
      }
    }
  });

  it("gives master data every status the status filter takes (§2.6: draft, active, inactive)", () => {
    for (const data of seedCompanies({ seed: 1, nowMs: NOW })) {
      const records = [data.bankAccounts, data.chartOfAccounts, data.taxRates, data.suppliers].flat();
      expect(new Set(records.map((r) => r.status))).toEqual(new Set(["draft", "active", "inactive"]));
    }
  });

  it("gives each company's suppliers and ledger accounts a qashio_external_id of its own, no other company's", () => {
    const references = seedCompanies({ seed: 1, nowMs: NOW }).flatMap((d) => [...d.suppliers, ...d.chartOfAccounts].map((r) => r.extra.qashio_external_id));
    expect(new Set(references).size).toBe(references.length);
  });

  it("keeps each company's ledger accounts in its own currency (§2.6 account_currency)", () => {
    for (const data of seedCompanies({ seed: 1, nowMs: NOW })) {
      expect(new Set(data.chartOfAccounts.map((a) => a.extra.account_currency))).toEqual(new Set([data.company.currency]));
    }
  });

  it("issues every card but the Draft one, and activates only those that reached Active (Suspended and Terminated ones did)", () => {
    for (const data of seedCompanies({ seed: 1, nowMs: NOW })) {
      for (const card of data.cards) {
        const activated = ["Active", "Suspended", "Terminated"].includes(card.status);
        expect([card.nickname, card.issuedAt !== null, card.activatedAt !== null]).toEqual([card.nickname, card.status !== "Draft", activated]);
      }
    }
  });

  it("has one Admin per company, of Finance, who created every pool and manages each", () => {
    for (const data of seedCompanies({ seed: 1, nowMs: NOW })) {
      const admins = data.users.filter((u) => u.role === "Admin");
      expect(admins.map((u) => u.department)).toEqual(["Finance"]);
      for (const pool of data.pools) expect([pool.accountName, pool.createdBy, pool.managers[0]]).toEqual([pool.accountName, admins[0], admins[0]]);
    }
  });

  it("chains monthly statements: each closing balance is the next month's opening balance", () => {
    for (const data of seedCompanies({ seed: 9, nowMs: NOW })) {
      const byAccount = new Map<string, typeof data.statements>();
      for (const s of data.statements) byAccount.set(s.account.accountExternalId, [...(byAccount.get(s.account.accountExternalId) ?? []), s]);
      expect(byAccount.size).toBeGreaterThan(3);
      for (const periods of byAccount.values()) {
        const ordered = [...periods].sort((a, b) => a.month.localeCompare(b.month));
        for (let i = 1; i < ordered.length; i++) expect(ordered[i]?.opening).toBe(ordered[i - 1]?.closing);
      }
    }
  });

  it("opens an account's first statement at zero when the account was opened during that month (§2.7: balance at period start)", () => {
    let openedMidWindow = 0;
    for (const seed of [1, 2, 3, 9]) {
      for (const data of seedCompanies({ seed, nowMs: NOW })) {
        for (const card of data.cards) {
          const periods = data.statements.filter((s) => s.account.accountType === "Card" && s.account.card === card);
          const first = [...periods].sort((a, b) => a.month.localeCompare(b.month))[0];
          if (!first || Date.parse(card.createdAt) <= Date.parse(`${first.from}T00:00:00Z`)) continue;
          openedMidWindow++;
          expect(first.opening).toBe(0);
        }
      }
    }
    expect(openedMidWindow).toBeGreaterThan(0);
  });

  /** Each account's statements oldest first, with the account's current balance and when it could last be used (§2.7). */
  function statementAccounts(data: CompanyData) {
    const periodsOf = (id: string) => data.statements.filter((s) => s.account.accountExternalId === id).sort((a, b) => a.month.localeCompare(b.month));
    return data.statementAccounts.map((account) => {
      const card = account.accountType === "Card" ? account.card : undefined;
      const pool = data.pools.find((p) => p.id === account.accountExternalId);
      const poolCards = pool ? data.cards.filter((c) => c.poolAccountId === pool.id) : [];
      const createdAt = card?.createdAt ?? pool?.createdAt ?? data.company.createdAt;
      const balance = card ? card.balance : pool ? pool.balance : account.accountType === "CompanyFundAccount" ? data.company.fundingBalance : undefined;
      // Usable now: a card activated and not terminated, a pool with such a card; funding and subsidiary always.
      const usable = (c: typeof data.cards[number]) => c.activatedAt !== null && c.terminatedAt === null;
      const usableNow = card ? usable(card) : pool ? poolCards.some(usable) : true;
      return { account, card, pool, createdAt, balance, usableNow, periods: periodsOf(account.accountExternalId) };
    });
  }

  it.each([1, 7, 42])("with seed %i shows no movement in a terminated card's statements after its termination, and closes them at its balance", (seed) => {
    let checked = 0;
    for (const data of seedCompanies({ seed, nowMs: NOW })) {
      for (const { card, balance, periods } of statementAccounts(data)) {
        if (card?.status !== "Terminated" || card.terminatedAt === null) continue;
        const after = periods.filter((p) => p.from > (card.terminatedAt as string).slice(0, 10));
        expect(after.length).toBeGreaterThan(0);
        for (const p of after) expect([p.month, p.closing], card.nickname).toEqual([p.month, p.opening]);
        expect(periods.at(-1)?.closing, card.nickname).toBe(balance);
        checked++;
      }
    }
    expect(checked).toBe(3);
  });

  it.each([1, 7, 42])("with seed %i closes a card terminated within the statements at 0 the month it was terminated, as it holds now", (seed) => {
    // Seeded at a month's end, a termination 200 days back falls in the first month of the six.
    const nowMs = Date.parse("2025-03-31T12:00:00.000Z");
    let checked = 0;
    for (const data of seedCompanies({ seed, nowMs })) {
      for (const { card, balance, periods } of statementAccounts(data)) {
        if (card?.status !== "Terminated" || card.terminatedAt === null) continue;
        const month = periods.find((p) => p.month === card.terminatedAt!.slice(0, 7));
        expect([card.nickname, month?.opening !== 0, month?.closing, balance]).toEqual([card.nickname, true, 0, 0]);
        checked++;
      }
    }
    expect(checked).toBe(3);
  });

  it.each([1, 7, 42])("with seed %i shows no movement in a Terminated pool's statements, and closes them at its balance", (seed) => {
    let checked = 0;
    for (const data of seedCompanies({ seed, nowMs: NOW })) {
      for (const { pool, balance, periods } of statementAccounts(data)) {
        if (pool?.status !== "Terminated") continue;
        expect(periods.length).toBeGreaterThan(0);
        for (const p of periods) expect([p.month, p.closing], pool.accountName).toEqual([p.month, p.opening]);
        expect(periods.at(-1)?.closing, pool.accountName).toBe(balance);
        checked++;
      }
    }
    expect(checked).toBe(3);
  });

  it.each([1, 7, 42])("with seed %i closes the latest statement of every account that cannot be used now at its current balance", (seed) => {
    // A card never activated or terminated, a pool none of whose cards is usable: nothing has moved its balance since.
    let checked = 0;
    for (const data of seedCompanies({ seed, nowMs: NOW })) {
      for (const { account, usableNow, balance, periods } of statementAccounts(data)) {
        const last = periods.at(-1);
        if (usableNow || !last) continue;
        expect(last.closing, account.accountExternalId).toBe(balance);
        checked++;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(9);
  });

  it.each([1, 7, 42])("with seed %i holds every account at its latest statement's closing balance: nothing moves a balance since", (seed) => {
    // Balances do not follow transactions (spec-gaps), so the current month, without a statement yet, has moved none.
    let checked = 0;
    for (const data of seedCompanies({ seed, nowMs: NOW })) {
      for (const { account, balance, periods } of statementAccounts(data)) {
        const last = periods.at(-1);
        if (balance === undefined || !last) continue;
        expect([account.accountExternalId, last.closing]).toEqual([account.accountExternalId, balance]);
        checked++;
      }
    }
    expect(checked).toBe(3 * 12);
  });

  it.each([1, 7, 42])("with seed %i holds no more pending authorisations on an account than its balance (§4.9: nothing spendable below 0)", (seed) => {
    for (const data of seedCompanies({ seed, nowMs: NOW })) {
      for (const card of data.cards) {
        const balance = card.poolAccountId === null ? card.balance : (data.pools.find((p) => p.id === card.poolAccountId)?.balance ?? 0);
        const held = data.cards.filter((c) => c.accountExternalId === card.accountExternalId).reduce((sum, c) => sum + c.pendingAuthorisations, 0);
        expect([card.nickname, balance - held >= -1e-9]).toEqual([card.nickname, true]);
      }
    }
  });

  it.each([1, 7, 42])("with seed %i holds on each card only what its seeded spend not yet cleared holds, as new spend would, so a clearing can release it", (seed) => {
    let held = 0;
    for (const data of seedCompanies({ seed, nowMs: NOW })) {
      const uncleared = data.transactions.all().filter((t) => ["purchase", "cash_withdrawal"].includes(t.transaction_category) && t.clearing_status !== "cleared");
      // Every hold is an uncleared purchase's or cash withdrawal's, on its card, and at most its fee-inclusive amount.
      for (const [id, hold] of data.holds) {
        const tx = uncleared.find((t) => t.id === id);
        expect([id, tx?.card_external_id]).toEqual([id, hold.card.id]);
        expect([id, hold.amount > 0 && hold.amount <= Math.round((tx!.billing_amount + tx!.transaction_fee_amount) * 100) / 100]).toEqual([id, true]);
      }
      // Each card's pending authorisations are its holds, nothing besides; an uncleared spend unheld found its account empty.
      for (const card of data.cards) {
        const holds = [...data.holds.values()].filter((h) => h.card === card).reduce((sum, h) => sum + h.amount, 0);
        expect([card.nickname, card.pendingAuthorisations]).toEqual([card.nickname, Math.round(holds * 100) / 100]);
      }
      held += data.holds.size;
    }
    expect(held, "some seeded spend is still held").toBeGreaterThan(0);
  });

  it.each([1, 7, 42])("with seed %i keeps every card and pool statement within the account's allowed_max_balance (§2.3, §2.5)", (seed) => {
    let checked = 0;
    for (const data of seedCompanies({ seed, nowMs: NOW })) {
      for (const { account, card, pool, periods } of statementAccounts(data)) {
        const max = card?.allowedMaxBalance ?? pool?.allowedMaxBalance;
        if (max === undefined) continue;
        for (const p of periods) expect([account.accountExternalId, p.month, Math.max(p.opening, p.closing) <= max]).toEqual([account.accountExternalId, p.month, true]);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(20);
  });

  it.each([1, 7, 42])("with seed %i has no statement for a month before its account was opened", (seed) => {
    for (const data of seedCompanies({ seed, nowMs: NOW })) {
      for (const { account, createdAt, periods } of statementAccounts(data)) {
        for (const p of periods) expect(p.month >= createdAt.slice(0, 7), `${account.accountExternalId} ${p.month}`).toBe(true);
      }
    }
  });

  // A year-long backlog reaches back before the seeded terminations: the history keeps no status, so a card terminated
  // since was used while it was active.
  it.each([1, 7])("with seed %i has transactions in a backlog on a card terminated since, made while it was active", (seed) => {
    for (const data of seedCompanies({ seed, nowMs: NOW, backlog: 3_000 }).slice(0, 1)) {
      const terminated = new Map(data.cards.filter((c) => c.status === "Terminated").map((c) => [c.id, c]));
      const spent = data.transactions.all().filter((tx) => tx.parent_qashio_id === null && terminated.has(tx.card_external_id as string));
      expect(spent.length, data.company.name).toBeGreaterThan(0);
      for (const tx of spent) {
        const card = terminated.get(tx.card_external_id as string)!;
        expect([tx.qashio_id, tx.transaction_time < card.terminatedAt! && tx.transaction_time >= card.activatedAt!]).toEqual([tx.qashio_id, true]);
      }
    }
  });

  // Seeding 100,000 takes seconds alone and nearly the default 30 s on a loaded machine (seen at a load of 16).
  it("keeps created_at strictly rising in a backlog big enough for the time jitter to exceed the gap", { timeout: 120_000 }, () => {
    const [first] = seedCompanies({ seed: 7, nowMs: NOW, backlog: 100_000 });
    const created = (first?.transactions.all() ?? []).map((t) => t.created_at);
    expect(created).toHaveLength(100_000);
    const inversions = created.filter((c, i) => i > 0 && c <= (created[i - 1] as string)).length;
    expect(inversions).toBe(0);
  });

  it("builds a backlog of exactly the requested size for one company, every transaction not_synced", () => {
    const companies = seedCompanies({ seed: 1, nowMs: NOW, backlog: 3_000 });
    const [first, second] = companies;
    expect(first?.transactions.size).toBe(3_000);
    expect(first?.transactions.countByStatus("not_synced")).toBe(3_000);
    // Spread over 365 days, as spec-gaps says of a backlog over 1000 (60 days for 1000 or fewer).
    const oldest = Date.parse(String(first?.transactions.all()[0]?.transaction_time));
    expect(oldest).toBeGreaterThanOrEqual(NOW - 365 * 86_400_000);
    expect(oldest).toBeLessThan(NOW - 360 * 86_400_000);
    // Its first days come before any card allowing ATM use was active: no cash withdrawal goes on another card.
    const atm = new Set(first?.cards.filter((card) => card.atmWithdrawalAllowed).map((card) => card.id));
    const withdrawals = (first?.transactions.all() ?? []).filter((tx) => tx.transaction_category === "cash_withdrawal");
    expect(withdrawals.length).toBeGreaterThan(0);
    expect(withdrawals.filter((tx) => !atm.has(tx.card_external_id as string)).map((tx) => tx.qashio_id)).toEqual([]);
    expect(second?.transactions.size).toBe(seedCompanies({ seed: 1, nowMs: NOW })[1]?.transactions.size);
  });
});

describe("seeded history within the cards' spend limits (spec-gaps, Spend limits)", () => {
  /** Cards whose enforced limit's current window the seeded spend passed: amount or count. */
  function overLimit(data: readonly CompanyData[], nowMs: number): string[] {
    return data.flatMap((d) =>
      d.cards
        .filter((card) => card.spendLimit.active)
        .map((card) => ({ card, used: consumedOf(card, d, nowMs) }))
        .filter(({ card, used }) => used.amount > card.spendLimit.maxAmount || (card.spendLimit.frequency > 0 && used.count > card.spendLimit.frequency))
        .map(({ card, used }) => `${d.company.name} ${card.nickname}: ${used.amount}/${card.spendLimit.maxAmount}, ${used.count}/${card.spendLimit.frequency}`),
    );
  }

  it.each(["2025-03-15T12:00:00.000Z", "2026-01-31T10:00:00.000Z", "2026-12-02T15:30:00.000Z"])("leaves no enforced limit's window over its limit, at %s, whatever the seed", (at) => {
    const nowMs = Date.parse(at);
    for (let seed = 1; seed <= 60; seed++) expect(overLimit(seedCompanies({ seed, nowMs }), nowMs), `seed ${seed}`).toEqual([]);
  });

  it("keeps a backlog of exactly its size within the limits, spend no card had room for made something else", () => {
    const data = seedCompanies({ seed: 5, nowMs: NOW, backlog: 20_000 });
    expect(data[0]!.transactions.size).toBe(20_000);
    expect(overLimit(data, NOW)).toEqual([]);
  });
});
