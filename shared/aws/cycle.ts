/**
 * One scheduled cycle of one kind under the tenant's cycle lease: two cycles of the same kind for one tenant never
 * overlap (an invocation that finds the lease held skips), while a transaction cycle and a card cycle may run side by
 * side (they touch different snapshot keys and share only the token, whose refresh has its own lease). The PII
 * conform pass rewrites snapshots of both kinds, so it holds both leases.
 */
import {
  ReauthorizationNeededError,
  causeMatching,
  conformSnapshots,
  emptyReport,
  pollCards,
  pollTransactions,
  redriveQuarantined,
  reportQuarantineSize,
  type ConformReport,
  type RedriveReport,
} from "../bridge/index.js";
import type { CardCycleMode } from "../bridge/cards.js";
import type { CycleReport } from "../bridge/report.js";
import { isInvalidClient } from "../qashio/auth/token-provider.js";
import { ProviderClientRejectedError, revokedFamilyMessage } from "./errors.js";
import { errorLabel } from "../error-label.js";
import { leaseNames } from "./keys.js";
import { holdsSnapshots } from "./pii-salt.js";
import type { PollAction } from "./poll-event.js";
import type { TenantRuntime } from "./runtime.js";
import { recordRevokedFamily } from "./token-store.js";

export type CycleKind = "transactions" | "cards";

/** The cycle lease outlives the deadline by this much, so it never lapses while the invocation still works. */
export const CYCLE_LEASE_SLACK_MS = 60_000;

/** What work under the tenant's cycle leases did: its report, or a skip because another invocation held a lease. */
export type Leased<T> =
  | { readonly status: "completed"; readonly report: T }
  | { readonly status: "skipped"; readonly reason: "lease_held" };

/** What a cycle invocation did. */
export type CycleResult = Leased<CycleReport>;

export interface RunCycleOptions {
  /** Epoch ms after which the engine starts no new page. */
  readonly deadline: number;
  /** Card cycle mode. @default "full" */
  readonly cardMode?: CardCycleMode;
  /**
   * Aborted when the invocation gives up on the cycle (middy's early timeout): the cycle then starts no new page and
   * ends after the one in hand, giving its lease back, instead of going on when a frozen container next thaws.
   */
  readonly signal?: AbortSignal;
}

/**
 * Stops before any provider call while the token family is marked revoked for the current secret version: presenting
 * the rejected refresh token again on every tick cannot succeed (only a new version can: re-onboarding, or the client
 * credentials put right when the refusal may have been of them).
 */
async function failFastWhenRevoked(runtime: TenantRuntime, kind: CycleKind): Promise<void> {
  const revoked = await runtime.tokens.revokedFamily();
  if (revoked === undefined) return;
  runtime.transactions.metrics.add("TokenFamilyRevoked", 1, "Count");
  const { tenant, secretId } = runtime.config;
  throw new ReauthorizationNeededError(
    `${revokedFamilyMessage(revoked, `for tenant "${tenant}"`, secretId)}; no provider call is made until the secret has a new version`,
    { report: emptyReport(kind) },
  );
}

/**
 * Marks the family revoked (`error`: the engine's ReauthorizationNeededError) for the version holding the refresh token
 * it was refused for, noting whether the client credentials may be at fault; a failed write is logged (the next tick
 * then finds out again at the provider).
 */
async function rememberRevoked(runtime: TenantRuntime, kind: CycleKind, error: unknown): Promise<void> {
  await recordRevokedFamily(runtime.tokens, error, runtime.transactions.logger, { kind });
}

/**
 * Closes the work's refresh window (see {@link underCycleLease}), waits for a token refresh the work left in flight (a
 * page read ahead, or card details read, when the batch in hand failed) and tries once more to save tokens a failed
 * save left held. Lambda freezes the container as soon as the invocation returns, perhaps for good: a refresh frozen
 * between spending the refresh token and storing its successor loses the successor, and once the refresh lease runs
 * out the other poller presents the spent token, which revokes the family. With the window closed first, a call the
 * work left behind (a read-ahead still waiting for its answer, or for a retry) starts no refresh after this: it fails
 * without sending anything. Never throws: tokens still held after the try stay held for the container's next invocation.
 */
