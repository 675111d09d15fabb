/**
 * The pseudonym cache of `hash` mode: one HMAC per distinct value and policy, and a bounded cache (cleared once it holds
 * 10 000 values), so a long walk over many cardholders cannot grow it without end.
 */
import { describe, expect, it, vi } from "vitest";
import type * as Hash from "../../shared/bridge/hash.js";

const hmacCalls = vi.hoisted(() => ({ count: 0 }));
vi.mock("../../shared/bridge/hash.js", async (original) => {
  const hash = await original<typeof Hash>();
  return {
    ...hash,
    hmacSha256Hex: (key: string, text: string): string => {
      hmacCalls.count += 1;
      return hash.hmacSha256Hex(key, text);
    },
  };
});

const { applyPii } = await import("../../shared/bridge/pii.js");

/** The HMACs a call of `fn` took. */
function hmacsOf(fn: () => void): number {
  const before = hmacCalls.count;
  fn();
  return hmacCalls.count - before;
}

describe("hash mode's pseudonym cache", () => {
  it("hashes a value once per policy, and again only after the cache filled up and was cleared", () => {
    const policy = { mode: "hash" as const, salt: "cache-salt-0123456789" };
    const name = (i: number) => ({ card_holder_name: `Person ${i}` });
    const first = applyPii(name(0), policy).card_holder_name;
    expect(hmacsOf(() => applyPii(name(0), policy))).toBe(0);
    // Another policy object (another tenant, or the same salt read again) keeps a cache of its own.
    expect(hmacsOf(() => applyPii(name(0), { ...policy }))).toBe(1);
    expect(hmacsOf(() => {
      for (let i = 1; i < 10_000; i += 1) applyPii(name(i), policy);
    })).toBe(9_999);
    // 10 000 values held: still cached.
    expect(hmacsOf(() => applyPii(name(0), policy))).toBe(0);
    // The 10 001st clears the cache first: the first value is hashed again, to the same pseudonym.
    expect(hmacsOf(() => applyPii(name(10_000), policy))).toBe(1);
    let again: unknown;
    expect(hmacsOf(() => (again = applyPii(name(0), policy).card_holder_name))).toBe(1);
    expect(again).toBe(first);
  });
});
