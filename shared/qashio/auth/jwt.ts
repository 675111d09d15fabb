/**
 * Reads the `exp` and `iat` claims of a JWT access token without verifying it: the provider verifies its own tokens,
 * the client only needs to know when to refresh ahead of expiry.
 */

/** The times a JWT states, in epoch milliseconds: `exp` (expires) and `iat` (issued). */
export interface JwtTimes {
  readonly expiresAt?: number;
  readonly issuedAt?: number;
}

/**
 * The numeric `exp` and `iat` claims of `token`, in epoch milliseconds; none when the token is not a JWT.
 *
 * @example
 * ```ts
 * const { expiresAt, issuedAt } = jwtTimes(tokenSet.access_token); // e.g. { expiresAt: 1767225600000, issuedAt: 1767224700000 }
 * ```
 */
export function jwtTimes(token: string): JwtTimes {
  const parts = token.split(".");
  if (parts.length !== 3 || !parts[1]) return {};
  let payload: unknown;
  try {
    payload = JSON.parse(Buffer.from(parts[1], "base64url").toString("utf8"));
  } catch {
    return {};
  }
  if (typeof payload !== "object" || payload === null) return {};
  const ms = (claim: unknown) => (typeof claim === "number" && Number.isFinite(claim) ? claim * 1000 : undefined);
  const expiresAt = ms((payload as { exp?: unknown }).exp);
  const issuedAt = ms((payload as { iat?: unknown }).iat);
  return { ...(expiresAt === undefined ? {} : { expiresAt }), ...(issuedAt === undefined ? {} : { issuedAt }) };
}

/**
 * Epoch milliseconds at which `token` expires, from its JWT `exp` claim; undefined when the token is not
 * a JWT or has no numeric `exp`.
 *
 * @example
 * ```ts
 * const expiresAt = jwtExpiry(tokenSet.access_token); // e.g. 1767225600000
 * ```
 */
export function jwtExpiry(token: string): number | undefined {
  return jwtTimes(token).expiresAt;
}
