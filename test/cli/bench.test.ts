/**
 * `bridge bench` in-process: what its drain measures.
 */
import type * as childProcess from "node:child_process";
import type { Serializable } from "node:child_process";
import { describe, expect, it, vi } from "vitest";
import type { BenchArgs } from "../../shared/cli/args.js";
import { benchCommand } from "../../shared/cli/bench.js";
import { EXIT } from "../../shared/cli/errors.js";
import { CycleLeaseGuard } from "../../shared/cli/lease-guard.js";
import type * as threadCpu from "../../shared/cli/thread-cpu.js";
import type * as nodeTransport from "../../shared/qashio/node-transport.js";
import type * as bridgeIndex from "../../shared/bridge/index.js";
import type * as benchReport from "../../shared/cli/bench-report.js";
import { ROOT } from "./helpers.js";

/** Page faults the thread CPU meter's samples are counted as making (see the test of the page faults measured). */
const meterFaults = vi.hoisted(() => ({ count: 0 }));

// The real meter, each of whose samples (at its start and at its split) counts a million page faults.
vi.mock("../../shared/cli/thread-cpu.js", async (importOriginal) => {
  const real = await importOriginal<typeof threadCpu>();
  return {
    ...real,
    threadCpuMeter: (...args: Parameters<typeof real.threadCpuMeter>) => {
      meterFaults.count += 1_000_000;
      const meter = real.threadCpuMeter(...args);
      return {
        split: (processCpuUs: number) => {
          meterFaults.count += 1_000_000;
          return meter.split(processCpuUs);
        },
      };
    },
  };
});

/** URLs of every request sent over the real transport, in order. */
const sent = vi.hoisted(() => ({ urls: [] as string[] }));

vi.mock("../../shared/qashio/node-transport.js", async (importOriginal) => {
  const real = await importOriginal<typeof nodeTransport>();
  return {
    ...real,
    nodeHttpFetch: (...args: Parameters<typeof real.nodeHttpFetch>) => {
      sent.urls.push(args[0]);
      return real.nodeHttpFetch(...args);
    },
  };
});

/** Set by a test: the events the bench is told each cycle published, one short of the real count. */
const shortEvents = vi.hoisted(() => ({ on: false }));

vi.mock("../../shared/bridge/index.js", async (importOriginal) => {
  const real = await importOriginal<typeof bridgeIndex>();
  return {
    ...real,
    totalPublished: (...args: Parameters<typeof real.totalPublished>) => real.totalPublished(...args) - (shortEvents.on ? 1 : 0),
  };
});

/** Set by a test: calls added to the floor, so a small run's calls and wall time fall inside their budgets. */
const floorPadding = vi.hoisted(() => ({ calls: 0 }));

vi.mock("../../shared/cli/bench-report.js", async (importOriginal) => {
  const real = await importOriginal<typeof benchReport>();
  return {
    ...real,
    floorOf: (...args: Parameters<typeof real.floorOf>) => {
      const floor = real.floorOf(...args);
      return { ...floor, calls: floor.calls + floorPadding.calls };
    },
  };
});

/** Set by a test: the client secret the `--baseline` child is sent in place of the right one (its code exchange refused). */
const baselineSecret = vi.hoisted(() => ({ wrong: undefined as string | undefined }));

vi.mock("node:child_process", async (importOriginal) => {
  const real = await importOriginal<typeof childProcess>();
  return {
    ...real,
    fork: (...args: Parameters<typeof real.fork>) => {
      const child = real.fork(...args);
      const wrong = baselineSecret.wrong;
      if (wrong !== undefined && String(args[0]).endsWith("bench-baseline.ts")) {
        const send = child.send.bind(child) as (message: Serializable) => boolean;
        child.send = ((message: Serializable) => send({ ...(message as object), clientSecret: wrong })) as typeof child.send;
      }
      return child;
    },
  };
});

