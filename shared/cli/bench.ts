/**
 * `npm run bench`: drains an N-transaction backlog from the sandbox through the real engine and the real
 * local adapters (file snapshot store, quarantine, lock, token store; JSON Lines events unless `--sink null`),
 * and reports provider calls, events, wall time, CPU per transaction and peak RSS against the floor.
 *
 * Honesty of the numbers: the sandbox runs in a child process (./bench-sandbox.ts) and is reached over
 * loopback HTTP, so the CPU and RSS measured here are the bridge's alone, HTTP client and JSON parsing
 * included, as in production; the drain runs under the cycle lease, whose check precedes each write, as `run`'s.
 * Only the drain is timed: backlog building, start-up and authorization are not.
 */
import { fork, type ChildProcess, type Serializable } from "node:child_process";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import { DEFAULT_PAGE_SIZE, pollTransactions, totalPublished, type EventPublisher } from "../bridge/index.js";
import { exchangeCode } from "../qashio/auth/oauth.js";
import { storedTokensOf } from "../qashio/auth/token-provider.js";
import type { FetchInit } from "../qashio/http.js";
import { nodeHttpFetch } from "../qashio/node-transport.js";
import { FileTokenStore } from "../local/index.js";
import type { BenchArgs } from "./args.js";
import { DEFAULT_SCOPES } from "./cycle-scopes.js";
import type { BaselineRequest, BaselineResult } from "./bench-baseline.js";
import type { BenchSandboxReady, BenchSandboxRequest } from "./bench-sandbox.js";
import { baselineSplitNote, budgetVerdict, cpuSplitNote, drainProblem, floorOf, formatBenchReport, toBenchJson, type BenchMeasurement } from "./bench-report.js";
import { DEFAULT_EVENT_SOURCE, type LocalSettings } from "./config.js";
import { withCycleLock } from "./cycle-lease.js";
import { streamLogger } from "./console-ports.js";
import { CliError, EXIT } from "./errors.js";
import { line, makeTempDir, type CliIo } from "./io.js";
import { bindLocalSettings, openLocalBridge, usingLocalBridge } from "./local-bridge.js";
import { threadCpuMeter, type ThreadCpuSplit } from "./thread-cpu.js";

const SANDBOX_CLIENT_ID = "sandbox-client";
const SANDBOX_CLIENT_SECRET = "sandbox-secret";
/** Redirect URI the bench's authorization code is bound to; nothing listens there, the code is exchanged directly. */
const BENCH_REDIRECT_URI = "http://127.0.0.1:9/callback";

/** A publisher that accepts and drops every event (`--sink null`): isolates the engine from file I/O. */
const nullPublisher: EventPublisher = { publish: async () => ({ failed: [] }) };

/** V8 heap options the bench may run with (npm's script sets `--max-semi-space-size`), passed on to the baseline. */
const HEAP_OPTION = /^--(max-semi-space-size|min-semi-space-size|max-old-space-size|single-threaded-gc)(=|$)/;

/**
 * Forks `entry` (a TypeScript module beside this one) with tsx and `nodeOptions`, sends it `request` and resolves with
 * its first answer.
 */
function forkChild<Answer>(entry: string, request: Serializable, nodeOptions: readonly string[] = []): Promise<{ child: ChildProcess; answer: Answer }> {
  const file = fileURLToPath(new URL(entry, import.meta.url));
  // tsx's loader by absolute URL: `--import tsx` would resolve against the working directory.
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
  // In a process group of its own (POSIX): a terminal's Ctrl-C goes to the bench, which finishes its drain, rather than
  // to the child, whose sandbox would vanish under the drain. It still ends with the bench: it exits on disconnect.
  const child = fork(file, [], { execArgv: [...nodeOptions, "--import", tsx], stdio: ["ignore", "ignore", "inherit", "ipc"], detached: process.platform !== "win32" });
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code) => reject(new CliError(`the bench's child ${entry} exited early (code ${code})`, EXIT.failed)));
    child.once("message", (answer: Answer) => resolve({ child, answer }));
    child.send(request);
  });
}

function startSandbox(request: BenchSandboxRequest): Promise<{ child: ChildProcess; ready: BenchSandboxReady }> {
  return forkChild<BenchSandboxReady>("./bench-sandbox.ts", request).then(({ child, answer }) => ({ child, ready: answer }));
}

/**
 * `--baseline`: a second sandbox with an equal backlog, drained by the minimal client of bench-baseline.ts in a fresh
 * process, after the bridge's drain (so the two never share the CPU). Returns that drain's CPU, microseconds, and its
 * split by thread where the child could read it.
 */
