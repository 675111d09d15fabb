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

it("still emits the dimensioned metrics of the work done (EventsPublished by type) when the invocation runs into its timeout", async () => {
  const company = h.sandbox.control.company(h.companyId);
  if (company === undefined) throw new Error("no company");
  // Time as Lambda sees it, and the bridge clock moves with real time. Middy reads the remaining time first, to time
  // out 5 ms before the end: it is told 1.5 s, so its (real) timer fires then. The handler's later reads are told the
  // invocation has 31.5 s left, so the cycle's deadline (30 s safety margin) is 1.5 s away and it starts its first
  // page: in Lambda that takes a hang of over 30 s past the deadline, which the test does not sit through.
  const started = Date.now();
  const elapsed = () => Date.now() - started;
  const clock: Clock = { now: () => h.clock.now() + elapsed(), sleep: h.clock.sleep };
  let reads = 0;
  const context = { ...lambdaContext(), getRemainingTimeInMillis: () => (reads++ === 0 ? 1_500 : 31_500) - elapsed() };
  // The acknowledge of the first page hangs past the invocation's end (a provider that stops answering).
  let release: () => void = () => undefined;
  const hung = new Promise<void>((resolve) => (release = resolve));
  let hangs = 0;
  const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    if (url.endsWith("/transactions/acknowledge")) {
      hangs += 1;
      await hung;
      throw new TypeError("fetch failed");
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
  try {
    const error = await handler(scheduledEvent(), context).catch((e: unknown) => e);
    // What CloudWatch got by the time the invocation ended.
    const atEnd = [...h.output];
    expect(hangs).toBe(1);
    expect((error as Error).name).toBe("TimeoutError");
    const published = atEnd.filter((line) => line.includes('"_aws"') && line.includes('"EventsPublished"'));
    expect(published).toHaveLength(1);
  } finally {
    release();
    // Let the abandoned cycle wind down before the table goes.
    const until = Date.now() + 3_000;
    while (!h.output.some((line) => line.includes("Cycle failed")) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    eventBridge.restore();
    dynamo.destroy();
  }
}, 20_000);
