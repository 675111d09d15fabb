import { chown, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CycleAbortedError, ReauthorizationNeededError } from "../../shared/bridge/errors.js";
import { emptyReport } from "../../shared/bridge/report.js";
import { CorruptStateError } from "../../shared/local/errors.js";
import { cliErrorOf } from "../../shared/cli/engine-errors.js";
import { AUTHORIZE_AGAIN, AuthorizeAgainError, CycleFailedError, EXIT } from "../../shared/cli/errors.js";
import type { LocalBridge } from "../../shared/cli/local-bridge.js";
import { NetworkError, ReauthorizationRequiredError } from "../../shared/qashio/errors.js";

/** The members of a local bridge `cliErrorOf` reads for a refused refresh. */
function bridgeWith(usesSeed: boolean): LocalBridge {
  const tokens = { usesSeed: () => Promise.resolve(usesSeed), seedIgnoredHint: "" };
  return { settings: { stateDir: "/state" }, baseUrl: "https://provider.example", tokens, signInAgain: AUTHORIZE_AGAIN } as unknown as LocalBridge;
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
