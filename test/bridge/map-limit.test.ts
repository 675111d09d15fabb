import { describe, expect, it } from "vitest";
import { mapLimit } from "../../shared/bridge/map-limit.js";

describe("mapLimit", () => {
  it("refuses a limit below 1 or not an integer, calling nothing: no call would start, and every result be missing", async () => {
    for (const limit of [0, -1, 0.5, Number.NaN]) {
      let calls = 0;
      await expect(mapLimit([1, 2], limit, async () => (calls += 1)), String(limit)).rejects.toThrow(`mapLimit's limit must be an integer of 1 or more, got ${limit}`);
      expect(calls).toBe(0);
    }
    expect(await mapLimit([1, 2], 1, async (item) => item * 2)).toEqual([2, 4]);
  });

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

