/**
 * Secrets Manager rotation of the provider secret: the rotation refreshes the provider token family (a new single-use
 * refresh token) under the same lease the pollers use for their refreshes.
 *
 * Why not the textbook "write AWSPENDING in createSecret, promote in finishSecret": the moment the provider issues a
 * new refresh token the old one is spent, and presenting a spent refresh token revokes the whole family. Any reader of
 * AWSCURRENT between createSecret and finishSecret (separate invocations, seconds to minutes apart) would hold a spent
 * token. So createSecret, while holding the refresh lease, writes the new refresh token as the rotation's version
 * (its ClientRequestToken) with both labels AWSPENDING and AWSCURRENT in one PutSecretValue: written as pending and
 * promoted atomically, before the new access token is used or shared. The remaining steps are then safe:
 * - setSecret: nothing to do (the provider already holds the new token).
 * - testSecret: the shared access token answers `GET /oauth2/validate`; one expired or absent (a rotation Secrets
 *   Manager reattempts a day after it failed) is refreshed first, as createSecret refreshes, as a new AWSCURRENT version;
 *   one of unknown expiry is refreshed so only once the provider answers it 401.
 * - finishSecret: detach AWSPENDING; never move AWSCURRENT back (a poller may have rotated again since).
 * Every step is idempotent: Secrets Manager retries steps.
 *
 * The Lambda timeout must not cut a refresh between spending the refresh token and saving its successor (the next
 * refresh would present the spent token, which revokes the family): createSecret starts one only when its whole lease
 * ends {@link REFRESH_TIMEOUT_MARGIN_MS} before the invocation does, as the pollers' refreshes do, and fails otherwise,
 * nothing spent (a timeout lowered by hand).
 *
 * A secret not yet onboarded (as the stack creates it: no refresh token until `authorize --secret-id`) has nothing to
 * refresh, and its rotation runs daily from the deploy on; a secret the pollers refresh many times a day needs no
 * rotation (its family is not idle), and a refresh ahead of the pollers' would only bring the version quota nearer.
 * {@link skipsRotation} tells the handler so, and {@link skipRotation} completes the steps without a provider call or
 * an error (see there).
 */
