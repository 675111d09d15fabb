import { describe, expect, it } from "vitest";
import { spendingRefreshes } from "../../shared/cli/token-spending.js";

describe("spendingRefreshes", () => {
  it("is busy while a section runs and settles once the last one ends, failed or not", async () => {
    expect(spendingRefreshes.busy).toBe(false);
    let finishFirst!: () => void;
    let failSecond!: (error: Error) => void;
    const first = spendingRefreshes.run(() => new Promise<string>((resolve) => (finishFirst = () => resolve("saved"))));
    const second = spendingRefreshes.run(() => new Promise<string>((_, reject) => (failSecond = reject)));
    expect(spendingRefreshes.busy).toBe(true);
    let settled = false;
    const waited = spendingRefreshes.settled().then(() => (settled = true));

    finishFirst();
    expect(await first).toBe("saved");
    await Promise.resolve();
    expect(settled).toBe(false);
    failSecond(new Error("save failed"));
    await expect(second).rejects.toThrow("save failed");
    await waited;
    expect(settled).toBe(true);
    expect(spendingRefreshes.busy).toBe(false);
    // Nothing running: settled at once.
    await spendingRefreshes.settled();
  });
});