async function measureBaseline(request: BenchSandboxRequest, dir: string): Promise<{ cpuUs: number; threads?: ThreadCpuSplit }> {
  const { transactions } = request;
  const { child: sandbox, ready } = await startSandbox(request);
  try {
    const baselineRequest: BaselineRequest = {
      url: ready.url,
      code: ready.code,
      redirectUri: request.redirectUri,
      clientId: SANDBOX_CLIENT_ID,
      clientSecret: SANDBOX_CLIENT_SECRET,
      pageSize: DEFAULT_PAGE_SIZE,
      transactions,
      dir,
    };
    // The bench's heap options, so the minimal client runs as the bridge did; not inspectors, watchers or profilers.
    const { answer } = await forkChild<BaselineResult>("./bench-baseline.ts", baselineRequest, process.execArgv.filter((arg) => HEAP_OPTION.test(arg)));
    if (!answer.ok) throw new CliError(`bench --baseline: the minimal client failed: ${answer.error}`, EXIT.failed);
    if (answer.transactions !== transactions) {
      throw new CliError(`bench --baseline: the minimal client acknowledged ${answer.transactions} of ${transactions} transactions`, EXIT.failed);
    }
    return { cpuUs: answer.cpuUs, ...(answer.threads === undefined ? {} : { threads: answer.threads }) };
  } finally {
    sandbox.disconnect();
  }
}

/**
 * Runs the benchmark; returns the exit code: 1 for an inconsistent drain, a failed `--baseline`, or (with `--check`) a
 * missed budget; 0 otherwise (the report says which budgets were missed).
 *
 * @example
 * process.exitCode = await benchCommand({ transactions: 10_000, latencyMs: 20, json: true, sink: "jsonl", check: false, baseline: false }, io);
 */
