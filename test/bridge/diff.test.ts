import { describe, expect, it } from "vitest";
import { diffObjects, escapePointerToken, jsonEqual } from "../../shared/bridge/diff.js";

describe("diffObjects", () => {
  it("reports nothing for equal objects whatever their key order", () => {
    expect(diffObjects({ a: 1, b: { c: [1, 2] } }, { b: { c: [1, 2] }, a: 1 })).toEqual([]);
  });

  it("reports leaf changes with JSON Pointer paths in sorted key order", () => {
    expect(diffObjects({ memo: "a", erp_supplier: { id: "S1", status: "active" } }, { memo: "b", erp_supplier: { id: "S1", status: "inactive" } })).toEqual([
      { path: "/erp_supplier/status", before: "active", after: "inactive" },
      { path: "/memo", before: "a", after: "b" },
    ]);
  });

  it("reports added and removed members with null on the missing side", () => {
    expect(diffObjects({ a: 1 }, { b: 2 })).toEqual([
      { path: "/a", before: 1, after: null },
      { path: "/b", before: null, after: 2 },
    ]);
  });

  it("treats an absent member and a null member as equal", () => {
    expect(diffObjects({ a: null }, {})).toEqual([]);
  });

  it("matches array elements by id, not by position", () => {
    const before = { segments: [{ id: "S1", code: "A" }, { id: "S2", code: "B" }] };
    const after = { segments: [{ id: "S0", code: "Z" }, { id: "S2", code: "B2" }, { id: "S1", code: "A" }] };
    expect(diffObjects(before, after)).toEqual([
      { path: "/segments/S0", before: null, after: { id: "S0", code: "Z" } },
      { path: "/segments/S2/code", before: "B", after: "B2" },
    ]);
  });

  it("reports nothing when id-matched elements only moved (docs/events.md: a new order alone is not a change)", () => {
    const a = { id: "a", amount: 1 };
    const b = { id: "b", amount: 2 };
    expect(diffObjects({ line_items: [a, b] }, { line_items: [b, a] })).toEqual([]);
    expect(diffObjects({ tags: ["x", "y"] }, { tags: ["y", "x"] })).toEqual([{ path: "/tags", before: ["x", "y"], after: ["y", "x"] }]);
  });

  it("lists an id-matched array's changes in the order of its elements now, the elements removed after them in their old order", () => {
    const before = { line_items: [{ id: "A", v: 1 }, { id: "B", v: 1 }, { id: "C", v: 1 }] };
    const after = { line_items: [{ id: "D", v: 1 }, { id: "C", v: 2 }] };
    expect(diffObjects(before, after).map((change) => change.path)).toEqual(["/line_items/D", "/line_items/C/v", "/line_items/A", "/line_items/B"]);
  });

  it("reports an element removed from an id-matched array", () => {
    expect(diffObjects({ receipts: [{ id: "R1" }, { id: "R2" }] }, { receipts: [{ id: "R2" }] })).toEqual([
      { path: "/receipts/R1", before: { id: "R1" }, after: null },
    ]);
  });

  it("matches nested id arrays (segments inside line items)", () => {
    const before = { line_items: [{ id: "L1", segments: [{ id: "S1", code: "P1" }] }] };
    const after = { line_items: [{ id: "L1", segments: [{ id: "S1", code: "P2" }] }] };
    expect(diffObjects(before, after)).toEqual([{ path: "/line_items/L1/segments/S1/code", before: "P1", after: "P2" }]);
  });

  it("replaces arrays without unique ids as a whole", () => {
    expect(diffObjects({ tags: [1, 2] }, { tags: [2, 1] })).toEqual([{ path: "/tags", before: [1, 2], after: [2, 1] }]);
    const dup = [{ id: "X", v: 1 }, { id: "X", v: 2 }];
    expect(diffObjects({ l: dup }, { l: [dup[1], dup[0]] })).toEqual([{ path: "/l", before: dup, after: [dup[1], dup[0]] }]);
  });

  it("escapes ~ and / in keys and ids per RFC 6901", () => {
    expect(escapePointerToken("a/b~c")).toBe("a~1b~0c");
    expect(diffObjects({ items: [{ id: "x/y", v: 1 }] }, { items: [{ id: "x/y", v: 2 }] })[0]?.path).toBe("/items/x~1y/v");
    // A removed element's path is escaped too: a consumer keys on it as on any other.
    expect(diffObjects({ items: [{ id: "x/y" }, { id: "z" }] }, { items: [{ id: "z" }] })).toEqual([{ path: "/items/x~1y", before: { id: "x/y" }, after: null }]);
  });

  it("escapes a key or id holding only ~ (no /) as ~0, so a consumer's pointer resolves to that member", () => {
    expect(escapePointerToken("a~b")).toBe("a~0b");
    expect(diffObjects({ "fx~rate": 1 }, { "fx~rate": 2 })).toEqual([{ path: "/fx~0rate", before: 1, after: 2 }]);
    expect(diffObjects({ receipts: [{ id: "R~1", v: 1 }] }, { receipts: [{ id: "R~1", v: 2 }] })[0]?.path).toBe("/receipts/R~01/v");
  });

  it("matches by id when the array was empty before or is empty after: the first receipt added, the last removed", () => {
    const receipt = { id: "R1", url: "https://files.example/r1.pdf" };
    expect(diffObjects({ receipts: [] }, { receipts: [receipt] })).toEqual([{ path: "/receipts/R1", before: null, after: receipt }]);
    expect(diffObjects({ receipts: [receipt] }, { receipts: [] })).toEqual([{ path: "/receipts/R1", before: receipt, after: null }]);
  });

  it("matches array elements by a numeric id too, addressing them by that id", () => {
    const before = { line_items: [{ id: 1, amount: 5 }, { id: 2, amount: 7 }] };
    const after = { line_items: [{ id: 2, amount: 7 }, { id: 1, amount: 6 }] };
    expect(diffObjects(before, after)).toEqual([{ path: "/line_items/1/amount", before: 5, after: 6 }]);
  });

  it("reports an element appended to an array without ids, whose old elements are all still there in order", () => {
    expect(diffObjects({ tags: ["travel"] }, { tags: ["travel", "client"] })).toEqual([
      { path: "/tags", before: ["travel"], after: ["travel", "client"] },
    ]);
    expect(jsonEqual(["travel"], ["travel", "client"])).toBe(false);
  });

  it("diffs members named like Object.prototype members (constructor, toString) as ordinary members", () => {
    expect(diffObjects({}, { constructor: "x" })).toEqual([{ path: "/constructor", before: null, after: "x" }]);
    expect(diffObjects({ toString: "a" }, {})).toEqual([{ path: "/toString", before: "a", after: null }]);
    expect(diffObjects({ tags: [{ k: 1 }] }, { tags: [{ k: 1, valueOf: "v" }] })).toEqual([
      { path: "/tags", before: [{ k: 1 }], after: [{ k: 1, valueOf: "v" }] },
    ]);
    expect(diffObjects({ custom_segments: { constructor: "a" } }, { custom_segments: { constructor: "a" } })).toEqual([]);
  });

  it("reports a type change as one change", () => {
    expect(diffObjects({ a: { b: 1 } }, { a: "flat" })).toEqual([{ path: "/a", before: { b: 1 }, after: "flat" }]);
    expect(diffObjects({ a: { b: 1 } }, { a: null })).toEqual([{ path: "/a", before: { b: 1 }, after: null }]);
    expect(diffObjects({ a: {} }, { a: null })).toEqual([{ path: "/a", before: {}, after: null }]);
  });

  it("reports an empty object turned into an empty array, and back, as a change", () => {
    expect(diffObjects({ custom_fields: {} }, { custom_fields: [] })).toEqual([{ path: "/custom_fields", before: {}, after: [] }]);
    expect(diffObjects({ custom_fields: [] }, { custom_fields: {} })).toEqual([{ path: "/custom_fields", before: [], after: {} }]);
  });
});

