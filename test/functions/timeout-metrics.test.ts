import { Logger } from "@aws-lambda-powertools/logger";
import { Metrics } from "@aws-lambda-powertools/metrics";
import { Tracer } from "@aws-lambda-powertools/tracer";
import { afterEach, beforeEach, expect, it } from "vitest";
import { MIN_POLLER_TIMEOUT_MS } from "../../shared/aws/config.js";
import { createPollHandler } from "../../shared/aws/handlers.js";
import type { Clock } from "../../shared/bridge/ports.js";
import { localDynamoClient } from "../aws/support/dynamo.js";
import { createHarness, lambdaContext, scheduledEvent, type Harness } from "./support/harness.js";
import { EventBridgeClient, PutEventsCommand, type PutEventsRequestEntry } from "@aws-sdk/client-eventbridge";
import { mockClient } from "aws-sdk-client-mock";

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => h.close());

/**
 * Invokes the transactions poller with a provider whose first acknowledge hangs until released, so middy's early
 * timeout ends the invocation mid-page. Time as Lambda sees it, and the bridge clock moves with real time. Middy reads
 * the remaining time second (just after it called the handler, whose first step reads it at entry), to time out 5 ms
 * before the end: it is told MIDDY_SEES_MS, so its (real) timer fires then.
 * Everything before the hung acknowledge (token refresh, list, DynamoDB, publish) must be done by then: that took up
 * to 1.46 s on a loaded machine (a cold DynamoDB Local), so 1.5 s let the timeout come first now and then; 5 s leaves
 * room. The handler's own reads are told `handlerSeesMs` (minus the time gone), which sets the cycle's deadline
 * (30 s safety margin): in Lambda, a timeout mid-page takes a hang of over 30 s past the deadline, which the tests do
 * not sit through. 60 s, the shortest timeout a poller runs with (MIN_POLLER_TIMEOUT_MS; the handler's read at its
 * entry is checked against it), leaves the calls' deadline 45 s away: a token refresh (30 s lease) may start
 * within the first 15 s, longer than middy's timer.
 */
const MIDDY_SEES_MS = 5_000;

async function timedOutInvocation(handlerSeesMs: number, acknowledgeAfterRelease: "fails" | "answers") {
  const company = h.sandbox.control.company(h.companyId);
  if (company === undefined) throw new Error("no company");
  const started = Date.now();
  const elapsed = () => Date.now() - started;
  const clock: Clock = { now: () => h.clock.now() + elapsed(), sleep: h.clock.sleep };
  let reads = 0;
  const context = { ...lambdaContext(), getRemainingTimeInMillis: () => (reads++ === 1 ? MIDDY_SEES_MS : handlerSeesMs) - elapsed() };
  let release: () => void = () => undefined;
  const hung = new Promise<void>((resolve) => (release = resolve));
  const calls: string[] = [];
  let hangingAt: number | undefined;
  const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    const { pathname, search } = new URL(url);
    calls.push(`${init?.method ?? "GET"} ${pathname}${search}`);
    if (pathname.endsWith("/transactions/acknowledge") && calls.filter((c) => c.includes("/acknowledge")).length === 1) {
      hangingAt ??= elapsed();
      await hung;
      if (acknowledgeAfterRelease === "fails") throw new TypeError("fetch failed");
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
  const handler = createPollHandler("transactions", {
    env: h.env,
    clients: () => ({ dynamo, eventBridge: eventBridgeClient, secrets: h.secrets.client }),
    fetch,
    clock,
    logger: new Logger({ serviceName: "qashio-bridge" }),
    metrics: new Metrics({ namespace: "QashioBridge", serviceName: "qashio-bridge" }),
    tracer: new Tracer({ enabled: false }),
  });
  const error = await handler(scheduledEvent(), context).catch((e: unknown) => e);
  // What CloudWatch got by the time the invocation ended.
  const atEnd = [...h.output];
  const callsAtEnd = calls.length;
  /** Lets the abandoned cycle go on (the container thawed), waits until it logs its end, and frees the clients. */
  const windDown = async (): Promise<string[]> => {
    release();
    // Until the abandoned cycle has logged its end (the test's timeout bounds the wait): a fixed 3 s cap let a slow
    // wind-down go on after the clients were freed and its log lines be checked before they were written.
    while (!h.output.some((line) => /Cycle (failed|finished)/.test(line))) await new Promise((r) => setTimeout(r, 20));
    eventBridge.restore();
    dynamo.destroy();
    return calls.slice(callsAtEnd);
  };
  // Said apart from what the tests check: a machine too slow to get there in MIDDY_SEES_MS fails on this, by name.
  const hungInTime = hangingAt !== undefined;
  const reachedAcknowledge = () => expect(hungInTime, "the invocation timed out before its first acknowledge was sent").toBe(true);
  return { error, atEnd, calls, windDown, reachedAcknowledge };
}

it("still emits the dimensioned metrics of the work done (EventsPublished by type) when the invocation runs into its timeout", async () => {
  const { error, atEnd, calls, windDown, reachedAcknowledge } = await timedOutInvocation(MIN_POLLER_TIMEOUT_MS, "fails");
  try {
    reachedAcknowledge();
    expect(calls.filter((c) => c.includes("/acknowledge"))).toHaveLength(1);
    expect((error as Error).name).toBe("TimeoutError");
    const published = atEnd.filter((line) => line.includes('"_aws"') && line.includes('"EventsPublished"'));
    expect(published).toHaveLength(1);
  } finally {
    await windDown();
  }
}, 20_000);

it("logs a structured error when the invocation runs into its timeout, which the body's own catch never sees", async () => {
  const { error, atEnd, windDown, reachedAcknowledge } = await timedOutInvocation(MIN_POLLER_TIMEOUT_MS, "fails");
  try {
    reachedAcknowledge();
    expect((error as Error).name).toBe("TimeoutError");
    const errors = atEnd.filter((line) => /"level":\s*"ERROR"/.test(line)).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(errors).toEqual([
      expect.objectContaining({
        message: expect.stringMatching(/^Invocation timed out/),
        error: { name: "TimeoutError", message: expect.any(String) },
        tenant: expect.any(String),
      }),
    ]);
  } finally {
    await windDown();
  }
}, 20_000);

it("stops the cycle the invocation gave up on after its page in hand, rather than go on when the container thaws", async () => {
  // The cycle's own deadline is a minute away: only the abort of the timed-out invocation can stop it.
  const { error, windDown, reachedAcknowledge } = await timedOutInvocation(91_500, "answers");
  const after = await windDown();
  reachedAcknowledge();
  expect((error as Error).name).toBe("TimeoutError");
  // The hung acknowledge went through; then no further list call (an outdated drain, a re-read) was made.
  expect(after.filter((c) => c.startsWith("GET "))).toEqual([]);
  expect(h.output.some((line) => line.includes("transactions cycle deadline"))).toBe(true);
}, 20_000);
