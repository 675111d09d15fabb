import { syncBuiltinESMExports } from "node:module";
import timers from "node:timers";
import { Logger } from "@aws-lambda-powertools/logger";
import { Metrics } from "@aws-lambda-powertools/metrics";
import { Tracer } from "@aws-lambda-powertools/tracer";
import { afterEach, beforeEach, expect, it } from "vitest";
import { MIN_POLLER_TIMEOUT_MS } from "../../shared/aws/config.js";
import { createPollHandler } from "../../shared/aws/handlers.js";
import type { PollEvent } from "../../shared/aws/poll-event.js";
import type { Clock } from "../../shared/bridge/ports.js";
import { DynamoQuarantine } from "../../shared/aws/quarantine.js";
import { localDynamoClient } from "../aws/support/dynamo.js";
import { createHarness, lambdaContext, scheduledEvent, TENANT, type Harness } from "./support/harness.js";
import { runbookSection } from "../runbook-section.js";
import { EventBridgeClient, PutEventsCommand, type PutEventsRequestEntry } from "@aws-sdk/client-eventbridge";
import { mockClient } from "aws-sdk-client-mock";

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => h.close());

/**
 * Invokes the transactions poller (a cycle, or the action `event` asks for) with a provider request or table command
 * that hangs until released (`hang`; the cycle's tests: its first acknowledge), so middy's early timeout ends the
 * invocation mid-page. Time as Lambda sees it, and the bridge clock moves with real time. Middy reads
 * the remaining time second (just after it called the handler, whose first step reads it at entry), to time out
 * INVOCATION_EARLY_END_MS (1 s) before the end: it is told MIDDY_SEES_MS, so its (real) timer fires 5 s in at the latest.
 * Everything before the hung acknowledge (token refresh, list, DynamoDB, publish) must be done by then: that took up
 * to 1.46 s on a loaded machine (a cold DynamoDB Local), so 1.5 s let the timeout come first now and then; 5 s leaves
 * room. The handler's own reads are told `handlerSeesMs` (minus the time gone), which sets the cycle's deadline
 * (30 s safety margin): in Lambda, a timeout mid-page takes a hang of over 30 s past the deadline, which the tests do
 * not sit through. 60 s, the shortest timeout a poller runs with (MIN_POLLER_TIMEOUT_MS; the handler's read at its
 * entry is checked against it), leaves the calls' deadline 45 s away: a token refresh (30 s lease) may start
 * within the first 15 s, longer than middy's timer.
 * Middy's timer is its own (it still aborts the handler and answers TimeoutError), but fires HANG_SETTLE_MS after the
 * call that hangs was sent when that is sooner: sitting out the rest of 5 s took ~25 s of the file. What the tests
 * check is done before that call is sent or after it is released, so how long it hangs before the timeout does not
 * matter; the short wait lets other work in flight (a log line, a metric) settle as it would in the longer one.
 */
const MIDDY_SEES_MS = 6_000;
const HANG_SETTLE_MS = 100;

/**
 * Wraps the setTimeout middy imports from node:timers (a builtin's ESM bindings follow its CJS exports once synced),
 * so that the timer set next (middy's early timeout, set as it reads the remaining time) can be fired sooner. Other
 * timers pass through.
 */
