/**
 * Crash-safe file writes: write a temp file, fsync it, rename over the target, fsync the directory.
 * A crash at any point leaves either the old file or the new one, never a torn one.
 *
 * The syscalls are synchronous on purpose. Each `fs/promises` call is a round trip through libuv's thread pool,
 * measured at 50-90 us of CPU per call on a small VM against ~6 us inline, and one atomic write is ~8 calls.
 * The caller awaits durability before doing anything else anyway, so the event loop loses nothing it needed.
 */
import { randomBytes } from "node:crypto";
import { closeSync, fstatSync, fsyncSync, linkSync, mkdirSync, openSync, readdirSync, renameSync, statSync, unlinkSync, writeSync, type Stats } from "node:fs";
import path from "node:path";
import { HardLinksUnsupportedError } from "./errors.js";

/** A file's device and inode: which file a path names now (a file replaced or created again at it is another). */
export interface FileIdentity {
  readonly dev: number | bigint;
  readonly ino: number | bigint;
}

/** Suffix of temp files; anything ending with it is a leftover of a crash and safe to delete. */
export const TEMP_SUFFIX = ".tmp";

/**
 * Age from which a temp file is a leftover: a writer renames (or links) its temp file into place milliseconds after
 * creating it, so only a process killed in between leaves one behind.
 */
export const STALE_TEMP_MS = 10 * 60_000;

/**
 * Names this module gives temp files: `<file>.<pid>.<8 hex>[.new].tmp`, possibly nested (left by createFileOnce before
 * it wrote its temp file in place rather than through writeFileAtomic).
 */
const TEMP_NAME = /\.\d+\.[0-9a-f]+(?:\.new)?\.tmp$/;

/**
 * A new temp file's name for `file` (beside it, so a rename lands in the same directory), in the form {@link TEMP_NAME}
 * matches: a crash's leftover is swept as {@link removeStaleTempsSync} says. `.new` marks createFileOnce's.
 */
export function tempNameFor(file: string, options: { readonly new?: boolean } = {}): string {
  return `${file}.${process.pid}.${randomBytes(4).toString("hex")}${options.new === true ? ".new" : ""}${TEMP_SUFFIX}`;
}

/** The name of the file a temp file of this module was written for (nested temp names unwrapped), or undefined. */
function tempTarget(name: string): string | undefined {
  let target = name;
  while (TEMP_NAME.test(target)) target = target.replace(TEMP_NAME, "");
  return target === name ? undefined : target;
}

/** Options of {@link staleTempSweep}. */
export interface StaleTempSweepOptions {
  /** Age from which a temp file is a leftover. @default {@link STALE_TEMP_MS} */
  readonly olderThanMs?: number;
  /**
   * Which temp files are the caller's, by the name of the file each was written for: for a directory shared with files
   * that are not (the events file's). @default every temp file of this module
   */
  readonly of?: (target: string) => boolean;
}

/**
 * Deletes the temp files of this module in `dir` (not below it) that are older than `olderThanMs` and written for a
 * file `of` accepts: leftovers of writes a crash cut short. They are never read, but they pile up, and one may hold
 * what its write held (a refresh token, a quarantined body). Aged by modification time against the system's time,
 * which stamped it. A missing directory, or a file that vanishes or cannot be removed, is left alone: the next sweep
 * tries again. Synchronous, as this module's other file calls: a store's first use ({@link staleTempSweep}) and the
 * events file's check, which sweeps the probes of that file it could not remove (see shared/cli/path-checks.ts).
 */
export function removeStaleTempsSync(dir: string, options: StaleTempSweepOptions = {}): void {
  const { olderThanMs = STALE_TEMP_MS, of = () => true } = options;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) removeIfStaleTemp(dir, name, olderThanMs, of);
}

/** Deletes `dir`/`name` if it is a temp file of this module older than `olderThanMs`, written for a file `of` accepts. */
function removeIfStaleTemp(dir: string, name: string, olderThanMs: number, of: (target: string) => boolean): void {
  const target = tempTarget(name);
  if (target === undefined || !of(target)) return;
  const file = path.join(dir, name);
  let info: Stats;
  try {
    info = statSync(file);
  } catch {
    return;
  }
  if (info.isFile() && Date.now() - info.mtimeMs > olderThanMs) unlinkQuietly(file);
}

