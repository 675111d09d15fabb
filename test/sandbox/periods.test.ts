import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { calendarWindow, windowIndex } from "../../sandbox/data/periods.js";

const PERIODS = ["DAILY", "WEEKLY", "MONTHLY", "QUARTERLY", "YEARLY"] as const;

describe("calendar windows and their ordinals (spec-gaps, Spend limits: calendar periods in UTC)", () => {
  // Top-ups count the windows between two instants by subtracting ordinals (balances.ts): an ordinal that did not
  // step by one exactly where the calendar window ends would give a card too many or too few top-ups.
  it("steps the ordinal by one exactly at each window's end, and holds it within the window", () => {
    const instant = fc.integer({ min: Date.UTC(1971, 0, 1), max: Date.UTC(2100, 0, 1) });
    fc.assert(
      fc.property(fc.constantFrom(...PERIODS), instant, (period, at) => {
        const window = calendarWindow(period, at)!;
        const index = windowIndex(period, at)!;
        expect(window.start).toBeLessThanOrEqual(at);
        expect(window.next).toBeGreaterThan(at);
        expect(windowIndex(period, window.start)).toBe(index);
        expect(windowIndex(period, window.next - 1)).toBe(index);
        expect(windowIndex(period, window.next)).toBe(index + 1);
        expect(windowIndex(period, window.start - 1)).toBe(index - 1);
      }),
      { numRuns: 500 },
    );
  });

  it("starts quarters in January, April, July and October, and weeks on Monday", () => {
    expect(calendarWindow("QUARTERLY", Date.UTC(2025, 4, 15))).toEqual({ start: Date.UTC(2025, 3, 1), next: Date.UTC(2025, 6, 1) });
    expect(windowIndex("QUARTERLY", Date.UTC(2025, 3, 1)) ! - windowIndex("QUARTERLY", Date.UTC(2025, 2, 31))!).toBe(1);
    // 2025-11-26 was a Wednesday.
    expect(calendarWindow("WEEKLY", Date.UTC(2025, 10, 26, 12))).toEqual({ start: Date.UTC(2025, 10, 24), next: Date.UTC(2025, 11, 1) });
  });

  it("knows no other period", () => {
    expect(calendarWindow("HOURLY", 0)).toBeUndefined();
    expect(windowIndex("HOURLY", 0)).toBeUndefined();
  });
});