function interceptNextTimer() {
  const original = timers.setTimeout;
  let armed = false;
  let next: { readonly fire: () => void; readonly id: NodeJS.Timeout; readonly ms: number } | undefined;
  const intercepting = ((callback: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => {
    if (!armed) return original(callback, ms, ...args);
    armed = false;
    let fired = false;
    const fire = () => {
      if (fired) return;
      fired = true;
      callback();
    };
    const id = original(fire, ms);
    next = { fire, id, ms: ms ?? 0 };
    return id;
  }) as typeof timers.setTimeout;
  timers.setTimeout = intercepting;
  syncBuiltinESMExports();
  return {
    /** The next timer set in this same synchronous run is middy's (none set then: nothing is intercepted). */
    arm: () => {
      armed = true;
      queueMicrotask(() => (armed = false));
    },
    /** The delay middy set its timer to, once set. */
    delayMs: () => next?.ms,
    /** Fires middy's timer in `ms` (at its due time if that is sooner), unless `over()` by then. */
    fireIn: (ms: number, over: () => boolean) => {
      const timer = next;
      if (timer === undefined) return;
      original(() => {
        if (over()) return;
        clearTimeout(timer.id);
        timer.fire();
      }, ms);
    },
    restore: () => {
      timers.setTimeout = original;
      syncBuiltinESMExports();
    },
  };
}

/** What hangs until released: the first provider request `provider` picks (then failing or answering), or the first table command `table` picks. */
interface Hang {
  readonly provider?: (request: string) => boolean;
  readonly afterRelease?: "fails" | "answers";
  readonly table?: (command: string) => boolean;
}

/** The first provider acknowledge hangs. */
const firstAcknowledge = (afterRelease: "fails" | "answers"): Hang => ({ provider: (request) => request.includes("/acknowledge"), afterRelease });

async function timedOutInvocation(handlerSeesMs: number, hang: Hang, event: PollEvent = scheduledEvent()) {
  const company = h.sandbox.control.company(h.companyId);
  if (company === undefined) throw new Error("no company");
  const started = Date.now();
  const elapsed = () => Date.now() - started;
  const clock: Clock = { now: () => h.clock.now() + elapsed(), sleep: h.clock.sleep };
  let reads = 0;
  let hangingAt: number | undefined;
  const middyTimer = interceptNextTimer();
  /** The remaining time middy was told when it set its timer. */
  let middySawMs: number | undefined;
  const middyReads = () => {
    middyTimer.arm();
    middySawMs = MIDDY_SEES_MS - elapsed();
    return middySawMs;
  };
  const context = { ...lambdaContext(), getRemainingTimeInMillis: () => (reads++ === 1 ? middyReads() : handlerSeesMs - elapsed()) };
  let ended = false;
  /** The call that hangs was sent: middy's timeout comes HANG_SETTLE_MS later (or when due, if sooner). */
  const hangReached = () => {
    hangingAt = elapsed();
    middyTimer.fireIn(HANG_SETTLE_MS, () => ended);
  };
  let release: () => void = () => undefined;
  const hung = new Promise<void>((resolve) => (release = resolve));
  /** Provider requests (`GET /path?query`) and table commands (`DynamoDB ScanCommand`), in order. */
  const calls: string[] = [];
  const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    const { pathname, search } = new URL(url);
    const request = `${init?.method ?? "GET"} ${pathname}${search}`;
    calls.push(request);
    if (hangingAt === undefined && hang.provider?.(request) === true) {
      hangReached();
      await hung;
      if (hang.afterRelease === "fails") throw new TypeError("fetch failed");
    }
    return h.fetch(input, init);
  };
  const eventBridgeClient = new EventBridgeClient({ region: "eu-west-1", credentials: { accessKeyId: "x", secretAccessKey: "x" } });
  const eventBridge = mockClient(eventBridgeClient);
  eventBridge.on(PutEventsCommand).callsFake((input: { Entries: PutEventsRequestEntry[] }) => ({
    FailedEntryCount: 0,
    Entries: input.Entries.map(() => ({ EventId: "e" })),
  }));
  const dynamo = localDynamoClient();
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      const command = String(context.commandName);
      calls.push(`DynamoDB ${command}`);
      if (hangingAt === undefined && hang.table?.(command) === true) {
        hangReached();
        await hung;
      }
      return next(args);
    },
    { step: "initialize", name: "hangTableCommand" },
  );
  const handler = createPollHandler("transactions", {
    env: h.env,
    clients: () => ({ dynamo, eventBridge: eventBridgeClient, secrets: h.secrets.client }),
    fetch,
    clock,
    logger: new Logger({ serviceName: "qashio-bridge" }),
    metrics: new Metrics({ namespace: "QashioBridge", serviceName: "qashio-bridge" }),
    tracer: new Tracer({ enabled: false }),
  });
  const logged = h.output.length;
  const error = await handler(event, context)
    .catch((e: unknown) => e)
    .finally(() => {
      ended = true;
      middyTimer.restore();
    });
  // What CloudWatch got by the time the invocation ended.
  const atEnd = [...h.output];
  const callsAtEnd = calls.length;
  /** Lets the abandoned cycle go on (the container thawed), waits until it logs its end, and frees the clients. */
  const windDown = async (): Promise<string[]> => {
    release();
    // Until the abandoned work has logged its end, after the invocation's first line (the test's timeout bounds the
    // wait): a fixed 3 s cap let a slow wind-down go on after the clients were freed and its log lines be checked
    // before they were written.
    while (!h.output.slice(logged).some((line) => /Cycle failed|(Cycle|Re-drive|PII conform pass) finished/.test(line))) await new Promise((r) => setTimeout(r, 20));
    eventBridge.restore();
    dynamo.destroy();
    return calls.slice(callsAtEnd);
  };
  // Said apart from what the tests check: a machine too slow to get there in MIDDY_SEES_MS fails on this, by name.
  const hungInTime = hangingAt !== undefined;
  const reachedHang = () => expect(hungInTime, "the invocation timed out before the call that hangs was sent").toBe(true);
  /** How long before Lambda's timeout middy gives the invocation up. */
  const earlyEndMs = () => (middySawMs ?? 0) - (middyTimer.delayMs() ?? 0);
  return { error, atEnd, calls, windDown, reachedHang, earlyEndMs };
}