/**
 * A sweep of `dir`'s stale temp files (see removeStaleTempsSync) for a store to call before it first uses the directory:
 * the first call sweeps, later ones return at once.
 *
 * @example
 * ```ts
 * readonly #sweep = staleTempSweep(".state/quarantine");
 * async list() { await this.#sweep(); ... }
 * // In a directory shared with other files: only the temp files written for names of its own.
 * staleTempSweep("/var/log/bridge", { of: (target) => target.startsWith("events.jsonl.cut-") });
 * ```
 */
export function staleTempSweep(dir: string, options: StaleTempSweepOptions = {}): () => Promise<void> {
  let swept = false;
  return async () => {
    if (swept) return;
    swept = true;
    removeStaleTempsSync(dir, options);
  };
}

/** Codes of a platform or filesystem that cannot open or fsync a directory at all (Windows, some network mounts). */
const DIR_FSYNC_UNSUPPORTED = new Set(["EISDIR", "EPERM", "EACCES", "EINVAL", "ENOTSUP", "EOPNOTSUPP", "EBADF"]);

/**
 * What a path that is not a regular file is, for the message that refuses it (the settings check, the events file).
 *
 * @example
 * fileKindOf(statSync("/dev/null")); // "a character device (such as /dev/null or a terminal)"
 */
export function fileKindOf(stats: Stats): string {
  if (stats.isDirectory()) return "a directory";
  if (stats.isCharacterDevice()) return "a character device (such as /dev/null or a terminal)";
  if (stats.isBlockDevice()) return "a block device";
  if (stats.isFIFO()) return "a pipe";
  if (stats.isSocket()) return "a socket";
  return "not a regular file";
}

/**
 * Creates `dir` and its missing parents (owner-only) and fsyncs the parent of each directory it made. A file fsynced
 * in a directory whose own entry never reached the disk goes with it at a power loss: a first run's token set, whose
 * predecessor the provider has already spent, and with it the token family.
 */
export function makeDirDurable(dir: string): void {
  const first = mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (first === undefined) return;
  // Up to the parent of the first directory made, which existed: a path through a directory it leaves (`x/../y`)
  // makes `x` first, no ancestor of `y`, so the walk stops at that parent rather than at `x`; at the root in any case.
  const topParent = path.dirname(path.resolve(first));
  for (let made = path.resolve(dir); ; made = path.dirname(made)) {
    const parent = path.dirname(made);
    fsyncDirSync(parent);
    if (parent === topParent || parent === made) return;
  }
}

/**
 * Fsyncs a directory so a rename in it is durable. Where directory fsync does not exist, the rename is still atomic
 * and the write goes on; any other failure (EIO) throws: the rename may not be on disk, and a token save reported
 * durable then could bring a spent refresh token back after a power loss. A failed fsync is thrown over a failed close
 * after it (as writeThenClose does): it is the one that says durability was not reached.
 */
export function fsyncDirSync(dir: string): void {
  const fd = unlessDirFsyncUnsupported(() => openSync(dir, "r"));
  if (fd === undefined) return;
  writeThenClose(fd, () => unlessDirFsyncUnsupported(() => fsyncSync(fd)));
}

/** Runs `call`, and returns undefined instead where it fails as a directory that cannot be fsynced at all does. */
function unlessDirFsyncUnsupported<T>(call: () => T): T | undefined {
  try {
    return call();
  } catch (err) {
    if (!DIR_FSYNC_UNSUPPORTED.has((err as NodeJS.ErrnoException).code ?? "")) throw err;
    return undefined;
  }
}

/** Writes all of `chunk` at the descriptor's position (writeSync may write less than asked). */
export function writeAll(fd: number, chunk: Uint8Array): void {
  for (let done = 0; done < chunk.length; ) done += writeSync(fd, chunk, done, chunk.length - done);
}

/**
 * Proves that a write of `bytes` can land in `dir` now (a mounted, writable file system with that much room): writes
 * and fsyncs a temp file of that size, then removes it. For a store to check before a step that cannot be undone
 * relies on its next write succeeding; a crash in between leaves a temp file the sweep removes.
 *
 * @example
 * ```ts
 * probeWrite(".state", 16_384); // throws ENOSPC, EROFS, ENOENT, ... as the write would
 * ```
 */
