/**
 * Reads the `exp` claim of a JWT access token without verifying it: the provider verifies its own tokens,
 * the client only needs to know when to refresh ahead of expiry.
 */

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
  const parts = token.split(".");
  if (parts.length !== 3 || !parts[1]) return undefined;
  try {
    const payload = JSON.parse(Buffer.from(parts[1], "base64url").toString("utf8")) as unknown;
    if (typeof payload !== "object" || payload === null) return undefined;
    const exp = (payload as { exp?: unknown }).exp;
    return typeof exp === "number" && Number.isFinite(exp) ? exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}
