/** What `bridge run` tells the operator, in this process: where it works, its summary's colours, its log's level. */
import { describe, expect, it } from "vitest";
import { EXIT } from "../../shared/cli/errors.js";
import { harnessPerTest, runInProcess } from "./helpers.js";

const startHarness = harnessPerTest();

describe("bridge run's output", () => {
  it("paints the cycle's summary under FORCE_COLOR and leaves it plain under NO_COLOR", async () => {
    const h = await startHarness();

    // runInProcess sets NO_COLOR=1 unless told otherwise.
    const plain = await runInProcess(["run", "--once"], h.env);
    const painted = await runInProcess(["run", "--once"], { ...h.env, FORCE_COLOR: "1" });

    expect([plain.code, painted.code]).toEqual([EXIT.ok, EXIT.ok]);
    expect(plain.stdout).toContain("── cycle 1:");
    expect(plain.stdout).not.toContain("\x1b[");
    expect(painted.stdout).toContain("\x1b[");
  });

  it("says on stderr which tenant, provider, state directory and events file it works with, and writes no line below BRIDGE_LOG_LEVEL", async () => {
    const h = await startHarness();

    const { code, stderr } = await runInProcess(["run", "--once"], { ...h.env, BRIDGE_LOG_LEVEL: "warn" });

    expect(code).toBe(EXIT.ok);
    const where = /^bridge: tenant (.+), provider (.+), state (.+), events -> (.+)$/m.exec(stderr);
    expect(where?.slice(1)).toEqual([
      "acme",
      h.url,
      h.env.BRIDGE_STATE_DIR,
      h.eventsFile,
    ]);
    expect(stderr).not.toMatch(/^(debug|info) /m);
  });
});
