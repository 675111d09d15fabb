/** Metrics the composition roots emit around the engine: retried provider failures, and the quarantine gauge. */
import { describe, expect, it } from "vitest";
import { countProviderRetries, reportQuarantineSize } from "../../shared/bridge/root-metrics.js";
import { makeRig } from "./fakes.js";

describe("countProviderRetries", () => {
  it("counts each retried failure once as ProviderErrors, by its status class", () => {
    const { metrics } = makeRig();
    const onRetry = countProviderRetries(metrics);
    onRetry({ status: 503, statusClass: "5xx", method: "GET", path: "/x", error: "ServerError", attempt: 1, delayMs: 100 });
    onRetry({ statusClass: "network", method: "GET", path: "/x", error: "NetworkError", attempt: 2, delayMs: 200 });
    expect(metrics.points).toEqual([
      { name: "ProviderErrors", value: 1, unit: "Count", dimensions: { status_class: "5xx" } },
      { name: "ProviderErrors", value: 1, unit: "Count", dimensions: { status_class: "network" } },
    ]);
  });
});

describe("reportQuarantineSize", () => {
  it("sets the QuarantineSize gauge to the records held and returns that size", async () => {
    const rig = makeRig();
    await rig.quarantine.put({ id: "q-1", kind: "card", reason: "validation: x", raw: {}, at: "2025-01-15T10:00:00.000Z" });
    await rig.quarantine.put({ id: "q-2", kind: "card", reason: "validation: y", raw: {}, at: "2025-01-15T10:00:00.000Z" });
    const failures: unknown[] = [];
    expect(await reportQuarantineSize(rig.deps, (error) => failures.push(error))).toBe(2);
    expect(rig.metrics.points).toEqual([{ name: "QuarantineSize", value: 2, unit: "Count", dimensions: undefined }]);
    expect(failures).toEqual([]);
  });

  it("hands a failed count to onFailure, sends no point and throws nothing, so the cycle's own result stands", async () => {
    const rig = makeRig();
    const down = new Error("table unavailable");
    rig.quarantine.size = () => Promise.reject(down);
    const failures: unknown[] = [];
    expect(await reportQuarantineSize(rig.deps, (error) => failures.push(error))).toBeUndefined();
    expect(failures).toEqual([down]);
    expect(rig.metrics.points).toEqual([]);
  });
});
