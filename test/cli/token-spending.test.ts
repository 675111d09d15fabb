import { describe, expect, it } from "vitest";
import { TokensLostError } from "../../shared/cli/errors.js";
import { spendingRefreshes } from "../../shared/cli/token-spending.js";
import { LeaseUnreadableError } from "../../shared/local/errors.js";

describe("spendingRefreshes", () => {
  it("is busy while a section runs and settles once the last one ends, failed or not", async () => {
    expect(spendingRefreshes.busy).toBe(false);
    let finishFirst!: () => void;
    let failSecond!: (error: Error) => void;
    const first = spendingRefreshes.run(() => new Promise<string>((resolve) => (finishFirst = () => resolve("saved"))));
    const second = spendingRefreshes.run(() => new Promise<string>((_, reject) => (failSecond = reject)));
    expect(spendingRefreshes.busy).toBe(true);
    let settled = false;
    const waited = spendingRefreshes.settled().then(() => (settled = true));

    finishFirst();
    expect(await first).toBe("saved");
    // Every pending callback has had its turn: the second section still runs, so nothing settled.
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    failSecond(new Error("save failed"));
    await expect(second).rejects.toThrow("save failed");
    await waited;
    expect(settled).toBe(true);
    expect(spendingRefreshes.busy).toBe(false);
    // Nothing running: settled at once.
    await spendingRefreshes.settled();
  });

  it("is busy while a single section runs", async () => {
    let finish!: () => void;
    const section = spendingRefreshes.run(() => new Promise<void>((resolve) => (finish = resolve)));
    try {
      expect(spendingRefreshes.busy).toBe(true);
    } finally {
      // The registry is the process's: a section left running would keep the next tests busy.
      finish();
      await section;
    }
    expect(spendingRefreshes.busy).toBe(false);
  });
});

