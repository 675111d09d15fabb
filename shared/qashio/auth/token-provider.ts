/**
 * Bearer tokens for the API: the `TokenProvider` interface the client takes them through. The static provider (for
 * tests) and the OAuth one (rotation saved before use, JWT expiry, single flight, optional cross-process lock) live
 * in their own modules and are exported from here too, under the names importers use.
 */
export { isInvalidClient, isRejectedGrant, reauthorizationRequired, reloadAfterRefusal } from "./grant-refusal.js";
export { DEFAULT_REFRESH_SKEW_MS, storedTokensOf } from "./token-expiry.js";
export {
  DEFAULT_LOCK_NAME,
  DEFAULT_LOCK_POLL_MS,
  DEFAULT_LOCK_TTL_MS,
  DEFAULT_LOCK_WAIT_MS,
  TOKEN_SAVE_MESSAGES,
  refreshDeadline,
  type RefreshLock,
  type RefreshLockHandle,
} from "./refresh-lease.js";
export { StaticTokenProvider } from "./static-token-provider.js";
export { OAuthTokenProvider } from "./oauth-token-provider.js";
export type { OAuthTokenProviderOptions, TokenEvent } from "./oauth-token-provider-options.js";

/** What the call asking for a token is held to. */
export interface TokenRequestOptions {
  /**
   * Epoch ms the call must end by. A refresh it would need is started only when its whole lease (the refresh, then
   * the save of the new refresh token) ends by then: one cut off by the end of the process (a Lambda timeout) between
   * the two leaves the spent refresh token stored, and the next refresh presenting it revokes the family.
   */
  readonly deadline?: number;
  /**
   * How long the request carrying the token may take (its attempt's timeout). When no refresh can start before
   * `deadline`, an access token only due for its early refresh (within `refreshSkewMs`) is handed out if it stays
   * valid that long from now (without this, until `deadline`): a token that could expire mid-call is refused as before.
   */
  readonly requestTimeoutMs?: number;
}

/** Source of bearer tokens for the API. */
export interface TokenProvider {
  /** A currently valid access token (refreshing ahead of expiry when needed). */
  getAccessToken(options?: TokenRequestOptions): Promise<string>;
  /** Called once after a 401 answered `rejected`; returns a token to replay the request with. */
  refreshAfterUnauthorized(rejected: string, options?: TokenRequestOptions): Promise<string>;
}
