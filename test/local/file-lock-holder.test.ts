/**
 * FileLock and crashed holders: a lease whose holder has provably exited (same host and pid namespace, pid gone or
 * reused) is taken over at once; any doubt leaves the lease in force until it expires.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync, readlinkSync } from "node:fs";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { FileLock } from "../../shared/local/index.js";
import type { LockHandle } from "../../shared/bridge/ports.js";
import { killed, startLockHolder } from "./support/lock-holder.js";
import { tempDirPerTest } from "../temp-dir.js";

const onLinux = process.platform === "linux" && existsSync("/proc/self/stat");
const LOCK = "cycle";

let dir: string;
tempDirPerTest("bridge-lock-", (made) => (dir = made));
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
});

function startTimeOf(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] as string;
}

/** A running process that holds nothing: its pid and identity stand in for a lease holder. */
async function sleeper(): Promise<ChildProcess> {
  const child = spawn("sleep", ["30"], { stdio: "ignore" });
  children.push(child);
  await new Promise((resolve) => child.once("spawn", resolve));
  return child;
}

/** Writes the lease a holder with this identity would have written, valid for another minute. */
async function writeLease(pid: number, holder?: Record<string, unknown>): Promise<void> {
  await mkdir(path.join(dir, "locks"), { recursive: true });
  const lease = { token: "held-elsewhere", pid, expiresAt: Date.now() + 60_000, ...(holder ? { holder } : {}) };
  await writeFile(path.join(dir, "locks", `${LOCK}.lock`), JSON.stringify(lease));
}

const bootId = onLinux ? readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim() : "";

function identityOf(pid: number, startTime = startTimeOf(pid)): Record<string, unknown> {
  return { host: hostname(), boot: bootId, pidNamespace: readlinkSync("/proc/self/ns/pid"), startTime };
}