import { DescribeSecretCommand, UpdateSecretVersionStageCommand, type SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import type { Clock, Lock, LockHandle, Logger, Metrics } from "../bridge/ports.js";
import { DEFAULT_LOCK_POLL_MS, DEFAULT_LOCK_TTL_MS, DEFAULT_LOCK_WAIT_MS, TOKEN_SAVE_MESSAGES, isInvalidClient, reauthorizationRequired, refreshDeadline, reloadAfterRefusal } from "../qashio/auth/token-provider.js";
import { acquireTimed, whileHolding } from "../lease-keep-alive.js";
import { errorLabel } from "../error-label.js";
import type { StoredTokens } from "../qashio/auth/token-store.js";
import { DEFAULT_TIMEOUT_MS } from "../qashio/http.js";
import { ForbiddenError, IncompleteTokenSetError, ReauthorizationRequiredError, UnauthorizedError, type QashioError } from "../qashio/errors.js";
import { MIN_ROTATION_TIMEOUT_MS, REFRESH_TIMEOUT_MARGIN_MS } from "./config.js";
import { ProviderClientRejectedError, revokedFamilyMessage, RotationError } from "./errors.js";
import { isSecretNotFound, ProviderSecretClient } from "./provider-secret.js";
import { recordRevokedFamily, SECRET_VERSION_WINDOW_MS, SECRET_VERSIONS_EARLY_REFRESH_LIMIT, type SecretsManagerTokenStore } from "./token-store.js";

/** Secrets Manager's rotation steps, in the order it invokes them. */
export const ROTATION_STEPS = ["createSecret", "setSecret", "testSecret", "finishSecret"] as const;
export type RotationStep = (typeof ROTATION_STEPS)[number];

/** The event Secrets Manager invokes a rotation function with. */
export interface RotationEvent {
  readonly SecretId: string;
  readonly ClientRequestToken: string;
  readonly Step: RotationStep | string;
}

export interface RotationDeps {
  readonly secrets: SecretsManagerClient;
  readonly store: SecretsManagerTokenStore;
  readonly lock: Lock;
  /** The refresh lease name the pollers' token provider uses. */
  readonly lockName: string;
  /** @default 30_000 */
  readonly lockTtlMs?: number;
  /** How long to wait for a poller's refresh to finish. @default 20_000 */
  readonly lockWaitMs?: number;
  readonly clock: Clock;
  /**
   * Epoch ms at which the invocation ends (its Lambda timeout): a refresh starts only when its lease ends
   * {@link REFRESH_TIMEOUT_MARGIN_MS} before then.
   */
  readonly invocationEndsAt: number;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /**
   * One refresh at the provider (spends `refreshToken`), over (retries included) by `deadline` (epoch ms).
   * Throws the client's UnauthorizedError on a rejected grant.
   */
  readonly refresh: (refreshToken: string, deadline: number) => Promise<StoredTokens>;
  /** True when the provider accepts the access token. */
  readonly validate: (accessToken: string) => Promise<boolean>;
  /** True for an error meaning the provider rejected the refresh grant (401 / invalid_grant). */
  readonly isRejectedGrant: (error: unknown) => error is QashioError;
}

/** Labels the rotation's version gets in createSecret: pending and current at once (see the module comment). */
export const ROTATION_STAGES = ["AWSCURRENT", "AWSPENDING"] as const;

/**
 * Runs one rotation step.
 *
 * @throws RotationError for an event that does not belong to the configured secret or a version not under rotation;
 *   ReauthorizationRequiredError when the provider revoked the family.
 * @example
 * await rotateProviderSecret({ SecretId, ClientRequestToken, Step: "createSecret" }, deps);
 */
export async function rotateProviderSecret(event: RotationEvent, deps: RotationDeps): Promise<void> {
  const { SecretId: secretId, ClientRequestToken: token, Step: step } = event;
  const stages = await rotationStages(event, deps);
  if (stages === undefined) return;
  const tokenStages = stages.get(token) ?? [];

  switch (step) {
    case "createSecret":
      return createSecret(secretId, token, tokenStages, deps);
    case "setSecret":
      deps.logger.info("setSecret: nothing to set, the provider issued the token", { step });
      return;
    case "testSecret":
      return testSecret(secretId, deps);
    case "finishSecret":
      return finishSecret(secretId, token, stages, deps);
    default:
      throw new RotationError(`Unknown rotation step ${step}`, secretId, step);
  }
}

/**
 * True for a secret value that holds no refresh token yet (`refresh_token` absent or `""`): the secret as the stack
 * creates it (only `pii_salt` generated), or with the client filled in but not signed in yet. Any other value, with a
 * token or not a JSON object at all, is not awaiting onboarding: it rotates, or fails, as before.
 *
 * @example
 * awaitingOnboarding('{"client_id":"","client_secret":"","refresh_token":"","pii_salt":"..."}'); // true
 */
export function awaitingOnboarding(text: string | undefined): boolean {
  if (text === undefined) return false;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return false;
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) return false;
  const token = (json as Record<string, unknown>).refresh_token;
  return token === undefined || token === "";
}

/**
 * Why this step belongs to a rotation with nothing to refresh, or undefined when it rotates. createSecret decides: it
 * skips when the secret (AWSCURRENT) is awaiting onboarding, or when the secret already has
 * {@link SECRET_VERSIONS_EARLY_REFRESH_LIMIT} versions of the last 24 hours (the pollers refresh the family that
 * often, so it is not idle, and they refresh only at expiry from there on: a rotation's refresh would be an early
 * one). The count includes this rotation's own placeholder version. The later steps follow that decision: a
 * rotation whose createSecret skipped has an empty version (Secrets Manager's AWSPENDING placeholder), while one that
 * refreshed always wrote it, so a secret onboarded between two steps of a skipped rotation still finishes as skipped.
 * Reads one or two secret versions, and lists the versions for createSecret.
 *
 * @example
 * const skip = await skipsRotation(event, secret, clock.now());
 * if (skip !== undefined) return skipRotation(event, deps, skip);
 */
export async function skipsRotation(event: RotationEvent, secret: ProviderSecretClient, now: number): Promise<string | undefined> {
  if (event.Step === "createSecret") {
    if (awaitingOnboarding((await secret.getValue()).text)) return "the secret holds no refresh_token yet (tenant not onboarded: run authorize --secret-id)";
    // A retried createSecret whose refresh already wrote the version rotates on (and finds it written).
    if (await rotationWrote(event, secret)) return undefined;
    const recent = await secret.versionsCreatedSince(now - SECRET_VERSION_WINDOW_MS);
    if (recent < SECRET_VERSIONS_EARLY_REFRESH_LIMIT) return undefined;
    return `the secret has ${recent} versions of the last 24 hours: the pollers refresh the token family often, so it is not idle`;
  }
  return (await rotationWrote(event, secret)) ? undefined : "createSecret wrote no version under this rotation (it skipped, or saved its refresh as a plain AWSCURRENT version)";
}

