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
}
