import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { TENANT, createHarness, lambdaContext, type Harness } from "./support/harness.js";

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => h.close());

/** Runs a transaction cycle on `env` with the Lambda's own Logger and Metrics (none injected), as in production. */
async function pollWithOwnPowertools(env: Readonly<Record<string, string | undefined>>): Promise<void> {
  // Powertools would read these from process.env: the values come from `env` alone.
  vi.stubEnv("POWERTOOLS_METRICS_NAMESPACE", undefined);
  vi.stubEnv("POWERTOOLS_SERVICE_NAME", undefined);
  await h.poller("transactions", { env, logger: undefined, metrics: undefined })();
}

/** Every EMF document of the output is in `namespace` with `service` as its service dimension, and every log line names `service`. */
function expectNamespaceAndService(namespace: string, service: string): void {
  const docs = h.output.filter((line) => line.trim().startsWith("{")).map((line) => JSON.parse(line) as Record<string, unknown>);
  const emf = docs.filter((doc) => doc._aws !== undefined);
  expect(emf.length).toBeGreaterThan(0);
  for (const doc of emf) {
    const [directive] = (doc._aws as { CloudWatchMetrics: { Namespace: string }[] }).CloudWatchMetrics;
    expect(directive?.Namespace).toBe(namespace);
    expect(doc.service).toBe(service);
  }
  const logs = docs.filter((doc) => doc.level !== undefined);
  expect(logs.length).toBeGreaterThan(0);
  for (const doc of logs) expect(doc.service).toBe(service);
}

it("emits metrics and logs under the documented default namespace and service when POWERTOOLS_* are not set", async () => {
  const { POWERTOOLS_METRICS_NAMESPACE: _n, POWERTOOLS_SERVICE_NAME: _s, ...env } = h.env;
  await pollWithOwnPowertools(env);
  expectNamespaceAndService("QashioBridge", "qashio-bridge");
});

it("trims POWERTOOLS_SERVICE_NAME and POWERTOOLS_METRICS_NAMESPACE as the environment check does: padded, they name the same service and namespace", async () => {
  // A stray space from a console paste: the check accepts it trimmed, so the metrics must not go to " AcmeBridge ".
  await pollWithOwnPowertools({ ...h.env, POWERTOOLS_SERVICE_NAME: " acme-bridge ", POWERTOOLS_METRICS_NAMESPACE: " AcmeBridge " });
  expectNamespaceAndService("AcmeBridge", "acme-bridge");
});

it("emits the ColdStart metric with the tenant dimension, as every other metric", async () => {
  vi.stubEnv("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand");
  // The Lambda's own Metrics (none injected): it reads the initialization type when built, as in production.
  await h.poller("transactions", { metrics: undefined })();
  const emf = h.output.filter((line) => line.includes('"_aws"')).map((line) => JSON.parse(line) as Record<string, unknown>);
  const coldStart = emf.filter((doc) => doc.ColdStart !== undefined);
  expect(coldStart).toHaveLength(1);
  expect(coldStart[0]?.tenant).toBe(TENANT);
  const [directive] = (coldStart[0]?._aws as { CloudWatchMetrics: { Dimensions: string[][] }[] }).CloudWatchMetrics;
  expect(directive?.Dimensions.flat()).toContain("tenant");
});

it("never echoes an invalid TENANT_ID, in the ColdStart metric either: its lines carry no tenant then", async () => {
  vi.stubEnv("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand");
  const bad = "acme#not-a-tenant";
  // The Lambda's own Metrics (none injected): it emits ColdStart before the body validates the environment.
  await expect(h.poller("transactions", { env: { ...h.env, TENANT_ID: bad }, metrics: undefined })()).rejects.toMatchObject({ name: "LambdaConfigurationError" });
  const emf = h.output.filter((line) => line.includes('"_aws"')).map((line) => JSON.parse(line) as Record<string, unknown>);
  expect(emf.filter((doc) => doc.ColdStart !== undefined)).toHaveLength(1);
  for (const doc of emf) expect(doc).not.toHaveProperty("tenant");
  expect(h.output.join("\n")).not.toContain(bad);
});

