import { describe, expect, it, vi } from "vitest";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { EventBridgeClient } from "@aws-sdk/client-eventbridge";
import { PutSecretValueCommand } from "@aws-sdk/client-secrets-manager";
import { loadConfig } from "../../shared/aws/config.js";
import { RuntimeCache, type TenantRuntimeOptions } from "../../shared/aws/runtime.js";
import { DEFAULT_SECRET_CACHE_TTL_MS } from "../../shared/aws/token-store.js";
import { MemoryMetrics } from "../../shared/cli/console-ports.js";
import type { Logger } from "../../shared/bridge/ports.js";
import { turns } from "../qashio/helpers.js";
import { FakeClock } from "./support/clock.js";
import { FakeSecretsManager, PROVIDER_SECRET } from "./support/fake-secrets-manager.js";

const SECRET_ID = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:acme-AbCdEf";

/** Options of one container's runtimes: a fake Secrets Manager, SDK clients that are never called. */
function containerOptions() {
  const clock = new FakeClock();
  const secrets = new FakeSecretsManager(SECRET_ID, PROVIDER_SECRET, () => clock.now());
  const config = loadConfig({
    TENANT_ID: "acme",
    QASHIO_BASE_URL: "https://api.example.com/",
    TABLE_NAME: "bridge",
    SECRET_ID,
    EVENT_BUS_NAME: "bridge-bus",
    PII_MODE: "hash",
  });
  const logger: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
  const options: TenantRuntimeOptions = {
    config,
    clients: { dynamo: new DynamoDBClient({ region: "eu-west-1" }), eventBridge: new EventBridgeClient({ region: "eu-west-1" }), secrets: secrets.client },
    logger,
    metrics: new MemoryMetrics(),
    clock,
  };
  return { clock, secrets, options };
}

describe("RuntimeCache", () => {
  it("rebuilds once for changed credentials when two invocations ask at once (one timed out while its secret read hung): the runtime kept is the one given the held tokens", async () => {
    const { clock, secrets, options } = containerOptions();
    const cache = new RuntimeCache();
    const old = await cache.get(options);
    const handOver = vi.spyOn(old.tokenProvider, "handOverHeldTokens");
    await secrets.client.send(new PutSecretValueCommand({ SecretId: SECRET_ID, SecretString: JSON.stringify({ ...PROVIDER_SECRET, client_secret: "rotated" }) }));
    clock.advance(DEFAULT_SECRET_CACHE_TTL_MS + 1);

    // The first invocation's read of the secret hangs past its timeout; the next invocation asks meanwhile.
    const hung = secrets.holdNext("GetSecretValue");
    const first = cache.get(options);
    await hung.reached;
    const second = cache.get(options);
    await turns(20);
    hung.release();
    const [a, b] = await Promise.all([first, second]);

    expect(a).not.toBe(old);
    expect(b, "two runtimes built for one container").toBe(a);
    expect(handOver.mock.calls.map(([successor]) => successor)).toEqual([a.tokenProvider]);
    expect(await cache.get(options)).toBe(a);
  });
});