/** Whether the rotation's own version holds a value: a createSecret that refreshed wrote it, a skipped one did not. */
async function rotationWrote(event: RotationEvent, secret: ProviderSecretClient): Promise<boolean> {
  try {
    await secret.getValue(event.ClientRequestToken);
    return true;
  } catch (error) {
    if (isSecretNotFound(error)) return false;
    throw error;
  }
}

/**
 * Runs one step of a rotation with nothing to refresh ({@link skipsRotation}): createSecret writes no version,
 * setSecret and testSecret have nothing to do, and finishSecret detaches AWSPENDING from the rotation's empty
 * version, which leaves AWSCURRENT where it is and no AWSPENDING to block the next rotation. No provider call, and no
 * error: a tenant not yet onboarded, or one whose pollers refresh often, is expected, not a failure. `why` is logged.
 *
 * @throws RotationError for a version not under rotation or an unknown step, as {@link rotateProviderSecret}.
 * @example
 * await skipRotation({ SecretId, ClientRequestToken, Step: "finishSecret" }, { secrets, logger }, "nothing was refreshed");
 */
export async function skipRotation(event: RotationEvent, deps: Pick<RotationDeps, "secrets" | "logger">, why: string): Promise<void> {
  const { SecretId: secretId, ClientRequestToken: token, Step: step } = event;
  const stages = await rotationStages(event, deps);
  if (stages === undefined) return;
  switch (step) {
    case "createSecret":
    case "setSecret":
    case "testSecret":
      deps.logger.info(`${step}: skipped, ${why}`, { step });
      return;
    case "finishSecret":
      return finishSecret(secretId, token, stages, deps);
    default:
      throw new RotationError(`Unknown rotation step ${step}`, secretId, step);
  }
}

/**
 * The secret's versions and their labels, when the event's version has some. A version with none is not under
 * rotation (RotationError), except at finishSecret: a retried finishSecret finds the labels of a version it finished
 * moved on (a skipped rotation's placeholder, once AWSPENDING is detached; a rotation's version, once two refreshes
 * moved AWSCURRENT and AWSPREVIOUS past it), and is done (undefined) when the version exists.
 */
async function rotationStages(event: RotationEvent, deps: Pick<RotationDeps, "secrets" | "logger">): Promise<Map<string, readonly string[]> | undefined> {
  const { SecretId: secretId, ClientRequestToken: token, Step: step } = event;
  const description = await deps.secrets.send(new DescribeSecretCommand({ SecretId: secretId }));
  const stages = new Map(Object.entries(description.VersionIdsToStages ?? {}));
  if (stages.has(token)) return stages;
  if (step === "finishSecret" && (await new ProviderSecretClient({ secrets: deps.secrets, secretId, logger: deps.logger }).hasVersion(token))) {
    deps.logger.info("finishSecret: AWSPENDING already detached", { step });
    return undefined;
  }
  throw new RotationError(`Version ${token} has no stage for rotation`, secretId, step);
}

async function createSecret(secretId: string, token: string, tokenStages: readonly string[], deps: RotationDeps): Promise<void> {
  // A retried step: the version already holds a value (written with AWSCURRENT, or filled earlier).
  if (await versionWritten(token, deps, tokenStages)) return;
  if (!tokenStages.includes("AWSPENDING")) throw new RotationError(`Version ${token} is not AWSPENDING`, secretId, "createSecret");
  const refreshed = await refreshUnderLease(secretId, "createSecret", deps, {
    // Invoked again while an earlier invocation of this step still ran (Secrets Manager's retry after a timeout), it
    // waited for that one's lease: its version is written now, and a second refresh would only cost a version.
    needless: () => versionWritten(token, deps),
    save: (next) => saveRotated(token, next, deps),
  });
  if (refreshed) deps.logger.info("createSecret: refreshed the provider token and wrote it as AWSCURRENT", { step: "createSecret" });
}

/** How {@link refreshUnderLease} decides, under the lease, that no refresh is needed, and saves the rotated tokens. */
interface LeasedRefresh {
  /** Asked under the lease with the tokens read fresh, before anything is spent: true when no refresh is needed. */
  readonly needless: (stored: StoredTokens) => Promise<boolean> | boolean;
  readonly save: (next: StoredTokens) => Promise<void>;
}

