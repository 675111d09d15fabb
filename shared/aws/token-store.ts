import { DeleteCommand, GetCommand, PutCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import type { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { causeMatching } from "../bridge/index.js";
import type { Clock, Logger, Metrics } from "../bridge/ports.js";
import { ReauthorizationRequiredError } from "../qashio/errors.js";
import type { StoredTokens, TokenStore } from "../qashio/auth/token-store.js";
import { errorLabel } from "../error-label.js";
import { systemClock } from "./clock.js";
import { SDK_CALL_MAX_MS } from "./config.js";
import { isConditionFailure, ProviderClientChangedError, SecretStoreError, SecretVersionQuotaError } from "./errors.js";
import { accessTokenItemKey, revokedFamilyItemKey, ttlSeconds } from "./keys.js";
import {
  isSecretNotFound,
  ProviderSecretClient,
  secretFingerprint,
  type CallPacer,
  type ProviderSecret,
  type SecretRead,
  type VersionWrite,
} from "./provider-secret.js";
import { isAwsTimeout, type BackoffOptions } from "./retry.js";

/** Cached credentials are re-read after this long. */
export const DEFAULT_SECRET_CACHE_TTL_MS = 5 * 60_000;

export interface SecretsManagerTokenStoreOptions {
  readonly secrets: SecretsManagerClient;
  /** ARN (or name) of the provider secret. */
  readonly secretId: string;
  readonly doc: DynamoDBDocumentClient;
  readonly tableName: string;
  readonly tenant: string;
  /** @default systemClock */
  readonly clock?: Clock;
  /** Retry of throttled Secrets Manager calls. @default DEFAULT_BACKOFF */
  readonly backoff?: Partial<BackoffOptions>;
  /** Expiry of the cached secret used by `credentials()`. @default DEFAULT_SECRET_CACHE_TTL_MS */
  readonly cacheTtlMs?: number;
  readonly logger?: Logger;
  /**
   * Receives `TokenSecretWriteFailed` when a rotated refresh token is held in the table (see `saveVersion`), and the
   * `TokenHeldInTable` gauge (1 held, 0 not) at each load and save.
   */
  readonly metrics?: Metrics;
}

/** The shared access-token item (one per tenant): encrypted at rest by the table's KMS key, never logged. */
interface AccessTokenItem {
  pk: string;
  sk: string;
  accessToken?: string;
  accessTokenExpiresAt?: number;
  scope?: string;
  /**
   * Secret version whose refresh token was current when this access token was issued; with `heldRefreshToken`, the
   * version loaded before the refresh that held it.
   */
  secretVersionId: string;
  /**
   * A rotated refresh token Secrets Manager refused to store, kept here (KMS-encrypted like the access token) until a
   * later save writes the secret; it counts only while the secret still holds the (spent) refresh token `heldOver`
   * fingerprints, whatever its version: an edit that keeps that token (a new `pii_salt` or client secret) must not
   * bring the spent token back, a new one (a re-authorization, a save) replaces the held one.
   */
  heldRefreshToken?: string;
  /**
   * Fingerprint of the secret's refresh token when `heldRefreshToken` was held (see {@link refreshTokenFingerprint}).
   * Absent in items held by versions before it, which bound the held token to `secretVersionId` alone (see holdsOver).
   */
  heldOver?: string;
  updatedAt: string;
  /** Absent while the item holds a refresh token: it must not expire before a save writes the secret. */
  ttl?: number;
}

/** Marker of a revoked token family: the secret version whose refresh token the provider rejected for good. */
interface RevokedFamilyItem {
  pk: string;
  sk: string;
  secretVersionId: string;
  at: string;
  /** See {@link RevokedFamily.clientMayBeRefused}. Absent in markers written before it: read as false. */
  clientMayBeRefused?: boolean;
}

/** A token family marked revoked for the secret's current version (see `SecretsManagerTokenStore.revokedFamily`). */
export interface RevokedFamily {
  /** The secret version whose refresh token the provider refused. */
  readonly secretVersionId: string;
  /**
   * The refusal was a 401 naming no `invalid_grant`, spec §4.2's answer to wrong client credentials too: the secret's
   * client_id or client_secret may be at fault, the family intact.
   */
  readonly clientMayBeRefused: boolean;
}

/** How far back versions count against Secrets Manager's quota: it removes none younger than a day. */
export const SECRET_VERSION_WINDOW_MS = 86_400_000;

/**
 * Versions of the provider secret created in the last 24 hours at which a refresh is refused (postponed, its refresh
 * token unspent). Secrets Manager keeps every version younger than a day and refuses new ones past about 100; each
 * refresh writes one (the refresh token rotates), so with access tokens of 15 minutes (96 refreshes a day) the quota
 * is near. Two below it: refreshes pass this check one at a time (the refresh lease), so all that can land between a
 * check and its write is a rotation's placeholder version or an onboarding (docs/spec-gaps.md, Secret versions).
 */
export const SECRET_VERSIONS_PER_DAY_LIMIT = 98;

/**
 * From this many versions of the last 24 hours on, a refresh ahead of the access token's expiry is refused too (the
 * pollers keep the token until it expires), and a scheduled rotation is skipped (the pollers exercise the family
 * already). Refreshing early costs versions the day cannot spare: with 15-minute tokens, refreshes a minute early
 * come every 14 minutes, 103 a day, and the limit above would then stop every refresh for about two hours each day.
 */
export const SECRET_VERSIONS_EARLY_REFRESH_LIMIT = 48;

/**
 * Time a save keeps back from the invocation's end once the new refresh token is stored (in the secret or the table):
 * for the refresh lease's release and the metrics flush. A release cut short only lets the lease run out by itself.
 */
export const SAVE_END_MARGIN_MS = 2_000;

/** The access-token item outlives the token by this much (housekeeping only). */
const ACCESS_ITEM_TTL_SLACK_MS = 86_400_000;

/**
 * Token store of one tenant on AWS.
 *
 * - The refresh token lives in the provider secret (Secrets Manager, JSON `{client_id, client_secret, refresh_token,
 *   pii_salt}`); `save` writes a new secret version (AWSCURRENT) before it resolves, so before the new access token is
 *   used. Should Secrets Manager refuse it, the new refresh token is held in the access-token item until a later save
 *   writes the secret (`saveVersion`).
 * - The access token is shared by all containers and cycles in one DynamoDB item (`TOKEN#<tenant>`/`ACCESS`), so a
 *   refresh happens only when the token nears expiry or is rejected, never per invocation (Secrets Manager advises
 *   about one new version per ~10 minutes sustained; PutSecretValue shares a 50 TPS account quota).
 * - `load` always reads the secret fresh: the token provider calls it at cold start and under the refresh lease (and,
 *   without the lease, when a refresh would not fit before a call's deadline, for an access token another container
 *   stored), so after a refresh answered 401 it sees a refresh token another container rotated meanwhile.
 * - An access token recorded against an older secret version than the current one is not returned (the secret was
 *   replaced, e.g. by a re-authorization), which forces a refresh with the current refresh token.
 * - A revoked token family is remembered (`TOKEN#<tenant>`/`REVOKED`, holding the secret version whose refresh token
 *   was rejected, and whether the client credentials may be at fault instead): `revokedFamily()` lets pollers and the
 *   rotation fail fast, with no provider call, until a new secret version (re-onboarding, or the client credentials
 *   put right) replaces it.
 * - Secrets Manager calls go through `ProviderSecretClient`: throttled calls are retried with backoff, and
 *   PutSecretValue reuses one ClientRequestToken across retries so a retry cannot create a second version.
 *
 * @example
 * const store = new SecretsManagerTokenStore({ secrets, secretId, doc, tableName, tenant: "acme" });
 * const provider = new OAuthTokenProvider({ baseUrl, clientId, clientSecret, store, lock });
 */
export class SecretsManagerTokenStore implements TokenStore {
  readonly #options: SecretsManagerTokenStoreOptions;
  readonly #clock: Clock;
  readonly #secret: ProviderSecretClient;
  readonly #cacheTtlMs: number;
  /** `started`: the number of the call that read or wrote it (see {@link #caching}). */
  #cache?: { read: SecretRead; expiresAt: number; started: number };
  /** Secret reads and writes started so far. */
  #started = 0;
  #inflightRead?: Promise<SecretRead>;
  /** Version of the refresh token the last `load` (the last started) returned: the one a rejected refresh presented. */
  #lastLoadedVersionId?: string;
  /** Fingerprint of the secret's refresh token at that `load`: what a token held by the next save is bound to. */
  #lastLoadedSecretToken?: string;
  /** Fingerprint of the refresh token that `load` handed out (the secret's, or one held in the table). */
  #lastLoadedRefreshToken?: string;
  /** Loads started so far, and the number of the one the three fields above come from. */
  #loadsStarted = 0;
  #lastLoad = 0;
  /** Fingerprint of the provider client the store first read: the one its runtime was built with and refreshes with. */
  #client?: string;
  /** Epoch ms at which the current invocation ends, when known (see {@link setInvocationEnd}). */
  #invocationEndsAt?: number;

  constructor(options: SecretsManagerTokenStoreOptions) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    const { secrets, secretId, backoff, logger } = options;
    this.#secret = new ProviderSecretClient({ secrets, secretId, clock: this.#clock, backoff, logger });
    this.#cacheTtlMs = options.cacheTtlMs ?? DEFAULT_SECRET_CACHE_TTL_MS;
  }

  /**
   * Client credentials and PII salt, from a cache with an explicit expiry (read at cold start, then every
   * `cacheTtlMs`).
   *
   * @example
   * const { client_id, client_secret, pii_salt } = await store.credentials();
   */
  async credentials(): Promise<ProviderSecret> {
    const cached = this.#cache;
    const secret = cached !== undefined && cached.expiresAt > this.#clock.now() ? cached.read.secret : (await this.readSecret()).secret;
    this.#client ??= clientFingerprint(secret);
    return secret;
  }

  /**
   * The stored tokens, read fresh.
   *
   * @throws ProviderClientChangedError when the secret names another provider client than the one this store's
   *   runtime was built with (see {@link credentials}): its refresh token belongs to that client's family.
   */
  async load(): Promise<StoredTokens | undefined> {
    const load = ++this.#loadsStarted;
    const [read, item] = await Promise.all([this.readSecret(), this.#readAccessItem()]);
    const client = clientFingerprint(read.secret);
    this.#client ??= client;
    if (client !== this.#client) throw new ProviderClientChangedError(this.#secret.secretId);
    const secretToken = refreshTokenFingerprint(read.secret);
    const bound = item !== undefined && item.secretVersionId === read.versionId;
    const held = item?.heldRefreshToken !== undefined && holdsOver(item, secretToken, read.versionId) ? item.heldRefreshToken : undefined;
    const tokens: StoredTokens = { refreshToken: held ?? read.secret.refresh_token };
    // Not from a load answered after a later one (one without the refresh lease, answered after the load under it):
    // the refresh spends the token of the later one, a token its save holds is bound to that one's version, a revoked
    // refusal is matched against the token that one handed out, and the gauge says what that one found.
    if (load > this.#lastLoad) {
      this.#lastLoad = load;
      this.#lastLoadedVersionId = read.versionId;
      this.#lastLoadedSecretToken = secretToken;
      this.#lastLoadedRefreshToken = refreshTokenFingerprint({ refresh_token: tokens.refreshToken });
      this.#reportHeld(held !== undefined);
    }
    // An item of another version (a re-authorized secret) says nothing of this family, its scope included.
    if (item === undefined || (!bound && held === undefined)) return tokens;
    const withScope = item.scope !== undefined ? { ...tokens, scope: item.scope } : tokens;
    if (!bound || item.accessToken === undefined) return withScope;
    return {
      ...withScope,
      accessToken: item.accessToken,
      ...(item.accessTokenExpiresAt !== undefined ? { accessTokenExpiresAt: item.accessTokenExpiresAt } : {}),
    };
  }

  async save(tokens: StoredTokens): Promise<void> {
    await this.saveVersion(tokens);
  }

  /**
   * Tells the store when the current invocation ends (its Lambda timeout, epoch ms; undefined: not known), so its saves
   * store a rotated refresh token before then (see {@link saveVersion}). Set by the handlers at each invocation: a
   * Lambda container runs one invocation at a time, and the runtime, this store included, outlives it.
   *
   * @example
   * runtime.tokens.setInvocationEnd(clock.now() + context.getRemainingTimeInMillis());
   */
  setInvocationEnd(endsAt: number | undefined): void {
    this.#invocationEndsAt = endsAt;
  }

  /**
   * Refuses a refresh (SecretVersionQuotaError, before the refresh token is spent) while the secret holds
   * {@link SECRET_VERSIONS_PER_DAY_LIMIT} versions created in the last 24 hours: the save after it could be refused,
   * and a refresh token whose successor cannot be stored loses the family. An `early` refresh (the access token still
   * works) is refused from {@link SECRET_VERSIONS_EARLY_REFRESH_LIMIT} on. One ListSecretVersionIds per refresh.
   */
  async beforeRefresh(early = false): Promise<void> {
    const recent = await this.#secret.versionsCreatedSince(this.#clock.now() - SECRET_VERSION_WINDOW_MS);
    const limit = early ? SECRET_VERSIONS_EARLY_REFRESH_LIMIT : SECRET_VERSIONS_PER_DAY_LIMIT;
    if (recent >= limit) throw new SecretVersionQuotaError(this.#secret.secretId, recent, limit, early);
  }

  /**
   * A view of this store whose `save` writes the version Secrets Manager's rotation asked for (its
   * ClientRequestToken, with the given labels). Used by the rotation handler only.
   */
  forRotation(write: VersionWrite): TokenStore {
    return {
      load: () => this.load(),
      save: async (tokens) => {
        await this.saveVersion(tokens, write);
      },
    };
  }

  /**
   * Writes the secret version (when the refresh token changed), then the shared access-token item.
   *
   * Should the secret read or write fail (an outage, a denied KMS key or IAM action, the version quota), the refresh
   * token the provider just rotated would exist nowhere but in memory, and the one it replaced is spent: the family
   * would be lost with the process. So the tokens go into the access-token item instead, bound to the secret's refresh
   * token at the last load (the one spent, or the one a held token replaced), `TokenSecretWriteFailed` is counted and
   * the save succeeds: `load` returns the held token while the secret still holds that refresh token (in whatever
   * version), and the next save writes the secret again. A rotation's own version (`write`) is not held: its caller
   * writes a plain version next, which is. Nothing is held when nothing was loaded (an onboarding): the caller sees
   * the error.
   *
   * A Secrets Manager that hangs rather than refuses could otherwise keep the save past the invocation's end (a read
   * and three write rounds of up to SDK_CALL_MAX_MS each), the new refresh token lost with the invocation. So the
   * secret's calls are paced ({@link SavePacer}): once one timed out, or when one more failing call would leave too
   * little time to hold the tokens after it, they are held in the table first, and the secret is tried while time
   * remains; a later write of the secret makes the held token moot (the secret no longer holds the spent one), and the
   * item is rewritten without it. `TokenSecretWriteFailed` counts only a save that ends held.
   */
  async saveVersion(tokens: StoredTokens, write?: VersionWrite): Promise<string> {
    const spentVersionId = this.#lastLoadedVersionId;
    const heldOver = this.#lastLoadedSecretToken;
    const holds = write === undefined && spentVersionId !== undefined && heldOver !== undefined;
    const hold = holds ? () => this.#writeAccessItem(tokens, spentVersionId, heldOver).then(() => undefined) : undefined;
    const endsAt = this.#invocationEndsAt === undefined ? undefined : this.#invocationEndsAt - SAVE_END_MARGIN_MS;
    const pacer = new SavePacer(this.#clock, endsAt, hold, this.#options.logger);
    let versionId: string;
    try {
      versionId = await this.#writeSecret(tokens, write, pacer);
    } catch (error) {
      if (!holds) throw error;
      if (!pacer.heldInTable) {
        try {
          await this.#writeAccessItem(tokens, spentVersionId, heldOver);
        } catch (holdError) {
          // The save fails with the table's error: without this line, why the secret did not take the token (what the
          // operator must put right) would be said nowhere.
          this.#options.logger?.warn("Secrets Manager refused the rotated refresh token and holding it in the table failed too: the save fails", {
            ...secretRefusalFields(error),
            holdError: errorLabel(holdError),
          });
          throw holdError;
        }
      }
      this.#options.metrics?.add("TokenSecretWriteFailed", 1, "Count");
      this.#reportHeld(true);
      this.#options.logger?.warn("Secrets Manager refused the rotated refresh token: it is held in the table until a later refresh writes the secret", secretRefusalFields(error));
      return spentVersionId;
    }
    // Skipped, the item holds a successor of this save's token over it: that one is live, and still held.
    const written = await this.#writeAccessItem(tokens, versionId, undefined);
    this.#reportHeld(!written);
    return versionId;
  }

  /**
   * The `TokenHeldInTable` gauge: whether the tenant's live refresh token is one Secrets Manager refused, held in the
   * table. Reported whenever the store learns it (each load and save), so the alarm on it stays on from the refused
   * write until a save writes the secret, however long refreshes are apart, and clears then.
   */
  #reportHeld(held: boolean): void {
    this.#options.metrics?.add("TokenHeldInTable", held ? 1 : 0, "Count");
  }

  /**
   * The secret version holding `tokens.refreshToken`: the current one (read fresh), or a new one when the token
   * changed. Every call goes through `pacer`.
   */
  async #writeSecret(tokens: StoredTokens, write: VersionWrite | undefined, pacer: CallPacer): Promise<string> {
    const current = await this.#caching(this.#secret.read(undefined, pacer));
    if (tokens.refreshToken === current.secret.refresh_token && write === undefined) return current.versionId;
    return this.#putSecret({ ...current.secret, refresh_token: tokens.refreshToken }, write, pacer);
  }

  /**
   * Records that the token family is revoked for the secret version whose refresh token the provider refused
   * (`refusal.refusedRefreshToken`): the one the last `load` handed it out from (the token provider and the rotation
   * re-load the store before declaring the family lost); before any load, the one this store last read or wrote, if it
   * holds it. Nothing is recorded when the last load handed out another token: the secret moved on to one never
   * presented (a re-authorization, or a token pasted, landing while the refresh ran), which a mark must not condemn,
   * and a mark for the refused token's older version would only be removed as stale. `refusal.clientMayBeRefused`
   * records that the client credentials may be at fault instead (see {@link RevokedFamily}), for the fail-fast of
   * later invocations to say so.
   *
   * @example
   * const refusedRefreshToken = error.refusedRefreshToken();
   * if (refusedRefreshToken !== undefined) await store.markRevoked({ refusedRefreshToken, clientMayBeRefused: error.clientMayBeRefused });
   */
  async markRevoked(refusal: { readonly refusedRefreshToken: string; readonly clientMayBeRefused?: boolean }): Promise<void> {
    const versionId = this.#versionHolding(refusal.refusedRefreshToken);
    if (versionId === undefined) return;
    const { doc, tableName, tenant } = this.#options;
    const item: RevokedFamilyItem = {
      ...revokedFamilyItemKey(tenant),
      secretVersionId: versionId,
      at: new Date(this.#clock.now()).toISOString(),
      clientMayBeRefused: refusal.clientMayBeRefused === true,
    };
    await doc.send(new PutCommand({ TableName: tableName, Item: item as unknown as Record<string, unknown> }));
  }

  /**
   * The secret version the last `load` handed `refreshToken` out from; before any load, the one this store last read or
   * wrote, if it holds that token. Else undefined: a version whose own token a held one replaces is not the refused
   * token's, and neither is one a load read since.
   */
  #versionHolding(refreshToken: string): string | undefined {
    if (this.#lastLoadedRefreshToken !== undefined) {
      return this.#lastLoadedRefreshToken === refreshTokenFingerprint({ refresh_token: refreshToken }) ? this.#lastLoadedVersionId : undefined;
    }
    const cached = this.#cache?.read;
    return cached?.secret.refresh_token === refreshToken ? cached.versionId : undefined;
  }

  /**
   * The current secret version when it is marked revoked, else undefined (see {@link revokedFamily}).
   *
   * @example
   * if ((await store.revokedVersion()) !== undefined) throw new ReauthorizationRequiredError("re-authorize");
   */
  async revokedVersion(): Promise<string | undefined> {
    return (await this.revokedFamily())?.secretVersionId;
  }

  /**
   * The revoked-family mark of the current secret version, if it has one. Costs one DynamoDB read; the secret is read
   * (fresh) only when a marker exists, and a marker for an older version (the secret was re-onboarded, or its client
   * credentials put right) is removed.
   *
   * @example
   * const revoked = await store.revokedFamily();
   * if (revoked !== undefined) throw new ReauthorizationRequiredError(revokedFamilyMessage(revoked, "for tenant acme", secretId));
   */
  async revokedFamily(): Promise<RevokedFamily | undefined> {
    const { doc, tableName, tenant } = this.#options;
    const key = revokedFamilyItemKey(tenant);
    const result = await doc.send(new GetCommand({ TableName: tableName, Key: key, ConsistentRead: true }));
    const marker = result.Item as RevokedFamilyItem | undefined;
    if (marker === undefined) return undefined;
    const current = await this.readSecret();
    if (current.versionId === marker.secretVersionId) return { secretVersionId: marker.secretVersionId, clientMayBeRefused: marker.clientMayBeRefused === true };
    // Only the stale marker goes: another container may have just marked the new version.
    await doc
      .send(
        new DeleteCommand({
          TableName: tableName,
          Key: key,
          ConditionExpression: "secretVersionId = :v",
          ExpressionAttributeValues: { ":v": marker.secretVersionId },
        }),
      )
      .catch((error: unknown) => {
        if ((error as Error).name !== "ConditionalCheckFailedException") throw error;
      });
    return undefined;
  }

  /**
   * Reads AWSCURRENT of the secret and refreshes the cache. Calls made before the read can be sent (in the same turn of
   * the event loop: callers starting together) share it; a call after that reads anew, since the read in flight may be
   * answered from before a rotation this caller has seen end since (a load under the refresh lease, taken once another
   * container saved and let it go, must not get the refresh token that container spent).
   */
  async readSecret(): Promise<SecretRead> {
    if (this.#inflightRead !== undefined) return this.#inflightRead;
    // Queued before the read's own steps, so it runs before the request can go out.
    queueMicrotask(() => {
      this.#inflightRead = undefined;
    });
    this.#inflightRead = this.#caching(this.#secret.read());
    return this.#inflightRead;
  }

  /** Reads one version of the secret by id, or undefined when it does not exist. */
  async readVersion(versionId: string): Promise<SecretRead | undefined> {
    try {
      return await this.#secret.read(versionId);
    } catch (error) {
      if (isSecretNotFound(error)) return undefined;
      throw error;
    }
  }

  async #putSecret(secret: ProviderSecret, write: VersionWrite | undefined, pacer: CallPacer): Promise<string> {
    const { versionId } = await this.#caching(this.#secret.put(secret, write, pacer).then((id) => ({ secret, versionId: id })));
    return versionId;
  }

  /**
   * `call`'s secret, cached once it resolves, unless a read or write started after `call` has filled the cache already:
   * reads overlap (see {@link readSecret}), and one answered late must not put back the refresh token a newer one replaced.
   */
  async #caching(call: Promise<SecretRead>): Promise<SecretRead> {
    this.#started += 1;
    const started = this.#started;
    const read = await call;
    if (started > (this.#cache?.started ?? 0)) this.#cache = { read, expiresAt: this.#clock.now() + this.#cacheTtlMs, started };
    return read;
  }

  async #readAccessItem(): Promise<AccessTokenItem | undefined> {
    const { doc, tableName, tenant } = this.#options;
    const result = await doc.send(new GetCommand({ TableName: tableName, Key: accessTokenItemKey(tenant), ConsistentRead: true }));
    return result.Item as AccessTokenItem | undefined;
  }

  /**
   * Writes the shared access-token item (deleted when there is no access token and no refresh token to hold).
   * `heldOver`: hold `tokens.refreshToken`, bound to the secret's refresh token of this fingerprint.
   *
   * A write that holds nothing never replaces an item holding a successor of `tokens.refreshToken` (held over it): a
   * save whose item write comes late (a container stalled or frozen between its secret write and this one, its lease
   * lapsed) would drop the token another container's refresh held since, and the spent one in the secret would be
   * presented next. The late write is skipped: the item is newer. Returns false when it was.
   */
  async #writeAccessItem(tokens: StoredTokens, secretVersionId: string, heldOver: string | undefined): Promise<boolean> {
    const { doc, tableName, tenant } = this.#options;
    const now = this.#clock.now();
    const notSuperseded =
      heldOver === undefined
        ? {
            ConditionExpression: "attribute_not_exists(heldOver) OR heldOver <> :written",
            ExpressionAttributeValues: { ":written": refreshTokenFingerprint({ refresh_token: tokens.refreshToken }) },
          }
        : {};
    try {
      if (tokens.accessToken === undefined && heldOver === undefined) {
        await doc.send(new DeleteCommand({ TableName: tableName, Key: accessTokenItemKey(tenant), ...notSuperseded }));
      } else {
        await this.#putAccessItem(tokens, secretVersionId, heldOver, now, notSuperseded);
      }
      return true;
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      this.#options.logger?.warn("the shared access-token item holds a newer refresh token than this save's: left as it is");
      return false;
    }
  }

  async #putAccessItem(
    tokens: StoredTokens,
    secretVersionId: string,
    heldOver: string | undefined,
    now: number,
    condition: { ConditionExpression?: string; ExpressionAttributeValues?: Record<string, unknown> },
  ): Promise<void> {
    const { doc, tableName, tenant } = this.#options;
    const item: AccessTokenItem = {
      ...accessTokenItemKey(tenant),
      secretVersionId,
      updatedAt: new Date(now).toISOString(),
      ...(heldOver !== undefined
        ? { heldRefreshToken: tokens.refreshToken, heldOver }
        : { ttl: ttlSeconds((tokens.accessTokenExpiresAt ?? now) + ACCESS_ITEM_TTL_SLACK_MS) }),
      ...(tokens.accessToken !== undefined ? { accessToken: tokens.accessToken } : {}),
      ...(tokens.accessTokenExpiresAt !== undefined ? { accessTokenExpiresAt: tokens.accessTokenExpiresAt } : {}),
      ...(tokens.scope !== undefined ? { scope: tokens.scope } : {}),
    };
    await doc.send(new PutCommand({ TableName: tableName, Item: item as unknown as Record<string, unknown>, ...condition }));
  }
}

