import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalJson, contentHash, eventId, jsonOf, jsonString, recordHash, releaseJson, sha256Hex, uuidFromHex } from "../../shared/bridge/hash.js";
import { diffObjects } from "../../shared/bridge/diff.js";
import { normaliseTransaction } from "../../shared/bridge/transactions.js";

/** JSON objects with awkward keys: array indexes, __proto__, unicode, keys that differ only in case. */
const key = fc.oneof(fc.string(), fc.constantFrom("0", "1", "10", "9", "__proto__", "toJSON", "a", "B", "é", "\u2028"));
const json = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constant(null),
    fc.boolean(),
    fc.double(),
    fc.integer(),
    fc.string(),
    fc.array(tie("value"), { maxLength: 4 }),
    tie("object"),
  ),
  object: fc.dictionary(key, tie("value"), { maxKeys: 6 }),
})).object as fc.Arbitrary<Record<string, unknown>>;

describe("canonicalJson", () => {
  it("is the same text for the same members in any key order, and contentHash and jsonOf follow it", () => {
    fc.assert(
      fc.property(json, (object) => {
        const reordered = Object.fromEntries(Object.entries(object).reverse());
        expect(canonicalJson(reordered)).toBe(canonicalJson(object));
        expect(contentHash(object)).toBe(sha256Hex(canonicalJson(object)));
        expect(jsonOf(object)).toBe(canonicalJson(object));
      }),
      { numRuns: 500 },
    );
  });

  it("sorts array-index keys as text, as every other key (an object lists them first, in numeric order)", () => {
    expect(canonicalJson({ "1a": 1, "4294967294": 2 })).toBe('{"1a":1,"4294967294":2}');
    expect(canonicalJson({ "1a": 1, "4294967295": 2 })).toBe('{"1a":1,"4294967295":2}');
    expect(canonicalJson({ b: 1, "10": 2, "9": 3, "01": 4 })).toBe('{"01":4,"10":2,"9":3,"b":1}');
  });

  it("writes a bigint as its digits (JSON.stringify would throw)", () => {
    expect(contentHash({ amount: 12345678901234567890n, id: "t1" })).toBe(sha256Hex('{"amount":12345678901234567890,"id":"t1"}'));
  });

  it("writes NaN and infinities as null, as JSON.stringify does: a provider's 1e999 hashes alike on either path", () => {
    expect(canonicalJson({ a: Number.NaN, b: [Infinity, -Infinity] })).toBe('{"a":null,"b":[null,null]}');
    const parsed = JSON.parse('{"id":"t1","fx_rate":1e999}') as Record<string, unknown>;
    expect(parsed.fx_rate).toBe(Infinity);
    expect(contentHash(parsed)).toBe(sha256Hex('{"fx_rate":null,"id":"t1"}'));
  });

  it("writes a number as JSON.stringify does, so one value in any provider spelling (1e5, 100000.0, -0, 1E21) hashes alike", () => {
    const spellings = [
      ["100000", "1e5", "100000.0", "1E+5"],
      ["0", "-0", "0.0", "-0e3"],
      ["1e+21", "1E21", "1000000000000000000000"],
      ["0.1", "1e-1", "0.10"],
    ];
    for (const texts of spellings) {
      const objects = texts.map((text) => JSON.parse(`{"amount":${text}}`) as Record<string, unknown>);
      for (const object of objects) expect(canonicalJson(object), JSON.stringify(texts)).toBe(JSON.stringify(object));
      expect(new Set(objects.map((object) => contentHash(object))).size, JSON.stringify(texts)).toBe(1);
    }
  });

  it("writes strings as sent, not normalised: an é composed and one decomposed are two texts with two hashes", () => {
    const forms = ["\u00e9", "e\u0301", "\u00c5", "A\u030a", "\u212b", "\ud83d\ude00", "\u2028"];
    for (const memo of forms) {
      expect(canonicalJson({ memo, id: "t1" }), memo).toBe(JSON.stringify({ id: "t1", memo }));
      expect(contentHash({ memo, id: "t1" }), memo).toBe(sha256Hex(JSON.stringify({ id: "t1", memo })));
    }
    expect(new Set(forms.map((memo) => contentHash({ memo }))).size).toBe(forms.length);
  });

  it("drops function and symbol members as JSON.stringify does", () => {
    const object = { b: () => 1, a: 1, c: Symbol("x"), d: [() => 1] };
    expect(canonicalJson(object)).toBe('{"a":1,"d":[null]}');
    expect(canonicalJson(object)).toBe(JSON.stringify({ a: 1, d: [() => 1] }));
    expect(contentHash(object)).toBe(sha256Hex('{"a":1,"d":[null]}'));
  });

  it("hashes a normalised transaction as its JSON text in provider key order, after PII handling", () => {
    fc.assert(
      fc.property(json, fc.constantFrom("full", "redact", "hash") as fc.Arbitrary<"full" | "redact" | "hash">, (object, mode) => {
        const data = { ...object, card_holder_name: "Ann", cardholder: { name: "Ann", email: "a@x.io", "1": 1 }, client_sync_status: "not_synced" };
        const normalised = normaliseTransaction(data, { mode, salt: "s" });
        expect(normalised["client_sync_status"]).toBeUndefined();
        const text = JSON.stringify(normalised);
        expect(Object.keys(JSON.parse(text))).toEqual(Object.keys(data).filter((k) => k !== "client_sync_status"));
        expect(recordHash(normalised)).toBe(sha256Hex(text));
        expect(jsonOf(normalised)).toBe(text);
      }),
      { numRuns: 200 },
    );
  });

  it("gives a reordered transaction another hash but no changes, so the engine publishes nothing for it", () => {
    fc.assert(
      fc.property(json, (object) => {
        // As the provider sends it: parsed JSON (no NaN, no undefined members).
        const data = JSON.parse(JSON.stringify({ ...object, id: "t1", amount: 5, cardholder: { name: "Ann", email: "a@x.io" } })) as Record<string, unknown>;
        const reordered = Object.fromEntries(Object.entries(data).reverse());
        const a = normaliseTransaction(data, { mode: "redact" });
        const b = normaliseTransaction(reordered, { mode: "redact" });
        expect(diffObjects(a, b)).toEqual([]);
        // At least id, amount and cardholder are non-index keys, so the reversed object's text (and hash) differs.
        expect(recordHash(b)).not.toBe(recordHash(a));
        expect(recordHash(normaliseTransaction(data, { mode: "redact" }))).toBe(recordHash(a));
      }),
      { numRuns: 200 },
    );
  });

  it("never mutates the provider record it normalises", () => {
    const data = { id: "t1", cardholder: { name: "Ann", email: "a@x.io" }, card_holder_name: "Ann", client_sync_status: "outdated" };
    const before = structuredClone(data);
    normaliseTransaction(data, { mode: "hash", salt: "s" });
    expect(data).toEqual(before);
  });
});