describe("jsonEqual", () => {
  it("compares deeply and tells arrays from objects", () => {
    expect(jsonEqual({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] })).toBe(true);
    expect(jsonEqual([], {})).toBe(false);
    expect(jsonEqual({}, [])).toBe(false);
    expect(jsonEqual({ 0: "a" }, ["a"])).toBe(false);
    expect(jsonEqual({ a: 1 }, { a: 1, b: 0 })).toBe(false);
  });

  it("tells an array from an object holding its elements and a matching length", () => {
    expect(jsonEqual(["a"], { 0: "a", length: 1 })).toBe(false);
    expect(diffObjects({ tags: ["a"] }, { tags: { 0: "a", length: 1 } })).toEqual([{ path: "/tags", before: ["a"], after: { 0: "a", length: 1 } }]);
  });

  it("sees only own members, never inherited ones", () => {
    expect(jsonEqual({}, { toString: "x" })).toBe(false);
    expect(jsonEqual({ constructor: "x" }, {})).toBe(false);
    expect(jsonEqual({ hasOwnProperty: null }, {})).toBe(true);
  });

  it("takes a member null on either side for one absent on the other, in arrays without ids too", () => {
    expect(jsonEqual({}, { a: null })).toBe(true);
    expect(jsonEqual({ a: null }, {})).toBe(true);
    expect(jsonEqual({}, { a: 0 })).toBe(false);
    expect(diffObjects({ tags: [{ k: 1 }] }, { tags: [{ k: 1, note: null }] })).toEqual([]);
    expect(diffObjects({ tags: [{ k: 1, note: null }] }, { tags: [{ k: 1 }] })).toEqual([]);
  });
});
