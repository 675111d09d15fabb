/** A token provider handing out fixed tokens, for tests and one-off scripts. */
import type { TokenProvider } from "./token-provider.js";

/**
 * Hands out fixed tokens: the first until a 401, then the next one of the list (the last one repeats).
 * For tests and one-off scripts.
 *
 * @example
 * ```ts
 * const client = new QashioClient({ baseUrl, tokenProvider: new StaticTokenProvider("token-1") });
 * ```
 */
export class StaticTokenProvider implements TokenProvider {
  private readonly tokens: readonly string[];
  private index = 0;
  /** How many times `refreshAfterUnauthorized` was called. */
  refreshCount = 0;

  constructor(tokens: string | readonly string[]) {
    this.tokens = typeof tokens === "string" ? [tokens] : tokens;
    if (this.tokens.length === 0) throw new TypeError("StaticTokenProvider needs at least one token");
  }

  async getAccessToken(): Promise<string> {
    return this.tokens[this.index] as string;
  }

  async refreshAfterUnauthorized(_rejected: string): Promise<string> {
    this.refreshCount += 1;
    this.index = Math.min(this.index + 1, this.tokens.length - 1);
    return this.tokens[this.index] as string;
  }
}
