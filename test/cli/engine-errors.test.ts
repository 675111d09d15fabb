import { chown, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CycleAbortedError, PUBLISH_STEP, ReauthorizationNeededError } from "../../shared/bridge/errors.js";
import { emptyReport } from "../../shared/bridge/report.js";
import { CorruptStateError, HardLinksUnsupportedError, LeaseUnreadableError, TokenFileUnwritableError } from "../../shared/local/errors.js";
import { cliErrorOf, leaseUnreadableProblem, noHardLinksProblem, stateErrorOf, systemErrorCode } from "../../shared/cli/engine-errors.js";
import { AUTHORIZE_AGAIN, AuthorizeAgainError, ClientCredentialsRejectedError, ConfigError, CycleFailedError, EXIT } from "../../shared/cli/errors.js";
import type { LocalBridge, LocalState } from "../../shared/cli/local-bridge.js";
import { spendingRefreshes } from "../../shared/cli/token-spending.js";
import { NetworkError, ReauthorizationRequiredError } from "../../shared/qashio/errors.js";

/**
 * The members of a local bridge `cliErrorOf` reads for a refused refresh; `usesSeed` may be a promise (one that
 * rejects: the token file could not be read), `seedIgnoredHint` what the token adapter says of an unread seed.
 */
function bridgeWith(usesSeed: boolean | Promise<boolean>, { seedIgnoredHint = "", eventsFile }: { seedIgnoredHint?: string; eventsFile?: string } = {}): LocalBridge {
  const tokens = { usesSeed: () => Promise.resolve(usesSeed), seedIgnoredHint };
  return { settings: { stateDir: "/state", eventsFile }, baseUrl: "https://provider.example", tokens, signInAgain: AUTHORIZE_AGAIN } as unknown as LocalBridge;
}

/** The engine's error for a refresh the token endpoint answered `status` with these OAuth codes. */
function refusedRefresh(status: number, codes: string[]): ReauthorizationNeededError {
  const errors = codes.map((code) => ({ field: null, code, message: "" }));
  const refusal = new ReauthorizationRequiredError("refused", { status, errors, method: "POST", path: "/oauth2/token" });
  return new ReauthorizationNeededError("revoked", { report: emptyReport("transactions") }, { cause: refusal });
}

