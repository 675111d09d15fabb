import { describe, expect, it } from "vitest";
import { followNew, forgetGone, holdSeeded, nextTopUpAfter, shareOf, spendableOf, type Hold } from "../../sandbox/data/balances.js";
import type { CardRecord, CompanyData, TransactionRecord } from "../../sandbox/data/model.js";
import { createSandbox } from "../../sandbox/index.js";

/**
 * `collection` behind a proxy counting the entries asked for: one per call by key (get, has, delete, ...), one per
 * entry walked, by an iterator or forEach.
 */
function counted<C extends Map<string, Hold> | Set<string>>(collection: C): { collection: C; visits: () => number } {
  let visits = 0;
  const walked = (iterator: Iterator<unknown>): IterableIterator<unknown> => {
    const counting: IterableIterator<unknown> = {
      next: () => {
        const step = iterator.next();
        if (step.done !== true) visits++;
        return step;
      },
      [Symbol.iterator]: () => counting,
    };
    return counting;
  };
  const proxy = new Proxy(collection, {
    get(target, key) {
      const member: unknown = Reflect.get(target, key, target);
      if (typeof member !== "function") return member;
      return (...args: unknown[]) => {
        if (key === "forEach") {
          const each = args[0] as (...entry: unknown[]) => void;
          args[0] = (...entry: unknown[]) => {
            visits++;
            each(...entry);
          };
        } else visits++;
        const result: unknown = (member as (...a: unknown[]) => unknown).apply(target, args);
        return typeof result === "object" && result !== null && "next" in result ? walked(result as Iterator<unknown>) : result;
      };
    },
  });
  return { collection: proxy, visits: () => visits };
}

const RETAINED = 5_000;

describe("forgetGone (what balances keep of transactions the company forgot)", () => {
  /** A seeded card holding RETAINED authorisations of 1 each (T0, T1, ...), and as many marks of loads on approval. */
  function retained() {
    const { control } = createSandbox({ seed: 7 });
    const card: CardRecord = control.company(control.companies()[0]!.id)!.cards[0]!;
    card.pendingAuthorisations = RETAINED;
    const holds = counted(new Map<string, Hold>());
    const loadedOnApproval = counted(new Set<string>());
    for (let i = 0; i < RETAINED; i++) {
      holds.collection.set(`T${i}`, { card, amount: 1 });
      loadedOnApproval.collection.add(`T${i}`);
    }
    const visits = () => holds.visits() + loadedOnApproval.visits();
    const setUp = visits();
    return { card, balances: { holds: holds.collection, loadedOnApproval: loadedOnApproval.collection }, visits: () => visits() - setUp };
  }
  const gone = (...ids: string[]) => ids.map((id) => ({ id }) as TransactionRecord);

  it("lets the holds of the forgotten lapse and drops their marks, leaving the others'", () => {
    const { card, balances } = retained();
    forgetGone(balances, gone("T1", "T4999", "NEVER-HELD"));
    expect(card.pendingAuthorisations).toBe(RETAINED - 2);
    expect([balances.holds.size, balances.loadedOnApproval.size]).toEqual([RETAINED - 2, RETAINED - 2]);
    expect([balances.holds.has("T1"), balances.holds.has("T4999"), balances.loadedOnApproval.has("T1"), balances.holds.has("T0")]).toEqual([false, false, false, true]);
  });

  it("costs what was forgotten, not what is retained: a few look-ups per transaction forgotten, none for nothing forgotten", () => {
    const { balances, visits } = retained();
    forgetGone(balances, gone());
    expect(visits(), "nothing forgotten").toBe(0);
    forgetGone(balances, gone("T7", "T8", "T9"));
    expect(visits(), "three forgotten").toBeLessThanOrEqual(3 * 4);
  });

  it("counts, by the proxy these tests use, every entry a walk visits", () => {
    const { balances, visits } = retained();
    expect([...balances.holds.keys()].length + [...balances.loadedOnApproval].length).toBe(2 * RETAINED);
    balances.loadedOnApproval.forEach(() => undefined);
    expect(visits()).toBeGreaterThanOrEqual(3 * RETAINED);
  });
});

describe("auto top-up when low (spec-gaps, Balances: balance_below_threshold)", () => {
  it("tops up once spend leaves what the account can spend below its threshold, not when it lands on it", () => {
    const { control } = createSandbox({ seed: 7 });
    const data = control.company(control.companies()[0]!.id)!;
    const card = data.cards.find((c) => c.poolAccountId === null)!;
    Object.assign(card, {
      balance: 150,
      pendingAuthorisations: 0,
      autoTopUpEnabled: true,
      autoLoadOnTransactionApproval: false,
      autoTopUpAmount: 500,
      lowBalanceNotificationAmount: 100,
      allowedMaxBalance: 1e9,
    });
    data.company.fundingBalance = 1_000_000;
    let n = 0;
    // A cleared purchase made now: it falls on the balance at once, no hold, no approval to load on.
    const spend = (amount: number) =>
      followNew(data, {
        id: `SPEND-${n++}`,
        card_external_id: card.id,
        transaction_category: "purchase",
        clearing_status: "cleared",
        approval_status: "pending",
        billing_amount: amount,
        transaction_fee_amount: 0,
      } as unknown as TransactionRecord);

    spend(50);
    expect([spendableOf(card, data), data.company.fundingBalance], "on the threshold: no top-up").toEqual([100, 1_000_000]);
    spend(0.01);
    expect([spendableOf(card, data), data.company.fundingBalance], "a cent below: topped up").toEqual([599.99, 999_500]);
  });
});

