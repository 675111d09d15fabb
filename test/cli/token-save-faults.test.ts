/**
 * Local mode when the token file's directory takes no writes (a full disk, a read-only mount): a refresh is not
 * started while it could not save its successor, and tokens a failed save left in memory are saved before the command
 * exits, or reported lost. Faults are injected into node:fs for the token file's writes only.
 */
import type * as nodeFs from "node:fs";
import { writeFileSync } from "node:fs";
import { readFile, readdir, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { EXIT, failureMessage } from "../../shared/cli/errors.js";
import { demoCommand } from "../../shared/cli/demo.js";
import type { CliIo } from "../../shared/cli/io.js";
import type { Sandbox } from "../../sandbox/index.js";
import { TokenUnavailableError } from "../../shared/qashio/errors.js";
import { exchangeCode } from "../../shared/qashio/auth/oauth.js";
import { storedTokensOf } from "../../shared/qashio/auth/token-provider.js";
import { spendingRefreshes } from "../../shared/cli/token-spending.js";
import { CLIENT, dueForRefresh, harnessPerTest, idsWithStatus, loopWithSteps, openHarnessBridge, ROOT, runInProcess, type Harness } from "./helpers.js";

/**
 * `full`: every write of the token file's directory fails (the store's probe and its saves). `failSaves`: that many
 * next saves of the token file fail (probes pass: the directory filled up between the two). `failSavesForMs`: saves
 * fail for that long from the first that fails (space freed soon after). `onSaveFailure`: called at each failed save.
 */
const faults = vi.hoisted(() => ({
  full: false,
  failSaves: 0,
  failSavesForMs: 0,
  failingSince: undefined as number | undefined,
  onSaveFailure: undefined as (() => void) | undefined,
}));

/** Whether the save of the token file starting now fails, as `failSaves` and `failSavesForMs` say. */
function saveFails(): boolean {
  if (faults.failSaves > 0) {
    faults.failSaves -= 1;
    return true;
  }
  if (faults.failSavesForMs === 0) return false;
  faults.failingSince ??= Date.now();
  return Date.now() - faults.failingSince < faults.failSavesForMs;
}

vi.mock("node:fs", async (importOriginal) => {
  const { withOpenFaults } = await import("./support/open-faults.js");
  return withOpenFaults(await importOriginal<typeof nodeFs>(), (name) => {
    const probe = name.startsWith("probe.");
    const tokenSave = name.startsWith("tokens.json.");
    if ((faults.full && (probe || tokenSave)) || (tokenSave && saveFails())) {
      if (tokenSave) faults.onSaveFailure?.();
      return "ENOSPC";
    }
    return undefined;
  });
});

const startHarness = harnessPerTest();
beforeEach(() => {
  faults.full = false;
  faults.failSaves = 0;
  faults.failSavesForMs = 0;
  faults.failingSince = undefined;
  faults.onSaveFailure = undefined;
});

/**
 * Asserts that `stderr` says `outcome` (what became of held tokens) once, in its last line, after every promise that
 * they "will be saved again before use": a person reads the last line as the truth.
 */
function expectOutcomeLast(stderr: string, outcome: string): void {
  const lines = stderr.trimEnd().split("\n");
  expect(stderr.split(outcome), stderr).toHaveLength(2);
  expect(lines.at(-1), stderr).toContain(outcome);
  expect(lines.at(-1)!.indexOf(outcome), stderr).toBeGreaterThan(lines.at(-1)!.lastIndexOf("will be saved again before use"));
  expect(lines.slice(0, -1).join("\n"), stderr).not.toContain("will be saved again before use");
}

/** A token file's text holding a family newer than the one the sandbox's harness signed in with. */
async function anotherFamily(h: Harness): Promise<string> {
  const redirectUri = "http://127.0.0.1:9/callback";
  const code = h.sandbox.control.issueAuthorizationCode({ companyId: h.companyId, redirectUri });
  const set = await exchangeCode({ baseUrl: h.url, clientId: CLIENT.id, clientSecret: CLIENT.secret }, { code, redirectUri });
  return JSON.stringify(storedTokensOf(set, Date.now())) + "\n";
}

describe("bridge run --once when the token file cannot be written", () => {
  it("does not spend the refresh token while its successor could not be saved: exit 1, and the next run goes on", async () => {
    const h = await startHarness();
    const { tokensFile, stored } = await dueForRefresh(h);
    const before = await stored();
    faults.full = true;

    const failed = await runInProcess(["run", "--once"], h.env);

    expect(failed.code, failed.stderr).toBe(EXIT.failed);
    expect(failed.stderr).toContain(`cannot save a new token set to ${tokensFile} now (ENOSPC), so no token refresh was tried`);
    expect(await stored()).toBe(before);
    faults.full = false;
    const next = await runInProcess(["run", "--once"], h.env);
    expect(next.code, next.stderr).toBe(EXIT.ok);
    expect(await stored()).not.toBe(before);
    expect(idsWithStatus(h, "not_synced", "outdated")).toEqual([]);
    // The probe left nothing behind.
    expect((await readdir(join(tokensFile, ".."))).filter((name) => name.startsWith("probe."))).toEqual([]);
  });

  it("saves the rotated tokens a failed save held before it exits, so the next run still holds a live family", async () => {
    const h = await startHarness();
    const { tokensFile, stored } = await dueForRefresh(h);
    const before = await stored();
    faults.failSaves = 1;

    const failed = await runInProcess(["run", "--once"], h.env);

    // The cycle failed at the save; the tokens were saved on the way out, and it says so once, after the error's
    // "will be saved again": the last word on screen is what became of them.
    expect(failed.code, failed.stderr).toBe(EXIT.failed);
    expectOutcomeLast(failed.stderr, `the new tokens held unsaved since a failed save are saved to ${tokensFile} now: the token family lives on`);
    expect(await stored()).not.toBe(before);
    expect(spendingRefreshes.busy).toBe(false);
    const next = await runInProcess(["run", "--once"], h.env);
    expect(next.code, next.stderr).toBe(EXIT.ok);
    expect(idsWithStatus(h, "not_synced", "outdated")).toEqual([]);
  });

  it("says last, in its error, that the tokens it held were not saved when the token file took another family meanwhile", async () => {
    const h = await startHarness();
    const { tokensFile, stored } = await dueForRefresh(h);
    const other = await anotherFamily(h);
    faults.failSaves = 1;
    // At the failed save, a newer family lands in the token file (restored by hand, say).
    faults.onSaveFailure = () => writeFileSync(tokensFile, other, { mode: 0o600 });

    const failed = await runInProcess(["run", "--once"], h.env);

    expect(failed.code, failed.stderr).toBe(EXIT.failed);
    expectOutcomeLast(failed.stderr, `the new tokens held unsaved since a failed save were not saved: ${tokensFile} holds newer ones`);
    expect(await stored()).toBe(other);
  });

  it("saves them on a later try when the directory takes writes again within a second (three tries, half a second apart)", async () => {
    const h = await startHarness();
    const { stored } = await dueForRefresh(h);
    const before = await stored();
    // The save in the cycle fails, and so does the first try on the way out; the third, a second later, lands.
    faults.failSavesForMs = 800;

    const failed = await runInProcess(["run", "--once"], h.env);

    expect(failed.code, failed.stderr).toBe(EXIT.failed);
    expect(failed.stderr).not.toContain("is lost with this process");
    expect(await stored()).not.toBe(before);
    const next = await runInProcess(["run", "--once"], h.env);
    expect(next.code, next.stderr).toBe(EXIT.ok);
  });

  it("says the new refresh token is lost and the integration must be re-authorized when it still cannot be saved (exit 3)", async () => {
    const h = await startHarness();
    const { tokensFile, stored } = await dueForRefresh(h);
    const before = await stored();
    faults.failSaves = Number.POSITIVE_INFINITY;

    const failed = await runInProcess(["run", "--once"], h.env);

    expect(failed.code, failed.stderr).toBe(EXIT.reauthorize);
    expect(failed.stderr).toContain(`the provider's new refresh token could not be saved to ${tokensFile} and is lost with this process`);
    expect(failed.stderr).toContain("run `npm run bridge -- authorize`; before that: ");
    expect(failed.stderr).not.toContain((JSON.parse(before) as { refreshToken: string }).refreshToken);
    expect(await stored()).toBe(before);
    expect(spendingRefreshes.busy).toBe(false);
  });
});

describe("bridge run --once: what the token provider itself warns of", () => {
  it("warns that an early token refresh is postponed while the token file takes no write, and goes on with the current access token", async () => {
    const h = await startHarness();
    const first = await runInProcess(["run", "--once"], h.env);
    expect(first.code, first.stderr).toBe(EXIT.ok);
    const tokensFile = join(h.env.BRIDGE_STATE_DIR as string, "tokens.json");
    const stored = () => readFile(tokensFile, "utf8");
    // The access token is within its early refresh (its last minute on this host's clock), and the provider still takes it.
    const early = { ...(JSON.parse(await stored()) as Record<string, unknown>), accessTokenExpiresAt: Date.now() + 30_000 };
    await writeFile(tokensFile, JSON.stringify(early) + "\n", { mode: 0o600 });
    faults.full = true;

    const { code, stderr } = await runInProcess(["run", "--once"], h.env);

    expect(code, stderr).toBe(EXIT.ok);
    // Names the file whose directory took no write: the person has to free or fix it.
    const warning = stderr.split("\n").find((line) => /^warn +token refresh postponed: /.test(line));
    expect(warning, stderr).toMatch(/ reason=TokenFileUnwritableError file=(\S+) expiresInSeconds=\d+$/);
    expect(warning?.match(/ file=(\S+) /)?.[1]).toBe(tokensFile);
    expect(JSON.parse(await stored())).toEqual(early);
    expect(idsWithStatus(h, "not_synced", "outdated")).toEqual([]);
  });

  it("warns of each retry of the token endpoint (a 429), naming neither token", async () => {
    const h = await startHarness();
    const { stored } = await dueForRefresh(h);
    const before = JSON.parse(await stored()) as { accessToken: string; refreshToken: string };
    await h.control("POST", "/faults", { method: "POST", path_prefix: "/oauth2/token", status: 429, retry_after: 0, count: 1 });

    const { code, stderr } = await runInProcess(["run", "--once"], h.env);

    expect(code, stderr).toBe(EXIT.ok);
    expect(stderr).toMatch(/^warn +provider request failed; retrying method=POST path=\/oauth2\/token status=429 error=RateLimitedError /m);
    const after = JSON.parse(await stored()) as { accessToken: string; refreshToken: string };
    expect(after.refreshToken).not.toBe(before.refreshToken);
    for (const secret of [before.accessToken, before.refreshToken, after.accessToken, after.refreshToken, h.env.QASHIO_REFRESH_TOKEN, CLIENT.secret]) {
      expect(stderr).not.toContain(secret);
    }
  });

  it("says nothing of the token endpoint's retries under BRIDGE_LOG_LEVEL=error", async () => {
    const h = await startHarness();
    await dueForRefresh(h);
    await h.control("POST", "/faults", { method: "POST", path_prefix: "/oauth2/token", status: 429, retry_after: 0, count: 1 });

    const { code, stderr } = await runInProcess(["run", "--once"], { ...h.env, BRIDGE_LOG_LEVEL: "error" });

    expect(code, stderr).toBe(EXIT.ok);
    expect(await h.control("GET", "/faults")).toEqual({ data: [] });
    expect(stderr).not.toContain("retrying");
  });
});

describe("a local bridge whose command settled its tokens", () => {
  it("starts no token refresh for a call left over (an abandoned read-ahead), whose failed save would go unreported", async () => {
    const h = await startHarness();
    const { stored } = await dueForRefresh(h);
    const before = await stored();
    const { bridge } = await openHarnessBridge(h);
    await bridge.settleTokens();
    faults.failSaves = Number.POSITIVE_INFINITY;

    const leftover = bridge.transactions.provider.listTransactions({ client_sync_status: "not_synced", page: 1, page_size: 1 });

    await expect(leftover).rejects.toBeInstanceOf(TokenUnavailableError);
    // Nothing was spent: the stored refresh token is still the live one, and no save was tried.
    expect(await stored()).toBe(before);
    expect(faults.failSaves).toBe(Number.POSITIVE_INFINITY);
    faults.failSaves = 0;
    const next = await runInProcess(["run", "--once"], h.env);
    expect(next.code, next.stderr).toBe(EXIT.ok);
    expect(await stored()).not.toBe(before);
  });
});

describe("bridge run (a cycle every interval) when the token file cannot be written", () => {
  it("saves the rotated tokens a failed save held when Ctrl-C ends the loop right after, though the loop itself ends well", async () => {
    const h = await startHarness();
    const { stored } = await dueForRefresh(h);
    const before = await stored();
    const controller = new AbortController();
    faults.failSaves = 1;
    faults.onSaveFailure = () => controller.abort();

    const stopped = await runInProcess(["run", "--interval", "1h"], h.env, controller.signal);

    expect(stopped.code, stopped.stderr).toBe(EXIT.ok);
    expect(stopped.stderr).toContain("rotated tokens could not be saved");
    // Said as the message while they were held promised ("saying whether they were saved").
    expect(stopped.stderr).toContain("the new tokens held unsaved since a failed save are saved to");
    expect(await stored()).not.toBe(before);
    expect(spendingRefreshes.busy).toBe(false);
    const next = await runInProcess(["run", "--once"], h.env);
    expect(next.code, next.stderr).toBe(EXIT.ok);
  });

  it("says the tokens it holds unsaved were not saved once the token file holds another family, and goes on with that one", async () => {
    const h = await startHarness();
    const { tokensFile, stored } = await dueForRefresh(h);
    faults.failSaves = 1;
    let other = "";

    // Between the cycle whose save failed and the next, a newer family lands in the token file (restored by hand, say).
    const { outcome, stderr } = await loopWithSteps(h, [
      async () => {
        other = await anotherFamily(h);
        await writeFile(tokensFile, other, { mode: 0o600 });
      },
    ]);

    expect(outcome, stderr).toBe(EXIT.ok);
    expect(stderr).toContain(`the new tokens held unsaved since a failed save were not saved: ${tokensFile} holds newer ones`);
    expect(stderr).not.toContain("are saved to");
    // Said once, in the CLI's words naming the file: not again in the token provider's own.
    expect(stderr).not.toContain("the token store changed after the rotated tokens failed to save");
    expect(await stored()).toBe(other);
  });

  it("writes the tokens it holds unsaved into a token file removed meanwhile (0600), having kept their lease throughout", async () => {
    const h = await startHarness();
    const { tokensFile, stored } = await dueForRefresh(h);
    const before = await stored();
    faults.failSaves = 1;

    // Between the cycle whose save failed and the next, someone removes the token file (freeing space, say).
    const { outcome, stderr } = await loopWithSteps(h, [() => rm(tokensFile)]);

    expect(outcome, stderr).toBe(EXIT.ok);
    expect(stderr).toContain("rotated tokens could not be saved");
    const recreated = await stored();
    expect(recreated).not.toBe(before);
    expect((await stat(tokensFile)).mode & 0o777).toBe(0o600);
    expect(spendingRefreshes.busy).toBe(false);
    // The family lives on: the next run refreshes with the tokens written back.
    await h.control("POST", "/clock", { advance_seconds: 3_600 });
    const next = await runInProcess(["run", "--once"], h.env);
    expect(next.code, next.stderr).toBe(EXIT.ok);
    expect(await stored()).not.toBe(recreated);
  });

  it("does not write them into a removed token file once their lease was lost (another writer may have stored a newer family): exit 3", async () => {
    const h = await startHarness();
    const { tokensFile } = await dueForRefresh(h);
    faults.failSaves = 1;
    const locks = join(tokensFile, "..", "locks");

    // The token file and the lease kept for the held tokens both go (a cleanup of the state directory's files).
    const { outcome } = await loopWithSteps(h, [
      async () => {
        await rm(tokensFile);
        for (const name of await readdir(locks)) if (name.startsWith("qashio-token-refresh.lock")) await rm(join(locks, name));
      },
    ]);

    expect(outcome).toMatchObject({ exitCode: EXIT.reauthorize });
    const message = (outcome as Error).message;
    expect(message).toContain(`the provider's new refresh token could not be saved to ${tokensFile} and is lost with this process`);
    expect(message).toContain("removed while this process was running");
    expect(message).not.toContain("still good");
    expect(message).toContain("the refresh token it held is spent, replaced by new tokens this process could not save: a copy of it is of no use");
    expect(message).toContain("not written in its place since the token refresh lease kept for them was lost meanwhile");
    await expect(stat(tokensFile)).rejects.toMatchObject({ code: "ENOENT" });
  });
});

/**
 * Runs the demo until it fails: past cycle 1 the sandbox's access token has expired, cycle 2's refresh fails its save
 * (the tokens held "will be saved again"), and the terminal goes as that failure is said. Resolves with the error the
 * demo threw (main prints its message last), what it wrote, and the path its token file had.
 */
async function failedDemo(keep: boolean): Promise<{ error: unknown; stdout: string; stderr: string; tokensFile: string }> {
  let sandbox: Sandbox | undefined;
  let stdout = "";
  let stderr = "";
  const io: CliIo = {
    env: { NO_COLOR: "1" },
    cwd: ROOT,
    stdout: {
      write: (chunk: string) => {
        stdout += chunk;
        if (!chunk.startsWith("── cycle 1:")) return;
        sandbox!.control.advanceClock(3_600);
        faults.failSaves = 1;
      },
    },
    stderr: {
      write: (chunk: string) => {
        stderr += chunk;
        if (chunk.startsWith("cycle 2 failed")) throw new Error("stderr closed");
      },
    },
    signal: new AbortController().signal,
  };
  const error = await demoCommand({ cycles: 3, intervalMs: 0, seed: 42, keep }, io, { onSandbox: (s) => (sandbox = s) }).catch((e: unknown) => e);
  const tokensFile = join(dirname(/events are appended to (\S+events\.jsonl)/.exec(stdout)?.[1] ?? ""), "state", "tokens.json");
  return { error, stdout, stderr, tokensFile };
}

describe("bridge demo when the token file cannot be written", () => {
  it("names no token file in its failure once its removed temp directory took that file with it", async () => {
    const { error, stdout, stderr, tokensFile } = await failedDemo(false);

    expect(stderr, stdout).toContain("will be saved again before use");
    expect(stderr).toContain(`demo failed; removed ${dirname(dirname(tokensFile))} (--keep keeps it)`);
    await expect(stat(tokensFile)).rejects.toMatchObject({ code: "ENOENT" });
    expect(failureMessage(error)).toContain("stderr closed");
    expect(failureMessage(error)).not.toContain(tokensFile);
    expect(failureMessage(error)).not.toContain("saved");
  });

  it("says last, with --keep, that the tokens it held are saved to the token file it kept", async () => {
    const { error, stdout, stderr, tokensFile } = await failedDemo(true);
    try {
      expect(stderr, stdout).toContain("will be saved again before use");
      expect((await stat(tokensFile)).isFile()).toBe(true);
      expect(failureMessage(error)).toBe(`unexpected Error: stderr closed; the new tokens held unsaved since a failed save are saved to ${tokensFile} now: the token family lives on, nothing to do`);
    } finally {
      await rm(dirname(dirname(tokensFile)), { recursive: true, force: true });
    }
  });
});

/**
 * Runs a demo of `cycles` cycles whose token saves fail `failSaves` times from cycle 2's refresh on (past cycle 1 the
 * sandbox's access token has expired); resolves with its exit code or error, and all it wrote (both streams).
 */
async function demoWithFailedSaves(cycles: number, failSaves: number): Promise<{ outcome: unknown; output: string; dir: string }> {
  let sandbox: Sandbox | undefined;
  let output = "";
  const write = (chunk: string) => {
    output += chunk;
    if (!chunk.startsWith("── cycle 1:")) return;
    sandbox!.control.advanceClock(3_600);
    faults.failSaves = failSaves;
  };
  const io: CliIo = { env: { NO_COLOR: "1" }, cwd: ROOT, stdout: { write }, stderr: { write }, signal: new AbortController().signal };
  const outcome = await demoCommand({ cycles, intervalMs: 0, seed: 42, keep: false }, io, { onSandbox: (s) => (sandbox = s) }).catch((e: unknown) => e);
  return { outcome, output, dir: dirname(/events are appended to (\S+events\.jsonl)/.exec(output)?.[1] ?? "") };
}

describe("bridge demo whose token saves fail, told as a demo user needs it", () => {
  it("says held tokens were saved without naming the token file it then removes", async () => {
    const { outcome, output, dir } = await demoWithFailedSaves(2, 1);

    expect(outcome, output).toBe(EXIT.ok);
    expect(output).toContain("they will be saved again before use");
    expect(output).toContain("the new tokens held unsaved since a failed save are saved now: nothing to do\n");
    expect(output).not.toContain(join(dir, "state"));
    expect(output.trimEnd().split("\n").at(-1)).toBe(`stopped after 2 cycles; removed ${dir} (--keep keeps it)`);
  });

  it("says to start the demo again, not to authorize, when its new refresh token is lost for good (exit 3)", async () => {
    const { outcome, output, dir } = await demoWithFailedSaves(2, 100);

    expect(outcome).toMatchObject({ exitCode: EXIT.reauthorize });
    const message = failureMessage(outcome);
    expect(message, output).toMatch(/^the provider's new refresh token could not be saved and is lost with this process; the one it replaced is spent: start a new demo with `npm start`(;|$)/);
    // A new demo signs in anew in a directory of its own: neither the token file nor this one's state directory matters.
    expect(message).not.toContain("takes writes");
    expect(message).not.toContain(dir);
    expect(message).not.toContain("npm run bridge");
  });
});
