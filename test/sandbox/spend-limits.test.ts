import { describe, expect, it, vi } from "vitest";
import { SPEND_CATEGORIES, amountOf } from "../../sandbox/data/balances.js";
import type { TransactionRecord } from "../../sandbox/data/model.js";
import { consumedOf, limitRoomOf, windowStart } from "../../sandbox/data/spend-limits.js";
import { Prng, round2 } from "../../sandbox/prng.js";
import { SandboxState } from "../../sandbox/state.js";
import { fillAccounts } from "./helpers.js";

const NOW = Date.parse("2025-08-14T17:45:12.345Z"); // a Thursday

describe("spend limit windows (spec-gaps, Spend limits: calendar periods in UTC)", () => {
  it.each([
    ["DAILY", "2025-08-14T00:00:00.000Z"],
    ["WEEKLY", "2025-08-11T00:00:00.000Z"],
    ["MONTHLY", "2025-08-01T00:00:00.000Z"],
    ["QUARTERLY", "2025-07-01T00:00:00.000Z"],
    ["YEARLY", "2025-01-01T00:00:00.000Z"],
  ])("starts a %s window at %s", (period, start) => {
    expect(new Date(windowStart(period, NOW)!).toISOString()).toBe(start);
  });

  it("starts a week on Monday, a Sunday and a Monday included", () => {
    expect(new Date(windowStart("WEEKLY", Date.parse("2025-08-17T23:59:59.999Z"))!).toISOString()).toBe("2025-08-11T00:00:00.000Z");
    expect(new Date(windowStart("WEEKLY", Date.parse("2025-08-18T00:00:00.000Z"))!).toISOString()).toBe("2025-08-18T00:00:00.000Z");
  });

  it("has ALL_TIME take every transaction and PER_TRANSACTION none (each transaction its own window)", () => {
    expect(windowStart("ALL_TIME", NOW)).toBe(-Infinity);
    expect(windowStart("PER_TRANSACTION", NOW)).toBeUndefined();
  });
});

/** A sandbox on a frozen clock with `transactions` in its first company, whose accounts can pay for any spend. */
function frozenSandbox(transactions: number) {
  const nowMs = Date.parse("2025-08-14T17:45:12.345Z");
  const state = new SandboxState({ seed: 7, startTime: nowMs, latencyMs: 0, realTime: false, accessTokenTtlSeconds: 3600 });
  state.reset({ transactions });
  const data = state.listCompanies()[0]!;
  fillAccounts(data);
  return { nowMs, state, data };
}

/** A frozen sandbox with one new purchase, and its card with the spend limit's period widened to all time. */
function purchaseOnAllTimeCard() {
  const { nowMs, state, data } = frozenSandbox(50);
  const [purchase] = state.createTransactions(data, { count: 1, category: "purchase" });
  const card = data.cards.find((c) => c.id === purchase!.card_external_id)!;
  const allTime = { ...card, spendLimit: { ...card.spendLimit, period: "ALL_TIME" } };
  return { nowMs, state, data, purchase: purchase!, allTime };
}

describe("what a window consumed (the store's ledger, spec-gaps, Spend limits)", () => {
  it("equals a walk of every transaction by its time as it is now, less what reversals reversed, through new spend and control PATCHes of time, card, category and amounts", () => {
    const { nowMs, state, data } = frozenSandbox(3_000);
    state.createTransactions(data, { count: 40 });
    const all = data.transactions.all();
    const prng = new Prng(3);
    for (let i = 0; i < 200; i++) {
      const tx = prng.pick(all);
      const fields = prng.pick([
        { transaction_time: new Date(nowMs - prng.int(0, 400) * 86_400_000).toISOString() },
        { card_external_id: prng.pick(data.cards).id },
        { transaction_category: prng.pick(["purchase", "cash_withdrawal", "refund", "deposit"]) },
        { billing_amount: prng.money(0, 900), transaction_fee_amount: prng.money(0, 20) },
      ]);
      state.patchTransaction(data, tx.id, fields);
    }
    for (const period of ["DAILY", "WEEKLY", "MONTHLY", "QUARTERLY", "YEARLY", "ALL_TIME"]) {
      const start = windowStart(period, nowMs)!;
      for (const card of data.cards) {
        const walked = all.filter((tx) => tx.card_external_id === card.id && SPEND_CATEGORIES.has(tx.transaction_category) && Date.parse(tx.transaction_time) >= start);
        // A reversal takes its share of its purchase off; one reversed in full is no transaction.
        const reversalsOf = (tx: TransactionRecord) => all.filter((r) => r.transaction_category === "reversal" && r.parent_qashio_id === tx.qashio_id);
        const left = (tx: TransactionRecord) => Math.max(0, amountOf(tx) - round2((amountOf(tx) * reversalsOf(tx).reduce((sum, r) => sum + Number(r.transaction_amount), 0)) / Number(tx.transaction_amount)));
        const counted = walked.filter((tx) => reversalsOf(tx).reduce((sum, r) => sum + Number(r.transaction_amount), 0) < Number(tx.transaction_amount) || reversalsOf(tx).length === 0);
        const amount = round2(walked.reduce((sum, tx) => sum + left(tx), 0));
        expect(consumedOf({ ...card, spendLimit: { ...card.spendLimit, period } }, data, nowMs), `${period} ${card.nickname}`).toEqual({ amount, count: counted.length });
      }
    }
  });
});