/**
 * One refresh of the token family under the refresh lease, as the pollers refresh: refused with nothing spent for a
 * family marked revoked, or when the invocation's remaining time could cut it before the save; the secret read fresh
 * under the lease (`how.needless` may find the refresh done meanwhile); the rotated tokens saved (`how.save`) before
 * the lease goes. Returns whether it refreshed.
 *
 * @throws ReauthorizationRequiredError for a revoked family (TokenFamilyRevoked 1, else 0 once refreshed); IncompleteTokenSetError once
 *   the new refresh token of a 200 answer that is not a token set is saved; RotationError when it was not started.
 */
async function refreshUnderLease(secretId: string, step: RotationStep, deps: RotationDeps, how: LeasedRefresh): Promise<boolean> {
  // Refreshing a refresh token the provider already rejected can only fail again: stop before any provider call.
  const revoked = await deps.store.revokedFamily();
  if (revoked !== undefined) {
    deps.metrics.add("TokenFamilyRevoked", 1, "Count");
    throw new ReauthorizationRequiredError(
      `${revokedFamilyMessage(revoked, "for the current secret version", secretId)}; the rotation refreshes nothing until the secret has a new version`,
    );
  }
  const ttlMs = deps.lockTtlMs ?? DEFAULT_LOCK_TTL_MS;
  // The latest a lease may be asked for so that it ends, with the save, before the invocation does.
  const latestAskAt = deps.invocationEndsAt - REFRESH_TIMEOUT_MARGIN_MS - ttlMs;
  if (deps.clock.now() > latestAskAt) throw refreshNotStarted(secretId, step, ttlMs, deps);
  const { handle: lease, askedAt } = await acquire(deps, secretId, step, latestAskAt);
  const deadline = refreshDeadline(askedAt, ttlMs);
  try {
    // A slow answer to the last try of the wait: the lease, taken, runs from when it was asked for.
    if (askedAt > latestAskAt) throw refreshNotStarted(secretId, step, ttlMs, deps);
    const stored = await deps.store.load();
    if (stored === undefined) throw new RotationError("No refresh token in the secret", secretId, step);
    if (await how.needless(stored)) return false;
    // Before the token is spent: a secret at its version quota could not take the new version.
    await deps.store.beforeRefresh(false);
    let next: StoredTokens;
    let incomplete: IncompleteTokenSetError | undefined;
    try {
      next = await refreshOnce(stored.refreshToken, deadline, deps);
    } catch (error) {
      // Nothing spent (the grant was not judged): the secret's client must be fixed, which the error says.
      if (isInvalidClient(error)) throw new ProviderClientRejectedError(secretId, { cause: error });
      if (!(error instanceof IncompleteTokenSetError)) throw error;
      // The sent token is spent: its successor is saved, without an access token (a poller refreshes with it).
      incomplete = error;
      next = { refreshToken: error.rotatedRefreshToken() };
    }
    // Renewed while the write runs, so a slow PutSecretValue does not let a poller in with the spent token.
    await whileHolding(lease, ttlMs, deps.clock, () => how.save(next), deps.logger, TOKEN_SAVE_MESSAGES, askedAt);
    deps.metrics.add("TokenRefreshes", 1, "Count");
    // The provider took the refresh token, so the family lives: the TokenFamilyRevoked gauge clears.
    deps.metrics.add("TokenFamilyRevoked", 0, "Count");
    if (incomplete !== undefined) throw incomplete;
    return true;
  } finally {
    // Released on every path: unlike a poller, the rotation keeps no unsaved tokens to save again, so holding the
    // lease after a failed write would only stall the pollers. A failed release is logged (by name, no token) and
    // never replaces the step's outcome: a step that refreshed and saved must not fail (nor a revoked family be
    // reported as a DynamoDB error instead of "re-authorize"); the lease then runs out by itself.
    await lease.release().catch((error: unknown) =>
      deps.logger.warn(`${step}: releasing the token refresh lease failed; it runs out by itself`, {
        step,
        error: errorLabel(error),
      }),
    );
  }
}

/**
 * Whether the rotation's version holds a value, by its `stages` (AWSCURRENT: written) or else read fresh; logged as
 * a step done before.
 */
async function versionWritten(token: string, deps: RotationDeps, stages: readonly string[] = []): Promise<boolean> {
  if (!stages.includes("AWSCURRENT") && (await deps.store.readVersion(token)) === undefined) return false;
  deps.logger.info("createSecret: version already written", { step: "createSecret" });
  return true;
}

