/** The access tokens a provider lately answered 401 for, so that none is handed out again. */

/**
 * How many refused (401) access tokens a provider remembers: enough for the few requests in flight when a token is
 * replaced, each of which may answer 401 for the token it carried, in any order.
 */
const MAX_REFUSED = 8;

/**
 * The access tokens the provider last answered 401 for, oldest first: never handed out again, nor kept by a postponed
 * refresh. Several, not one: a late 401 for an older token must not make a newer refusal forgotten, which would hand
 * that refused token to the caller (see {@link MAX_REFUSED}).
 */
export class RefusedTokens {
  private readonly tokens = new Set<string>();

  /** Remembers a 401 for `accessToken` as the newest, dropping the oldest beyond {@link MAX_REFUSED}. */
  add(accessToken: string): void {
    this.tokens.delete(accessToken);
    this.tokens.add(accessToken);
    // Sets iterate in insertion order: the first is the oldest. Older ones are long replaced, not worth remembering.
    for (const oldest of this.tokens) {
      if (this.tokens.size <= MAX_REFUSED) break;
      this.tokens.delete(oldest);
    }
  }

  has(accessToken: string): boolean {
    return this.tokens.has(accessToken);
  }

  /** Forgets a refusal of `accessToken`: issued anew, it is good again. */
  delete(accessToken: string): void {
    this.tokens.delete(accessToken);
  }
}
