/**
 * Cross-process lock on the local filesystem: a lease file per name holding an owner token and an expiry.
 * Creation is atomic (hard link of a complete temp file), so a reader never sees a half-written lease.
 */
import { randomUUID } from "node:crypto";
import { link, mkdir, open, readFile, rename, unlink } from "node:fs/promises";
import path from "node:path";
import type { Clock, Lock, LockHandle } from "../bridge/ports.js";
import { writeFileAtomic, TEMP_SUFFIX } from "./atomic.js";

interface Lease {
  readonly token: string;
  readonly pid: number;
  readonly expiresAt: number;
}

const systemClock: Pick<Clock, "now"> = { now: () => Date.now() };

async function readLease(file: string): Promise<Lease | undefined> {
  try {
    const parsed = JSON.parse(await readFile(file, "utf8")) as Partial<Lease>;
    if (typeof parsed.token !== "string" || typeof parsed.expiresAt !== "number") return { token: "", pid: 0, expiresAt: 0 };
    return parsed as Lease;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    // Unreadable lease: only a foreign tool could have written it; treat it as expired so it cannot block forever.
    return { token: "", pid: 0, expiresAt: 0 };
  }
}

/** Writes a complete temp file and hard-links it to `file`; false when `file` already exists. */
async function createExclusive(file: string, body: string): Promise<boolean> {
  const temp = `${file}.${process.pid}.${randomUUID()}${TEMP_SUFFIX}`;
  const handle = await open(temp, "wx", 0o600);
  try {
    await handle.writeFile(body);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await link(temp, file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw err;
  } finally {
    await unlink(temp).catch(() => undefined);
  }
}

/**
 * File lock for local mode: `<stateDir>/locks/<name>.lock`. An expired lease is taken over atomically
 * (rename-then-verify), so two processes never both believe they hold it.
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

  constructor(stateDir: string, options: { clock?: Pick<Clock, "now"> } = {}) {
    this.dir = path.join(stateDir, "locks");
    this.clock = options.clock ?? systemClock;
  }

  async tryAcquire(name: string, ttlMs: number): Promise<LockHandle | undefined> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const file = path.join(this.dir, `${encodeURIComponent(name)}.lock`);
    const token = randomUUID();
    const body = () => JSON.stringify({ token, pid: process.pid, expiresAt: this.clock.now() + ttlMs } satisfies Lease);
    if (await createExclusive(file, body())) return this.handle(file, token);

    const current = await readLease(file);
    if (current && current.expiresAt > this.clock.now()) return undefined;
    if (current) {
      // Move the expired lease aside, then check it is the one we judged expired (not a fresh one taken meanwhile).
      const tomb = `${file}.${randomUUID()}.stale`;
      try {
        await rename(file, tomb);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      }
      const moved = await readLease(tomb);
      if (moved && moved.token !== current.token) {
        await link(tomb, file).catch(() => undefined);
        await unlink(tomb).catch(() => undefined);
        return undefined;
      }
      await unlink(tomb).catch(() => undefined);
    }
    return (await createExclusive(file, body())) ? this.handle(file, token) : undefined;
  }

  private handle(file: string, token: string): LockHandle {
    const held = async (): Promise<boolean> => {
      const lease = await readLease(file);
      return lease?.token === token && lease.expiresAt > this.clock.now();
    };
    return {
      renew: async (ttlMs) => {
        // Nobody takes over an unexpired lease, so checking then replacing is safe.
        if (!(await held())) return false;
        await writeFileAtomic(file, JSON.stringify({ token, pid: process.pid, expiresAt: this.clock.now() + ttlMs } satisfies Lease), {
          mode: 0o600,
        });
        return true;
      },
      release: async () => {
        const lease = await readLease(file);
        if (lease?.token === token) await unlink(file).catch(() => undefined);
      },
    };
  }
}