describe("jsonOf and releaseJson", () => {
  it("gives the text an object was hashed as until it is released, then serialises the object again", () => {
    const record: Record<string, unknown> = { id: "t1", amount: 5 };
    recordHash(record);
    // Changed after hashing (which callers must not do): the kept text shows it is the one jsonOf returns.
    record["amount"] = 6;
    expect(jsonOf(record)).toBe('{"id":"t1","amount":5}');
    releaseJson(record);
    expect(jsonOf(record)).toBe('{"id":"t1","amount":6}');
  });

  it("gives null for what JSON.stringify has no text for, so a line built around it stays JSON", () => {
    expect(jsonOf(undefined)).toBe("null");
    expect(JSON.parse(`{"object":${jsonOf(() => 1)}}`)).toEqual({ object: null });
  });
});

describe("jsonString", () => {
  it("gives JSON.stringify's text for any string: quotes, backslashes, controls, lone surrogates, unicode", () => {
    const text = fc.oneof(fc.string({ unit: "binary" }), fc.string({ unit: "grapheme" }), fc.constantFrom('"', "\\", "\u0000", "\u001f", "\ud800", "\udfff", "\u2028", ""));
    fc.assert(
      fc.property(text, (value) => {
        expect(jsonString(value)).toBe(JSON.stringify(value));
      }),
      { numRuns: 500 },
    );
  });
});

describe("eventId", () => {
  it("keeps the ids of published changes: the snapshot version is hashed last, after its own NUL separator", () => {
    const change = { tenant: "acme", type: "transaction.changed", subjectId: "t1", beforeHash: "h0", beforeVersion: "2025-01-15T10:00:00.000Z", afterHash: "h1" };
    expect(eventId(change)).toBe(uuidFromHex(sha256Hex("acme\u0000transaction.changed\u0000t1\u0000h0\u0000h1\u00002025-01-15T10:00:00.000Z")));
    // The id this version publishes for that change: consumers deduplicate a re-send after an upgrade by it.
    expect(eventId(change)).toBe("6b05729d-65c3-8bd0-a8ff-ded265efbf5b");
  });
});