/**
 * Marks the token family revoked (see {@link SecretsManagerTokenStore.markRevoked}) for the pollers and the rotation
 * alike, by the refusal `error` is or was caused by (the client's ReauthorizationRequiredError: the refresh token
 * refused, whether the client may be at fault); one naming no refused token marks nothing. A failed write is logged
 * by the error's name with `fields` (the poller's cycle kind), never thrown: the caller's own re-authorize error must
 * reach it, and the next invocation finds out again at the provider. Counting `TokenFamilyRevoked` stays with each
 * caller: for the pollers the engine counts it as it fails the cycle.
 */
export async function recordRevokedFamily(
  store: Pick<SecretsManagerTokenStore, "markRevoked">,
  error: unknown,
  logger: Logger,
  fields: Readonly<Record<string, unknown>> = {},
): Promise<void> {
  const refusal = causeMatching(error, (e): e is ReauthorizationRequiredError => e instanceof ReauthorizationRequiredError);
  const refusedRefreshToken = refusal?.refusedRefreshToken();
  if (refusedRefreshToken === undefined) return;
  await store
    .markRevoked({ refusedRefreshToken, clientMayBeRefused: refusal?.clientMayBeRefused === true })
    .catch((error: unknown) => logger.warn("Could not record the revoked token family", { ...fields, error: errorLabel(error) }));
}