describe.runIf(onLinux)("FileLock with a holder that has exited", () => {
  it("keeps a live holder's lease, and takes it over as soon as that holder is killed", async () => {
    const holder = await sleeper();
    await writeLease(holder.pid!, identityOf(holder.pid!));
    const lock = new FileLock(dir);
    expect(await lock.tryAcquire(LOCK, 30_000)).toBeUndefined();

    await killed(holder);
    const handle = await lock.tryAcquire(LOCK, 30_000);
    expect(handle).toBeDefined();
    // Said, so a cycle can keep clear of what the holder did last (cycle-lease.ts withCycleLock).
    expect(handle!.tookOver).toBe(true);
    // The new lease is the highest generation and renewable; the dead holder's is gone.
    expect(await handle!.renew(30_000)).toBe(true);
    expect(existsSync(path.join(dir, "locks", `${LOCK}.lock`))).toBe(false);
  });

  it("takes over the lease of a holder killed and not yet reaped by its parent (a zombie): it has exited", async () => {
    // `sleep 0.3` runs in the background, then its parent becomes `sleep 30`, which never waits: the child stays a
    // zombie. Not `sleep 0`: a child that ends before the exec may be reaped by the shell itself (seen under load).
    const parent = spawn("sh", ["-c", "sleep 0.3 & echo $!; exec sleep 30"], { stdio: ["ignore", "pipe", "ignore"] });
    children.push(parent);
    const pid = Number(await new Promise<string>((resolve) => parent.stdout!.once("data", (chunk: Buffer) => resolve(chunk.toString()))));
    const state = () => readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.[0];
    for (let i = 0; i < 500 && state() !== "Z"; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(state()).toBe("Z");
    await writeLease(pid, identityOf(pid));
    expect(await new FileLock(dir).tryAcquire(LOCK, 30_000)).toBeDefined();
  });

  it("takes over a lease whose pid now belongs to another process (pid reused)", async () => {
    const other = await sleeper();
    await writeLease(other.pid!, identityOf(other.pid!, "1"));
    expect(await new FileLock(dir).tryAcquire(LOCK, 30_000)).toBeDefined();
  });

  it("takes over a lease of this process's own pid left by an earlier process (a container restarted as pid 1 again)", async () => {
    await writeLease(process.pid, identityOf(process.pid, "1"));
    const handle = await new FileLock(dir).tryAcquire(LOCK, 30_000);
    expect(handle?.tookOver).toBe(true);
  });

  it("leaves a lease in force until it expires when the holder cannot be checked", async () => {
    const gone = await sleeper();
    const identity = identityOf(gone.pid!);
    await killed(gone);
    const lock = new FileLock(dir);
    // Another host or container, or a lease written before holders were recorded: the pid says nothing here.
    for (const holder of [{ ...identity, host: "another-host" }, { ...identity, pidNamespace: "pid:[1]" }, { ...identity, startTime: 7 }, undefined]) {
      await writeLease(gone.pid!, holder);
      expect(await lock.tryAcquire(LOCK, 30_000)).toBeUndefined();
    }
  });

  it("leaves a lease in force when its holder ran on another machine that goes by the same host name and pid namespace", async () => {
    // Two machines (cloned VMs, both "localhost"; containers named alike) sharing the state directory: host names can
    // match, and every machine's first pid namespace is pid:[4026531836]. The pid says nothing about the other
    // machine's processes; only its boot id tells it apart. A lease of a version that recorded no boot id is as unsure.
    const gone = await sleeper();
    const identity = identityOf(gone.pid!);
    await killed(gone);
    const lock = new FileLock(dir);
    const { boot: _boot, ...withoutBoot } = identity;
    for (const holder of [{ ...identity, boot: "5d1c9a4e-7f1b-4c8e-9a3d-2b6f0e8c1a77" }, withoutBoot]) {
      await writeLease(gone.pid!, holder);
      expect(await lock.tryAcquire(LOCK, 30_000)).toBeUndefined();
    }
    // Same machine, same boot: the dead holder's lease is taken over at once.
    await writeLease(gone.pid!, identity);
    expect(await lock.tryAcquire(LOCK, 30_000)).toBeDefined();
  });

  it("names a live holder for a refusal: its pid, and where it runs when that is not here; nobody once it is released", async () => {
    const lock = new FileLock(dir);
    expect(await lock.holderOf(LOCK)).toBeUndefined();
    const live = await sleeper();
    const identity = identityOf(live.pid!);
    await writeLease(live.pid!, identity);
    expect(await lock.holderOf(LOCK)).toBe(`pid ${live.pid} on this machine`);
    await writeLease(live.pid!, { ...identity, pidNamespace: "pid:[1]" });
    expect(await lock.holderOf(LOCK)).toBe(`pid ${live.pid} in another container (pid namespace) on this machine`);
    await writeLease(77, { ...identity, host: "build-2" });
    expect(await lock.holderOf(LOCK)).toBe("pid 77 on host build-2");
    // Another machine going by this one's name (a cloned VM): its boot id tells it apart, so it is not "this machine".
    await writeLease(77, { ...identity, boot: "5d1c9a4e-7f1b-4c8e-9a3d-2b6f0e8c1a77" });
    expect(await lock.holderOf(LOCK)).toBe(`pid 77 on another machine named ${hostname()} (or on this one before its last reboot)`);
    await writeLease(77);
    expect(await lock.holderOf(LOCK)).toBe("pid 77");
    // No process has pid 0: a lease saying so (written by another tool) names nobody.
    await writeLease(0);
    expect(await lock.holderOf(LOCK)).toBeUndefined();
    await rm(path.join(dir, "locks"), { recursive: true });
    const handle = await lock.tryAcquire(LOCK, 30_000);
    await handle!.release();
    expect(await lock.holderOf(LOCK)).toBeUndefined();
  });

  it("frees the cycle lease of a bridge process killed while holding it", async () => {
    // A real FileLock in another process, killed with SIGKILL: nothing releases its lease.
    const holder = await startHolder("holder.mts", "new FileLock(process.argv[2])", 60_000);

    const lock = new FileLock(dir);
    expect(await lock.tryAcquire(LOCK, 30_000)).toBeUndefined();
    await killed(holder);
    expect(await lock.tryAcquire(LOCK, 30_000)).toBeDefined();
  });
});

/** {@link startLockHolder} in this test's directory, killed after the test. */
async function startHolder(script: string, lockExpression: string, ttlMs: number, preamble = ""): Promise<ChildProcess> {
  const holder = await startLockHolder(dir, LOCK, ttlMs, { script, lockExpression, preamble });
  children.push(holder);
  return holder;
}

/**
 * Starts a real FileLock holder in another process whose wall clock reads `behindMs` behind this one's: it took its
 * lease for `ttlMs`, then the wall clock was stepped forward by `behindMs` (NTP, a VM resumed) while it still holds it.
 */
function holderBeforeClockStep(behindMs: number, ttlMs: number): Promise<ChildProcess> {
  return startHolder("stepped-holder.mts", "new FileLock(process.argv[2], { clock, steady: true })", ttlMs, `const clock = { now: () => Date.now() - ${behindMs} };`);
}

/**
 * A lease of `LOCK` for 30 s, held on a wall clock that reads `clock.step` ms ahead of the real one (no monotonic
 * clock), and another process's lock on that clock.
 */
async function holderOnSteppedClock(): Promise<{ lock: FileLock; peer: FileLock; handle: LockHandle | undefined; clock: { step: number; now: () => number } }> {
  const clock = { step: 0, now: () => Date.now() + clock.step };
  const lock = new FileLock(dir, { clock, steady: false });
  return { lock, peer: new FileLock(dir, { clock, steady: false }), handle: await lock.tryAcquire(LOCK, 30_000), clock };
}

describe.runIf(onLinux)("FileLock and a wall clock stepped forward", () => {
  it("leaves a live holder's lease alone when only the wall clock says it expired (its refresh may be under way)", async () => {
    await holderBeforeClockStep(60_000, 30_000);
    // By this process's wall clock the lease ran out 30 s ago; the holder has held it for well under a second.
    expect(await new FileLock(dir).tryAcquire(LOCK, 30_000)).toBeUndefined();
  });

  it("takes such a lease once it ran out on the monotonic clock too, so a live holder that stopped working cannot block forever", async () => {
    await holderBeforeClockStep(60_000, 1_000);
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    expect(await new FileLock(dir).tryAcquire(LOCK, 30_000)).toBeDefined();
  });

  it("takes a lease past its wall-clock expiry whose monotonic expiry is of another boot or time namespace: this clock cannot measure it", async () => {
    const timeNamespace = existsSync("/proc/self/ns/time") ? readlinkSync("/proc/self/ns/time") : "";
    for (const boot of ["5d1c9a4e-7f1b-4c8e-9a3d-2b6f0e8c1a77/" + timeNamespace, `${bootId}/time:[1]`]) {
      await mkdir(path.join(dir, "locks"), { recursive: true });
      await writeFile(path.join(dir, "locks", `${LOCK}.lock`), JSON.stringify({ token: "elsewhere", pid: 77, expiresAt: Date.now() - 1, steady: { boot, expiresAt: Number.MAX_SAFE_INTEGER } }));
      const handle = await new FileLock(dir).tryAcquire(LOCK, 30_000);
      expect(handle).toBeDefined();
      await handle!.release();
      await rm(path.join(dir, "locks"), { recursive: true });
    }
  });

  // Stepped forward: the lease outlives its wall-clock expiry. Stepped back (taken while the wall clock ran an hour
  // ahead, a host booted with a wrong clock, then corrected by NTP): the holder stopped renewing (killed in another
  // container of this machine, whose pid this one cannot look up), and its lease must not outlive its ttl by the step.
  it.each([
    ["forward, once the wall clock passed it", 60_000],
    ["back, not the step later", -3_600_000],
  ])("lets another take a lease at its expiry on the monotonic clock, not a millisecond later, the wall clock stepped %s", async (_step, stepMs) => {
    let steadyNs = 1_000_000_000_000n;
    const hrtime = vi.spyOn(process.hrtime, "bigint").mockImplementation(() => steadyNs);
    try {
      let now = Date.now();
      const clock = { now: () => now };
      await new FileLock(dir, { clock, steady: true }).tryAcquire(LOCK, 30_000);
      now += stepMs;
      steadyNs += 29_999_000_000n;
      expect(await new FileLock(dir, { clock, steady: true }).tryAcquire(LOCK, 30_000)).toBeUndefined();
      steadyNs += 1_000_000n;
      expect(await new FileLock(dir, { clock, steady: true }).tryAcquire(LOCK, 30_000)).toBeDefined();
    } finally {
      hrtime.mockRestore();
    }
  });

  it("lets another take a lease at its expiry, ttl after it was taken, not a millisecond later (as the other Lock adapters)", async () => {
    let now = Date.now();
    const clock = { now: () => now };
    await new FileLock(dir, { clock }).tryAcquire(LOCK, 30_000);
    now += 29_999;
    expect(await new FileLock(dir, { clock }).tryAcquire(LOCK, 30_000)).toBeUndefined();
    now += 1;
    expect(await new FileLock(dir, { clock }).tryAcquire(LOCK, 30_000)).toBeDefined();
  });

  it("leaves a released lease free after the wall clock is stepped back: release marks it expired for good, not as of now", async () => {
    let now = Date.now();
    const clock = { now: () => now };
    await (await new FileLock(dir, { clock }).tryAcquire(LOCK, 30_000))!.release();
    now -= 60_000;
    expect(await new FileLock(dir, { clock }).tryAcquire(LOCK, 30_000)).toBeDefined();
  });

  it("measures expiries on the wall clock alone when told not to use the monotonic clock, those of steady leases too", async () => {
    await holderBeforeClockStep(60_000, 30_000);
    expect(await new FileLock(dir).tryAcquire(LOCK, 30_000)).toBeUndefined();
    expect(await new FileLock(dir, { steady: false }).tryAcquire(LOCK, 30_000)).toBeDefined();
  });

  it("lets the holder renew its lease after the step, and refuses it to a contender meanwhile; released, it is free at once", async () => {
    let step = 0;
    const clock = { now: () => Date.now() + step };
    const lock = new FileLock(dir, { clock, steady: true });
    const peer = new FileLock(dir, { clock, steady: true });
    const handle = await lock.tryAcquire(LOCK, 30_000);
    expect(handle).toBeDefined();
    expect(handle!.tookOver).toBe(false);
    step = 60_000;
    expect(await peer.tryAcquire(LOCK, 30_000)).toBeUndefined();
    expect(await handle!.renew(30_000)).toBe(true);
    await handle!.release();
    const next = await peer.tryAcquire(LOCK, 30_000);
    expect(next).toBeDefined();
    // A released lease is no crash to keep clear of.
    expect(next!.tookOver).toBe(false);
  });

  it("confirms a lease before a write: held, or lapsed while nobody took it (taken again); refused once another took it", async () => {
    const { lock, peer, handle, clock } = await holderOnSteppedClock();
    expect(await handle!.confirm!(30_000)).toBe(true);
    // Stalled past its lease, nobody came: taken again, and then held against a contender, renewable and releasable.
    clock.step = 60_000;
    expect(await handle!.confirm!(30_000)).toBe(true);
    expect(await peer.tryAcquire(LOCK, 30_000)).toBeUndefined();
    expect(await handle!.renew(30_000)).toBe(true);
    // Stalled again, and this time another process took it: refused, and that one's lease stands.
    clock.step = 120_000;
    const other = await peer.tryAcquire(LOCK, 30_000);
    expect(other).toBeDefined();
    expect(await handle!.confirm!(30_000)).toBe(false);
    expect(await other!.renew(30_000)).toBe(true);
    await handle!.release();
    expect(await lock.tryAcquire(LOCK, 30_000)).toBeUndefined();
  });

  it("renews a lapsed lease while a check before a write takes it again (a keep-alive's timer during a cycle): held, for the renewal's ttl", async () => {
    const { peer, handle, clock } = await holderOnSteppedClock();
    clock.step = 60_000;
    // The renewal reads the lapsed lease's generation while the check takes the next one and removes it.
    const renewing = handle!.renew(30_000);
    expect(await handle!.confirm!(1_000)).toBe(true);
    expect(await renewing).toBe(true);
    clock.step += 10_000;
    expect(await peer.tryAcquire(LOCK, 30_000)).toBeUndefined();
  });

  it("confirms a lapsed lease for every write checking it at once (a quarantine's parallel puts): taken again once, none refused", async () => {
    const { peer, handle, clock } = await holderOnSteppedClock();
    clock.step = 60_000;
    expect(await Promise.all([handle!.confirm!(30_000), handle!.confirm!(30_000), handle!.confirm!(30_000)])).toEqual([true, true, true]);
    expect(await peer.tryAcquire(LOCK, 30_000)).toBeUndefined();
    expect(await handle!.renew(30_000)).toBe(true);
  });
});
