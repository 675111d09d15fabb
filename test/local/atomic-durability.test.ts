/**
 * writeFileAtomic's durability order, seen through node:fs: the temp file's data is fsynced before the rename makes it
 * the target, and the directory is fsynced after, so a crash leaves the old file or the new one, never an empty one.
 * And createFileOnce, whose created file must count as created even when its temp file cannot be removed. And the
 * descriptors these and the snapshot segments' reads open, released whatever fails, and the cause a segment header
 * read keeps.
 */
import type * as nodeFs from "node:fs";
import { readdir, readFile, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { createFileOnce, fsyncDirSync, makeDirDurable, removeFilesDurably } from "../../shared/local/atomic.js";
import { bindStateDir, FileQuarantine, FileSnapshotStore, FileTokenStore, HardLinksUnsupportedError, TokenFileUnwritableError, writeFileAtomic } from "../../shared/local/index.js";
import { tempDirPerTest } from "../temp-dir.js";

/** fsync and rename calls in order, each naming the file its descriptor was opened on. */
const journal = vi.hoisted(() => ({
  events: [] as string[],
  opened: new Map<number, string>(),
  failUnlinkOf: undefined as RegExp | undefined,
  /** errno code a link fails with, taking no effect (EPERM where the file system makes no hard links). */
  failLink: undefined as string | undefined,
  /**
   * errno code a link fails with after it took effect: a network mount whose reply was lost answers the client's
   * retransmission of the same call with EEXIST, its own link found in place.
   */
  linkTookEffectThen: undefined as string | undefined,
  /** errno code the fsync of a directory fails with. */
  failDirFsync: undefined as string | undefined,
  /** errno code opening a directory fails with (Windows opens none). */
  failDirOpen: undefined as string | undefined,
  /** errno code opening files whose name matches `failFileOpen.of` fails with. */
  failFileOpen: undefined as { of: RegExp; code: string } | undefined,
  /** Descriptors opened and not closed yet. */
  openFds: new Set<number>(),
  /** Most bytes one writeSync call writes (a short write past it), as a pipe or a signal-interrupted write may. */
  maxWrite: Number.POSITIVE_INFINITY,
  /** errno code the writes and fsyncs of files whose name matches `failFile.of` fail with (a disk that fills up). */
  failFile: undefined as { of: RegExp; write?: string; fsync?: string } | undefined,
  /** Most bytes any one file may hold before its writes fail with ENOSPC (a disk nearly full). */
  roomPerFile: Number.POSITIVE_INFINITY,
  /** Bytes written so far to each open descriptor. */
  written: new Map<number, number>(),
  /** Each file fsync with the bytes written to its descriptor before it. */
  synced: [] as { file: string; bytes: number }[],
  /** Files whose close reports EIO, after releasing the descriptor (a write error NFS defers until close). */
  failCloseOf: undefined as RegExp | undefined,
  /** Files whose stat fails with EIO (a link count that cannot be told). */
  failStatOf: undefined as RegExp | undefined,
}));

function fault(code: string, call: string): Error {
  return Object.assign(new Error(`${code}: ${call} failed`), { code });
}

vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof nodeFs>();
  const openSync = ((file: nodeFs.PathLike, ...rest: unknown[]) => {
    const dirCode = journal.failDirOpen;
    if (dirCode !== undefined && fs.statSync(file, { throwIfNoEntry: false })?.isDirectory()) throw fault(dirCode, "open");
    if (journal.failFileOpen?.of.test(String(file))) throw fault(journal.failFileOpen.code, "open");
    const fd = (fs.openSync as (file: nodeFs.PathLike, ...rest: unknown[]) => number)(file, ...rest);
    journal.openFds.add(fd);
    journal.opened.set(fd, String(file));
    journal.written.set(fd, 0);
    return fd;
  }) as typeof fs.openSync;
  const fsyncSync = ((fd: number) => {
    journal.events.push(`fsync ${journal.opened.get(fd) ?? "?"}`);
    journal.synced.push({ file: journal.opened.get(fd) ?? "?", bytes: journal.written.get(fd) ?? 0 });
    const code = journal.failDirFsync;
    if (code !== undefined && fs.fstatSync(fd).isDirectory()) throw fault(code, "fsync");
    const file = journal.failFile;
    if (file?.fsync !== undefined && file.of.test(journal.opened.get(fd) ?? "")) throw fault(file.fsync, "fsync");
    fs.fsyncSync(fd);
  }) as typeof fs.fsyncSync;
  const writeSync = ((fd: number, buffer: Uint8Array, offset: number, length: number) => {
    const file = journal.failFile;
    if (file?.write !== undefined && file.of.test(journal.opened.get(fd) ?? "")) throw fault(file.write, "write");
    const bytes = Math.min(length, journal.maxWrite);
    const before = journal.written.get(fd) ?? 0;
    if (before + bytes > journal.roomPerFile) throw fault("ENOSPC", "write");
    journal.written.set(fd, before + bytes);
    return fs.writeSync(fd, buffer, offset, bytes);
  }) as typeof fs.writeSync;
  const renameSync = ((from: nodeFs.PathLike, to: nodeFs.PathLike) => {
    journal.events.push(`rename ${String(from)} -> ${String(to)}`);
    fs.renameSync(from, to);
  }) as typeof fs.renameSync;
  const linkSync = ((from: nodeFs.PathLike, to: nodeFs.PathLike) => {
    journal.events.push(`link ${String(from)} -> ${String(to)}`);
    if (journal.failLink !== undefined) throw Object.assign(new Error(`${journal.failLink}: link '${String(from)}' failed`), { code: journal.failLink });
    fs.linkSync(from, to);
    if (journal.linkTookEffectThen !== undefined) throw fault(journal.linkTookEffectThen, "link");
  }) as typeof fs.linkSync;
  const unlinkSync = ((file: nodeFs.PathLike) => {
    // Temp files are left out: their removal is cleanup, not the effect a caller asked for.
    if (!String(file).endsWith(".tmp")) journal.events.push(`unlink ${String(file)}`);
    if (journal.failUnlinkOf?.test(String(file))) throw Object.assign(new Error(`EIO: i/o error, unlink '${String(file)}'`), { code: "EIO" });
    fs.unlinkSync(file);
  }) as typeof fs.unlinkSync;
  const closeSync = ((fd: number) => {
    const file = journal.opened.get(fd) ?? "";
    fs.closeSync(fd);
    journal.openFds.delete(fd);
    if (journal.failCloseOf?.test(file)) throw fault("EIO", "close");
  }) as typeof fs.closeSync;
  const statSync = ((file: nodeFs.PathLike, ...rest: unknown[]) => {
    if (journal.failStatOf?.test(String(file))) throw fault("EIO", "stat");
    return (fs.statSync as (file: nodeFs.PathLike, ...rest: unknown[]) => unknown)(file, ...rest);
  }) as typeof fs.statSync;
  const mocked = { openSync, fsyncSync, writeSync, renameSync, linkSync, unlinkSync, closeSync, statSync };
  return { ...fs, default: { ...fs, ...mocked }, ...mocked };
});

