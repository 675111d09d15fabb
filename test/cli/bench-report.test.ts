import { describe, expect, it } from "vitest";
import {
  baselineSplitNote,
  budgetVerdict,
  checkBudgets,
  cpuSplitNote,
  drainProblem,
  floorOf,
  formatBenchReport,
  toBenchJson,
  type BenchMeasurement,
} from "../../shared/cli/bench-report.js";

const measurement: BenchMeasurement = {
  transactions: 10_000,
  events: 10_000,
  providerCalls: 203,
  floorCalls: 201,
  wallMs: 4_500.4,
  latencyMs: 20,
  bridgeCpuUs: 600_000,
  peakRssMb: 123.456,
  notSyncedLeft: 0,
  sink: "jsonl",
  notes: ["sandbox ran in a child process"],
};

describe("floorOf", () => {
  it("counts full pages, one empty outdated page and full acknowledge batches", () => {
    expect(floorOf({ transactions: 10_000, pageSize: 100, ackBatchSize: 100 })).toEqual({ pages: 101, acknowledgeCalls: 100, calls: 201 });
  });

  it("rounds a partial last page and batch up", () => {
    expect(floorOf({ transactions: 150, pageSize: 100, ackBatchSize: 50 })).toEqual({ pages: 3, acknowledgeCalls: 3, calls: 6 });
    // A last page and a last batch under half full still take a call each.
    expect(floorOf({ transactions: 120, pageSize: 100, ackBatchSize: 50 })).toEqual({ pages: 3, acknowledgeCalls: 3, calls: 6 });
  });

  it("still reads the empty not_synced page and the empty outdated page of an empty backlog, and acknowledges nothing", () => {
    expect(floorOf({ transactions: 0, pageSize: 100, ackBatchSize: 100 })).toEqual({ pages: 2, acknowledgeCalls: 0, calls: 2 });
  });
});

describe("toBenchJson", () => {
  it("derives the floor time and CPU per transaction", () => {
    expect(toBenchJson(measurement)).toEqual({
      transactions: 10_000,
      events: 10_000,
      provider_calls: 203,
      floor_calls: 201,
      wall_ms: 4_500,
      floor_ms: 4_020,
      cpu_us_per_txn: 60,
      peak_rss_mb: 123.5,
      latency_ms: 20,
    });
  });

  it("gives CPU per transaction to the tenth, per transaction of the backlog (not per event), so 100.4 us misses the 100 us budget", () => {
    const json = toBenchJson({ ...measurement, events: 8_000, bridgeCpuUs: 1_004_000, baselineCpuUs: 451_000 });
    expect([json.cpu_us_per_txn, json.baseline_cpu_us_per_txn]).toEqual([100.4, 45.1]);
    expect(checkBudgets(json).find((c) => c.name === "CPU per transaction")).toMatchObject({ actual: "100.4 us", ok: false });
  });

  it("adds the baseline's CPU per transaction, last, only when --baseline measured one", () => {
    const json = toBenchJson({ ...measurement, baselineCpuUs: 450_000 });
    expect(Object.keys(json).at(-1)).toBe("baseline_cpu_us_per_txn");
    expect(json.baseline_cpu_us_per_txn).toBe(45);
    expect("baseline_cpu_us_per_txn" in toBenchJson(measurement)).toBe(false);
  });

  it("keeps the baseline's key at a measured 0 us, and gives a finite bridge ratio to it", () => {
    const m = { ...measurement, baselineCpuUs: 0 };
    expect(toBenchJson(m).baseline_cpu_us_per_txn).toBe(0);
    // Ratios are taken against at least 0.1 us: 60 us / 0.1 us.
    expect(formatBenchReport(m)).toContainEqual(expect.stringMatching(/^CPU floor {9}0 us \(--baseline: .*the bridge takes 600x of it\)$/));
  });

  it("divides the CPU of an empty backlog by one transaction, not by 0 (Infinity, null in JSON)", () => {
    expect(toBenchJson({ ...measurement, transactions: 0, events: 0, baselineCpuUs: 1_000 })).toMatchObject({ cpu_us_per_txn: 600_000, baseline_cpu_us_per_txn: 1_000 });
  });
});