export function probeWrite(dir: string, bytes: number): void {
  const temp = tempNameFor(path.join(dir, "probe"));
  const fd = openSync(temp, "wx", 0o600);
  try {
    writeThenClose(fd, () => {
      writeAll(fd, Buffer.alloc(bytes));
      fsyncSync(fd);
    });
  } finally {
    unlinkQuietly(temp);
  }
}

/**
 * Runs `write` on the open `fd`, then closes it, and returns what `write` returned. A close may report a write error
 * deferred until then (NFS), which is thrown as the write's own would be; after a failed write, a failed close is left
 * unsaid: the write's error says what went wrong. The descriptor is released either way.
 */
function writeThenClose<T>(fd: number, write: () => T): T {
  let written: T;
  try {
    written = write();
  } catch (err) {
    try {
      closeSync(fd);
    } catch {
      // Released all the same; the write's error is the one to report.
    }
    throw err;
  }
  closeSync(fd);
  return written;
}

/** Deletes `file` if it is there: for temp files and superseded files, whose absence is all that matters. */
export function unlinkQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // Already gone, or never created: nothing to clean up.
  }
}

/**
 * Deletes those of `files` that are there, durably: each directory that lost one is fsynced once, after the last
 * unlink, so a crash cannot bring them back and a batch of files costs one fsync per directory rather than one each.
 * A failed unlink stops the batch and is thrown, after the directories of the files removed before it are fsynced
 * (their removal is as durable as when each was fsynced on its own; a failed fsync then does not hide that failure).
 *
 * @example
 * ```ts
 * removeFilesDurably([".state/quarantine/0b7c1c36.json", ".state/quarantine/5e0f9a21.json"]);
 * ```
 */
