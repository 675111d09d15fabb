/**
 * Composition of the AWS runtime for one tenant: SDK clients, adapters, the provider client with its OAuth token
 * provider (refreshes serialised by the tenant's DynamoDB lease), and the engine's dependencies. Built once per
 * container and reused by warm invocations; rebuilt when the provider credentials in the secret change. The secret
 * rotation's dependencies are composed from such a runtime too ({@link rotationDeps}).
 */
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { EventBridgeClient } from "@aws-sdk/client-eventbridge";
import { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { supersedeConformPassOnModeChange } from "../bridge/conform.js";
import { cycleDeps, type CardCycleDeps, type TransactionCycleDeps } from "../bridge/deps.js";
import { countProviderRetries } from "../bridge/root-metrics.js";
import type { Clock, Logger, Metrics } from "../bridge/ports.js";
import { refresh, validate } from "../qashio/auth/oauth.js";
import { OAuthTokenProvider, isRejectedGrant, storedTokensOf, type TokenEvent } from "../qashio/auth/token-provider.js";
import { QashioClient } from "../qashio/client.js";
import type { FetchLike } from "../qashio/http.js";
import { onceSucceeded } from "../once.js";
import { systemClock } from "./clock.js";
import { SDK_TIMEOUTS, TOKEN_LEASE_TTL_MS, type RuntimeConfig, type SdkTimeouts } from "./config.js";
import { EventBridgePublisher } from "./event-publisher.js";
import { leaseNames } from "./keys.js";
import { DynamoLeaseLock } from "./lease-lock.js";
import { PiiSaltGuard } from "./pii-salt.js";
import { DynamoQuarantine } from "./quarantine.js";
import { DynamoSnapshotStore } from "./snapshot-store.js";
import { secretFingerprint, type ProviderSecret } from "./provider-secret.js";
import type { RotationDeps } from "./rotation.js";
import { SecretsManagerTokenStore } from "./token-store.js";

/** The SDK clients the runtime uses; tests pass clients bound to DynamoDB Local or mocks. */
export interface AwsClients {
  readonly dynamo: DynamoDBClient;
  readonly eventBridge: EventBridgeClient;
  readonly secrets: SecretsManagerClient;
}

// Defined beside the Lambda timing constants, which the token store's save bounds with them (SDK_CALL_MAX_MS).
export { SDK_TIMEOUTS, type SdkTimeouts };

/**
 * Default SDK clients: region and credentials from the Lambda environment; each attempt bounded by `timeouts`; the SDK's
 * standard retry handles throttling and timeouts per request, the adapters add their own loops for throttling and
 * partial batch failures.
 */
export function defaultAwsClients(timeouts: SdkTimeouts = SDK_TIMEOUTS): AwsClients {
  const config = sdkClientConfig(timeouts);
  return { dynamo: new DynamoDBClient(config), eventBridge: new EventBridgeClient(config), secrets: new SecretsManagerClient(config) };
}

/**
 * The attempt bounds of {@link defaultAwsClients} as SDK client settings, for every client the bridge builds (the CLI's
 * onboarding clients too).
 *
 * @example
 * const secrets = new SecretsManagerClient({ ...sdkClientConfig(), region: "eu-west-1" });
 */
export function sdkClientConfig(timeouts: SdkTimeouts = SDK_TIMEOUTS) {
  return {
    maxAttempts: timeouts.maxAttempts,
    requestHandler: {
      connectionTimeout: timeouts.connectionTimeoutMs,
      requestTimeout: timeouts.requestTimeoutMs,
      // Since @smithy/node-http-handler 4.4 an exceeded requestTimeout only logs a warning unless this is set.
      throwOnRequestTimeout: true,
    },
  };
}

export interface TenantRuntimeOptions {
  readonly config: RuntimeConfig;
  readonly clients: AwsClients;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** @default systemClock */
  readonly clock?: Clock;
  /** Provider fetch; tests pass the sandbox's in-process fetch. @default nodeHttpFetch */
  readonly fetch?: FetchLike;
}

/** Everything a handler needs for one tenant. */
export interface TenantRuntime {
  readonly config: RuntimeConfig;
  readonly clients: AwsClients;
  readonly clock: Clock;
  readonly lock: DynamoLeaseLock;
  readonly tokens: SecretsManagerTokenStore;
  readonly tokenProvider: OAuthTokenProvider;
  readonly client: QashioClient;
  readonly transactions: TransactionCycleDeps;
  readonly cards: CardCycleDeps;
  /**
   * `supersedeConformPassOnModeChange` once per runtime, so once per container (the PII mode is the function's
   * configuration: a deploy that changes it starts new containers), until it succeeds. The transaction poller awaits it
   * before its first cycle or re-drive writes a snapshot; the card poller may not write the pass id's transaction key.
   */
  readonly supersedeConformPassOnce: () => Promise<void>;
  /** Refuses a secret whose `pii_salt` is not the one the table's pseudonyms were made with (under `hash`). */
  readonly piiSalt: PiiSaltGuard;
}

// Defined beside the config, which refuses a CYCLE_BUDGET_MS too short for it (MIN_CYCLE_BUDGET_MS).
export { TOKEN_LEASE_TTL_MS };

/**
 * Builds a tenant runtime from validated config and clients.
 *
 * @example
 * const runtime = await createTenantRuntime({ config: loadConfig(), clients: defaultAwsClients(), logger, metrics });
 * await runCycle(runtime, "transactions", { deadline }); // token refreshes start only inside a cycle (see cycle.ts)
 */
export async function createTenantRuntime(options: TenantRuntimeOptions): Promise<TenantRuntime> {
  const { config, clients, logger, metrics } = options;
  const clock = options.clock ?? systemClock;
  const doc = DynamoDBDocumentClient.from(clients.dynamo, { marshallOptions: { removeUndefinedValues: true } });
  const tokens = new SecretsManagerTokenStore({
    secrets: clients.secrets,
    secretId: config.secretId,
    doc,
    tableName: config.tableName,
    tenant: config.tenant,
    clock,
    logger,
    metrics,
  });
  return assemble(options, clock, doc, tokens, await tokens.credentials());
}

/** Fingerprint of the credentials a runtime was built with (to notice a changed secret without keeping values). */
export function credentialsFingerprint(secret: Pick<ProviderSecret, "client_id" | "client_secret" | "pii_salt">): string {
  return secretFingerprint(secret, ["client_id", "client_secret", "pii_salt"]);
}

function assemble(
  options: TenantRuntimeOptions,
  clock: Clock,
  doc: DynamoDBDocumentClient,
  tokens: SecretsManagerTokenStore,
  secret: ProviderSecret,
): TenantRuntime {
  const { config, clients, logger, metrics } = options;
  const lock = new DynamoLeaseLock({ doc, tableName: config.tableName, clock });
  const onEvent = (event: TokenEvent): void => {
    if (event === "refreshed") metrics.add("TokenRefreshes", 1, "Count");
    if (event === "rotated_elsewhere") logger.warn("Refresh token was rotated by another container; adopted it");
    // Answers the error that reported it held (cycle.ts settleTokens), which nothing else would: a drop for newer
    // tokens is logged by the token provider itself.
    if (event === "held_tokens_saved") logger.warn("The rotated refresh token held in memory is stored now; the token family lives on");
  };
  const tokenProvider = new OAuthTokenProvider({
    baseUrl: config.baseUrl,
    clientId: secret.client_id,
    clientSecret: secret.client_secret,
    store: tokens,
    lock,
    lockName: leaseNames.tokenRefresh(config.tenant),
    lockTtlMs: TOKEN_LEASE_TTL_MS,
    // The invocation ends at its timeout, CYCLE_SAFETY_MARGIN_MS after the cycle's deadline: a refresh cut off there
    // between spending the refresh token and saving its successor would cost the family.
    refreshWithinCallDeadline: true,
    // Only while an invocation's cycle runs, before it settles its tokens (cycle.ts): Lambda freezes the container
    // when the invocation returns, and a call the cycle left behind must not start a refresh the freeze could cut.
    refreshOnlyInWindows: true,
    clock,
    logger,
    onEvent,
    // Said by onEvent, in the words the runbook names: one line for one event.
    quietEvents: ["rotated_elsewhere"],
    ...(options.fetch !== undefined ? { fetch: options.fetch } : {}),
  });
  const client = new QashioClient({
    baseUrl: config.baseUrl,
    tokenProvider,
    clock,
    logger,
    onRetry: countProviderRetries(metrics),
    ...(options.fetch !== undefined ? { fetch: options.fetch } : {}),
  });
  const deps = cycleDeps({
    tenant: config.tenant,
    provider: client,
    snapshots: new DynamoSnapshotStore({ doc, tableName: config.tableName, tenant: config.tenant, clock, logger }),
    publisher: new EventBridgePublisher({ client: clients.eventBridge, eventBusName: config.eventBusName, clock, logger }),
    quarantine: new DynamoQuarantine({ doc, tableName: config.tableName, tenant: config.tenant, clock, logger }),
    clock,
    metrics,
    logger,
    pii: { mode: config.piiMode, salt: secret.pii_salt },
    source: config.eventSource,
    emitCardCreated: config.emitCardCreated,
    cardDetails: config.cardDetails,
  });
  // One read per container, not per cycle: the mode a container runs under never changes (a runtime rebuilt for new
  // credentials reads it once more).
  const supersedeConformPassOnce = onceSucceeded(() => supersedeConformPassOnModeChange(deps.transactions));
  const piiSalt = new PiiSaltGuard({ doc, tableName: config.tableName, tenant: config.tenant, secretId: config.secretId, pii: deps.transactions.pii, clock, logger });
  return { config, clients, clock, lock, tokens, tokenProvider, client, ...deps, supersedeConformPassOnce, piiSalt };
}

/**
 * The dependencies of a rotation step ({@link RotationDeps}) for a tenant's runtime: its secret, token store and lease,
 * the refresh lease the pollers' token provider uses, and the provider's OAuth calls (refresh and validate) with the
 * client credentials in the secret. Reads the credentials through the store's cache.
 *
 * @example
 * await rotateProviderSecret(event, await rotationDeps(runtime, { logger, metrics, invocationEndsAt: Date.now() + context.getRemainingTimeInMillis() }));
 */
export async function rotationDeps(
  runtime: TenantRuntime,
  options: Pick<TenantRuntimeOptions, "logger" | "metrics" | "fetch"> & Pick<RotationDeps, "invocationEndsAt">,
): Promise<RotationDeps> {
  const { config, clock } = runtime;
  const credentials = await runtime.tokens.credentials();
  const oauth = {
    baseUrl: config.baseUrl,
    clientId: credentials.client_id,
    clientSecret: credentials.client_secret,
    clock,
    ...(options.fetch !== undefined ? { fetch: options.fetch } : {}),
  };
  return {
    secrets: runtime.clients.secrets,
    store: runtime.tokens,
    lock: runtime.lock,
    lockName: leaseNames.tokenRefresh(config.tenant),
    lockTtlMs: TOKEN_LEASE_TTL_MS,
    clock,
    invocationEndsAt: options.invocationEndsAt,
    logger: options.logger,
    metrics: options.metrics,
    refresh: async (refreshToken, deadline) => storedTokensOf(await refresh(oauth, refreshToken, deadline), clock.now()),
    validate: async (accessToken) => (await validate(oauth, accessToken)).active,
    isRejectedGrant,
  };
}

/**
 * Keeps one runtime per container: reused while the credentials in the secret (read through the store's cache with
 * an explicit expiry) stay the same, rebuilt when they change. A rebuilt runtime takes over the tokens the old one's
 * token provider still holds in memory (a refresh whose save failed to the secret and to the table, still unsaved
 * when its invocation settled): the refresh token they replaced is spent, and the new runtime would otherwise load it
 * from the secret and present it, which revokes the family. It saves them before its first use of the store.
 */
export class RuntimeCache {
  #runtime?: { fingerprint: string; runtime: TenantRuntime };
  /**
   * The last {@link get}, settled or not: gets run one after another. An invocation that timed out while its get read
   * the secret leaves that get running into the next invocation's; deciding on the same cached runtime, both would
   * rebuild it, the held tokens would go to the first rebuilt one and the cache keep the second, which would present the
   * spent refresh token from the secret.
   */
  #getting: Promise<unknown> = Promise.resolve();

  /** The runtime for these options, building it on first use or after the credentials changed. */
  get(options: TenantRuntimeOptions): Promise<TenantRuntime> {
    const got = this.#getting.then(() => this.#get(options));
    this.#getting = got.catch(() => undefined);
    return got;
  }

  async #get(options: TenantRuntimeOptions): Promise<TenantRuntime> {
    const cached = this.#runtime;
    if (cached !== undefined) {
      const secret = await cached.runtime.tokens.credentials();
      if (credentialsFingerprint(secret) === cached.fingerprint) return cached.runtime;
      options.logger.info("Provider credentials changed in the secret; rebuilding the runtime");
    }
    const runtime = await createTenantRuntime(options);
    const fingerprint = credentialsFingerprint(await runtime.tokens.credentials());
    if (cached !== undefined) {
      const held = cached.runtime.tokenProvider.holdsUnsavedTokens;
      await cached.runtime.tokenProvider.handOverHeldTokens(runtime.tokenProvider);
      if (held) options.logger.warn("The rebuilt runtime takes over the rotated refresh token held in memory; it saves it before it uses the tokens");
    }
    this.#runtime = { fingerprint, runtime };
    return runtime;
  }
}