describe("cliErrorOf: a refused refresh", () => {
  it.each([
    [false, "the provider refused this integration's refresh token or QASHIO_CLIENT_ID / QASHIO_CLIENT_SECRET"],
    [true, "the provider refused QASHIO_REFRESH_TOKEN or QASHIO_CLIENT_ID / QASHIO_CLIENT_SECRET"],
  ])("names the client settings too for a 401 without an error code, which §4.2 gives both (seed: %s), exit 3", async (usesSeed, start) => {
    const error = await cliErrorOf(refusedRefresh(401, []), bridgeWith(usesSeed));
    expect(error).toBeInstanceOf(AuthorizeAgainError);
    expect(error.exitCode).toBe(EXIT.reauthorize);
    expect(error.message).toContain(start);
    expect(error.message).toContain("check both first (authorizing again with wrong ones fails too)");
  });

  it.each([
    [401, ["invalid_grant"]],
    [400, ["invalid_grant"]],
  ])("blames only the token family when the provider named the grant (%i %j)", async (status, codes) => {
    const error = await cliErrorOf(refusedRefresh(status, codes), bridgeWith(false));
    expect(error.message).toMatch(/^the provider revoked this integration's token family: run `npm run bridge -- authorize`/);
    expect(error.message).not.toContain("QASHIO_CLIENT_SECRET");
  });

  it("words a 401 without an error code for stored tokens in full: check both first, else sign in again, then an unread seed's hint", async () => {
    const error = await cliErrorOf(refusedRefresh(401, []), bridgeWith(false, { seedIgnoredHint: "; QASHIO_REFRESH_TOKEN is not read" }));
    expect(error.message).toBe(
      "the provider refused this integration's refresh token or QASHIO_CLIENT_ID / QASHIO_CLIENT_SECRET (a 401 without an error code answers both): " +
        "if either changed, check both first (authorizing again with wrong ones fails too); else run `npm run bridge -- authorize` to sign in again; " +
        "QASHIO_REFRESH_TOKEN is not read",
    );
  });
});

describe("cliErrorOf: a provider call that got no answer", () => {
  /** The engine's error for a cycle whose token refresh failed before a response, for `reason`. */
  function unanswered(reason: string): CycleAbortedError {
    const failure = new NetworkError(`POST /oauth2/token failed before a response (${reason})`, { method: "POST", path: "/oauth2/token", reason });
    return new CycleAbortedError(`transactions cycle stopped: list not_synced transactions failed (${failure.name}: ${failure.message})`, { report: emptyReport("transactions") }, { cause: failure });
  }

  it("names QASHIO_BASE_URL when its host is not found (a mistyped host), exit 1", async () => {
    const error = await cliErrorOf(unanswered("ENOTFOUND"), bridgeWith(false));
    expect(error).toBeInstanceOf(CycleFailedError);
    expect(error.exitCode).toBe(EXIT.failed);
    expect(error.message).toContain("(ENOTFOUND)");
    expect(error.message).toContain("; the host of QASHIO_BASE_URL (https://provider.example) was not found: check the setting, or this machine's name resolution");
  });

  it("names the QASHIO_*_URL a named environment reads, not QASHIO_BASE_URL, for a host not found", async () => {
    const bridge = { ...bridgeWith(false), baseUrl: "https://sandbox.example.test", settings: { stateDir: "/state", baseUrlSetting: "QASHIO_SANDBOX_URL" } } as unknown as LocalBridge;
    const error = await cliErrorOf(unanswered("ENOTFOUND"), bridge);
    expect(error.message).toContain("; the host of QASHIO_SANDBOX_URL (https://sandbox.example.test) was not found");
    expect(error.message).not.toContain("QASHIO_BASE_URL");
  });

  it.each(["ECONNRESET", "ECONNREFUSED", "EAI_AGAIN"])("says nothing of QASHIO_BASE_URL for %s, which a provider or network outage gives too", async (reason) => {
    const error = await cliErrorOf(unanswered(reason), bridgeWith(false));
    expect(error.message).not.toContain("QASHIO_BASE_URL");
  });

  it.each([
    ["http://127.0.0.1:4010", "127.0.0.1:4010", "4010"],
    ["http://localhost:8787/api", "localhost:8787", "8787"],
    ["http://127.0.0.1", "127.0.0.1:80", "80"],
  ])("asks whether the sandbox runs when a loopback QASHIO_BASE_URL (%s) refuses the connection: no provider outage is there", async (baseUrl, address, port) => {
    const error = await cliErrorOf(unanswered("ECONNREFUSED"), { ...bridgeWith(false), baseUrl } as LocalBridge);
    expect(error).toBeInstanceOf(CycleFailedError);
    expect(error.message).toContain(
      `(ECONNREFUSED)); nothing listens on ${address}, where QASHIO_BASE_URL points: is the sandbox running? (npm run sandbox -- --port ${port})`,
    );
  });

  it.each(["[::1]", "127.0.0.2"])("says the sandbox listens on 127.0.0.1 only when QASHIO_BASE_URL names %s, which it never answers on", async (host) => {
    const error = await cliErrorOf(unanswered("ECONNREFUSED"), { ...bridgeWith(false), baseUrl: `http://${host}:4010` } as LocalBridge);
    expect(error.message).toContain(`nothing listens on ${host}:4010, where QASHIO_BASE_URL points: is the sandbox running? (npm run sandbox -- --port 4010; it listens on 127.0.0.1 only)`);
  });

  // This client's transport (node-transport.ts) reports EPROTO both for a plain http port and for a TLS server too old
  // for it (TLS 1.0 only), on Node 20 and 24 alike; fetch reports the former as ERR_SSL_WRONG_VERSION_NUMBER.
  it.each([
    ["EPROTO", "https://127.0.0.1:4010", "127.0.0.1:4010", " (the sandbox serves plain http: http://127.0.0.1:4010)"],
    ["EPROTO", "https://provider.example", "provider.example:443", ""],
    ["ERR_SSL_WRONG_VERSION_NUMBER", "https://localhost:4010", "localhost:4010", " (the sandbox serves plain http: http://localhost:4010)"],
    // The sandbox binds 127.0.0.1 alone: what answered on [::1] is not it.
    ["EPROTO", "https://[::1]:4010", "[::1]:4010", " (the sandbox serves plain http on 127.0.0.1 only: http://127.0.0.1:4010)"],
  ])("says an https QASHIO_BASE_URL got no TLS handshake (%s, %s: a plain http port, or TLS too old), not only the code", async (reason, baseUrl, address, sandbox) => {
    const error = await cliErrorOf(unanswered(reason), { ...bridgeWith(false), baseUrl } as LocalBridge);
    expect(error).toBeInstanceOf(CycleFailedError);
    expect(error.exitCode).toBe(EXIT.failed);
    expect(error.message).toContain(
      `(${reason})); ${address}, where QASHIO_BASE_URL points, completed no TLS handshake: does its port serve https, with TLS 1.2 or later?${sandbox}`,
    );
  });

  it("says nothing of the sandbox for a loopback address that reset the connection, which a running one may do", async () => {
    const error = await cliErrorOf(unanswered("ECONNRESET"), { ...bridgeWith(false), baseUrl: "http://127.0.0.1:4010" } as LocalBridge);
    expect(error.message).not.toContain("sandbox");
  });
});

describe("cliErrorOf: a snapshot segment this user may not read", () => {
  it.runIf(process.getuid?.() === 0)("names the file, its mode and owner and the fix, not a corrupt file to move aside, exit 2", async () => {
    const dir = await mkdtemp(join(tmpdir(), "engine-errors-"));
    try {
      // Written by a run as another user (uid 1001), private to it: the read this process tried was refused.
      const segment = join(dir, "snapshots", "seg-000000000001-0123abcd.log");
      await mkdir(join(dir, "snapshots"));
      await writeFile(segment, "", { mode: 0o600 });
      await chown(segment, 1001, 1001);
      const denied = Object.assign(new Error(`EACCES: permission denied, open '${segment}'`), { code: "EACCES" });
      const bridge = { settings: { stateDir: dir } } as unknown as LocalBridge;
      const error = await cliErrorOf(new CorruptStateError("Snapshot segment header is unreadable", { file: segment }, { cause: denied }), bridge);
      expect(error.exitCode).toBe(EXIT.usage);
      expect(error.message).toContain(`BRIDGE_STATE_DIR: cannot be read by this user (EACCES): ${segment}: this user may not read ${segment} (mode 0600, owned by uid 1001)`);
      expect(error.message).toContain(`run as its owner, or give it to this user (\`sudo chown ${process.getuid?.()} ${segment}\`)`);
      expect(error.message).not.toContain("move it aside");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("cliErrorOf: settings and token words", () => {
  it("takes invalid_client, wherever the engine wrapped it, as the client settings (exit 2), not a revoked family", async () => {
    const refusal = new ReauthorizationRequiredError("refused", { status: 401, errors: [{ field: null, code: "invalid_client", message: "" }], method: "POST", path: "/oauth2/token" });
    const error = await cliErrorOf(new ReauthorizationNeededError("revoked", { report: emptyReport("transactions") }, { cause: refusal }), bridgeWith(false));
    expect(error).toBeInstanceOf(ClientCredentialsRejectedError);
    expect(error.exitCode).toBe(EXIT.usage);
  });

  it("says authorize again (exit 3) for the client's own refusal that no engine wrapped (a token probe before any cycle)", async () => {
    const refusal = new ReauthorizationRequiredError("refused", { status: 400, errors: [{ field: null, code: "invalid_grant", message: "" }], method: "POST", path: "/oauth2/token" });
    const error = await cliErrorOf(refusal, bridgeWith(false));
    expect(error).toBeInstanceOf(AuthorizeAgainError);
    expect(error.message).toMatch(/^the provider revoked this integration's token family/);
  });

  it("words a refused QASHIO_REFRESH_TOKEN seed in full: nothing stored, what to set or run", async () => {
    const error = await cliErrorOf(refusedRefresh(400, ["invalid_grant"]), bridgeWith(true));
    expect(error.exitCode).toBe(EXIT.reauthorize);
    expect(error.message).toBe(
      "the provider rejected QASHIO_REFRESH_TOKEN (spent, revoked or expired); nothing was stored: set it to a fresh refresh token, or run `npm run bridge -- authorize`",
    );
  });

  it("blames the stored token family, with the token adapter's hint of an unread seed, when whether a seed is used cannot be told", async () => {
    const error = await cliErrorOf(refusedRefresh(400, ["invalid_grant"]), bridgeWith(Promise.reject(new Error("unreadable")), { seedIgnoredHint: "; QASHIO_REFRESH_TOKEN is not read" }));
    expect(error.message).toBe("the provider revoked this integration's token family: run `npm run bridge -- authorize` to sign in again; QASHIO_REFRESH_TOKEN is not read");
  });
});

describe("cliErrorOf: a cycle that stopped", () => {
  const aborted = (context: { status?: number; requestId?: string; step?: string }, cause?: unknown) =>
    new CycleAbortedError("transactions cycle stopped: list failed", { report: emptyReport("transactions"), ...context }, { cause });

  it("names the provider's status and request id after the engine's words, exit 1", async () => {
    const error = await cliErrorOf(aborted({ status: 503, requestId: "req-7" }), bridgeWith(false));
    expect(error).toBeInstanceOf(CycleFailedError);
    expect(error.message).toBe("transactions cycle stopped: list failed (status 503, request req-7)");
    expect((await cliErrorOf(aborted({ requestId: "req-7" }), bridgeWith(false))).message).toBe("transactions cycle stopped: list failed (request req-7)");
    expect((await cliErrorOf(aborted({}), bridgeWith(false))).message).toBe("transactions cycle stopped: list failed");
  });

  it.each([
    ["ENOSPC", PUBLISH_STEP, "/events.jsonl", "; the file system of /events.jsonl (BRIDGE_EVENTS_FILE, ENOSPC) is full: make room there, or set BRIDGE_EVENTS_FILE elsewhere; nothing is lost"],
    ["EDQUOT", "store snapshots", "/events.jsonl", "; the file system of /state (BRIDGE_STATE_DIR, EDQUOT) is over its quota: make room there; nothing is lost"],
    ["EROFS", PUBLISH_STEP, undefined, "; the file system of /state (BRIDGE_STATE_DIR, EROFS) is read-only: mount it read-write, or set BRIDGE_EVENTS_FILE elsewhere; nothing is lost"],
  ])("names the file system that took no write (%s at %s), and its setting", async (code, step, eventsFile, hint) => {
    const error = await cliErrorOf(aborted({ step }, Object.assign(new Error(`${code}: refused, write`), { code })), bridgeWith(false, { eventsFile }));
    expect(error.message).toBe(`transactions cycle stopped: list failed${hint}`);
  });

  it("says nothing of a file system for a code that is no system call's", async () => {
    const error = await cliErrorOf(aborted({}, Object.assign(new Error("refused"), { code: "NOSPC" })), bridgeWith(false));
    expect(error.message).toBe("transactions cycle stopped: list failed");
  });
});

describe("cliErrorOf and stateErrorOf: failures of the state directory or of nothing known", () => {
  const state = { settings: { stateDir: "/state" } } as unknown as LocalState;

  it("returns a CLI error the adapters threw, wherever the engine wrapped it, as it is", async () => {
    const own = new ConfigError([{ setting: "BRIDGE_STATE_DIR", problem: "gone" }]);
    const error = await cliErrorOf(new CycleAbortedError("stopped", { report: emptyReport("cards") }, { cause: own }), bridgeWith(false));
    expect(error).toBe(own);
  });

  it("says a token file that took no new token set left the refresh token good, naming its code and the remedy, exit 1", async () => {
    const unwritable = new TokenFileUnwritableError("/state/tokens.json", "ENOSPC");
    const error = await cliErrorOf(new CycleAbortedError("stopped", { report: emptyReport("transactions") }, { cause: unwritable }), bridgeWith(false));
    expect(error.exitCode).toBe(EXIT.failed);
    expect(error.message).toBe(
      "cannot save a new token set to /state/tokens.json now (ENOSPC), so no token refresh was tried and the stored refresh token is still good: " +
        "make room in or fix /state (BRIDGE_STATE_DIR); a `run --interval` loop tries again at its next cycle, any other command when started again",
    );
  });

  it.each([
    ["EIO", "check the file system of /state (BRIDGE_STATE_DIR), then try again"],
    ["ESTALE", "check the file system of /state (BRIDGE_STATE_DIR), then try again"],
    ["ELOOP", "symbolic links on the path of /state (BRIDGE_STATE_DIR) loop: fix them"],
    ["EMFILE", "try again"],
  ])("says a lease file that could not be read now (%s) left the token untouched, what the command left undone and what to do, exit 1", (code, advice) => {
    const error = leaseUnreadableProblem(new LeaseUnreadableError("/state/locks/cycle.lock", code), "/state", "; this sign-in was not stored");
    expect(error.exitCode).toBe(EXIT.failed);
    expect(error.message).toBe(
      `whether another process holds the lease is unknown: the lease file /state/locks/cycle.lock could not be read now (${code}), so the run stopped ` +
        `without touching the token; this sign-in was not stored; ${advice}`,
    );
  });

  it("says a lease file of another user's is to be removed only once no bridge runs, with what the command left undone, exit 2", () => {
    const error = leaseUnreadableProblem(new LeaseUnreadableError("/state/locks/cycle.lock", "EACCES"), "/state", "; this sign-in was not stored");
    expect(error.exitCode).toBe(EXIT.usage);
    expect(error.message).toContain(
      "; a bridge run by another user may hold it: run every bridge on this state directory as the same user; remove the file only once none runs; this sign-in was not stored",
    );
  });

  it("says a lease that could not be read, while new tokens are held unsaved, touched no token but that those in every file are held", () => {
    const holder = { holdsUnsavedTokens: true, heldTokensFailure: undefined, saveHeldTokens: async () => false };
    const untrack = [spendingRefreshes.track(holder, "/state/tokens.json")];
    try {
      const lease = new LeaseUnreadableError("/state/locks/cycle.lock", "EMFILE");
      expect(leaseUnreadableProblem(lease, "/state").message).toContain("(the refresh token stored in /state/tokens.json is spent)");
      untrack.push(spendingRefreshes.track({ ...holder }, "/other/tokens.json"));
      const message = leaseUnreadableProblem(lease, "/state").message;
      expect(message).toMatch(/^whether another process holds the lease is unknown: the lease file \/state\/locks\/cycle\.lock could not be read now \(EMFILE\), so the run stopped; try again; meanwhile/);
      expect(message).toContain("(the refresh token stored in /state/tokens.json and /other/tokens.json is spent)");
      expect(message).not.toContain("without touching the token");
    } finally {
      for (const stop of untrack) stop();
    }
  });

  it("says a locks directory of another user's is to be given to this user (exit 2), not a file to remove", () => {
    const error = stateErrorOf(new LeaseUnreadableError("/state/locks", "EPERM", { source: "listing" }), state);
    expect(error.exitCode).toBe(EXIT.usage);
    expect(error.message).toContain("a bridge run by another user may hold a lease in it: run every bridge on this state directory as the same user; give the directory to this user (chown) only once none runs");
    expect(error.message).not.toContain("remove the file");
  });

  it("says a state file this user was refused (EPERM) cannot be read by this user, exit 2, not to move it aside", () => {
    const denied = Object.assign(new Error("EPERM: operation not permitted"), { code: "EPERM" });
    const error = stateErrorOf(new CorruptStateError("Snapshot segment header is unreadable", { file: "/state/snapshots/seg-1.log" }, { cause: denied }), state);
    expect(error.exitCode).toBe(EXIT.usage);
    expect(error.message).toContain("BRIDGE_STATE_DIR: cannot be read by this user (EPERM): /state/snapshots/seg-1.log");
    expect(error.message).not.toContain("move it aside");
  });

  it("names a corrupt state file (exit 2) under a heading that blames the file, with what to do", () => {
    const corrupt = new CorruptStateError("Snapshot segment header is unreadable", { file: "/state/snapshots/seg-1.log" });
    const error = stateErrorOf(new CycleAbortedError("stopped", { report: emptyReport("transactions") }, { cause: corrupt }), state);
    expect(error.exitCode).toBe(EXIT.usage);
    expect(error.message).toBe(
      "A file in the state directory (/state) cannot be used:\n  - BRIDGE_STATE_DIR: Snapshot segment header is unreadable (/state/snapshots/seg-1.log); restore it or move it aside",
    );
    // One that names no file, denied or not, is named as a file in the state directory.
    const denied = Object.assign(new Error("EACCES: permission denied"), { code: "EACCES" });
    expect(stateErrorOf(new CorruptStateError("Quarantine is unreadable", {}, { cause: denied }), state).message).toContain(
      "BRIDGE_STATE_DIR: Quarantine is unreadable (a file in it); restore it or move it aside",
    );
  });

  it("says a state directory whose file system makes no hard links is a setting to change (exit 2), and only for a file in it", () => {
    const noLinks = (dir: string) => new CycleAbortedError("stopped", { report: emptyReport("transactions") }, { cause: new HardLinksUnsupportedError(dir, "EPERM") });
    const error = stateErrorOf(noLinks("/state/locks"), state);
    expect(error.exitCode).toBe(EXIT.usage);
    expect(error.message).toMatch(/^The state directory's file system cannot hold the bridge's lease files:\n {2}- BRIDGE_STATE_DIR: the file system of \/state\/locks makes no hard links \(EPERM\)/);
    expect(error.message).toContain("put BRIDGE_STATE_DIR on a file system that makes them");
    // Elsewhere (an events file's directory), the state directory's file system is not to blame.
    expect(stateErrorOf(noLinks("/events"), state).message).not.toContain("put BRIDGE_STATE_DIR on a file system");
  });

  it("ends the no-hard-links wording with what the command left undone", () => {
    const error = noHardLinksProblem(new HardLinksUnsupportedError("/state/locks", "EPERM"), "; this sign-in was not stored");
    expect(error.message).toMatch(/and move its files there; this sign-in was not stored$/);
  });

  it("words any other failure with its name (exit 1), and a thrown non-Error as its text", () => {
    const error = stateErrorOf(new TypeError("boom"), state);
    expect(error).toBeInstanceOf(CycleFailedError);
    expect(error.message).toBe("the cycle failed: TypeError: boom");
    expect(stateErrorOf("gone", state).message).toBe("the cycle failed: Error: gone");
  });

  it("words any other failure as the command asks (conform-pii's own words), for the engine's failures and the state directory's alike", async () => {
    const otherwise = (e: Error) => `conform-pii stopped: ${e.name}: ${e.message}`;
    expect(stateErrorOf(new TypeError("boom"), state, otherwise).message).toBe("conform-pii stopped: TypeError: boom");
    expect((await cliErrorOf(new TypeError("boom"), bridgeWith(false), otherwise)).message).toBe("conform-pii stopped: TypeError: boom");
  });

  it("names the state directory's file system after any other failure it made (the conform-pii pass id not written)", () => {
    const full = Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
    expect(stateErrorOf(full, state).message).toBe(
      "the cycle failed: Error: ENOSPC: no space left on device, write; the file system of /state (BRIDGE_STATE_DIR, ENOSPC) is full: make room there; nothing is lost",
    );
  });
});

describe("systemErrorCode", () => {
  // The cycle lease takes a code it returns for a state directory that takes no writes, and rethrows anything else.
  it.each([
    [{ code: "ENOSPC" }, "ENOSPC"],
    [{ code: "E2BIG" }, "E2BIG"],
    [{ code: "ERR_INVALID_ARG_TYPE" }, undefined],
    [{ code: "ERR_FS_EISDIR" }, undefined],
    [{ code: -28 }, undefined],
    [{}, undefined],
    [undefined, undefined],
  ])("takes only a system call's code (%j: %s), not node's own ERR_ codes nor a number", (error, code) => {
    expect(systemErrorCode(error)).toBe(code);
  });
});