let dir: string;
tempDirPerTest("bridge-atomic-", (made) => (dir = made));
beforeEach(() => {
  journal.events.length = 0;
  journal.failUnlinkOf = undefined;
  journal.failLink = undefined;
  journal.linkTookEffectThen = undefined;
  journal.failDirFsync = undefined;
  journal.failDirOpen = undefined;
  journal.failFileOpen = undefined;
  journal.openFds.clear();
  journal.maxWrite = Number.POSITIVE_INFINITY;
  journal.failFile = undefined;
  journal.roomPerFile = Number.POSITIVE_INFINITY;
  journal.written.clear();
  journal.synced.length = 0;
  journal.failCloseOf = undefined;
  journal.failStatOf = undefined;
});

describe("writeFileAtomic durability", () => {
  it("fails when the directory fsync fails with an I/O error: the rename may not be on disk, so nothing counts as saved", async () => {
    const file = path.join(dir, "tokens.json");
    journal.failDirFsync = "EIO";
    await expect(writeFileAtomic(file, '{"refreshToken":"rt"}\n', { mode: 0o600 })).rejects.toMatchObject({ code: "EIO" });
  });

  const DIR_FSYNC_UNSUPPORTED = ["EISDIR", "EPERM", "EACCES", "EINVAL", "ENOTSUP", "EOPNOTSUPP", "EBADF"];

  it.each(DIR_FSYNC_UNSUPPORTED)("goes on when a directory cannot be fsynced at all (%s: a platform or filesystem without it)", async (code) => {
    const file = path.join(dir, "tokens.json");
    journal.failDirFsync = code;
    await writeFileAtomic(file, '{"refreshToken":"rt"}\n', { mode: 0o600 });
    expect(await readFile(file, "utf8")).toBe('{"refreshToken":"rt"}\n');
  });

  it.each(DIR_FSYNC_UNSUPPORTED)("goes on when a directory cannot even be opened to fsync it (%s: Windows opens none)", async (code) => {
    const file = path.join(dir, "tokens.json");
    journal.failDirOpen = code;
    await writeFileAtomic(file, '{"refreshToken":"rt"}\n', { mode: 0o600 });
    expect(await readFile(file, "utf8")).toBe('{"refreshToken":"rt"}\n');
  });

  it("fails when opening the directory to fsync it fails with an I/O error: the rename may not be on disk", async () => {
    journal.failDirOpen = "EIO";
    await expect(writeFileAtomic(path.join(dir, "tokens.json"), '{"refreshToken":"rt"}\n', { mode: 0o600 })).rejects.toMatchObject({ code: "EIO" });
  });

  it("fsyncs the temp file before renaming it over the target, then fsyncs the directory", async () => {
    const file = path.join(dir, "tokens.json");
    await writeFileAtomic(file, '{"refreshToken":"rt"}\n', { mode: 0o600 });
    const named = journal.events.map((event) => event.replaceAll(dir, "<dir>").replace(/tokens\.json\.\d+\.[0-9a-f]+\.tmp/g, "<temp>"));
    expect(named).toEqual(["fsync <dir>/<temp>", "rename <dir>/<temp> -> <dir>/tokens.json", "fsync <dir>"]);
    expect(await readFile(file, "utf8")).toBe('{"refreshToken":"rt"}\n');
  });

  it("throws a write error the close reports (NFS defers them), leaving the target as it was and no temp file", async () => {
    const file = path.join(dir, "tokens.json");
    await writeFileAtomic(file, '{"refreshToken":"rt-1"}\n', { mode: 0o600 });
    journal.failCloseOf = /tokens\.json\.\d+\.[0-9a-f]+\.tmp$/;
    await expect(writeFileAtomic(file, '{"refreshToken":"rt-2"}\n', { mode: 0o600 })).rejects.toThrow("EIO: close failed");
    expect(await readdir(dir)).toEqual(["tokens.json"]);
    expect(await readFile(file, "utf8")).toBe('{"refreshToken":"rt-1"}\n');
  });

  it("throws the write's own error when the close after it fails too, leaving no temp file", async () => {
    const file = path.join(dir, "tokens.json");
    journal.failFile = { of: /tokens\.json\.\d+\.[0-9a-f]+\.tmp$/, write: "ENOSPC" };
    journal.failCloseOf = /tokens\.json\.\d+\.[0-9a-f]+\.tmp$/;
    await expect(writeFileAtomic(file, '{"refreshToken":"rt"}\n', { mode: 0o600 })).rejects.toThrow("ENOSPC: write failed");
    expect(await readdir(dir)).toEqual([]);
  });

  it("fsyncs a file after the last of its bytes is written, so the fsync covers all of them (written atomically or once)", async () => {
    const text = '{"refreshToken":"rt"}\n';
    await writeFileAtomic(path.join(dir, "tokens.json"), [Buffer.from(text.slice(0, 5)), Buffer.from(text.slice(5))]);
    await createFileOnce(path.join(dir, "lease"), text);
    const files = journal.synced.filter(({ file }) => file.endsWith(".tmp"));
    expect(files.map(({ bytes }) => bytes)).toEqual([text.length, text.length]);
  });

  it("writes the whole of the data when the system writes less than asked per call, never a truncated file", async () => {
    const file = path.join(dir, "tokens.json");
    const text = `${JSON.stringify({ refreshToken: "rt-".padEnd(200, "x") })}\n`;
    journal.maxWrite = 7;
    await writeFileAtomic(file, [Buffer.from(text.slice(0, 50)), Buffer.from(text.slice(50))], { mode: 0o600 });
    expect(await readFile(file, "utf8")).toBe(text);
  });
});

