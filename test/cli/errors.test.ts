/** The CLI's errors: the exit code each maps to, and the words of those that wrap another failure. */
import { describe, expect, it } from "vitest";
import {
  AuthorizeAgainError,
  ConfigError,
  CycleFailedError,
  CycleIncompleteError,
  EXIT,
  EnvFileError,
  FailureThenError,
  TokenFileError,
  TokensLostError,
  UsageError,
  retriedNextCycle,
} from "../../shared/cli/errors.js";
import { LeaseUnreadableError } from "../../shared/local/errors.js";

describe("FailureThenError", () => {
  it("keeps the exit code of the CLI error it ends with, and says what became of the held tokens last", () => {
    const error = new FailureThenError(new AuthorizeAgainError("the provider revoked this integration's token family"), "the held tokens are saved now");
    expect(error.exitCode).toBe(EXIT.reauthorize);
    expect(error.message).toBe("the provider revoked this integration's token family; the held tokens are saved now");
  });

  it("exits 1 after a failure no CLI error describes, naming it as unexpected", () => {
    const error = new FailureThenError(new RangeError("bad offset"), "the held tokens are saved now");
    expect(error.exitCode).toBe(EXIT.failed);
    expect(error.message).toBe("unexpected RangeError: bad offset; the held tokens are saved now");
  });
});

describe("retriedNextCycle (whether a loop waits for its next cycle or stops)", () => {
  it("retries only a cycle that could not finish for now (exit 1)", () => {
    expect(retriedNextCycle(new CycleFailedError("provider unreachable"))).toBe(true);
  });

  it.each([
    ["bad settings (exit 2)", new ConfigError([{ setting: "BRIDGE_STATE_DIR", problem: "gone" }])],
    ["bad arguments (exit 2)", new UsageError("unknown flag")],
    ["a revoked token family (exit 3)", new AuthorizeAgainError("sign in again")],
    ["a cycle cut short (exit 4)", new CycleIncompleteError("stopped at its budget")],
    ["an unexpected error", new TypeError("boom")],
  ])("stops on %s, which every cycle would meet alike", (_, error) => {
    expect(retriedNextCycle(error)).toBe(false);
  });
});

describe("TokensLostError", () => {
  it("says what had ended the command before, after what to do", () => {
    const error = new TokensLostError("/state/tokens.json", { cause: new Error("the cycle failed: provider unreachable") });
    expect(error.exitCode).toBe(EXIT.reauthorize);
    expect(error.message).toMatch(/run `npm run bridge -- authorize`; before that: the cycle failed: provider unreachable$/);
  });

  it("names the unreadable token refresh lease as what must be so again before authorizing, not the state directory taking writes", () => {
    const failure = new LeaseUnreadableError("/state/locks/token-refresh.lock", "EMFILE");
    const { message } = new TokensLostError("/state/tokens.json", { failure });
    expect(message).toContain("once the token refresh lease can be read again (the lease file /state/locks/token-refresh.lock could not be read (EMFILE)), run `npm run bridge -- authorize`");
    expect(message).not.toContain("takes writes again");
  });
});

describe("the words of settings and file errors", () => {
  it("heads bad settings as the environment's or .env's unless told otherwise, one line per setting, exit 2", () => {
    const error = new ConfigError([
      { setting: "BRIDGE_TENANT", problem: "missing" },
      { setting: "BRIDGE_STATE_DIR", problem: "not a directory" },
    ]);
    expect(error.exitCode).toBe(EXIT.usage);
    expect(error.message).toBe("Invalid settings (environment or .env):\n  - BRIDGE_TENANT: missing\n  - BRIDGE_STATE_DIR: not a directory");
  });

  it("says to fix or remove a settings file it cannot read, unless a better remedy is known, exit 2", () => {
    expect(new EnvFileError("/app/.env", "EISDIR")).toMatchObject({ exitCode: EXIT.usage, message: "cannot read the settings file /app/.env (EISDIR): fix or remove it" });
  });

  it("says authorize stores a new token set over an unusable token file, and only what to do where signing in again starts anew", () => {
    expect(new TokenFileError("/state/tokens.json", "not JSON")).toMatchObject({
      exitCode: EXIT.reauthorize,
      message: "cannot use the token file /state/tokens.json (not JSON): run `npm run bridge -- authorize` to store a new token set",
    });
    const demo = new TokenFileError("/demo/tokens.json", "not JSON", { signInAgain: { words: "start a new demo", sameState: false } });
    expect(demo.message).toBe("cannot use the token file /demo/tokens.json (not JSON): start a new demo");
  });
});
