/**
 * FileLock where the file system answers late or not at all: a contender that read an old generation before others
 * moved on, and a /proc that will not tell whether a lease's holder runs. Either way at most one process holds the
 * lease: two holders would refresh the token family at once, which revokes it. Faults are injected into node:fs and
 * node:fs/promises.
 */
import type * as nodeFs from "node:fs";
import type * as nodeFsPromises from "node:fs/promises";
import { existsSync, readFileSync, readlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { mkdir, readdir, symlink, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import path from "node:path";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { FileLock } from "../../shared/local/index.js";
import { tempDirPerTest } from "../temp-dir.js";

const faults = vi.hoisted(() => ({
  /** A pid whose /proc entry cannot be read (EACCES), as under a /proc mounted with hidepid. */
  hiddenPid: undefined as number | undefined,
  /** A pid whose /proc entry reads as a dead task (state X): exited, its entry not yet gone. */
  deadTaskPid: undefined as number | undefined,
  /** The next read of a file whose path ends with `suffix` returns only once `gate` resolves; `reached` says it waits. */
  slowRead: undefined as { suffix: string; gate: Promise<void>; reached: () => void } | undefined,
  /**
   * Reads (readFile and readFileSync) of a file whose path ends with `suffix` fail with `code` (EACCES: a lease file
   * another user wrote, 0600; EMFILE: this process out of file descriptors; ESTALE: an NFS handle gone stale).
   */
  failedRead: undefined as { suffix: string; code: string } | undefined,
  /** The next read (readFile) of a file whose path ends with this finds it removed (a foreign file deleted by hand). */
  vanishOnRead: undefined as string | undefined,
  /** Listings (readdir and readdirSync) of a directory whose path ends with `suffix` fail with `code`. */
  failedList: undefined as { suffix: string; code: string } | undefined,
  /**
   * Runs once just before a rename or link onto a path ending with `suffix`: what another process does while this one's
   * write is still on its way to the disk (the call itself is synchronous, so no other work of this process can come then).
   */
  beforeNaming: undefined as { suffix: string; run: () => void } | undefined,
  /**
   * Listings of a directory whose path ends with `suffix` fail with `code` once `skip` of them went through, either
   * kind (`sync`: readdirSync, the checks after a contender created its lease; else readdir): a listing that fails after
   * the ones before it answered (out of file descriptors midway).
   */
  laterList: undefined as { suffix: string; code: string; sync: boolean; skip: number } | undefined,
  /** Fsyncs of a directory fail with `code` once `skip` of them went through (EIO: the disk under the locks failing). */
  dirFsync: undefined as { code: string; skip: number } | undefined,
}));

/** Throws as the system would for a listing `laterList` fails (see there). */
function failLaterList(dir: unknown, sync: boolean): void {
  const later = faults.laterList;
  if (later === undefined || later.sync !== sync || !String(dir).endsWith(later.suffix)) return;
  if (later.skip-- > 0) return;
  failFor(later, dir);
}

/** Throws as the system would when `fault` names `file`. */
function failFor(fault: { suffix: string; code: string } | undefined, file: unknown): void {
  if (fault !== undefined && String(file).endsWith(fault.suffix)) {
    throw Object.assign(new Error(`${fault.code}: cannot read '${String(file)}'`), { code: fault.code });
  }
}

vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof nodeFs>();
  const readFileSync = ((file: nodeFs.PathOrFileDescriptor, ...rest: unknown[]) => {
    const failed = faults.failedRead;
    if (failed !== undefined && String(file).endsWith(failed.suffix)) {
      throw Object.assign(new Error(`${failed.code}: cannot read '${String(file)}'`), { code: failed.code });
    }
    if (faults.hiddenPid !== undefined && String(file) === `/proc/${faults.hiddenPid}/stat`) {
      throw Object.assign(new Error(`EACCES: permission denied, open '${String(file)}'`), { code: "EACCES" });
    }
    if (faults.deadTaskPid !== undefined && String(file) === `/proc/${faults.deadTaskPid}/stat`) {
      // The state is the field after the command name, which ends at the last ")".
      const stat = fs.readFileSync(file, "utf8");
      const state = stat.lastIndexOf(")") + 2;
      return `${stat.slice(0, state)}X${stat.slice(state + 1)}`;
    }
    return (fs.readFileSync as (file: nodeFs.PathOrFileDescriptor, ...rest: unknown[]) => unknown)(file, ...rest);
  }) as typeof fs.readFileSync;
  const readdirSync = ((dir: nodeFs.PathLike, ...rest: unknown[]) => {
    failFor(faults.failedList, dir);
    failLaterList(dir, true);
    return (fs.readdirSync as (dir: nodeFs.PathLike, ...rest: unknown[]) => unknown)(dir, ...rest);
  }) as typeof fs.readdirSync;
  /** Runs `beforeNaming` when `to` is its path (see there). */
  const beforeNaming = (to: nodeFs.PathLike): void => {
    const before = faults.beforeNaming;
    if (before !== undefined && String(to).endsWith(before.suffix)) {
      faults.beforeNaming = undefined;
      before.run();
    }
  };
  const renameSync = ((from: nodeFs.PathLike, to: nodeFs.PathLike) => {
    beforeNaming(to);
    fs.renameSync(from, to);
  }) as typeof fs.renameSync;
  const linkSync = ((from: nodeFs.PathLike, to: nodeFs.PathLike) => {
    beforeNaming(to);
    fs.linkSync(from, to);
  }) as typeof fs.linkSync;
  const fsyncSync = ((fd: number) => {
    const failing = faults.dirFsync;
    if (failing !== undefined && fs.fstatSync(fd).isDirectory() && failing.skip-- <= 0) {
      throw Object.assign(new Error(`${failing.code}: i/o error, fsync`), { code: failing.code });
    }
    fs.fsyncSync(fd);
  }) as typeof fs.fsyncSync;
  const mocked = { readFileSync, readdirSync, renameSync, linkSync, fsyncSync };
  return { ...fs, default: { ...fs, ...mocked }, ...mocked };
});

