/**
 * The sandbox's grants in a long-running demo: a refresh every access token lifetime for as long as the demo is left
 * running must not keep a record of every refresh token ever issued, nor of every authorization code.
 */
import { describe, expect, it } from "vitest";
import { ACCESS_TOKEN_TTL_SECONDS, AUTHORIZATION_CODE_TTL_SECONDS, REFRESH_TOKEN_TTL_SECONDS, SANDBOX_CLIENT } from "../../sandbox/index.js";
import { SandboxClock } from "../../sandbox/clock.js";
import { OAuthServer } from "../../sandbox/oauth.js";

const REDIRECT = "http://127.0.0.1:9/callback";
const { clientId, clientSecret } = SANDBOX_CLIENT;

describe("the sandbox's OAuth records over a long demo", () => {
  it("hold refresh tokens of the last refresh token lifetime only, however many refreshes ran", () => {
    const clock = new SandboxClock(Date.UTC(2025, 0, 1), false);
    const oauth = new OAuthServer(clock);
    const code = oauth.issueCode({ clientId, redirectUri: REDIRECT, companyId: "c1" });
    let tokens = oauth.exchangeCode({ clientId, clientSecret, code, redirectUri: REDIRECT });
    // 90 days of a bridge refreshing once per access token lifetime: 8640 refreshes.
    const refreshes = (90 * 86_400) / ACCESS_TOKEN_TTL_SECONDS;
    for (let i = 0; i < refreshes; i++) {
      clock.advance(ACCESS_TOKEN_TTL_SECONDS);
      tokens = oauth.refresh({ clientId, clientSecret, refreshToken: tokens.refresh_token });
    }
    expect(oauth.held.refreshTokens).toBeLessThanOrEqual(REFRESH_TOKEN_TTL_SECONDS / ACCESS_TOKEN_TTL_SECONDS + 2);
    // The family is still live: the last token refreshes, and one spent within its lifetime still revokes on reuse.
    const last = tokens.refresh_token;
    const next = oauth.refresh({ clientId, clientSecret, refreshToken: last });
    expect(() => oauth.refresh({ clientId, clientSecret, refreshToken: last })).toThrow(/already used/);
    expect(() => oauth.refresh({ clientId, clientSecret, refreshToken: next.refresh_token })).toThrow(/revoked/);
  });

  it("hold authorization codes of the last code lifetime only", () => {
    const clock = new SandboxClock(Date.UTC(2025, 0, 1), false);
    const oauth = new OAuthServer(clock);
    for (let i = 0; i < 5_000; i++) {
      clock.advance(60);
      oauth.issueCode({ clientId, redirectUri: REDIRECT, companyId: "c1" });
    }
    expect(oauth.held.codes).toBeLessThanOrEqual(AUTHORIZATION_CODE_TTL_SECONDS / 60 + 2);
  });
});
