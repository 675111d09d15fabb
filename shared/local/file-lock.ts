/**
 * Cross-process lock on the local filesystem. Each take-over of a name creates a new generation file
 * (`<name>.lock`, then `<name>.lock.1`, `<name>.lock.2`, ...) holding an owner token and an expiry; the highest
 * generation holding a lease is the lease. Creation is atomic and exclusive (hard link of a complete temp file), so a
 * reader never sees a half-written lease, and no valid lease is ever moved or deleted by a contender, unless its
 * holder has provably exited (see {@link holderHasExited}).
 */
import { randomUUID } from "node:crypto";
import { lstatSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { lstat, readdir, readFile, unlink } from "node:fs/promises";
import { hostname } from "node:os";
import path from "node:path";
import type { Clock, Lock, LockHandle } from "../bridge/ports.js";
import { systemClock } from "../clock.js";
import { createFileOnce, makeDirDurable, staleTempSweep, unlinkQuietly, writeFileAtomic } from "./atomic.js";
import { LeaseUnreadableError, type LeaseSource } from "./errors.js";
import { STATE_DIRS } from "./layout.js";

interface Lease {
  readonly token: string;
  readonly pid: number;
  readonly expiresAt: number;
  /** Who holds it, where that can be told (Linux): lets a contender see that the holder has exited. */
  readonly holder?: ProcessIdentity;
  /** The expiry again on the boot's monotonic clock, where there is one (see {@link steadyBoot}); 0 once released. */
  readonly steady?: { readonly boot: string; readonly expiresAt: number };
}

/**
 * A process as the kernel tells it apart: host, boot, pid namespace and start time (a reused pid has another start
 * time). The boot id (random per boot of a kernel) tells two machines apart where the host name and pid namespace do
 * not: cloned VMs both named "localhost", containers named alike, every machine's first pid namespace (pid:[4026531836]).
 */
interface ProcessIdentity {
  readonly host: string;
  readonly boot: string;
  readonly pidNamespace: string;
  readonly startTime: string;
}

/** This boot's id (Linux), shared by every container of the machine; undefined where /proc does not tell it. */
const bootId: string | undefined = (() => {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim() || undefined;
  } catch {
    return undefined;
  }
})();

/**
 * State (field 3: `R`, `S`, `Z` for a zombie, ...) and start time in clock ticks since boot (field 22) of `pid`, from
 * /proc/<pid>/stat; the command name before them may hold spaces.
 */
function statOf(pid: number): { state: string | undefined; startTime: string | undefined } {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { state: fields[0], startTime: fields[19] };
}

/** This process's identity, or undefined where /proc does not tell it (not Linux). */
const ownIdentity: ProcessIdentity | undefined = (() => {
  try {
    const { startTime } = statOf(process.pid);
    return startTime && bootId ? { host: hostname(), boot: bootId, pidNamespace: readlinkSync("/proc/self/ns/pid"), startTime } : undefined;
  } catch {
    return undefined;
  }
})();

/**
 * True only when the lease's holder ran on this host, in this boot and pid namespace, and is no longer running: its pid
 * is gone, a zombie, or now belongs to a process started at another time. Anything uncertain (another host, boot or
 * container, no /proc, a permission error, a lease without identity or boot id) is false, so the lease then holds
 * until it expires: taking a live holder's lease would let two processes refresh the token family at once, which
 * revokes it. (A lease of a boot before this one is left to expire too: its host may be another machine of that name.)
 */
function holderHasExited(lease: Lease): boolean {
  const holder = lease.holder;
  const own = ownIdentity;
  if (!holder || !own || typeof holder.startTime !== "string") return false;
  if (holder.host !== own.host || holder.boot !== own.boot || holder.pidNamespace !== own.pidNamespace) return false;
  if (lease.pid === process.pid) return holder.startTime !== own.startTime;
  try {
    const { state, startTime } = statOf(lease.pid);
    // A zombie (killed, not yet reaped by its parent) or a dead task has exited: it can no longer use the lease.
    return startTime !== holder.startTime || state === "Z" || state === "X";
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "ENOENT";
  }
}

/**
 * This boot and time namespace (Linux), whose processes all read one monotonic clock (CLOCK_MONOTONIC, which
 * `process.hrtime` reads): it never jumps when the wall clock is stepped (NTP, a VM resumed, a person setting the
 * time) and stands still while the machine sleeps. Undefined where /proc does not tell it.
 */