export function removeFilesDurably(files: readonly string[]): void {
  const dirs = new Set<string>();
  let failed: { readonly error: unknown } | undefined;
  for (const file of files) {
    try {
      unlinkSync(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") continue;
      failed = { error: err };
      break;
    }
    dirs.add(path.dirname(file));
  }
  for (const dir of dirs) {
    try {
      fsyncDirSync(dir);
    } catch (err) {
      if (failed === undefined) throw err;
    }
  }
  if (failed !== undefined) throw failed.error;
}

/**
 * What a file is written from: text (UTF-8), bytes, or chunks of bytes, each written before the next is taken, so an
 * iterable may hand out one buffer refilled (a large file written in bounded memory).
 */
export type FileData = string | Uint8Array | Iterable<Uint8Array>;

/**
 * Atomically replaces `file` with `data`. Resolves to the identity of the file written (taken from its descriptor, so
 * not one another process renamed into place meanwhile), whose name is durable once this resolves.
 *
 * @example
 * ```ts
 * await writeFileAtomic(".state/tokens.json", JSON.stringify(tokens), { mode: 0o600 });
 * ```
 */
export async function writeFileAtomic(file: string, data: FileData, options: { mode?: number } = {}): Promise<FileIdentity> {
  return writeFileAtomicSync(file, data, options);
}

/** {@link writeFileAtomic} for a synchronous caller (the events file's append: see jsonl-publisher.ts). */
export function writeFileAtomicSync(file: string, data: FileData, options: { mode?: number } = {}): FileIdentity {
  const temp = tempNameFor(file);
  let identity: FileIdentity;
  try {
    identity = writeFsyncedSync(temp, data, options.mode);
    renameSync(temp, file);
  } catch (err) {
    unlinkQuietly(temp);
    throw err;
  }
  fsyncDirSync(path.dirname(file));
  return identity;
}

/**
 * Writes `data` to `file` (created with `mode`, or truncated), fsyncs and closes it; returns its identity. This
 * user's only by default: what the bridge writes holds tokens, leases or cardholder data.
 */
function writeFsyncedSync(file: string, data: FileData, mode = 0o600): FileIdentity {
  const fd = openSync(file, "w", mode);
  return writeThenClose(fd, () => {
    // Chunks go one after the other from the descriptor's current position.
    if (typeof data === "string") writeAll(fd, Buffer.from(data, "utf8"));
    else if (data instanceof Uint8Array) writeAll(fd, data);
    else for (const chunk of data) writeAll(fd, chunk);
    fsyncSync(fd);
    const { dev, ino } = fstatSync(fd, { bigint: true });
    return { dev, ino };
  });
}

/**
 * Creates `file` holding `data` unless it exists: written whole to a temp file, then linked into place, which fails
 * rather than replaces when another process created it first. Returns true when this call created it; either way the
 * file's name is durable on return. Throws when the directory's fsync after the link fails (EIO): the file may stand
 * then, created by this call or not (a file lock removes a lease of its own left so).
 *
 * @example
 * ```ts
 * if (!(await createFileOnce(".state/snapshots/store-id", id))) id = readFileSync(".state/snapshots/store-id", "utf8");
 * ```
 */
export async function createFileOnce(file: string, data: string, options: { mode?: number } = {}): Promise<boolean> {
  return createFileOnceSync(file, data, options);
}

/** {@link createFileOnce} for a synchronous caller (the events file's append: see jsonl-publisher.ts). */
export function createFileOnceSync(file: string, data: FileData, options: { mode?: number } = {}): boolean {
  const temp = tempNameFor(file, { new: true });
  let created: boolean;
  try {
    // Written and fsynced before the link names it, so a crash leaves no file or the whole one. The temp file's own name
    // needs no directory fsync (nor a rename into place): nothing reads it, and it is removed below.
    writeFsyncedSync(temp, data, options.mode);
    created = linkUnlessExists(temp, file);
  } finally {
    // Once linked the file is there, whatever follows: a throw would have a caller (a file lock) believe it holds
    // nothing while its file stands. A temp file that cannot be removed stays a harmless leftover (TEMP_SUFFIX).
    unlinkQuietly(temp);
  }
  // Makes the link (or the file found there, which another process may have left before its fsync) and the removal
  // durable: the one directory fsync this call needs.
  fsyncDirSync(path.dirname(file));
  return created;
}

/**
 * What link(2) answers, for a file of this call's own just written in the same directory, where the file system makes
 * no hard links: EPERM (vfat, exFAT), ENOTSUP or EOPNOTSUPP (SMB, some FUSE mounts), ENOSYS (a FUSE mount without the
 * call). Writes there work, so none of these is a full or read-only disk.
 */
const NO_HARD_LINKS: ReadonlySet<string> = new Set(["EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS"]);

/**
 * Links `existing`, a file of this call's own, as `file`: true when it did, false when `file` exists already (any
 * other failure thrown; a file system that makes no hard links as HardLinksUnsupportedError). A failed link whose
 * `existing` gained a second name took effect all the same: on NFS a retransmitted call whose first reply was lost is
 * answered EEXIST (or another error) with its own link in place, which read as another's would be left held by nobody
 * (open(2) gives this check for lock files on NFS).
 */
function linkUnlessExists(existing: string, file: string): boolean {
  try {
    linkSync(existing, file);
    return true;
  } catch (err) {
    if (linkCountOf(existing) > 1) return true;
    const code = (err as NodeJS.ErrnoException).code ?? "";
    if (NO_HARD_LINKS.has(code)) throw new HardLinksUnsupportedError(path.dirname(file), code, { cause: err });
    if (code !== "EEXIST") throw err;
    return false;
  }
}

/** How many names `file` has; 0 when it cannot be told. */
function linkCountOf(file: string): number {
  try {
    return statSync(file).nlink;
  } catch {
    return 0;
  }
}

/** Size of a scratch buffer's first allocation (not touched until written, so it costs no memory unused). */
const FIRST_SCRATCH_BYTES = 2 * 1024 * 1024;

/**
 * A buffer reused across writes of one writer that never overlaps its own writes: encoding each page into a fresh
 * buffer leaves ~1 MB of external memory per page alive until the next full GC (it outlives the fsync, so it is
 * promoted), which shows up as peak RSS.
 *
 * @example
 * ```ts
 * const scratch = new ScratchBuffer();
 * const buffer = scratch.take(text.length * 3);
 * ```
 */
export class ScratchBuffer {
  private buffer: Buffer = Buffer.alloc(0);

  /**
   * A buffer of at least `size` bytes; its contents are undefined and it is valid until the next call. The first one
   * holds a page of events or snapshots with room to spare (their bound counts 3 bytes a character), so the buffer
   * does not grow again in the middle of a drain, after V8 optimised its callers without the growing branch.
   */
  take(size: number): Buffer {
    if (this.buffer.length < size) this.buffer = Buffer.allocUnsafeSlow(Math.max(size, this.buffer.length * 2, FIRST_SCRATCH_BYTES));
    return this.buffer;
  }
}
