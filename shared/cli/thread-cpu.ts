/**
 * The CPU of a stretch of work split between the process's main thread and its other threads (V8's platform workers:
 * concurrent compiles and GC helpers; the libuv pool), read from Linux's `/proc/self/task/<tid>/stat`. Used by the
 * bench for the bridge's drain and by its `--baseline` child for the minimal client's. Where `/proc` cannot be read
 * (macOS, Windows, a locked-down `/proc`) or its figures do not add up, there is no split: the bench prints none.
 */
import { readdirSync, readFileSync } from "node:fs";
import { endianness } from "node:os";

/** CPU of one stretch of work, microseconds. */
export interface ThreadCpuSplit {
  /** The thread running JavaScript (its tid is the process id). */
  readonly mainUs: number;
  /** Every other thread of the process, those started during the stretch included. */
  readonly otherUs: number;
}

/** Measures from its creation; {@link ThreadCpuMeter.split} ends the stretch. */
export interface ThreadCpuMeter {
  /**
   * The split since the meter was made, checked against `processCpuUs` (`process.cpuUsage`'s user + system over a
   * stretch inside the meter's); undefined where the split is unavailable or does not agree with it.
   */
  split(processCpuUs: number): ThreadCpuSplit | undefined;
}

export interface ThreadCpuOptions {
  /** @default "/proc/self/task" */
  readonly taskDir?: string;
  /** @default the main thread's tid, which on Linux is the process id */
  readonly mainTid?: number;
  /** Clock ticks per second of the stat files' times. @default AT_CLKTCK of /proc/self/auxv, else 100 */
  readonly clockTicks?: number;
}

/** `/proc`'s times are in USER_HZ ticks, which `getconf CLK_TCK` reports; Node has no sysconf, so it comes from auxv. */
const AT_CLKTCK = 17;
/** USER_HZ on nearly every Linux; assumed when auxv cannot be read (the split's check below catches a wrong guess). */
const ASSUMED_CLOCK_TICKS = 100;

/**
 * Clock ticks a second from an auxiliary vector (`/proc/self/auxv`: pairs of machine words, type then value, ended by
 * type 0), or undefined when it holds no sensible AT_CLKTCK.
 *
 * @example
 * clockTicksOfAuxv(readFileSync("/proc/self/auxv"), 8, true); // 100
 */
export function clockTicksOfAuxv(auxv: Buffer, wordBytes: 4 | 8, littleEndian: boolean): number | undefined {
  const word = (offset: number): number => {
    if (wordBytes === 4) return littleEndian ? auxv.readUInt32LE(offset) : auxv.readUInt32BE(offset);
    return Number(littleEndian ? auxv.readBigUInt64LE(offset) : auxv.readBigUInt64BE(offset));
  };
  for (let offset = 0; offset + 2 * wordBytes <= auxv.length; offset += 2 * wordBytes) {
    const type = word(offset);
    if (type === 0) return undefined;
    if (type === AT_CLKTCK) {
      const ticks = word(offset + wordBytes);
      return Number.isInteger(ticks) && ticks > 0 && ticks <= 1_000_000 ? ticks : undefined;
    }
  }
  return undefined;
}

function systemClockTicks(): number {
  try {
    const wordBytes = /64|s390x/.test(process.arch) ? 8 : 4;
    return clockTicksOfAuxv(readFileSync("/proc/self/auxv"), wordBytes, endianness() === "LE") ?? ASSUMED_CLOCK_TICKS;
  } catch {
    return ASSUMED_CLOCK_TICKS;
  }
}

/**
 * utime + stime, in clock ticks, of a `/proc/<pid>/task/<tid>/stat` line, or undefined when it is not one. The thread
 * name (field 2) may hold spaces and parentheses, so the fields after it start after the LAST ") ".
 *
 * @example
 * parseThreadStat("4242 (node (x) y) R 1 2 3 4 5 6 7 8 9 10 120 30 0 0 20 0 11"); // 150
 */
export function parseThreadStat(line: string): number | undefined {
  const nameEnd = line.lastIndexOf(") ");
  if (nameEnd < 0) return undefined;
  // Fields 3 (state) onwards: utime and stime are fields 14 and 15.
  const fields = line.slice(nameEnd + 2).trim().split(" ");
  const [utime, stime] = [fields[11], fields[12]];
  if (utime === undefined || stime === undefined || !/^\d+$/.test(utime) || !/^\d+$/.test(stime)) return undefined;
  return Number(utime) + Number(stime);
}

/** Ticks of each thread by tid, or undefined when the task directory or any stat line cannot be read. */
function sampleThreads(taskDir: string): Map<number, number> | undefined {
  try {
    const ticks = new Map<number, number>();
    for (const tid of readdirSync(taskDir)) {
      if (!/^\d+$/.test(tid)) return undefined;
      let line: string;
      try {
        line = readFileSync(`${taskDir}/${tid}/stat`, "utf8");
      } catch (error) {
        // A thread that ended between the listing and the read: its time is lost, which the check below may catch.
        if ((error as NodeJS.ErrnoException).code === "ENOENT" || (error as NodeJS.ErrnoException).code === "ESRCH") continue;
        throw error;
      }
      const total = parseThreadStat(line);
      if (total === undefined) return undefined;
      ticks.set(Number(tid), total);
    }
    return ticks.size > 0 ? ticks : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Starts measuring each thread's CPU. Call it before the stretch's `process.cpuUsage()` and `split` after the stretch's
 * own, so the meter's stretch holds the process's.
 *
 * @example
 * const threads = threadCpuMeter();
 * const before = process.cpuUsage();
 * await work();
 * const cpu = process.cpuUsage(before);
 * const split = threads.split(cpu.user + cpu.system); // { mainUs: 1_300_000, otherUs: 300_000 } or undefined
 */
export function threadCpuMeter(options: ThreadCpuOptions = {}): ThreadCpuMeter {
  const taskDir = options.taskDir ?? "/proc/self/task";
  const mainTid = options.mainTid ?? process.pid;
  const before = sampleThreads(taskDir);
  return {
    split(processCpuUs) {
      const after = before === undefined ? undefined : sampleThreads(taskDir);
      if (before === undefined || after === undefined || !after.has(mainTid)) return undefined;
      const tickUs = 1_000_000 / (options.clockTicks ?? systemClockTicks());
      let mainUs = 0;
      let otherUs = 0;
      for (const [tid, ticks] of after) {
        // A thread started during the stretch counts whole.
        const us = (ticks - (before.get(tid) ?? 0)) * tickUs;
        if (tid === mainTid) mainUs = us;
        else otherUs += us;
      }
      // Each thread's time is truncated to a tick, so the sum may miss the process's total by up to a tick a thread;
      // further off, the tick length is wrong or a thread ended inside the stretch, and the split would mislead.
      const threads = new Set([...before.keys(), ...after.keys()]).size;
      if (Math.abs(mainUs + otherUs - processCpuUs) > threads * tickUs || mainUs < 0 || otherUs < 0) return undefined;
      return { mainUs, otherUs };
    },
  };
}