/**
 * Writes rotated tokens as the rotation's version (`token`). Should that write fail, they are written once more as a
 * plain new AWSCURRENT version, as a poller saves them: the refresh token they replace is spent, and a rotation keeps
 * nothing to save again later, so they must land before the lease goes.
 */
async function saveRotated(token: string, next: StoredTokens, deps: RotationDeps): Promise<void> {
  try {
    await deps.store.forRotation({ clientRequestToken: token, stages: ROTATION_STAGES }).save(next);
  } catch (error) {
    deps.logger.warn("createSecret: writing the rotation's version failed; writing the rotated token as a new AWSCURRENT version instead", {
      step: "createSecret",
      error: (error as Error).name,
    });
    await deps.store.save(next);
  }
}

/**
 * One refresh; a rejected grant re-reads the secret and adopts a token another container rotated meanwhile (once: a
 * rejected adopted token is a revoked family too, reported as such, not as the token endpoint's bare 401). A re-read
 * that fails is the step's error, the refusal logged as a warning ({@link reloadAfterRefusal}).
 */
async function refreshOnce(refreshToken: string, deadline: number, deps: RotationDeps, mayAdopt = true): Promise<StoredTokens> {
  try {
    return await deps.refresh(refreshToken, deadline);
  } catch (error) {
    if (!deps.isRejectedGrant(error)) throw error;
    const reloaded = await reloadAfterRefusal(error, () => deps.store.load(), deps.logger);
    if (mayAdopt && reloaded !== undefined && reloaded.refreshToken !== refreshToken) return refreshOnce(reloaded.refreshToken, deadline, deps, false);
    deps.metrics.add("TokenFamilyRevoked", 1, "Count");
    const revoked = reauthorizationRequired("The provider rejected the refresh token during rotation", error, refreshToken);
    await recordRevokedFamily(deps.store, revoked, deps.logger);
    throw revoked;
  }
}

/** Waits for the refresh lease, no longer than a lease asked for by `latestAskAt` (see {@link refreshUnderLease}). */
async function acquire(deps: RotationDeps, secretId: string, step: RotationStep, latestAskAt: number): Promise<{ handle: LockHandle; askedAt: number }> {
  const ttlMs = deps.lockTtlMs ?? DEFAULT_LOCK_TTL_MS;
  const waitMs = Math.min(deps.lockWaitMs ?? DEFAULT_LOCK_WAIT_MS, Math.max(0, latestAskAt - deps.clock.now()));
  const taken = await acquireTimed(deps.lock, deps.lockName, ttlMs, { waitMs, pollMs: DEFAULT_LOCK_POLL_MS }, deps.clock);
  if (taken !== undefined) return taken;
  // Cut short by the invocation's end: out of time, not a lease stuck elsewhere.
  if (deps.clock.now() >= latestAskAt) throw refreshNotStarted(secretId, step, ttlMs, deps);
  throw new RotationError(`Token refresh lease still held after ${waitMs} ms`, secretId, step);
}

/** The refusal of a refresh its invocation's remaining time could cut before the save (nothing spent). */
function refreshNotStarted(secretId: string, step: RotationStep, ttlMs: number, deps: Pick<RotationDeps, "clock" | "invocationEndsAt">): RotationError {
  const seconds = (ms: number) => `${Math.max(0, Math.floor(ms / 1000))} s`;
  return new RotationError(
    `Token refresh not started: ${seconds(deps.invocationEndsAt - deps.clock.now())} of the invocation were left, where a refresh ` +
      `needs its ${seconds(ttlMs)} lease to end ${seconds(REFRESH_TIMEOUT_MARGIN_MS)} before the function's timeout (cut between ` +
      "spending the refresh token and saving its successor, it would revoke the token family); nothing was spent. The " +
      `function's timeout, lowered by hand, is too short: set it back to the stack's value (at least ${seconds(MIN_ROTATION_TIMEOUT_MS)}); ` +
      "a redeploy does not restore a timeout changed by hand (docs/runbook.md, Function errors)",
    secretId,
    step,
  );
}

