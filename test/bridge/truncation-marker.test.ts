import { describe, expect, it } from "vitest";
import { pollCards, pollTransactions } from "../../shared/bridge/index.js";
import { conformSnapshots } from "../../shared/bridge/conform.js";
import { contentHash, recordHash } from "../../shared/bridge/hash.js";
import { redriveQuarantined } from "../../shared/bridge/redrive.js";
import type { PiiPolicy } from "../../shared/bridge/pii.js";
import type { Snapshot, SnapshotKey } from "../../shared/bridge/ports.js";
import { makeRig, type TestRig } from "./fakes.js";

const TRANSACTION_KEY: SnapshotKey = "transaction:00000000-0000-4000-8000-000000000001";
const CARD_KEY: SnapshotKey = "card:CA00000001";

/** One transaction and one card (configuration objects only its single read carries), pulled once. */
async function pulledOnce(pii: PiiPolicy, cardDetails: boolean, extra: Record<string, unknown> = {}): Promise<TestRig> {
  const rig = makeRig({ pii, emitCardCreated: true }, { cardDetails });
  rig.provider.addTransaction({ memo: "taxi", line_items: [{ id: "li-1", amount: 10 }, { id: "li-2", amount: 2.5 }], ...extra });
  rig.provider.addCard({ spend_controls: { daily: 100 }, atm_configuration: { atm_withdrawal_allowed: false, max_amount: 500 }, ...extra });
  await pollTransactions(rig.deps);
  await pollCards(rig.deps);
  return rig;
}

const hashOf = (rig: TestRig, key: SnapshotKey): string | undefined => rig.snapshots.data.get(key)?.hash;

/**
 * Rewrites the pulled items' snapshots as a version before the exclusion stored them: `member` kept in the object and
 * in its hash (a transaction's in its provider order, here at the end: any hash other than the one without the member
 * makes the same diff). Returns the snapshots as this version stored them.
 */
function asStoredByEarlierVersion(rig: TestRig, member: Record<string, unknown>): Map<SnapshotKey, Snapshot> {
  const fresh = new Map([TRANSACTION_KEY, CARD_KEY].map((key) => [key, rig.snapshots.data.get(key) as Snapshot]));
  for (const [key, snapshot] of fresh) {
    const object = { ...snapshot.object, ...member };
    rig.snapshots.data.set(key, { ...snapshot, object, hash: key === CARD_KEY ? contentHash(object) : recordHash(object) });
  }
  return fresh;
}

/** The provider lists every transaction again (as after a change), though none changed. */
function listAgain(rig: TestRig): void {
  for (const txn of rig.provider.transactions) txn.client_sync_status = "outdated";
}

/** `value` as a consumer or the store receives it: JSON text, members `undefined` left out. */
const asJson = (value: unknown): Record<string, unknown> => JSON.parse(JSON.stringify(value)) as Record<string, unknown>;

