/**
 * The seed generator's PRNG helpers keep to what they promise: ranges with both ends, amounts in cents,
 * version-4 UUIDs (§2.1 transaction `id`), codes from their alphabet.
 */
import { describe, expect, it } from "vitest";
import { Prng, round2 } from "../../sandbox/prng.js";

/** Enough draws that every value of a small range, and every character of an alphabet, comes up. */
const DRAWS = 2_000;

function draws<T>(seed: number, draw: (p: Prng) => T): T[] {
  const p = new Prng(seed);
  return Array.from({ length: DRAWS }, () => draw(p));
}

describe("Prng", () => {
  it("draws integers over the whole inclusive range, and nothing outside it", () => {
    expect(new Set(draws(1, (p) => p.int(3, 6)))).toEqual(new Set([3, 4, 5, 6]));
  });

  it("picks every element of an array, and throws on an empty one", () => {
    expect(new Set(draws(2, (p) => p.pick(["a", "b", "c"])))).toEqual(new Set(["a", "b", "c"]));
    expect(() => new Prng(2).pick([])).toThrow(RangeError);
  });

  it("draws amounts in cents within their bounds", () => {
    const amounts = draws(3, (p) => p.money(5, 250));
    for (const amount of amounts) expect([amount, round2(amount) === amount, amount >= 5 && amount <= 250]).toEqual([amount, true, true]);
  });

  it("builds RFC 4122 version-4 UUIDs, every hex digit free but the version and variant", () => {
    const ids = draws(4, (p) => p.uuid());
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    // The third group's last three digits and the variant's two free bits take every value.
    expect(new Set(ids.map((id) => id[15]))).toEqual(new Set([..."0123456789abcdef"]));
    expect(new Set(ids.map((id) => id[19]))).toEqual(new Set([..."89ab"]));
    expect(new Set(ids.map((id) => id[0]))).toEqual(new Set([..."0123456789abcdef"]));
  });

  it("draws codes from every character of its alphabet and digits from 0-9", () => {
    const alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    expect(new Set(draws(5, (p) => p.code(1)))).toEqual(new Set(alphabet));
    expect(new Set(draws(6, (p) => p.digits(1)))).toEqual(new Set("0123456789"));
    expect(new Prng(6).code(12)).toMatch(/^[A-HJ-NP-Z2-9]{12}$/);
  });

  it("rounds half a cent up, as money", () => {
    expect([round2(1.005 + 1e-9), round2(2.344), round2(2.345001)]).toEqual([1.01, 2.34, 2.35]);
  });

  it("repeats its sequence for the same seed and differs for another", () => {
    expect(draws(7, (p) => p.next())).toEqual(draws(7, (p) => p.next()));
    expect(draws(7, (p) => p.next())).not.toEqual(draws(8, (p) => p.next()));
  });
});
