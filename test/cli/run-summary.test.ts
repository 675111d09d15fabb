/** run's summary line of a cycle, from both halves' reports (formatCycleSummary's own wording is printer.test.ts's). */
import { describe, expect, it } from "vitest";
import { emptyReport } from "../../shared/bridge/report.js";
import { NO_COLOURS } from "../../shared/cli/printer.js";
import { summaryOf } from "../../shared/cli/run.js";

describe("summaryOf", () => {
  it("says the event sink took no events for now when only the cards walk found it so, not that the cycle ran out of budget", () => {
    const cards = { ...emptyReport("cards"), outcome: "publisher_unavailable" as const };
    const result = { transactions: emptyReport("transactions"), cards, events: 0, complete: false, interrupted: false, durationMs: 4, quarantineSize: 0 };
    expect(summaryOf(1, result, NO_COLOURS)).toBe("── cycle 1: 0 events · 0 acknowledged · 0 quarantined · 4 ms · stopped: the event sink takes no events for now, resumes next cycle");
  });
});