vi.mock("node:fs/promises", async (importOriginal) => {
  const fs = await importOriginal<typeof nodeFsPromises>();
  const readFile = (async (file: nodeFs.PathLike, ...rest: unknown[]) => {
    if (faults.vanishOnRead !== undefined && String(file).endsWith(faults.vanishOnRead)) {
      faults.vanishOnRead = undefined;
      await fs.unlink(file);
    }
    const failed = faults.failedRead;
    if (failed !== undefined && String(file).endsWith(failed.suffix)) {
      throw Object.assign(new Error(`${failed.code}: cannot read '${String(file)}'`), { code: failed.code });
    }
    const text = await (fs.readFile as (file: nodeFs.PathLike, ...rest: unknown[]) => Promise<unknown>)(file, ...rest);
    const slow = faults.slowRead;
    if (slow !== undefined && String(file).endsWith(slow.suffix)) {
      faults.slowRead = undefined;
      slow.reached();
      await slow.gate;
    }
    return text;
  }) as typeof fs.readFile;
  const readdir = (async (dir: nodeFs.PathLike, ...rest: unknown[]) => {
    failFor(faults.failedList, dir);
    failLaterList(dir, false);
    return (fs.readdir as (dir: nodeFs.PathLike, ...rest: unknown[]) => Promise<unknown>)(dir, ...rest);
  }) as typeof fs.readdir;
  return { ...fs, default: { ...fs, readFile, readdir }, readFile, readdir };
});

const onLinux = process.platform === "linux" && existsSync("/proc/self/stat");
const LOCK = "cycle";
const TTL = 30_000;

let dir: string;
tempDirPerTest("bridge-lock-faults-", (made) => (dir = made));

/** No fault injected any more. */
function clearFaults(): void {
  faults.hiddenPid = undefined;
  faults.deadTaskPid = undefined;
  faults.slowRead = undefined;
  faults.failedRead = undefined;
  faults.vanishOnRead = undefined;
  faults.failedList = undefined;
  faults.beforeNaming = undefined;
  faults.laterList = undefined;
  faults.dirFsync = undefined;
}

beforeEach(() => {
  clearFaults();
});

/** Makes the next read of the lease file `name` wait; resolves `reached` once a reader waits, and `finish` lets it on. */
function slowLeaseRead(name: string): { reached: Promise<void>; finish: () => void } {
  let finish!: () => void;
  let reached!: () => void;
  const gate = new Promise<void>((resolve) => (finish = resolve));
  const waiting = new Promise<void>((resolve) => (reached = resolve));
  faults.slowRead = { suffix: `${path.sep}${name}`, gate, reached };
  return { reached: waiting, finish };
}