export async function benchCommand(args: BenchArgs, io: CliIo): Promise<number> {
  const human = (text: string) => line(args.json ? io.stderr : io.stdout, text);
  // Made before the sandbox child: a failure here leaves no child whose IPC channel keeps this process alive.
  const dir = await makeTempDir("qashio-bridge-bench-", "the bench");
  human(`bench: building a ${args.transactions}-transaction backlog in the sandbox (child process), latency ${args.latencyMs} ms per request ...`);
  const sandboxRequest: BenchSandboxRequest = {
    transactions: args.transactions,
    latencyMs: args.latencyMs,
    seed: 1,
    redirectUri: BENCH_REDIRECT_URI,
    scope: DEFAULT_SCOPES,
  };
  const { child, ready } = await startSandbox(sandboxRequest).catch(async (error: unknown) => {
    await rm(dir, { recursive: true, force: true });
    throw error;
  });
  try {
    const settings: LocalSettings = {
      baseUrl: ready.url,
      baseUrlSetting: "QASHIO_BASE_URL",
      clientId: SANDBOX_CLIENT_ID,
      clientSecret: SANDBOX_CLIENT_SECRET,
      tenant: "bench",
      stateDir: join(dir, "state"),
      eventsFile: join(dir, "events.jsonl"),
      piiMode: "redact",
      eventSource: DEFAULT_EVENT_SOURCE,
      emitCardCreated: false,
      cardDetails: false,
      cycleBudgetMs: 24 * 3_600_000,
      logLevel: "warn",
    };
    const tokens = await exchangeCode(
      { baseUrl: ready.url, clientId: SANDBOX_CLIENT_ID, clientSecret: SANDBOX_CLIENT_SECRET },
      { code: ready.code, redirectUri: BENCH_REDIRECT_URI },
    );
    await bindLocalSettings(settings, io.env);
    await new FileTokenStore(settings.stateDir).save(storedTokensOf(tokens, Date.now()));

    let providerCalls = 0;
    /** Sum of per-call waits (until the headers arrive): the sandbox's latency plus its own service time. */
    let providerWaitMs = 0;
    /** Wall time with at least one call in flight: the engine may overlap calls (read-ahead). */
    let providerBusyMs = 0;
    let inFlight = 0;
    let busySince = 0;
    // Wraps the client's default transport, so the bench measures what production sends.
    const countingFetch = async (input: string, init: FetchInit) => {
      providerCalls += 1;
      const sent = performance.now();
      if (inFlight++ === 0) busySince = sent;
      try {
        return await nodeHttpFetch(input, init);
      } finally {
        const now = performance.now();
        providerWaitMs += now - sent;
        if (--inFlight === 0) providerBusyMs += now - busySince;
      }
    };
    const bridge = await openLocalBridge(settings, {
      env: io.env,
      logger: streamLogger(io.stderr, "warn"),
      fetch: countingFetch,
      ...(args.sink === "null" ? { publisher: nullPublisher } : {}),
    });

    human("bench: draining ...");
    // Its tokens settled and its provider closed after, as every command's (a lease kept for unsaved tokens is renewed
    // until then), whether the drain finished or failed.
    const drained = await usingLocalBridge(bridge, async () => {
      // Its samples (reads of /proc: some 50-175 page faults for the two) outside the drain's figures, as they are outside its CPU.
      const threadCpu = threadCpuMeter();
      const faultsBefore = process.resourceUsage().minorPageFault;
      const cpuBefore = process.cpuUsage();
      const started = performance.now();
      let events = 0;
      let acknowledged = 0;
      for (let cycle = 0; cycle < 100; cycle += 1) {
        // Under the cycle lease, as `run` does: each write (events, snapshots, acknowledge) checks it first, bridge work too.
        const report = await withCycleLock(bridge, () => pollTransactions(bridge.transactions, {}));
        events += totalPublished(report);
        acknowledged += report.acknowledged;
        if (report.outcome === "complete") break;
      }
      const wallMs = performance.now() - started;
      const cpu = process.cpuUsage(cpuBefore);
      const { maxRSS, minorPageFault } = process.resourceUsage();
      const threads = threadCpu.split(cpu.user + cpu.system);
      const peakRssMb = maxRSS / 1024;
      const faults = minorPageFault - faultsBefore;
      const callsDuringDrain = providerCalls;
      const waitDuringDrain = providerWaitMs;
      const busyDuringDrain = providerBusyMs;

      // Outside the measurement: the provider must have nothing left to pull.
      const left = await bridge.transactions.provider.listTransactions({ client_sync_status: "not_synced", page: 1, page_size: 1 });
      const remaining = left.pagination?.total_records ?? left.data.length;
      return { events, acknowledged, wallMs, cpu, threads, peakRssMb, faults, callsDuringDrain, waitDuringDrain, busyDuringDrain, remaining };
    });
    const { events, acknowledged, wallMs, cpu, threads, peakRssMb, faults, callsDuringDrain, waitDuringDrain, busyDuringDrain, remaining } = drained;
    const floor = floorOf({ transactions: args.transactions, pageSize: DEFAULT_PAGE_SIZE, ackBatchSize: DEFAULT_PAGE_SIZE });
    const eventsBytes = args.sink === "jsonl" ? (await stat(settings.eventsFile).catch(() => ({ size: 0 }))).size : 0;
    const problem = drainProblem({ transactions: args.transactions, events, notSyncedLeft: remaining });
    // After an inconsistent drain there is nothing to compare; a failed baseline leaves the bridge's report standing.
    let baseline: { cpuUs: number; threads?: ThreadCpuSplit } | undefined;
    let baselineFailure: string | undefined;
    if (args.baseline && problem === undefined) {
      human("bench: --baseline: draining an equal backlog with a minimal client in a fresh process ...");
      try {
        baseline = await measureBaseline(sandboxRequest, await mkdtemp(join(dir, "baseline-")));
      } catch (err) {
        baselineFailure = err instanceof Error ? err.message : String(err);
      }
    }
    const measurement: BenchMeasurement = {
      transactions: args.transactions,
      events,
      providerCalls: callsDuringDrain,
      floorCalls: floor.calls,
      wallMs,
      latencyMs: args.latencyMs,
      bridgeCpuUs: cpu.user + cpu.system,
      ...(baseline === undefined ? {} : { baselineCpuUs: baseline.cpuUs }),
      peakRssMb,
      notSyncedLeft: remaining,
      sink: args.sink,
      notes: [
        // CPU per item differs by a third between Node majors (V8's tiers): read the figure against the runtime it ran on.
        `runtime: Node ${process.version} (V8 ${process.versions.v8}); the Lambda functions run on nodejs24.x`,
        `sandbox in a child process over loopback HTTP: CPU and RSS are the bridge process's only (HTTP client and JSON parsing included)`,
        args.sink === "jsonl"
          ? `real local adapters: file snapshot store, JSON Lines events (${(eventsBytes / 1_048_576).toFixed(1)} MB written, fsync per page)`
          : "real local snapshot store; events dropped by a null sink (--sink null)",
        `floor = ${floor.pages} list pages (page_size ${DEFAULT_PAGE_SIZE}, incl. one empty outdated page) + ${floor.acknowledgeCalls} acknowledge calls`,
        `provider calls took ${(waitDuringDrain / Math.max(1, callsDuringDrain)).toFixed(1)} ms each on average (configured latency ${args.latencyMs} ms ` +
          `+ the sandbox's own service time); some call was in flight for ${Math.round(busyDuringDrain)} ms of the wall time, ` +
          `none for ${Math.round(wallMs - busyDuringDrain)} ms (the bridge working alone)`,
        cpuSplitNote(args.transactions, cpu, threads),
        ...(baseline?.threads === undefined ? [] : [baselineSplitNote(args.transactions, baseline.threads)]),
        // Each fault maps a page of fresh memory: cheap on most machines, ~12 us on the development VM (docs/benchmark.md).
        `minor page faults during the drain: ${faults} (${(faults / args.transactions).toFixed(2)} per transaction)`,
        `acknowledged ${acknowledged}; not_synced left on the provider: ${remaining}`,
      ],
    };
    for (const text of formatBenchReport(measurement)) human(text);
    if (args.json) line(io.stdout, JSON.stringify(toBenchJson(measurement)));
    if (problem !== undefined) {
      line(io.stderr, `bench: inconsistent drain: ${problem}`);
      return EXIT.failed;
    }
    if (baselineFailure !== undefined) {
      line(io.stderr, baselineFailure);
      return EXIT.failed;
    }
    if (args.check) {
      const verdict = budgetVerdict(toBenchJson(measurement));
      for (const text of verdict.lines) line(io.stderr, text);
      if (verdict.code !== 0) return EXIT.failed;
    }
    return EXIT.ok;
  } finally {
    child.disconnect();
    await rm(dir, { recursive: true, force: true });
  }
}
