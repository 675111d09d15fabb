/**
 * Token refreshes of this process between spending the refresh token and saving its successor. The provider's refresh
 * tokens are single use: a process that exits inside that section loses the new one, and the next run presents the
 * spent one, which revokes the whole token family (the customer is signed out). A stop asked for "at once" (a second
 * Ctrl-C) waits for the section to end instead.
 */
class SpendingRefreshes {
  private running = 0;
  private waiters: (() => void)[] = [];

  /**
   * Runs `work` as such a section (the token provider's `spending` option).
   *
   * @example
   * new OAuthTokenProvider({ ...options, spending: (work) => spendingRefreshes.run(work) });
   */
  async run<T>(work: () => Promise<T>): Promise<T> {
    this.running += 1;
    try {
      return await work();
    } finally {
      this.running -= 1;
      if (this.running === 0) for (const done of this.waiters.splice(0)) done();
    }
  }

  /** Whether a section is running now. */
  get busy(): boolean {
    return this.running > 0;
  }

  /** Resolves once no section is running (at once when none is). */
  settled(): Promise<void> {
    return this.running === 0 ? Promise.resolve() : new Promise((resolve) => this.waiters.push(resolve));
  }
}

/** The process's one registry: signals are the process's, and every token provider of a local bridge runs in it. */
export const spendingRefreshes = new SpendingRefreshes();
