/**
 * End-to-end: a state directory that was used but lost its snapshots (`snapshots/` removed by hand, a partial restore)
 * or had them replaced is refused, at start and before each cycle of a loop, rather than taken for a first run that
 * publishes everything the provider lists as new. A first run and a run after `authorize` still start from nothing.
 */
import { execFileSync } from "node:child_process";
import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readLocalSettings } from "../../shared/cli/config.js";
import { ConfigError, EXIT } from "../../shared/cli/errors.js";
import { bindLocalSettings } from "../../shared/cli/local-bridge.js";
import { harnessPerTest, loopWithSteps, readEvents, runInProcess, type Harness } from "./helpers.js";

const startHarness = harnessPerTest();

/** A harness whose state directory one run has used: tokens, binding and snapshots, and events published. */
async function usedOnce(): Promise<{ h: Harness; state: string; events: string; published: number }> {
  const h = await startHarness();
  const first = await runInProcess(["run", "--once"], h.env);
  expect(first.code, first.stderr).toBe(EXIT.ok);
  const events = h.env.BRIDGE_EVENTS_FILE as string;
  const published = (await readEvents(events)).length;
  expect(published).toBeGreaterThan(0);
  return { h, state: h.env.BRIDGE_STATE_DIR as string, events, published };
}

/** The shell command the message shows to start over, run as a person would. */
function runShownCommand(stderr: string): void {
  const command = /in a POSIX shell: `([^`]+)`/.exec(stderr)?.[1];
  expect(command, stderr).toBeDefined();
  execFileSync("sh", ["-c", command as string]);
}

describe("bridge run on a state directory that lost its snapshots", () => {
  it("refuses to start (exit 2) when snapshots/ was removed, publishing nothing, and starts over on purpose with the command it shows", async () => {
    const { h, state, events, published } = await usedOnce();
    await rm(join(state, "snapshots"), { recursive: true });

    const refused = await runInProcess(["run", "--once"], h.env);

    expect(refused.code).toBe(EXIT.usage);
    expect(refused.stderr).toContain(`The state directory (${state}) lost its snapshots`);
    expect(refused.stderr).toMatch(/BRIDGE_STATE_DIR: the snapshot store the binding records \([0-9a-f]{16}\) is missing: no snapshots\/store-id/);
    expect(refused.stderr).toContain(`restore ${join(state, "snapshots")} as it was`);
    // No store there now to diff against: every event comes again as new.
    expect(refused.stderr).toContain("(consumers then get those events again), let the next run record the store there now");
    expect((await readEvents(events)).length).toBe(published);

    runShownCommand(refused.stderr);
    const again = await runInProcess(["run", "--once"], h.env);
    expect(again.code, again.stderr).toBe(EXIT.ok);
    // Started over: the new store is recorded, and later runs go on with it.
    const binding = JSON.parse(await readFile(join(state, "binding.json"), "utf8")) as { snapshotStoreId?: string };
    expect(binding.snapshotStoreId).toBe((await readFile(join(state, "snapshots", "store-id"), "utf8")).trim());
    expect((await runInProcess(["run", "--once"], h.env)).code).toBe(EXIT.ok);
  });

  it("refuses a snapshot store replaced by another one (exit 2)", async () => {
    const { h, state, events, published } = await usedOnce();
    await writeFile(join(state, "snapshots", "store-id"), "0123456789abcdef\n");

    const refused = await runInProcess(["run", "--once"], h.env);

    expect(refused.code).toBe(EXIT.usage);
    expect(refused.stderr).toMatch(/the snapshot store the binding records \([0-9a-f]{16}\) was replaced by another \(0123456789abcdef\)/);
    expect(refused.stderr).toContain("(consumers then get those events again, diffed against the snapshots there now), let the next run record the store there now");
    expect((await readEvents(events)).length).toBe(published);
  });

  it("stops a running loop (exit 2) before the cycle after snapshots/ was removed, rather than publish everything again", async () => {
    const { h, state, events, published } = await usedOnce();

    const { outcome, waits, ...out } = await loopWithSteps(h, [() => rm(join(state, "snapshots"), { recursive: true })]);

    expect(outcome, out.stderr).toBeInstanceOf(ConfigError);
    expect((outcome as ConfigError).message).toContain("lost its snapshots");
    expect(waits).toBe(1);
    expect((await readEvents(events)).length).toBe(published);
  });

  it("starts from nothing where no store was recorded: a directory bound (as authorize leaves it) whose first run failed", async () => {
    const h = await startHarness();
    const state = h.env.BRIDGE_STATE_DIR as string;
    // Bound without snapshots, as authorize leaves it; then a first run refused on a mistyped secret.
    await bindLocalSettings(readLocalSettings(h.env, h.dir), h.env);
    expect((await runInProcess(["run", "--once"], { ...h.env, QASHIO_CLIENT_SECRET: "wrong-secret" })).code).toBe(EXIT.usage);

    const first = await runInProcess(["run", "--once"], h.env);

    expect(first.code, first.stderr).toBe(EXIT.ok);
    const binding = JSON.parse(await readFile(join(state, "binding.json"), "utf8")) as { snapshotStoreId?: string };
    expect(binding.snapshotStoreId).toBe((await readFile(join(state, "snapshots", "store-id"), "utf8")).trim());
  });
});
