/**
 * writeFileAtomic's durability order, seen through node:fs: the temp file's data is fsynced before the rename makes it
 * the target, and the directory is fsynced after, so a crash leaves the old file or the new one, never an empty one.
 */
import type * as nodeFs from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { writeFileAtomic } from "../../shared/local/index.js";

/** fsync and rename calls in order, each naming the file its descriptor was opened on. */
const journal = vi.hoisted(() => ({ events: [] as string[], opened: new Map<number, string>() }));

vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof nodeFs>();
  const openSync = ((file: nodeFs.PathLike, ...rest: unknown[]) => {
    const fd = (fs.openSync as (file: nodeFs.PathLike, ...rest: unknown[]) => number)(file, ...rest);
    journal.opened.set(fd, String(file));
    return fd;
  }) as typeof fs.openSync;
  const fsyncSync = ((fd: number) => {
    journal.events.push(`fsync ${journal.opened.get(fd) ?? "?"}`);
    fs.fsyncSync(fd);
  }) as typeof fs.fsyncSync;
  const renameSync = ((from: nodeFs.PathLike, to: nodeFs.PathLike) => {
    journal.events.push(`rename ${String(from)} -> ${String(to)}`);
    fs.renameSync(from, to);
  }) as typeof fs.renameSync;
  return { ...fs, default: { ...fs, openSync, fsyncSync, renameSync }, openSync, fsyncSync, renameSync };
});

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "bridge-atomic-"));
  journal.events.length = 0;
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("writeFileAtomic durability", () => {
  it("fsyncs the temp file before renaming it over the target, then fsyncs the directory", async () => {
    const file = path.join(dir, "tokens.json");
    await writeFileAtomic(file, '{"refreshToken":"rt"}\n', { mode: 0o600 });
    const named = journal.events.map((event) => event.replaceAll(dir, "<dir>").replace(/tokens\.json\.\d+\.[0-9a-f]+\.tmp/g, "<temp>"));
    expect(named).toEqual(["fsync <dir>/<temp>", "rename <dir>/<temp> -> <dir>/tokens.json", "fsync <dir>"]);
    expect(await readFile(file, "utf8")).toBe('{"refreshToken":"rt"}\n');
  });
});
