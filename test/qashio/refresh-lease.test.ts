import { describe, expect, it } from "vitest";
import { RefreshLeases, type RefreshLockHandle } from "../../shared/qashio/auth/refresh-lease.js";
import { manualClock } from "./helpers.js";

describe("RefreshLeases", () => {
  it("stops the lease kept last, though kept while the keeping stopped before it was still winding down", async () => {
    const clock = manualClock();
    const leases = new RefreshLeases({}, 30_000, clock);
    const renewed: string[] = [];
    const handle = (name: string): RefreshLockHandle => ({ renew: async () => (renewed.push(name), true), release: async () => undefined });
    leases.keepHeld(handle("first"));
    const stopping = leases.stopKeeping();
    leases.keepHeld(handle("second"));
    await stopping;
    // Not stopped, the second would renew a lease its caller released, for as long as the process lives.
    await leases.stopKeeping();
    await clock.advance(60_000);
    expect(renewed).toEqual([]);
  });
});
