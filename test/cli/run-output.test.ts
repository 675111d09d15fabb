/** What `bridge run` tells the operator, in this process: where it works, its summary's colours, its log's level. */
import { afterEach, describe, expect, it } from "vitest";
import { EXIT } from "../../shared/cli/errors.js";
import { runInProcess, startHarness, type Harness } from "./helpers.js";

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

describe("bridge run's output", () => {
  it("says on stderr which tenant, provider, state directory and events file it works with, and writes no line below BRIDGE_LOG_LEVEL", async () => {
    const h = (harness = await startHarness());

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
