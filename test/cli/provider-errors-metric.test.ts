/** ProviderErrors in local mode counts the failures the client retried as well as those that end a cycle. */
import { describe, expect, it } from "vitest";
import { runCycle } from "../../shared/cli/local-cycles.js";
import { harnessPerTest, openHarnessBridge } from "./helpers.js";

const startHarness = harnessPerTest();

describe("ProviderErrors in local mode", () => {
  it("counts a 503 the client retried successfully, once", async () => {
    const harness = await startHarness();
    const { bridge } = await openHarnessBridge(harness);
    await runCycle(bridge);
    expect(bridge.metrics.get("ProviderErrors")).toBe(0);

    // Retry-After 0 asks for no wait: the client backs off as without it (under 250 ms for the first retry).
    await harness.control("POST", "/faults", { path_prefix: "/public/v1/erp/transactions", status: 503, count: 1, retry_after: 0 });
    await runCycle(bridge);
    expect(bridge.metrics.get("ProviderErrors")).toBe(1);
  });
});
