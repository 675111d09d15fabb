/**
 * The probe file the events file's check creates beside a file not made yet: it must not stay behind when its close or
 * its removal fails (a network mount that reports a deferred error), and one left so is removed by a later check. The
 * state directory's own probe (a mkdir) takes a directory another process made meanwhile.
 */
import type * as nodeFs from "node:fs";
import { mkdir, readdir, symlink, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { STALE_TEMP_MS } from "../../shared/local/atomic.js";
import { eventsFileProblem, stateDirProblem } from "../../shared/cli/path-checks.js";
import { tempDirPerTest } from "../temp-dir.js";

const faults = vi.hoisted(() => ({
  /** Files whose close reports EIO after releasing the descriptor. */
  failCloseOf: undefined as RegExp | undefined,
  /** Files whose removal fails with EIO. */
  failUnlinkOf: undefined as RegExp | undefined,
  /** Directories another process makes just before this one's mkdir, which then fails with EEXIST. */
  madeMeanwhile: undefined as RegExp | undefined,
  opened: new Map<number, string>(),
}));

vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof nodeFs>();
  const openSync = ((file: nodeFs.PathLike, ...rest: unknown[]) => {
    const fd = (fs.openSync as (file: nodeFs.PathLike, ...rest: unknown[]) => number)(file, ...rest);
    faults.opened.set(fd, String(file));
    return fd;
  }) as typeof fs.openSync;
  const closeSync = ((fd: number) => {
    const file = faults.opened.get(fd) ?? "";
    fs.closeSync(fd);
    if (faults.failCloseOf?.test(file)) throw Object.assign(new Error(`EIO: i/o error, close`), { code: "EIO" });
  }) as typeof fs.closeSync;
  const unlinkSync = ((file: nodeFs.PathLike) => {
    if (faults.failUnlinkOf?.test(String(file))) throw Object.assign(new Error(`EIO: i/o error, unlink '${String(file)}'`), { code: "EIO" });
    fs.unlinkSync(file);
  }) as typeof fs.unlinkSync;
  const mkdirSync = ((dir: nodeFs.PathLike, options?: nodeFs.MakeDirectoryOptions) => {
    if (faults.madeMeanwhile?.test(String(dir))) {
      fs.mkdirSync(dir, options);
      throw Object.assign(new Error(`EEXIST: file already exists, mkdir '${String(dir)}'`), { code: "EEXIST" });
    }
    return fs.mkdirSync(dir, options);
  }) as typeof fs.mkdirSync;
  const mocked = { openSync, closeSync, unlinkSync, mkdirSync };
  return { ...fs, default: { ...fs, ...mocked }, ...mocked };
});

/** A probe's name beside `events.jsonl`. */
const PROBE = /events\.jsonl\.\d+\.[0-9a-f]+\.tmp$/;

let dir: string;
tempDirPerTest("probe-", (made) => (dir = made));
afterEach(() => {
  faults.failCloseOf = undefined;
  faults.failUnlinkOf = undefined;
  faults.madeMeanwhile = undefined;
});

describe("the events file's creation probe", () => {
  it("names the deferred error a failed close reports, leaving no probe behind", async () => {
    faults.failCloseOf = PROBE;
    const events = join(dir, "events.jsonl");
    expect(eventsFileProblem(events)).toBe(`cannot be created (EIO): ${events}`);
    expect(await readdir(dir)).toEqual([]);
  });

  it("goes on when the probe cannot be removed, and a later check removes it once stale", async () => {
    faults.failUnlinkOf = PROBE;
    const events = join(dir, "events.jsonl");
    expect(eventsFileProblem(events)).toBeUndefined();
    const [left = ""] = await readdir(dir);
    expect(left).toMatch(PROBE);
    faults.failUnlinkOf = undefined;
    // Young, it may be another check's in flight: left alone, even once the events file exists.
    await writeFile(events, "");
    expect(eventsFileProblem(events)).toBeUndefined();
    expect((await readdir(dir)).sort()).toEqual([left, "events.jsonl"].sort());
    const stale = new Date(Date.now() - STALE_TEMP_MS - 60_000);
    await utimes(join(dir, left), stale, stale);
    expect(eventsFileProblem(events)).toBeUndefined();
    expect(await readdir(dir)).toEqual(["events.jsonl"]);
  });

  it("removes a stale probe left beside a symbolic link's target, where that link's check makes its probe", async () => {
    await mkdir(join(dir, "data"));
    await mkdir(join(dir, "links"));
    const events = join(dir, "links", "events.jsonl");
    await symlink(join(dir, "data", "events.jsonl"), events);
    const left = join(dir, "data", "events.jsonl.4242.0123abcd.tmp");
    await writeFile(left, "");
    const stale = new Date(Date.now() - STALE_TEMP_MS - 60_000);
    await utimes(left, stale, stale);
    expect(eventsFileProblem(events)).toBeUndefined();
    expect(await readdir(join(dir, "data"))).toEqual([]);
  });

  it("leaves stale temp files of other names in the events file's directory alone (it may hold anything)", async () => {
    const events = join(dir, "events.jsonl");
    const others = ["other.jsonl.4242.0123abcd.tmp", "events.jsonl.cut-7.4242.0123abcd.new.tmp", "notes.tmp"];
    const stale = new Date(Date.now() - STALE_TEMP_MS - 60_000);
    for (const name of others) {
      await writeFile(join(dir, name), "");
      await utimes(join(dir, name), stale, stale);
    }
    expect(eventsFileProblem(events)).toBeUndefined();
    expect((await readdir(dir)).sort()).toEqual([...others].sort());
  });
});

describe("the state directory's creation probe", () => {
  it("takes a directory another process made meanwhile (mkdir answers EEXIST), leaving it in place", async () => {
    const state = join(dir, "state");
    faults.madeMeanwhile = /\/state$/;
    expect(stateDirProblem(state)).toBeUndefined();
    expect(await readdir(dir)).toEqual(["state"]);
  });
});