describe("holdSeeded (the seeded spend not yet cleared, held as new spend is)", () => {
  it("holds each pending purchase within what its account can still spend (none when nothing is left) and lets a reversal release its share, never more than is held", () => {
    const { control } = createSandbox({ seed: 7 });
    const seeded = control.company(control.companies()[0]!.id)!;
    const card = seeded.cards.find((c) => c.poolAccountId === null)!;
    // What the card held before is no transaction's: it goes.
    Object.assign(card, { balance: 100, pendingAuthorisations: 7 });
    const tx = (id: string, fields: Partial<TransactionRecord>) =>
      ({ id, card_external_id: card.id, clearing_status: "pending", parent_id: null, transaction_fee_amount: 0, ...fields }) as TransactionRecord;
    const history = [
      tx("P1", { transaction_category: "purchase", billing_amount: 70, transaction_fee_amount: 10, transaction_amount: 70 }),
      // Only 20 left to spend: held at that, not its 50.
      tx("P2", { transaction_category: "purchase", billing_amount: 50, transaction_amount: 50 }),
      tx("P3", { transaction_category: "cash_withdrawal", billing_amount: 5, transaction_amount: 5 }),
      tx("P4", { transaction_category: "purchase", clearing_status: "cleared", billing_amount: 9, transaction_amount: 9 }),
      // Half of P1: its fee-inclusive share, 40, goes.
      tx("R1", { transaction_category: "reversal", parent_id: "P1", billing_amount: 35, transaction_amount: 35 }),
      // All of P2, which holds only 20: the 20 goes, and nothing of P1's.
      tx("R2", { transaction_category: "reversal", parent_id: "P2", billing_amount: 50, transaction_amount: 50 }),
    ];
    const data = {
      ...seeded,
      cards: [card],
      // A hold kept from before is no seeded transaction's either: it goes too.
      holds: new Map<string, Hold>([["STALE", { card, amount: 7 }]]),
      transactions: { all: () => history, get: (id: string) => history.find((t) => t.id === id) },
    } as unknown as CompanyData;
    holdSeeded(data);
    expect([...data.holds].map(([id, hold]) => [id, hold.amount])).toEqual([["P1", 40]]);
    expect([card.pendingAuthorisations, spendableOf(card, data)]).toEqual([40, 60]);
  });
});

describe("followNew (spend made now)", () => {
  it("lets spend made cleared fall on its account's balance at once, holding nothing; spend not yet cleared is held, the balance left as it was", () => {
    const { control } = createSandbox({ seed: 7 });
    const data = control.company(control.companies()[0]!.id)!;
    const card = data.cards.find((c) => c.poolAccountId === null)!;
    // Manual top-up: nothing comes back to blur what the spend moved.
    Object.assign(card, { balance: 1000, pendingAuthorisations: 0, autoTopUpEnabled: false, autoTopUpAmount: 0 });
    const spend = (id: string, clearing_status: string) =>
      followNew(data, {
        id,
        card_external_id: card.id,
        transaction_category: "purchase",
        clearing_status,
        approval_status: "pending",
        billing_amount: 100,
        transaction_fee_amount: 2,
      } as unknown as TransactionRecord);

    spend("CLEARED", "cleared");
    expect([card.balance, card.pendingAuthorisations, data.holds.has("CLEARED")], "cleared").toEqual([898, 0, false]);
    spend("PENDING", "pending");
    expect([card.balance, card.pendingAuthorisations, data.holds.get("PENDING")?.amount], "pending").toEqual([898, 102, 102]);
  });
});

describe("shareOf (what part of a purchase an amount of its transaction_amount stands for)", () => {
  const purchase = (transaction_amount: unknown) => ({ transaction_amount, billing_amount: 100, transaction_fee_amount: 2 }) as unknown as TransactionRecord;

  it("stands for its part of the fee-inclusive purchase", () => {
    expect(shareOf(purchase(50), 25)).toBe(51);
  });

  it("stands for nothing of a purchase whose transaction_amount is not above 0 (a control PATCH may store one)", () => {
    expect([shareOf(purchase(0), 25), shareOf(purchase(-50), 25)]).toEqual([0, 0]);
  });
});

describe("nextTopUpAfter (when a top-up per velocity_period falls due)", () => {
  const now = Date.UTC(2025, 2, 10, 12);

  it("falls due at the start of the next calendar period", () => {
    expect(nextTopUpAfter("MONTHLY", now)).toBe(Date.UTC(2025, 3, 1));
  });

  it("never falls due for a period with no calendar window, rather than at once on every clock move", () => {
    expect(nextTopUpAfter("FORTNIGHTLY", now)).toBe(Infinity);
  });
});