describe("a provider member named _truncated (the bridge's trim marker)", () => {
  // Stored by the version before the engine left the member out (375ff171), for the same items: an upgrade must not
  // give an item without the member another hash, or every such item would be published again as changed.
  it.each([
    ["full", false, { mode: "full" }, "e2f985eb02d9840926d9afc72e53deee794d1bb625cd9a2e1bd4d7857de35715", "ae76b343472490dc28e2bb43b591a9523739b356a273f947941d263286b67c11"],
    ["full", true, { mode: "full" }, "e2f985eb02d9840926d9afc72e53deee794d1bb625cd9a2e1bd4d7857de35715", "688d98c62daf771b43c4c495a11ee9e3437c0a8c964876998ce1836df2653d4e"],
    ["hash", false, { mode: "hash", salt: "pinned-salt" }, "35ae82fff04623ea550a755a50b91610e4a62268a6458e0c5d9d0244639c27ff", "981030214a65a427da6b906811d2fea0f5efe90034e5b49a5e84ccd6b9dd783e"],
    ["hash", true, { mode: "hash", salt: "pinned-salt" }, "35ae82fff04623ea550a755a50b91610e4a62268a6458e0c5d9d0244639c27ff", "d97afd7099b3bddcd5c0a0eff65588a4349d2fa31360410b88fdb2d0321e707e"],
  ] as const)("leaves the hash of an item without one as before its exclusion (pii %s, card details %s)", async (_mode, cardDetails, pii, transactionHash, cardHash) => {
    const rig = await pulledOnce(pii, cardDetails);
    expect(hashOf(rig, TRANSACTION_KEY)).toBe(transactionHash);
    expect(hashOf(rig, CARD_KEY)).toBe(cardHash);
  });

  it.each([false, true])(
    "stored with the item by an earlier version, publishes its removal once, as a change at /_truncated, then nothing (card details %s)",
    async (cardDetails) => {
      const member = { _truncated: "provider's" };
      const rig = await pulledOnce({ mode: "full" }, cardDetails, member);
      const fresh = asStoredByEarlierVersion(rig, member);
      rig.publisher.events.length = 0;

      listAgain(rig);
      await pollTransactions(rig.deps);
      await pollCards(rig.deps);
      const removal = [{ path: "/_truncated", before: "provider's", after: null }];
      expect(rig.publisher.events.map((e) => [e.detailType, e.detail.data.changes])).toEqual([
        ["transaction.changed", removal],
        ["card.updated", removal],
      ]);
      for (const event of rig.publisher.events) expect(Object.hasOwn(asJson(event.detail.data.object), "_truncated")).toBe(false);
      for (const [key, snapshot] of fresh) {
        const stored = rig.snapshots.data.get(key) as Snapshot;
        expect(stored.hash, key).toBe(snapshot.hash);
        expect(Object.hasOwn(asJson(stored.object), "_truncated"), key).toBe(false);
      }

      listAgain(rig);
      await pollTransactions(rig.deps);
      await pollCards(rig.deps);
      expect(rig.publisher.events).toHaveLength(2);
    },
  );

  it("stored with the item by an earlier version, is kept by conform-pii, so the next pull still publishes its removal once", async () => {
    const member = { _truncated: "provider's" };
    const rig = await pulledOnce({ mode: "full" }, false, member);
    asStoredByEarlierVersion(rig, member);
    rig.publisher.events.length = 0;
    const redact = { ...rig.deps, pii: { mode: "redact" } as const };
    expect((await conformSnapshots(redact)).rewritten).toBe(2);
    for (const key of [TRANSACTION_KEY, CARD_KEY]) expect(rig.snapshots.data.get(key)?.object["_truncated"], key).toBe("provider's");

    listAgain(rig);
    await pollTransactions(redact);
    await pollCards(redact);
    listAgain(rig);
    await pollTransactions(redact);
    await pollCards(redact);
    const removal = [{ path: "/_truncated", before: "provider's", after: null }];
    expect(rig.publisher.events.map((e) => [e.detailType, e.detail.data.changes])).toEqual([
      ["transaction.changed", removal],
      ["card.updated", removal],
    ]);
  });

  it("re-driven from the quarantine, is left out of the event and the snapshot, while the record's body kept it as pulled", async () => {
    const rig = makeRig();
    const txn = rig.provider.addTransaction({ _truncated: "provider's" });
    rig.publisher.reject = () => "AccessDeniedException: not allowed";
    await pollTransactions(rig.deps);
    rig.publisher.reject = () => undefined;
    expect([...rig.quarantine.records.values()].map((r) => (r.raw as Record<string, unknown>)["_truncated"])).toEqual(["provider's"]);

    const report = await redriveQuarantined(rig.deps);
    expect(report.redriven.map((r) => r.entityId)).toEqual([txn.id]);
    const [event] = rig.publisher.events;
    expect(event?.detailType).toBe("transaction.created");
    expect(Object.hasOwn(asJson(event?.detail.data.object), "_truncated")).toBe(false);
    expect(Object.hasOwn(asJson(rig.snapshots.data.get(`transaction:${txn.id}`)?.object), "_truncated")).toBe(false);
  });

  it("stored with a transaction by an earlier version, is removed in the transaction's next event, beside its change", async () => {
    const member = { _truncated: "provider's" };
    const rig = await pulledOnce({ mode: "full" }, false, member);
    asStoredByEarlierVersion(rig, member);
    rig.publisher.events.length = 0;
    // Not listed again unless changed: nothing meanwhile.
    await pollTransactions(rig.deps);
    expect(rig.publisher.events).toEqual([]);

    const [txn] = rig.provider.transactions;
    rig.provider.changeTransaction(txn?.id as string, { memo: "airport taxi" });
    await pollTransactions(rig.deps);
    expect(rig.publisher.events.map((e) => e.detail.data.changes?.map((c) => c.path))).toEqual([["/_truncated", "/memo", "/updated_at"]]);
  });

  it("stored with a card by an earlier version, is removed in the suspended fast path's event of its status move", async () => {
    const member = { _truncated: "provider's" };
    const rig = await pulledOnce({ mode: "full" }, true, member);
    asStoredByEarlierVersion(rig, member);
    rig.publisher.events.length = 0;
    rig.provider.changeCard("CA00000001", { status: "Suspended" });
    await pollCards(rig.deps, { mode: "suspended-only" });
    expect(rig.publisher.events.map((e) => [e.detailType, e.detail.data.changes?.map((c) => c.path)])).toEqual([["card.suspended", ["/_truncated", "/status"]]]);
    expect(Object.hasOwn(asJson(rig.snapshots.data.get(CARD_KEY)?.object), "_truncated")).toBe(false);
  });
});
