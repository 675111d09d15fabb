/**
 * Bridge engine: turns the provider's pull-and-acknowledge API into domain events.
 *
 * Entry points: {@link pollTransactions} and {@link pollCards}; both take ports (see ./ports.ts) and a
 * structural provider (see ./provider.ts) that `QashioClient` satisfies, and return a {@link CycleReport}.
 * Operator actions: {@link redriveQuarantined} (publish failures, and validation failures of acknowledged
 * transactions, once the cause is fixed), and {@link conformSnapshots} after a PII mode switch.
 *
 * @example
 * ```ts
 * import { pollTransactions, pollCards } from "./shared/bridge/index.js";
 * const deps = { tenant, provider: client, snapshots, publisher, quarantine, clock, metrics, logger, pii: { mode: "redact" } };
 * await pollTransactions(deps, { deadline: clock.now() + 50_000 });
 * await pollCards({ ...deps, emitCardCreated: false }, { mode: "full" });
 * ```
 */
export type * from "./ports.js";
export type * from "./provider.js";
export { pageEntries } from "./provider.js";
export { pollTransactions, transactionKey, transactionAliasKey, normaliseTransaction } from "./transactions.js";
export type { TransactionCycleOptions } from "./transactions.js";
export { pollCards, cardKey, cardEventType } from "./cards.js";
export { redriveQuarantined, isRedrivable, keptCount, redrivenCount, PUBLISH_FAILURE_PREFIX, VALIDATION_FAILURE_PREFIX } from "./redrive.js";
export type { RedriveReport, RedriveOptions, KeptRecord, RedriveRecord } from "./redrive.js";
export { conformSnapshots, DEFAULT_CONFORM_PAGE_SIZE, supersedeConformPassOnModeChange } from "./conform.js";
export type { ConformReport, ConformOptions, ConformOutcome } from "./conform.js";
export type { CardCycleMode, CardCycleOptions } from "./cards.js";
export { DEFAULT_SOURCE, DEFAULT_PAGE_SIZE, MIN_PAGE_SIZE, DEFAULT_MAX_PAGES, cycleDeps } from "./deps.js";
export type { BridgeDeps, TransactionCycleDeps, CardCycleDeps, CycleDepsParts, CycleOptions } from "./deps.js";
export { countProviderRetries, reportQuarantineSize } from "./root-metrics.js";
export { emptyReport, totalPublished } from "./report.js";
export type { CycleReport, CycleOutcome } from "./report.js";
export { BridgeError, BridgeConfigurationError, ConformCursorError, CycleAbortedError, PUBLISH_STEP, ReadDeadlineExceededError, ReauthorizationNeededError, SnapshotCursorError, StoreDeadlineExceededError, WriteDeadlineExceededError, causeMatching } from "./errors.js";
export type { ConformCursorProblem, CycleAbortContext } from "./errors.js";
export { diffObjects, jsonEqual, escapePointerToken } from "./diff.js";
export type { Change } from "./diff.js";
export { applyPii, applyPiiInPlace, assertPiiPolicy, REDACTED, HASH_PREFIX } from "./pii.js";
export { PERSONAL_FIELDS, piiSaltFingerprint, piiSaltVerdict } from "./pii.js";
export type { PiiMode, PiiPolicy } from "./pii.js";
export { canonicalJson, contentHash, eventId, jsonOf, sha256Hex, uuidFromHex } from "./hash.js";
export type { EventIdentity } from "./hash.js";
export { requireObjectWithId, schemaValidator } from "./validate.js";
export type { ItemValidator, ValidationResult, Validators, SafeParseSchema } from "./validate.js";
export { causedByClientRefusal, isReauthorizationRequired, isTokenFailure, statusClass } from "./provider-errors.js";
export { untilLaterSecond } from "./versions.js";
export * from "./events/index.js";