/**
 * Paces the Secrets Manager calls of one save by `endsAt` (the invocation's end less SAVE_END_MARGIN_MS; undefined:
 * not known), each taking up to SDK_CALL_MAX_MS, as does the table write of `hold` (the DynamoDB client has the same
 * SDK timeouts). Before each call it holds the tokens first (`hold`, when the save may hold them and has not) if the call
 * before timed out or if this call, failing, would leave too little time for the hold after it; and it starts a call
 * only while one failing would still end in time, for the hold too unless the tokens are held already. A save that
 * may not hold (a rotation's own version) stops early enough for its caller's next save to hold. A failed hold is
 * logged and tried again before the next call, and by the save's fallback; never thrown here.
 */
class SavePacer implements CallPacer {
  /** Whether `hold` wrote the tokens into the table. */
  heldInTable = false;

  constructor(
    private readonly clock: Clock,
    private readonly endsAt: number | undefined,
    private readonly hold: (() => Promise<void>) | undefined,
    private readonly logger: Logger | undefined,
  ) {}

  async beforeCall(previous: unknown): Promise<boolean> {
    const heldFirst = isAwsTimeout(previous) || !this.#fits(2 * SDK_CALL_MAX_MS);
    if (heldFirst) await this.#holdOnce();
    if (this.#fits(this.heldInTable ? SDK_CALL_MAX_MS : 2 * SDK_CALL_MAX_MS)) return true;
    // The clock passed the hold's moment between the two readings: held now, the call may still fit, as it would have
    // had the first reading come a moment later. Else it was not started, and the save's fallback held the tokens.
    if (heldFirst) return false;
    await this.#holdOnce();
    return this.heldInTable && this.#fits(SDK_CALL_MAX_MS);
  }

  /** Holds the tokens in the table (`hold`) unless they are, or the save may not; a failure is logged, never thrown. */
  async #holdOnce(): Promise<void> {
    if (this.hold === undefined || this.heldInTable) return;
    try {
      await this.hold();
      this.heldInTable = true;
      this.logger?.warn("Secrets Manager is slow to take the rotated refresh token: it is held in the table while the secret write goes on");
    } catch (error) {
      this.logger?.warn("holding the rotated refresh token in the table failed; the secret write goes on", { error: errorLabel(error) });
    }
  }