describe("FileLock with a contender slower than the others", () => {
  it("does not let a contender that read a generation long superseded hold the lease beside its holder", async () => {
    const first = await new FileLock(dir).tryAcquire(LOCK, TTL);
    await first!.release();
    // The contender lists generation 0 (released) and reads it; its read answers only after two others went on.
    const slow = slowLeaseRead(`${LOCK}.lock`);
    const contender = new FileLock(dir).tryAcquire(LOCK, TTL);
    await slow.reached;
    const second = await new FileLock(dir).tryAcquire(LOCK, TTL); // generation 1
    await second!.release();
    const holder = await new FileLock(dir).tryAcquire(LOCK, TTL); // generation 2, generation 1 removed
    expect(holder).toBeDefined();

    slow.finish();

    // Generation 1 could be created again, but it is not the highest: the contender gives it up.
    expect(await contender).toBeUndefined();
    expect(await readdir(path.join(dir, "locks"))).toEqual([`${LOCK}.lock.2`]);
    expect(await holder!.renew(TTL)).toBe(true);
    expect(await new FileLock(dir).tryAcquire(LOCK, TTL)).toBeUndefined();
  });
});

/** A FileLock whose wall clock reads `at.now` (no monotonic clock): the test says when each process looks. */
function lockAt(at: { now: number }): FileLock {
  return new FileLock(dir, { clock: { now: () => at.now } });
}

describe("FileLock when a renewal lands as the lease runs out (a slow disk, a stalled holder)", () => {
  it("tells a holder whose renewal was written after a contender took the lease that it lost it", async () => {
    const holderTime = { now: 0 };
    const holder = await lockAt(holderTime).tryAcquire(LOCK, 1_000);
    const locks = path.join(dir, "locks");
    // The holder finds its lease held just before it expires; its write reaches the disk only after the lease ran out
    // and another process took the next generation, as a contender does (created whole, then the one below removed).
    holderTime.now = 999;
    faults.beforeNaming = {
      suffix: `${path.sep}${LOCK}.lock`,
      run: () => {
        const lease = { token: "other", pid: 1, expiresAt: Number.MAX_SAFE_INTEGER };
        writeFileSync(path.join(locks, `${LOCK}.lock.1`), JSON.stringify(lease), { flag: "wx" });
        unlinkSync(path.join(locks, `${LOCK}.lock`));
      },
    };

    // Its write put a generation below the other's back: it renewed nothing anybody reads as the lease.
    expect(await holder!.renew(1_000)).toBe(false);
    expect(faults.beforeNaming).toBeUndefined();
    expect(await holder!.confirm!(1_000)).toBe(false);
    expect(await lockAt({ now: 1_001 }).tryAcquire(LOCK, 1_000)).toBeUndefined();
  });

  it("does not let a contender that read the lease expired keep a new one when its holder renewed it meanwhile", async () => {
    const holderTime = { now: 0 };
    const holder = await lockAt(holderTime).tryAcquire(LOCK, 1_000);
    // The contender reads the lease once it ran out; its read answers only after the holder renewed it.
    const slow = slowLeaseRead(`${LOCK}.lock`);
    const contender = lockAt({ now: 1_001 }).tryAcquire(LOCK, 1_000);
    await slow.reached;
    holderTime.now = 999;
    expect(await holder!.renew(1_000)).toBe(true);

    slow.finish();

    // Both holding would let two processes refresh the token family at once.
    expect(await contender).toBeUndefined();
    expect(await holder!.confirm!(1_000)).toBe(true);
    expect(await readdir(path.join(dir, "locks"))).toEqual([`${LOCK}.lock`]);
  });
});

/**
 * Takes a released lease while `fault` makes the take fail with `code` once its lease file is created, then again
 * without the fault: left there, held by nobody, that file would refuse every attempt (this process's own included)
 * until it ran out.
 */
async function expectNoLeaseLeftByFailedTake(fault: () => void, code: RegExp): Promise<void> {
  const lock = new FileLock(dir);
  await (await lock.tryAcquire(LOCK, TTL))!.release();
  fault();
  await expect(lock.tryAcquire(LOCK, TTL)).rejects.toThrow(code);
  clearFaults();

  const next = await lock.tryAcquire(LOCK, TTL);
  expect(next).toBeDefined();
  expect(await next!.renew(TTL)).toBe(true);
}

