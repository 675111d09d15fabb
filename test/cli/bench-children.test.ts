/**
 * The bench's child processes (sandbox and --baseline client) end by themselves, with nothing left to run, rather than
 * by process.exit() (test/process-exit.test.ts): once the bench disconnects, or once answered.
 */
import { fork, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_SCOPES } from "../../shared/cli/cycle-scopes.js";
import type { BaselineRequest, BaselineResult } from "../../shared/cli/bench-baseline.js";
import type { BenchSandboxReady, BenchSandboxRequest } from "../../shared/cli/bench-sandbox.js";
import { PATHS } from "../../shared/qashio/client.js";
import { CLIENT, ROOT, TSX_LOADER } from "./helpers.js";

/** Long enough for a loaded machine; a child kept alive by an open handle would stay for ever. */
const PROMPTLY_MS = 10_000;
const REDIRECT_URI = "http://127.0.0.1:9/callback";

const children: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** `preload`: a module of test/cli/support run first; `stderr`: piped for the test to read, else the terminal's. */
function forkChild(entry: string, { preload, stderr = "inherit" }: { preload?: string; stderr?: "inherit" | "pipe" } = {}): ChildProcess {
  const execArgv = ["--import", TSX_LOADER, ...(preload === undefined ? [] : ["--import", pathToFileURL(join(ROOT, "test/cli/support", preload)).href])];
  const child = fork(join(ROOT, "shared/cli", entry), [], { execArgv, stdio: ["ignore", "ignore", stderr, "ipc"] });
  children.push(child);
  return child;
}

/** What `child`, forked with its stderr piped, has written there so far. */
function stderrOf(child: ChildProcess): () => string {
  let text = "";
  child.stderr!.on("data", (chunk: Buffer) => (text += chunk.toString()));
  return () => text;
}

function answerOf<Answer>(child: ChildProcess, request: object): Promise<Answer> {
  return new Promise((resolve, reject) => {
    child.once("message", (answer) => resolve(answer as Answer));
    child.once("exit", (code) => reject(new Error(`exited early (code ${code})`)));
    child.send(request);
  });
}

/** Milliseconds from now until `child` exits, and its exit code. */
function exitFromNow(child: ChildProcess): Promise<{ code: number | null; ms: number }> {
  const from = performance.now();
  return new Promise((resolve) => child.once("exit", (code) => resolve({ code, ms: performance.now() - from })));
}

function sandboxRequest(transactions: number, latencyMs: number): BenchSandboxRequest {
  return { transactions, latencyMs, seed: 7, redirectUri: REDIRECT_URI, scope: DEFAULT_SCOPES };
}

async function startSandbox(request: BenchSandboxRequest): Promise<{ child: ChildProcess; ready: BenchSandboxReady }> {
  const child = forkChild("bench-sandbox.ts");
  return { child, ready: await answerOf<BenchSandboxReady>(child, request) };
}

function baselineRequest(ready: BenchSandboxReady, transactions: number): BaselineRequest {
  const dir = mkdtempSync(join(tmpdir(), "bench-children-"));
  dirs.push(dir);
  return { url: ready.url, code: ready.code, redirectUri: REDIRECT_URI, clientId: CLIENT.id, clientSecret: CLIENT.secret, pageSize: 100, transactions, dir };
}

/** Arms a fault of the sandbox's control surface (`POST /_sandbox/faults`, its wire names). */
async function armFault(ready: BenchSandboxReady, fault: Record<string, unknown>): Promise<void> {
  const response = await fetch(`${ready.url}/_sandbox/faults`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(fault) });
  expect(response.status).toBe(201);
}

