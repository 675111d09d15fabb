/** Which transaction ids the acknowledge takes, and how the engine reads an id member. */
import { describe, expect, it } from "vitest";
import { isAcknowledgeableId, optionalString } from "../../shared/bridge/transaction-ids.js";

describe("isAcknowledgeableId", () => {
  it("takes a whole UUID only: one with text after it would fail the whole acknowledge call", () => {
    expect(isAcknowledgeableId("00000000-0000-4000-8000-000000000001")).toBe(true);
    for (const id of ["00000000-0000-4000-8000-000000000001x", "00000000-0000-4000-8000-0000000000012", "00000000-0000-4000-8000-000000000001\n", "T-1", undefined]) {
      expect(isAcknowledgeableId(id)).toBe(false);
    }
  });
});

describe("optionalString", () => {
  it("takes a non-empty string as the id and anything else, the empty string included, as none", () => {
    expect(optionalString("T-1")).toBe("T-1");
    for (const value of ["", 7, null, undefined, { id: "T-1" }]) expect(optionalString(value)).toBeUndefined();
  });
});