describe("checkBudgets", () => {
  it("passes a run inside every budget", () => {
    expect(checkBudgets(toBenchJson(measurement)).map((c) => [c.name, c.ok])).toEqual([
      ["provider calls", true],
      ["CPU per transaction", true],
      ["wall time", true],
      ["peak RSS", true],
    ]);
  });

  it("flags each budget that is missed", () => {
    const slow = toBenchJson({ ...measurement, providerCalls: 260, bridgeCpuUs: 2_000_000, wallMs: 6_000, peakRssMb: 250 });
    expect(checkBudgets(slow).filter((c) => !c.ok).map((c) => c.name)).toEqual(["provider calls", "CPU per transaction", "wall time", "peak RSS"]);
  });

  it("gives bench --check exit 0 inside every budget and exit 1 naming each missed budget", () => {
    expect(budgetVerdict(toBenchJson(measurement))).toEqual({ code: 0, lines: [] });
    const verdict = budgetVerdict(toBenchJson({ ...measurement, wallMs: 6_000, peakRssMb: 250 }));
    expect(verdict.code).toBe(1);
    // Each line says the figure and the budget it missed.
    expect(verdict.lines).toEqual([
      "bench --check: budget missed: wall time 6000 ms (1.493x floor), budget <= 1.2x",
      "bench --check: budget missed: peak RSS 250 MB, budget < 200 MB",
    ]);
  });

  it("holds each budget of issue 4 at its very number and misses it just past: calls <= 1.05x, CPU <= 100 us, wall <= 1.2x, RSS < 200 MB", () => {
    const inside = { transactions: 10_000, events: 10_000, provider_calls: 20, floor_calls: 20, wall_ms: 1_000, floor_ms: 1_000, cpu_us_per_txn: 50, peak_rss_mb: 100, latency_ms: 20 };
    const okOf = (json: typeof inside, name: string) => checkBudgets(json).find((c) => c.name === name)?.ok;
    for (const [name, at, past] of [
      ["provider calls", { provider_calls: 21 }, { provider_calls: 22 }],
      ["CPU per transaction", { cpu_us_per_txn: 100 }, { cpu_us_per_txn: 100.1 }],
      ["wall time", { wall_ms: 1_200 }, { wall_ms: 1_201 }],
      ["peak RSS", { peak_rss_mb: 199.9 }, { peak_rss_mb: 200 }],
    ] as const) {
      expect(okOf({ ...inside, ...at }, name), `${name} at its budget`).toBe(true);
      expect(okOf({ ...inside, ...past }, name), `${name} past its budget`).toBe(false);
    }
  });

  it("gives bench --check exit 1 for any one budget missed alone, naming it", () => {
    for (const [name, miss] of [
      ["provider calls", { providerCalls: 260 }],
      ["CPU per transaction", { bridgeCpuUs: 2_000_000 }],
      ["wall time", { wallMs: 6_000 }],
      ["peak RSS", { peakRssMb: 250 }],
    ] as const) {
      expect(budgetVerdict(toBenchJson({ ...measurement, ...miss }))).toEqual({ code: 1, lines: [expect.stringMatching(new RegExp(`^bench --check: budget missed: ${name} `))] });
    }
  });

  it("skips the wall budget when there is no latency to compare with", () => {
    expect(checkBudgets(toBenchJson({ ...measurement, latencyMs: 0 })).map((c) => c.name)).not.toContain("wall time");
  });
});

