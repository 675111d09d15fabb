/**
 * DurableNames at the edges of what it finds: a file gone since it was opened, a link that leads nowhere, a directory
 * that cannot be fsynced. A name is known durable only once its directory's fsync succeeded; the directories fsynced
 * are the file's and a link's target's, once per file found.
 */
import { mkdir, realpath, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { beforeEach, describe, expect, it, vi } from "vitest";
import type * as atomic from "../../shared/local/atomic.js";
import { DurableNames } from "../../shared/local/durable-names.js";
import { tempDirPerTest } from "../temp-dir.js";

/** Directories fsynced, in order (the fsyncs still happen). */
const fsyncedDirs = vi.hoisted(() => [] as string[]);
vi.mock("../../shared/local/atomic.js", async (importOriginal) => {
  const real = await importOriginal<typeof atomic>();
  const fsyncDirSync = (dir: string) => {
    fsyncedDirs.push(dir);
    real.fsyncDirSync(dir);
  };
  return { ...real, fsyncDirSync };
});

let dir: string;
tempDirPerTest("bridge-durable-names-edges-", (made) => (dir = made));
beforeEach(() => {
  fsyncedDirs.length = 0;
});

const identity = { dev: 1, ino: 7 };

describe("DurableNames.makeDurable at the edges", () => {
  it("takes a file moved away since it was opened (a rotation) as made durable by its directory's fsync, without an error", () => {
    const names = new DurableNames();
    const file = path.join(dir, "events.jsonl");
    expect(() => names.makeDurable(file, identity)).not.toThrow();
    expect(names.knows(file, identity)).toBe(true);
  });

  it("does not know a name durable whose directory could not be fsynced: the next find fsyncs it again", () => {
    const names = new DurableNames();
    const file = path.join(dir, "gone", "events.jsonl");
    expect(() => names.makeDurable(file, identity)).toThrow(expect.objectContaining({ code: "ENOENT" }));
    expect(names.knows(file, identity)).toBe(false);
  });

  it("throws for a link whose target cannot be found out (a loop), and does not know its name durable", async () => {
    const names = new DurableNames();
    const file = path.join(dir, "events.jsonl");
    await symlink(path.join(dir, "other.jsonl"), file);
    await symlink(file, path.join(dir, "other.jsonl"));
    expect(() => names.makeDurable(file, identity)).toThrow(expect.objectContaining({ code: "ELOOP" }));
    expect(names.knows(file, identity)).toBe(false);
  });

  it("fsyncs the directory of a file found once, and of a link's target too; nothing for the same file found again", async () => {
    const names = new DurableNames();
    const [linkDir, targetDir] = [path.join(dir, "state"), path.join(dir, "elsewhere")];
    await Promise.all([mkdir(linkDir), mkdir(targetDir)]);
    const [plain, link] = [path.join(linkDir, "tokens.json"), path.join(linkDir, "events.jsonl")];
    await writeFile(plain, "{}\n");
    await writeFile(path.join(targetDir, "events.jsonl"), "");
    await symlink(path.join(targetDir, "events.jsonl"), link);

    names.makeDurable(plain, identity);
    expect(fsyncedDirs).toEqual([linkDir]);
    names.makeDurable(link, { dev: 1, ino: 8 });
    // The target's directory as the link resolves it (a temp directory may itself be behind a link).
    expect(fsyncedDirs).toEqual([linkDir, linkDir, await realpath(targetDir)]);
    names.makeDurable(plain, identity);
    names.makeDurable(link, { dev: 1, ino: 8 });
    expect(fsyncedDirs).toHaveLength(3);
  });
});
