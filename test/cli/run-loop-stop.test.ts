/**
 * `bridge run --interval` stopped by a signal before its first cycle or in the middle of one, in this process: the
 * loop's waits stand in for the interval, so no test waits it out.
 */
import { describe, expect, it } from "vitest";
import { EXIT } from "../../shared/cli/errors.js";
import { runCommand } from "../../shared/cli/run.js";
import { capturedIo, harnessPerTest, idsWithStatus, readEvents, runInProcess } from "./helpers.js";

const startHarness = harnessPerTest();

describe("bridge run (loop) stopped by a signal", () => {
  it("runs no cycle when the stop came while it started (settings read, bridge opened): nothing sent, 'stopped after 0 cycles', exit 0", async () => {
    const h = await startHarness();
    const pending = idsWithStatus(h, "not_synced", "outdated");
    const controller = new AbortController();
    controller.abort();
    const { io, out } = capturedIo(h, controller.signal);
    const pauses: number[] = [];

    const code = await runCommand({ once: false, intervalMs: 60_000 }, io, { pause: async (ms) => void pauses.push(ms) });

    expect(code).toBe(EXIT.ok);
    expect(out.stdout).not.toContain("cycle 1:");
    expect(out.stderr).toMatch(/^bridge: stopped after 0 cycles$/m);
    expect(pauses).toEqual([]);
    expect(await readEvents(h.eventsFile)).toEqual([]);
    expect(idsWithStatus(h, "not_synced", "outdated")).toEqual(pending);
  });

  it.each([
    [3_600_000, "1h"],
    [90_000, "1m30s"],
  ])("says it polls every %i ms in the interval's own units (%s), not in seconds", async (intervalMs, said) => {
    const h = await startHarness();
    const controller = new AbortController();
    controller.abort();
    const { io, out } = capturedIo(h, controller.signal);

    expect(await runCommand({ once: false, intervalMs }, io, { pause: async () => undefined })).toBe(EXIT.ok);
    expect(out.stderr).toMatch(new RegExp(`^bridge: polling every ${said}; Ctrl-C stops after the page in hand$`, "m"));
  });

  it("stops a cycle in progress after the page in hand, exits 0 with no second cycle, and the next run delivers the rest", async () => {
    const h = await startHarness({ transactions: 1_000 });
    const pending = idsWithStatus(h, "not_synced", "outdated");
    const controller = new AbortController();
    const { io, out } = capturedIo(h, controller.signal);
    const pauses: number[] = [];

    // The stop comes as the first page's events are published: ten pages of 100 are left to walk.
    const code = await runCommand({ once: false, intervalMs: 60_000 }, io, {
      onPublished: () => controller.abort(),
      pause: async (ms) => void pauses.push(ms),
    });

    expect(code).toBe(EXIT.ok);
    expect(out.stdout).toMatch(/cycle 1: .*stopped as asked, the next run resumes/);
    expect(out.stdout).not.toContain("cycle 2:");
    expect(out.stderr).toMatch(/^bridge: stopped after 1 cycle$/m);
    const first = new Set((await readEvents(h.eventsFile)).map((e) => e.detail.subject.id));
    expect(first.size).toBeGreaterThan(0);
    expect(first.size).toBeLessThan(pending.length);

    // The lease was given back and nothing was lost: a run after it finishes the walk.
    expect((await runInProcess(["run", "--once"], h.env)).code).toBe(EXIT.ok);
    expect(new Set((await readEvents(h.eventsFile)).map((e) => e.detail.subject.id))).toEqual(new Set(pending));
    expect(idsWithStatus(h, "not_synced", "outdated")).toEqual([]);
  });
});