describe("formatBenchReport", () => {
  it("prints the numbers, the budget verdicts and the notes", () => {
    const text = formatBenchReport(measurement).join("\n");
    expect(text).toContain("provider calls    203 (floor 201)");
    expect(text).toContain("floor 4020 ms = 201 calls x 20 ms");
    expect(text).toMatch(/ok {3}CPU per transaction/);
    expect(text).toContain("note: sandbox ran in a child process");
    expect(text).toContain("budget check:\n");
    expect(text).not.toContain("CPU floor");
  });

  it("prints the numbers in full, as the JSON line rounds them: events as counted, CPU, floor CPU and RSS to the tenth, no gap without --baseline", () => {
    const numbers = (m: BenchMeasurement) => formatBenchReport(m).slice(0, formatBenchReport(m).indexOf(""));
    const head = ["transactions      10000", "events            9990", "provider calls    203 (floor 201)", "wall time         4501 ms (floor 4020 ms = 201 calls x 20 ms)", "CPU / transaction 60.4 us (bridge process only)"];
    const odd = { ...measurement, events: 9_990, wallMs: 4_500.6, bridgeCpuUs: 604_400 };
    expect(numbers({ ...odd, baselineCpuUs: 451_200 })).toEqual([
      ...head,
      "CPU floor         45.1 us (--baseline: a minimal client, same machine, same backlog; the bridge takes 1.34x of it)",
      "peak RSS          123.5 MB",
    ]);
    expect(numbers(odd)).toEqual([...head, "peak RSS          123.5 MB"]);
  });

  it("prints each budget's row in full, a missed one as MISS, ratios to the thousandth", () => {
    const lines = formatBenchReport({ ...measurement, providerCalls: 210, wallMs: 5_000 });
    expect(lines.slice(lines.indexOf("budget check:") + 1, lines.indexOf("budget check:") + 5)).toEqual([
      "  ok   provider calls       210 (1.045x floor)           budget <= 1.05x",
      "  ok   CPU per transaction  60 us                        budget <= 100 us",
      "  MISS wall time            5000 ms (1.244x floor)       budget <= 1.2x",
      "  ok   peak RSS             123.5 MB                     budget < 200 MB",
    ]);
  });

  it("judges the wall budget at any latency above 0, however small", () => {
    expect(formatBenchReport({ ...measurement, latencyMs: 1 })).toContain("  MISS wall time            4500 ms (22.388x floor)      budget <= 1.2x");
  });

  it("prints the baseline's CPU and the bridge's ratio to it after the bridge's CPU", () => {
    const lines = formatBenchReport({ ...measurement, baselineCpuUs: 480_000 });
    const cpu = lines.findIndex((l) => l.startsWith("CPU / transaction"));
    expect(lines[cpu + 1]).toMatch(/^CPU floor {9}48 us \(--baseline: .*the bridge takes 1\.25x of it\)$/);
  });

  it("gives no budget an ok for a drain that did not finish or delivered twice: events short of or past the backlog, or transactions left not_synced", () => {
    for (const [drain, problem] of [
      [{ ...measurement, events: 9_900 }, "9900 events for 10000 transactions, 0 left not_synced"],
      [{ ...measurement, notSyncedLeft: 100 }, "10000 events for 10000 transactions, 100 left not_synced"],
      // A single transaction left not_synced is enough: every event delivered does not make a finished drain.
      [{ ...measurement, notSyncedLeft: 1 }, "10000 events for 10000 transactions, 1 left not_synced"],
      [{ ...measurement, events: 10_100 }, "10100 events for 10000 transactions, 0 left not_synced"],
    ] as const) {
      const lines = formatBenchReport(drain);
      expect(lines.filter((l) => /^ {2}(ok|MISS) /.test(l))).toEqual([]);
      expect(lines).toContain(`budget check: none, the drain is inconsistent (${problem}): its numbers measure less than the backlog`);
      expect(drainProblem(drain)).toBe(problem);
    }
    expect(drainProblem(measurement)).toBeUndefined();
  });

  it("judges only the provider calls of a bridge that dropped its events (--sink null), as --check refuses to: the other budgets are a bridge's that writes them", () => {
    const lines = formatBenchReport({ ...measurement, sink: "null" });
    expect(lines.filter((l) => /^ {2}(ok|MISS) /.test(l))).toEqual([expect.stringMatching(/^ {2}ok {3}provider calls /)]);
    for (const name of ["CPU per transaction", "wall time", "peak RSS"]) {
      expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^ {2}-- {3}${name} .* not judged: --sink null drops the events the budget's bridge writes$`)));
    }
  });

  it("shows the wall budget as not judged at --latency-ms 0, saying why, rather than leaving its row out", () => {
    const why = "not judged: --latency-ms 0 makes the floor time 0 ms (floor calls x latency), and the budget is a multiple of it";
    for (const sink of ["jsonl", "null"] as const) {
      const lines = formatBenchReport({ ...measurement, latencyMs: 0, sink });
      const rows = lines.filter((l) => /^ {2}(ok|MISS|--) /.test(l));
      expect(rows.map((l) => l.slice(7, 27).trim())).toEqual(["provider calls", "CPU per transaction", "wall time", "peak RSS"]);
      expect(rows[2]).toMatch(new RegExp(`^ {2}-- {3}wall time {12}4500 ms \\(floor 0 ms\\) +${why.replace(/[()]/g, "\\$&")}$`));
    }
    // The JSON line keeps its documented fields, and --check still has no wall budget to miss.
    expect(Object.keys(toBenchJson({ ...measurement, latencyMs: 0 }))).toEqual([
      "transactions", "events", "provider_calls", "floor_calls", "wall_ms", "floor_ms", "cpu_us_per_txn", "peak_rss_mb", "latency_ms",
    ]);
    expect(budgetVerdict(toBenchJson({ ...measurement, latencyMs: 0 }))).toEqual({ code: 0, lines: [] });
  });

  it("sets the notes off from the budget rows by one blank line, and ends on the last row when there are none", () => {
    const withNotes = formatBenchReport(measurement);
    expect(withNotes.slice(-3)).toEqual([expect.stringMatching(/^ {2}ok {3}peak RSS /), "", "note: sandbox ran in a child process"]);
    expect(formatBenchReport({ ...measurement, notes: [] }).at(-1)).toMatch(/^ {2}ok {3}peak RSS /);
  });

  it("says the budgets are set for a 10,000 backlog when the run is smaller", () => {
    const text = formatBenchReport({ ...measurement, transactions: 300, events: 300 }).join("\n");
    expect(text).toContain("budget check (the budgets are set for a backlog of 10000 or more;");
  });
});

