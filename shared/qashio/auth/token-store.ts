/** Tokens the bridge holds for one tenant. */
export interface StoredTokens {
  readonly accessToken?: string;
  /** Epoch ms when the access token expires (JWT `exp`), when known. */
  readonly accessTokenExpiresAt?: number;
  /** Current single-use refresh token. */
  readonly refreshToken: string;
  readonly scope?: string;
}

/**
 * Durable home of a tenant's tokens. `save` must be durable before it resolves:
 * the rotated refresh token is saved before the new access token is used.
 */
export interface TokenStore {
  load(): Promise<StoredTokens | undefined>;
  save(tokens: StoredTokens): Promise<void>;
  /**
   * Called (under the refresh lease, when there is one) right before a refresh token is spent: throws when `save`
   * could not take the tokens the refresh will give, so the refresh token stays unspent rather than its family lost.
   * `early`: the access token in hand still works (the refresh is ahead of its expiry), so a store with little room
   * left may refuse it sooner; the caller then keeps that token until it expires. A store that can always save leaves
   * it out.
   */
  beforeRefresh?(early: boolean): Promise<void>;
}
