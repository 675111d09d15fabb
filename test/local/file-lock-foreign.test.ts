/**
 * FileLock and entries of `locks/` named as a generation that hold no lease: a directory, a symbolic link, a file that
 * is no lease (made by hand, by a backup tool, by a sync client). Such an entry above a live holder's generation must
 * neither make the holder lose its lease nor let a contender take it over: two holders would present the same refresh
 * token, which revokes the token family.
 */
import { execFileSync } from "node:child_process";
import type * as nodeFs from "node:fs";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { mkdir, readdir, rm, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { FileLock } from "../../shared/local/index.js";
import { tempDirPerTest } from "../temp-dir.js";

/**
 * Runs before each synchronous look (lstatSync) at a file, the holder's check's: lets a test change `locks/` between
 * the check's listing and its look at an entry, deterministically.
 */
const beforeLook = vi.hoisted(() => ({ hook: undefined as ((file: string) => void) | undefined }));

vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof nodeFs>();
  const lstatSync = ((file: nodeFs.PathLike, ...rest: unknown[]) => {
    beforeLook.hook?.(String(file));
    return (fs.lstatSync as (file: nodeFs.PathLike, ...rest: unknown[]) => unknown)(file, ...rest);
  }) as typeof fs.lstatSync;
  return { ...fs, default: { ...fs, lstatSync }, lstatSync };
});

const LOCK = "token-refresh";
const TTL = 30_000;

let dir: string;
tempDirPerTest("bridge-lock-foreign-", (made) => (dir = made));
let locks: string;
beforeEach(() => {
  beforeLook.hook = undefined;
  locks = path.join(dir, "locks");
});

/** The name of generation `generation` of the lock. */
function leaseName(generation: number): string {
  return generation === 0 ? `${LOCK}.lock` : `${LOCK}.lock.${generation}`;
}

/** Ways a foreign entry lands at a generation's name, `live` being the name of the live lease beside it. */
const FOREIGN: ReadonlyArray<readonly [string, (file: string, live: string) => Promise<void>]> = [
  ["a directory", (file) => mkdir(file)],
  ["a symbolic link to the live lease itself", (file, live) => symlink(live, file)],
  ["a dangling symbolic link", (file) => symlink("nowhere", file)],
  ["a file that is no lease", (file) => writeFile(file, "conflicted copy")],
  ["an empty file", (file) => writeFile(file, "")],
  // JSON that is no lease: no token to own it by, or an expiry that is no number (a string compares as one).
  ["JSON without a token", (file) => writeFile(file, JSON.stringify({ pid: 4242, expiresAt: Date.now() + 3_600_000 }))],
  ["JSON whose expiry is a string", (file) => writeFile(file, JSON.stringify({ token: "t", pid: 4242, expiresAt: String(Date.now() + 3_600_000) }))],
  // A named pipe, whose read would wait for a writer for good.
  ...(process.platform === "win32" ? [] : ([["a FIFO", async (file: string) => void execFileSync("mkfifo", [file])]] as const)),
];

/** A holder at generation 2 (two leases taken and released before it). */
async function holderAtGeneration2() {
  for (let i = 0; i < 2; i++) await (await new FileLock(dir).tryAcquire(LOCK, TTL))!.release();
  const holder = await new FileLock(dir).tryAcquire(LOCK, TTL);
  expect(await readdir(locks)).toEqual([leaseName(2)]);
  return holder!;
}

describe("FileLock with a foreign entry above the live lease", () => {
  it.each(FOREIGN)("keeps a live holder's lease past %s five generations up, and lets nobody take it over until released", async (_, make) => {
    const holder = await holderAtGeneration2();
    await make(path.join(locks, leaseName(7)), leaseName(2));

    // The holder's check before a write, its renewal: still its lease.
    expect(await holder.confirm!(TTL)).toBe(true);
    expect(await holder.renew(TTL)).toBe(true);
    // A contender finds the lease held, names its holder, and creates nothing.
    expect(await new FileLock(dir).tryAcquire(LOCK, TTL)).toBeUndefined();
    expect(await new FileLock(dir).holderOf(LOCK)).toBe(`pid ${process.pid} on this machine`);
    expect((await readdir(locks)).sort()).toEqual([leaseName(2), leaseName(7)]);

    // Released, it is free: the next lease takes the next free number, and the old holder's checks now fail.
    await holder.release();
    const next = await new FileLock(dir).tryAcquire(LOCK, TTL);
    expect(next).toBeDefined();
    expect(await next!.confirm!(TTL)).toBe(true);
    expect((await readdir(locks)).sort()).toEqual([leaseName(3), leaseName(7)]);
    expect(await holder.confirm!(TTL)).toBe(false);
    expect(await holder.renew(TTL)).toBe(false);
  });

  it("takes a lease that lapsed while nobody took it again past a foreign entry at the next generation", async () => {
    let step = 0;
    const clock = { now: () => Date.now() + step };
    const holder = await new FileLock(dir, { clock, steady: false }).tryAcquire(LOCK, TTL);
    await mkdir(path.join(locks, leaseName(1)));

    // Stalled past its lease, nobody came: taken again at the next free number, and held against a contender.
    step = 60_000;
    expect(await holder!.confirm!(TTL)).toBe(true);
    expect((await readdir(locks)).sort()).toEqual([leaseName(1), leaseName(2)]);
    expect(await new FileLock(dir, { clock, steady: false }).tryAcquire(LOCK, TTL)).toBeUndefined();
    expect(await holder!.renew(TTL)).toBe(true);
  });

  it("removes a foreign file or link once a lease is above it, and leaves a foreign directory below, where it is harmless", async () => {
    await (await new FileLock(dir).tryAcquire(LOCK, TTL))!.release();
    await mkdir(path.join(locks, leaseName(1)));
    await writeFile(path.join(locks, leaseName(2)), "not a lease");
    await symlink(leaseName(0), path.join(locks, leaseName(3)));

    const next = await new FileLock(dir).tryAcquire(LOCK, TTL);

    expect(next).toBeDefined();
    expect((await readdir(locks)).sort()).toEqual([leaseName(1), leaseName(4)]);
    expect(await next!.confirm!(TTL)).toBe(true);
    expect(await new FileLock(dir).tryAcquire(LOCK, TTL)).toBeUndefined();
  });

  // Number("99999999999999999999") is 1e20, whose name is ...lock.100000000000000000000, and Number("03") is 3, whose
  // name is ...lock.3: no such entry to look at, which would read as a lease gone on every listing.
  it.each(["99999999999999999999", "03"])("ignores an entry whose number no generation has (.lock.%s names another number once parsed)", async (number) => {
    const holder = await holderAtGeneration2();
    await mkdir(path.join(locks, `${LOCK}.lock.${number}`));

    expect(await holder.confirm!(TTL)).toBe(true);
    expect(await new FileLock(dir).tryAcquire(LOCK, TTL)).toBeUndefined();
    await holder.release();
    expect(await new FileLock(dir).tryAcquire(LOCK, TTL)).toBeDefined();
  });

  it("still counts a file above the holder's that holds a lease: another process took it over", async () => {
    let step = 0;
    const clock = { now: () => Date.now() + step };
    const holder = await new FileLock(dir, { clock, steady: false }).tryAcquire(LOCK, TTL);
    step = 60_000;
    const other = await new FileLock(dir, { clock, steady: false }).tryAcquire(LOCK, TTL);
    await mkdir(path.join(locks, leaseName(5)));

    expect(other).toBeDefined();
    expect(await holder!.confirm!(TTL)).toBe(false);
    expect(await other!.confirm!(TTL)).toBe(true);
  });
});

