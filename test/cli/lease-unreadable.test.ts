/**
 * Local mode when a lease file of the state directory cannot be read (EACCES: a bridge another user runs on the same
 * directory wrote it, 0600; EIO). FileLock refuses to take such a lease over (LeaseUnreadableError); the run must say
 * what it is, exit 2, and not advise moving the file aside while its holder may be refreshing the token family.
 * Faults are injected into node:fs/promises' readFile for the files named below.
 */
import type * as nodeFs from "node:fs";
import type * as nodeFsPromises from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { CYCLE_LOCK } from "../../shared/cli/cycle-lease.js";
import { EXIT } from "../../shared/cli/errors.js";
import { FileLock } from "../../shared/local/index.js";
import { DEFAULT_LOCK_NAME } from "../../shared/qashio/auth/token-provider.js";
import { dueForRefresh, runInProcess, startHarness, type Harness } from "./helpers.js";

/** Reads of the lease files of lock `name` (`<name>.lock`, or a later generation `<name>.lock.<n>`) fail with `code`. */
const faults = vi.hoisted(() => ({ failedRead: undefined as { name: string; code: string } | undefined }));

vi.mock("node:fs/promises", async (importOriginal) => {
  const fs = await importOriginal<typeof nodeFsPromises>();
  const readFile = (async (file: nodeFs.PathLike, ...rest: unknown[]) => {
    const failed = faults.failedRead;
    if (failed !== undefined && new RegExp(`/${failed.name}\\.lock(\\.\\d+)?$`).test(String(file))) {
      throw Object.assign(new Error(`${failed.code}: refused, open '${String(file)}'`), { code: failed.code });
    }
    return (fs.readFile as (file: nodeFs.PathLike, ...rest: unknown[]) => Promise<unknown>)(file, ...rest);
  }) as typeof fs.readFile;
  return { ...fs, default: { ...fs, readFile }, readFile };
});

let harness: Harness | undefined;
afterEach(async () => {
  faults.failedRead = undefined;
  await harness?.close();
  harness = undefined;
});

const ADVICE = "a bridge run by another user may hold it: run every bridge on this state directory as the same user; remove the file only once none runs";

describe("bridge run when a lease file cannot be read", () => {
  it.each(["EACCES", "EIO"])("names the cycle lease file and who may hold it (%s), exit 2", async (code) => {
    const h = (harness = await startHarness());
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
    await holder!.release();
  });

  it("names the token refresh lease file the same way when a refresh meets it, the stored refresh token unspent", async () => {
    const h = (harness = await startHarness());
    const { stored } = await dueForRefresh(h);
    const before = await stored();
    const stateDir = h.env["BRIDGE_STATE_DIR"]!;
    const holder = await new FileLock(stateDir).tryAcquire(DEFAULT_LOCK_NAME, 60_000);
    expect(holder).toBeDefined();
    faults.failedRead = { name: encodeURIComponent(DEFAULT_LOCK_NAME), code: "EACCES" };

    const refused = await runInProcess(["run", "--once"], h.env);

    expect(refused.code, refused.stderr).toBe(EXIT.usage);
    expect(refused.stderr).toContain("the lease file cannot be read (EACCES)");
    expect(refused.stderr).toContain(ADVICE);
    expect(refused.stderr).not.toContain("move it aside");
    expect(await stored()).toBe(before);
    await holder!.release();
  });
});