describe("descriptors", () => {
  // A descriptor left open per failed write or per segment read runs a long-lived loop out of them (EMFILE).
  it("releases the temp file's descriptor when its write fails", async () => {
    journal.failFile = { of: /tokens\.json\.\d+\.[0-9a-f]+\.tmp$/, write: "ENOSPC" };
    await expect(writeFileAtomic(path.join(dir, "tokens.json"), '{"refreshToken":"rt"}\n')).rejects.toThrow("ENOSPC: write failed");
    expect(journal.openFds.size).toBe(0);
  });

  it("releases the directory's descriptor when its fsync fails", () => {
    journal.failDirFsync = "EIO";
    expect(() => fsyncDirSync(dir)).toThrow("EIO: fsync failed");
    expect(journal.openFds.size).toBe(0);
  });

  it("releases the descriptors of the segments a store reads and compacts, and of one whose header is unreadable", async () => {
    const snapshot = (hash: string) => ({ key: "transaction:t1", hash, object: { id: "t1" }, updatedAt: "2024-01-01T00:00:00.000Z" }) as const;
    const stateDir = path.join(dir, "state");
    const store = new FileSnapshotStore(stateDir);
    await store.putMany([snapshot("h1"), { ...snapshot("h1"), key: "transaction:t2" }]);
    await store.putMany([snapshot("h2")]);
    await store.vacuum();
    const reopened = new FileSnapshotStore(stateDir);
    expect((await reopened.getMany(["transaction:t1"])).get("transaction:t1")?.hash).toBe("h2");
    expect((await reopened.scan({ limit: 10 })).snapshots).toHaveLength(2);
    expect(journal.openFds.size).toBe(0);
    await writeFile(path.join(stateDir, "snapshots", "seg-000000000009-deadbeef.log"), "not json\n");
    await expect(new FileSnapshotStore(stateDir).size()).rejects.toMatchObject({ name: "CorruptStateError" });
    expect(journal.openFds.size).toBe(0);
  });
});

