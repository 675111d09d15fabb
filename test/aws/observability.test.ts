import { Metrics } from "@aws-lambda-powertools/metrics";
import { afterEach, describe, expect, it, vi } from "vitest";
import { BatchGetItemCommand, BatchWriteItemCommand, DynamoDBClient, GetItemCommand } from "@aws-sdk/client-dynamodb";
import { GetSecretValueCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { DynamoDBDocumentClient, PutCommand } from "@aws-sdk/lib-dynamodb";
import { PowertoolsLoggerAdapter, PowertoolsMetricsAdapter, awsCallOf, nameFailedCalls } from "../../shared/aws/observability.js";
import { HeldTokens, SessionReply } from "../secret-kinds.js";
import { powertoolsLines } from "../qashio/helpers.js";

afterEach(() => vi.unstubAllEnvs());

function capture() {
  vi.stubEnv("POWERTOOLS_DEV", "true");
  vi.stubEnv("POWERTOOLS_METRICS_DISABLED", "false");
  const lines: Record<string, unknown>[] = [];
  vi.spyOn(console, "log").mockImplementation((line: unknown) => void lines.push(JSON.parse(String(line)) as Record<string, unknown>));
  vi.spyOn(console, "warn").mockImplementation(() => undefined);
  const metrics = new Metrics({ namespace: "QashioBridge", serviceName: "svc", defaultDimensions: { tenant: "acme" } });
  return { metrics, lines };
}

describe("PowertoolsMetricsAdapter", () => {
  it("sums dimensioned counts into one EMF document per name and dimension set, keeping the tenant", () => {
    const { metrics, lines } = capture();
    const adapter = new PowertoolsMetricsAdapter(metrics);
    adapter.add("EventsPublished", 2, "Count", { type: "card.suspended" });
    adapter.add("ProviderErrors", 1, "Count", { type: "card.suspended" });
    adapter.add("EventsPublished", 3, "Count", { type: "card.suspended" });
    adapter.add("EventsPublished", 1, "Count", { type: "transaction.created" });
    adapter.flush();
    expect(lines.map((l) => [l.type, l.EventsPublished, l.ProviderErrors, l.tenant])).toEqual([
      ["card.suspended", 5, undefined, "acme"],
      ["card.suspended", undefined, 1, "acme"],
      ["transaction.created", 1, undefined, "acme"],
    ]);
  });

  it("publishes every value of a dimensioned non-count metric with its dimensions, and warns about nothing", () => {
    const { metrics, lines } = capture();
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    const adapter = new PowertoolsMetricsAdapter(metrics);
    adapter.add("CycleDurationMs", 10, "Milliseconds", { type: "card.suspended" });
    adapter.add("CycleDurationMs", 20, "Milliseconds", { type: "card.suspended" });
    adapter.add("EventsPublished", 1, "Count", { type: "card.suspended" });
    adapter.flush();
    expect(lines.map((l) => [l.CycleDurationMs ?? l.EventsPublished, l.type, l.tenant])).toEqual([
      [10, "card.suspended", "acme"],
      [20, "card.suspended", "acme"],
      [1, "card.suspended", "acme"],
    ]);
    expect(warn).not.toHaveBeenCalled();
  });

  it("emits a dimensioned data point at one flush only: the next invocation's flush emits its own", () => {
    const { metrics, lines } = capture();
    const adapter = new PowertoolsMetricsAdapter(metrics);
    adapter.add("EventsPublished", 1, "Count", { type: "card.suspended" });
    adapter.flush();
    adapter.flush();
    expect(lines).toHaveLength(1);
    adapter.add("EventsPublished", 3, "Count", { type: "card.suspended" });
    adapter.flush();
    expect(lines.map((l) => l.EventsPublished)).toEqual([1, 3]);
  });

  it("sums data points whose dimensions are the same set, whatever order they were given in", () => {
    const { metrics, lines } = capture();
    const adapter = new PowertoolsMetricsAdapter(metrics);
    adapter.add("ProviderErrors", 1, "Count", { status_class: "5xx", type: "list" });
    adapter.add("ProviderErrors", 1, "Count", { type: "list", status_class: "5xx" });
    adapter.flush();
    expect(lines.map((l) => [l.ProviderErrors, l.status_class, l.type])).toEqual([[2, "5xx", "list"]]);
  });

  it("publishes a dimensioned gauge once per dimension set at its last value, under the exact dimension set the dashboard graphs", () => {
    const { metrics, lines } = capture();
    const adapter = new PowertoolsMetricsAdapter(metrics);
    adapter.add("TransactionsBacklog", 5, "Count", { status: "not_synced" });
    adapter.add("TransactionsBacklog", 3, "Count", { status: "outdated" });
    // A gauge: a second report replaces the first rather than adding to it.
    adapter.add("TransactionsBacklog", 7, "Count", { status: "not_synced" });
    adapter.flush();
    expect(lines.map((l) => [l.status, l.TransactionsBacklog, l.tenant])).toEqual([
      ["not_synced", 7, "acme"],
      ["outdated", 3, "acme"],
    ]);
    // infra/constructs/ops-dashboard.ts graphs it by service, tenant and status.
    const emf = lines.map((l) => (l._aws as { CloudWatchMetrics: { Namespace: string; Dimensions: string[][] }[] }).CloudWatchMetrics[0]);
    for (const doc of emf) expect(doc).toMatchObject({ Namespace: "QashioBridge", Dimensions: [["service", "tenant", "status"]] });
  });

  it("adds plain metrics to the invocation's buffer, published with the tenant dimension", () => {
    const { metrics, lines } = capture();
    new PowertoolsMetricsAdapter(metrics).add("CycleDurationMs", 1234, "Milliseconds");
    metrics.publishStoredMetrics();
    expect(lines[0]).toMatchObject({ CycleDurationMs: 1234, tenant: "acme" });
  });

  it("publishes a state gauge once per invocation, at the last value it reported (a held token written in the same refresh reads 0)", () => {
    const { metrics, lines } = capture();
    const adapter = new PowertoolsMetricsAdapter(metrics);
    // A refresh: the load finds the token held (1), the save writes the secret (0).
    adapter.add("TokenHeldInTable", 1, "Count");
    adapter.add("TokenHeldInTable", 0, "Count");
    adapter.add("TokenRefreshes", 1, "Count");
    adapter.flush();
    metrics.publishStoredMetrics();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ TokenHeldInTable: 0, TokenRefreshes: 1, tenant: "acme" });
    // The next invocation reports afresh: nothing of the last one is carried over.
    adapter.add("TokenHeldInTable", 1, "Count");
    adapter.flush();
    metrics.publishStoredMetrics();
    expect(lines[1]).toMatchObject({ TokenHeldInTable: 1, tenant: "acme" });
  });

  it("publishes TokenFamilyRevoked at the last value an invocation reported: a run carried over a freeze is older news", () => {
    const { metrics, lines } = capture();
    const adapter = new PowertoolsMetricsAdapter(metrics);
    // A run the last invocation gave up on (middy's early timeout) ends at this invocation's thaw, revoked; then this
    // invocation's own run, after re-onboarding, is answered.
    adapter.add("TokenFamilyRevoked", 1, "Count");
    adapter.add("TokenFamilyRevoked", 0, "Count");
    adapter.flush();
    metrics.publishStoredMetrics();
    expect(lines).toEqual([expect.objectContaining({ TokenFamilyRevoked: 0, tenant: "acme" })]);
  });

  it("publishes each metric in the unit it was reported in, dimensioned or not", () => {
    const { metrics, lines } = capture();
    const adapter = new PowertoolsMetricsAdapter(metrics);
    adapter.add("CycleDurationMs", 10, "Milliseconds", { type: "list" });
    adapter.add("EventsPublished", 1, "Count", { type: "list" });
    adapter.flush();
    adapter.add("SyncLagSeconds", 30, "Seconds");
    adapter.add("TokenRefreshes", 1, "Count");
    metrics.publishStoredMetrics();
    const units = lines.map((l) => (l._aws as { CloudWatchMetrics: { Metrics: { Name: string; Unit: string }[] }[] }).CloudWatchMetrics[0]?.Metrics);
    expect(units).toEqual([
      [{ Name: "CycleDurationMs", Unit: "Milliseconds" }],
      [{ Name: "EventsPublished", Unit: "Count" }],
      [{ Name: "SyncLagSeconds", Unit: "Seconds" }, { Name: "TokenRefreshes", Unit: "Count" }],
    ]);
  });

  it("keeps data points of one name and dimension set apart when their units differ, each in its own unit", () => {
    const { metrics, lines } = capture();
    const adapter = new PowertoolsMetricsAdapter(metrics);
    adapter.add("CycleDurationMs", 10, "Milliseconds", { type: "list" });
    adapter.add("CycleDurationMs", 2, "Seconds", { type: "list" });
    adapter.flush();
    const points = lines.map((l) => [l.CycleDurationMs, (l._aws as { CloudWatchMetrics: { Metrics: { Unit: string }[] }[] }).CloudWatchMetrics[0]?.Metrics[0]?.Unit]);
    expect(points).toEqual([[10, "Milliseconds"], [2, "Seconds"]]);
  });

  it("adds a data point given an empty dimension set to the invocation's buffer, as one given none", () => {
    const { metrics, lines } = capture();
    const adapter = new PowertoolsMetricsAdapter(metrics);
    adapter.add("EventsPublished", 2, "Count", {});
    metrics.publishStoredMetrics();
    expect(lines).toEqual([expect.objectContaining({ EventsPublished: 2, tenant: "acme" })]);
  });

  it("adds a state gauge only at the flush of an invocation that reported it: the next one's flush adds no stale value", () => {
    const { metrics, lines } = capture();
    const adapter = new PowertoolsMetricsAdapter(metrics);
    adapter.add("TokenHeldInTable", 1, "Count");
    adapter.flush();
    metrics.publishStoredMetrics();
    adapter.add("TokenRefreshes", 1, "Count");
    adapter.flush();
    metrics.publishStoredMetrics();
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatchObject({ TokenRefreshes: 1, tenant: "acme" });
    expect(lines[1]).not.toHaveProperty("TokenHeldInTable");
  });
});

