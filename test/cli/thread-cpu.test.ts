import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { clockTicksOfAuxv, parseThreadStat, threadCpuMeter } from "../../shared/cli/thread-cpu.js";

/** A stat line as Linux writes it, with `utime` and `stime` (fields 14 and 15) as given. */
const statLine = (name: string, utime: number, stime: number) =>
  `4242 (${name}) S 1 4242 4242 0 -1 4194560 2420 30108 0 13 ${utime} ${stime} 26 12 20 0 11 0 3578438 5124096 931\n`;

describe("parseThreadStat", () => {
  it("adds utime and stime, fields 14 and 15, in clock ticks", () => {
    expect(parseThreadStat(statLine("node", 120, 30))).toBe(150);
  });

  it("reads the fields after the LAST \") \", so a thread name holding spaces and parentheses parses", () => {
    expect(parseThreadStat(statLine("node (x) y", 7, 5))).toBe(12);
    expect(parseThreadStat(statLine("a) 1 2 3 (b", 40, 2))).toBe(42);
  });

  it("is undefined for a line that is not a stat line: no name, fields missing, or not numbers", () => {
    expect(parseThreadStat("")).toBeUndefined();
    expect(parseThreadStat("4242 node S 1 2 3")).toBeUndefined();
    expect(parseThreadStat("4242 (node) S 1 4242 4242 0 -1 4194560 2420 30108 0 13 120")).toBeUndefined();
    expect(parseThreadStat("4242 (node) S 1 4242 4242 0 -1 4194560 2420 30108 0 13 x 30 26")).toBeUndefined();
    expect(parseThreadStat("4242 (node) S 1 4242 4242 0 -1 4194560 2420 30108 0 13 120 x 26")).toBeUndefined();
    // Every field there but the name's parentheses.
    expect(parseThreadStat(statLine("node", 120, 30).replace("(node)", "node"))).toBeUndefined();
  });
});

describe("clockTicksOfAuxv", () => {
  /** An auxiliary vector of (type, value) pairs, ended by AT_NULL. */
  function auxv(pairs: readonly (readonly [number, number])[], wordBytes: 4 | 8, littleEndian: boolean): Buffer {
    const buffer = Buffer.alloc((pairs.length + 1) * 2 * wordBytes);
    pairs.flat().forEach((word, i) => {
      if (wordBytes === 8) (littleEndian ? buffer.writeBigUInt64LE : buffer.writeBigUInt64BE).call(buffer, BigInt(word), i * 8);
      else (littleEndian ? buffer.writeUInt32LE : buffer.writeUInt32BE).call(buffer, word, i * 4);
    });
    return buffer;
  }

  it("reads AT_CLKTCK (17) among the other entries, in either word size and byte order", () => {
    const entries = [[33, 0x7f00_0000], [16, 0xbfebfbff], [6, 4096], [17, 100], [3, 0x5600_0040]] as const;
    expect(clockTicksOfAuxv(auxv(entries, 8, true), 8, true)).toBe(100);
    expect(clockTicksOfAuxv(auxv([[17, 250]], 8, false), 8, false)).toBe(250);
    expect(clockTicksOfAuxv(auxv(entries, 4, true), 4, true)).toBe(100);
    expect(clockTicksOfAuxv(auxv(entries, 4, false), 4, false)).toBe(100);
  });

  it("is undefined without an AT_CLKTCK before the end, or with a nonsense value", () => {
    expect(clockTicksOfAuxv(auxv([[6, 4096]], 8, true), 8, true)).toBeUndefined();
    expect(clockTicksOfAuxv(Buffer.concat([auxv([[6, 4096]], 8, true), auxv([[17, 100]], 8, true)]), 8, true)).toBeUndefined();
    expect(clockTicksOfAuxv(auxv([[17, 0]], 8, true), 8, true)).toBeUndefined();
    expect(clockTicksOfAuxv(auxv([[17, 1_000_000]], 8, true), 8, true)).toBe(1_000_000);
    expect(clockTicksOfAuxv(auxv([[17, 1_000_001]], 8, true), 8, true)).toBeUndefined();
    expect(clockTicksOfAuxv(Buffer.alloc(0), 8, true)).toBeUndefined();
  });

  it("reads an AT_CLKTCK that is the vector's last pair, with no AT_NULL after it", () => {
    const unended = (wordBytes: 4 | 8) => auxv([[6, 4096], [17, 100]], wordBytes, true).subarray(0, 4 * wordBytes);
    expect(clockTicksOfAuxv(unended(8), 8, true)).toBe(100);
    expect(clockTicksOfAuxv(unended(4), 4, true)).toBe(100);
  });
});

