import { createServer, type Server, type Socket } from "node:net";
import { DescribeTableCommand } from "@aws-sdk/client-dynamodb";
import { PutEventsCommand } from "@aws-sdk/client-eventbridge";
import { GetSecretValueCommand } from "@aws-sdk/client-secrets-manager";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { SDK_TIMEOUTS, defaultAwsClients } from "../../shared/aws/runtime.js";

/** A server that accepts connections and never answers: what a hung AWS endpoint looks like to the client. */
let server: Server;
let connections = 0;
const sockets: Socket[] = [];

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

describe("defaultAwsClients", () => {
  it("bounds each attempt below a Lambda timeout, so a hung call fails and is retried instead of holding the invocation", () => {
    // The SDK's attempts of a hung call (DynamoDB's client makes up to 4) end well within the 5-minute function timeout.
    expect(4 * (SDK_TIMEOUTS.connectionTimeoutMs + SDK_TIMEOUTS.requestTimeoutMs)).toBeLessThan(60_000);
  });

  it.each([
    ["DynamoDB", (c: ReturnType<typeof defaultAwsClients>) => c.dynamo.send(new DescribeTableCommand({ TableName: "t" }))],
    ["EventBridge", (c: ReturnType<typeof defaultAwsClients>) => c.eventBridge.send(new PutEventsCommand({ Entries: [{ Detail: "{}" }] }))],
    ["Secrets Manager", (c: ReturnType<typeof defaultAwsClients>) => c.secrets.send(new GetSecretValueCommand({ SecretId: "s" }))],
  ])("%s: a silent endpoint fails with a retryable TimeoutError after the SDK's attempts", async (_name, call) => {
    const clients = defaultAwsClients({ connectionTimeoutMs: 1_000, requestTimeoutMs: 150 });
    const before = connections;
    const started = Date.now();
    const error = (await call(clients).catch((e: unknown) => e)) as { name?: string; $metadata?: { attempts?: number } };
    expect(error.name).toBe("TimeoutError");
    // The standard retry took the timeout for a transient fault and tried again.
    expect(error.$metadata?.attempts).toBeGreaterThan(1);
    expect(connections - before).toBeGreaterThanOrEqual(1);
    expect(Date.now() - started).toBeLessThan(4_000);
  });
});
