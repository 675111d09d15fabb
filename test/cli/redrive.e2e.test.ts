/**
 * End-to-end, in-process: `bridge redrive` against the sandbox after a run whose publisher refused one event for good,
 * and after an earlier validation rule quarantined (and acknowledged) a transaction the current one accepts.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { BridgeEvent, EventPublisher, PublishFailure } from "../../shared/bridge/ports.js";
import { EXIT } from "../../shared/cli/errors.js";
import { formatRedriveSummary, redriveOutcome } from "../../shared/cli/redrive.js";
import { KEPT_RECORDS_NAMED, REDRIVEN_RECORDS_NAMED, type KeptRecord, type RedriveReport } from "../../shared/bridge/redrive.js";
import { emptyReport } from "../../shared/bridge/report.js";
import { runCommand } from "../../shared/cli/run.js";
import { quarantineId } from "../../shared/bridge/quarantine-id.js";
import { JsonlEventPublisher, FileQuarantine } from "../../shared/local/index.js";
import { harnessPerTest, idsWithStatus, readEvents, runInProcess } from "./helpers.js";

const startHarness = harnessPerTest();

/** The JSONL publisher, except that events of `refused` fail for good. */
function refusing(file: string, refused: string): EventPublisher {
  const inner = new JsonlEventPublisher({ file });
  return {
    async publish(events: readonly BridgeEvent[]) {
      const failed: PublishFailure[] = events.filter((e) => e.detail.subject.id === refused).map((event) => ({ event, reason: "AccessDeniedException: test" }));
      await inner.publish(events.filter((e) => e.detail.subject.id !== refused));
      return { failed };
    },
  };
}

/** A sandbox harness after one `run --once` whose publisher refused one pending transaction's event for good. */
async function runWithOneRefused() {
  const h = await startHarness();
  const [victim] = idsWithStatus(h, "not_synced");
  if (victim === undefined) throw new Error("no pending transaction");
  const io = { env: h.env, cwd: h.dir, stdout: { write: () => true }, stderr: { write: () => true }, signal: new AbortController().signal };
  const runCode = await runCommand({ once: true, intervalMs: 60_000 }, io, { publisher: refusing(h.eventsFile, victim) });
  return { h, victim, io, runCode };
}

/** A re-drive's report that kept `records`, shaped as redriveQuarantined shapes it (the first KEPT_RECORDS_NAMED named). */
function keptReport(records: readonly KeptRecord[], considered: number, more: Partial<RedriveReport> = {}): RedriveReport {
  const keptByWhy: Partial<Record<KeptRecord["why"], number>> = {};
  for (const { why } of records) keptByWhy[why] = (keptByWhy[why] ?? 0) + 1;
  const named = records.slice(0, KEPT_RECORDS_NAMED);
  const unnamed = records.length - named.length;
  return { considered, redriven: [], kept: named, keptByWhy, ...(unnamed > 0 ? { keptNotNamed: unnamed } : {}), cycle: emptyReport("transactions"), ...more };
}

