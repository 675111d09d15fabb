/** Invariants the engine must keep whatever happens (crashes, churn), shared by crash and property tests. */
import { expect } from "vitest";
import type { BridgeEvent } from "../../shared/bridge/ports.js";
import type { TestRig } from "./fakes.js";

/** Every provider transaction's final state was published, duplicates are identical, nothing is left pending. */
export function expectNothingLost(rig: TestRig): void {
  expect(rig.provider.pending()).toEqual([]);
  const latest = new Map<string, BridgeEvent>();
  for (const e of rig.publisher.events) latest.set(e.detail.subject.id, e);
  for (const txn of rig.provider.transactions) {
    const { client_sync_status: _ignored, ...expected } = txn;
    expect(latest.get(txn.id)?.detail.data.object).toEqual(expected);
  }
  const byId = new Map<string, BridgeEvent>();
  for (const e of rig.publisher.events) {
    const first = byId.get(e.detail.id);
    if (first) expect(e.detail).toEqual(first.detail);
    else byId.set(e.detail.id, e);
  }
}