async function settleTokens(runtime: TenantRuntime, kind: CycleKind, closeRefreshWindow: () => void): Promise<void> {
  closeRefreshWindow();
  if (await runtime.tokenProvider.saveHeldTokens()) return;
  runtime.transactions.logger.error("The rotated refresh token could not be stored; it is held in memory until the next invocation of this container", { kind });
}

/** Emits the `QuarantineSize` gauge after a cycle (see `reportQuarantineSize`); a failed count is logged by name. */
async function emitQuarantineSize(runtime: TenantRuntime, kind: CycleKind): Promise<void> {
  // Worded as the Lambda log's other warnings: the error by name, with the cycle's kind (local mode words its own).
  await reportQuarantineSize(runtime.transactions, (error) =>
    runtime.transactions.logger.warn("Could not count the quarantine", { kind, error: errorLabel(error) }),
  );
}

/**
 * Refuses, under `hash`, a secret whose `pii_salt` is not the salt of the table's pseudonyms (PiiSaltChangedError),
 * before any provider call or write. Only the transaction poller may scan the table to see whether it holds snapshots
 * (a Scan cannot be scoped to card keys); the card poller takes a recorded salt as guarding them, and the transaction
 * poller's next tick records the new salt of a table that holds none.
 */
async function checkPiiSalt(runtime: TenantRuntime, kind: CycleKind): Promise<void> {
  await runtime.piiSalt.check(async () => kind === "cards" || holdsSnapshots(runtime.transactions.snapshots));
}

/**
 * Runs `work` (the invocation's `action`) holding the tenant's cycle leases of `kinds`, taken in this order, until
 * `deadline` (plus slack), then releases them in reverse. Skips when another invocation holds any of them (the ones
 * already taken are released), logging the lease's kind and the action skipped.
 */
async function underLeases<T>(
  runtime: TenantRuntime,
  action: PollAction,
  kinds: readonly CycleKind[],
  deadline: number,
  work: () => Promise<T>,
): Promise<Leased<T>> {
  const [kind, ...rest] = kinds;
  if (kind === undefined) return { status: "completed", report: await work() };
  const { tenant } = runtime.config;
  const name = kind === "transactions" ? leaseNames.transactionsCycle(tenant) : leaseNames.cardsCycle(tenant);
  const ttlMs = Math.max(0, deadline - runtime.clock.now()) + CYCLE_LEASE_SLACK_MS;
  const lease = await runtime.lock.tryAcquire(name, ttlMs);
  if (lease === undefined) {
    runtime.transactions.logger.info("Another invocation is running this cycle; skipping", { kind, action });
    return { status: "skipped", reason: "lease_held" };
  }
  try {
    return await underLeases(runtime, action, rest, deadline, work);
  } finally {
    // A failed release must not hide the cycle's own outcome; the lease then simply expires.
    await lease.release().catch((error: unknown) =>
      runtime.transactions.logger.warn("Could not release the cycle lease; it will expire", { kind, error: errorLabel(error) }),
    );
  }
}

/**
 * Runs `work`, which calls the provider, under the tenant's cycle lease of `kind`, then emits the quarantine gauge and
 * releases the lease, once a token refresh the work left in flight has stored its tokens (see settleTokens); token
 * refreshes start only while the work runs, so none a call it left behind asks for comes after that. A revoked
 * family stops it before any provider call, and a revocation it meets is recorded; client credentials the provider
 * refuses fail it with ProviderClientRejectedError, and a changed `hash` salt stops it first (PiiSaltChangedError).
 * Transaction work first supersedes a conform-pii pass stored under another PII mode (once per container); a failed
 * read of its id fails the invocation before anything is written, as a failed read of the revoked marker does.
 */
