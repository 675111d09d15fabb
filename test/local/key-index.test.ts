import { describe, expect, it } from "vitest";
import { KeyIndex, fingerprint, sameFingerprint } from "../../shared/local/key-index.js";

describe("KeyIndex", () => {
  it("finds every key it holds and reports the location of an entry it replaces", () => {
    const index = new KeyIndex();
    for (let i = 0; i < 50_000; i++) expect(index.set(`transaction:${i}`, { segment: 1, offset: i * 10, length: i })).toBeUndefined();
    expect(index.set("transaction:7", { segment: 2, offset: 5, length: 6 })).toEqual({ segment: 1, offset: 70, length: 7 });
    expect(index.size).toBe(50_000);
    expect(index.get("transaction:7")).toEqual({ segment: 2, offset: 5, length: 6 });
    expect(index.get("transaction:49999")).toEqual({ segment: 1, offset: 499_990, length: 49_999 });
    expect(index.get("transaction:50000")).toBeUndefined();
    // Every key, not a sample: the key whose set grows the table must land where a get looks for it.
    const lost = Array.from({ length: 50_000 }, (_, i) => i).filter((i) => index.get(`transaction:${i}`)?.offset !== (i === 7 ? 5 : i * 10));
    expect(lost).toEqual([]);
  });

  it("keeps offsets beyond 4 GiB exact", () => {
    const index = new KeyIndex();
    index.set("card:A", { segment: 3, offset: 2 ** 33 + 1, length: 10 });
    expect(index.get("card:A")?.offset).toBe(2 ** 33 + 1);
    // Also once the table has grown (every array is made again).
    for (let i = 0; i < 5_000; i++) index.set(`card:C${i}`, { segment: 3, offset: 2 ** 33 + i, length: 10 });
    expect(index.get("card:A")?.offset).toBe(2 ** 33 + 1);
    expect(index.get("card:C4999")?.offset).toBe(2 ** 33 + 4999);
  });

  it("keeps lengths beyond 64 KiB exact, before and after the table grows (a line may be up to 4 GiB)", () => {
    const index = new KeyIndex();
    index.set("card:A", { segment: 3, offset: 0, length: 2 ** 32 - 1 });
    expect(index.get("card:A")?.length).toBe(2 ** 32 - 1);
    for (let i = 0; i < 1_000; i++) index.set(`card:C${i}`, { segment: 3, offset: i, length: 2 ** 16 + i });
    expect(index.get("card:A")?.length).toBe(2 ** 32 - 1);
    expect(index.get("card:C999")?.length).toBe(2 ** 16 + 999);
  });

  it("costs at most 64 bytes per key however many keys it holds", () => {
    const index = new KeyIndex();
    for (let i = 0; i < 200_000; i++) index.set(`transaction:qashio_id:CT${1_000_000_000 + i}`, { segment: i >> 7, offset: i, length: 1 });
    expect(index.size).toBe(200_000);
    expect(index.bytes / index.size).toBeLessThanOrEqual(64);
  });

  it("reports the bytes of its arrays, 24 a slot: 1024 slots at first, twice as many once a key would fill more than 3/4", () => {
    const index = new KeyIndex();
    expect(index.bytes).toBe(1024 * 24);
    for (let i = 0; i < 768; i++) index.set(`card:C${i}`, { segment: 1, offset: i, length: 1 });
    expect(index.bytes).toBe(1024 * 24);
    index.set("card:C768", { segment: 1, offset: 768, length: 1 });
    expect(index.bytes).toBe(2048 * 24);
  });

  it("tells a key sharing the wanted key's slot from any other", () => {
    expect(sameFingerprint("transaction:7", "transaction:7")).toBe(true);
    expect(sameFingerprint("transaction:7", "transaction:8")).toBe(false);
    // These two share the first 32 bits of the fingerprint only (found by search): they never share a slot.
    expect(fingerprint("card:CA15059")[0]).toBe(fingerprint("card:CA31898")[0]);
    expect(sameFingerprint("card:CA15059", "card:CA31898")).toBe(false);
    // These two share the last 32 bits only (found by search), the half the index marks an empty slot with.
    expect(fingerprint("card:CA2539865")[1]).toBe(fingerprint("card:CA2802000")[1]);
    expect(sameFingerprint("card:CA2539865", "card:CA2802000")).toBe(false);
  });

  it("folds every character into both hashes, so keys one hash cannot tell apart still get slots of their own", () => {
    // Each pair leaves one of the two hashes in the same state after its last character (found by search): were the
    // fingerprint made from that hash alone, a million keys would hold ~100 such pairs, each read as "no snapshot".
    for (const [a, b] of [["card:C1064883", "card:C1458800"], ["card:C1518038", "card:C2103204"]] as const) {
      expect(sameFingerprint(a, b)).toBe(false);
      const index = new KeyIndex();
      index.set(a, { segment: 1, offset: 0, length: 10 });
      expect(index.set(b, { segment: 2, offset: 0, length: 20 })).toBeUndefined();
      expect(index.get(a)).toEqual({ segment: 1, offset: 0, length: 10 });
    }
    // A key with any one character changed, the first and the last included, is another key.
    const key = "transaction:7f3a";
    const neighbours = Array.from(key, (_, i) => key.slice(0, i) + String.fromCharCode(key.charCodeAt(i) + 1) + key.slice(i + 1));
    expect(neighbours.filter((other) => sameFingerprint(key, other))).toEqual([]);
  });

  it("holds keys whose fingerprint has a half of 0, which an empty slot is marked with (found by search)", () => {
    // The high 32 bits of the first are 0; the low 32 bits of the second are 0 before the index maps them to 1.
    expect(fingerprint("card:C0557998222")[0]).toBe(0);
    expect(fingerprint("card:C1660957435")[1]).toBe(1);
    for (const key of ["card:C0557998222", "card:C1660957435"]) {
      const index = new KeyIndex();
      expect(index.set(key, { segment: 1, offset: 0, length: 10 })).toBeUndefined();
      expect(index.get(key)).toEqual({ segment: 1, offset: 0, length: 10 });
      expect(index.set(key, { segment: 2, offset: 5, length: 20 })).toEqual({ segment: 1, offset: 0, length: 10 });
      expect(index.size).toBe(1);
    }
    // Also once the table has grown: every key is placed again, that one included.
    const index = new KeyIndex();
    index.set("card:C0557998222", { segment: 1, offset: 0, length: 10 });
    for (let i = 0; i < 1_000; i++) index.set(`card:F${i}`, { segment: 2, offset: i, length: 1 });
    expect(index.bytes).toBe(2048 * 24);
    expect(index.get("card:C0557998222")).toEqual({ segment: 1, offset: 0, length: 10 });
  });

  it("keeps two keys apart that share either half of their fingerprint and their first slot (found by search)", () => {
    // Each pair starts at the same slot of a 1024-slot table: the first shares the low 32 bits, the second the high 32.
    for (const [a, b, shared] of [["card:CA2539865", "card:CA2802000", 1], ["card:CA1320267", "card:CA2140497", 0]] as const) {
      expect(fingerprint(a)[shared]).toBe(fingerprint(b)[shared]);
      const index = new KeyIndex();
      index.set(a, { segment: 1, offset: 0, length: 10 });
      expect(index.set(b, { segment: 2, offset: 0, length: 20 })).toBeUndefined();
      expect(index.size).toBe(2);
      expect(index.get(a)).toEqual({ segment: 1, offset: 0, length: 10 });
      expect(index.get(b)).toEqual({ segment: 2, offset: 0, length: 20 });
    }
  });
});
