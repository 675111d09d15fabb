/**
 * AWS runtime of the bridge: adapters of the engine's ports on DynamoDB, EventBridge and Secrets Manager, the Lambda
 * environment, and the handler factories `functions/*.ts` export.
 *
 * @example
 * ```ts
 * import { createPollHandler } from "./shared/aws/index.js";
 * export const handler = createPollHandler("transactions");
 * ```
 */
export { DynamoSnapshotStore, DEFAULT_COMPRESS_ABOVE_BYTES } from "./snapshot-store.js";
export { BATCH_GET_LIMIT, BATCH_WRITE_LIMIT } from "./batch.js";
export type { DynamoSnapshotStoreOptions } from "./snapshot-store.js";
export { DynamoQuarantine, DEFAULT_QUARANTINE_RETENTION_DAYS } from "./quarantine.js";
export type { DynamoQuarantineOptions } from "./quarantine.js";
export { DynamoLeaseLock } from "./lease-lock.js";
export type { DynamoLeaseLockOptions } from "./lease-lock.js";
export { EventBridgePublisher, MAX_ENTRIES_PER_CALL } from "./event-publisher.js";
export type { EventBridgePublisherOptions } from "./event-publisher.js";
export { entrySize, reduceDetail, truncationsOf, MAX_ENTRY_BYTES, TRUNCATION_MARKER } from "./event-size.js";
export type { SizedEntry, Truncation } from "./event-size.js";
export { PII_SALT_MIN_LENGTH } from "../bridge/pii.js";
export { ProviderSecretClient, ProviderSecretSchema, isSecretNotFound, parseSecret } from "./provider-secret.js";
export type { ProviderSecret, ProviderSecretClientOptions, SecretRead, SecretValue, VersionWrite } from "./provider-secret.js";
export { SecretsManagerTokenStore, DEFAULT_SECRET_CACHE_TTL_MS } from "./token-store.js";
export type { SecretsManagerTokenStoreOptions } from "./token-store.js";
export { loadConfig, cycleDeadline, checkPollerTimeout, CYCLE_SAFETY_MARGIN_MS, MAX_CYCLE_BUDGET_MS, MIN_CYCLE_BUDGET_MS, MIN_POLLER_TIMEOUT_MS, MIN_ROTATION_TIMEOUT_MS, REFRESH_TIMEOUT_MARGIN_MS, DEFAULT_EVENT_SOURCE, DEFAULT_METRICS_NAMESPACE, DEFAULT_SERVICE_NAME } from "./config.js";
export type { RuntimeConfig } from "./config.js";
export { leaseNames } from "./keys.js";
export { runCycle, CYCLE_LEASE_SLACK_MS } from "./cycle.js";
export type { CycleKind, CycleResult, RunCycleOptions } from "./cycle.js";
export { awaitingOnboarding, rotateProviderSecret, ROTATION_STAGES, skipRotation, skipsRotation } from "./rotation.js";
export type { RotationDeps, RotationEvent, RotationStep } from "./rotation.js";
export { createTenantRuntime, defaultAwsClients, RuntimeCache, TOKEN_LEASE_TTL_MS } from "./runtime.js";
export type { AwsClients, TenantRuntime, TenantRuntimeOptions } from "./runtime.js";
export { createPollHandler, createRotationHandler } from "./handlers.js";
export type { HandlerOptions, PollResult } from "./handlers.js";
export type { PollEvent } from "./poll-event.js";
export { PowertoolsLoggerAdapter, PowertoolsMetricsAdapter } from "./observability.js";
export { backoffDelay, isRetryableAwsError, withRetries, DEFAULT_BACKOFF } from "./retry.js";
export type { BackoffOptions } from "./retry.js";
export * from "./errors.js";
