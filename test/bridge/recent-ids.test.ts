import { describe, expect, it, vi } from "vitest";
import { RECENT_BATCHES, RecentIds } from "../../shared/bridge/recent-ids.js";
import { pollTransactions } from "../../shared/bridge/transactions.js";
import { makeRig } from "./fakes.js";

describe("RecentIds", () => {
  it("remembers the last few batches only, however many batches pass", () => {
    const handled = new RecentIds();
    for (let batch = 0; batch < 1_000; batch++) handled.add(Array.from({ length: 100 }, (_, i) => `${batch}-${i}`));
    expect(handled.size).toBe(RECENT_BATCHES * 100);
    expect(handled.has("999-0")).toBe(true);
    expect(handled.has("0-0")).toBe(false);
  });

  it("keeps an id met again after it was handled for the rest of the pass", () => {
    const handled = new RecentIds(1);
    handled.add(["stuck", "gone"]);
    expect(handled.has("stuck")).toBe(true);
    handled.add(["b"]);
    handled.add(["c"]);
    expect(handled.has("stuck")).toBe(true);
    expect(handled.has("gone")).toBe(false);
    // What it costs: the sticky id besides the window's batch.
    expect(handled.size).toBe(2);
  });

  it("answers versionsOf for the window's ids without keeping one met again", () => {
    const handled = new RecentIds(1);
    handled.add(["shifted"], new Map([["shifted", "v1"]]));
    expect(handled.versionsOf("shifted")).toEqual(new Set(["v1"]));
    handled.add(["b"]);
    expect(handled.versionsOf("shifted")).toEqual(new Set());
    expect(handled.size).toBe(1);
  });
});

describe("RecentIds versions", () => {
  it("gives every version an id was handled in, sticky ids included, and none when none was given", () => {
    const handled = new RecentIds(1);
    handled.add(["x", "y"], new Map([["x", "v1"]]));
    expect(handled.has("x")).toBe(true);
    expect([...handled.versionsOf("x")]).toEqual(["v1"]);
    expect(handled.versionsOf("y").size).toBe(0);
    handled.add(["x"], new Map([["x", "v2"]]));
    expect([...handled.versionsOf("x")].sort()).toEqual(["v1", "v2"]);
    handled.add(["z"]);
    // Out of the window, kept as sticky with every version it was handled in.
    expect(handled.has("x")).toBe(true);
    expect([...handled.versionsOf("x")].sort()).toEqual(["v1", "v2"]);
    expect(handled.versionsOf("unknown").size).toBe(0);
  });

  it("gives each version of an id handled in several versions at once (copies listed side by side)", () => {
    const handled = new RecentIds(1);
    handled.add(["x"], new Map([["x", ["v1", "v2"]]]));
    expect([...handled.versionsOf("x")].sort()).toEqual(["v1", "v2"]);
    expect(handled.has("x")).toBe(true);
    handled.add(["x"], new Map([["x", ["v3"]]]));
    handled.add(["y"]);
    expect([...handled.versionsOf("x")].sort()).toEqual(["v1", "v2", "v3"]);
  });
});

describe("pollTransactions memory", () => {
  it("remembers at most a few pages of handled ids while draining a large backlog", async () => {
    const rig = makeRig();
    for (let i = 0; i < 3_000; i++) rig.provider.addTransaction();
    const sizes: number[] = [];
    const original = RecentIds.prototype.add;
    const spy = vi.spyOn(RecentIds.prototype, "add").mockImplementation(function (this: RecentIds, ids: Iterable<string>, versions?: ReadonlyMap<string, string | readonly string[]>) {
      original.call(this, ids, versions);
      sizes.push(this.size);
    });
    try {
      const report = await pollTransactions(rig.deps, { pageSize: 50 });
      expect(report).toMatchObject({ outcome: "complete", acknowledged: 3_000 });
    } finally {
      spy.mockRestore();
    }
    expect(rig.publisher.events).toHaveLength(3_000);
    expect(sizes.length).toBeGreaterThanOrEqual(60);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(RECENT_BATCHES * 50);
  });

  it("gives the version an id was last handled in, not an earlier one, and none once out of the window", () => {
    const handled = new RecentIds(2);
    handled.add(["x"], new Map([["x", "v1"]]));
    handled.add(["x"], new Map([["x", "v2"]]));
    expect(handled.lastVersionOf("x")).toBe("v2");
    expect(handled.lastVersionOf("y")).toBeUndefined();
    handled.add(["y"]);
    expect(handled.lastVersionOf("x")).toBe("v2");
    handled.add(["z"]);
    expect(handled.lastVersionOf("x")).toBeUndefined();
  });

  it("gives, of an id handled in several versions in one batch (copies side by side on a page), the last of them", () => {
    const handled = new RecentIds();
    handled.add(["x"], new Map([["x", ["v1", "v2", "v3"]]]));
    expect(handled.lastVersionOf("x")).toBe("v3");
    handled.add(["x"], new Map([["x", ["v4", "v5"]]]));
    expect(handled.lastVersionOf("x")).toBe("v5");
  });
});
