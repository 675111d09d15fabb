/** A long pass over the file snapshot store (PII conform, vacuum) keeps the cycle lease it runs under alive. */
import { expect, it } from "vitest";
import { conformSnapshots } from "../../shared/bridge/conform.js";
import type { Snapshot } from "../../shared/bridge/ports.js";
import { systemClock } from "../../shared/clock.js";
import { whileHolding } from "../../shared/lease-keep-alive.js";
import { FileLock, FileQuarantine, FileSnapshotStore } from "../../shared/local/index.js";
import { tempDirPerTest } from "../temp-dir.js";

let dir: string;
tempDirPerTest("bridge-long-pass-", (made) => (dir = made));

const silent = { debug() {}, info() {}, warn() {}, error() {} };

it("renews the cycle lease while a PII conform pass and its vacuum work through the store", async () => {
  const store = new FileSnapshotStore(dir);
  for (let page = 0; page < 160; page++) {
    const snapshots: Snapshot[] = Array.from({ length: 50 }, (_, i) => ({
      key: `transaction:${page}-${i}`,
      hash: `h${page}-${i}`,
      object: { id: `${page}-${i}`, card_holder_name: "Jane Doe", card_holder_email: "jane@example.com", note: "x".repeat(400) },
      updatedAt: "2025-01-01T00:00:00.000Z",
    }));
    await store.putMany(snapshots);
  }
  // Renewals every 40 ms of real time (whileHolding renews at a third of the TTL it is given): the pass (8,000
  // snapshots rewritten, an fsync per page) lasts several times that, in synchronous file I/O. Each renewal extends
  // the file lease by a minute, so a store call slowed by a loaded machine cannot let it lapse between two renewals.
  const ttlMs = 120;
  const leaseMs = 60_000;
  const handle = await new FileLock(dir).tryAcquire("cycle", leaseMs);
  if (handle === undefined) throw new Error("lease not taken");
  const renewals: boolean[] = [];
  const lease = { renew: async () => (renewals.push(await handle.renew(leaseMs)), renewals.at(-1) as boolean) };
  const started = Date.now();
  const report = await whileHolding(lease, ttlMs, systemClock, () => conformSnapshots({ snapshots: store, quarantine: new FileQuarantine(dir), pii: { mode: "redact" }, clock: systemClock, logger: silent, tenant: "acme" }), silent, {
    lost: "lost",
    failed: "failed",
  });
  const elapsed = Date.now() - started;
  await handle.release();
  expect(report.rewritten).toBe(8_000);
  expect(elapsed).toBeGreaterThan(ttlMs);
  // Renewed through the pass (without a yield to the event loop, never: its timer would not fire until the end), and
  // every renewal found the lease held: the store's own file I/O does not disturb the lease files beside it.
  expect(renewals.length).toBeGreaterThanOrEqual(2);
  expect(renewals.every(Boolean)).toBe(true);
});