type CallHandler = (args: { input: unknown }) => Promise<unknown>;
/** The middleware nameFailedCalls adds, taken from a stand-in client: called with a next handler and a context. */
function namingMiddleware(): (next: CallHandler, context: object) => CallHandler {
  let named: ((next: CallHandler, context: object) => CallHandler) | undefined;
  nameFailedCalls({ middlewareStack: { add: (middleware: typeof named) => void (named = middleware) } });
  if (named === undefined) throw new Error("nameFailedCalls added no middleware");
  return named;
}

describe("nameFailedCalls", () => {
  /** A client whose every call fails as the service would answer it, without a network. */
  function failing<T extends DynamoDBClient | SecretsManagerClient>(make: (config: object) => T): T {
    const answer = () => Object.assign(new Error("Requested resource not found"), { name: "ResourceNotFoundException", $metadata: {} });
    return make({
      region: "eu-west-1",
      credentials: { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "not-a-secret" },
      maxAttempts: 1,
      requestHandler: { handle: () => Promise.reject(answer()) },
    });
  }

  it("names the service and operation the SDK error came from, and the table of a DynamoDB call, never a key", async () => {
    const dynamo = failing((config) => new DynamoDBClient(config));
    nameFailedCalls(dynamo);
    const error = await dynamo.send(new GetItemCommand({ TableName: "bridge-acme", Key: { pk: { S: "SNAP#acme#card:secret-id" } } })).catch((e: unknown) => e);
    expect(awsCallOf(error)).toEqual({ awsCall: "DynamoDB GetItem", table: "bridge-acme" });
    // Through the document client, which shares the client's middleware stack.
    const doc = DynamoDBDocumentClient.from(dynamo);
    nameFailedCalls(doc);
    const viaDoc = await doc.send(new PutCommand({ TableName: "bridge-acme", Item: { pk: "x" } })).catch((e: unknown) => e);
    expect(awsCallOf(viaDoc)).toEqual({ awsCall: "DynamoDB PutItem", table: "bridge-acme" });
    const secrets = failing((config) => new SecretsManagerClient(config));
    nameFailedCalls(secrets);
    const secretError = await secrets.send(new GetSecretValueCommand({ SecretId: "qashio-bridge/acme" })).catch((e: unknown) => e);
    expect(awsCallOf(secretError)).toEqual({ awsCall: "SecretsManager GetSecretValue" });
    expect(awsCallOf(new Error("not from a call"))).toBeUndefined();
  });

  it("finds the call down the cause chain of an error that wraps the SDK's, and ends on a chain that loops", async () => {
    const dynamo = failing((config) => new DynamoDBClient(config));
    nameFailedCalls(dynamo);
    const error = await dynamo.send(new GetItemCommand({ TableName: "bridge-acme", Key: { pk: { S: "x" } } })).catch((e: unknown) => e);
    const wrapped = new Error("cycle stopped", { cause: new Error("store failed", { cause: error }) });
    expect(awsCallOf(wrapped)).toEqual({ awsCall: "DynamoDB GetItem", table: "bridge-acme" });
    const looping = new Error("a");
    looping.cause = new Error("b", { cause: looping });
    expect(awsCallOf(looping)).toBeUndefined();
    expect(awsCallOf(new Error("no call", { cause: "a string" }))).toBeUndefined();
  });

  it("names a call of a client that gives no client or command name as an AWS call, and no table where none was named", async () => {
    const named = namingMiddleware();
    const failure = new Error("Service unavailable");
    const error = await named(() => Promise.reject(failure), {})({ input: { Key: "x" } }).catch((e: unknown) => e);
    expect(error).toBe(failure);
    expect(awsCallOf(error)).toStrictEqual({ awsCall: "AWS call" });
  });

  it("passes on what a call fails with as it is, even what it cannot name: a null, or an input whose RequestItems is null", async () => {
    const named = namingMiddleware();
    const failure = new Error("Validation failed");
    const error = await named(() => Promise.reject(failure), { clientName: "DynamoDBClient", commandName: "BatchGetItemCommand" })({ input: { RequestItems: null } }).catch((e: unknown) => e);
    expect(error).toBe(failure);
    expect(awsCallOf(error)).toStrictEqual({ awsCall: "DynamoDB BatchGetItem" });
    const rejected = named(() => Promise.reject(null), {})({ input: {} });
    await expect(rejected).rejects.toBeNull();
  });

  it("names an error after the first call it failed, when the same error goes on through another", async () => {
    const named = namingMiddleware();
    const failure = new Error("Requested resource not found");
    const inner = () => named(() => Promise.reject(failure), { clientName: "DynamoDBClient", commandName: "GetItemCommand" })({ input: { TableName: "bridge-acme" } });
    const error = await named(inner, { clientName: "SecretsManagerClient", commandName: "GetSecretValueCommand" })({ input: {} }).catch((e: unknown) => e);
    expect(error).toBe(failure);
    expect(awsCallOf(error)).toStrictEqual({ awsCall: "DynamoDB GetItem", table: "bridge-acme" });
  });

  it("names the table of a batch call, which gives it as the key of RequestItems (no TableName)", async () => {
    const dynamo = failing((config) => new DynamoDBClient(config));
    nameFailedCalls(dynamo);
    const write = new BatchWriteItemCommand({ RequestItems: { "bridge-acme": [{ PutRequest: { Item: { pk: { S: "SNAP#acme#card:secret-id" } } } }] } });
    expect(awsCallOf(await dynamo.send(write).catch((e: unknown) => e))).toEqual({ awsCall: "DynamoDB BatchWriteItem", table: "bridge-acme" });
    const read = new BatchGetItemCommand({ RequestItems: { "bridge-acme": { Keys: [{ pk: { S: "x" } }] }, "bridge-globex": { Keys: [{ pk: { S: "y" } }] } } });
    expect(awsCallOf(await dynamo.send(read).catch((e: unknown) => e))).toEqual({ awsCall: "DynamoDB BatchGetItem", table: "bridge-acme,bridge-globex" });
  });
});

