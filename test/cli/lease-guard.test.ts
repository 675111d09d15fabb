import { describe, expect, it } from "vitest";
import type { EventPublisher, LockHandle } from "../../shared/bridge/ports.js";
import { CycleLeaseGuard, CycleLeaseLostError } from "../../shared/cli/lease-guard.js";

describe("CycleLeaseGuard", () => {
  it("checks writes against a cycle's lease only while that cycle runs, also after one that failed", async () => {
    let publishes = 0;
    const inner: EventPublisher = {
      publish: async () => {
        publishes += 1;
        return { failed: [] };
      },
    };
    const guard = new CycleLeaseGuard("/state", 30_000);
    const publisher = guard.publisher(inner);
    // Released when its cycle ends: asked then, the lock says this process holds it no more.
    let held = true;
    const handle: LockHandle = { renew: async () => true, release: async () => void (held = false), confirm: async () => held };

    await expect(guard.during(handle, async () => {
      held = false;
      return publisher.publish([]);
    })).rejects.toBeInstanceOf(CycleLeaseLostError);
    held = true;
    await expect(guard.during(handle, () => Promise.reject(new Error("cycle failed")))).rejects.toThrow("cycle failed");
    await handle.release();

    // Outside a cycle nothing is checked: a lease released with its cycle must not refuse a later write.
    await publisher.publish([]);
    await guard.check();
    expect(publishes).toBe(1);
  });
});