it("builds each Lambda entry in functions/ on the handler of its kind", async () => {
  // An event each handler refuses before it touches AWS or the provider, with a message only that handler gives.
  for (const [name, value] of Object.entries(h.env)) vi.stubEnv(name, value);
  const entry = async (file: string) =>
    ((await import(`../../functions/${file}`)) as { handler: (event: unknown, context: unknown) => Promise<unknown> }).handler;
  const transactions = await entry("poll-transactions.ts");
  await expect(transactions({ action: "bogus" }, lambdaContext())).rejects.toThrow('action must be "cycle", "redrive" or "conform-pii"');
  const cards = await entry("poll-cards.ts");
  await expect(cards({ action: "redrive" }, lambdaContext())).rejects.toThrow('action must be "cycle" on the card poller');
  const rotation = await entry("rotate-token.ts");
  await expect(rotation({}, lambdaContext())).rejects.toThrow("Rotation event must be Secrets Manager's {SecretId, ClientRequestToken, Step}");
});

it("takes POWERTOOLS_LOG_LEVEL in any case (debug as the CLI's BRIDGE_LOG_LEVEL spells it), and names a level it does not know", async () => {
  // The Lambda's own Logger (none injected), as in production.
  // An invocation refused at its start publishes no metrics: Powertools' warning about that is logged at debug.
  const refused = h.poller("transactions", { env: { ...h.env, POWERTOOLS_LOG_LEVEL: "debug" }, logger: undefined, metrics: undefined })({ action: "bogus" } as never);
  await expect(refused).rejects.toMatchObject({ name: "PollEventError" });
  const levels = h.output.filter((line) => line.trim().startsWith("{")).map((line) => (JSON.parse(line) as Record<string, unknown>).level);
  expect(levels).toContain("DEBUG");
  const failed = h.poller("transactions", { env: { ...h.env, POWERTOOLS_LOG_LEVEL: "verbose", PII_MODE: "none" }, logger: undefined, metrics: undefined })();
  await expect(failed).rejects.toMatchObject({ name: "LambdaConfigurationError", message: expect.stringMatching(/PII_MODE .*; POWERTOOLS_LOG_LEVEL must be one of trace, debug, info, warn, error, critical or silent/) });
});

it("takes a blank POWERTOOLS_LOG_LEVEL as unset, as Powertools does: the cycle runs at LOG_LEVEL's level", async () => {
  vi.stubEnv("POWERTOOLS_LOG_LEVEL", " ");
  vi.stubEnv("LOG_LEVEL", "debug");
  const poll = h.poller("transactions", { env: { ...h.env, POWERTOOLS_LOG_LEVEL: " ", LOG_LEVEL: "debug" }, logger: undefined, metrics: undefined });
  await poll();
  // A refused invocation publishes no metrics, which Powertools' warning says at debug: the Logger is at DEBUG.
  await expect(poll({ action: "bogus" } as never)).rejects.toMatchObject({ name: "PollEventError" });
  const levels = h.output.filter((line) => line.trim().startsWith("{")).map((line) => (JSON.parse(line) as Record<string, unknown>).level);
  expect(levels).toContain("DEBUG");
});

it("takes Powertools' legacy LOG_LEVEL when POWERTOOLS_LOG_LEVEL is unset, in any case, and names a level it does not know", async () => {
  // Powertools reads LOG_LEVEL itself (process.env) when POWERTOOLS_LOG_LEVEL is unset: upper case only, else INFO unsaid.
  vi.stubEnv("LOG_LEVEL", "debug");
  const refused = h.poller("transactions", { env: { ...h.env, LOG_LEVEL: "debug" }, logger: undefined, metrics: undefined })({ action: "bogus" } as never);
  await expect(refused).rejects.toMatchObject({ name: "PollEventError" });
  const levels = h.output.filter((line) => line.trim().startsWith("{")).map((line) => (JSON.parse(line) as Record<string, unknown>).level);
  expect(levels).toContain("DEBUG");
  vi.stubEnv("LOG_LEVEL", "verbose");
  const failed = h.poller("transactions", { env: { ...h.env, LOG_LEVEL: "verbose" }, logger: undefined, metrics: undefined })();
  await expect(failed).rejects.toMatchObject({
    name: "LambdaConfigurationError",
    message: "Invalid function environment: LOG_LEVEL must be one of trace, debug, info, warn, error, critical or silent (any case; read as POWERTOOLS_LOG_LEVEL is unset)",
  });
});
