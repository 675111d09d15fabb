/**
 * The entity id a quarantine record, its log lines and the re-drive name: the provider's id when it has the provider's
 * id form, none otherwise, so whatever a broken record carries in `id` (an email, say) is not logged, stored as
 * `entityId` or printed, whatever the PII mode. The record is still quarantined, counted and found again as one.
 */
import { describe, expect, it } from "vitest";
import { pollCards, pollTransactions, redriveQuarantined } from "../../shared/bridge/index.js";
import { wellFormedEntityId } from "../../shared/bridge/entity-id.js";
import { formatRedriveSummary, redriveOutcome } from "../../shared/cli/redrive.js";
import type { QuarantineRecord } from "../../shared/bridge/ports.js";
import { makeRig, txnId, type TestRig } from "./fakes.js";
import { clientOverFake } from "./provider-client.js";

/** Not a personal field's value: an email the provider put where the record's id belongs. */
const EMAIL = "khalid.fernandes@example.com";

/** Everything a person or a log reader sees of the rig's run: its log lines and the quarantine records but their bodies. */
function seen(rig: TestRig): string {
  const records = [...rig.quarantine.records.values()].map(({ raw: _body, ...rest }: QuarantineRecord) => rest);
  return JSON.stringify({ lines: rig.logger.lines, records });
}

describe("a quarantined record's entity id", () => {
  it("is left out when a transaction's id is an email: not logged, stored or printed by the re-drive; still quarantined and counted once", async () => {
    const rig = makeRig({ pii: { mode: "redact" } });
    const good = rig.provider.addTransaction();
    const bad = rig.provider.addTransaction();
    const twin = rig.provider.addTransaction();
    // Two copies on one page naming the same id with different content: the walk warns about the pair.
    rig.provider.rawOverrides.set(bad.id, { ...bad, id: EMAIL });
    rig.provider.rawOverrides.set(twin.id, { ...twin, id: EMAIL });
    const provider = clientOverFake(rig.provider, rig.clock);
    const report = await pollTransactions({ ...rig.deps, provider });
    expect(report).toMatchObject({ outcome: "complete", quarantined: 1 });
    expect(rig.publisher.events.map((e) => e.detail.subject.id)).toEqual([good.id]);
    const [record, ...more] = [...rig.quarantine.records.values()];
    expect(more).toEqual([]);
    expect(record).toMatchObject({ kind: "transaction", reason: expect.stringMatching(/^validation: /) });
    expect(record!.entityId).toBeUndefined();
    expect(rig.logger.lines.map((l) => l.message)).toEqual(expect.arrayContaining(["record quarantined", "transaction listed twice on one page with different content"]));
    // Found again by the next cycle: the same record, not counted again.
    expect((await pollTransactions({ ...rig.deps, provider })).quarantined).toBe(1);
    expect(rig.quarantine.records.size).toBe(1);
    expect(rig.metrics.sum("Quarantined")).toBe(1);
    const redrive = await redriveQuarantined({ ...rig.deps, provider });
    const printed = [formatRedriveSummary(redrive), ...redriveOutcome(redrive).lines].join("\n");
    expect(seen(rig) + printed).not.toContain(EMAIL);
  });

  it("is left out when a card's id is an email (card details off and on), the card quarantined once", async () => {
    for (const cardDetails of [false, true]) {
      const rig = makeRig({ pii: { mode: "redact" }, emitCardCreated: true }, { cardDetails });
      const good = rig.provider.addCard();
      rig.provider.addCard({ id: EMAIL });
      const provider = clientOverFake(rig.provider, rig.clock);
      expect(await pollCards({ ...rig.deps, provider })).toMatchObject({ outcome: "complete", quarantined: 1 });
      expect(rig.publisher.events.map((e) => e.detail.subject.id)).toEqual([good["id"]]);
      expect([...rig.quarantine.records.values()].map((r) => [r.kind, r.entityId])).toEqual([["card", undefined]]);
      expect(rig.logger.lines.filter((l) => l.message === "record quarantined")).toHaveLength(1);
      expect(seen(rig)).not.toContain(EMAIL);
    }
  });

  it("is left out when a card's id is no string, though it prints as a card id: the record names no card it may not be", async () => {
    const rig = makeRig({ emitCardCreated: true });
    const good = rig.provider.addCard();
    // An array holding a card id: `String` of it reads as that id, and names that card to ops and the re-drive.
    rig.provider.addCard({ id: ["CA99999999"] });
    const provider = clientOverFake(rig.provider, rig.clock);
    expect(await pollCards({ ...rig.deps, provider })).toMatchObject({ outcome: "complete", quarantined: 1 });
    expect(rig.publisher.events.map((e) => e.detail.subject.id)).toEqual([good["id"]]);
    expect([...rig.quarantine.records.values()].map((r) => [r.kind, r.entityId])).toEqual([["card", undefined]]);
  });

  it("is kept when it has the provider's id form, so the re-drive reads the transaction again by it", async () => {
    const rig = makeRig({ pii: { mode: "redact" } });
    const bad = rig.provider.addTransaction();
    rig.provider.rawOverrides.set(bad.id, { ...bad, qashio_id: "not a CT reference" });
    const provider = clientOverFake(rig.provider, rig.clock);
    await pollTransactions({ ...rig.deps, provider });
    expect([...rig.quarantine.records.values()].map((r) => r.entityId)).toEqual([bad.id]);
    expect(rig.logger.lines.find((l) => l.message === "record quarantined")?.attributes).toMatchObject({ entityId: bad.id });
  });

  it("is kept for a card with the card id form, the record refused for another member", async () => {
    const rig = makeRig({ pii: { mode: "redact" }, emitCardCreated: true });
    const bad = rig.provider.addCard({ card_nickname: 42 });
    const provider = clientOverFake(rig.provider, rig.clock);
    expect(await pollCards({ ...rig.deps, provider })).toMatchObject({ outcome: "complete", quarantined: 1 });
    expect([...rig.quarantine.records.values()].map((r) => [r.kind, r.entityId])).toEqual([["card", bad["id"]]]);
  });
});

describe("wellFormedEntityId", () => {
  it.each([
    ["transaction", txnId(7), txnId(7)],
    ["transaction", "0F8FAD5B-D9CB-469F-A165-70867728950E", "0F8FAD5B-D9CB-469F-A165-70867728950E"],
    ["transaction", EMAIL, undefined],
    ["transaction", "T-1", undefined],
    ["transaction", ` ${txnId(7)}`, undefined],
    ["transaction", 7, undefined],
    ["card", "CA00000001", "CA00000001"],
    ["card", "CA_x-1", "CA_x-1"],
    ["card", "CAxY9", "CAxY9"],
    ["card", "ca00000001", undefined],
    ["card", "Ann Holder CA00000001", undefined],
    ["card", EMAIL, undefined],
    ["card", `CA${EMAIL}`, undefined],
    ["card", "CA Ann Holder", undefined],
    ["card", "CAann.holder", undefined],
    ["card", "CA", undefined],
    ["card", `CA${"1".repeat(254)}`, `CA${"1".repeat(254)}`],
    ["card", `CA${"1".repeat(255)}`, undefined],
    ["card", txnId(7), undefined],
    ["card", null, undefined],
    // Not a string, though a regular expression would read it as one ("CA00000001").
    ["card", ["CA00000001"], undefined],
    ["transaction", [txnId(7)], undefined],
  ] as const)("takes a %s id %j as %j", (kind, id, expected) => {
    expect(wellFormedEntityId(kind, id)).toBe(expected);
  });
});
