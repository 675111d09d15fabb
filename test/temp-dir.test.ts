import { existsSync } from "node:fs";
import { readdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { tempDirPerTest } from "./temp-dir.js";

let dir: string | undefined;
tempDirPerTest("bridge-temp-dir-", (made) => (dir = made));

/** What the file's own hooks, declared after the helper's, found of the directory. */
const seen: { dir: string | undefined; existed: boolean }[] = [];
let ownBefore: { dir: string | undefined; existed: boolean } | undefined;
beforeEach(() => {
  ownBefore = { dir, existed: dir !== undefined && existsSync(dir) };
});
afterEach(() => {
  seen.push({ dir, existed: dir !== undefined && existsSync(dir) });
});

describe("tempDirPerTest", () => {
  it("has the directory made, empty, under the temp dir and named with the prefix, before the file's own beforeEach", async () => {
    expect(ownBefore).toEqual({ dir, existed: true });
    if (dir === undefined) throw new Error("no directory handed over");
    expect(path.dirname(dir)).toBe(tmpdir());
    expect(path.basename(dir)).toMatch(/^bridge-temp-dir-.+/);
    expect(await readdir(dir)).toEqual([]);
    await writeFile(path.join(dir, "left.txt"), "the next test must not see this");
  });

  it("runs the file's own afterEach while the directory is there, then removes it with what it holds", async () => {
    // The first test's afterEach ran before the helper's: the directory was still there then, and is gone now.
    expect(seen).toHaveLength(1);
    expect(seen[0]?.existed).toBe(true);
    const first = seen[0]?.dir;
    if (first === undefined || dir === undefined) throw new Error("no directory handed over");
    expect(existsSync(first)).toBe(false);
    expect(dir).not.toBe(first);
    expect(await readdir(dir)).toEqual([]);
  });
});

/** What the describe block's own call handed over, for the test after the block. */
const block: { dirs: string[] } = { dirs: [] };

describe("tempDirPerTest called in a describe block", () => {
  let inner: string | undefined;
  tempDirPerTest("bridge-temp-dir-block-", (made) => {
    inner = made;
    block.dirs.push(made);
  });

  it("makes the block's own directory for its tests, beside the file's", async () => {
    if (inner === undefined || dir === undefined) throw new Error("no directory handed over");
    expect(path.basename(inner)).toMatch(/^bridge-temp-dir-block-.+/);
    expect(inner).not.toBe(dir);
    expect(await readdir(inner)).toEqual([]);
    expect(existsSync(dir)).toBe(true);
  });
});

describe("a test after that block", () => {
  it("gets no directory of the block's, whose one directory is gone", () => {
    expect(block.dirs).toHaveLength(1);
    expect(existsSync(block.dirs[0] ?? "")).toBe(false);
  });
});