it("still emits the dimensioned metrics of the work done (EventsPublished by type) when the invocation runs into its timeout", async () => {
  const { error, atEnd, calls, windDown, reachedHang } = await timedOutInvocation(MIN_POLLER_TIMEOUT_MS, firstAcknowledge("fails"));
  try {
    reachedHang();
    expect(calls.filter((c) => c.includes("/acknowledge"))).toHaveLength(1);
    expect((error as Error).name).toBe("TimeoutError");
    const published = atEnd.filter((line) => line.includes('"_aws"') && line.includes('"EventsPublished"'));
    expect(published).toHaveLength(1);
  } finally {
    await windDown();
  }
}, 20_000);

it("logs a structured error when the invocation runs into its timeout, which the body's own catch never sees", async () => {
  const { error, atEnd, windDown, reachedHang } = await timedOutInvocation(MIN_POLLER_TIMEOUT_MS, firstAcknowledge("fails"));
  try {
    reachedHang();
    expect((error as Error).name).toBe("TimeoutError");
    const errors = atEnd.filter((line) => /"level":\s*"ERROR"/.test(line)).map((line) => JSON.parse(line) as Record<string, unknown>);
    // The line, its error's name and message as docs/runbook.md (Function errors) quotes them.
    const [, quoted, name, message] = /log line "([^"]+)", error `(\w+)` "([^"]+)"/.exec(runbookSection("Function errors").replace(/\s+/g, " ")) ?? [];
    expect(errors).toEqual([
      expect.objectContaining({
        message: expect.stringMatching(new RegExp(`^${quoted}`)),
        error: { name, message },
        tenant: expect.any(String),
      }),
    ]);
  } finally {
    await windDown();
  }
}, 20_000);

it("gives the invocation up a second before Lambda's timeout, not middy's default 5 ms: past Lambda's own, it resets the container", async () => {
  // Between middy's timeout and Lambda's, the timeout's log line, the metrics, the tracer's record of the error and the
  // runtime's answer run, the last two formatting the error's stack: source-mapped in the bundle, the first such stack
  // of a container parses the source map. Lambda's own timeout resets the execution environment, dropping the page the
  // abandoned cycle holds and any rotated refresh token held in memory.
  const { error, windDown, earlyEndMs } = await timedOutInvocation(MIN_POLLER_TIMEOUT_MS, firstAcknowledge("fails"));
  await windDown();
  expect((error as Error).name).toBe("TimeoutError");
  expect(earlyEndMs()).toBeGreaterThanOrEqual(1_000);
}, 20_000);

it("stops the cycle the invocation gave up on after its page in hand, rather than go on when the container thaws", async () => {
  // The cycle's own deadline is a minute away: only the abort of the timed-out invocation can stop it.
  const { error, windDown, reachedHang } = await timedOutInvocation(91_500, firstAcknowledge("answers"));
  const after = await windDown();
  reachedHang();
  expect((error as Error).name).toBe("TimeoutError");
  // The hung acknowledge went through; then no further list call (an outdated drain, a re-read) was made.
  expect(after.filter((c) => c.startsWith("GET "))).toEqual([]);
  expect(h.output.some((line) => line.includes("transactions cycle deadline"))).toBe(true);
}, 20_000);

/**
 * Makes about `count` new transactions: one call makes fewer when cards lack funds or room under their limits, so a
 * few more calls make up most of the rest (at least 90%, or the test's premise of "more than a page" is not met).
 */
function createAbout(company: NonNullable<ReturnType<typeof h.sandbox.control.company>>, count: number): void {
  let made = 0;
  for (let round = 0; round < 10 && made < count; round++) made += h.sandbox.control.state.createTransactions(company, { count: count - made }).length;
  expect(made).toBeGreaterThanOrEqual(0.9 * count);
}

