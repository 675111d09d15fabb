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

/** Puts new provider credentials in the secret, and lets the store's cached copy of the old ones run out. */
async function rotateCredentials(secrets: FakeSecretsManager, clock: FakeClock, changed: Partial<typeof PROVIDER_SECRET> = { client_secret: "rotated" }): Promise<void> {
  await secrets.client.send(new PutSecretValueCommand({ SecretId: SECRET_ID, SecretString: JSON.stringify({ ...PROVIDER_SECRET, ...changed }) }));
  clock.advance(DEFAULT_SECRET_CACHE_TTL_MS + 1);
}

/** A logger keeping each line as "level message". */
function lineLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const at = (level: string) => (message: string) => void lines.push(`${level} ${message}`);
  return { lines, debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

describe("RuntimeCache", () => {
  it("rebuilds once for changed credentials when two invocations ask at once (one timed out while its secret read hung): the runtime kept is the one given the held tokens", async () => {
    const { clock, secrets, options } = containerOptions();
    const cache = new RuntimeCache();
    const old = await cache.get(options);
    const handOver = vi.spyOn(old.tokenProvider, "handOverHeldTokens");
    await rotateCredentials(secrets, clock);

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

  it.each([{ client_id: "cid-2" }, { pii_salt: "salt-fedcba9876543210" }, { refresh_token: "rt-2" }])(
    "rebuilds for a changed client id or PII salt, and keeps the runtime for a new refresh token alone (%j)",
    async (changed) => {
      const { clock, secrets, options } = containerOptions();
      const cache = new RuntimeCache();
      const old = await cache.get(options);
      await rotateCredentials(secrets, clock, changed);
      const next = await cache.get(options);
      expect(next === old).toBe("refresh_token" in changed);
    },
  );

  it("answers the next invocation after one whose get failed: a failed secret read does not stick to the cache", async () => {
    const { secrets, options } = containerOptions();
    const cache = new RuntimeCache();
    secrets.failNext("GetSecretValue", new Error("ThrottlingException"));
    await expect(cache.get(options)).rejects.toThrow();
    const runtime = await cache.get(options);
    expect(await cache.get(options)).toBe(runtime);
  });

  it.each([false, true])("logs the rebuild for changed credentials, and warns of a handed-over refresh token only when one was held (held: %s)", async (held) => {
    const { clock, secrets, options } = containerOptions();
    const logger = lineLogger();
    const cache = new RuntimeCache();
    const old = await cache.get({ ...options, logger });
    // The real hand-over gives the held tokens up: the old provider holds none once it resolved.
    let holds = held;
    vi.spyOn(old.tokenProvider, "holdsUnsavedTokens", "get").mockImplementation(() => holds);
    vi.spyOn(old.tokenProvider, "handOverHeldTokens").mockImplementation(async () => void (holds = false));
    await rotateCredentials(secrets, clock);
    await cache.get({ ...options, logger });
    const rebuilt = "info Provider credentials changed in the secret; rebuilding the runtime";
    const takesOver = "warn The rebuilt runtime takes over the rotated refresh token held in memory; it saves it before it uses the tokens";
    expect(logger.lines.filter((line) => !line.startsWith("debug"))).toEqual(held ? [rebuilt, takesOver] : [rebuilt]);
  });

  it("gives the rebuilt runtime only once the held tokens were handed over to it", async () => {
    const { clock, secrets, options } = containerOptions();
    const cache = new RuntimeCache();
    const old = await cache.get(options);
    let handedOver!: () => void;
    const handOver = vi.spyOn(old.tokenProvider, "handOverHeldTokens").mockImplementation(() => new Promise<void>((resolve) => (handedOver = resolve)));
    await rotateCredentials(secrets, clock);
    let got = false;
    const rebuilt = cache.get(options).then((runtime) => ((got = true), runtime));
    await vi.waitFor(() => expect(handOver).toHaveBeenCalled());
    await turns(20);
    expect(got, "the rebuilt runtime was given before it held the tokens").toBe(false);
    handedOver();
    expect(await rebuilt).not.toBe(old);
  });
});
