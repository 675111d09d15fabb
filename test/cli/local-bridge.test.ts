import { afterEach, describe, expect, it } from "vitest";
import { readLocalSettings } from "../../shared/cli/config.js";
import { openLocalBridge, runCycle } from "../../shared/cli/local-bridge.js";
import { ConfigError } from "../../shared/cli/errors.js";
import { FileQuarantine } from "../../shared/local/quarantine.js";
import type { Logger } from "../../shared/bridge/ports.js";
import { startHarness, type Harness } from "./helpers.js";

const silent: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

describe("local bridge cycle", () => {
  it("reports the records held in quarantine after every cycle, as a gauge rather than a running sum", async () => {
    harness = await startHarness();
    const settings = readLocalSettings(harness.env, harness.dir);
    const bridge = await openLocalBridge(settings, { env: harness.env, logger: silent });

    expect((await runCycle(bridge)).quarantineSize).toBe(0);
    await new FileQuarantine(settings.stateDir).put({ id: "held", kind: "transaction", reason: "invalid amount", raw: {}, at: "2026-03-01T12:00:00Z" });
    expect((await runCycle(bridge)).quarantineSize).toBe(1);
    expect((await runCycle(bridge)).quarantineSize).toBe(1);
    expect(bridge.metrics.get("QuarantineSize")).toBe(1);
  });

  it("names an unusable base URL without quoting it", async () => {
    harness = await startHarness();
    const settings = { ...readLocalSettings(harness.env, harness.dir), baseUrl: "https://user:pw-value@provider.test/?k=v" };
    const error = await openLocalBridge(settings, { env: harness.env, logger: silent }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toContain("QASHIO_BASE_URL: does not resolve to an http(s) URL");
    expect((error as ConfigError).message).not.toMatch(/provider\.test|pw-value/);
  });
});
