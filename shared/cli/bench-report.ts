/**
 * Arithmetic and rendering of `bridge bench`: the floor a perfect bridge could reach, the budgets
 * of issue 4, and the human and JSON reports. Kept pure so it is tested without a sandbox.
 */

import type { BenchArgs } from "./args.js";
import type { ThreadCpuSplit } from "./thread-cpu.js";

/** Budgets of issue 4 ("Tests and benchmark"). */
export const BUDGETS = {
  /** provider calls <= 1.05 x floor calls */
  callsRatio: 1.05,
  /** CPU per transaction, microseconds */
  cpuUsPerTxn: 100,
  /** wall time <= 1.2 x floor time */
  wallRatio: 1.2,
  /** peak RSS for the 100,000 backlog, MB */
  peakRssMb: 200,
} as const;

export interface FloorInput {
  readonly transactions: number;
  /** Largest page the engine asks for. */
  readonly pageSize: number;
  /** Most ids one acknowledge call carries. */
  readonly ackBatchSize: number;
}

export interface Floor {
  /** List pages that must be read: every backlog page, plus one empty `outdated` page. */
  readonly pages: number;
  readonly acknowledgeCalls: number;
  readonly calls: number;
}

/**
 * The fewest provider calls that can drain a backlog: each transaction read once in full pages,
 * one look at the (empty) `outdated` list, and acknowledgements in full batches.
 *
 * @example
 * floorOf({ transactions: 10_000, pageSize: 100, ackBatchSize: 100 }); // { pages: 101, acknowledgeCalls: 100, calls: 201 }
 */
export function floorOf(input: FloorInput): Floor {
  const pages = Math.max(1, Math.ceil(input.transactions / input.pageSize)) + 1;
  const acknowledgeCalls = Math.ceil(input.transactions / input.ackBatchSize);
  return { pages, acknowledgeCalls, calls: pages + acknowledgeCalls };
}

/** Measurements of one bench run. */
export interface BenchMeasurement {
  readonly transactions: number;
  readonly events: number;
  /** Every provider request the bridge made (token refresh, lists, acknowledges, parent reads). */
  readonly providerCalls: number;
  readonly floorCalls: number;
  readonly wallMs: number;
  readonly latencyMs: number;
  /** CPU of the bridge process only (user + system), microseconds. */
  readonly bridgeCpuUs: number;
  /** With `--baseline`: CPU of the minimal client's drain of an equal backlog (bench-baseline.ts), microseconds. */
  readonly baselineCpuUs?: number;
  readonly peakRssMb: number;
  /** Transactions the provider still listed `not_synced` after the drain (read outside the measurement). */
  readonly notSyncedLeft: number;
  /** Where the events went: with `null` (dropped) only the provider calls are judged; the other budgets are a bridge's that writes them. */
  readonly sink: BenchArgs["sink"];
  /** What the numbers include, printed with them. */
  readonly notes: readonly string[];
}

/** The JSON line of `bench --json` (keys fixed by issue 4; `baseline_cpu_us_per_txn` only with `--baseline`, last). */
export interface BenchJson {
  readonly transactions: number;
  readonly events: number;
  readonly provider_calls: number;
  readonly floor_calls: number;
  readonly wall_ms: number;
  readonly floor_ms: number;
  readonly cpu_us_per_txn: number;
  readonly peak_rss_mb: number;
  readonly latency_ms: number;
  readonly baseline_cpu_us_per_txn?: number;
}

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

/**
 * The JSON object of `--json`.
 *
 * @example
 * JSON.stringify(toBenchJson(measurement));
 */
export function toBenchJson(m: BenchMeasurement): BenchJson {
  return {
    transactions: m.transactions,
    events: m.events,
    provider_calls: m.providerCalls,
    floor_calls: m.floorCalls,
    wall_ms: Math.round(m.wallMs),
    floor_ms: m.floorCalls * m.latencyMs,
    cpu_us_per_txn: round(m.bridgeCpuUs / Math.max(1, m.transactions)),
    peak_rss_mb: round(m.peakRssMb),
    latency_ms: m.latencyMs,
    ...(m.baselineCpuUs === undefined ? {} : { baseline_cpu_us_per_txn: round(m.baselineCpuUs / Math.max(1, m.transactions)) }),
  };
}