describe("threadCpuMeter", () => {
  let taskDir: string;
  beforeEach(() => {
    taskDir = mkdtempSync(join(tmpdir(), "thread-cpu-"));
  });
  afterEach(() => rmSync(taskDir, { recursive: true, force: true }));

  const writeStat = (tid: number, utime: number, stime: number, name = "node") => {
    mkdirSync(join(taskDir, String(tid)), { recursive: true });
    writeFileSync(join(taskDir, String(tid), "stat"), statLine(name, utime, stime));
  };
  const meter = () => threadCpuMeter({ taskDir, mainTid: 10, clockTicks: 100 });
  /** A meter over a stretch from `before` to `after`, each thread's user ticks by tid. */
  const stretch = (before: Readonly<Record<number, number>>, after: Readonly<Record<number, number>>) => {
    for (const [tid, ticks] of Object.entries(before)) writeStat(Number(tid), ticks, 0);
    const threads = meter();
    for (const [tid, ticks] of Object.entries(after)) writeStat(Number(tid), ticks, 0);
    return threads;
  };

  it("splits the stretch's ticks into the main thread's and the others', a thread started inside it counted whole", () => {
    writeStat(10, 500, 20);
    writeStat(11, 40, 0, "V8 DefaultWorke");
    const threads = meter();
    writeStat(10, 630, 25); // 135 ticks
    writeStat(11, 60, 1); // 21 ticks
    writeStat(12, 7, 2, "libuv-worker"); // 9 ticks, new
    // 1,650,000 us in all; the process's own figure may be off by up to a tick (10,000 us) a thread.
    expect(threads.split(1_650_000 + 25_000)).toEqual({ mainUs: 1_350_000, otherUs: 300_000 });
    expect(threads.split(1_650_000 - 25_000)).toEqual({ mainUs: 1_350_000, otherUs: 300_000 });
    // Three threads: a tick each (30,000 us) is the most it may be off.
    expect(threads.split(1_650_000 + 30_000)).toEqual({ mainUs: 1_350_000, otherUs: 300_000 });
    expect(threads.split(1_650_000 - 30_001)).toBeUndefined();
  });

  it("counts a thread that ended inside the stretch among those whose tick the total may miss, and still splits", () => {
    const threads = stretch({ 10: 0, 11: 0, 12: 0 }, { 10: 100, 11: 20 });
    rmSync(join(taskDir, "12"), { recursive: true });
    // Thread 12's last 2.5 ticks are lost with it: within a tick of each of the three threads.
    expect(threads.split(1_200_000 + 25_000)).toEqual({ mainUs: 1_000_000, otherUs: 200_000 });
  });

  it("still splits when a thread ends between the listing and the read of its stat file", () => {
    const threads = stretch({ 10: 0 }, { 10: 100 });
    mkdirSync(join(taskDir, "13")); // listed, its stat file gone (ENOENT)
    expect(threads.split(1_000_000)).toEqual({ mainUs: 1_000_000, otherUs: 0 });
  });

  it("is unavailable, not all CPU on the other threads, when the main thread is not among the tasks (a /proc of another pid namespace)", () => {
    expect(stretch({ 11: 0 }, { 11: 100 }).split(1_000_000)).toBeUndefined();
  });

  it("is unavailable when a thread's time went down (its tid reused by a new thread), though the sum agrees", () => {
    expect(stretch({ 10: 0, 11: 50 }, { 10: 100, 11: 30 }).split(800_000)).toBeUndefined();
    // The main thread's own, the others' time going up by as much.
    expect(stretch({ 10: 50, 11: 0 }, { 10: 30, 11: 100 }).split(800_000)).toBeUndefined();
  });

  it("turns ticks into microseconds by the clock ticks it is given, not the system's", () => {
    writeStat(10, 0, 0);
    const threads = threadCpuMeter({ taskDir, mainTid: 10, clockTicks: 1_000 });
    writeStat(10, 100, 20);
    writeStat(11, 30, 0);
    // 150 ticks of 1 ms each.
    expect(threads.split(150_000)).toEqual({ mainUs: 120_000, otherUs: 30_000 });
  });

  it("leaves the split out when it is further from the process's own total than a tick a thread: the tick length is wrong", () => {
    const threads = stretch({ 10: 0, 11: 0 }, { 10: 100, 11: 20 });
    // 1.2 s by the ticks: a process that took 120 ms had ticks of 1 ms, not 10 ms.
    expect(threads.split(120_000)).toBeUndefined();
    expect(threads.split(1_200_000 + 30_000)).toBeUndefined();
    expect(threads.split(1_200_000)).toEqual({ mainUs: 1_000_000, otherUs: 200_000 });
  });

  it("is unavailable, not zeros, where the task directory cannot be read (macOS, Windows, a locked-down /proc)", () => {
    expect(threadCpuMeter({ taskDir: join(taskDir, "missing"), mainTid: 10, clockTicks: 100 }).split(0)).toBeUndefined();
    // Readable at the start, gone at the end.
    writeStat(10, 0, 0);
    const threads = meter();
    rmSync(join(taskDir, "10"), { recursive: true });
    expect(threads.split(0)).toBeUndefined();
  });

  it("is unavailable where the task directory holds an entry that is no thread id: it is not a /proc task directory", () => {
    writeStat(10, 0, 0);
    mkdirSync(join(taskDir, "self"));
    const threads = meter();
    writeStat(10, 100, 0);
    expect(threads.split(1_000_000)).toBeUndefined();
  });

  it("is unavailable when a stat file does not parse", () => {
    writeStat(10, 0, 0);
    const threads = meter();
    writeFileSync(join(taskDir, "10", "stat"), "garbage");
    expect(threads.split(0)).toBeUndefined();
    // Another thread's, the main thread's fine.
    writeStat(10, 0, 0);
    writeStat(11, 0, 0);
    const again = meter();
    writeFileSync(join(taskDir, "11", "stat"), "garbage");
    expect(again.split(0)).toBeUndefined();
  });

  it.runIf(process.platform === "linux")("splits this process's real CPU on Linux, the busy main thread taking most of it", () => {
    const threads = threadCpuMeter();
    const before = process.cpuUsage();
    // 200 ms of this process's CPU, not of wall time: on a loaded machine the loop gets less than its wall time.
    const used = () => {
      const { user, system } = process.cpuUsage(before);
      return user + system;
    };
    for (let x = 0; used() < 200_000; ) for (let i = 0; i < 10_000; i += 1) x += Math.sqrt(x + i);
    const cpu = process.cpuUsage(before);
    const split = threads.split(cpu.user + cpu.system);
    expect(split).toBeDefined();
    expect(split!.mainUs).toBeGreaterThan(split!.otherUs);
    expect(split!.mainUs).toBeGreaterThanOrEqual(100_000);
  });
});