/**
 * Has a holder whose lease lapsed take it again while `fault` makes that fail with `code` once the new generation is
 * created, then again without the fault: left there, its own new generation would read as another's lease above its
 * own, lost though nobody took it.
 */
async function expectNoGenerationLeftByFailedRetake(fault: () => void, code: RegExp): Promise<void> {
  const time = { now: 0 };
  const holder = await lockAt(time).tryAcquire(LOCK, 1_000);
  time.now = 2_000;
  fault();
  await expect(holder!.confirm!(1_000)).rejects.toThrow(code);
  clearFaults();

  expect(await holder!.confirm!(1_000)).toBe(true);
  expect(await lockAt(time).tryAcquire(LOCK, 1_000)).toBeUndefined();
}

describe("FileLock when a listing fails after a contender created its lease", () => {
  it("leaves no lease of its own behind when the check that it may keep it cannot list the locks directory", async () => {
    // The check after the creation (synchronous) fails: whether it may keep the lease is unknown.
    await expectNoLeaseLeftByFailedTake(() => (faults.laterList = { suffix: `${path.sep}locks`, code: "EMFILE", sync: true, skip: 0 }), /EMFILE/);
  });

  it("leaves no new generation behind when a holder taking its lapsed lease again cannot list the locks directory", async () => {
    // Its own check and the listing for the next number answer; the check after creating that generation fails.
    await expectNoGenerationLeftByFailedRetake(() => (faults.laterList = { suffix: `${path.sep}locks`, code: "EMFILE", sync: true, skip: 2 }), /EMFILE/);
  });

  it("keeps a lease it may keep when only the clean-up of older generations cannot list the locks directory", async () => {
    const lock = new FileLock(dir);
    await (await lock.tryAcquire(LOCK, TTL))!.release();
    // The first listing (finding the lease) answers; the clean-up's, after the checks, fails.
    faults.laterList = { suffix: `${path.sep}locks`, code: "EMFILE", sync: false, skip: 1 };
    const handle = await lock.tryAcquire(LOCK, TTL);
    faults.laterList = undefined;

    expect(handle).toBeDefined();
    expect(await handle!.renew(TTL)).toBe(true);
    expect(await new FileLock(dir).tryAcquire(LOCK, TTL)).toBeUndefined();
  });
});

describe("FileLock when the directory fsync after linking a lease fails (EIO)", () => {
  it("leaves no lease of its own behind when taking the lease fails there", async () => {
    // The lease's data is fsynced; the fsync after the link fails: whether the lease is on disk is unknown.
    await expectNoLeaseLeftByFailedTake(() => (faults.dirFsync = { code: "EIO", skip: 0 }), /EIO/);
  });

  // Unreadable, the lease found there may be another's all the same: only one that shows this take's token is removed.
  it.each([
    ["readable", undefined],
    ["unreadable (EACCES)", "EACCES"],
  ])("leaves another's lease alone when its own creation lost the race to it and then failed there (that lease %s)", async (_how, code) => {
    const lock = new FileLock(dir);
    await (await lock.tryAcquire(LOCK, TTL))!.release();
    const other = path.join(dir, "locks", `${LOCK}.lock.1`);
    // Another contender links its lease at the same generation first; this one's link then finds it (EEXIST).
    faults.beforeNaming = {
      suffix: `${path.sep}${LOCK}.lock.1`,
      run: () => writeFileSync(other, JSON.stringify({ token: "other", pid: 1, expiresAt: Number.MAX_SAFE_INTEGER }), { flag: "wx" }),
    };
    faults.dirFsync = { code: "EIO", skip: 0 };
    if (code !== undefined) faults.failedRead = { suffix: `${path.sep}${LOCK}.lock.1`, code };
    await expect(lock.tryAcquire(LOCK, TTL)).rejects.toThrow(/EIO/);
    expect(faults.beforeNaming).toBeUndefined();
    clearFaults();

    expect(JSON.parse(readFileSync(other, "utf8"))).toMatchObject({ token: "other" });
    expect(await lock.tryAcquire(LOCK, TTL)).toBeUndefined();
  });

  it("leaves no new generation behind when a holder taking its lapsed lease again fails there", async () => {
    await expectNoGenerationLeftByFailedRetake(() => (faults.dirFsync = { code: "EIO", skip: 0 }), /EIO/);
  });
});