describe("bridge redrive (in-process)", () => {
  it("publishes the transaction whose event failed for good, removes its quarantine record and exits 0", async () => {
    const { h, victim, runCode } = await runWithOneRefused();
    expect(runCode).toBe(EXIT.ok);
    expect((await readEvents(h.eventsFile)).map((e) => e.detail.subject.id)).not.toContain(victim);
    // Acknowledged with the rest: no later run would pull it again.
    expect(idsWithStatus(h, "not_synced", "outdated")).toEqual([]);
    const quarantine = new FileQuarantine(h.env.BRIDGE_STATE_DIR!);
    expect((await quarantine.list()).map((r) => r.entityId)).toEqual([victim]);

    const { code, stdout } = await runInProcess(["redrive"], h.env, undefined, h.dir);
    expect(code).toBe(EXIT.ok);
    expect(stdout).toMatch(/re-drive: 1 of 1 quarantine records delivered and removed · 0 kept/);
    const created = (await readEvents(h.eventsFile)).filter((e) => e.detail.subject.id === victim);
    expect(created.map((e) => e["detail-type"])).toEqual(["transaction.created"]);
    expect(await quarantine.list()).toEqual([]);

    const again = await runInProcess(["redrive"], h.env, undefined, h.dir);
    expect(again).toMatchObject({ code: EXIT.ok, stdout: expect.stringMatching(/no quarantine records to re-drive/) });
  });

  it("publishes a transaction an earlier validation rule quarantined and acknowledged, once it validates, and removes its record", async () => {
    const h = await startHarness();
    const store = h.sandbox.control.company(h.companyId)!.transactions;
    const tx = store.all().find((t) => t.client_sync_status === "not_synced" && t.parent_qashio_id === null);
    if (tx === undefined) throw new Error("no pending transaction");
    // What a cycle under a rule that wrongly refused it left: the transaction acknowledged, its body quarantined.
    store.setSyncStatus(tx, "synced");
    expect((await runInProcess(["run", "--once"], h.env, undefined, h.dir)).code).toBe(EXIT.ok);
    expect((await readEvents(h.eventsFile)).map((e) => e.detail.subject.id)).not.toContain(tx.id);
    // Put after that run made the state directory (binding, tokens): a run takes no directory holding only records.
    const raw = { id: tx.id, qashio_id: tx.qashio_id };
    const quarantine = new FileQuarantine(h.env.BRIDGE_STATE_DIR!);
    await quarantine.put({ id: quarantineId("acme", "transaction", "validation", raw), kind: "transaction", reason: "validation: memo: too long", raw, at: "2026-01-01T00:00:00.000Z", entityId: tx.id });

    const { code, stdout } = await runInProcess(["redrive"], h.env, undefined, h.dir);
    expect(code).toBe(EXIT.ok);
    expect(stdout).toMatch(/re-drive: 1 of 1 quarantine records delivered and removed · 0 kept/);
    const created = (await readEvents(h.eventsFile)).filter((e) => e.detail.subject.id === tx.id);
    expect(created.map((e) => e["detail-type"])).toEqual(["transaction.created"]);
    expect(await quarantine.list()).toEqual([]);
    expect((await runInProcess(["redrive"], h.env, undefined, h.dir)).stdout).toMatch(/no quarantine records to re-drive/);
  });

  it("says a publish record without a qashio_id cannot be re-driven and what to do instead, keeps it, and exits 1", async () => {
    const h = await startHarness();
    expect((await runInProcess(["run", "--once"], h.env, undefined, h.dir)).code).toBe(EXIT.ok);
    // What a publisher of one's own (or an earlier version) may leave: an event refused for good, its body without qashio_id.
    const raw = { id: "5d0c2a8e-6b1f-4c3e-9a7d-2f4b8c1e0a11", amount: 1 };
    const record = { id: quarantineId("acme", "transaction", "publish", raw), kind: "transaction" as const, reason: "publish: AccessDeniedException: test", raw, at: "2026-01-01T00:00:00.000Z", entityId: raw.id };
    const quarantine = new FileQuarantine(h.env.BRIDGE_STATE_DIR!);
    await quarantine.put(record);

    for (let run = 0; run < 2; run += 1) {
      const { code, stdout, stderr } = await runInProcess(["redrive"], h.env, undefined, h.dir);
      expect(code).toBe(EXIT.failed);
      expect(stdout).toContain(`  kept ${record.id} (transaction ${raw.id}): no transaction id or qashio_id in the record: cannot be re-driven`);
      expect(stderr).toContain("1 quarantine record kept that no re-drive can deliver (marked above; docs/runbook.md, Re-driving quarantined transactions)");
      expect(stderr).not.toContain("fix the cause");
      // Nothing is lost: the record stays, as it was.
      expect(await quarantine.list()).toEqual([record]);
    }
  });

  it("counts every record removed, those the report names and those it only counts", () => {
    const removed = Array.from({ length: REDRIVEN_RECORDS_NAMED }, (_, i) => ({ id: `q${i}`, kind: "transaction" as const, reason: "publish: x", at: "2026-01-01T00:00:00Z" }));
    const done = keptReport([], REDRIVEN_RECORDS_NAMED + 50, { redriven: removed, redrivenNotNamed: 50 });
    expect(formatRedriveSummary(done)).toBe(`re-drive: ${REDRIVEN_RECORDS_NAMED + 50} of ${REDRIVEN_RECORDS_NAMED + 50} quarantine records delivered and removed · 0 kept`);
  });

  describe("a re-drive cut short by its time budget", () => {
    const kept = (n: number, why: KeptRecord["why"], prefix = "q"): KeptRecord[] =>
      Array.from({ length: n }, (_, i) => ({ record: { id: `${prefix}${i}`, kind: "transaction", entityId: `t${i}`, reason: "publish: x", at: "2026-01-01T00:00:00Z" }, why }));
    const report = (records: KeptRecord[]): RedriveReport => keptReport(records, records.length + 2);

    it("exits 4 naming the budget, with records not reached counted rather than listed one per line", () => {
      const stopped = report(kept(250, "not reached before the deadline"));
      expect(formatRedriveSummary(stopped)).toBe(
        "re-drive: 0 of 252 quarantine records delivered and removed · 250 kept (250 not reached: stopped at the time budget, BRIDGE_CYCLE_BUDGET)",
      );
      const { lines, error } = redriveOutcome(stopped);
      expect(lines).toEqual([]);
      expect(error).toMatchObject({ exitCode: EXIT.incomplete, message: "the re-drive stopped at its time budget (BRIDGE_CYCLE_BUDGET) with 250 quarantine records not reached: run redrive again to go on" });
    });

    it("exits 4 when it stopped walking the quarantine, saying the rest was not looked at, also when nothing was considered yet", () => {
      const stopped = keptReport(kept(3, "not reached before the deadline"), 3, { notScanned: true });
      expect(formatRedriveSummary(stopped)).toBe(
        "re-drive: 0 of 3 quarantine records delivered and removed · 3 kept (3 not reached, the rest of the quarantine not looked at: stopped at the time budget, BRIDGE_CYCLE_BUDGET)",
      );
      expect(redriveOutcome(stopped).error).toMatchObject({
        exitCode: EXIT.incomplete,
        message:
          "the re-drive stopped at its time budget (BRIDGE_CYCLE_BUDGET) with 3 quarantine records not reached and the rest of the quarantine not looked at yet: run redrive again to go on",
      });
      const early = keptReport([], 0, { notScanned: true });
      expect(formatRedriveSummary(early, { interrupted: true })).toBe(
        "re-drive: 0 of 0 quarantine records delivered and removed · 0 kept (the rest of the quarantine not looked at: stopped as asked)",
      );
      expect(redriveOutcome(early).error).toMatchObject({ exitCode: EXIT.incomplete });
    });

    it("lists at most KEPT_RECORDS_NAMED records kept for a cause and counts the others in a line and in the error", () => {
      const { lines, error } = redriveOutcome(report(kept(KEPT_RECORDS_NAMED + 7, "its event was not published")));
      expect(lines).toHaveLength(KEPT_RECORDS_NAMED + 1);
      expect(lines.at(-1)).toBe("  … and 7 more kept for a cause (the log counts them by why)");
      expect(error).toMatchObject({ kept: KEPT_RECORDS_NAMED + 7, message: `${KEPT_RECORDS_NAMED + 7} quarantine records kept; fix the cause (see the log) and run redrive again` });
    });

    it("exits 1 while some record is kept for a cause, listing those and counting the ones not reached", () => {
      const { lines, error } = redriveOutcome(report([...kept(2, "its event was not published", "held"), ...kept(3, "not reached before the deadline")]));
      expect(lines).toEqual(["  kept held0 (transaction t0): its event was not published", "  kept held1 (transaction t1): its event was not published"]);
      expect(error).toMatchObject({
        name: "RedriveIncompleteError",
        exitCode: EXIT.failed,
        kept: 5,
        message: "2 quarantine records kept; fix the cause (see the log) and run redrive again; 3 quarantine records not reached yet",
      });
    });

    it("exits 1 for a record kept for a cause, also saying the rest of the quarantine was not looked at when the walk stopped short", () => {
      // Exit 1 outranks exit 4: without this part the person fixes the cause and may not know a run is still owed.
      const stopped = keptReport(kept(1, "its event was not published", "held"), 1, { notScanned: true });
      expect(redriveOutcome(stopped).error).toMatchObject({
        name: "RedriveIncompleteError",
        exitCode: EXIT.failed,
        message: "1 quarantine record kept; fix the cause (see the log) and run redrive again; the rest of the quarantine not looked at yet",
      });
    });
  });

  describe("records no re-drive can deliver", () => {
    const record = (id: string, entityId?: string) => ({ id, kind: "transaction" as const, entityId, reason: "publish: x", at: "2026-01-01T00:00:00Z" });
    const report = (records: KeptRecord[]): RedriveReport => keptReport(records, records.length);

    it("marks each with what to do instead and, when only such records are kept, does not ask to fix a cause and run again", () => {
      const { lines, error } = redriveOutcome(
        report([
          { record: record("q0"), why: "no transaction id or qashio_id in the record" },
          { record: record("q1", "t1"), why: "not found at the provider" },
          { record: record("q2", "t2"), why: "the provider refuses to read it by its qashio_id" },
        ]),
      );
      expect(lines).toEqual([
        "  kept q0 (transaction unknown): no transaction id or qashio_id in the record: cannot be re-driven (nothing to read it again by): " +
          "put the transaction's qashio_id in the record's body and run redrive again, or have the transaction edited at the provider",
        "  kept q1 (transaction t1): not found at the provider: cannot be re-driven (the transaction is gone, or the record's qashio_id is not its): " +
          "check with the provider, then delete the record by hand",
        "  kept q2 (transaction t2): the provider refuses to read it by its qashio_id: cannot be re-driven while it does (the log has the status): " +
          "raise it with the provider",
      ]);
      expect(error).toMatchObject({
        name: "RedriveIncompleteError",
        exitCode: EXIT.failed,
        kept: 3,
        message: "3 quarantine records kept that no re-drive can deliver (marked above; docs/runbook.md, Re-driving quarantined transactions)",
      });
    });

    it.each<{ why: KeptRecord["why"]; instead: string }>([
      {
        why: "its qashio_id lists more transactions than a re-drive reads",
        instead:
          "cannot be re-driven (the provider lists it, if at all, behind more transactions under its qashio_id than a re-drive reads): " +
          "have the transaction edited at the provider (the next cycle then delivers it), then delete the record by hand",
      },
      {
        why: "not found by its qashio_id, which no publish record confirms",
        instead:
          "cannot be re-driven by that qashio_id (maybe the field that failed validation): look the transaction up at the provider by its id, named above: " +
          "gone, delete the record by hand; there, have it edited at the provider (the next cycle delivers it, and the next re-drive removes the record)",
      },
    ])("marks a record kept as '$why' with what to do instead", ({ why, instead }) => {
      const { lines, error } = redriveOutcome(report([{ record: record("q0", "t0"), why }]));
      expect(lines).toEqual([`  kept q0 (transaction t0): ${why}: ${instead}`]);
      expect(error).toMatchObject({ exitCode: EXIT.failed, kept: 1, message: "1 quarantine record kept that no re-drive can deliver (marked above; docs/runbook.md, Re-driving quarantined transactions)" });
    });

    it("counts them apart from the records kept for a cause to fix and those not reached, each record of a reason, not one a reason", () => {
      const { error } = redriveOutcome(
        report([
          { record: record("q0", "t0"), why: "its current state still fails validation" },
          { record: record("q1", "t1"), why: "not found at the provider" },
          { record: record("q2", "t2"), why: "not reached before the deadline" },
          { record: record("q3", "t3"), why: "not found at the provider" },
        ]),
      );
      expect(error).toMatchObject({
        exitCode: EXIT.failed,
        kept: 4,
        message:
          "1 quarantine record kept; fix the cause (see the log) and run redrive again; " +
          "2 quarantine records kept that no re-drive can deliver (marked above; docs/runbook.md, Re-driving quarantined transactions); " +
          "1 quarantine record not reached yet",
      });
    });
  });

  it("exits 1 and names the record when the transaction cannot be published yet", async () => {
    const { h, victim, io } = await runWithOneRefused();
    const { redriveCommand } = await import("../../shared/cli/redrive.js");
    let stdout = "";
    const error = await redriveCommand({ ...io, stdout: { write: (c: string) => (stdout += c) } }, { publisher: refusing(h.eventsFile, victim) }).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "RedriveIncompleteError", exitCode: EXIT.failed, kept: 1 });
    expect(stdout).toContain(`(transaction ${victim}): its event was not published`);
  });

  it.each([
    ["{oops", "Quarantine record is not valid JSON"],
    ["null\n", "Quarantine record is not a record"],
    ['{"id":"x","kind":"transaction","at":"2026-01-01T00:00:00Z"}\n', "Quarantine record is not a record"],
  ])("names a corrupt quarantine record's file (%j) as a state directory problem, exit 2", async (text, problem) => {
    const h = await startHarness();
    expect((await runInProcess(["run", "--once"], h.env, undefined, h.dir)).code).toBe(EXIT.ok);
    const dir = join(h.env.BRIDGE_STATE_DIR!, "quarantine");
    mkdirSync(dir, { recursive: true });
    const file = join(dir, "aaaaaaaa-0000-0000-0000-000000000000.json");
    writeFileSync(file, text);
    const { code, stderr } = await runInProcess(["redrive"], h.env, undefined, h.dir);
    expect(code).toBe(EXIT.usage);
    expect(stderr).toContain(`A file in the state directory (${h.env.BRIDGE_STATE_DIR}) cannot be used:\n  - BRIDGE_STATE_DIR: ${problem} (${file}); restore it or move it aside`);
  });

  it("says a stopped re-drive keeps its records for the next redrive, not that the next cycle resumes", async () => {
    const { h, victim, io } = await runWithOneRefused();
    const { redriveCommand } = await import("../../shared/cli/redrive.js");
    const broken: EventPublisher = { publish: async () => Promise.reject(new Error("disk full")) };
    const error = (await redriveCommand(io, { publisher: broken }).catch((e: unknown) => e)) as Error & { exitCode: number };
    expect(error.exitCode).toBe(EXIT.failed);
    expect(error.message).toMatch(/^re-drive stopped: publish events failed/);
    expect(error.message).toContain("records not re-driven yet are kept: run `redrive` again once the cause is fixed");
    expect(error.message).not.toContain("next cycle resumes");
    expect((await new FileQuarantine(h.env.BRIDGE_STATE_DIR!).list()).map((r) => r.entityId)).toEqual([victim]);
  });

  it("stops after the batch in hand on Ctrl-C (exit 4, records not reached kept), and the next redrive delivers the rest", async () => {
    const h = await startHarness({ transactions: 250 });
    const pending = idsWithStatus(h, "not_synced", "outdated");
    // Every event refused for good: each pending transaction is quarantined and acknowledged, more than one batch of 100.
    const none: EventPublisher = { publish: async (events) => ({ failed: events.map((event) => ({ event, reason: "AccessDeniedException: test" })) }) };
    const quiet = { env: h.env, cwd: h.dir, stdout: { write: () => true }, stderr: { write: () => true }, signal: new AbortController().signal };
    await runCommand({ once: true, intervalMs: 60_000 }, quiet, { publisher: none }).catch(() => undefined);
    const quarantine = new FileQuarantine(h.env.BRIDGE_STATE_DIR!);
    expect((await quarantine.list()).length).toBe(pending.length);
    expect(pending.length).toBeGreaterThan(100);

    const controller = new AbortController();
    const { redriveCommand } = await import("../../shared/cli/redrive.js");
    let stdout = "";
    // The person presses Ctrl-C once the first batch is being published.
    const io = { ...quiet, stdout: { write: (c: string) => (stdout += c) }, signal: controller.signal };
    const error = await redriveCommand(io, { onPublished: () => controller.abort() }).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "CycleIncompleteError", exitCode: EXIT.incomplete });
    expect((error as Error).message).toBe("the re-drive stopped after the batch in hand, as asked (Ctrl-C, SIGTERM or SIGHUP): run redrive again to go on");
    expect(stdout).toMatch(/re-drive: 100 of \d+ quarantine records delivered and removed · \d+ kept \(\d+ not reached: stopped as asked\)/);
    const left = await quarantine.list();
    expect(left.length).toBe(pending.length - 100);
    // What it published is delivered: its records are gone, and no record of a published transaction stays.
    const published = new Set((await readEvents(h.eventsFile)).map((e) => e.detail.subject.id));
    expect(published.size).toBe(100);
    expect(left.filter((r) => published.has(r.entityId!))).toEqual([]);

    const rest = await runInProcess(["redrive"], h.env, undefined, h.dir);
    expect(rest.code, rest.stderr).toBe(EXIT.ok);
    expect(await quarantine.list()).toEqual([]);
    expect(new Set((await readEvents(h.eventsFile)).map((e) => e.detail.subject.id))).toEqual(new Set(pending));
  });

  it("names a state directory that does not exist (a mistyped path) rather than ask for a token to re-drive nothing, and makes none", async () => {
    const h = await startHarness();
    const { QASHIO_REFRESH_TOKEN: _seed, ...settings } = h.env;
    const missing = join(h.dir, "no-such-state");

    const typo = await runInProcess(["redrive"], { ...settings, BRIDGE_STATE_DIR: missing }, undefined, h.dir);

    expect(typo).toMatchObject({ code: EXIT.usage, stdout: "" });
    expect(typo.stderr).toContain(`BRIDGE_STATE_DIR: ${missing} does not exist, so it holds no quarantine to re-drive: set it to the directory \`run\` uses`);
    expect(typo.stderr).not.toContain("QASHIO_REFRESH_TOKEN");
    expect(existsSync(missing)).toBe(false);
  });

  it("rejects arguments with exit 2", async () => {
    expect((await runInProcess(["redrive", "--all"], {})).code).toBe(EXIT.usage);
  });
});
