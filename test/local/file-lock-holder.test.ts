/**
 * FileLock and crashed holders: a lease whose holder has provably exited (same host and pid namespace, pid gone or
 * reused) is taken over at once; any doubt leaves the lease in force until it expires.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync, readlinkSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { hostname, tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FileLock } from "../../shared/local/index.js";

const onLinux = process.platform === "linux" && existsSync("/proc/self/stat");
const LOCK = "cycle";

let dir: string;
const children: ChildProcess[] = [];
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "bridge-lock-"));
});
afterEach(async () => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  await rm(dir, { recursive: true, force: true });
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

async function killed(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
}

/** Writes the lease a holder with this identity would have written, valid for another minute. */
async function writeLease(pid: number, holder?: Record<string, unknown>): Promise<void> {
  await mkdir(path.join(dir, "locks"), { recursive: true });
  const lease = { token: "held-elsewhere", pid, expiresAt: Date.now() + 60_000, ...(holder ? { holder } : {}) };
  await writeFile(path.join(dir, "locks", `${LOCK}.lock`), JSON.stringify(lease));
}

function identityOf(pid: number, startTime = startTimeOf(pid)): Record<string, unknown> {
  return { host: hostname(), pidNamespace: readlinkSync("/proc/self/ns/pid"), startTime };
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
    // The new lease is the highest generation and renewable; the dead holder's is gone.
    expect(await handle!.renew(30_000)).toBe(true);
    expect(existsSync(path.join(dir, "locks", `${LOCK}.lock`))).toBe(false);
  });

  it("takes over a lease whose pid now belongs to another process (pid reused)", async () => {
    const other = await sleeper();
    await writeLease(other.pid!, identityOf(other.pid!, "1"));
    expect(await new FileLock(dir).tryAcquire(LOCK, 30_000)).toBeDefined();
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

  it("frees the cycle lease of a bridge process killed while holding it", async () => {
    // A real FileLock in another process, killed with SIGKILL: nothing releases its lease.
    const child = path.join(dir, "holder.mts");
    const fileLock = pathToFileURL(fileURLToPath(new URL("../../shared/local/file-lock.ts", import.meta.url))).href;
    await writeFile(
      child,
      `import { FileLock } from ${JSON.stringify(fileLock)};
const handle = await new FileLock(process.argv[2]).tryAcquire(${JSON.stringify(LOCK)}, 60_000);
process.stdout.write(handle ? "held\\n" : "refused\\n");
setInterval(() => undefined, 1000);
`,
    );
    const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
    const holder = spawn(process.execPath, ["--import", tsx, child, dir], { stdio: ["ignore", "pipe", "inherit"] });
    children.push(holder);
    const said = await new Promise<string>((resolve) => holder.stdout!.once("data", (chunk: Buffer) => resolve(chunk.toString().trim())));
    expect(said).toBe("held");

    const lock = new FileLock(dir);
    expect(await lock.tryAcquire(LOCK, 30_000)).toBeUndefined();
    await killed(holder);
    expect(await lock.tryAcquire(LOCK, 30_000)).toBeDefined();
  });
});
