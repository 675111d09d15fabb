/** The engine's own record checks: the least it needs of a record, zod schemas plugged in, and stored sequences. */
import { describe, expect, it } from "vitest";
import * as z from "zod";
import { cardValidator, isSnapshotSequence, requireObjectWithId, schemaValidator, type SafeParseSchema } from "../../shared/bridge/validate.js";

describe("requireObjectWithId", () => {
  it("accepts an object with a non-empty string id as it is", () => {
    const raw = { id: "t1", memo: "x" };
    const result = requireObjectWithId(raw);
    expect(result).toEqual({ success: true, data: raw });
    expect(result.success && result.data).toBe(raw);
  });

  it("says an array is not an object, and refuses an empty id", () => {
    expect(requireObjectWithId([{ id: "t1" }])).toEqual({ success: false, reason: "not an object" });
    expect(requireObjectWithId({ id: "" })).toEqual({ success: false, reason: "id: missing or not a non-empty string" });
  });
});

describe("schemaValidator", () => {
  it("names an issue of the record itself (root), and lists at most ten issues", () => {
    const validate = schemaValidator(z.object({ id: z.string() }));
    expect(validate("not a record")).toEqual({ success: false, reason: expect.stringMatching(/^\(root\): /) });
    const twelve = z.object(Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`f${i}`, z.string()])));
    const result = schemaValidator(twelve)({});
    expect(result.success).toBe(false);
    if (result.success) return;
    expect(result.reason.split("; ").map((line) => line.split(":")[0])).toEqual(Array.from({ length: 10 }, (_, i) => `f${i}`));
  });

  it("gives a reason even for a failure without issues", () => {
    const silent: SafeParseSchema = { safeParse: () => ({ success: false, error: { issues: [] } }) };
    expect(schemaValidator(silent)({ id: "t1" })).toEqual({ success: false, reason: "invalid" });
  });

  it("still requires an object with a string id of what the schema accepts", () => {
    expect(schemaValidator(z.object({ id: z.number() }))({ id: 7 })).toEqual({ success: false, reason: "id: missing or not a non-empty string" });
  });

  it("turns a throwing schema into a reason naming the error class only", () => {
    const throwing: SafeParseSchema = {
      safeParse: () => {
        throw new RangeError("t1 secret");
      },
    };
    expect(schemaValidator(throwing)({ id: "t1" })).toEqual({ success: false, reason: "validator threw: RangeError" });
  });
});

describe("cardValidator", () => {
  it("runs the plugged validator first: its refusal and its parsed data are what the card check gives", () => {
    const validate = cardValidator(schemaValidator(z.object({ id: z.string(), status: z.string(), limit: z.coerce.number() })));
    expect(validate({ id: "CA1", status: "Active" })).toEqual({ success: false, reason: expect.stringMatching(/^limit: /) });
    expect(validate({ id: "CA1", status: "Active", limit: "250" })).toEqual({ success: true, data: { id: "CA1", status: "Active", limit: 250 } });
  });

  it("refuses a card without a string status, whatever the plugged validator allows", () => {
    const validate = cardValidator(schemaValidator(z.object({ id: z.string(), status: z.string().nullable() })));
    expect(validate({ id: "CA1", status: null })).toEqual({ success: false, reason: "status: missing or not a string" });
    expect(cardValidator()({ id: "CA1" })).toEqual({ success: false, reason: "status: missing or not a string" });
    expect(cardValidator()({ id: "", status: "Active" })).toEqual({ success: false, reason: "id: missing or not a non-empty string" });
  });
});

describe("isSnapshotSequence", () => {
  it("accepts no sequence, 0 and whole numbers, not past the safe integers", () => {
    expect([undefined, 0, 1, Number.MAX_SAFE_INTEGER].map(isSnapshotSequence)).toEqual([true, true, true, true]);
    expect([-1, 1.5, "2", null, Number.MAX_SAFE_INTEGER + 1, NaN].map(isSnapshotSequence)).toEqual([false, false, false, false, false, false]);
  });
});
