import { describe, expect, it } from "vitest";
import { mapLimit } from "../../shared/bridge/map-limit.js";

describe("mapLimit", () => {
  it("keeps input order with at most `limit` calls in flight", async () => {
    let inFlight = 0;
    let most = 0;
    const result = await mapLimit([30, 10, 20, 0], 2, async (ms, index) => {
      most = Math.max(most, ++inFlight);
      await new Promise((resolve) => setTimeout(resolve, ms));
      inFlight -= 1;
      return index;
    });
    expect(result).toEqual([0, 1, 2, 3]);
    expect(most).toBe(2);
  });

  it("starts no call after one failed, and throws the first failure once the calls in flight have ended", async () => {
    const started: number[] = [];
    let ended = 0;
    const run = mapLimit([0, 1, 2, 3, 4], 2, async (item) => {
      started.push(item);
      await new Promise((resolve) => setTimeout(resolve, item === 0 ? 1 : 20));
      ended += 1;
      throw new Error(`failed ${item}`);
    });
    await expect(run).rejects.toThrow("failed 0");
    expect(started).toEqual([0, 1]);
    expect(ended).toBe(2);
  });

  it("fails when a call rejects with undefined, as with any other reason", async () => {
    // The failure is held in a wrapper: a bare `undefined` reason would read as "no failure" and the map would resolve.
    const run = mapLimit([0, 1], 2, async (item) => {
      if (item === 1) return Promise.reject(undefined);
      return item;
    });
    await expect(run).rejects.toBeUndefined();
  });
});

