/**
 * A cycle whose bind under the lease must write the binding (recording the snapshot store's id, on a first cycle)
 * on a state directory that takes no writes: the cycle stops there with the write's error, rather than running on
 * with a binding that records no store. Faults are injected into node:fs for the binding file's writes.
 */
import type * as nodeFs from "node:fs";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { runCycle } from "../../shared/cli/local-cycles.js";
import { harnessPerTest, openHarnessBridge } from "./helpers.js";

const faults = vi.hoisted(() => ({ binding: false }));

vi.mock("node:fs", async (importOriginal) => {
  const { withOpenFaults } = await import("./support/open-faults.js");
  // The binding is written through a temp file beside it (`binding.json.<...>.tmp`).
  return withOpenFaults(await importOriginal<typeof nodeFs>(), (name) => (faults.binding && name.startsWith("binding.json.") ? "ENOSPC" : undefined));
});

const startHarness = harnessPerTest();
beforeEach(() => {
  faults.binding = false;
});

describe("a first cycle's bind the state directory refuses", () => {
  it("stops the cycle with the write's error, leaving the binding without a snapshot store", async () => {
    const harness = await startHarness();
    const { bridge, settings } = await openHarnessBridge(harness);
    const file = join(settings.stateDir, "binding.json");
    const before = readFileSync(file, "utf8");
    expect(JSON.parse(before)).not.toHaveProperty("snapshotStoreId");
    faults.binding = true;

    const error = await runCycle(bridge).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error, "the cycle ran on past a bind that could not write").toBeInstanceOf(Error);
    const codes: unknown[] = [];
    for (let e: unknown = error; e instanceof Error; e = e.cause) codes.push((e as { code?: unknown }).code);
    expect(codes).toContain("ENOSPC");
    expect(readFileSync(file, "utf8")).toBe(before);
  });
});
