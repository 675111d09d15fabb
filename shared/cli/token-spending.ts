/**
 * Token refreshes of this process between spending the refresh token and saving its successor, and tokens a failed
 * save left held in memory. The provider's refresh tokens are single use: a process that exits inside that section,
 * or while holding tokens it could not save, loses the new refresh token, and the next run presents the spent one,
 * which revokes the whole token family (the customer is signed out). A stop asked for "at once" (a second Ctrl-C)
 * waits for the section to end, and tries once more to save held tokens, instead.
 */

/** A token provider that may hold tokens its store failed to save (OAuthTokenProvider). */
export interface TokenHolder {
  readonly holdsUnsavedTokens: boolean;
  /** Why the last try could not save them (a lease file it could not read, say), while they are held. */
  readonly heldTokensFailure: unknown;
  /** One more try; resolves true once none are held. */
  saveHeldTokens(): Promise<boolean>;
}

/** Tokens still held once a stop settled them: lost with the process. */
export interface LostTokens {
  /** The token file they belong in. */
  readonly file: string;
  /** Why they could not be saved (see TokenHolder.heldTokensFailure). */
  readonly failure: unknown;
}

class SpendingRefreshes {
  private running = 0;
  /** Sections begun so far: one may begin and end within a try, leaving tokens held that the try did not see. */
  private begun = 0;
  private waiters: (() => void)[] = [];
  /** Each holder with the token file its tokens belong in (for the message when they are lost). */
  private readonly holders = new Map<TokenHolder, string>();

  /**
   * Runs `work` as such a section (the token provider's `spending` option).
   *
   * @example
   * new OAuthTokenProvider({ ...options, spending: (work) => spendingRefreshes.run(work) });
   */
  async run<T>(work: () => Promise<T>): Promise<T> {
    this.running += 1;
    this.begun += 1;
    try {
      return await work();
    } finally {
      this.running -= 1;
      if (this.running === 0) for (const done of this.waiters.splice(0)) done();
    }
  }

  /**
   * Watches `holder`, whose tokens belong in `file`, for tokens held after a failed save, until the returned function
   * is called (when its bridge is done with it, having saved them or said they are lost).
   *
   * @example
   * const untrack = spendingRefreshes.track(tokenProvider, tokens.file);
   */
  track(holder: TokenHolder, file: string): () => void {
    this.holders.set(holder, file);
    return () => this.holders.delete(holder);
  }

  /** Whether a section is running now, or some tokens are held unsaved. */
  get busy(): boolean {
    return this.running > 0 || this.holding().length > 0;
  }

  /** The token files whose tokens a tracked provider holds unsaved now, after a failed save (none while none are). */
  get unsavedFiles(): string[] {
    return this.holding().map(([, file]) => file);
  }

  /**
   * Resolves once no section is running (at once when none is) and held tokens had one more try to be saved, with the
   * token files of those still held (lost once the process exits) and why their last try failed. A section that
   * began during the tries (another bridge's refresh), running still or ended, is waited for too, and what it left held
   * tried again.
   */
  async settled(): Promise<LostTokens[]> {
    for (;;) {
      if (this.running > 0) await new Promise<void>((resolve) => this.waiters.push(resolve));
      const begun = this.begun;
      // With their files read now: a bridge settling its own tokens at the same time may untrack one during the try.
      const holding = this.holding();
      const saved = await Promise.all(holding.map(([holder]) => holder.saveHeldTokens()));
      if (this.running === 0 && this.begun === begun) return holding.filter((_, i) => !saved[i]).map(([holder, file]) => ({ file, failure: holder.heldTokensFailure }));
    }
  }

  private holding(): [TokenHolder, string][] {
    return [...this.holders].filter(([holder]) => holder.holdsUnsavedTokens);
  }
}

/** The process's one registry: signals are the process's, and every token provider of a local bridge runs in it. */
export const spendingRefreshes = new SpendingRefreshes();
