/**
 * Refund parent cases found by hand mutation testing of parents.ts: each pins a behaviour no other test held.
 */
import { describe, expect, it } from "vitest";
import { pollTransactions } from "../../shared/bridge/transactions.js";
import { makeRig } from "./fakes.js";

describe("refund parents", () => {
  it("takes a parent a read finds whose id is no UUID when the client accepted its row: only a rejected row needs a transaction UUID", async () => {
    const rig = makeRig();
    const parent = rig.provider.addTransaction({ id: "legacy-parent-7" });
    // Acknowledged before aliases were written: only a provider read finds it.
    parent.client_sync_status = "synced";
    const refund = rig.provider.addTransaction({ transaction_category: "refund", parent_qashio_id: parent.qashio_id });

    await pollTransactions(rig.deps);
    const event = rig.publisher.events.find((e) => e.detail.subject.id === refund.id);
    expect(event?.detail.data.parent).toEqual({ id: "legacy-parent-7", qashio_id: parent.qashio_id });
  });

  it("warns of no ambiguous parent when another refund of the page names it by its own parent_id, and gives both refunds that parent", async () => {
    const rig = makeRig();
    const parent = rig.provider.addTransaction();
    // A second transaction listed under the parent's reference: the page alone cannot tell which one a refund means.
    rig.provider.addTransaction({ qashio_id: parent.qashio_id });
    const named = rig.provider.addTransaction({ transaction_category: "refund", parent_qashio_id: parent.qashio_id, parent_id: parent.id });
    const unnamed = rig.provider.addTransaction({ transaction_category: "refund", parent_qashio_id: parent.qashio_id });

    await pollTransactions(rig.deps);
    const parentOf = (id: string) => rig.publisher.events.find((e) => e.detail.subject.id === id)?.detail.data.parent;
    expect(parentOf(named.id)).toEqual({ id: parent.id, qashio_id: parent.qashio_id });
    expect(parentOf(unnamed.id)).toEqual({ id: parent.id, qashio_id: parent.qashio_id });
    expect(rig.logger.lines.filter((l) => l.message.startsWith("provider lists more than one transaction for the parent reference"))).toEqual([]);
  });

  it("gives no parent to a refund whose parent is not found when a refund of the page naming itself by parent_id names the same reference", async () => {
    const rig = makeRig();
    const self = rig.provider.addTransaction({ transaction_category: "refund", parent_qashio_id: "CT-gone" });
    self.parent_id = self.id;
    const sibling = rig.provider.addTransaction({ transaction_category: "refund", parent_qashio_id: "CT-gone" });

    await pollTransactions(rig.deps);
    // The self-reference is dropped before lookup: its own id must not stand in for the reference's parent.
    expect(rig.publisher.events.map((e) => [e.detail.subject.id, e.detail.data.parent])).toEqual([
      [self.id, undefined],
      [sibling.id, undefined],
    ]);
    expect(rig.logger.lines.filter((l) => l.message === "parent transaction not found")).toHaveLength(1);
  });
});