  /** Whether work of `ms` started now ends by `endsAt`. */
  #fits(ms: number): boolean {
    return this.endsAt === undefined || this.clock.now() + ms <= this.endsAt;
  }
}

/**
 * Whether a held refresh token still replaces the secret's: while the secret holds the spent token `heldOver`
 * fingerprints. An item held by a version before `heldOver` existed (it bound the token to the secret version it spent
 * alone) counts by that version, as its writer read it: ignored, the spent token would be presented and the family
 * revoked on the first refresh after the upgrade.
 */
function holdsOver(item: Pick<AccessTokenItem, "heldOver" | "secretVersionId">, secretToken: string, versionId: string): boolean {
  return item.heldOver === undefined ? item.secretVersionId === versionId : item.heldOver === secretToken;
}

/** How a refused secret write is named in a log line: the error's name and, for a SecretStoreError, its message. */
function secretRefusalFields(error: unknown): Record<string, string> {
  // A SecretStoreError's message names the operation and the AWS error, never a value.
  return { error: errorLabel(error), ...(error instanceof SecretStoreError ? { reason: error.message } : {}) };
}

/** Fingerprint of the refresh token a secret holds (never its value). */
function refreshTokenFingerprint(secret: Pick<ProviderSecret, "refresh_token">): string {
  return secretFingerprint(secret, ["refresh_token"]);
}

/** Fingerprint of the provider client a secret names (never its values). */
function clientFingerprint(secret: Pick<ProviderSecret, "client_id" | "client_secret">): string {
  return secretFingerprint(secret, ["client_id", "client_secret"]);
}
