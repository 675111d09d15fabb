import { createServer, type Server, type Socket } from "node:net";
import { DescribeTableCommand } from "@aws-sdk/client-dynamodb";
import { PutEventsCommand } from "@aws-sdk/client-eventbridge";
import { GetSecretValueCommand } from "@aws-sdk/client-secrets-manager";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { CYCLE_SAFETY_MARGIN_MS } from "../../shared/aws/config.js";
import { SecretStoreError } from "../../shared/aws/errors.js";
import { EventBridgePublisher } from "../../shared/aws/event-publisher.js";
import { ProviderSecretClient } from "../../shared/aws/provider-secret.js";
import { isRetryableAwsError } from "../../shared/aws/retry.js";
import { SDK_TIMEOUTS, defaultAwsClients, sdkClientConfig, type AwsClients } from "../../shared/aws/runtime.js";
import { DynamoSnapshotStore } from "../../shared/aws/snapshot-store.js";
import { DEFAULT_DEADLINE_GRACE_MS } from "../../shared/bridge/deps.js";
import { pollTransactions } from "../../shared/bridge/transactions.js";
import { makeRig } from "../bridge/fakes.js";
import { within } from "../within.js";
import { FakeClock } from "./support/clock.js";

/** A server that accepts connections and never answers: what a hung AWS endpoint looks like to the client. */
let server: Server;
let connections = 0;
const sockets: Socket[] = [];

/** Short enough for a test; the SDK opens a new connection for each attempt after a timeout. */
const SHORT = { ...SDK_TIMEOUTS, connectionTimeoutMs: 1_000, requestTimeoutMs: 150 };

