/**
 * Local mode when a lease file of the state directory cannot be read. FileLock refuses to take such a lease over
 * (LeaseUnreadableError). Denied (EACCES, EPERM: a bridge another user runs on the same directory wrote it, 0600), the
 * run must say what it is, exit 2, and not advise moving the file aside while its holder may be refreshing the token
 * family. Not readable now (EMFILE, ESTALE, EIO, ...), it must name the code and say the run stopped without touching
 * the token, exit 1: a loop tries again at its next interval.
 * A cycle whose check before a write cannot read its own lease stops there, exit 1, without claiming the token untouched.
 * Faults are injected into node:fs/promises' readFile and node:fs's readFileSync for the files named below.
 */
import type * as nodeFs from "node:fs";
import type * as nodeFsPromises from "node:fs/promises";
import { readdir, readFile, rm, symlink } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { CYCLE_LOCK } from "../../shared/cli/cycle-lease.js";
import { EXIT } from "../../shared/cli/errors.js";
import { FileLock } from "../../shared/local/index.js";
import { DEFAULT_LOCK_NAME } from "../../shared/qashio/auth/token-provider.js";
import { authorizeCommand } from "../../shared/cli/authorize-command.js";
import { ConfigError } from "../../shared/cli/errors.js";
import { TOKEN_PATH } from "../../shared/qashio/auth/oauth.js";
import { CLIENT, approve, capturedIo, dueForRefresh, harnessPerTest, loopWithSteps, runInProcess } from "./helpers.js";

/**
 * Reads of the lease files of lock `name` (`<name>.lock`, or a later generation `<name>.lock.<n>`) fail with `code`:
 * `failedRead` node:fs/promises' readFile (taking, renewing, releasing), `failedCheck` node:fs's readFileSync (the
 * holder's check before each write of a cycle).
 */
const faults = vi.hoisted(() => ({
  failedRead: undefined as { name: string; code: string } | undefined,
  failedCheck: undefined as { name: string; code: string } | undefined,
  /** Listings of the locks directory (node:fs/promises' readdir: taking a lease) fail with this code. */
  failedList: undefined as string | undefined,
  /** The next save of the token file fails (ENOSPC), and then calls this. */
  failTokenSave: undefined as (() => void) | undefined,
}));

/** Throws as the system would when `file` is a lease file of the lock `failed` names. */
function failLeaseRead(failed: { name: string; code: string } | undefined, file: unknown): void {
  if (failed !== undefined && new RegExp(`/${failed.name}\\.lock(\\.\\d+)?$`).test(String(file))) {
    throw Object.assign(new Error(`${failed.code}: refused, open '${String(file)}'`), { code: failed.code });
  }
}

vi.mock("node:fs", async (importOriginal) => {
  const { withOpenFaults } = await import("./support/open-faults.js");
  const fs = withOpenFaults(await importOriginal<typeof nodeFs>(), (name) => {
    const failed = faults.failTokenSave;
    if (failed === undefined || !name.startsWith("tokens.json.")) return undefined;
    faults.failTokenSave = undefined;
    failed();
    return "ENOSPC";
  });
  const readFileSync = ((file: nodeFs.PathOrFileDescriptor, ...rest: unknown[]) => {
    failLeaseRead(faults.failedCheck, file);
    return (fs.readFileSync as (file: nodeFs.PathOrFileDescriptor, ...rest: unknown[]) => unknown)(file, ...rest);
  }) as typeof fs.readFileSync;
  return { ...fs, default: { ...fs.default, readFileSync }, readFileSync };
});

