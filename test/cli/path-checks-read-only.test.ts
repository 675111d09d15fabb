/**
 * The path checks on a read-only mount: EROFS from access(2) is no matter of this user's rights, and the message says
 * so. A read-only mount cannot be made in a test, so access(2) answers EROFS for paths under one directory.
 */
import type * as nodeFs from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { eventsFileProblem, stateDirProblem } from "../../shared/cli/path-checks.js";

const readOnly = vi.hoisted(() => ({ under: undefined as string | undefined }));

vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof nodeFs>();
  const accessSync = ((path: nodeFs.PathLike, mode?: number) => {
    if (readOnly.under !== undefined && String(path).startsWith(readOnly.under) && (mode ?? 0) & fs.constants.W_OK) {
      throw Object.assign(new Error(`EROFS: read-only file system, access '${String(path)}'`), { code: "EROFS" });
    }
    fs.accessSync(path, mode);
  }) as typeof fs.accessSync;
  return { ...fs, default: { ...fs, accessSync }, accessSync };
});

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "read-only-"));
  readOnly.under = dir;
});
afterEach(async () => {
  readOnly.under = undefined;
  await rm(dir, { recursive: true, force: true });
});

describe("path checks on a read-only file system", () => {
  it("say the state directory is on a read-only file system, not that this user may not write it", async () => {
    const state = join(dir, "state");
    await mkdir(state);
    expect(stateDirProblem(state)).toBe(`is on a read-only file system (EROFS): ${state}`);
  });

  it("say the same of an events file there, existing or not", async () => {
    const events = join(dir, "events.jsonl");
    expect(eventsFileProblem(events)).toBe(`is on a read-only file system (EROFS): ${dir}`);
    await writeFile(events, "");
    expect(eventsFileProblem(events)).toBe(`is on a read-only file system (EROFS): ${events}`);
  });
});