describe("spendingRefreshes with tokens held after a failed save", () => {
  /** A token provider stand-in whose next saves fail `failures` times. */
  function holder(failures: number) {
    return {
      held: true,
      tries: 0,
      failure: new Error("disk full") as unknown,
      get holdsUnsavedTokens() {
        return this.held;
      },
      get heldTokensFailure() {
        return this.held ? this.failure : undefined;
      },
      async saveHeldTokens() {
        this.tries += 1;
        if (this.tries > failures) this.held = false;
        return !this.held;
      },
    };
  }

  it("is busy while a tracked provider holds tokens, and settling tries once more to save them", async () => {
    const saves = holder(0);
    const untrack = spendingRefreshes.track(saves, "/state/tokens.json");
    try {
      expect(spendingRefreshes.busy).toBe(true);
      expect(await spendingRefreshes.settled()).toEqual([]);
      expect(saves.tries).toBe(1);
      expect(spendingRefreshes.busy).toBe(false);
    } finally {
      untrack();
    }
  });

  it("waits for a refresh another bridge started while held tokens were being saved, before calling the process settled", async () => {
    const saves = holder(0);
    let finishRefresh!: () => void;
    let refreshing: Promise<void> | undefined;
    const save = saves.saveHeldTokens.bind(saves);
    saves.saveHeldTokens = async () => {
      // Another bridge of the process spends its refresh token meanwhile: exiting before it saved the successor loses it.
      refreshing = spendingRefreshes.run(() => new Promise<void>((resolve) => (finishRefresh = resolve)));
      return save();
    };
    const untrack = spendingRefreshes.track(saves, "/state/tokens.json");
    try {
      let settled = false;
      const waited = spendingRefreshes.settled().then(() => (settled = true));
      await new Promise((resolve) => setImmediate(resolve));
      expect(settled, "settled while a refresh section still runs").toBe(false);
      finishRefresh();
      await refreshing;
      await waited;
      expect(spendingRefreshes.busy).toBe(false);
    } finally {
      // The registry is the process's: a section left running would keep the next tests busy.
      finishRefresh();
      await refreshing;
      untrack();
    }
  });

  it("tries the tokens a refresh left held when it started and ended during the last tries, before calling the process settled", async () => {
    const saves = holder(0);
    // Another bridge's provider: holds nothing until its refresh, run while the first one's tokens are tried, fails to save.
    const other = holder(1);
    other.held = false;
    const save = saves.saveHeldTokens.bind(saves);
    saves.saveHeldTokens = async () => {
      await spendingRefreshes.run(async () => {
        other.held = true;
      });
      return save();
    };
    const untrackSaves = spendingRefreshes.track(saves, "/state/tokens.json");
    const untrackOther = spendingRefreshes.track(other, "/state/other-tokens.json");
    try {
      const lost = await spendingRefreshes.settled();
      expect(other.tries, "the tokens the refresh left held had no try").toBe(1);
      expect(lost).toEqual([{ file: "/state/other-tokens.json", failure: other.failure }]);
    } finally {
      untrackSaves();
      untrackOther();
    }
  });

  it("tries held tokens once, after the last running section ended, not each time one of several ends", async () => {
    const stuck = holder(Number.POSITIVE_INFINITY);
    let endFirst!: () => void;
    let endSecond!: () => void;
    const first = spendingRefreshes.run(() => new Promise<void>((resolve) => (endFirst = resolve)));
    const second = spendingRefreshes.run(() => new Promise<void>((resolve) => (endSecond = resolve)));
    const untrack = spendingRefreshes.track(stuck, "/state/tokens.json");
    try {
      const lost = spendingRefreshes.settled();
      endFirst();
      await first;
      await new Promise((resolve) => setImmediate(resolve));
      expect(stuck.tries, "tried while a refresh section still ran").toBe(0);
      endSecond();
      await second;
      expect(await lost).toEqual([{ file: "/state/tokens.json", failure: stuck.failure }]);
      expect(stuck.tries).toBe(1);
    } finally {
      // The registry is the process's: a section left running would keep the next tests busy.
      endFirst();
      endSecond();
      await Promise.all([first, second]);
      untrack();
    }
  });

  it("waits on for a section that began as the last one ended, before its settling continued", async () => {
    const stuck = holder(Number.POSITIVE_INFINITY);
    let endFirst!: () => void;
    let endNext: (() => void) | undefined;
    let next: Promise<void> | undefined;
    const first = spendingRefreshes.run(() => new Promise<void>((resolve) => (endFirst = resolve)));
    const untrack = spendingRefreshes.track(stuck, "/state/tokens.json");
    try {
      let settled = false;
      const waited = spendingRefreshes.settled().then(() => (settled = true));
      endFirst();
      // Another bridge's refresh begins in the microtask after the first section's end woke the wait.
      queueMicrotask(() => (next = spendingRefreshes.run(() => new Promise<void>((resolve) => (endNext = resolve)))));
      await first;
      await new Promise((resolve) => setImmediate(resolve));
      expect(next, "the next section did not begin").toBeDefined();
      expect(settled, "settled while a refresh section still runs").toBe(false);
      endNext?.();
      await next;
      await waited;
    } finally {
      endNext?.();
      await next;
      untrack();
    }
  });

  it("leaves alone a tracked provider that holds no tokens: settling does not try it", async () => {
    // Its saveHeldTokens would wait for a refresh it has in flight (perhaps still waiting for the lease): a stop asked
    // for at once must not.
    const idle = holder(0);
    idle.held = false;
    const untrack = spendingRefreshes.track(idle, "/state/other/tokens.json");
    try {
      expect(spendingRefreshes.busy).toBe(false);
      expect(spendingRefreshes.unsavedFiles).toEqual([]);
      expect(await spendingRefreshes.settled()).toEqual([]);
      expect(idle.tries).toBe(0);
    } finally {
      untrack();
    }
  });

  it("names the token file of tokens still held after that try (lost on exit), and forgets a provider once untracked", async () => {
    const stuck = holder(Number.POSITIVE_INFINITY);
    const untrack = spendingRefreshes.track(stuck, "/state/tokens.json");
    expect(await spendingRefreshes.settled()).toEqual([{ file: "/state/tokens.json", failure: stuck.failure }]);
    expect(spendingRefreshes.busy).toBe(true);
    expect(spendingRefreshes.unsavedFiles).toEqual(["/state/tokens.json"]);
    untrack();
    expect(spendingRefreshes.busy).toBe(false);
    expect(await spendingRefreshes.settled()).toEqual([]);
    expect(stuck.tries).toBe(1);
  });

  it("still names the token file when the provider's bridge gives up on the tokens (untracks them) during that try", async () => {
    const stuck = holder(Number.POSITIVE_INFINITY);
    const untrack = spendingRefreshes.track(stuck, "/state/tokens.json");
    // As settleTokens does after its last failed try, which the signal's try shares.
    const save = stuck.saveHeldTokens.bind(stuck);
    stuck.saveHeldTokens = async () => {
      const saved = await save();
      untrack();
      return saved;
    };
    expect(await spendingRefreshes.settled()).toEqual([{ file: "/state/tokens.json", failure: stuck.failure }]);
    expect(spendingRefreshes.busy).toBe(false);
  });

  it("says why tokens still held could not be saved (a lease file it could not read), for the words of their loss", async () => {
    const stuck = holder(Number.POSITIVE_INFINITY);
    stuck.failure = new LeaseUnreadableError("/state/locks/token-refresh.lock", "EMFILE");
    const untrack = spendingRefreshes.track(stuck, "/state/tokens.json");
    try {
      const [lost] = await spendingRefreshes.settled();
      expect(new TokensLostError(lost!.file, { failure: lost!.failure }).message).toContain(
        "once the token refresh lease can be read again (the lease file /state/locks/token-refresh.lock could not be read (EMFILE))",
      );
    } finally {
      untrack();
    }
  });

  it("names the token file and what must be so first only for a sign-in over the same state, whatever its words", () => {
    const failure = new LeaseUnreadableError("/state/locks/token-refresh.lock", "EMFILE");
    const inPlace = new TokensLostError("/state/tokens.json", { failure, signInAgain: { words: "ask ops to authorize", sameState: true } }).message;
    expect(inPlace).toMatch(/^the provider's new refresh token could not be saved to \/state\/tokens\.json .*once the token refresh lease can be read again .*, ask ops to authorize$/);
    const anew = new TokensLostError("/state/tokens.json", { failure, signInAgain: { words: "start over", sameState: false } }).message;
    expect(anew).toBe("the provider's new refresh token could not be saved and is lost with this process; the one it replaced is spent: start over");
  });
});