const steadyBoot: string | undefined = (() => {
  if (bootId === undefined) return undefined;
  let timeNamespace = "";
  try {
    timeNamespace = readlinkSync("/proc/self/ns/time");
  } catch {
    // A kernel without time namespaces: one monotonic clock for the whole boot.
  }
  return `${bootId}/${timeNamespace}`;
})();

/** Milliseconds on the boot's monotonic clock. */
function steadyNow(): number {
  return Number(process.hrtime.bigint() / 1_000_000n);
}

/**
 * "pid 4242 on this machine", "pid 7 on host build-2", "pid 7 on another machine named vm" (same name, another boot
 * id), or just the pid where the lease says no more.
 */
function describeHolder(lease: Lease): string {
  const holder = lease.holder;
  if (typeof holder?.host !== "string") return `pid ${lease.pid}`;
  if (holder.host !== hostname()) return `pid ${lease.pid} on host ${holder.host}`;
  // Another boot of a machine by this name: a cloned VM or a container host named alike, where that pid means nothing.
  if (typeof holder.boot === "string" && bootId !== undefined && holder.boot !== bootId) return `pid ${lease.pid} on another machine named ${holder.host} (or on this one before its last reboot)`;
  const samePids = ownIdentity === undefined || holder.pidNamespace === ownIdentity.pidNamespace;
  return samePids ? `pid ${lease.pid} on this machine` : `pid ${lease.pid} in another container (pid namespace) on this machine`;
}

/**
 * What an entry named as a generation holds when it holds no lease: a directory, a symbolic link, any other entry that
 * is no regular file, or a regular file whose text is no lease (made by hand, by a backup tool or a sync client). The
 * lock makes every lease a regular file, complete before it is linked into place, so none of these is a lease, nor one
 * half-written: it is skipped when finding the lease, so it can neither block the lock nor make a live lease look lost
 * or free. A file that could not be read is another matter (see leaseOnReadError).
 */
const FOREIGN = Symbol("foreign entry");

/** What reading a generation's entry found: a lease, a {@link FOREIGN} entry, or nothing any more (undefined). */
type Entry = Lease | typeof FOREIGN | undefined;

/** A lease file's text as a lease; one that is not a lease is {@link FOREIGN}. */
function leaseOf(text: string): Lease | typeof FOREIGN {
  try {
    const parsed = JSON.parse(text) as Partial<Lease> | null;
    if (typeof parsed?.token !== "string" || typeof parsed.expiresAt !== "number") return FOREIGN;
    return parsed as Lease;
  } catch {
    return FOREIGN;
  }
}

/**
 * What a failed look at (lstat) or read of lease file `file` means, deny by default: only an error that proves no
 * lease is there answers. ENOENT: no entry any more. Any other error (EACCES from another user's run, EMFILE, ESTALE,
 * EIO, ELOOP from a loop among the directories on the way, ...) leaves the holder unknown and throws
 * LeaseUnreadableError: read as expired or gone, a live holder's lease would be taken over (or a holder would give up
 * its own) while it may be refreshing the token family. ENOTDIR and EISDIR are among them: `locks/` was just listed as
 * a directory and `file` seen as a regular file, so only a swap under way gives them.
 */
function leaseOnReadError(file: string, err: unknown): undefined {
  if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
  throw leaseUnreadable(file, err, "file");
}

/** The LeaseUnreadableError for `err`, a failed read of `file` (or listing of it, `source`), named by its code. */
function leaseUnreadable(file: string, err: unknown, source: LeaseSource): LeaseUnreadableError {
  const code = (err as NodeJS.ErrnoException).code ?? (err instanceof Error ? err.name : "unknown error");
  return new LeaseUnreadableError(file, code, { cause: err, source });
}

/**
 * What the generation entry `file` holds. Looked at (lstat) before it is read: a symbolic link is never followed, even
 * to a live lease, and a FIFO is never opened (its read would wait for good).
 * @throws LeaseUnreadableError (see {@link leaseOnReadError}).
 */
async function readLease(file: string): Promise<Entry> {
  try {
    if (!(await lstat(file)).isFile()) return FOREIGN;
    return leaseOf(await readFile(file, "utf8"));
  } catch (err) {
    return leaseOnReadError(file, err);
  }
}