vi.mock("node:fs/promises", async (importOriginal) => {
  const fs = await importOriginal<typeof nodeFsPromises>();
  const readFile = (async (file: nodeFs.PathLike, ...rest: unknown[]) => {
    failLeaseRead(faults.failedRead, file);
    return (fs.readFile as (file: nodeFs.PathLike, ...rest: unknown[]) => Promise<unknown>)(file, ...rest);
  }) as typeof fs.readFile;
  const readdir = (async (dir: nodeFs.PathLike, ...rest: unknown[]) => {
    const code = faults.failedList;
    if (code !== undefined && String(dir).endsWith("/locks")) throw Object.assign(new Error(`${code}: refused, scandir '${String(dir)}'`), { code });
    return (fs.readdir as (dir: nodeFs.PathLike, ...rest: unknown[]) => Promise<unknown>)(dir, ...rest);
  }) as typeof fs.readdir;
  return { ...fs, default: { ...fs, readFile, readdir }, readFile, readdir };
});

const startHarness = harnessPerTest();
afterEach(async () => {
  faults.failedRead = undefined;
  faults.failedCheck = undefined;
  faults.failedList = undefined;
  faults.failTokenSave = undefined;
});

/**
 * A harness whose stored access token is due for a refresh while another user's run holds the token refresh lease, its
 * file unreadable here (`code`); `before` is the refresh token stored then.
 */
async function tokenLeaseUnreadable(code = "EACCES") {
  const h = await startHarness();
  const { stored } = await dueForRefresh(h);
  const before = await stored();
  const holder = await new FileLock(h.env["BRIDGE_STATE_DIR"]!).tryAcquire(DEFAULT_LOCK_NAME, 60_000);
  expect(holder).toBeDefined();
  faults.failedRead = { name: encodeURIComponent(DEFAULT_LOCK_NAME), code };
  return { h, stored, before, holder: holder! };
}

const ADVICE = "a bridge run by another user may hold it: run every bridge on this state directory as the same user; remove the file only once none runs";

