/**
 * End-to-end harness of the Lambda handlers: the provider sandbox (in-process fetch), DynamoDB Local (fresh table),
 * a fake Secrets Manager holding the tenant secret, and a mocked EventBridge that records every entry it accepts.
 * Each `container()` is one Lambda container (its own handler instance, SDK clients and token provider).
 */
import { randomUUID } from "node:crypto";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { GetSecretValueCommand, PutSecretValueCommand } from "@aws-sdk/client-secrets-manager";
import {
  EventBridgeClient,
  PutEventsCommand,
  type EventBridgeClientResolvedConfig,
  type PutEventsRequestEntry,
  type ServiceInputTypes,
  type ServiceOutputTypes,
} from "@aws-sdk/client-eventbridge";
import { Logger } from "@aws-lambda-powertools/logger";
import { Tracer } from "@aws-lambda-powertools/tracer";
import type { Context } from "aws-lambda";
import { mockClient, type AwsStub } from "aws-sdk-client-mock";
import { vi } from "vitest";
import { ACCESS_TOKEN_TTL_SECONDS, createSandbox, SANDBOX_CLIENT, SANDBOX_IN_PROCESS_URL, type Sandbox } from "../../../sandbox/index.js";
import type { BridgeEventDetail, Clock } from "../../../shared/bridge/ports.js";
import { createPollHandler, createRotationHandler, type HandlerOptions, type PollResult } from "../../../shared/aws/handlers.js";
import type { PollEvent } from "../../../shared/aws/poll-event.js";
import type { RotationEvent } from "../../../shared/aws/rotation.js";
import { SDK_TIMEOUTS, type AwsClients } from "../../../shared/aws/runtime.js";
import { SecretsManagerTokenStore } from "../../../shared/aws/token-store.js";
import { createTestTable, localDynamoClient, type TestTable } from "../../aws/support/dynamo.js";
import { awsError, FakeSecretsManager } from "../../aws/support/fake-secrets-manager.js";
import { Process } from "./process-death.js";

export const REDIRECT_URI = "http://127.0.0.1:8765/callback";
export const TENANT = "falcon";
export const PII_SALT = "salt-for-tests-0123456789";
const CLIENT = { client_id: SANDBOX_CLIENT.clientId, client_secret: SANDBOX_CLIENT.clientSecret };

/** One entry EventBridge accepted, decoded. */
export interface PublishedEvent {
  readonly source: string;
  readonly detailType: string;
  readonly detail: BridgeEventDetail & { _truncated?: unknown };
}

/** Sandbox time drives the bridge clock; sleeps only yield (no time passes unless a test advances it). */
function sandboxClock(sandbox: Sandbox): Clock {
  return {
    now: () => sandbox.control.now(),
    sleep: () => new Promise((resolve) => setImmediate(resolve)),
  };
}

/** An SDK client's `send`, as the harness wraps it. */
type Send = (command: unknown) => Promise<unknown>;

/** `client`, its `send` being `wrap` of its own (read at each call: a mock's stub may change). */
function wrapSend<C extends object>(client: C, wrap: (send: Send) => Send): C {
  const send = wrap((command) => (Reflect.get(client, "send") as Send).call(client, command));
  return new Proxy(client, { get: (target, property, receiver) => (property === "send" ? send : (Reflect.get(target, property, receiver) as unknown)) });
}

/**
 * A Lambda context with `remainingMs` left. Given a `clock`, its remaining time counts down as that clock moves, as
 * Lambda's does with real time (and, like Lambda's, goes below zero past the timeout); without one it stays put.
 */