describe("PowertoolsLoggerAdapter", () => {
  it("logs each entry at the level it was given, with its attributes merged into the entry", () => {
    const entries = powertoolsLines((logger) => {
      const adapter = new PowertoolsLoggerAdapter(logger);
      adapter.debug("page read", { page: 1 });
      adapter.info("cycle done", { pulled: 2 });
      adapter.warn("lease taken", { holder: "other" });
      adapter.error("cycle failed", { awsCall: "DynamoDB GetItem" });
    }).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(entries.map(({ level, message, page, pulled, holder, awsCall }) => ({ level, message, page, pulled, holder, awsCall }))).toEqual([
      { level: "DEBUG", message: "page read", page: 1 },
      { level: "INFO", message: "cycle done", pulled: 2 },
      { level: "WARN", message: "lease taken", holder: "other" },
      { level: "ERROR", message: "cycle failed", awsCall: "DynamoDB GetItem" },
    ]);
  });

  it("never writes the value of a secret-looking attribute, at the top or inside a value, as the CLI's logger does", () => {
    const lines = powertoolsLines((logger) => {
      const adapter = new PowertoolsLoggerAdapter(logger);
      const held = { refreshToken: "rt-LEAK-1", expiresAt: 5, client: { client_secret: "cs-LEAK-2", client_id: "c1" } };
      for (const level of ["debug", "info", "warn", "error"] as const) {
        adapter[level]("saved", { accessToken: "at-LEAK-3", piiSalt: "salt-LEAK-4", code: "code-LEAK-5", held, attempts: [{ authorization: "Bearer LEAK-6", status: 401 }], statusCode: 502 });
      }
    });
    expect(lines).toHaveLength(4);
    for (const line of lines) expect(line).not.toMatch(/LEAK/);
    expect(lines.map((line) => JSON.parse(line) as Record<string, unknown>)).toEqual(["DEBUG", "INFO", "WARN", "ERROR"].map((level) => expect.objectContaining({
      level,
      message: "saved",
      accessToken: "[hidden]",
      piiSalt: "[hidden]",
      code: "[hidden]",
      held: { refreshToken: "[hidden]", expiresAt: 5, client: { client_secret: "[hidden]", client_id: "c1" } },
      attempts: [{ authorization: "[hidden]", status: 401 }],
      statusCode: 502,
    })));
  });

  it("walks a value referred to twice (not a cycle) in both places: neither is taken for a cycle", () => {
    const lines = powertoolsLines((logger) => {
      const shared = { refreshToken: "rt-LEAK-8", page: 2 };
      new PowertoolsLoggerAdapter(logger).info("twice", { first: shared, second: { shared } });
    });
    expect(lines[0]).not.toMatch(/LEAK/);
    expect(JSON.parse(lines[0]!)).toMatchObject({ first: { refreshToken: "[hidden]", page: 2 }, second: { shared: { refreshToken: "[hidden]", page: 2 } } });
  });

  it("writes an attribute whose value refers to itself once, its secrets hidden, rather than walking it for ever", () => {
    const lines = powertoolsLines((logger) => {
      const adapter = new PowertoolsLoggerAdapter(logger);
      const state: Record<string, unknown> = { refreshToken: "rt-LEAK-7", page: 3 };
      state.self = state;
      adapter.info("state", { state });
    });
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toMatch(/LEAK/);
    expect(JSON.parse(lines[0]!)).toMatchObject({ message: "state", state: { refreshToken: "[hidden]", page: 3, self: "[circular]" } });
  });

  it("hides a secret-looking member of a class instance, and of what a toJSON returns, as JSON.stringify writes them", () => {
    const lines = powertoolsLines((logger) => {
      const adapter = new PowertoolsLoggerAdapter(logger);
      adapter.info("held", { held: new HeldTokens("rt-LEAK-9"), nested: [{ held: new HeldTokens("rt-LEAK-9") }], session: new SessionReply("at-LEAK-10"), reply: { toJSON: () => ({ refresh_token: "rt-LEAK-11" }) } });
    });
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toMatch(/LEAK/);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      held: { refreshToken: "[hidden]", expiresAt: 5 },
      nested: [{ held: { refreshToken: "[hidden]", expiresAt: 5 } }],
      session: { accessToken: "[hidden]", scope: "read" },
      reply: { refresh_token: "[hidden]" },
    });
  });

  it("writes a URL with its password and its secret-looking query and fragment parameters hidden, the rest as it is", () => {
    const lines = powertoolsLines((logger) => {
      const callback = new URL("https://user:pw-LEAK-12@app.example/cb?code=c-LEAK-13&state=s1&Access_Token=at-LEAK-14#id_token=it-LEAK-15");
      const adapter = new PowertoolsLoggerAdapter(logger);
      adapter.info("callback", { callback, plain: new URL("https://app.example/cb?state=s1&statusCode=502") });
    });
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toMatch(/LEAK/);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      callback: "https://user:[hidden]@app.example/cb?code=[hidden]&state=s1&Access_Token=[hidden]#id_token=[hidden]",
      plain: "https://app.example/cb?state=s1&statusCode=502",
    });
  });

  it("writes a URL inside a string attribute with its secrets hidden, at the top and inside a value", () => {
    const lines = powertoolsLines((logger) => {
      const adapter = new PowertoolsLoggerAdapter(logger);
      adapter.info("redirect", { target: "https://app.example/cb?code=c-LEAK-19&state=s1", tried: ["http://user:pw-LEAK-20@localhost/token"] });
    });
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toMatch(/LEAK/);
    expect(JSON.parse(lines[0]!)).toMatchObject({ target: "https://app.example/cb?code=[hidden]&state=s1", tried: ["http://user:[hidden]@localhost/token"] });
  });

  it("writes a Map, a Set and URLSearchParams as empty objects, never their entries, a secret-looking one or any other", () => {
    const lines = powertoolsLines((logger) => {
      const adapter = new PowertoolsLoggerAdapter(logger);
      adapter.info("held", { byName: new Map([["refreshToken", "rt-LEAK-16"]]), seen: new Set(["at-LEAK-17"]), query: new URLSearchParams("code=c-LEAK-18") });
    });
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toMatch(/LEAK/);
    expect(JSON.parse(lines[0]!)).toMatchObject({ byName: {}, seen: {}, query: {} });
  });
});
