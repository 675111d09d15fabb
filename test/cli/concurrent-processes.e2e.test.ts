/**
 * End-to-end: several bridge processes on one state directory at once, as an operator causes by accident (a cron
 * `run --once` beside a `run --interval` loop, a `redrive` or `conform-pii` started mid-cycle). Each refusal names the
 * process that holds the lease and says what to do; the holder's cycle goes on and delivers everything once.
 */
import { watch } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { EXIT } from "../../shared/cli/errors.js";
import { idsWithStatus, readEvents, spawnBridge, startHarness, type Harness } from "./helpers.js";

let harness: Harness | undefined;
const children: ReturnType<typeof spawnBridge>[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await harness?.close();
  harness = undefined;
});

function spawned(args: readonly string[], env: Record<string, string>): ReturnType<typeof spawnBridge> {
  const child = spawnBridge(args, env);
  children.push(child);
  return child;
}

/** Resolves once `file` holds a complete line (watching its directory, no polling). */
function firstLine(file: string): Promise<void> {
  return new Promise((resolve) => {
    const check = async () => {
      if ((await readFile(file, "utf8").catch(() => "")).includes("\n")) {
        watcher.close();
        resolve();
      }
    };
    const watcher = watch(join(file, ".."), () => void check());
    void check();
  });
}

describe("bridge processes sharing a state directory", () => {
  it("refuses a run --once, redrive and conform-pii started mid-cycle, naming the loop's pid and saying to run again", async () => {
    const h = (harness = await startHarness());
    const pending = idsWithStatus(h, "not_synced", "outdated");
    // The loop's first acknowledge hangs a few seconds: it holds the cycle lease, mid-cycle, meanwhile.
    await h.control("POST", "/faults", { method: "POST", path_prefix: "/public/v1/erp/transactions/acknowledge", delay_ms: 6_000, count: 1 });
    const loop = spawned(["run", "--interval", "1h"], h.env);
    await firstLine(h.eventsFile);

    const others = await Promise.all([["run", "--once"], ["redrive"], ["conform-pii"]].map((args) => spawned(args, h.env).outcome));

    for (const { code, stderr } of others) {
      expect(code).toBe(EXIT.failed);
      expect(stderr).toContain(`another bridge process (pid ${loop.pid} on this machine) is running a cycle, re-drive or conform-pii on this state directory`);
      expect(stderr).toContain("run this command again once it is done");
    }
    // The loop's cycle was not disturbed: it ends, then the loop stops between cycles.
    await new Promise<void>((resolve) => {
      let seen = "";
      loop.stdout?.on("data", (chunk: Buffer) => (seen += chunk.toString()).includes("cycle 1:") && resolve());
    });
    loop.kill("SIGTERM");
    expect((await loop.outcome).code).toBe(EXIT.ok);
    const delivered = await readEvents(h.eventsFile);
    expect(new Set(delivered.map((e) => e.detail.subject.id))).toEqual(new Set(pending));
    expect(new Set(delivered.map((e) => e.detail.id)).size).toBe(pending.length);
  }, 20_000);
});