describe("local mode when a lease file cannot be read", () => {
  it.each(["EACCES", "EPERM"])("names the cycle lease file and who may hold it (%s), exit 2", async (code) => {
    const h = await startHarness();
    expect((await runInProcess(["run", "--once"], h.env)).code).toBe(EXIT.ok);
    const stateDir = h.env["BRIDGE_STATE_DIR"]!;
    // Another user's run holds the cycle lease; this one may not read its file.
    const holder = await new FileLock(stateDir).tryAcquire(CYCLE_LOCK, 60_000);
    expect(holder).toBeDefined();
    faults.failedRead = { name: CYCLE_LOCK, code };

    const refused = await runInProcess(["run", "--once"], h.env);

    expect(refused.code, refused.stderr).toBe(EXIT.usage);
    expect(refused.stderr).toContain(`the lease file cannot be read (${code})`);
    expect(refused.stderr).toMatch(new RegExp(`${join(stateDir, "locks", CYCLE_LOCK)}\\.lock(\\.\\d+)?\\)`));
    expect(refused.stderr).toContain(ADVICE);
    expect(refused.stderr).not.toContain("takes no writes");
    faults.failedRead = undefined;
    await holder!.release();
  });

  it("names the token refresh lease file the same way when a refresh meets it, the stored refresh token unspent", async () => {
    const { h, stored, before, holder } = await tokenLeaseUnreadable();

    const refused = await runInProcess(["run", "--once"], h.env);

    expect(refused.code, refused.stderr).toBe(EXIT.usage);
    expect(refused.stderr).toContain("the lease file cannot be read (EACCES)");
    expect(refused.stderr).toContain(ADVICE);
    expect(refused.stderr).not.toContain("move it aside");
    expect(await stored()).toBe(before);
    faults.failedRead = undefined;
    await holder.release();
  });

  it("says the same when authorize meets it saving the sign-in, which is not stored, instead of 'run authorize again'", async () => {
    const { h, stored, before, holder } = await tokenLeaseUnreadable();
    const { QASHIO_REFRESH_TOKEN: _seed, ...env } = h.env;
    const { io } = capturedIo({ ...h, env }, new AbortController().signal);

    const error = await authorizeCommand({ port: 0, noOpen: true, timeoutMs: 10_000 }, io, { onAuthorizeUrl: approve(h) }).catch((e: unknown) => e);

    // Running authorize again would meet the same file: exit 2, the file and who may hold it named.
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toContain("the lease file cannot be read (EACCES)");
    expect(message).toContain(ADVICE);
    expect(message).toContain("this sign-in was not stored");
    expect(message).not.toContain("run authorize again");
    expect(await stored()).toBe(before);
    faults.failedRead = undefined;
    await holder.release();
  });

  it.each([
    ["EMFILE", "try again"],
    ["ESTALE", "check the file system"],
    ["EIO", "check the file system"],
  ])("says the cycle lease file could not be read now (%s) and the token was not touched, exit 1", async (code, advice) => {
    const h = await startHarness();
    expect((await runInProcess(["run", "--once"], h.env)).code).toBe(EXIT.ok);
    const stateDir = h.env["BRIDGE_STATE_DIR"]!;
    const holder = await new FileLock(stateDir).tryAcquire(CYCLE_LOCK, 60_000);
    faults.failedRead = { name: CYCLE_LOCK, code };

    const refused = await runInProcess(["run", "--once"], h.env);

    expect(refused.code, refused.stderr).toBe(EXIT.failed);
    expect(refused.stderr).toContain(`could not be read now (${code})`);
    expect(refused.stderr).toContain(join(stateDir, "locks", CYCLE_LOCK));
    expect(refused.stderr).toContain("the run stopped without touching the token");
    expect(refused.stderr).toContain(advice);
    expect(refused.stderr).not.toContain("another user");
    expect(refused.stderr).not.toContain("takes no writes");
    faults.failedRead = undefined;
    await holder!.release();
  });

  it("says the same of the token refresh lease file (EMFILE), exit 1, the stored refresh token unspent", async () => {
    const { h, stored, before, holder } = await tokenLeaseUnreadable("EMFILE");

    const refused = await runInProcess(["run", "--once"], h.env);

    expect(refused.code, refused.stderr).toBe(EXIT.failed);
    expect(refused.stderr).toContain("could not be read now (EMFILE)");
    expect(refused.stderr).toContain("the run stopped without touching the token");
    expect(refused.stderr).not.toContain("another user");
    expect(await stored()).toBe(before);
    faults.failedRead = undefined;
    await holder.release();
  });

  it("fails authorize saving the sign-in (ESTALE) with exit 1, the sign-in not stored, and no blame on another user", async () => {
    const { h, stored, before, holder } = await tokenLeaseUnreadable("ESTALE");
    const { QASHIO_REFRESH_TOKEN: _seed, ...env } = h.env;
    const { io } = capturedIo({ ...h, env }, new AbortController().signal);

    const error = await authorizeCommand({ port: 0, noOpen: true, timeoutMs: 10_000 }, io, { onAuthorizeUrl: approve(h) }).catch((e: unknown) => e);

    expect(error).toMatchObject({ exitCode: EXIT.failed });
    const message = (error as Error).message;
    expect(message).toContain("could not be read now (ESTALE)");
    expect(message).toContain("check the file system");
    expect(message).toContain("this sign-in was not stored");
    expect(message).not.toContain("another user");
    expect(await stored()).toBe(before);
    faults.failedRead = undefined;
    await holder.release();
  });

  it("stops a cycle whose check before a write cannot read its own lease now (EMFILE), exit 1, without claiming the token untouched", async () => {
    const h = await startHarness();
    const { stored } = await dueForRefresh(h);
    const before = await stored();
    const events = await readFile(h.eventsFile, "utf8");
    // Only the cycle lease's check before each write fails: the cycle takes its lease and refreshes the token first.
    faults.failedCheck = { name: CYCLE_LOCK, code: "EMFILE" };

    const refused = await runInProcess(["run", "--once"], h.env);

    expect(refused.code, refused.stderr).toBe(EXIT.failed);
    expect(await stored()).not.toBe(before);
    expect(refused.stderr).toContain("(EMFILE)");
    expect(refused.stderr).toContain(join(h.env["BRIDGE_STATE_DIR"]!, "locks", CYCLE_LOCK));
    expect(refused.stderr).toContain("could not be read (EMFILE), so the cycle stopped before its next write");
    expect(refused.stderr).not.toContain("without touching the token");
    expect(refused.stderr).not.toContain("another user");
    expect(await readFile(h.eventsFile, "utf8")).toBe(events);
  });

  it.each([
    ["EMFILE", "try again"],
    ["ENFILE", "try again"],
    ["EIO", "check the file system"],
    ["ESTALE", "check the file system"],
  ])("says the locks directory could not be listed now (%s), not that the state directory takes no writes, exit 1", async (code, advice) => {
    const h = await startHarness();
    const stateDir = h.env["BRIDGE_STATE_DIR"]!;
    faults.failedList = code;

    const refused = await runInProcess(["run", "--once"], h.env);

    expect(refused.code, refused.stderr).toBe(EXIT.failed);
    expect(refused.stderr).toContain(`the locks directory ${join(stateDir, "locks")} could not be listed now (${code})`);
    expect(refused.stderr).toContain("the run stopped without touching the token");
    expect(refused.stderr).toContain(advice);
    expect(refused.stderr).not.toContain("takes no writes");
    expect(refused.stderr).not.toContain("another user");
  });

  it("says a locks directory this user may not list (EACCES) is a permission problem, exit 2, without advising to remove it", async () => {
    const h = await startHarness();
    const stateDir = h.env["BRIDGE_STATE_DIR"]!;
    faults.failedList = "EACCES";

    const refused = await runInProcess(["run", "--once"], h.env);

    expect(refused.code, refused.stderr).toBe(EXIT.usage);
    expect(refused.stderr).toContain(`the locks directory cannot be listed (EACCES), so whether another process holds the lease is unknown`);
    expect(refused.stderr).toContain(`(${join(stateDir, "locks")})`);
    expect(refused.stderr).toContain("run every bridge on this state directory as the same user");
    expect(refused.stderr).not.toContain("remove the file");
    expect(refused.stderr).not.toContain("takes no writes");
  });

  it("names the token refresh lease kept for tokens whose save failed when it cannot be read (EMFILE): exit 3, nothing saved or presented again", async () => {
    const { h, stored, before, holder } = await tokenLeaseUnreadable("EMFILE");
    faults.failedRead = undefined;
    await holder.release();
    // The refresh's save fails; from then on the lease kept for its tokens cannot be read, so they cannot be saved again.
    faults.failTokenSave = () => (faults.failedRead = { name: encodeURIComponent(DEFAULT_LOCK_NAME), code: "EMFILE" });

    const failed = await runInProcess(["run", "--once"], h.env);

    // Lost with the process, as any held tokens that cannot be saved, but for what it is: the lease, not the disk.
    expect(failed.code, failed.stderr).toBe(EXIT.reauthorize);
    expect(failed.stderr).toContain("is lost with this process");
    const lease = join(h.env["BRIDGE_STATE_DIR"]!, "locks", `${encodeURIComponent(DEFAULT_LOCK_NAME)}.lock`);
    expect(failed.stderr).toMatch(new RegExp(`once the token refresh lease can be read again \\(the lease file ${lease}(\\.\\d+)? could not be read \\(EMFILE\\)\\)`));
    expect(failed.stderr).not.toContain("takes writes again");
    // Nothing saved without the lease, and the spent refresh token was not presented again: presented now, it is
    // refused as reused, not as of a family already revoked.
    expect(await stored()).toBe(before);
    const { refreshToken } = JSON.parse(before) as { refreshToken: string };
    const body = new URLSearchParams({ grant_type: "refresh_token", client_id: CLIENT.id, client_secret: CLIENT.secret, refresh_token: refreshToken });
    const again = await fetch(`${h.url}${TOKEN_PATH}`, { method: "POST", body });
    expect(await again.json()).toMatchObject({ error: "invalid_grant", error_description: expect.stringContaining("already used") });
  });

  it("runs past a symbolic link loop at the cycle lease's name, which holds no lease, removing it", async () => {
    const h = await startHarness();
    expect((await runInProcess(["run", "--once"], h.env)).code).toBe(EXIT.ok);
    const locks = join(h.env["BRIDGE_STATE_DIR"]!, "locks");
    for (const name of await readdir(locks)) if (name.startsWith(`${CYCLE_LOCK}.lock`)) await rm(join(locks, name));
    await symlink(`${CYCLE_LOCK}.lock`, join(locks, `${CYCLE_LOCK}.lock`));

    const next = await runInProcess(["run", "--once"], h.env);

    expect(next.code, next.stderr).toBe(EXIT.ok);
    expect((await readdir(locks)).filter((name) => name.startsWith(`${CYCLE_LOCK}.`))).toEqual([`${CYCLE_LOCK}.lock.1`]);
  });

  it("says a loop of symbolic links on the way to a lease file (ELOOP) is to be fixed, not to try again, exit 1", async () => {
    const h = await startHarness();
    expect((await runInProcess(["run", "--once"], h.env)).code).toBe(EXIT.ok);
    const stateDir = h.env["BRIDGE_STATE_DIR"]!;
    faults.failedRead = { name: CYCLE_LOCK, code: "ELOOP" };

    const refused = await runInProcess(["run", "--once"], h.env);

    expect(refused.code, refused.stderr).toBe(EXIT.failed);
    expect(refused.stderr).toContain("could not be read now (ELOOP)");
    expect(refused.stderr).toContain(`symbolic links on the path of ${stateDir} (BRIDGE_STATE_DIR) loop: fix them`);
    expect(refused.stderr).not.toContain("try again");
  });
});