export interface BudgetCheck {
  readonly name: string;
  readonly actual: string;
  readonly budget: string;
  readonly ok: boolean;
}

/**
 * Checks a run against the budgets. The wall budget needs a latency above zero to mean anything,
 * and the RSS budget is stated for a 100,000 backlog, so smaller runs are checked against it too (stricter).
 */
export function checkBudgets(json: BenchJson): BudgetCheck[] {
  const callsRatio = json.provider_calls / Math.max(1, json.floor_calls);
  const checks: BudgetCheck[] = [
    { name: "provider calls", actual: `${json.provider_calls} (${round(callsRatio, 3)}x floor)`, budget: `<= ${BUDGETS.callsRatio}x`, ok: callsRatio <= BUDGETS.callsRatio },
    { name: "CPU per transaction", actual: `${json.cpu_us_per_txn} us`, budget: `<= ${BUDGETS.cpuUsPerTxn} us`, ok: json.cpu_us_per_txn <= BUDGETS.cpuUsPerTxn },
  ];
  if (json.floor_ms > 0) {
    const wallRatio = json.wall_ms / json.floor_ms;
    checks.push({ name: "wall time", actual: `${json.wall_ms} ms (${round(wallRatio, 3)}x floor)`, budget: `<= ${BUDGETS.wallRatio}x`, ok: wallRatio <= BUDGETS.wallRatio });
  }
  checks.push({ name: "peak RSS", actual: `${json.peak_rss_mb} MB`, budget: `< ${BUDGETS.peakRssMb} MB`, ok: json.peak_rss_mb < BUDGETS.peakRssMb });
  return checks;
}

/** Backlog the issue's budgets are stated for (the bench default). */
export const BUDGET_BACKLOG = 10_000;

/**
 * Exit code of `bench --check`: 0 when every budget holds, else 1 with one line per missed budget. The CPU and wall
 * budgets depend on the machine, so the check belongs to people and CI jobs on quiet machines, not the default suite.
 *
 * @example
 * const { code, lines } = budgetVerdict(toBenchJson(measurement));
 */
export function budgetVerdict(json: BenchJson): { readonly code: 0 | 1; readonly lines: string[] } {
  const missed = checkBudgets(json).filter((c) => !c.ok);
  return { code: missed.length === 0 ? 0 : 1, lines: missed.map((c) => `bench --check: budget missed: ${c.name} ${c.actual}, budget ${c.budget}`) };
}

/** Why a budget means nothing for a run's options, by budget name (`--check` refuses those options). */
function notJudged(m: Pick<BenchMeasurement, "sink" | "latencyMs">): Readonly<Record<string, string>> {
  // Encoding, writing and fsyncing the events takes CPU, time and buffers; the provider calls are the same either way.
  const dropped = "--sink null drops the events the budget's bridge writes";
  const reasons: Record<string, string> = m.sink === "null" ? { "CPU per transaction": dropped, "wall time": dropped, "peak RSS": dropped } : {};
  if (m.latencyMs === 0) reasons["wall time"] = "--latency-ms 0 makes the floor time 0 ms (floor calls x latency), and the budget is a multiple of it";
  return reasons;
}

/**
 * The budget rows of the report: those of {@link checkBudgets}, and at a floor time of 0 the wall budget too, which
 * checkBudgets leaves out (it has no ratio); shown as not judged so the reader sees it was not forgotten.
 */
function reportRows(json: BenchJson): BudgetCheck[] {
  const checks = checkBudgets(json);
  if (json.floor_ms > 0) return checks;
  const wall: BudgetCheck = { name: "wall time", actual: `${json.wall_ms} ms (floor 0 ms)`, budget: `<= ${BUDGETS.wallRatio}x`, ok: true };
  const rss = checks.findIndex((c) => c.name === "peak RSS");
  return [...checks.slice(0, rss), wall, ...checks.slice(rss)];
}

/**
 * What makes a drain inconsistent (an event short of each transaction, or transactions left `not_synced`), or
 * undefined for a drain of the whole backlog. Such a drain measured less work than the backlog: no budget is judged.
 *
 * @example
 * drainProblem({ ...measurement, events: 9_900 }); // "9900 events for 10000 transactions, 0 left not_synced"
 */
