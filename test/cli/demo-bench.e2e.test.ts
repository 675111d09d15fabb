/**
 * End-to-end: `npm start` (demo) and `npm run bench` as child processes, as a person runs them.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { EXIT } from "../../shared/cli/errors.js";
import { ROOT, spawnBridge, TSX_LOADER } from "./helpers.js";

describe("bridge demo --cycles 2", () => {
  it("prints one line per event and a summary per cycle, without colour on a pipe, and exits 0", async () => {
    const { code, stdout, stderr } = await spawnBridge(["demo", "--cycles", "2", "--interval", "0ms"], {}).outcome;

    expect(code, stderr).toBe(EXIT.ok);
    expect(stdout).toMatch(/sandbox at http:\/\/127\.0\.0\.1:\d+/);
    const eventsFile = /events are appended to (\S+events\.jsonl)/.exec(stdout)?.[1];
    expect(eventsFile).toBeDefined();
    expect(stdout).toMatch(/^\d{2}-\d{2} \d{2}:\d{2}:\d{2} {2}transaction\.created {2}CT\d+/m);
    expect(stdout).toMatch(/^── cycle 1: \d+ events \(\d+ transaction\.created\)/m);
    expect(stdout).toMatch(/sandbox activity: \d new purchases?/);
    expect(stdout).toMatch(/^── cycle 2: /m);
    expect(stdout).toContain("stopped after 2 cycles");
    // Its temp directory goes with it (no --keep).
    expect(existsSync(dirname(eventsFile as string))).toBe(false);
    expect(stdout).not.toContain("\u001b[");
  });
});

/** The events file a demo names on its stdout, once what it printed so far also satisfies `ready`. */
function eventsFileOf(child: ReturnType<typeof spawnBridge>, ready: (seen: string) => boolean): Promise<string> {
  let seen = "";
  return new Promise<string>((resolve) => {
    child.stdout?.on("data", (chunk: Buffer) => {
      seen += chunk.toString();
      const found = /events are appended to (\S+events\.jsonl)/.exec(seen)?.[1];
      if (found !== undefined && ready(seen)) resolve(found);
    });
  });
}

describe("bridge demo with its stdout closed (npm start | head)", () => {
  it("stops cleanly and removes its temp directory instead of dying of an unhandled EPIPE", async () => {
    const child = spawnBridge(["demo", "--interval", "0ms"], {});
    const eventsFile = await eventsFileOf(child, () => true);
    // The reader goes away, as `head` does once it has its lines.
    child.stdout?.destroy();
    const { code, stderr } = await child.outcome;

    expect(stderr).not.toContain("Unhandled 'error' event");
    expect(code, stderr).toBe(EXIT.ok);
    expect(existsSync(dirname(eventsFile))).toBe(false);
  });
});

describe("bridge demo when its terminal is closed (SIGHUP)", () => {
  it("stops cleanly as on Ctrl-C and removes its temp directory, sandbox tokens included, instead of dying with it left behind", async () => {
    const child = spawnBridge(["demo", "--interval", "1h"], {});
    const eventsFile = await eventsFileOf(child, (seen) => seen.includes("── cycle 1:"));
    child.kill("SIGHUP");
    const { code, stdout, stderr } = await child.outcome;

    expect({ code, signal: child.signalCode }, stderr).toEqual({ code: EXIT.ok, signal: null });
    expect(stdout).toContain(`stopped after 1 cycle; removed ${dirname(eventsFile)}`);
    expect(existsSync(dirname(eventsFile))).toBe(false);
  });
});