describe("the room an enforced spend limit leaves (§4.9 update_velocity_limit)", () => {
  it("is none once the window's spend_limit_frequency transactions are made, and the amount left while fewer are or the frequency is 0 (no count)", () => {
    const { nowMs, data } = frozenSandbox(200);
    const card = data.cards.find((c) => consumedOf({ ...c, spendLimit: { ...c.spendLimit, period: "ALL_TIME" } }, data, nowMs).count > 0)!;
    const limited = (frequency: number) => ({ ...card, spendLimit: { ...card.spendLimit, active: true, period: "ALL_TIME", maxAmount: 1_000_000, frequency } });
    const used = consumedOf(limited(0), data, nowMs);
    const left = round2(1_000_000 - used.amount);
    expect(limitRoomOf(limited(used.count), data, nowMs)).toBe(0);
    expect(limitRoomOf(limited(used.count + 1), data, nowMs)).toBe(left);
    expect(limitRoomOf(limited(0), data, nowMs)).toBe(left);
  });

  it("is none, never less, once the window consumed more than a max_amount lowered since (the dashboard may lower it below)", () => {
    const { nowMs, data } = frozenSandbox(200);
    const card = data.cards.find((c) => consumedOf({ ...c, spendLimit: { ...c.spendLimit, period: "ALL_TIME" } }, data, nowMs).amount > 1)!;
    const lowered = { ...card, spendLimit: { ...card.spendLimit, active: true, period: "ALL_TIME", maxAmount: 1, frequency: 0 } };
    expect(limitRoomOf(lowered, data, nowMs)).toBe(0);
  });
});

describe("a purchase of no amount", () => {
  it("still counts as one transaction of its window (spend_limit_frequency counts transactions, not money), alone on its day", () => {
    const { nowMs, state, data, purchase, allTime } = purchaseOnAllTimeCard();
    const before = consumedOf(allTime, data, nowMs);
    const cost = amountOf(purchase!);
    // Tomorrow holds no other spend of the card: its day's total is this purchase's alone, 0.00 in one transaction. Nothing
    // reversed it: reversals of all of its 0 would not be none.
    state.patchTransaction(data, purchase!.id, { transaction_time: new Date(nowMs + 86_400_000).toISOString(), transaction_amount: 0, billing_amount: 0, transaction_fee_amount: 0 });
    expect(consumedOf(allTime, data, nowMs)).toEqual({ amount: round2(before.amount - cost), count: before.count });
  });
});

describe("a purchase a control PATCH dates after its window", () => {
  it("is consumed from no window but the one it is now dated in, as the company summary counts it (spec-gaps, Spend limits)", () => {
    const { nowMs, state, data, purchase, allTime } = purchaseOnAllTimeCard();
    const monthly = { ...allTime, spendLimit: { ...allTime.spendLimit, period: "MONTHLY" } };
    const before = consumedOf(monthly, data, nowMs);
    // 2025-08-14 now: dated into September, it is no longer spend of August's window, and it is September's.
    const september = Date.parse("2025-09-03T09:00:00.000Z");
    state.patchTransaction(data, purchase.id, { transaction_time: new Date(september).toISOString() });
    expect(consumedOf(monthly, data, nowMs)).toEqual({ amount: round2(before.amount - amountOf(purchase)), count: before.count - 1 });
    expect(consumedOf(monthly, data, september)).toEqual({ amount: amountOf(purchase), count: 1 });
  });
});

describe("a purchase reversed in full in parts", () => {
  it("is no transaction of its window, whatever the float sum of its reversals' amounts (0.12 + 0.05 is under 0.17)", () => {
    const { nowMs, state, data, purchase, allTime } = purchaseOnAllTimeCard();
    const before = consumedOf(allTime, data, nowMs).count;
    state.patchTransaction(data, purchase!.id, { transaction_amount: 0.17 });
    // The first reversal reverses all of it; changed to part, a second reverses the rest.
    const [first] = state.createTransactions(data, { count: 1, category: "reversal", parentQashioId: purchase!.qashio_id });
    state.patchTransaction(data, first!.id, { transaction_amount: 0.12 });
    const [second] = state.createTransactions(data, { count: 1, category: "reversal", parentQashioId: purchase!.qashio_id });
    expect(second!.transaction_amount).toBe(0.05);
    expect(consumedOf(allTime, data, nowMs).count).toBe(before - 1);
  });
});

describe("spend made as the day turns, on a clock that follows real time", () => {
  // Real time moves while the sandbox makes a transaction: here past midnight between dating it (its stamp) and
  // weighing its spend limit. It must be weighed in the window it is dated in, where the day's count is used up.
  it("weighs a purchase against the limit of the day it is dated in, the clock passing midnight meanwhile", () => {
    let real = 0;
    let readings = Number.NEGATIVE_INFINITY;
    vi.spyOn(performance, "now").mockImplementation(() => ((readings += 1) > 1 ? real + 2 : real));
    try {
      const midnight = Date.parse("2025-08-15T00:00:00.000Z");
      const state = new SandboxState({ seed: 7, startTime: midnight - 10, latencyMs: 0, realTime: true, accessTokenTtlSeconds: 3600 });
      state.reset({ transactions: 50 });
      const data = state.listCompanies()[0]!;
      fillAccounts(data);
      const card = data.cards.find((c) => c.status === "Active" && c.poolAccountId === null)!;
      for (const other of data.cards) if (other !== card && other.poolAccountId === null) other.balance = 0;
      for (const pool of data.pools) pool.balance = 0;
      const day = () => consumedOf({ ...card, spendLimit: { ...card.spendLimit, period: "DAILY" } }, data, midnight - 1).count;
      Object.assign(card.spendLimit, { active: true, period: "DAILY", maxAmount: 400_000, frequency: day() + 1 });
      expect(state.createTransactions(data, { count: 1, category: "purchase" })).toHaveLength(1);
      real = 9;
      readings = 0;
      expect(state.createTransactions(data, { count: 1, category: "purchase" })).toEqual([]);
      expect(day()).toBe(card.spendLimit.frequency);
    } finally {
      vi.restoreAllMocks();
    }
  });
});
