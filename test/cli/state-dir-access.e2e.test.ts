/**
 * End-to-end: who may read the state directory. Its snapshots and quarantine records carry cardholder data (in clear
 * under `full`), so a directory its group or others may enter (a copy restored with the umask's 0755) is made 0700
 * when a command opens it, with a warning naming it and the mode it had.
 */
import { chmod, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { EXIT } from "../../shared/cli/errors.js";
import { restrictStateDir } from "../../shared/cli/state-access.js";
import { ConfigError } from "../../shared/cli/errors.js";
import { harnessPerTest, loopWithSteps, runInProcess } from "./helpers.js";

const startHarness = harnessPerTest();

/** Permission bits of `path`. */
async function modeOf(path: string): Promise<number> {
  return (await stat(path)).mode & 0o7777;
}

describe("a state directory its group or others may read", () => {
  it("is made 0700 when `run` starts, with a warning naming it and its mode, and its files stay as they were", async () => {
    const h = await startHarness();
    const state = h.env.BRIDGE_STATE_DIR as string;
    expect((await runInProcess(["run", "--once"], h.env)).code).toBe(EXIT.ok);
    const snapshots = join(state, "snapshots");
    const segments = (await readdir(snapshots)).map((name) => join(snapshots, name));
    expect(segments.length).toBeGreaterThan(0);
    // As a copy restored with the umask's modes leaves it: every snapshot readable by every local user.
    await chmod(state, 0o755);
    await chmod(snapshots, 0o755);
    for (const segment of segments) await chmod(segment, 0o644);

    const { code, stderr } = await runInProcess(["run", "--once"], h.env);

    expect(code).toBe(EXIT.ok);
    expect(await modeOf(state)).toBe(0o700);
    expect(stderr).toContain(`${state} could be entered and read by its group or others (mode 0755): made it private to its owner (0700)`);
    // One chmod: nothing inside is reachable by others now, whatever its own mode.
    expect(await modeOf(snapshots)).toBe(0o755);
    // Private already: no word about it.
    expect((await runInProcess(["run", "--once"], h.env)).stderr).not.toContain("could be entered and read");
  });

  it("is refused, exit 2 naming BRIDGE_STATE_DIR and the fix, when this user cannot make it private (a file system whose modes are fixed)", () => {
    const warnings: string[] = [];
    // /proc/self: 0555, and no chmod changes it (EPERM, even for root).
    const error = (() => {
      try {
        restrictStateDir("/proc/self", (text) => warnings.push(text));
        return undefined;
      } catch (e) {
        return e;
      }
    })();

    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).exitCode).toBe(EXIT.usage);
    expect((error as ConfigError).message).toContain("BRIDGE_STATE_DIR");
    expect((error as ConfigError).message).toContain("/proc/self may be entered and read by its group or others (mode 0555), and this user cannot change that (EPERM");
    expect((error as ConfigError).message).toContain("chmod 700 /proc/self");
    expect(warnings).toEqual([]);
  });
});

describe("a state directory whose permissions change under a `run --interval` loop", () => {
  /** Runs a loop on a fresh harness, calling `between` after its first cycle and stopping after its second. */
  async function loopChanging(between: (state: string) => Promise<void>): Promise<{ outcome: unknown; stdout: string; stderr: string; state: string }> {
    const harness = await startHarness();
    const state = harness.env.BRIDGE_STATE_DIR as string;
    return { ...(await loopWithSteps(harness, [() => between(state)])), state };
  }

  it("stops before the next cycle (exit 2, naming the mode and the fix) once its group or others may write it", async () => {
    const { outcome, stdout, state } = await loopChanging((state) => chmod(state, 0o775));

    expect(outcome).toBeInstanceOf(ConfigError);
    expect((outcome as ConfigError).exitCode).toBe(EXIT.usage);
    expect((outcome as ConfigError).message).toContain(`is writable by its group (mode 0775): ${state}`);
    expect((outcome as ConfigError).message).toContain(`chmod 700 ${state}`);
    // Told apart from a refusal at the start: the loop had run, and this cycle did nothing.
    expect((outcome as ConfigError).message).toContain("The state directory's permissions changed while the bridge ran");
    expect((outcome as ConfigError).message).toContain("; nothing was done in this cycle");
    expect(stdout).toMatch(/cycle 1:/);
    expect(stdout).not.toMatch(/cycle 2:/);
  });

  it("makes it private again before the next cycle, with a warning, once its group or others may read it", async () => {
    const { outcome, stdout, stderr, state } = await loopChanging((state) => chmod(state, 0o755));

    expect(outcome).toBe(EXIT.ok);
    expect(await modeOf(state)).toBe(0o700);
    expect(stderr).toContain(`${state} could be entered and read by its group or others (mode 0755): made it private to its owner (0700)`);
    expect(stdout).toMatch(/cycle 2:/);
  });
});