/**
 * Validates the shared access token. One that has expired, or will before the validate call ends, or is absent (a
 * createSecret that failed with IncompleteTokenSetError stored none) is refreshed first, as createSecret refreshes,
 * the new tokens saved as a new AWSCURRENT version (the rotation's own version is written already): else a rotation
 * Secrets Manager reattempts the next day (same ClientRequestToken, its version written) would test the token its
 * first attempt stored, expired by then with the pollers paused, and fail every day without using the refresh token.
 * One of unknown expiry (no JWT times, no `expires_in`) is tested as it is, since it is most often the one createSecret
 * just received and a refresh would spend the family a second time; the provider's 401 to it is taken for that expiry:
 * it is refreshed once the same way and the new token tested.
 */
async function testSecret(secretId: string, deps: RotationDeps): Promise<void> {
  let stored = await deps.store.load();
  // The token tested after this refresh (or a poller's, stored while this step waited) is not refreshed again on a 401.
  const refreshFirst = stored !== undefined && !testable(stored, deps.clock.now());
  if (refreshFirst) {
    const refreshed = await refreshUnderLease(secretId, "testSecret", deps, {
      // A poller refreshed while this step waited for the lease: its access token is the one to test.
      needless: (fresh) => testable(fresh, deps.clock.now()),
      save: (next) => deps.store.save(next),
    });
    if (refreshed) deps.logger.info("testSecret: the stored access token had expired or was absent; refreshed the provider token and wrote it as AWSCURRENT", { step: "testSecret" });
    stored = await deps.store.load();
  }
  const rejected = stored?.accessToken;
  if (rejected === undefined) throw new RotationError("No shared access token to test", secretId, "testSecret");
  try {
    await validateStored(secretId, rejected, deps);
  } catch (error) {
    if (refreshFirst || stored?.accessTokenExpiresAt !== undefined || !(error instanceof RotationError && error.cause instanceof UnauthorizedError)) throw error;
    const refreshed = await refreshUnderLease(secretId, "testSecret", deps, {
      // A poller replaced the rejected token while this step waited for the lease: its access token is the one to test.
      needless: (fresh) => fresh.accessToken !== rejected && testable(fresh, deps.clock.now()),
      save: (next) => deps.store.save(next),
    });
    if (refreshed) {
      deps.logger.info("testSecret: the provider rejected the stored access token of unknown expiry (401); refreshed the provider token and wrote it as AWSCURRENT", { step: "testSecret" });
    }
    const next = (await deps.store.load())?.accessToken;
    if (next === undefined || next === rejected) throw error;
    await validateStored(secretId, next, deps);
  }
}

/** Asks the provider whether it accepts `accessToken`; a refusal (401, 403, `active: false`) is the step's RotationError. */
async function validateStored(secretId: string, accessToken: string, deps: RotationDeps): Promise<void> {
  let active: boolean;
  try {
    active = await deps.validate(accessToken);
  } catch (error) {
    // The provider answers a token it refuses with 401 or 403 (§4.2), not `active: false`: the step's own error says so.
    if (!(error instanceof UnauthorizedError || error instanceof ForbiddenError)) throw error;
    const why = error instanceof UnauthorizedError ? "401: expired, revoked or invalid" : "403: API access disabled for the company";
    throw new RotationError(`The provider did not accept the new access token (${why})`, secretId, "testSecret", { cause: error });
  }
  if (!active) throw new RotationError("The provider did not accept the new access token", secretId, "testSecret");
}

/**
 * Whether `stored`'s access token can be validated as it is: present and, when its expiry is known, valid for as long
 * as the validate call may take. An unknown expiry (no JWT times, no `expires_in`) is validated as it is (see
 * {@link testSecret}).
 */
function testable(stored: StoredTokens, now: number): boolean {
  if (stored.accessToken === undefined || stored.accessToken === "") return false;
  return stored.accessTokenExpiresAt === undefined || stored.accessTokenExpiresAt > now + DEFAULT_TIMEOUT_MS;
}

async function finishSecret(
  secretId: string,
  token: string,
  stages: Map<string, readonly string[]>,
  deps: Pick<RotationDeps, "secrets" | "logger">,
): Promise<void> {
  if (!(stages.get(token) ?? []).includes("AWSPENDING")) {
    deps.logger.info("finishSecret: AWSPENDING already detached", { step: "finishSecret" });
    return;
  }
  await deps.secrets.send(
    new UpdateSecretVersionStageCommand({ SecretId: secretId, VersionStage: "AWSPENDING", RemoveFromVersionId: token }),
  );
  const current = [...stages].find(([, labels]) => labels.includes("AWSCURRENT"))?.[0];
  deps.logger.info("finishSecret: rotation complete", { step: "finishSecret", currentIsRotationVersion: current === token });
}
