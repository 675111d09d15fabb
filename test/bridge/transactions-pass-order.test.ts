/**
 * How the transaction cycle's passes follow one another when the `outdated` list stops the cycle: a `not_synced` pass
 * paused at its share of the budget goes on after the `outdated` list only when that list went on as a cycle may
 * (complete, or at its page bound), never after it stopped for want of time.
 */
import { describe, expect, it } from "vitest";
import { pollTransactions } from "../../shared/bridge/transactions.js";
import { DeadlineExceededError } from "../../shared/qashio/errors.js";
import { makeRig } from "./fakes.js";

function listsOf(rig: ReturnType<typeof makeRig>, status: string): number {
  return rig.provider.calls.filter((c) => c.op === "listTransactions" && c.query.client_sync_status === status).length;
}

describe("transaction passes after an outdated list stopped for want of time", () => {
  it("does not go on with the not_synced pass paused at its share: the cycle ends at the outdated list, as deadline", async () => {
    const rig = makeRig();
    const changed = rig.provider.addTransaction();
    await pollTransactions(rig.deps);
    rig.provider.changeTransaction(changed.id, { memo: "corrected" });
    rig.provider.addTransaction();
    rig.provider.addTransaction();
    rig.provider.calls.length = 0;
    const deadline = rig.clock.now() + 100_000;
    let first = true;
    rig.provider.beforeCall = (call) => {
      if (call.op !== "listTransactions") return;
      // The first read of the new ones takes four fifths of the budget: the pass stops at its share after that page.
      if (first && call.query.client_sync_status === "not_synced") rig.clock.advance(80_000);
      first = false;
      // What the client throws when the list's next attempt no longer fits before the cycle's deadline.
      if (call.query.client_sync_status === "outdated") {
        throw new DeadlineExceededError("GET /transactions was not retried: a whole attempt no longer fits before its deadline", {
          method: "GET",
          path: "/transactions",
          deadline,
        });
      }
    };
    const report = await pollTransactions(rig.deps, { pageSize: 1, deadline });
    expect(report.outcome).toBe("deadline");
    expect(listsOf(rig, "outdated")).toBe(1);
    // Time was left on the clock, but the cycle had stopped: no second not_synced read, one transaction published.
    expect(listsOf(rig, "not_synced")).toBe(1);
    expect(report.published["transaction.created"]).toBe(1);
    expect(rig.provider.pending()).toHaveLength(2);
  });
});
