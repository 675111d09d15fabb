/**
 * End-to-end, in-process: `bridge redrive` against the sandbox after a run whose publisher refused one event for good.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { BridgeEvent, EventPublisher, PublishFailure } from "../../shared/bridge/ports.js";
import { EXIT } from "../../shared/cli/errors.js";
import { runCommand } from "../../shared/cli/run.js";
import { JsonlEventPublisher, FileQuarantine } from "../../shared/local/index.js";
import { idsWithStatus, readEvents, runInProcess, startHarness, type Harness } from "./helpers.js";

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

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

describe("bridge redrive (in-process)", () => {
  it("publishes the transaction whose event failed for good, removes its quarantine record and exits 0", async () => {
    const h = (harness = await startHarness());
    const [victim] = idsWithStatus(h, "not_synced");
    if (victim === undefined) throw new Error("no pending transaction");
    const io = { env: h.env, cwd: h.dir, stdout: { write: () => true }, stderr: { write: () => true }, signal: new AbortController().signal };
    expect(await runCommand({ once: true, intervalMs: 60_000 }, io, { publisher: refusing(h.eventsFile, victim) })).toBe(EXIT.ok);
    expect((await readEvents(h.eventsFile)).map((e) => e.detail.subject.id)).not.toContain(victim);
    // Acknowledged with the rest: no later run would pull it again.
    expect(idsWithStatus(h, "not_synced", "outdated")).toEqual([]);
    const quarantine = new FileQuarantine(h.env.BRIDGE_STATE_DIR!);
    expect((await quarantine.list()).map((r) => r.entityId)).toEqual([victim]);

    const { code, stdout } = await runInProcess(["redrive"], h.env, undefined, h.dir);
    expect(code).toBe(EXIT.ok);
    expect(stdout).toMatch(/re-drive: 1 of 1 quarantined publish failures published and removed · 0 kept/);
    const created = (await readEvents(h.eventsFile)).filter((e) => e.detail.subject.id === victim);
    expect(created.map((e) => e["detail-type"])).toEqual(["transaction.created"]);
    expect(await quarantine.list()).toEqual([]);

    const again = await runInProcess(["redrive"], h.env, undefined, h.dir);
    expect(again).toMatchObject({ code: EXIT.ok, stdout: expect.stringMatching(/no quarantined publish failures/) });
  });

  it("exits 1 and names the record when the transaction cannot be published yet", async () => {
    const h = (harness = await startHarness());
    const [victim] = idsWithStatus(h, "not_synced");
    if (victim === undefined) throw new Error("no pending transaction");
    const io = { env: h.env, cwd: h.dir, stdout: { write: () => true }, stderr: { write: () => true }, signal: new AbortController().signal };
    await runCommand({ once: true, intervalMs: 60_000 }, io, { publisher: refusing(h.eventsFile, victim) });
    const { redriveCommand } = await import("../../shared/cli/redrive.js");
    let stdout = "";
    const error = await redriveCommand({ ...io, stdout: { write: (c: string) => (stdout += c) } }, { publisher: refusing(h.eventsFile, victim) }).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "RedriveIncompleteError", exitCode: EXIT.failed, kept: 1 });
    expect(stdout).toContain(`(transaction ${victim}): its event was not published`);
  });

  it("rejects arguments with exit 2", async () => {
    expect((await runInProcess(["redrive", "--all"], {})).code).toBe(EXIT.usage);
  });
});