beforeAll(async () => {
  server = createServer((socket) => {
    connections += 1;
    sockets.push(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  vi.stubEnv("AWS_ENDPOINT_URL", `http://127.0.0.1:${port}`);
  vi.stubEnv("AWS_REGION", "eu-west-1");
  vi.stubEnv("AWS_ACCESS_KEY_ID", "test");
  vi.stubEnv("AWS_SECRET_ACCESS_KEY", "test");
  vi.stubEnv("AWS_SESSION_TOKEN", "");
});

afterAll(async () => {
  vi.unstubAllEnvs();
  for (const socket of sockets) socket.destroy();
  await new Promise((resolve) => server.close(resolve));
});

/**
 * Runs `call` against the silent server and returns its error (or, for a call that settles the failure itself, such as
 * a publish failing its entries for now, its value), the connections it opened (one per SDK attempt) and the SDK's
 * attempt limit for that client.
 */
async function silently<T>(client: { config: { maxAttempts: () => Promise<number> } }, call: () => Promise<T>, rounds = 1) {
  const maxAttempts = await client.config.maxAttempts();
  // Within the SDK's attempts and its own short backoff, not multiplied by an adapter loop.
  const budgetMs = rounds * (maxAttempts * SHORT.requestTimeoutMs + 1_000) + 1_000;
  const before = connections;
  const settled = call().then(
    (value) => ({ value, error: undefined }),
    (error: unknown) => ({ value: undefined, error }),
  );
  // Over its budget it fails at once, not at the test timeout (a request never timed out used to hold each test 30 s).
  const outcome = await within(settled, budgetMs, () => `no outcome within ${budgetMs} ms: an adapter loop multiplied the SDK's attempts, or the SDK never timed out a request the endpoint leaves unanswered (requestHandler throwOnRequestTimeout?)`);
  return { ...outcome, attempts: connections - before, maxAttempts };
}

const event = {
  source: "qashio.bridge",
  detailType: "transaction.created",
  time: "2026-03-01T12:00:00.000Z",
  detail: {
    id: "ev_1",
    type: "transaction.created",
    schema_version: "1.1",
    tenant: "acme",
    occurred_at: "2026-03-01T11:00:00.000Z",
    subject: { type: "transaction", id: "t1", sequence: 1 },
    data: { object: { id: "t1" } },
  },
} satisfies Parameters<EventBridgePublisher["publish"]>[0][number];

describe("defaultAwsClients", () => {
  it("bounds connecting and answering each by its own timeout (a connection that never opens fails at connectionTimeoutMs)", () => {
    expect(sdkClientConfig(SHORT)).toMatchObject({ maxAttempts: SHORT.maxAttempts, requestHandler: { connectionTimeout: 1_000, requestTimeout: 150, throwOnRequestTimeout: true } });
  });

  it.each([
    ["DynamoDB", (c: AwsClients) => [c.dynamo, () => c.dynamo.send(new DescribeTableCommand({ TableName: "t" }))] as const],
    ["EventBridge", (c: AwsClients) => [c.eventBridge, () => c.eventBridge.send(new PutEventsCommand({ Entries: [{ Detail: "{}" }] }))] as const],
    ["Secrets Manager", (c: AwsClients) => [c.secrets, () => c.secrets.send(new GetSecretValueCommand({ SecretId: "s" }))] as const],
  ])("%s: a silent endpoint fails with a TimeoutError after the SDK's attempts, which the adapters do not retry", async (_name, make) => {
    const [client, call] = make(defaultAwsClients(SHORT));
    const { error, attempts, maxAttempts } = await silently(client, call);
    expect(error).toMatchObject({ name: "TimeoutError", $metadata: { attempts: maxAttempts } });
    expect(attempts).toBe(maxAttempts);
    // The SDK marks it neither `$retryable` nor with a status: only its name tells the adapters not to retry it.
    expect((error as { $retryable?: unknown }).$retryable).toBeUndefined();
    expect(isRetryableAwsError(error)).toBe(false);
  });

  it("keeps a silent call's worst case (every SDK attempt timing out) within the cycle's safety margin", async () => {
    const clients = defaultAwsClients();
    for (const client of [clients.dynamo, clients.eventBridge, clients.secrets]) {
      // The SDK's backoff between these attempts is well under a second in all.
      // What the margin keeps after the provider calls' grace is for the writes of the page in flight.
      expect((await client.config.maxAttempts()) * SDK_TIMEOUTS.requestTimeoutMs + 1_000).toBeLessThanOrEqual(
        CYCLE_SAFETY_MARGIN_MS - DEFAULT_DEADLINE_GRACE_MS,
      );
    }
  });
});

describe("the adapters against a silent endpoint", () => {
  it("EventBridgePublisher: one publish fails its entries for now (retryable) after the SDK's attempts only", async () => {
    const clients = defaultAwsClients(SHORT);
    const publisher = new EventBridgePublisher({ client: clients.eventBridge, eventBusName: "bus", clock: new FakeClock() });
    const { value, attempts, maxAttempts } = await silently(clients.eventBridge, () => publisher.publish([event]));
    expect(value?.failed).toEqual([{ event, reason: "PutEvents failed after 1 attempts (entry round 1): TimeoutError", retryable: true }]);
    expect(attempts).toBe(maxAttempts);
  });

  it("EventBridgePublisher: a timeout after one SDK attempt only (its retry quota empty) is called once more by the adapter, and no more", async () => {
    const clients = defaultAwsClients({ ...SHORT, maxAttempts: 1 });
    const publisher = new EventBridgePublisher({ client: clients.eventBridge, eventBusName: "bus", clock: new FakeClock() });
    const { value, attempts } = await silently(clients.eventBridge, () => publisher.publish([event]), 2);
    expect(value?.failed).toEqual([{ event, reason: "PutEvents failed after 2 attempts (entry round 1): TimeoutError", retryable: true }]);
    expect(attempts).toBe(2);
  });

  it("ProviderSecretClient: one read fails with SecretStoreError after the SDK's attempts only", async () => {
    const clients = defaultAwsClients(SHORT);
    const secret = new ProviderSecretClient({ secrets: clients.secrets, secretId: "bridge/acme", clock: new FakeClock() });
    const { error, attempts, maxAttempts } = await silently(clients.secrets, () => secret.read());
    expect(error).toBeInstanceOf(SecretStoreError);
    expect(error).toMatchObject({ message: expect.stringContaining("TimeoutError"), cause: { name: "TimeoutError" } });
    expect(attempts).toBe(maxAttempts);
  });

  it("ProviderSecretClient: a write (after a token refresh: it must land) is made 3 times while its attempts time out, then fails", async () => {
    const clients = defaultAwsClients(SHORT);
    const secret = new ProviderSecretClient({ secrets: clients.secrets, secretId: "bridge/acme", clock: new FakeClock() });
    const { error, attempts, maxAttempts } = await silently(clients.secrets, () => secret.put({ refresh_token: "rt-2" }), 3);
    expect(error).toBeInstanceOf(SecretStoreError);
    expect(error).toMatchObject({ attempts: 3, cause: { name: "TimeoutError" } });
    expect(attempts).toBe(3 * maxAttempts);
  });

  it.each([
    ["ProviderSecretClient", (c: AwsClients) => [c.secrets, () => new ProviderSecretClient({ secrets: c.secrets, secretId: "bridge/acme", clock: new FakeClock() }).read()] as const],
  ])("%s: a timeout after one SDK attempt only (its retry quota empty) is called once more by the adapter, and no more", async (_name, make) => {
    const [client, call] = make(defaultAwsClients({ ...SHORT, maxAttempts: 1 }));
    const { error, attempts } = await silently(client, call, 2);
    expect(error).toMatchObject({ cause: { name: "TimeoutError", $metadata: { attempts: 1 } } });
    expect(attempts).toBe(2);
  });

  it("isRetryableAwsError: a timeout is worth another call only on the adapter's first, and only after a single SDK attempt", () => {
    const timeout = (attempts: number) => Object.assign(new Error("socket hang up"), { name: "TimeoutError", $metadata: { attempts } });
    expect(isRetryableAwsError(timeout(1))).toBe(true);
    expect(isRetryableAwsError(timeout(1), 2)).toBe(false);
    expect(isRetryableAwsError(timeout(3))).toBe(false);
    expect(isRetryableAwsError(Object.assign(new Error("reset"), { code: "ECONNRESET" }))).toBe(false);
  });

  it("DynamoSnapshotStore: one read fails with the SDK's TimeoutError after its attempts only", async () => {
    const clients = defaultAwsClients(SHORT);
    const doc = DynamoDBDocumentClient.from(clients.dynamo);
    const store = new DynamoSnapshotStore({ doc, tableName: "t", tenant: "acme", clock: new FakeClock() });
    const { error, attempts, maxAttempts } = await silently(clients.dynamo, () => store.getMany(["transaction:tx_1"]));
    expect(error).toMatchObject({ name: "TimeoutError" });
    expect(attempts).toBe(maxAttempts);
  });

  it("the engine leaves the transaction unacknowledged, failed for now, and warns naming the timeout", async () => {
    const clients = defaultAwsClients(SHORT);
    const publisher = new EventBridgePublisher({ client: clients.eventBridge, eventBusName: "bus", clock: new FakeClock() });
    const rig = makeRig({}, { publisher });
    const txn = rig.provider.addTransaction();
    const { value, attempts, maxAttempts } = await silently(clients.eventBridge, () => pollTransactions(rig.deps));
    expect(value).toMatchObject({ acknowledged: 0, publishFailed: 1, publishDeferred: 1 });
    expect(rig.metrics.sum("EventsFailed")).toBe(1);
    expect(rig.logger.lines).toContainEqual(
      expect.objectContaining({
        level: "warn",
        message: "events not taken by the publisher for now; left for the next cycle",
        attributes: expect.objectContaining({ reasons: [expect.stringMatching(/^PutEvents failed after 1 attempts .*TimeoutError$/)] }),
      }),
    );
    expect(attempts).toBe(maxAttempts);
    expect(rig.provider.pending().map((t) => t.id)).toEqual([txn.id]);
  });
});
