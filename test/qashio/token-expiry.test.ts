/**
 * The refresh skew of one provider's access tokens: `refreshSkewMs`, at most half the lifetime of the token asked
 * about, which is that token's own and never one looked at before it.
 */
import { describe, expect, it } from "vitest";
import { RefreshSkew, storedTokensOf } from "../../shared/qashio/auth/token-expiry.js";
import { jwt } from "./helpers.js";

describe("RefreshSkew", () => {
  it("takes each token's own lifetime: a long-lived token read from the store after a short-lived one gets the full skew", () => {
    const skew = new RefreshSkew(60_000);
    const issued = 1_736_942_400;
    // A 40 s token (another process's, say), then a 15 min one it rotated to: 20 s, then the full minute.
    expect(skew.of(jwt({ iat: issued, exp: issued + 40 }))).toBe(20_000);
    expect(skew.of(jwt({ iat: issued + 30, exp: issued + 30 + 15 * 60 }))).toBe(60_000);
    expect(skew.of(jwt({ iat: issued, exp: issued + 40 }))).toBe(20_000);
  });
});

describe("storedTokensOf", () => {
  it("keeps the scope the token endpoint granted, and adds none when it named none", () => {
    const set = { access_token: "opaque-access", refresh_token: "r1", token_type: "Bearer" };
    expect(storedTokensOf({ ...set, scope: "transactions:read" }, 0).scope).toBe("transactions:read");
    expect("scope" in storedTokensOf(set, 0)).toBe(false);
  });
});
