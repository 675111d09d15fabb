/** Quarantine record ids: the same bad input keeps its id whatever PII form it is stored in, and the id holds no personal value. */
import { describe, expect, it } from "vitest";
import { quarantineId } from "../../shared/bridge/quarantine-id.js";
import { applyPii, type PiiPolicy } from "../../shared/bridge/pii.js";
import { contentHash, sha256Hex, uuidFromHex } from "../../shared/bridge/hash.js";

const raw = {
  id: "CA1",
  status: null,
  card_nickname: "Travel",
  cardholder: { name: "Ann Holder", email: "ann@example.com", employee_id: "EMP-2001" },
  approved_by: { user_external_id: "u-7", name: "Bob Approver" },
};

describe("quarantineId", () => {
  it("is the same for a body in any PII form, under any salt", () => {
    const id = quarantineId("acme", "card", "validation", raw);
    const policies: PiiPolicy[] = [{ mode: "full" }, { mode: "redact" }, { mode: "hash", salt: "salt-1" }, { mode: "hash", salt: "salt-2" }];
    for (const policy of policies) expect(quarantineId("acme", "card", "validation", applyPii(raw, policy))).toBe(id);
  });

  it("takes no personal value in: another cardholder or approver gives the same id", () => {
    const other = { ...raw, cardholder: { name: "Cy Other", email: "cy@example.com", employee_id: "EMP-9" }, approved_by: { user_external_id: "u-7", name: "Dee" } };
    expect(quarantineId("acme", "card", "validation", other)).toBe(quarantineId("acme", "card", "validation", raw));
  });

  it("leaves out client_sync_status: the same bad transaction listed not_synced, listed outdated or re-read by a re-drive is one record", () => {
    const transaction = { id: "6f1c2d3e-0000-4000-8000-000000000001", qashio_id: "CT1", billing_amount: "not a number" };
    const ids = ["not_synced", "outdated", "synced", undefined].map((status) =>
      quarantineId("acme", "transaction", "validation", status === undefined ? transaction : { ...transaction, client_sync_status: status }),
    );
    expect(new Set(ids).size).toBe(1);
  });

  it("differs by tenant, entity kind, cause and any member that is not personal", () => {
    const id = quarantineId("acme", "card", "validation", raw);
    expect(new Set([
      id,
      quarantineId("globex", "card", "validation", raw),
      quarantineId("acme", "transaction", "validation", raw),
      quarantineId("acme", "card", "publish", raw),
      quarantineId("acme", "card", "validation", { ...raw, card_nickname: "Fuel" }),
      quarantineId("acme", "card", "validation", { ...raw, approved_by: { user_external_id: "u-8", name: "Bob Approver" } }),
    ]).size).toBe(6);
    // A body that is not an object has no personal fields the engine knows of: hashed as it is.
    expect(quarantineId("acme", "card", "validation", "not an object")).not.toBe(quarantineId("acme", "card", "validation", null));
  });

  it("keeps the ids of stored records: NUL-separated tenant, kind, cause and the redacted body's content hash", () => {
    const body = { id: "CA1", status: null, cardholder: { name: "Ann Holder" } };
    const redacted = { id: "CA1", status: null, cardholder: { name: "[redacted]" } };
    expect(quarantineId("acme", "card", "validation", body)).toBe(uuidFromHex(sha256Hex(`acme\u0000card\u0000validation\u0000${contentHash(redacted)}`)));
    // The id this version gives that record: a record stored earlier and found again must keep it.
    expect(quarantineId("acme", "card", "validation", body)).toBe("7723d6d7-f5a0-864b-b442-17eb596cba7c");
  });

  it("takes a transaction body that is not an object (null, text, a number) without failing, one id each", () => {
    const ids = [null, "not an object", 7].map((body) => quarantineId("acme", "transaction", "validation", body));
    expect(new Set(ids).size).toBe(3);
  });
});