describe("the bench's children", () => {
  it("host the bench's sandbox, over loopback, as README's Provider sandbox says: not in the bench's own process", async () => {
    const { ready } = await startSandbox(sandboxRequest(10, 0));
    expect(ready.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await fetch(`${ready.url}/_sandbox/companies`)).status).toBe(200);
    const readme = readFileSync(join(ROOT, "README.md"), "utf8").replace(/\s+/g, " ");
    const section = /## Provider sandbox (.*?) ## /.exec(readme)?.[1] ?? "";
    // Where createSandbox runs: the demo and the tests in their own process, the bench in a child of its own.
    const where = /(?:In|in) tests[^:]*:/.exec(section)?.[0] ?? "";
    expect(where).toContain("demo");
    expect(where).toMatch(/bench[^:]*child process/);
  });

  it("the sandbox child ends once the bench disconnects: exit 0, its server closed", async () => {
    const { child, ready } = await startSandbox(sandboxRequest(50, 0));
    expect((await fetch(`${ready.url}/_sandbox/companies`)).status).toBe(200);
    const exit = exitFromNow(child);
    child.disconnect();
    const { code, ms } = await exit;
    expect(code).toBe(0);
    expect(ms).toBeLessThan(PROMPTLY_MS);
  });

  it("the sandbox child whose server fails to close says so and ends with exit 1, not an unhandled rejection", async () => {
    const child = forkChild("bench-sandbox.ts", { preload: "close-fails.ts", stderr: "pipe" });
    const stderr = stderrOf(child);
    await answerOf<BenchSandboxReady>(child, sandboxRequest(10, 0));
    const exit = exitFromNow(child);
    child.disconnect();
    const { code, ms } = await exit;
    expect(stderr()).toBe("bench sandbox: error while stopping: injected close failure\n");
    expect(code).toBe(1);
    expect(ms).toBeLessThan(PROMPTLY_MS);
  });

  it("the --baseline child answers, then ends by itself: exit 0", async () => {
    const { child: sandbox, ready } = await startSandbox(sandboxRequest(150, 0));
    const child = forkChild("bench-baseline.ts");
    const exit = exitFromNow(child);
    const answer = await answerOf<BaselineResult>(child, baselineRequest(ready, 150));
    expect(answer).toMatchObject({ ok: true, transactions: 150 });
    // Its drain's CPU split by thread, measured in the child where /proc tells it (checked there against its total).
    if (process.platform === "linux" && answer.ok) {
      expect(answer.threads).toEqual({ mainUs: expect.any(Number), otherUs: expect.any(Number) });
      expect(answer.threads!.mainUs + answer.threads!.otherUs).toBeGreaterThan(0);
    }
    const { code, ms } = await exit;
    expect(code).toBe(0);
    expect(ms).toBeLessThan(PROMPTLY_MS * 3);
    sandbox.disconnect();
  });

  it("the --baseline child ends quietly when the bench disconnects the moment the answer reaches it: exit 0, nothing on stderr", async () => {
    const { child: sandbox, ready } = await startSandbox(sandboxRequest(10, 0));
    const child = forkChild("bench-baseline.ts", { preload: "late-send-callback.ts", stderr: "pipe" });
    const stderr = stderrOf(child);
    const exit = exitFromNow(child);
    child.once("message", () => child.disconnect());
    const answer = await answerOf<BaselineResult>(child, baselineRequest(ready, 10));
    expect(answer).toMatchObject({ ok: true, transactions: 10 });
    const { code, ms } = await exit;
    expect(stderr()).toBe("");
    expect(code).toBe(0);
    expect(ms).toBeLessThan(PROMPTLY_MS * 3);
    sandbox.disconnect();
  });

  it("the --baseline child ends when the bench goes mid-drain, the call in flight aborted: exit 0", async () => {
    // Its first list call held for a minute; the bench goes once the sandbox has taken it (a fixed wait raced the
    // child's start-up: on a loaded machine the bench went before the drain began, and the abort was never needed).
    const { child: sandbox, ready } = await startSandbox(sandboxRequest(10, 0));
    await armFault(ready, { method: "GET", path_prefix: PATHS.transactions, delay_ms: 60_000, count: 1 });
    const child = forkChild("bench-baseline.ts");
    child.send(baselineRequest(ready, 10));
    while (((await (await fetch(`${ready.url}/_sandbox/faults`)).json()) as { data: unknown[] }).data.length > 0) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const exit = exitFromNow(child);
    child.disconnect();
    const { code, ms } = await exit;
    expect(code).toBe(0);
    expect(ms).toBeLessThan(PROMPTLY_MS);
    sandbox.disconnect();
  });

  it("the --baseline child writes what a bridge must, per transaction: an event line and a snapshot line, both holding the object without its client_sync_status", async () => {
    const { child: sandbox, ready } = await startSandbox(sandboxRequest(10, 0));
    const request = baselineRequest(ready, 10);
    expect(await answerOf<BaselineResult>(forkChild("bench-baseline.ts"), request)).toMatchObject({ ok: true, transactions: 10 });
    const linesOf = (file: string) => readFileSync(join(request.dir, file), "utf8").split(/(?<=\n)/).map((line) => JSON.parse(line) as Record<string, unknown>);
    const events = linesOf("events.jsonl");
    const snapshots = linesOf("snapshots.log");
    const objects = events.map((event) => (event as { detail: { data: { object: Record<string, unknown> } } }).detail.data.object);
    expect(new Set(objects.map((object) => object["id"])).size).toBe(10);
    expect(snapshots).toHaveLength(10);
    for (const [i, object] of objects.entries()) {
      expect(object).not.toHaveProperty("client_sync_status");
      expect(events[i]).toMatchObject({ "detail-type": "transaction.created", detail: { subject: { type: "transaction", id: object["id"] } } });
      const hash = createHash("sha256").update(JSON.stringify(object)).digest("hex");
      expect(snapshots[i]).toEqual({ key: `transaction:${String(object["id"])}`, hash, object, updatedAt: expect.any(String) });
    }
    sandbox.disconnect();
  });

  it("the --baseline child fsyncs both files after each page's lines, as the bridge's adapters do", async () => {
    // 250 transactions: two full pages and a part one, then the empty page, which writes nothing.
    const { child: sandbox, ready } = await startSandbox(sandboxRequest(250, 0));
    const child = forkChild("bench-baseline.ts", { preload: "count-fsyncs.ts", stderr: "pipe" });
    const stderr = stderrOf(child);
    // Once closed, its stderr is read to the end (its exit may come first).
    const closed = once(child, "close");
    expect(await answerOf<BaselineResult>(child, baselineRequest(ready, 250))).toMatchObject({ ok: true, transactions: 250 });
    await closed;
    expect(stderr()).toBe("fsync calls: 6\n");
    sandbox.disconnect();
  });

  it("the --baseline child answers its drain's user and system CPU both", async () => {
    const { child: sandbox, ready } = await startSandbox(sandboxRequest(10, 0));
    const child = forkChild("bench-baseline.ts", { preload: "fixed-cpu-usage.ts" });
    expect(await answerOf<BaselineResult>(child, baselineRequest(ready, 10))).toMatchObject({ ok: true, cpuUs: 2_000_000 });
    sandbox.disconnect();
  });

  it("the --baseline child answers a provider's refusal as a failure naming the call and its status", async () => {
    const { child: sandbox, ready } = await startSandbox(sandboxRequest(10, 0));
    await armFault(ready, { method: "GET", path_prefix: PATHS.transactions, status: 429, count: 1 });
    const answer = await answerOf<BaselineResult>(forkChild("bench-baseline.ts"), baselineRequest(ready, 10));
    expect(answer).toEqual({ ok: false, error: `GET ${PATHS.transactions} answered 429` });
    sandbox.disconnect();
  });

  it("the --baseline child answers a failure when the list still holds transactions past the backlog's pages and the empty one", async () => {
    // Told 100 of the sandbox's 250, it allows one page for them and one empty page; the second comes full, so no third.
    const { child: sandbox, ready } = await startSandbox(sandboxRequest(250, 0));
    const answer = await answerOf<BaselineResult>(forkChild("bench-baseline.ts"), baselineRequest(ready, 100));
    expect(answer).toEqual({ ok: false, error: "the list still held transactions after 2 pages (200 acknowledged)" });
    sandbox.disconnect();
  });
});
