/**
 * The cycle's publish accounting (CycleRun.publish), seen through a transaction cycle: when a published change's lag is
 * measured.
 */
import { describe, expect, it } from "vitest";
import { pollTransactions } from "../../shared/bridge/transactions.js";
import { CycleAbortedError } from "../../shared/bridge/errors.js";
import { makeRig } from "./fakes.js";

describe("CycleRun.publish", () => {
  it("measures a published change's lag when it was published, though the cycle fails after", async () => {
    const rig = makeRig();
    const txn = rig.provider.addTransaction();
    rig.clock.ms = Date.parse(txn.updated_at) + 90_000;
    // Published 90 s after the change; the snapshot write after it hangs ten minutes and fails.
    rig.deps.snapshots.putMany = async () => {
      rig.clock.advance(600_000);
      throw new Error("snapshot write refused");
    };
    const error = await pollTransactions(rig.deps).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CycleAbortedError);
    expect(rig.publisher.events).toHaveLength(1);
    // On the bus, so delivered: its lag stopped growing when it was published.
    expect((error as CycleAbortedError).report.syncLagSeconds).toBe(90);
    expect(rig.metrics.sum("SyncLagSeconds")).toBe(90);
  });
});
