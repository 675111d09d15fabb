/**
 * Local mode on a state directory whose file system makes no hard links (vfat, exFAT, a FUSE or SMB mount without
 * them): every lease is created by linking a complete temp file into place, which such a file system refuses (EPERM)
 * though it takes every write. The run must say so, as a setting to change (exit 2, before any provider call), not as
 * a full or read-only disk that a loop would retry for good. The link is refused through a mocked node:fs.
 */
import type * as nodeFs from "node:fs";
import { basename, dirname, join } from "node:path";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { authorizeCommand } from "../../shared/cli/authorize-command.js";
import { ConfigError, EXIT } from "../../shared/cli/errors.js";
import { approve, capturedIo, dueForRefresh, harnessPerTest, runInProcess, type Harness } from "./helpers.js";

/** Links refused: of files in the state directory's `dir` whose names start with `name` (undefined: none). */
const refused = vi.hoisted(() => ({ links: undefined as { dir: string; name: string } | undefined }));

vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof nodeFs>();
  // As Linux answers link(2) on vfat: EPERM, "the file system does not support the creation of hard links".
  const linkSync = ((from: nodeFs.PathLike, to: nodeFs.PathLike) => {
    const { links } = refused;
    if (links !== undefined && basename(dirname(String(to))) === links.dir && basename(String(to)).startsWith(links.name)) throw Object.assign(new Error(`EPERM: operation not permitted, link '${String(from)}' -> '${String(to)}'`), { code: "EPERM" });
    fs.linkSync(from, to);
  }) as typeof fs.linkSync;
  return { ...fs, default: { ...fs, linkSync }, linkSync };
});

const startHarness = harnessPerTest();
beforeEach(() => {
  refused.links = { dir: "locks", name: "" };
});

/**
 * A harness whose tokens were stored by a first run (links working) and are due for a refresh, and whose token refresh
 * lease can no longer be created; with the token file's text then, to tell it untouched.
 */
async function tokenLeaseRefused(): Promise<{ h: Harness; stored: () => Promise<string>; before: string }> {
  const h = await startHarness();
  refused.links = undefined;
  const { stored } = await dueForRefresh(h);
  const before = await stored();
  refused.links = { dir: "locks", name: "qashio-token-refresh.lock" };
  return { h, stored, before };
}

describe("bridge run on a state directory whose file system makes no hard links", () => {
  it("says so, naming BRIDGE_STATE_DIR and what to put it on (exit 2, nothing sent), not that the directory takes no writes", async () => {
    const h = await startHarness();
    const stateDir = h.env.BRIDGE_STATE_DIR as string;

    const failed = await runInProcess(["run", "--once"], h.env);

    expect(failed.code, failed.stderr).toBe(EXIT.usage);
    expect(failed.stderr).toContain("BRIDGE_STATE_DIR");
    expect(failed.stderr).toContain(`the file system of ${join(stateDir, "locks")} makes no hard links (EPERM)`);
    expect(failed.stderr).toContain("put BRIDGE_STATE_DIR on a file system that makes them");
    expect(failed.stderr).not.toContain("takes no writes");
    expect(failed.stderr).not.toContain("unexpected");
  });

  it("says so for the snapshot store's id, made by the first cycle's bind, not as a file to restore", async () => {
    const h = await startHarness();
    refused.links = { dir: "snapshots", name: "store-id" };

    const failed = await runInProcess(["run", "--once"], h.env);

    expect(failed.code, failed.stderr).toBe(EXIT.usage);
    expect(failed.stderr).toContain(`the file system of ${join(h.env.BRIDGE_STATE_DIR as string, "snapshots")} makes no hard links (EPERM)`);
    expect(failed.stderr).toContain("put BRIDGE_STATE_DIR on a file system that makes them");
    expect(failed.stderr).not.toContain("restore it");
  });

  it("says so for the token refresh lease too, the stored refresh token unspent", async () => {
    const { h, stored, before } = await tokenLeaseRefused();

    const failed = await runInProcess(["run", "--once"], h.env);

    expect(failed.code, failed.stderr).toBe(EXIT.usage);
    expect(failed.stderr).toContain(`the file system of ${join(h.env.BRIDGE_STATE_DIR as string, "locks")} makes no hard links (EPERM)`);
    expect(failed.stderr).toContain("put BRIDGE_STATE_DIR on a file system that makes them");
    expect(failed.stderr).not.toContain("unexpected");
    expect(await stored()).toBe(before);
  });

  it("says so when authorize meets it saving the sign-in, which is not stored, instead of 'run authorize again'", async () => {
    const { h, stored, before } = await tokenLeaseRefused();
    const { QASHIO_REFRESH_TOKEN: _seed, ...env } = h.env;
    const { io } = capturedIo({ ...h, env }, new AbortController().signal);

    const error = await authorizeCommand({ port: 0, noOpen: true, timeoutMs: 10_000 }, io, { onAuthorizeUrl: approve(h) }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toContain(`the file system of ${join(h.env.BRIDGE_STATE_DIR as string, "locks")} makes no hard links (EPERM)`);
    expect(message).toContain("this sign-in was not stored");
    expect(message).not.toContain("run authorize again");
    expect(await stored()).toBe(before);
  });
});
