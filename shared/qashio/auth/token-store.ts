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
   * it out. What it throws is logged by name only, and by the file it names when it is a {@link RefusalNamingFile}.
   */
  beforeRefresh?(early: boolean): Promise<void>;
  /**
   * Whether the store holds no token set now, for a re-save of tokens a failed save left held: such tokens, which
   * replaced the last set stored, are then written into it, but only while the provider still holds the refresh lease
   * they were issued under (so no writer of the store, each taking the lease, stored a newer set meanwhile). For a
   * store that only a person empties (a token file removed by hand), where they are the family's only live tokens. A
   * store where emptiness means something else (a tenant taken off) leaves it out: the held tokens are then not
   * written there.
   */
  isEmpty?(): Promise<boolean>;
}

/**
 * A refusal of `beforeRefresh` naming the file that could not take the tokens (a local store's token file): the warning
 * of a postponed refresh names it too, as the person must free or fix it. A path, never a token.
 */
export interface RefusalNamingFile {
  readonly file: string;
}

/** The file `error` names, when it is a {@link RefusalNamingFile}. */
export function refusedFile(error: unknown): string | undefined {
  const file = error instanceof Error ? (error as Partial<RefusalNamingFile>).file : undefined;
  return typeof file === "string" ? file : undefined;
}
