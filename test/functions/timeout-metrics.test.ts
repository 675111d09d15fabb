import { Logger } from "@aws-lambda-powertools/logger";
import { Metrics } from "@aws-lambda-powertools/metrics";
import { Tracer } from "@aws-lambda-powertools/tracer";
import { afterEach, beforeEach, expect, it } from "vitest";
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
 * the remaining time first, to time out 5 ms before the end: it is told 1.5 s, so its (real) timer fires then. The
 * handler's later reads are told `handlerSeesMs` (minus the time gone), which sets the cycle's deadline (30 s safety
 * margin): in Lambda, a timeout mid-page takes a hang of over 30 s past the deadline, which the tests do not sit through.
 * 46.5 s leaves the calls' deadline 31.5 s away, room for the first call's token refresh under its 30 s lease.
 */
async function timedOutInvocation(handlerSeesMs: number, acknowledgeAfterRelease: "fails" | "answers") {
  const company = h.sandbox.control.company(h.companyId);
  if (company === undefined) throw new Error("no company");
  const started = Date.now();
  const elapsed = () => Date.now() - started;
  const clock: Clock = { now: () => h.clock.now() + elapsed(), sleep: h.clock.sleep };
  let reads = 0;
  const context = { ...lambdaContext(), getRemainingTimeInMillis: () => (reads++ === 0 ? 1_500 : handlerSeesMs) - elapsed() };
  let release: () => void = () => undefined;
  const hung = new Promise<void>((resolve) => (release = resolve));
  const calls: string[] = [];
  const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    const { pathname, search } = new URL(url);
    calls.push(`${init?.method ?? "GET"} ${pathname}${search}`);
    if (pathname.endsWith("/transactions/acknowledge") && calls.filter((c) => c.includes("/acknowledge")).length === 1) {
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
    const until = Date.now() + 3_000;
    while (!h.output.some((line) => /Cycle (failed|finished)/.test(line)) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    eventBridge.restore();
    dynamo.destroy();
    return calls.slice(callsAtEnd);
  };
  return { error, atEnd, calls, windDown };
}

it("still emits the dimensioned metrics of the work done (EventsPublished by type) when the invocation runs into its timeout", async () => {
  const { error, atEnd, calls, windDown } = await timedOutInvocation(46_500, "fails");
  try {
    expect(calls.filter((c) => c.includes("/acknowledge"))).toHaveLength(1);
    expect((error as Error).name).toBe("TimeoutError");
    const published = atEnd.filter((line) => line.includes('"_aws"') && line.includes('"EventsPublished"'));
    expect(published).toHaveLength(1);
  } finally {
    await windDown();
  }
}, 20_000);

it("logs a structured error when the invocation runs into its timeout, which the body's own catch never sees", async () => {
  const { error, atEnd, windDown } = await timedOutInvocation(46_500, "fails");
  try {
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
  const { error, windDown } = await timedOutInvocation(91_500, "answers");
  expect((error as Error).name).toBe("TimeoutError");
  const after = await windDown();
  // The hung acknowledge went through; then no further list call (an outdated drain, a re-read) was made.
  expect(after.filter((c) => c.startsWith("GET "))).toEqual([]);
  expect(h.output.some((line) => line.includes("transactions cycle deadline"))).toBe(true);
}, 20_000);