describe("FileLock when a lease file cannot be read", () => {
  it("does not take over a live holder's lease whose file it may not read (EACCES, EIO): it says why instead", async () => {
    // The holder: this process, alive, its lease far from expiry (as a bridge run by root under sudo would hold it).
    const holder = await new FileLock(dir).tryAcquire(LOCK, TTL);
    expect(holder).toBeDefined();
    for (const code of ["EACCES", "EIO"]) {
      faults.failedRead = { suffix: `${path.sep}${LOCK}.lock`, code };
      await expect(new FileLock(dir).tryAcquire(LOCK, TTL)).rejects.toMatchObject({ name: "LeaseUnreadableError", code, file: path.join(dir, "locks", `${LOCK}.lock`) });
    }
    faults.failedRead = undefined;
    // Still the holder's alone: nothing was created beside it, and its renewal holds.
    expect(await readdir(path.join(dir, "locks"))).toEqual([`${LOCK}.lock`]);
    expect(await holder!.renew(TTL)).toBe(true);
    expect(await new FileLock(dir).tryAcquire(LOCK, TTL)).toBeUndefined();
  });

  // Out of descriptors (EMFILE, ENFILE), memory (ENOMEM), a stale NFS handle (ESTALE), a busy or failing device, a
  // path component swapped under us (ENOTDIR), a code nobody foresaw: none says the lease is free.
  it.each(["EMFILE", "ENFILE", "ENOMEM", "ESTALE", "EAGAIN", "EBUSY", "ENOTDIR", "EUNFORESEEN"])(
    "does not take over a live holder's lease it could not read now (%s): it says the read failed, not that the lease expired",
    async (code) => {
      const holder = await new FileLock(dir).tryAcquire(LOCK, TTL);
      expect(holder).toBeDefined();
      faults.failedRead = { suffix: `${path.sep}${LOCK}.lock`, code };

      const error = await new FileLock(dir).tryAcquire(LOCK, TTL).catch((e: unknown) => e);

      expect(error).toMatchObject({ name: "LeaseUnreadableError", code, file: path.join(dir, "locks", `${LOCK}.lock`) });
      expect((error as Error).message).toContain(`could not be read now (${code})`);
      expect((error as Error).message).not.toContain("readable by this user");
      faults.failedRead = undefined;
      expect(await readdir(path.join(dir, "locks"))).toEqual([`${LOCK}.lock`]);
      expect(await holder!.renew(TTL)).toBe(true);
    },
  );

  it("lets the holder find neither its lease lost nor it free when its own check cannot read the file now (EMFILE)", async () => {
    const holder = await new FileLock(dir).tryAcquire(LOCK, TTL);
    faults.failedRead = { suffix: `${path.sep}${LOCK}.lock`, code: "EMFILE" };

    // The check before a write (synchronous), the renewal and the release all fail rather than answer.
    await expect(holder!.confirm!(TTL)).rejects.toMatchObject({ name: "LeaseUnreadableError", code: "EMFILE" });
    await expect(holder!.renew(TTL)).rejects.toMatchObject({ name: "LeaseUnreadableError", code: "EMFILE" });
    await expect(holder!.release()).rejects.toMatchObject({ name: "LeaseUnreadableError", code: "EMFILE" });

    faults.failedRead = undefined;
    expect(await readdir(path.join(dir, "locks"))).toEqual([`${LOCK}.lock`]);
    expect(await holder!.confirm!(TTL)).toBe(true);
    expect(await new FileLock(dir).tryAcquire(LOCK, TTL)).toBeUndefined();
  });

  it("reads a lease file gone between the listing and the read (ENOENT) as no lease, leaving the choice to the next attempt", async () => {
    const first = await new FileLock(dir).tryAcquire(LOCK, TTL);
    await first!.release();
    faults.failedRead = { suffix: `${path.sep}${LOCK}.lock`, code: "ENOENT" };

    expect(await new FileLock(dir).tryAcquire(LOCK, TTL)).toBeUndefined();
    expect(await readdir(path.join(dir, "locks"))).toEqual([`${LOCK}.lock`]);
    faults.failedRead = undefined;
    expect(await new FileLock(dir).tryAcquire(LOCK, TTL)).toBeDefined();
  });

  it("leaves the choice to the next attempt when an entry above a free lease vanishes between the listing and its read", async () => {
    const first = await new FileLock(dir).tryAcquire(LOCK, TTL);
    await first!.release();
    const locks = path.join(dir, "locks");
    await writeFile(path.join(locks, `${LOCK}.lock.1`), "a note, no lease");
    faults.vanishOnRead = `${path.sep}${LOCK}.lock.1`;

    // The listing no longer says which generation is highest: the lease below is not taken on it.
    expect(await new FileLock(dir).tryAcquire(LOCK, TTL)).toBeUndefined();
    expect(faults.vanishOnRead).toBeUndefined();
    expect(await readdir(locks)).toEqual([`${LOCK}.lock`]);
    expect(await new FileLock(dir).tryAcquire(LOCK, TTL)).toBeDefined();
  });

  it("takes over a symbolic link loop at the lease's name (ELOOP), which no lease is (leases are hard links), and removes it", async () => {
    const locks = path.join(dir, "locks");
    await mkdir(locks, { recursive: true });
    await symlink(`${LOCK}.lock`, path.join(locks, `${LOCK}.lock`));

    const taken = await new FileLock(dir).tryAcquire(LOCK, TTL);

    expect(taken).toBeDefined();
    expect(await readdir(locks)).toEqual([`${LOCK}.lock.1`]);
    expect(await taken!.confirm!(TTL)).toBe(true);
  });

  it("takes over a dangling symbolic link at the lease's name (ENOENT through it), which would otherwise block for good", async () => {
    const locks = path.join(dir, "locks");
    await mkdir(locks, { recursive: true });
    await symlink("nowhere", path.join(locks, `${LOCK}.lock`));

    const taken = await new FileLock(dir).tryAcquire(LOCK, TTL);

    expect(taken).toBeDefined();
    expect(await readdir(locks)).toEqual([`${LOCK}.lock.1`]);
  });

  it("does not take over a lease file that is no symbolic link when its read answers ELOOP (a loop on the path, mid-swap)", async () => {
    const holder = await new FileLock(dir).tryAcquire(LOCK, TTL);
    faults.failedRead = { suffix: `${path.sep}${LOCK}.lock`, code: "ELOOP" };

    await expect(new FileLock(dir).tryAcquire(LOCK, TTL)).rejects.toMatchObject({ name: "LeaseUnreadableError", code: "ELOOP", denied: false });
    await expect(holder!.confirm!(TTL)).rejects.toMatchObject({ name: "LeaseUnreadableError", code: "ELOOP" });

    faults.failedRead = undefined;
    expect(await readdir(path.join(dir, "locks"))).toEqual([`${LOCK}.lock`]);
    expect(await holder!.confirm!(TTL)).toBe(true);
  });

  it("names a foreign file above a live holder's lease that cannot be read (EACCES): it may be another user's lease", async () => {
    const holder = await new FileLock(dir).tryAcquire(LOCK, TTL);
    const foreign = path.join(dir, "locks", `${LOCK}.lock.5`);
    await writeFile(foreign, "not a lease, as far as anyone here can tell");
    faults.failedRead = { suffix: `${path.sep}${LOCK}.lock.5`, code: "EACCES" };

    // Neither taken over nor found lost or held: the holder's check and a contender both say which file to look at.
    await expect(new FileLock(dir).tryAcquire(LOCK, TTL)).rejects.toMatchObject({ name: "LeaseUnreadableError", code: "EACCES", denied: true, file: foreign });
    await expect(holder!.confirm!(TTL)).rejects.toMatchObject({ name: "LeaseUnreadableError", code: "EACCES", file: foreign });
    await expect(holder!.renew(TTL)).rejects.toMatchObject({ name: "LeaseUnreadableError", code: "EACCES", file: foreign });

    faults.failedRead = undefined;
    expect(await holder!.confirm!(TTL)).toBe(true);
    expect(await new FileLock(dir).tryAcquire(LOCK, TTL)).toBeUndefined();
  });

  it("still takes a lease file holding no lease (a foreign tool's), which could otherwise block forever", async () => {
    await mkdir(path.join(dir, "locks"), { recursive: true });
    await writeFile(path.join(dir, "locks", `${LOCK}.lock`), "not a lease");
    expect(await new FileLock(dir).tryAcquire(LOCK, TTL)).toBeDefined();
  });
});

