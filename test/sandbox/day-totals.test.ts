import { describe, expect, it } from "vitest";
import { DayTotals } from "../../sandbox/data/day-totals.js";

const MARCH = [Date.UTC(2025, 2, 1), Date.UTC(2025, 3, 1)] as const;

describe("DayTotals", () => {
  it("counts nothing for a time that reads as no date, in any window", () => {
    const totals = new DayTotals();
    totals.set("a", "card-1", "2025-03-10T10:00:00.000Z", { cents: 500, count: 1 });
    totals.set("b", "card-1", "not a date", { cents: 700, count: 1 });
    expect([totals.sum("card-1", -Infinity), totals.sum("card-1", ...MARCH)]).toEqual([
      { cents: 500, count: 1 },
      { cents: 500, count: 1 },
    ]);
  });

  it("keeps what a let-go transaction counted: taking it back or counting its id again takes none of it back", () => {
    const totals = new DayTotals();
    totals.set("a", "card-1", "2025-03-10T10:00:00.000Z", { cents: 500, count: 1 });
    totals.keep("a");
    totals.remove("a");
    expect(totals.sum("card-1", -Infinity)).toEqual({ cents: 500, count: 1 });
    totals.set("a", "card-1", "2025-03-11T10:00:00.000Z", { cents: 200, count: 1 });
    expect(totals.sum("card-1", -Infinity)).toEqual({ cents: 700, count: 2 });
  });

  it("keeps counting a day whose amounts net to 0 while transactions on it still count (a purchase made free counts as one)", () => {
    const totals = new DayTotals();
    totals.set("free", "card-1", "2025-03-10T10:00:00.000Z", { cents: 0, count: 1 });
    totals.set("spent", "card-1", "2025-03-12T10:00:00.000Z", { cents: 300, count: 1 });
    totals.set("back", "card-1", "2025-03-12T11:00:00.000Z", { cents: -300, count: 0 });
    expect(totals.sum("card-1", ...MARCH)).toEqual({ cents: 0, count: 2 });
    totals.remove("back");
    expect(totals.sum("card-1", ...MARCH)).toEqual({ cents: 300, count: 2 });
  });
});
