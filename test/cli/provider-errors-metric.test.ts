/** ProviderErrors in local mode counts the failures the client retried as well as those that end a cycle. */
import { describe, expect, it } from "vitest";
import { readLocalSettings } from "../../shared/cli/config.js";
import { openLocalBridge } from "../../shared/cli/local-bridge.js";
import { runCycle } from "../../shared/cli/local-cycles.js";
import type { Logger } from "../../shared/bridge/ports.js";
import { harnessPerTest } from "./helpers.js";

const silent: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

const startHarness = harnessPerTest();

describe("ProviderErrors in local mode", () => {
  it("counts a 503 the client retried successfully, once", async () => {
    const harness = await startHarness();
    const bridge = await openLocalBridge(readLocalSettings(harness.env, harness.dir), { env: harness.env, logger: silent });
    await runCycle(bridge);
    expect(bridge.metrics.get("ProviderErrors")).toBe(0);

    // Retry-After 0 asks for no wait: the client backs off as without it (under 250 ms for the first retry).
    await harness.control("POST", "/faults", { path_prefix: "/public/v1/erp/transactions", status: 503, count: 1, retry_after: 0 });
    await runCycle(bridge);
    expect(bridge.metrics.get("ProviderErrors")).toBe(1);
  });
});