describe("cpuSplitNote and baselineSplitNote", () => {
  it("add the split by thread, per transaction, to the user and system split of the bridge's drain", () => {
    expect(cpuSplitNote(10_000, { user: 1_500_000, system: 300_000 }, { mainUs: 1_400_000, otherUs: 330_000 })).toBe(
      "CPU split per transaction: user 150.0 us, system 30.0 us (all threads of the process); " +
        "main thread 140.0 us, other threads 33.0 us (V8's compiler and GC helpers, the libuv pool)",
    );
  });

  it("leave the split by thread out, rather than print zeros, where it is unavailable", () => {
    const note = cpuSplitNote(10_000, { user: 1_500_000, system: 300_000 }, undefined);
    expect(note).toBe(
      "CPU split per transaction: user 150.0 us, system 30.0 us (all threads of the process: GC helpers and the libuv pool doing file writes and fsync included)",
    );
    expect(note).not.toContain("main thread");
  });

  it("give the minimal client's split by thread in words of its own (--baseline)", () => {
    expect(baselineSplitNote(10_000, { mainUs: 500_000, otherUs: 140_000 })).toBe(
      "CPU floor split per transaction (--baseline): main thread 50.0 us, other threads 14.0 us (V8's compiler and GC helpers, the libuv pool)",
    );
  });

  it("are printed as notes of the report", () => {
    const notes = [cpuSplitNote(500, { user: 60_000, system: 15_000 }, { mainUs: 60_000, otherUs: 15_000 }), baselineSplitNote(500, { mainUs: 20_000, otherUs: 5_000 })];
    const lines = formatBenchReport({ ...measurement, notes });
    expect(lines).toContain("note: CPU split per transaction: user 120.0 us, system 30.0 us (all threads of the process); main thread 120.0 us, other threads 30.0 us (V8's compiler and GC helpers, the libuv pool)");
    expect(lines).toContain("note: CPU floor split per transaction (--baseline): main thread 40.0 us, other threads 10.0 us (V8's compiler and GC helpers, the libuv pool)");
  });
});