export function lambdaContext(remainingMs = 60_000, clock?: Pick<Clock, "now">): Context {
  let remaining = () => remainingMs;
  if (clock !== undefined) {
    const endsAt = clock.now() + remainingMs;
    remaining = () => endsAt - clock.now();
  }
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName: "bridge-test",
    functionVersion: "$LATEST",
    invokedFunctionArn: "arn:aws:lambda:eu-west-1:123456789012:function:bridge-test",
    memoryLimitInMB: "512",
    awsRequestId: randomUUID(),
    logGroupName: "/aws/lambda/bridge-test",
    logStreamName: "stream",
    getRemainingTimeInMillis: remaining,
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

/** A scheduled event as EventBridge delivers it. */
export function scheduledEvent(detail: Record<string, unknown> = {}): PollEvent & Record<string, unknown> {
  return {
    version: "0",
    id: randomUUID(),
    "detail-type": "Scheduled Event",
    source: "aws.events",
    account: "123456789012",
    time: new Date().toISOString(),
    region: "eu-west-1",
    resources: ["arn:aws:events:eu-west-1:123456789012:rule/poll"],
    detail,
  };
}

export interface Harness {
  readonly sandbox: Sandbox;
  readonly companyId: string;
  readonly table: TestTable;
  readonly secrets: FakeSecretsManager;
  readonly env: Record<string, string>;
  /** Every event EventBridge accepted, in order. */
  readonly published: PublishedEvent[];
  /** Every refresh token presented at the token endpoint, in order. */
  readonly refreshTokensPresented: string[];
  /** The sandbox's fetch, recording into `refreshTokensPresented` (what the handlers use). */
  readonly fetch: (input: string | URL | Request, init?: RequestInit) => Promise<Response>;
  /** Everything the Powertools loggers and metrics wrote. */
  readonly output: string[];
  readonly eventBridge: AwsStub<ServiceInputTypes, ServiceOutputTypes, EventBridgeClientResolvedConfig>;
  readonly clock: Clock;
  /**
   * The harness clock, but a wait moves sandbox time on to its end, as a real clock would beside calls that take
   * milliseconds: a backoff or `Retry-After` wait takes its time. It ends once no call of the harness's fetch or
   * clients is in flight, so a wait beside a call (a lease's keep-alive beside a token save) ends after that call, and
   * waits that overlap do not add up: a test's path does not turn on how fast the services answer (see Process.clock).
   */
  readonly waitingClock: Clock;
  /**
   * An invocation's context with `remainingMs` left now (by default 60 s, the stack's poller timeout) whose remaining
   * time counts down with the harness clock, and the sandbox time of its timeout, `endsAt`.
   */
  invocation(remainingMs?: number): { readonly context: Context; readonly endsAt: number };
  /** A new Lambda container running the transaction or card poller. */
  poller(kind: "transactions" | "cards", options?: Partial<HandlerOptions>): (event?: PollEvent, context?: Context) => Promise<PollResult>;
  /**
   * The SDK clients each container gets (a DynamoDB Local client of its own, the recording EventBridge, the fake
   * Secrets Manager), its DynamoDB client first handed to `setup` (to add a test's middleware); the default `clients`.
   */
  clients(setup?: (dynamo: DynamoDBClient) => void): () => AwsClients;
  /**
   * SDK clients (as `clients()`) whose writes of the tokens fail while `on` is set: PutSecretValue (AccessDenied) and
   * the table's put of the access-token item (throttled), so a rotated refresh token reaches neither store and stays
   * in the container's memory.
   */
  tokenWriteOutage(): { readonly clients: () => AwsClients; on: boolean };
  /**
   * SDK clients (as `clients()`) whose Secrets Manager hangs while `on` is set: each PutSecretValue takes the harness
   * time of the SDK's attempts all timing out (SDK_TIMEOUTS) and fails with TimeoutError, and each GetSecretValue
   * answers after `getMs`. `storedAtEnd()` is the refresh token the token store returns at `endsAt` (the
   * invocation's timeout), read as that time came when a call of theirs passed it, else now (for an invocation that
   * returned before it): what a Lambda stopped there leaves for the next refresh.
   */
  hangingSecrets(endsAt: number, getMs?: number): { readonly clients: () => AwsClients; on: boolean; storedAtEnd(): Promise<string | undefined> };
  /** A new Lambda container running the rotation function (invoked with `context`, by default 60 s left). */
  rotator(options?: Partial<HandlerOptions>): (event: RotationEvent, context?: Context) => Promise<void>;
  /** Transactions still `not_synced` or `outdated` at the provider. */
  pendingAtProvider(): number;
  /** True when the bridge's stored refresh token still works (family not revoked); spends it and stores the next. */
  familyStillValid(): Promise<boolean>;
  /** A token store over the harness's table and secret (for assertions). */
  tokenStore(): SecretsManagerTokenStore;
  close(): Promise<void>;
}

/**
 * Builds the harness: authorizes the first seeded company through the sandbox's token endpoint and seeds the secret
 * with its refresh token, as onboarding does.
 */
export async function createHarness(options: { seed?: number; piiMode?: "full" | "redact" | "hash" } = {}): Promise<Harness> {
  // Dev mode sends Powertools output to the global console (captured below); it would also disable metrics.
  vi.stubEnv("POWERTOOLS_DEV", "true");
  vi.stubEnv("POWERTOOLS_METRICS_DISABLED", "false");
  vi.stubEnv("AWS_REGION", "eu-west-1");
  const output: string[] = [];
  const capture = (...args: unknown[]) => void output.push(args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" "));
  for (const method of ["log", "info", "warn", "error", "debug"] as const) vi.spyOn(console, method).mockImplementation(capture);

  const sandbox = createSandbox({ seed: options.seed ?? 1, startTime: "2026-03-01T12:00:00Z" });
  const [company] = sandbox.control.companies();
  if (company === undefined) throw new Error("sandbox has no company");
  const refreshTokensPresented: string[] = [];
  // Every container's calls, as one process that lives: `waitingClock`'s waits end once none is in flight.
  const calls = new Process();
  const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    if (url.endsWith("/oauth2/token") && typeof init?.body === "string") {
      const body = JSON.parse(init.body) as { grant_type?: string; refresh_token?: string };
      if (body.grant_type === "refresh_token" && body.refresh_token !== undefined) refreshTokensPresented.push(body.refresh_token);
    }
    return calls.call(`${init?.method ?? "GET"} ${url}`, () => sandbox.fetch(input, init));
  };

  const code = sandbox.control.issueAuthorizationCode({ companyId: company.id, redirectUri: REDIRECT_URI });
  const tokenResponse = await sandbox.fetch(`${SANDBOX_IN_PROCESS_URL}/oauth2/token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ grant_type: "authorization_code", ...CLIENT, code, redirect_uri: REDIRECT_URI }),
  });
  const initial = (await tokenResponse.json()) as { refresh_token: string };

  const table = await createTestTable("fn");
  const secrets = new FakeSecretsManager(`arn:aws:secretsmanager:eu-west-1:123456789012:secret:${randomUUID()}`, {
    ...CLIENT,
    refresh_token: initial.refresh_token,
    pii_salt: PII_SALT,
  });

  const eventBridgeClient = new EventBridgeClient({ region: "eu-west-1", credentials: { accessKeyId: "x", secretAccessKey: "x" } });
  const eventBridge = mockClient(eventBridgeClient);
  const published: PublishedEvent[] = [];
  eventBridge.on(PutEventsCommand).callsFake((input: { Entries: PutEventsRequestEntry[] }) => {
    for (const entry of input.Entries) {
      published.push({ source: entry.Source ?? "", detailType: entry.DetailType ?? "", detail: JSON.parse(entry.Detail ?? "{}") as PublishedEvent["detail"] });
    }
    return { FailedEntryCount: 0, Entries: input.Entries.map(() => ({ EventId: randomUUID() })) };
  });

  const env: Record<string, string> = {
    TENANT_ID: TENANT,
    QASHIO_BASE_URL: SANDBOX_IN_PROCESS_URL,
    TABLE_NAME: table.tableName,
    SECRET_ID: secrets.secretId,
    EVENT_BUS_NAME: "bridge-bus",
    EVENT_SOURCE: "qashio.bridge",
    PII_MODE: options.piiMode ?? "redact",
    EMIT_CARD_CREATED: "false",
    POWERTOOLS_SERVICE_NAME: "qashio-bridge",
    POWERTOOLS_METRICS_NAMESPACE: "QashioBridge",
  };
  const clock = sandboxClock(sandbox);
  const dynamoClients: DynamoDBClient[] = [];
  const tracked = (send: Send): Send => (command) => calls.call((command as object).constructor.name, async () => send(command));
  const clients = (setup?: (dynamo: DynamoDBClient) => void) => (): AwsClients => {
    const dynamo = localDynamoClient();
    dynamoClients.push(dynamo);
    // Outermost: a test's middleware (a failing or slow write) runs inside the call, as the service's answer.
    dynamo.middlewareStack.add((next, context) => (args) => calls.call(context.commandName ?? "dynamo", () => next(args)), {
      step: "initialize",
      priority: "high",
      name: "harnessCallInFlight",
    });
    setup?.(dynamo);
    return { dynamo, eventBridge: wrapSend(eventBridgeClient, tracked), secrets: wrapSend(secrets.client, tracked) };
  };
  const handlerOptions = (overrides: Partial<HandlerOptions> = {}): HandlerOptions => ({
    env,
    clients: clients(),
    fetch,
    clock,
    // Each container's first invocation starts at once (the test process's own uptime says nothing of it).
    processUptimeMs: () => 0,
    logger: new Logger({ serviceName: "qashio-bridge", logLevel: "DEBUG" }),
    tracer: new Tracer({ enabled: false }),
    ...overrides,
  });

  const harness: Harness = {
    sandbox,
    companyId: company.id,
    table,
    secrets,
    env,
    published,
    refreshTokensPresented,
    fetch,
    output,
    eventBridge,
    clock,
    waitingClock: calls.clock(sandbox.control),
    invocation(remainingMs = 60_000) {
      return { context: lambdaContext(remainingMs, clock), endsAt: clock.now() + remainingMs };
    },
    clients,
    poller(kind, overrides) {
      const handler = createPollHandler(kind, handlerOptions(overrides));
      return (event, context) => handler(event ?? scheduledEvent(), context ?? lambdaContext());
    },
    tokenWriteOutage() {
      const outage = { clients: (): AwsClients => built(), on: false };
      const base = clients((dynamo) =>
        dynamo.middlewareStack.add(
          (next, context) => async (args) => {
            const item = (args.input as { Item?: { sk?: unknown } }).Item;
            if (outage.on && String(context.commandName) === "PutItemCommand" && JSON.stringify(item?.sk).includes("ACCESS")) {
              throw awsError("ProvisionedThroughputExceededException");
            }
            return next(args);
          },
          { step: "initialize", name: "failAccessItemPut" },
        ),
      );
      const built = (): AwsClients => {
        const aws = base();
        const failing = (send: Send): Send => (command) => (outage.on && command instanceof PutSecretValueCommand ? Promise.reject(awsError("AccessDeniedException")) : send(command));
        return { ...aws, secrets: wrapSend(aws.secrets, failing) };
      };
      return outage;
    },
    hangingSecrets(endsAt, getMs = 0) {
      const stored = async () => (await harness.tokenStore().load())?.refreshToken;
      let atEnd: { token: string | undefined } | undefined;
      const hang = { clients: () => built(), on: false, storedAtEnd: async () => (atEnd === undefined ? stored() : atEnd.token) };
      // Moves the harness time on by `ms`, reading the stored refresh token on the way as it reaches `endsAt`.
      const pass = async (ms: number): Promise<void> => {
        const now = clock.now();
        if (atEnd === undefined && now + ms >= endsAt) {
          sandbox.control.advanceClock(Math.max(0, endsAt - now) / 1_000);
          atEnd = { token: await stored() };
          sandbox.control.advanceClock((now + ms - clock.now()) / 1_000);
          return;
        }
        sandbox.control.advanceClock(ms / 1_000);
      };
      const timeout = (): Error => Object.assign(new Error("Request timed out (fake)"), { name: "TimeoutError", $metadata: { attempts: SDK_TIMEOUTS.maxAttempts } });
      const built = (): AwsClients => {
        const aws = clients()();
        const hanging =
          (send: Send): Send =>
          async (command) => {
            if (hang.on && command instanceof PutSecretValueCommand) {
              await pass(SDK_TIMEOUTS.maxAttempts * SDK_TIMEOUTS.requestTimeoutMs);
              throw timeout();
            }
            if (hang.on && command instanceof GetSecretValueCommand) await pass(getMs);
            return send(command);
          };
        return { ...aws, secrets: wrapSend(aws.secrets, hanging) };
      };
      return hang;
    },
    rotator(overrides) {
      const handler = createRotationHandler(handlerOptions(overrides));
      return (event, context) => handler(event, context ?? lambdaContext());
    },
    pendingAtProvider() {
      const store = sandbox.control.company(company.id)?.transactions;
      return (store?.countByStatus("not_synced") ?? 0) + (store?.countByStatus("outdated") ?? 0);
    },
    tokenStore() {
      return new SecretsManagerTokenStore({ secrets: secrets.client, secretId: secrets.secretId, doc: table.doc, tableName: table.tableName, tenant: TENANT });
    },
    async familyStillValid() {
      const store = harness.tokenStore();
      const stored = await store.load();
      if (stored === undefined) return false;
      const response = await fetch(`${SANDBOX_IN_PROCESS_URL}/oauth2/token`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ grant_type: "refresh_token", ...CLIENT, refresh_token: stored.refreshToken }),
      });
      if (response.status !== 200) return false;
      const next = (await response.json()) as { access_token: string; refresh_token: string };
      await store.save({ refreshToken: next.refresh_token, accessToken: next.access_token });
      return true;
    },
    async close() {
      for (const client of dynamoClients) client.destroy();
      eventBridge.restore();
      await table.drop();
      vi.unstubAllEnvs();
    },
  };
  return harness;
}

/** The values of metric `name` in the EMF documents of `output` (from `from` on), in order. */
export function emfValues(output: readonly string[], name: string, from = 0): number[] {
  return output
    .slice(from)
    .filter((line) => line.includes('"_aws"'))
    .flatMap((line) => {
      const value = (JSON.parse(line) as Record<string, unknown>)[name];
      return value === undefined ? [] : [value as number | number[]].flat();
    });
}

/**
 * Someone replays the spent first refresh token `h`'s pollers presented: the provider revokes the whole family; its
 * access tokens expire. The bridge has not met the revocation yet.
 */
export async function revokeFamily(h: Harness): Promise<void> {
  await h.sandbox.fetch(`${SANDBOX_IN_PROCESS_URL}/oauth2/token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ grant_type: "refresh_token", client_id: "sandbox-client", client_secret: "sandbox-secret", refresh_token: h.refreshTokensPresented[0] }),
  });
  h.sandbox.control.advanceClock(ACCESS_TOKEN_TTL_SECONDS + 1);
}

/**
 * `h.fetch`, but its token endpoint answers a 401 without a body to a request carrying `clientSecret`: spec §4.2's
 * answer to wrong client credentials may name no OAuth code, which the bridge can only read as a revoked family.
 */
export function bare401For(h: Harness, clientSecret: string): Harness["fetch"] {
  return async (input, init) =>
    String(input).endsWith("/oauth2/token") && String(init?.body).includes(clientSecret) ? new Response(null, { status: 401 }) : h.fetch(input, init);
}

/** Ids of the provider transactions an event set covers. */
export function subjectIds(events: readonly PublishedEvent[], type?: string): Set<string> {
  return new Set(events.filter((e) => type === undefined || e.detailType === type).map((e) => e.detail.subject.id));
}

/**
 * The level of each line of `output` whose message starts with `message`, in order: docs/runbook.md names lines by
 * their text, and one at DEBUG (which the harness logs at) would be missing from a function at its default INFO.
 */
export function levelsLogged(output: readonly string[], message: string): string[] {
  return output.flatMap((line) => {
    const doc = JSON.parse(line) as { message?: unknown; level?: unknown };
    return typeof doc.message === "string" && doc.message.startsWith(message) ? [String(doc.level)] : [];
  });
}
