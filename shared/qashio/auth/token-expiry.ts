/**
 * When an access token expires and how early it is refreshed: the stored form of a token set, its expiry on this
 * host's clock, and the refresh skew, at most half the token's lifetime.
 */
import { jwtTimes } from "./jwt.js";
import type { StoredTokens } from "./token-store.js";
import type { TokenSet } from "../schemas/index.js";

export const DEFAULT_REFRESH_SKEW_MS = 60_000;

/**
 * Stored form of a token set, `now` being when it was received. The expiry is on this host's clock: the access
 * token's JWT lifetime (`exp` - `iat`) counted from `now`, since `exp` alone is on the provider's clock and a skew
 * between the two would make a fresh token look expired (a refresh before every call, each one a new secret version
 * on AWS) or an expired one fresh; failing `iat`, `expires_in` (not in the spec, read when sent) counted from `now`,
 * on this host's clock too; failing that, the JWT `exp` unless it is already past; failing all, unknown (used until a
 * 401).
 */
export function storedTokensOf(set: TokenSet, now: number): StoredTokens {
  const { expiresAt } = jwtTimes(set.access_token);
  const lifetime = jwtLifetime(set.access_token);
  const fromLifetime = lifetime === undefined ? undefined : now + lifetime;
  const fromExp = expiresAt !== undefined && expiresAt > now ? expiresAt : undefined;
  const fromExpiresIn = typeof set.expires_in === "number" && set.expires_in > 0 ? now + set.expires_in * 1000 : undefined;
  return {
    accessToken: set.access_token,
    accessTokenExpiresAt: validTime(fromLifetime) ?? validTime(fromExpiresIn) ?? validTime(fromExp),
    refreshToken: set.refresh_token,
    ...(set.scope ? { scope: set.scope } : {}),
  };
}

/** An access token's JWT lifetime (`exp` - `iat`), when it is a JWT that carries both. */
function jwtLifetime(accessToken: string): number | undefined {
  const { expiresAt, issuedAt } = jwtTimes(accessToken);
  return expiresAt !== undefined && issuedAt !== undefined && expiresAt > issuedAt ? expiresAt - issuedAt : undefined;
}

/** The last time a Date can hold (+275760-09-13), in epoch ms: a safe integer, as DynamoDB's marshaller requires. */
const LATEST_TIME_MS = 8.64e15;

/**
 * `ms` when it is a time a Date can hold, else undefined (the expiry is then unknown: the token is used until a 401).
 * A far-future `exp` (one in microseconds, say) or `expires_in` once made an expiry past Number.MAX_SAFE_INTEGER,
 * which the DynamoDB store cannot write: every save failed, and each cold start spent a refresh token for nothing.
 */
function validTime(ms: number | undefined): number | undefined {
  return ms !== undefined && ms <= LATEST_TIME_MS ? ms : undefined;
}

/** The refresh skew of the access tokens one provider looks at, remembering the lifetime of the last one. */
export class RefreshSkew {
  /** Lifetime of the access token last looked at, for {@link RefreshSkew.of}: received here, or its JWT's `exp` - `iat`. */
  private lifetime?: { readonly accessToken: string; readonly ms: number | undefined };

  private readonly skewMs: number;

  /** @param skewMs `refreshSkewMs`: how long before its expiry a token is refreshed, when its lifetime allows. */
  constructor(skewMs: number | undefined) {
    this.skewMs = skewMs ?? DEFAULT_REFRESH_SKEW_MS;
  }

  /**
   * How long before its expiry `accessToken` is refreshed: `refreshSkewMs`, but at most half the token's lifetime, so
   * a provider issuing tokens of a minute or less (the spec shows no lifetime, §5 rule 11) does not get a refresh,
   * and a rotated refresh token, before every call.
   */
  of(accessToken: string): number {
    const skew = this.skewMs;
    if (this.lifetime?.accessToken !== accessToken) this.lifetime = { accessToken, ms: jwtLifetime(accessToken) };
    const lifetime = this.lifetime.ms;
    return lifetime === undefined ? skew : Math.min(skew, lifetime / 2);
  }

  /** Records the lifetime of tokens just received at `now` (it holds for opaque tokens too, from `expires_in`). */
  received(tokens: StoredTokens, now: number): StoredTokens {
    if (tokens.accessToken !== undefined && tokens.accessTokenExpiresAt !== undefined) {
      this.lifetime = { accessToken: tokens.accessToken, ms: tokens.accessTokenExpiresAt - now };
    }
    return tokens;
  }
}