describe("FileLock when the locks directory cannot be listed", () => {
  // The listing tells which generation holds the lease: failing, it leaves the holder as unknown as a failed read.
  it.each(["EMFILE", "ENFILE", "EIO", "ESTALE"])("says the listing failed now (%s), taking nothing, and lets the holder neither lose nor free its lease", async (code) => {
    const holder = await new FileLock(dir).tryAcquire(LOCK, TTL);
    const locks = path.join(dir, "locks");
    faults.failedList = { suffix: `${path.sep}locks`, code };

    const error = await new FileLock(dir).tryAcquire(LOCK, TTL).catch((e: unknown) => e);

    expect(error).toMatchObject({ name: "LeaseUnreadableError", code, denied: false, source: "listing", file: locks });
    expect((error as Error).message).toContain(`the locks directory could not be listed now (${code})`);
    expect((error as { failure: string }).failure).toBe(`the locks directory ${locks} could not be listed`);
    // The holder's check before a write (synchronous listing) and its renewal fail the same way rather than answer.
    await expect(holder!.confirm!(TTL)).rejects.toMatchObject({ name: "LeaseUnreadableError", code, source: "listing" });
    await expect(holder!.renew(TTL)).rejects.toMatchObject({ name: "LeaseUnreadableError", code, source: "listing" });
    faults.failedList = undefined;
    expect(await readdir(locks)).toEqual([`${LOCK}.lock`]);
    expect(await holder!.confirm!(TTL)).toBe(true);
    expect(await new FileLock(dir).tryAcquire(LOCK, TTL)).toBeUndefined();
  });

  it("throws a locks directory gone when listed (ENOENT) as it is: no lease is there, so none is unreadable", async () => {
    faults.failedList = { suffix: `${path.sep}locks`, code: "ENOENT" };

    const error = await new FileLock(dir).tryAcquire(LOCK, TTL).catch((e: unknown) => e);

    expect(error).toMatchObject({ code: "ENOENT" });
    expect((error as Error).name).not.toBe("LeaseUnreadableError");
  });

  it("says a listing this user may not make (EACCES) is a permission problem, not one of now", async () => {
    await new FileLock(dir).tryAcquire(LOCK, TTL);
    faults.failedList = { suffix: `${path.sep}locks`, code: "EACCES" };

    const error = await new FileLock(dir).tryAcquire(LOCK, TTL).catch((e: unknown) => e);

    expect(error).toMatchObject({ name: "LeaseUnreadableError", code: "EACCES", denied: true, source: "listing" });
    expect((error as Error).message).toContain("the locks directory cannot be listed (EACCES)");
    expect((error as Error).message).toContain("make it readable by this user");
  });
});