/** Runs the bench in-process (100 transactions, latency 0, --json unless told); `onStderr` sees each chunk as written. */
async function runBench(
  args: Partial<BenchArgs>,
  onStderr: (chunk: string) => void = () => {},
): Promise<{ code: number; stdout: string; stderr: string; json: Record<string, unknown> }> {
  let stdout = "";
  let stderr = "";
  const code = await benchCommand(
    { transactions: 100, latencyMs: 0, json: true, sink: "jsonl", check: false, baseline: false, ...args },
    {
      env: {},
      cwd: ROOT,
      stdout: { write: (chunk: string) => (stdout += chunk) },
      stderr: { write: (chunk: string) => (onStderr(chunk), (stderr += chunk)) },
      signal: new AbortController().signal,
    },
  );
  return { code, stdout, stderr, json: JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as Record<string, unknown> };
}

describe("bridge bench's drain", () => {
  it("counts none of the thread CPU meter's own page faults (it reads /proc) in the drain's", async () => {
    const resourceUsage = process.resourceUsage.bind(process);
    vi.spyOn(process, "resourceUsage").mockImplementation(() => {
      const usage = resourceUsage();
      return { ...usage, minorPageFault: usage.minorPageFault + meterFaults.count };
    });
    let stderr = "";
    try {
      const code = await benchCommand(
        { transactions: 100, latencyMs: 0, json: true, sink: "jsonl", check: false, baseline: false },
        { env: {}, cwd: ROOT, stdout: { write: () => true }, stderr: { write: (chunk: string) => (stderr += chunk) }, signal: new AbortController().signal },
      );
      expect(code, stderr).toBe(EXIT.ok);
    } finally {
      vi.restoreAllMocks();
    }
    const faults = Number(/minor page faults during the drain: (\d+)/.exec(stderr)?.[1]);
    expect(faults).toBeGreaterThan(0);
    expect(faults).toBeLessThan(1_000_000);
  }, 60_000);

  it("runs under the cycle lease, as `run` does, so the lease check before each write (events, snapshots, acknowledge) is in the CPU it measures", async () => {
    const during = CycleLeaseGuard.prototype.during;
    const check = CycleLeaseGuard.prototype.check;
    let leases = 0;
    let checksUnderLease = 0;
    vi.spyOn(CycleLeaseGuard.prototype, "during").mockImplementation(async function <T>(this: CycleLeaseGuard, ...args: Parameters<typeof during>) {
      leases += 1;
      try {
        return (await during.apply(this, args)) as T;
      } finally {
        leases -= 1;
      }
    });
    vi.spyOn(CycleLeaseGuard.prototype, "check").mockImplementation(function (this: CycleLeaseGuard) {
      if (leases > 0) checksUnderLease += 1;
      return check.call(this);
    });
    let stdout = "";
    let stderr = "";
    try {
      const code = await benchCommand(
        { transactions: 200, latencyMs: 0, json: true, sink: "jsonl", check: false, baseline: false },
        {
          env: {},
          cwd: ROOT,
          stdout: { write: (chunk: string) => (stdout += chunk) },
          stderr: { write: (chunk: string) => (stderr += chunk) },
          signal: new AbortController().signal,
        },
      );
      expect(code, stderr).toBe(EXIT.ok);
    } finally {
      vi.restoreAllMocks();
    }
    expect(JSON.parse(stdout.trim().split("\n").at(-1) ?? "")).toMatchObject({ transactions: 200, events: 200 });
    // Two pages: each one's events, snapshots and acknowledge are written after a look at the lease.
    expect(checksUnderLease).toBeGreaterThanOrEqual(6);
  }, 60_000);

  it("with --check, exits 1 and names the budget when one is missed (here peak RSS, 300 MB)", async () => {
    const resourceUsage = process.resourceUsage.bind(process);
    vi.spyOn(process, "resourceUsage").mockImplementation(() => ({ ...resourceUsage(), maxRSS: 300 * 1024 }));
    try {
      const { code, stderr } = await runBench({ latencyMs: 1, check: true });
      expect(code, stderr).toBe(EXIT.failed);
      expect(stderr).toMatch(/^bench --check: budget missed: peak RSS 300 MB, budget < 200 MB$/m);
    } finally {
      vi.restoreAllMocks();
    }
  }, 60_000);

  it("with --check, exits 0 and prints no missed budget when every budget holds, the JSON line still stdout's last", async () => {
    const cpuUsage = process.cpuUsage.bind(process);
    const resourceUsage = process.resourceUsage.bind(process);
    // The drain's CPU 5 ms (50 us a transaction), peak RSS 150 MB; a floor of 10,000 calls (10 s at 1 ms) that the
    // drain's calls and wall time are well inside.
    vi.spyOn(process, "cpuUsage").mockImplementation((previous) => (previous === undefined ? cpuUsage() : { user: 4_000, system: 1_000 }));
    vi.spyOn(process, "resourceUsage").mockImplementation(() => ({ ...resourceUsage(), maxRSS: 150 * 1024 }));
    floorPadding.calls = 10_000;
    try {
      const { code, stderr, json } = await runBench({ latencyMs: 1, check: true });
      expect(code, stderr).toBe(EXIT.ok);
      expect(json).toMatchObject({ transactions: 100, cpu_us_per_txn: 50, peak_rss_mb: 150 });
      expect(stderr).not.toContain("budget missed");
      expect(stderr).not.toMatch(/^ {2}MISS /m);
    } finally {
      floorPadding.calls = 0;
      vi.restoreAllMocks();
    }
  }, 60_000);

  it("counts the drain's user and system CPU both, per transaction, against a floor of full pages and full acknowledge batches", async () => {
    const cpuUsage = process.cpuUsage.bind(process);
    // The drain's CPU (the one reading taken since an earlier one) as 1.5 s user and 0.5 s system.
    vi.spyOn(process, "cpuUsage").mockImplementation((previous) => (previous === undefined ? cpuUsage() : { user: 1_500_000, system: 500_000 }));
    try {
      const { code, stderr, json } = await runBench({ transactions: 200 });
      expect(code, stderr).toBe(EXIT.ok);
      // 2 s over 200 transactions; 2 full pages, the empty outdated page and 2 acknowledge batches of 100.
      expect(json).toMatchObject({ cpu_us_per_txn: 10_000, floor_calls: 5 });
    } finally {
      vi.restoreAllMocks();
    }
  }, 60_000);

  it("counts the drain's provider calls only, not the read after it that confirms nothing is left not_synced", async () => {
    let drainFrom = -1;
    const { code, stderr, json } = await runBench({ transactions: 200 }, (chunk) => {
      if (chunk.includes("bench: draining")) drainFrom = sent.urls.length;
    });
    expect(code, stderr).toBe(EXIT.ok);
    expect(drainFrom).toBeGreaterThanOrEqual(0);
    const afterStart = sent.urls.slice(drainFrom);
    const confirming = new URL(afterStart.at(-1) ?? "http://x/").searchParams;
    expect([confirming.get("client_sync_status"), confirming.get("page_size")]).toEqual(["not_synced", "1"]);
    expect(json).toMatchObject({ provider_calls: afterStart.length - 1 });
  }, 60_000);

  it("with --baseline, exits 1 after the bridge's report when the minimal client fails, saying why on stderr: the JSON line stays stdout's last, no secret in sight", async () => {
    const wrong = "wrong-baseline-secret-5f2c";
    baselineSecret.wrong = wrong;
    const { code, stdout, stderr, json } = await runBench({ baseline: true }).finally(() => (baselineSecret.wrong = undefined));
    expect(code, stderr).toBe(EXIT.failed);
    expect(stdout.trim().split("\n")).toHaveLength(1);
    // The bridge's own numbers stand; the baseline's key is left out, not made up.
    expect(json).toMatchObject({ transactions: 100, events: 100 });
    expect(json).not.toHaveProperty("baseline_cpu_us_per_txn");
    const failure = stderr.trim().split("\n").at(-1) ?? "";
    expect(failure).toMatch(/^bench --baseline: the minimal client failed: /);
    expect(stderr.indexOf("note: acknowledged 100;")).toBeLessThan(stderr.indexOf(failure));
    expect(stderr).not.toContain(wrong);
    expect(stderr).not.toMatch(/^CPU floor /m);
  }, 60_000);

  it("exits 1 for a drain whose events fall short of the backlog, saying so, whatever the budgets", async () => {
    shortEvents.on = true;
    try {
      const { code, stderr } = await runBench({});
      expect(code, stderr).toBe(EXIT.failed);
      expect(stderr).toMatch(/^bench: inconsistent drain: \d+ events for 100 transactions, 0 left not_synced$/m);
    } finally {
      shortEvents.on = false;
    }
  }, 60_000);
});