async function underCycleLease<T>(
  runtime: TenantRuntime,
  action: PollAction,
  kind: CycleKind,
  deadline: number,
  work: () => Promise<T>,
): Promise<Leased<T>> {
  await failFastWhenRevoked(runtime, kind);
  return underLeases(runtime, action, [kind], deadline, async () => {
    await checkPiiSalt(runtime, kind);
    // Token refreshes start only from here to the settle (the runtime's token provider refreshes only in windows).
    const closeRefreshWindow = runtime.tokenProvider.openRefreshWindow();
    try {
      // Under the lease, which a conform-pii pass holds too: its pass id is never replaced between its read and write.
      if (kind === "transactions") await runtime.supersedeConformPassOnce();
      return await work().catch(async (error: unknown) => {
        if (error instanceof ReauthorizationNeededError) await rememberRevoked(runtime, kind, error);
        // The engine words it as any provider failure ("the next cycle resumes"), but only fixing the secret helps.
        if (causeMatching(error, isInvalidClient) !== undefined) throw new ProviderClientRejectedError(runtime.config.secretId, { cause: error });
        throw error;
      });
    } finally {
      await settleTokens(runtime, kind, closeRefreshWindow);
      await emitQuarantineSize(runtime, kind);
    }
  });
}

/**
 * Runs one cycle of `kind` for the runtime's tenant under its cycle lease.
 *
 * @returns `skipped` when another invocation holds the lease; the engine's report otherwise.
 * @throws whatever the engine throws (CycleAbortedError, ReauthorizationNeededError): the lease is released first.
 * @example
 * const result = await runCycle(runtime, "transactions", { deadline: Date.now() + 50_000 });
 */
export async function runCycle(runtime: TenantRuntime, kind: CycleKind, options: RunCycleOptions): Promise<CycleResult> {
  return underCycleLease(runtime, "cycle", kind, options.deadline, () =>
    kind === "transactions"
      ? pollTransactions(runtime.transactions, { deadline: options.deadline, signal: options.signal })
      : pollCards(runtime.cards, { deadline: options.deadline, signal: options.signal, mode: options.cardMode ?? "full" }),
  );
}

/**
 * Re-drives the tenant's quarantined transactions (`redriveQuarantined`: publish failures, and validation failures of
 * acknowledged transactions) under the transaction cycle's lease,
 * so it never overlaps a transaction cycle, within the invocation's deadline: records not reached are kept for the
 * next invocation, and each batch's records are deleted as soon as it is delivered.
 *
 * @returns `skipped` when a transaction cycle holds the lease (invoke again once it is done).
 * @example
 * const result = await runRedrive(runtime, { deadline: Date.now() + 50_000 });
 */
export async function runRedrive(runtime: TenantRuntime, options: Pick<RunCycleOptions, "deadline" | "signal">): Promise<Leased<RedriveReport>> {
  const { deadline, signal } = options;
  return underCycleLease(runtime, "redrive", "transactions", deadline, () => redriveQuarantined(runtime.transactions, { deadline, signal }));
}

/**
 * Re-masks the tenant's snapshots to its current PII mode (`conformSnapshots`) under both cycle leases, transactions
 * then cards, since it rewrites snapshots of both kinds: a cycle that wrote a snapshot between the pass's read and
 * its write would otherwise lose it to the older object. Needs no provider call, so a revoked token family does not
 * stop it. Within the invocation's deadline; a pass stopped there reports a cursor to go on from.
 *
 * @returns `skipped` when either cycle holds its lease (invoke again once it is done).
 * @throws ConformCursorError when `cursor` is not one to go on from (another PII mode or tenant, damaged, of an
 *   earlier version, or not the last this table's passes reported); SnapshotCursorError when the table does not take
 *   the place it names.
 * @example
 * const result = await runConformPii(runtime, { deadline: Date.now() + 50_000 });
 */
export async function runConformPii(
  runtime: TenantRuntime,
  options: Pick<RunCycleOptions, "deadline" | "signal"> & { readonly cursor?: string },
): Promise<Leased<ConformReport>> {
  const { deadline, cursor, signal } = options;
  return underLeases(runtime, "conform-pii", ["transactions", "cards"], deadline, async () => {
    // Under `hash` the pass hashes cleartext with the secret's salt, beside pseudonyms of the recorded one.
    await checkPiiSalt(runtime, "transactions");
    return conformSnapshots(runtime.transactions, { deadline, signal, ...(cursor === undefined ? {} : { cursor }) });
  });
}
