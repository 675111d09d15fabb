/** run's summary line of a cycle, from both halves' reports (formatCycleSummary's own wording is printer.test.ts's). */
import { describe, expect, it } from "vitest";
import { emptyReport } from "../../shared/bridge/report.js";
import { EXIT } from "../../shared/cli/errors.js";
import { NO_COLOURS } from "../../shared/cli/printer.js";
import { runCommand, summaryOf } from "../../shared/cli/run.js";
import { capturedIo, harnessPerTest } from "./helpers.js";

const startHarness = harnessPerTest();
const ESCAPE = "\u001b[";

describe("summaryOf", () => {
  it("says the event sink took no events for now when only the cards walk found it so, not that the cycle ran out of budget", () => {
    const cards = { ...emptyReport("cards"), outcome: "publisher_unavailable" as const };
    const result = { transactions: emptyReport("transactions"), cards, events: 0, complete: false, interrupted: false, durationMs: 4, quarantineSize: 0 };
    expect(summaryOf(1, result, NO_COLOURS)).toBe("── cycle 1: 0 events · 0 acknowledged · 0 quarantined · 4 ms · stopped: the event sink takes no events for now, resumes next cycle");
  });
});

describe("bridge run --once summary colours", () => {
  it("prints the summary without colour to a pipe, and in colour there when FORCE_COLOR asks for it", async () => {
    const h = await startHarness();
    const piped = capturedIo(h, new AbortController().signal);
    expect(await runCommand({ once: true, intervalMs: 60_000 }, piped.io)).toBe(EXIT.ok);
    expect(piped.out.stdout).toContain("cycle 1:");
    expect(piped.out.stdout).not.toContain(ESCAPE);

    const forced = capturedIo({ ...h, env: { ...h.env, FORCE_COLOR: "1" } }, new AbortController().signal);
    expect(await runCommand({ once: true, intervalMs: 60_000 }, forced.io)).toBe(EXIT.ok);
    expect(forced.out.stdout).toContain("cycle 1:");
    expect(forced.out.stdout).toContain(ESCAPE);
  });
});