describe("snapshot segment headers", () => {
  it("reports a segment header that cannot be read with the reading error as its cause (permissions, not damage, to fix)", async () => {
    const stateDir = path.join(dir, "state");
    await new FileSnapshotStore(stateDir).putMany([{ key: "transaction:t1", hash: "h1", object: { id: "t1" }, updatedAt: "2024-01-01T00:00:00.000Z" }]);
    journal.failFileOpen = { of: /seg-\d{12}-[0-9a-f]{8}\.log$/, code: "EACCES" };
    const failed = new FileSnapshotStore(stateDir).size();
    await expect(failed).rejects.toMatchObject({ name: "CorruptStateError", message: "Snapshot segment header is unreadable" });
    await expect(failed).rejects.toHaveProperty("cause", expect.objectContaining({ code: "EACCES" }));
  });
});

describe("fsyncDirSync", () => {
  /** A pattern matching `dir` itself and nothing in it. */
  const exactly = (name: string): RegExp => new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`);

  it("throws the fsync's error, not the close's, when both fail: the fsync's is the one that says the rename may not be durable", () => {
    journal.failDirFsync = "EIO";
    journal.failCloseOf = exactly(dir);
    expect(() => fsyncDirSync(dir)).toThrow("EIO: fsync failed");
  });

  it("throws a failed close after an fsync that succeeded", () => {
    journal.failCloseOf = exactly(dir);
    expect(() => fsyncDirSync(dir)).toThrow("EIO: close failed");
  });
});

describe("makeDirDurable", () => {
  it("fsyncs the parent of each directory it creates, so a file fsynced inside cannot vanish with its directory", () => {
    makeDirDurable(path.join(dir, "a", "b", "c"));
    expect(journal.events.map((event) => event.replaceAll(dir, "<dir>"))).toEqual(["fsync <dir>/a/b", "fsync <dir>/a", "fsync <dir>"]);
    journal.events.length = 0;
    makeDirDurable(path.join(dir, "a", "b", "c"));
    expect(journal.events).toEqual([]);
  });

  it("ends for a path through a directory it creates and leaves (x/../y/z, as a caller may pass an events file's directory)", () => {
    // mkdir makes x on the way, so the first directory made is no ancestor of the last: the walk up must stop anyway.
    makeDirDurable(`${dir}/x/../y/z`);
    expect(journal.events.map((event) => event.replaceAll(dir, "<dir>"))).toEqual(["fsync <dir>/y", "fsync <dir>"]);
  });

  it("a first token save into a new state directory makes the directory durable before the token file", async () => {
    // The first run's refresh token is spent at the provider once its successor is saved: losing the directory at a
    // power loss would send the spent one again, and the provider would revoke the family.
    await new FileTokenStore(path.join(dir, "state")).save({ refreshToken: "rt" });
    const named = journal.events.map((event) => event.replaceAll(dir, "<dir>").replace(/tokens\.json\.\d+\.[0-9a-f]+\.tmp/g, "<temp>"));
    expect(named[0]).toBe("fsync <dir>");
    expect(named.slice(1)).toEqual(["fsync <dir>/state/<temp>", "rename <dir>/state/<temp> -> <dir>/state/tokens.json", "fsync <dir>/state"]);
  });

  /** The journal with `dir` shortened and temp file names (`<name>.<pid>.<hex>.tmp`) as `<temp>`. */
  function namedEvents(): string[] {
    return journal.events.map((event) => event.replaceAll(dir, "<dir>").replace(/[^/ ]+\.\d+\.[0-9a-f]+\.tmp/g, "<temp>"));
  }

  it("a first quarantine put into a new state directory makes both directories durable before the record file", async () => {
    // A record whose directory entry is lost at a power loss is an item the engine skipped as quarantined, gone for good.
    const record = { id: "q-1", kind: "transaction", reason: "invalid", raw: "{}", at: "2024-01-01T00:00:00.000Z" } as const;
    expect(await new FileQuarantine(path.join(dir, "state")).put(record)).toBe(true);
    expect(namedEvents()).toEqual([
      "fsync <dir>/state",
      "fsync <dir>",
      "fsync <dir>/state/quarantine/<temp>",
      "rename <dir>/state/quarantine/<temp> -> <dir>/state/quarantine/q-1.json",
      "fsync <dir>/state/quarantine",
    ]);
  });

  it("a first putMany into a new state directory makes both directories durable before the segment", async () => {
    // A segment lost with its directory at a power loss is snapshots of events already published: they go out again,
    // and the engine may have acknowledged the items meanwhile.
    const snapshot = { key: "transaction:t1", hash: "h1", object: { id: "t1" }, updatedAt: "2024-01-01T00:00:00.000Z" } as const;
    await new FileSnapshotStore(path.join(dir, "state")).putMany([snapshot]);
    const segment = (await readdir(path.join(dir, "state", "snapshots")))[0];
    expect(namedEvents()).toEqual([
      "fsync <dir>/state",
      "fsync <dir>",
      "fsync <dir>/state/snapshots/<temp>",
      `rename <dir>/state/snapshots/<temp> -> <dir>/state/snapshots/${segment}`,
      "fsync <dir>/state/snapshots",
    ]);
  });

  it("a first bind of a new state directory makes the directory durable before its binding file", async () => {
    // A binding lost at a power loss, with the tokens saved after it durable, leaves a directory no one may use.
    await bindStateDir(path.join(dir, "state"), { baseUrl: "https://api.example.test", clientId: "c-1", tenant: "acme" });
    expect(namedEvents()).toEqual([
      "fsync <dir>",
      "fsync <dir>/state/<temp>",
      "rename <dir>/state/<temp> -> <dir>/state/binding.json",
      "fsync <dir>/state",
    ]);
  });
});

describe("removeFilesDurably", () => {
  it("fsyncs the directory after removing the file, so a crash cannot bring it back (a re-driven quarantine record)", async () => {
    const file = path.join(dir, "record.json");
    await writeFileAtomic(file, "{}");
    journal.events.length = 0;
    removeFilesDurably([file]);
    expect(journal.events.map((event) => event.replaceAll(dir, "<dir>"))).toEqual(["unlink <dir>/record.json", "fsync <dir>"]);
    expect(await readdir(dir)).toEqual([]);
  });

  it("fsyncs a directory once for all the files it removed there, after the last unlink (a batch of re-driven records)", async () => {
    const files = ["a.json", "b.json", "c.json"].map((name) => path.join(dir, name));
    for (const file of files) await writeFileAtomic(file, "{}");
    journal.events.length = 0;
    removeFilesDurably([...files, path.join(dir, "gone.json")]);
    expect(journal.events.map((event) => event.replaceAll(dir, "<dir>"))).toEqual([
      "unlink <dir>/a.json",
      "unlink <dir>/b.json",
      "unlink <dir>/c.json",
      "unlink <dir>/gone.json",
      "fsync <dir>",
    ]);
    expect(await readdir(dir)).toEqual([]);
  });

  it("fsyncs each directory that lost a file, not only the first (records of two directories in one batch)", async () => {
    const files = ["a/record.json", "b/record.json"].map((name) => path.join(dir, name));
    for (const file of files) {
      makeDirDurable(path.dirname(file));
      await writeFileAtomic(file, "{}");
    }
    journal.events.length = 0;
    removeFilesDurably(files);
    expect(journal.events.map((event) => event.replaceAll(dir, "<dir>"))).toEqual([
      "unlink <dir>/a/record.json",
      "unlink <dir>/b/record.json",
      "fsync <dir>/a",
      "fsync <dir>/b",
    ]);
  });

  it("still fsyncs the directory of the files it removed when a later one fails, and throws that failure", async () => {
    // The caller counts none of the batch as deleted; those already unlinked must not come back after a crash either
    // (one delete a call fsynced each before the batch).
    const files = ["a.json", "b.json", "c.json"].map((name) => path.join(dir, name));
    for (const file of files) await writeFileAtomic(file, "{}");
    journal.events.length = 0;
    journal.failUnlinkOf = /b\.json$/;
    expect(() => removeFilesDurably(files)).toThrow(/EIO: i\/o error, unlink '.*b\.json'/);
    expect(journal.events.map((event) => event.replaceAll(dir, "<dir>"))).toEqual(["unlink <dir>/a.json", "unlink <dir>/b.json", "fsync <dir>"]);
    expect((await readdir(dir)).sort()).toEqual(["b.json", "c.json"]);
  });

  it("throws the failed unlink, not a failed fsync after it", async () => {
    const files = ["a.json", "b.json"].map((name) => path.join(dir, name));
    for (const file of files) await writeFileAtomic(file, "{}");
    journal.failUnlinkOf = /b\.json$/;
    journal.failDirFsync = "EIO";
    expect(() => removeFilesDurably(files)).toThrow(/unlink '.*b\.json'/);
  });

  it("throws a failed directory fsync after unlinks that all succeeded: the removal may not be on disk, so it is not reported done", async () => {
    // Reported removed while a crash could bring it back, a quarantine record would be re-driven twice.
    const files = ["a.json", "b.json"].map((name) => path.join(dir, name));
    for (const file of files) await writeFileAtomic(file, "{}");
    journal.failDirFsync = "EIO";
    expect(() => removeFilesDurably(files)).toThrow(expect.objectContaining({ code: "EIO", message: "EIO: fsync failed" }));
  });

  it("throws a failure to remove other than a missing file, and goes on quietly once the file is gone", async () => {
    // Reported removed while it stands, a quarantine record would be re-driven again.
    const file = path.join(dir, "record.json");
    await writeFileAtomic(file, "{}");
    journal.failUnlinkOf = /record\.json$/;
    expect(() => removeFilesDurably([file])).toThrow(/EIO/);
    expect(await readdir(dir)).toEqual(["record.json"]);
    journal.failUnlinkOf = undefined;
    removeFilesDurably([file]);
    journal.events.length = 0;
    expect(() => removeFilesDurably([file])).not.toThrow();
    // Nothing removed, nothing to fsync.
    expect(journal.events.map((event) => event.replaceAll(dir, "<dir>"))).toEqual(["unlink <dir>/record.json"]);
    expect(await readdir(dir)).toEqual([]);
  });
});

describe("FileTokenStore.beforeRefresh on a disk that opens files but takes no data", () => {
  /** The refusal of a refresh where the probe's `call` fails with `code`. */
  async function refusal(call: "write" | "fsync", code: string): Promise<unknown> {
    const store = new FileTokenStore(dir);
    await store.save({ refreshToken: "rt" });
    journal.failFile = { of: /probe\.\d+\.[0-9a-f]+\.tmp$/, [call]: code };
    return store.beforeRefresh().catch((e: unknown) => e);
  }

  it.each([
    ["write", "ENOSPC"],
    ["fsync", "ENOSPC"],
    ["fsync", "EIO"],
  ] as const)("refuses the refresh when a token set's bytes fail to %s (%s), leaving no probe file and the tokens as they were", async (call, code) => {
    const error = await refusal(call, code);
    expect(error).toBeInstanceOf(TokenFileUnwritableError);
    expect(error).toMatchObject({ code });
    expect(await readdir(dir)).toEqual(["tokens.json"]);
    expect(await new FileTokenStore(dir).load()).toEqual({ refreshToken: "rt" });
  });

  it("refuses the refresh when the probe's close reports a deferred write error (NFS), leaving no probe file", async () => {
    const store = new FileTokenStore(dir);
    await store.save({ refreshToken: "rt" });
    journal.failCloseOf = /probe\.\d+\.[0-9a-f]+\.tmp$/;
    const error = await store.beforeRefresh().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TokenFileUnwritableError);
    expect(error).toMatchObject({ code: "EIO" });
    expect(await readdir(dir)).toEqual(["tokens.json"]);
  });

  it("keeps the system's error as the refusal's cause, for the path and call the code alone does not tell", async () => {
    const error = await refusal("fsync", "EIO");
    expect(error).toMatchObject({ name: "TokenFileUnwritableError", cause: expect.objectContaining({ code: "EIO" }) });
  });

  it("refuses the refresh on a disk with room for a small file but not for a token set of a few KiB (a JWT access token)", async () => {
    const store = new FileTokenStore(dir);
    await store.save({ refreshToken: "rt" });
    const tokens = { accessToken: `h.${"p".repeat(3000)}.s`, accessTokenExpiresAt: 1_767_225_600_000, refreshToken: "r".repeat(200), scope: "transactions:read cards:read" };
    journal.roomPerFile = JSON.stringify(tokens).length;
    // A probe no bigger than a few bytes would fit, and the refresh token would be spent for a successor that cannot be saved.
    await expect(store.beforeRefresh()).rejects.toMatchObject({ name: "TokenFileUnwritableError", code: "ENOSPC" });
    await expect(store.save(tokens)).rejects.toMatchObject({ code: "ENOSPC" });
    expect(await readdir(dir)).toEqual(["tokens.json"]);
    expect(await new FileTokenStore(dir).load()).toEqual({ refreshToken: "rt" });
  });
});

describe("file modes", () => {
  // Every file these write holds a token, a lease or cardholder data: readable by this user only unless a caller asks
  // otherwise (umask may take bits away, never add them).
  it("creates a file written without a mode 0600, atomically or once", async () => {
    await writeFileAtomic(path.join(dir, "atomic"), "x\n");
    await createFileOnce(path.join(dir, "once"), "x\n");
    for (const name of ["atomic", "once"]) expect((await stat(path.join(dir, name))).mode & 0o777).toBe(0o600);
  });
});

describe("createFileOnce", () => {
  it("reports a linked file as created even when its temp file cannot be removed, and makes the link durable", async () => {
    const file = path.join(dir, "lease");
    journal.failUnlinkOf = /\.new\.tmp$/;
    expect(await createFileOnce(file, "mine", { mode: 0o600 })).toBe(true);
    expect(await readFile(file, "utf8")).toBe("mine");
    const named = journal.events.map((event) => event.replaceAll(dir, "<dir>").replace(/lease\.\d+\.[0-9a-f]+\.new\.tmp/g, "<temp>"));
    expect(named.slice(-2)).toEqual(["link <dir>/<temp> -> <dir>/lease", "fsync <dir>"]);
    // The leftover carries the temp suffix, which every reader of the directory skips.
    expect((await readdir(dir)).filter((name) => name !== "lease")).toEqual([expect.stringMatching(/^lease\.\d+\.[0-9a-f]+\.new\.tmp$/)]);
  });

  it("throws a link failure other than an existing file or a missing hard link (EIO) as it is, leaving neither the file nor a temp file", async () => {
    // Read as a file found there, a lease no one holds would be reported as another's, and never taken.
    journal.failLink = "EIO";
    await expect(createFileOnce(path.join(dir, "lease"), "mine")).rejects.toThrow("EIO: link");
    expect(await readdir(dir)).toEqual([]);
  });

  it("names a file system that makes no hard links (EPERM on the link, after the temp file was written) as such, not as a failed write", async () => {
    journal.failLink = "EPERM";
    const failure = createFileOnce(path.join(dir, "lease"), "mine");
    await expect(failure).rejects.toBeInstanceOf(HardLinksUnsupportedError);
    await expect(failure).rejects.toMatchObject({ code: "EPERM", file: dir, cause: { code: "EPERM" } });
    await expect(failure).rejects.toThrow(`the file system of ${dir} makes no hard links (EPERM)`);
    expect(await readdir(dir)).toEqual([]);
  });

  it.each(["ENOTSUP", "EOPNOTSUPP", "ENOSYS"])("names a file system that makes no hard links by its other answers too (%s: SMB, FUSE mounts)", async (code) => {
    journal.failLink = code;
    await expect(createFileOnce(path.join(dir, "lease"), "mine")).rejects.toMatchObject({ name: "HardLinksUnsupportedError", code });
    expect(await readdir(dir)).toEqual([]);
  });

  it("fsyncs the data before the link gives it the name, and the directory once after: a crash leaves no file or the whole one", async () => {
    const file = path.join(dir, "lease");
    expect(await createFileOnce(file, "mine", { mode: 0o600 })).toBe(true);
    const named = journal.events.map((event) => event.replaceAll(dir, "<dir>").replace(/lease\.\d+\.[0-9a-f]+\.new\.tmp/g, "<temp>"));
    // The temp file's own name needs no fsync: it is removed, and the link names the same, fsynced, inode.
    expect(named).toEqual(["fsync <dir>/<temp>", "link <dir>/<temp> -> <dir>/lease", "fsync <dir>"]);
    expect(await readdir(dir)).toEqual(["lease"]);
  });

  it("throws a failed directory fsync after the link, leaving the file (as documented) and no temp file; a later call that finds it makes it durable", async () => {
    const file = path.join(dir, "lease");
    journal.failDirFsync = "EIO";
    await expect(createFileOnce(file, "mine")).rejects.toMatchObject({ code: "EIO" });
    expect(await readdir(dir)).toEqual(["lease"]);
    // Every call ends with the directory fsynced or throws, so a caller that goes on with a file found (a store id, a
    // recovery file of the same bytes) goes on with a durable one.
    journal.failDirFsync = undefined;
    journal.events.length = 0;
    expect(await createFileOnce(file, "another")).toBe(false);
    expect(journal.events.at(-1)).toBe(`fsync ${dir}`);
    expect(await readFile(file, "utf8")).toBe("mine");
  });

  it.each(["EEXIST", "EIO"])("reports its own link as created when the link took effect though it failed (%s, a retransmitted call on NFS)", async (code) => {
    const file = path.join(dir, "lease");
    journal.linkTookEffectThen = code;
    expect(await createFileOnce(file, "mine", { mode: 0o600 })).toBe(true);
    expect(await readFile(file, "utf8")).toBe("mine");
    expect(await readdir(dir)).toEqual(["lease"]);
  });

  it("reports an existing file as not created, leaving it as it was and no temp file behind", async () => {
    const file = path.join(dir, "lease");
    expect(await createFileOnce(file, "first")).toBe(true);
    expect(await createFileOnce(file, "second")).toBe(false);
    expect(await readFile(file, "utf8")).toBe("first");
    expect(await readdir(dir)).toEqual(["lease"]);
  });

  it("reports an existing file as not created when its temp file's link count cannot be told after the link failed", async () => {
    const file = path.join(dir, "lease");
    await writeFile(file, "another's");
    journal.failStatOf = /\.new\.tmp$/;
    expect(await createFileOnce(file, "mine")).toBe(false);
    expect(await readFile(file, "utf8")).toBe("another's");
  });
});

describe("FileQuarantine durability", () => {
  const record = { id: "q-1", kind: "transaction", reason: "invalid", raw: "{}", at: "2024-01-01T00:00:00.000Z" } as const;

  it("makes a record it finds already held durable before it reports it held: another process may have been killed before its directory fsync", async () => {
    // What a run killed between the rename of a record and the fsync of its directory leaves: the file, its name not on disk.
    const quarantineDir = path.join(dir, "quarantine");
    makeDirDurable(quarantineDir);
    await writeFileAtomic(path.join(quarantineDir, "q-1.json"), JSON.stringify(record) + "\n");
    journal.events.length = 0;
    const quarantine = new FileQuarantine(dir);
    expect(await quarantine.put(record)).toBe(false);
    expect(journal.events).toContain(`fsync ${quarantineDir}`);
    journal.events.length = 0;
    expect(await quarantine.put(record)).toBe(false);
    expect(journal.events).toEqual([]);
  });

  it("makes a record another process left after this store's first directory fsync durable too (a `run --once` between a loop's cycles)", async () => {
    const quarantineDir = path.join(dir, "quarantine");
    const quarantine = new FileQuarantine(dir);
    expect(await quarantine.put(record)).toBe(true);
    // Left by a run killed before its directory fsync, after this long-lived store last fsynced the directory.
    const other = { ...record, id: "q-2" };
    await writeFileAtomic(path.join(quarantineDir, "q-2.json"), JSON.stringify(other) + "\n");
    journal.events.length = 0;
    expect(await quarantine.put(other)).toBe(false);
    expect(journal.events).toContain(`fsync ${quarantineDir}`);
    // Records this store wrote or made durable cost nothing when found again (an invalid card is found on every walk).
    journal.events.length = 0;
    expect(await quarantine.put(other)).toBe(false);
    expect(await quarantine.put(record)).toBe(false);
    expect(journal.events).toEqual([]);
  });

  it("costs no directory fsync for a record it rewrote in another form (a PII mode switch) when it finds it again as it is", async () => {
    const quarantine = new FileQuarantine(dir);
    expect(await quarantine.put(record)).toBe(true);
    const masked = { ...record, reason: "invalid: [redacted]" };
    expect(await quarantine.put(masked)).toBe(false);
    journal.events.length = 0;
    expect(await quarantine.put(masked)).toBe(false);
    expect(journal.events).toEqual([]);
  });

  it("forgets the names of records whose delete failed: the file an unlink left is fsynced again when found, never taken as durable", async () => {
    const quarantineDir = path.join(dir, "quarantine");
    const quarantine = new FileQuarantine(dir);
    expect(await quarantine.put(record)).toBe(true);
    journal.failUnlinkOf = /q-1\.json$/;
    await expect(quarantine.deleteMany(["q-1"])).rejects.toMatchObject({ code: "EIO" });
    journal.failUnlinkOf = undefined;
    expect(quarantine.durableNamesKnown).toBe(0);
    journal.events.length = 0;
    expect(await quarantine.put(record)).toBe(false);
    expect(journal.events).toContain(`fsync ${quarantineDir}`);
  });

  it("fsyncs the quarantine directory once after deleting a batch of records, so a crash cannot bring a re-driven one back", async () => {
    const quarantineDir = path.join(dir, "quarantine");
    const quarantine = new FileQuarantine(dir);
    for (const id of ["q-1", "q-2"]) await quarantine.put({ ...record, id });
    journal.events.length = 0;
    await quarantine.deleteMany(["q-1", "q-2"]);
    expect(journal.events).toEqual([`unlink ${quarantineDir}/q-1.json`, `unlink ${quarantineDir}/q-2.json`, `fsync ${quarantineDir}`]);
    expect(await quarantine.size()).toBe(0);
  });
});

describe("FileTokenStore.load durability", () => {
  it("makes a token file another process wrote durable before its tokens are used: that process may have been killed before its directory fsync", async () => {
    // What a refresh killed between the rename of tokens.json and its directory fsync leaves: the rotated token set,
    // its name not on disk. Used without a save, a power loss could bring back the spent refresh token, whose next
    // use revokes the family.
    await writeFileAtomic(path.join(dir, "tokens.json"), '{"refreshToken":"rt-2"}\n', { mode: 0o600 });
    journal.events.length = 0;
    const store = new FileTokenStore(dir);
    expect(await store.load()).toEqual({ refreshToken: "rt-2" });
    expect(journal.events).toEqual([`fsync ${dir}`]);
    // Made durable once, the same file costs nothing when loaded again.
    journal.events.length = 0;
    expect(await store.load()).toEqual({ refreshToken: "rt-2" });
    expect(journal.events).toEqual([]);
  });

  it("costs no directory fsync for a token file it saved itself, and fsyncs again once another process replaced it", async () => {
    const store = new FileTokenStore(dir);
    await store.save({ refreshToken: "rt-1" });
    journal.events.length = 0;
    expect(await store.load()).toEqual({ refreshToken: "rt-1" });
    expect(journal.events).toEqual([]);
    // Another process refreshed (a `run --once` beside a loop) and was killed before its directory fsync.
    await writeFileAtomic(path.join(dir, "tokens.json"), '{"refreshToken":"rt-2"}\n', { mode: 0o600 });
    journal.events.length = 0;
    expect(await store.load()).toEqual({ refreshToken: "rt-2" });
    expect(journal.events).toEqual([`fsync ${dir}`]);
  });

  it("fails the load when that directory fsync fails with an I/O error: the tokens read may not survive a power loss", async () => {
    await writeFileAtomic(path.join(dir, "tokens.json"), '{"refreshToken":"rt-2"}\n', { mode: 0o600 });
    journal.failDirFsync = "EIO";
    await expect(new FileTokenStore(dir).load()).rejects.toMatchObject({ code: "EIO" });
  });
});