describe("bridge bench --transactions 500 --latency-ms 1 --json", () => {
  it("ends with one JSON line whose numbers agree with each other", async () => {
    const { code, stdout, stderr } = await spawnBridge(["bench", "--transactions", "500", "--latency-ms", "1", "--json"], {}).outcome;

    expect(code, stderr).toBe(EXIT.ok);
    const last = stdout.trim().split("\n").at(-1) ?? "";
    const result = JSON.parse(last) as Record<string, number>;
    expect(Object.keys(result)).toEqual([
      "transactions",
      "events",
      "provider_calls",
      "floor_calls",
      "wall_ms",
      "floor_ms",
      "cpu_us_per_txn",
      "peak_rss_mb",
      "latency_ms",
    ]);
    expect(result.transactions).toBe(500);
    expect(result.events).toBe(500);
    expect(result.latency_ms).toBe(1);
    expect(result.provider_calls).toBeGreaterThanOrEqual(result.floor_calls as number);
    // Deterministic budget: the floor plus the token refresh and a little slack, never a page read twice.
    expect(result.provider_calls).toBeLessThanOrEqual((result.floor_calls as number) + 3);
    expect(result.events).toBe(result.transactions);
    expect(result.floor_ms).toBe((result.floor_calls as number) * 1);
    expect(result.wall_ms).toBeGreaterThanOrEqual(result.floor_ms as number);
    expect(result.cpu_us_per_txn).toBeGreaterThan(0);
    expect(result.peak_rss_mb).toBeGreaterThan(0);
    // The human report goes to stderr with --json, so stdout stays machine-readable.
    expect(stderr).toContain("budget check (the budgets are set for a backlog of 10000 or more;");
    // The runtime the CPU figure was measured on: the one running the bench.
    expect(stderr).toContain(`note: runtime: Node ${process.version} (V8 ${process.versions.v8})`);
  });
});

describe("bridge bench interrupted by a terminal's Ctrl-C", () => {
  it("finishes its drain and reports: the Ctrl-C reaches the whole process group, but the sandbox child is kept out of it", async () => {
    // A process group of its own, as a shell gives a foreground job: the signal goes to every process in it.
    const child = spawn(process.execPath, ["--import", TSX_LOADER, join(ROOT, "bridge.ts"), "bench", "--transactions", "3000", "--latency-ms", "20", "--json"], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    const draining = new Promise<void>((resolve) =>
      child.stderr.on("data", (chunk: Buffer) => {
        stderr += chunk.toString();
        if (stderr.includes("bench: draining")) resolve();
      }),
    );
    const closed = new Promise<number | null>((resolve) => child.on("close", resolve));
    await draining;
    process.kill(-(child.pid as number), "SIGINT");
    const code = await closed;
    expect(code, stderr).toBe(EXIT.ok);
    expect(stderr).toContain("stopping cleanly once this finishes");
    expect(JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}")).toMatchObject({ transactions: 3000, events: 3000 });
  });
});

describe("bridge bench --transactions 300 --latency-ms 1 --json --baseline", () => {
  it("also drains an equal backlog with the minimal client and reports its CPU per transaction", async () => {
    const { code, stdout, stderr } = await spawnBridge(["bench", "--transactions", "300", "--latency-ms", "1", "--json", "--baseline"], {}).outcome;

    expect(code, stderr).toBe(EXIT.ok);
    const result = JSON.parse(stdout.trim().split("\n").at(-1) ?? "") as Record<string, number>;
    expect(Object.keys(result).at(-1)).toBe("baseline_cpu_us_per_txn");
    expect(result.transactions).toBe(300);
    expect(result.baseline_cpu_us_per_txn).toBeGreaterThan(0);
    // The bench refuses (exit 1) a baseline that did not acknowledge the whole backlog, so exit 0 says it did.
    expect(stderr).toContain("bench: --baseline: draining an equal backlog with a minimal client");
    expect(stderr).toMatch(/^CPU floor {9}[\d.]+ us \(--baseline: /m);
    // Where /proc tells each thread's CPU, the drain's and the minimal client's split by thread (thread-cpu.ts).
    if (existsSync("/proc/self/task")) {
      expect(stderr).toMatch(/^note: CPU split per transaction: .*; main thread [\d.]+ us, other threads [\d.]+ us \(V8's/m);
      expect(stderr).toMatch(/^note: CPU floor split per transaction \(--baseline\): main thread [\d.]+ us, other threads [\d.]+ us /m);
    }
  });
});