it("stops the re-drive the invocation gave up on after its batch in hand, rather than go on when the container thaws; the next re-drive delivers the rest", async () => {
  const company = h.sandbox.control.company(h.companyId);
  if (company === undefined) throw new Error("no company");
  // More publish-failure records than one batch (100): the bus refuses every event of a cycle for good.
  createAbout(company, 150);
  h.eventBridge.on(PutEventsCommand).callsFake((input: { Entries: PutEventsRequestEntry[] }) => ({
    FailedEntryCount: input.Entries.length,
    Entries: input.Entries.map(() => ({ ErrorCode: "MalformedDetail", ErrorMessage: "detail is malformed" })),
  }));
  const cycle = await h.poller("transactions")();
  expect(cycle.quarantined).toBeGreaterThan(100);
  h.eventBridge.on(PutEventsCommand).resolves({ FailedEntryCount: 0, Entries: [] });

  // The first read by qashio_id hangs; the re-drive's own deadline is a minute away: only the abort can stop it.
  const hang: Hang = { provider: (request) => request.startsWith("GET ") && request.includes("qashio_id="), afterRelease: "answers" };
  const { error, atEnd, windDown, reachedHang } = await timedOutInvocation(91_500, hang, { action: "redrive" });
  const after = await windDown();
  reachedHang();
  expect((error as Error).name).toBe("TimeoutError");
  // Its timeout's line names the action, as its result would: no scheduled cycle timed out.
  const timedOut = atEnd.map((line) => JSON.parse(line) as Record<string, unknown>).find((doc) => String(doc["message"]).startsWith("Invocation timed out"));
  expect(timedOut).toMatchObject({ action: "redrive" });
  // The hung read answered and its batch went through; no read of the next batch was made.
  expect(after.filter((c) => c.startsWith("GET "))).toEqual([]);
  const quarantine = new DynamoQuarantine({ doc: h.table.doc, tableName: h.table.tableName, tenant: TENANT, clock: h.clock });
  expect(await quarantine.size()).toBeGreaterThan(0);
  // Nothing lost: the next re-drive delivers what the abandoned one left.
  expect(await h.poller("transactions")({ action: "redrive" })).toMatchObject({ status: "completed", outcome: "complete", kept: [] });
  expect(await quarantine.size()).toBe(0);
}, 30_000);

it("stops the conform-pii pass the invocation gave up on before its next write, handing out no cursor, so the one it was invoked with still goes on", async () => {
  // Snapshots of 150 more transactions than the sandbox seeds, stored under full: more than one page (100).
  h.env.PII_MODE = "full";
  const company = h.sandbox.control.company(h.companyId);
  if (company === undefined) throw new Error("no company");
  createAbout(company, 150);
  expect(await h.poller("transactions")()).toMatchObject({ status: "completed", outcome: "complete" });
  h.env.PII_MODE = "redact";
  // A pass whose every Scan takes 20 s of the 30 s budget: it stops at its deadline with a cursor.
  const slowScans = h.clients((dynamo) =>
    dynamo.middlewareStack.add(
      (next, context) => async (args) => {
        if (String(context.commandName) === "ScanCommand") h.sandbox.control.advanceClock(20);
        return next(args);
      },
      { step: "initialize" },
    ),
  );
  const stopped = await h.poller("transactions", { clients: slowScans })({ action: "conform-pii" });
  expect(stopped).toMatchObject({ outcome: "deadline", cursor: expect.any(String) });
  const cursor = stopped.cursor ?? "";

  // Invoked with it, the pass's first Scan hangs past middy's timeout; its deadline is a minute away.
  const { error, windDown, reachedHang } = await timedOutInvocation(91_500, { table: (command) => command === "ScanCommand" }, { action: "conform-pii", cursor });
  const after = await windDown();
  reachedHang();
  expect((error as Error).name).toBe("TimeoutError");
  // The hung Scan answered and the store finished reading its page (calls until the page is full); then nothing was
  // written or read: the pass only gave its two cycle leases back.
  expect(after.filter((c) => c !== "DynamoDB ScanCommand")).toEqual(["DynamoDB DeleteItemCommand", "DynamoDB DeleteItemCommand"]);
  // The cursor it was invoked with still goes on (no pass id the abandoned pass could report to no one replaced it).
  expect(await h.poller("transactions")({ action: "conform-pii", cursor })).toMatchObject({ status: "completed", outcome: "complete" });
}, 30_000);