/** Writes an unexpired lease of `pid`, started at `startTime`, on this host and in this boot and pid namespace. */
async function writeLeaseOfLocalHolder(pid: number, startTime: string | undefined): Promise<void> {
  const boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  const holder = { host: hostname(), boot, pidNamespace: readlinkSync("/proc/self/ns/pid"), startTime };
  await mkdir(path.join(dir, "locks"), { recursive: true });
  await writeFile(path.join(dir, "locks", `${LOCK}.lock`), JSON.stringify({ token: "held-elsewhere", pid, expiresAt: Date.now() + 60_000, holder }));
}

describe.runIf(onLinux)("FileLock when /proc will not tell whether a holder runs", () => {
  it("leaves the lease in force until it expires when its holder's /proc entry cannot be read (EACCES, as under hidepid)", async () => {
    // A holder on this host and in this pid namespace, whose process another user runs.
    const pid = process.ppid;
    await writeLeaseOfLocalHolder(pid, "12345");
    faults.hiddenPid = pid;

    expect(await new FileLock(dir).tryAcquire(LOCK, TTL)).toBeUndefined();
    // Readable, the entry shows a process started at another time: the holder has exited, its lease is taken over.
    faults.hiddenPid = undefined;
    expect(await new FileLock(dir).tryAcquire(LOCK, TTL)).toBeDefined();
  });
});

describe.runIf(onLinux)("FileLock when /proc shows a holder's task dead (state X, seen only in the instant before its entry goes)", () => {
  it("takes over the lease of a holder whose /proc entry shows a dead task (state X): it has exited", async () => {
    // A live holder on this host and in this pid namespace, with its own start time: its lease holds.
    const pid = process.ppid;
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    await writeLeaseOfLocalHolder(pid, stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]);
    expect(await new FileLock(dir).tryAcquire(LOCK, TTL)).toBeUndefined();

    faults.deadTaskPid = pid;
    expect(await new FileLock(dir).tryAcquire(LOCK, TTL)).toBeDefined();
  });
});
