import { describe, expect, it } from "vitest";
import { windowStart } from "../../sandbox/data/spend-limits.js";

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