export function drainProblem(m: Pick<BenchMeasurement, "transactions" | "events" | "notSyncedLeft">): string | undefined {
  if (m.events === m.transactions && m.notSyncedLeft === 0) return undefined;
  return `${m.events} events for ${m.transactions} transactions, ${m.notSyncedLeft} left not_synced`;
}

const perTxn = (us: number, transactions: number) => `${(us / Math.max(1, transactions)).toFixed(1)} us`;

/** A split by thread, per transaction, naming what the other threads are. */
function threadSplitText(split: ThreadCpuSplit, transactions: number): string {
  return `main thread ${perTxn(split.mainUs, transactions)}, other threads ${perTxn(split.otherUs, transactions)} (V8's compiler and GC helpers, the libuv pool)`;
}

/**
 * The report's note on where the bridge's drain spent its CPU, per transaction: user and system time, and by thread
 * where /proc told it (`threads` undefined elsewhere: the note leaves the split out rather than print zeros).
 *
 * @example
 * cpuSplitNote(10_000, { user: 1_200_000, system: 300_000 }, { mainUs: 1_200_000, otherUs: 300_000 });
 * // "CPU split per transaction: user 120.0 us, system 30.0 us (all threads of the process); main thread 120.0 us, other threads 30.0 us (...)"
 */
export function cpuSplitNote(transactions: number, cpu: { readonly user: number; readonly system: number }, threads?: ThreadCpuSplit): string {
  const note = `CPU split per transaction: user ${perTxn(cpu.user, transactions)}, system ${perTxn(cpu.system, transactions)}`;
  if (threads === undefined) return `${note} (all threads of the process: GC helpers and the libuv pool doing file writes and fsync included)`;
  return `${note} (all threads of the process); ${threadSplitText(threads, transactions)}`;
}

/**
 * The report's note on the minimal client's (`--baseline`) split by thread, per transaction.
 *
 * @example
 * baselineSplitNote(10_000, { mainUs: 500_000, otherUs: 140_000 });
 * // "CPU floor split per transaction (--baseline): main thread 50.0 us, other threads 14.0 us (...)"
 */
export function baselineSplitNote(transactions: number, threads: ThreadCpuSplit): string {
  return `CPU floor split per transaction (--baseline): ${threadSplitText(threads, transactions)}`;
}

/**
 * The human-readable report: numbers, budgets (none for an inconsistent drain), and what the numbers include.
 *
 * @example
 * console.log(formatBenchReport(measurement).join("\n"));
 */
export function formatBenchReport(m: BenchMeasurement): string[] {
  const json = toBenchJson(m);
  const lines = [
    `transactions      ${json.transactions}`,
    `events            ${json.events}`,
    `provider calls    ${json.provider_calls} (floor ${json.floor_calls})`,
    `wall time         ${json.wall_ms} ms (floor ${json.floor_ms} ms = ${json.floor_calls} calls x ${json.latency_ms} ms)`,
    `CPU / transaction ${json.cpu_us_per_txn} us (bridge process only)`,
    ...(json.baseline_cpu_us_per_txn === undefined
      ? []
      : [
          `CPU floor         ${json.baseline_cpu_us_per_txn} us (--baseline: a minimal client, same machine, same backlog; ` +
            `the bridge takes ${round(json.cpu_us_per_txn / Math.max(0.1, json.baseline_cpu_us_per_txn), 2)}x of it)`,
        ]),
    `peak RSS          ${json.peak_rss_mb} MB`,
    "",
  ];
  const problem = drainProblem(m);
  if (problem !== undefined) {
    lines.push(`budget check: none, the drain is inconsistent (${problem}): its numbers measure less than the backlog`);
  } else {
    lines.push(
      json.transactions < BUDGET_BACKLOG
        ? `budget check (the budgets are set for a backlog of ${BUDGET_BACKLOG} or more; below it fixed costs, the confirming read and warm-up, weigh more):`
        : "budget check:",
      ...reportRows(json).map((c) => {
        const why = notJudged(m)[c.name];
        return `  ${why !== undefined ? "--  " : c.ok ? "ok  " : "MISS"} ${c.name.padEnd(20)} ${c.actual.padEnd(28)} ${why !== undefined ? `not judged: ${why}` : `budget ${c.budget}`}`;
      }),
    );
  }
  if (m.notes.length > 0) lines.push("", ...m.notes.map((n) => `note: ${n}`));
  return lines;
}