/**
 * {@link readLease}, synchronously: for the check before each write of a cycle, which must not yield to the event loop
 * (a keep-alive or a timer of the work would run in between, for nothing).
 */
function readLeaseNow(file: string): Entry {
  try {
    if (!lstatSync(file).isFile()) return FOREIGN;
    return leaseOf(readFileSync(file, "utf8"));
  } catch (err) {
    return leaseOnReadError(file, err);
  }
}

/**
 * Whether `name`, an entry of `locks/`, is a lease file: `<name>.lock`, or one of its later generations (`.lock.<n>`),
 * the name URI-encoded. The settings check tells the bridge's locks from a directory of another's of the same name by it.
 */
export function isLeaseFile(name: string): boolean {
  return /^[\w%!~*'().-]+\.lock(?:\.[1-9][0-9]*)?$/.test(name);
}

/**
 * What a failed listing of the locks directory `dir` means, deny by default as a failed read of a lease file (see
 * {@link leaseOnReadError}): the listing tells which generation holds the lease, so any failure (EMFILE, ENFILE, EIO,
 * ESTALE, EACCES, ...) leaves the holder unknown and throws LeaseUnreadableError. ENOENT is thrown as it is: `locks/`
 * is gone, so no lease is there (taking one makes the directory first).
 */
function listingFailed(dir: string, err: unknown): never {
  if ((err as NodeJS.ErrnoException).code === "ENOENT") throw err;
  throw leaseUnreadable(dir, err, "listing");
}

/**
 * Generations of `base` among the entries of the locks directory, highest first. A number beyond 2^53 is no generation
 * (none gets that far): parsed, it would name another entry (`.lock.99999999999999999999` reads as 1e20), found gone.
 */
function generationsIn(entries: readonly string[], base: string): number[] {
  const found: number[] = [];
  for (const entry of entries) {
    if (entry === base) found.push(0);
    else if (entry.startsWith(`${base}.`)) {
      const rest = entry.slice(base.length + 1);
      if (/^[1-9][0-9]*$/.test(rest) && Number.isSafeInteger(Number(rest))) found.push(Number(rest));
    }
  }
  return found.sort((a, b) => b - a);
}

/**
 * The number for a new lease above generation `above` (-1: none): the first that no entry holds, since a foreign entry
 * there would refuse the exclusive creation for good.
 */
function freeAbove(generations: readonly number[], above: number): number {
  let next = above + 1;
  while (generations.includes(next)) next++;
  return next;
}

/**
 * How many listings a holder's or contender's check makes when an entry above its floor vanishes between a listing and
 * its read (a foreign file removed, a losing contender's lease): enough for the rare race, bounded for one that goes
 * on, which is then read as a lease.
 */
const LISTINGS_PER_CHECK = 3;

/**
 * Creates the lease `text` of `token` at `file` exclusively; true when created and `allowed` says it may be kept. It is
 * removed when it may not be, and when that cannot be told: `allowed` throws, or the creation throws once the file is
 * linked (its directory's fsync failing) and `file` holds `token`; the error is thrown on. Left there, held by no
 * handle, it would read as another's lease until it ran out, refusing every attempt (this process's own too) and making
 * its holder's checks find its lease lost.
 */
async function createdAndKept(file: string, lease: { readonly text: string; readonly token: string }, allowed: () => boolean | Promise<boolean>): Promise<boolean> {
  let kept: boolean;
  try {
    if (!(await createFileOnce(file, lease.text, { mode: 0o600 }))) return false;
  } catch (err) {
    if (holdsToken(file, lease.token)) unlinkQuietly(file);
    throw err;
  }
  try {
    kept = await allowed();
  } catch (err) {
    unlinkQuietly(file);
    throw err;
  }
  if (!kept) unlinkQuietly(file);
  return kept;
}

/** Whether `file` holds the lease of `token` (false when it cannot be read: maybe another's, so left alone). */
function holdsToken(file: string, token: string): boolean {
  try {
    const entry = readLeaseNow(file);
    return entry !== undefined && entry !== FOREIGN && entry.token === token;
  } catch {
    return false;
  }
}

/**
 * File lock for local mode: `<stateDir>/locks/<name>.lock[.<generation>]`. Rules that make it safe:
 * the lease is the highest generation holding one; a foreign entry (see {@link FOREIGN}) is skipped, wherever it lies,
 * and a failed read of any entry on the way throws (deny by default). A generation file is only created exclusively;
 * a contender creates one only after reading the lease (generation g) expired, at the first number above g that no
 * entry holds, and keeps it only if afterwards no lease but its own lies above g; a holder holds while no lease lies
 * above its own. The lease is never deleted (release marks it expired), so the lease's generation number only grows.
 * Older generations, foreign entries among them, are deleted by the holder of a higher one. Like any lease, it
 * assumes a holder stops before its lease expires.
 *
 * @example
 * ```ts
 * const lock = new FileLock(".state");
 * const handle = await lock.tryAcquire("token-refresh", 30_000);
 * if (handle) try { await refresh(); } finally { await handle.release(); }
 * ```
 */
export class FileLock implements Lock {
  readonly dir: string;
  private readonly clock: Pick<Clock, "now">;
  /** Whether expiries are also measured on the boot's monotonic clock (see `expired`). */
  private readonly steady: boolean;
  /** Temp files of contenders killed while creating a lease (see createFileOnce): harmless, but they would pile up. */
  private readonly sweep: () => Promise<void>;

  /**
   * @param options.steady - also measure expiries on the boot's monotonic clock (see `expired`). @default true on the
   *   system clock, false on any other (a fake clock's time does not line up with it)
   */
  constructor(stateDir: string, options: { clock?: Pick<Clock, "now">; steady?: boolean } = {}) {
    this.dir = path.join(stateDir, STATE_DIRS.locks);
    this.clock = options.clock ?? systemClock;
    this.steady = options.steady ?? this.clock === systemClock;
    this.sweep = staleTempSweep(this.dir);
  }

  /** @throws LeaseUnreadableError when the current lease file cannot be read (see leaseOnReadError). */
  async tryAcquire(name: string, ttlMs: number): Promise<LockHandle | undefined> {
    makeDirDurable(this.dir);
    await this.sweep();
    const base = `${encodeURIComponent(name)}.lock`;
    const current = await this.currentLease(base);
    // Gone: an entry removed while we listed; let the next attempt decide on a fresh listing.
    if (current === undefined) return undefined;
    const { generation, lease, generations } = current;
    let tookOver = false;
    // A holder that crashed leaves a lease that would block everyone until it expires.
    if (lease !== undefined && !this.expired(lease)) {
      if (!holderHasExited(lease)) return undefined;
      tookOver = true;
    }
    const next = freeAbove(generations, generation);
    const token = randomUUID();
    const file = this.file(base, next);
    // A contender that read an older generation, or raced us past another foreign entry, may have created a lease
    // above the one we read: only one of us keeps its own. And the lease we read expired may have been renewed since
    // (our read answered late): its holder's check after that write may have come before our file, so we give way.
    const allowed = async () => this.noLeaseAbove(base, generation, next) && !(await this.renewedSince(base, generation));
    if (!(await createdAndKept(file, { text: this.leaseText(token, ttlMs), token }, allowed))) return undefined;
    await this.removeBelow(base, next);
    return this.handle(base, next, token, tookOver);
  }

  /**
   * Who holds `name` now (see `Lock.holderOf`): the pid of its unexpired lease and where it runs, for a refusal to name.
   * Undefined when the lease is free, or unreadable. Never throws: a message is not worth failing for.
   */
  async holderOf(name: string): Promise<string | undefined> {
    try {
      const lease = (await this.currentLease(`${encodeURIComponent(name)}.lock`))?.lease;
      if (lease === undefined || lease.pid <= 0 || this.expired(lease)) return undefined;
      return describeHolder(lease);
    } catch {
      return undefined;
    }
  }

  /**
   * Whether a lease has run out. When holder and reader share a monotonic clock (same boot and time namespace, both
   * measuring on it), by its expiry on that clock alone, whatever steps the wall clock took since: one stepped forward
   * (or a machine woken from sleep) would otherwise expire a live holder's lease at once, in the middle of its refresh,
   * and let another process present the same refresh token, which revokes the family; one stepped back would keep the
   * lease of a holder that stopped (killed in another container) for the length of the step, an hour for a clock
   * corrected by an hour, rather than its ttl. Otherwise by its wall-clock expiry.
   */
  private expired(lease: Lease): boolean {
    const steady = lease.steady;
    if (this.steady && steadyBoot !== undefined && steady?.boot === steadyBoot && typeof steady.expiresAt === "number") return steady.expiresAt <= steadyNow();
    return lease.expiresAt <= this.clock.now();
  }

  /** A lease of `token` for `ttlMs` from now; released (expired on every clock) when `ttlMs` is undefined. */
  private leaseText(token: string, ttlMs: number | undefined): string {
    const expiresAt = ttlMs === undefined ? 0 : this.clock.now() + ttlMs;
    const steady = this.steady && steadyBoot !== undefined ? { boot: steadyBoot, expiresAt: ttlMs === undefined ? 0 : steadyNow() + ttlMs } : undefined;
    return JSON.stringify({ token, pid: process.pid, expiresAt, holder: ownIdentity, ...(steady ? { steady } : {}) } satisfies Lease);
  }

  private file(base: string, generation: number): string {
    return path.join(this.dir, generation === 0 ? base : `${base}.${generation}`);
  }

  /** Generations present for `base`, foreign entries among them, highest first. */
  private async generations(base: string): Promise<number[]> {
    return generationsIn(await readdir(this.dir).catch((err: unknown) => listingFailed(this.dir, err)), base);
  }

  /** {@link generations}, synchronously (see readLeaseNow). */
  private generationsNow(base: string): number[] {
    let entries: string[];
    try {
      entries = readdirSync(this.dir);
    } catch (err) {
      listingFailed(this.dir, err);
    }
    return generationsIn(entries, base);
  }

  /**
   * The lease of `base`: the highest generation holding one (-1 and no lease when none does), foreign entries above it
   * skipped, with the listing it was found in. Undefined when an entry was gone by the time it was read.
   * @throws LeaseUnreadableError (see leaseOnReadError).
   */
  private async currentLease(base: string): Promise<{ generation: number; lease?: Lease; generations: number[] } | undefined> {
    const generations = await this.generations(base);
    for (const generation of generations) {
      const entry = await readLease(this.file(base, generation));
      if (entry === undefined) return undefined;
      if (entry !== FOREIGN) return { generation, lease: entry, generations };
    }
    return { generation: -1, generations };
  }

  /**
   * Whether no lease of `base` lies above generation `floor` but `own`'s: every other entry there is foreign. An entry
   * gone by the time it is read is settled by listing again: a lease above is removed only by the holder of a higher
   * one, never deleted while highest, so the new listing shows that one. After {@link LISTINGS_PER_CHECK} listings that
   * each lost an entry, the answer is the conservative one (a lease). Synchronous, for the check before a write (see
   * readLeaseNow). @throws LeaseUnreadableError (see leaseOnReadError).
   */
  private noLeaseAbove(base: string, floor: number, own: number): boolean {
    for (let listing = 0; listing < LISTINGS_PER_CHECK; listing++) {
      const found = this.firstAbove(base, floor, own);
      if (found !== "gone") return found === "none";
    }
    return false;
  }

  /** What one listing shows above generation `floor` but `own`: a lease, an entry gone before its read, or neither. */
  private firstAbove(base: string, floor: number, own: number): "lease" | "gone" | "none" {
    for (const g of this.generationsNow(base)) {
      if (g <= floor) break;
      if (g === own) continue;
      const entry = readLeaseNow(this.file(base, g));
      if (entry === undefined) return "gone";
      if (entry !== FOREIGN) return "lease";
    }
    return "none";
  }

  /**
   * Whether generation `generation` (-1: none) holds a lease in force now, of a holder that has not exited: one its
   * holder renewed after a contender read it expired.
   */
  private async renewedSince(base: string, generation: number): Promise<boolean> {
    if (generation < 0) return false;
    const entry = await readLease(this.file(base, generation));
    return entry !== undefined && entry !== FOREIGN && !this.expired(entry) && !holderHasExited(entry);
  }

  /**
   * Deletes superseded generations (never the highest one). A clean-up only: a listing that fails leaves them to the
   * next holder, and the lease taken stands.
   */
  private async removeBelow(base: string, generation: number): Promise<void> {
    const generations = await this.generations(base).catch(() => []);
    for (const g of generations) {
      if (g < generation) await unlink(this.file(base, g)).catch(() => undefined);
    }
  }

  private handle(base: string, taken: number, token: string, tookOver: boolean): LockHandle {
    /** The generation this handle holds: a later one once a check or renewal took its lapsed lease again (confirmOnce). */
    let generation = taken;
    /**
     * Whether `entry`, read at this holder's generation, is still its lease: its token, and no lease above it (foreign
     * entries do not count). A read that fails (not ENOENT) throws rather than answer: the lease may still be its own.
     */
    const isOwn = (entry: Entry): entry is Lease =>
      entry !== FOREIGN && entry?.token === token && this.noLeaseAbove(base, generation, generation);
    /**
     * The entry at this holder's generation, read again at the new one when a check took the lapsed lease again while
     * the read was under way (it removes the old one: found gone, the lease would read as lost).
     */
    const readOwn = async (): Promise<Entry> => {
      for (;;) {
        const at = generation;
        const entry = await readLease(this.file(base, at));
        if (at === generation) return entry;
      }
    };
    const write = async (ttlMs: number | undefined): Promise<void> => {
      await writeFileAtomic(this.file(base, generation), this.leaseText(token, ttlMs), { mode: 0o600 });
    };
    /** Set once {@link LockHandle.release} gave the lease up: its file still holds this token (marked expired). */
    let released = false;
    let confirming: Promise<boolean> | undefined;
    // Synchronous file calls throughout (createFileOnce's too): see readLeaseNow.
    const confirmOnce = async (ttlMs: number): Promise<boolean> => {
      // Given up, not lapsed: taking it again would hold a lease its holder no longer knows of.
      if (released) return false;
      // readOwn's read done synchronously (no generation moves meanwhile), the lease kept for the lapsed case below.
      const lease = readLeaseNow(this.file(base, generation));
      if (!isOwn(lease)) return false;
      if (!this.expired(lease)) return true;
      // Lapsed while nobody took it (this process was stalled): nobody can have written meanwhile, since a writer
      // takes the next generation first. Taken again the way a contender would, exclusively, so one racing for it
      // now either loses or wins outright.
      const next = freeAbove(this.generationsNow(base), generation);
      if (!(await createdAndKept(this.file(base, next), { text: this.leaseText(token, ttlMs), token }, () => this.noLeaseAbove(base, generation, next)))) return false;
      unlinkQuietly(this.file(base, generation));
      generation = next;
      return true;
    };
    // One check at a time: writes checking at once (a quarantine's parallel puts) and a renewal of a lapsed lease share
    // it. Two taking the lapsed lease again side by side would each find the other's generation, and the loser would
    // read the lease as lost.
    const confirm = (ttlMs: number): Promise<boolean> => (confirming ??= confirmOnce(ttlMs).finally(() => (confirming = undefined)));
    return {
      renew: async (ttlMs) => {
        const lease = await readOwn();
        // Lost: another owner took it.
        if (!isOwn(lease)) return false;
        // Lapsed while nobody took it: taken again as a check before a write takes it, exclusively (a released one is
        // not). Written in place, a contender could take it over between this check and the write, and both would hold it.
        // Then written as any renewal: a check already under way, whose answer this shares, may have found it held
        // just before it ran out, or taken it again for another ttl.
        if (this.expired(lease) && !(await confirm(ttlMs))) return false;
        // Nobody takes over an unexpired highest generation, so checking then replacing is safe while the write lands
        // before the expiry. One that lands after it (a slow disk, a stalled process) may follow a contender's lease
        // above ours: lost, whatever our file says. A contender that read ours expired before this write gives way
        // once it finds it renewed (see renewedSince), so at most one of the two holds.
        await write(ttlMs);
        return this.noLeaseAbove(base, generation, generation);
      },
      release: async () => {
        // Marked expired, not deleted: the highest generation must stay so numbers only grow. A release that fails
        // leaves the lease this handle's (a later cycle renews it). One that lapsed while nobody took it is marked
        // too: its wall-clock expiry would lie ahead again once the wall clock is stepped back.
        if (isOwn(await readOwn())) await write(undefined);
        released = true;
      },
      confirm,
      tookOver,
    };
  }
}