describe("run --interval when a lease file cannot be read while an earlier cycle's rotated tokens are held unsaved", () => {
  /**
   * A loop whose first cycle's refresh cannot save its tokens (held, with the token refresh lease kept for them), whose
   * second cycle cannot read the lease file of lock `name` (EMFILE), and whose third can again; with the cycle that
   * failed on the lease (its logged message), and the token file.
   */
  async function heldWhileUnreadable(name: string) {
    const h = await startHarness();
    const { tokensFile, stored } = await dueForRefresh(h);
    const before = await stored();
    faults.failTokenSave = () => undefined;
    const unreadable = () => (faults.failedRead = { name, code: "EMFILE" });
    const readable = () => (faults.failedRead = undefined);

    const loop = await loopWithSteps(h, [unreadable, readable]);

    const failed = loop.stderr.split("\n").find((text) => text.includes("cycle 2 failed"));
    return { loop, failed: failed ?? "", tokensFile, before, stored };
  }

  it.each([
    ["token refresh lease kept for them", encodeURIComponent(DEFAULT_LOCK_NAME)],
    ["cycle lease", CYCLE_LOCK],
  ])("says of the %s that the tokens are held, saved again later, and what not to do, not that the token was untouched", async (_, name) => {
    const { loop, failed, tokensFile, before, stored } = await heldWhileUnreadable(name);

    // Still exit 1 for that cycle: the loop went on, and its next cycle saved the held tokens.
    expect(loop.outcome, loop.stderr).toBe(EXIT.ok);
    expect(failed).toContain("could not be read now (EMFILE), so the run stopped; try again; ");
    expect(failed).not.toContain("without touching the token");
    expect(failed).toContain(`this process holds, unsaved, the new tokens an earlier token refresh received (the refresh token stored in ${tokensFile} is spent)`);
    expect(failed).toContain("it tries again to save them before its next use of the token (a `run --interval` loop: at its next cycle)");
    expect(failed).toContain("do not kill it (SIGKILL loses them) nor start another bridge on this state directory");
    expect(loop.stdout).toContain("cycle 3:");
    expect(await stored()).not.toBe(before);
  });
});