describe("FileLock when an entry above the holder's vanishes between the check's listing and its look at it", () => {
  /** Before the next look at generation `from`, removes it and runs `then` (once per call unless `again`). */
  function vanishOnLook(from: number, then: (removed: number) => void = () => undefined, again = false): void {
    let target = from;
    beforeLook.hook = (file) => {
      if (path.basename(file) !== leaseName(target)) return;
      rmSync(file, { recursive: true, force: true });
      then(target);
      if (again) target++;
      else beforeLook.hook = undefined;
    };
  }

  it("keeps the lease when a foreign entry above it is removed meanwhile: nobody took it", async () => {
    const holder = await holderAtGeneration2();
    for (const check of [() => holder.confirm!(TTL), () => holder.renew(TTL)]) {
      await mkdir(path.join(locks, leaseName(7)));
      vanishOnLook(7);
      expect(await check()).toBe(true);
      expect(beforeLook.hook).toBeUndefined();
    }
    expect(await new FileLock(dir).tryAcquire(LOCK, TTL)).toBeUndefined();
    expect(await readdir(locks)).toEqual([leaseName(2)]);
  });

  it("still finds the lease lost when the lease above it vanishes because a higher one replaced it", async () => {
    const holder = await holderAtGeneration2();
    const lease = (token: string) => JSON.stringify({ token, pid: process.pid, expiresAt: Date.now() + TTL });
    await writeFile(path.join(locks, leaseName(5)), lease("taken"));
    // Another process takes generation 6 over the lease at 5 and removes the one below it, all before the holder looks.
    vanishOnLook(5, () => writeFileSync(path.join(locks, leaseName(6)), lease("taken again")));

    expect(await holder.confirm!(TTL)).toBe(false);
    expect(await holder.renew(TTL)).toBe(false);
  });

  it("lets a contender keep its new lease past a foreign entry removed during its check, but not past a rival's lease that replaced one", async () => {
    const lease = (token: string) => JSON.stringify({ token, pid: process.pid, expiresAt: Date.now() + TTL });
    for (const rival of [false, true]) {
      await rm(locks, { recursive: true, force: true });
      await (await new FileLock(dir).tryAcquire(LOCK, TTL))!.release();
      // The contender reads the released lease at 0 past the foreign entry at 2 and takes 1; its check then finds 2
      // gone, and, for `rival`, a live lease at 3 (another process took 2 and then its next generation).
      await mkdir(path.join(locks, leaseName(2)));
      vanishOnLook(2, () => (rival ? writeFileSync(path.join(locks, leaseName(3)), lease("rival")) : undefined));

      const taken = await new FileLock(dir).tryAcquire(LOCK, TTL);

      expect(beforeLook.hook).toBeUndefined();
      expect(taken !== undefined, `rival: ${rival}`).toBe(!rival);
      expect((await readdir(locks)).sort()).toEqual(rival ? [leaseName(0), leaseName(3)] : [leaseName(1)]);
    }
  });

  it("gives the conservative answer (lost) when entries above keep vanishing on every listing", async () => {
    const holder = await holderAtGeneration2();
    await mkdir(path.join(locks, leaseName(10)));
    let removed = 0;
    // Each look finds the entry gone and a new one at the next number: the check relists a few times, then stops.
    vanishOnLook(10, (gone) => {
      removed++;
      mkdirSync(path.join(locks, leaseName(gone + 1)));
    }, true);

    expect(await holder.confirm!(TTL)).toBe(false);
    expect(removed).toBeGreaterThan(1);
    expect(removed).toBeLessThan(10);
  });
});
