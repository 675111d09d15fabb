import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { literalPattern } from "../doc-text.js";
import { runbookSaid } from "../runbook-section.js";
import { DeleteCommand, GetCommand, PutCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { PutSecretValueCommand, type SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { ProviderSecretClient } from "../../shared/aws/provider-secret.js";
import { SecretFormatError, SecretStoreError, SecretVersionQuotaError } from "../../shared/aws/errors.js";
import { accessTokenItemKey, revokedFamilyItemKey } from "../../shared/aws/keys.js";
import {
  SECRET_VERSIONS_EARLY_REFRESH_LIMIT,
  SECRET_VERSIONS_PER_DAY_LIMIT,
  SecretsManagerTokenStore,
  recordRevokedFamily,
  type SecretsManagerTokenStoreOptions,
} from "../../shared/aws/token-store.js";
import { ReauthorizationRequiredError } from "../../shared/qashio/errors.js";
import { FakeClock } from "./support/clock.js";
import { createTestTable, type TestTable } from "./support/dynamo.js";
import { FakeSecretsManager, PROVIDER_SECRET as SECRET, awsError } from "./support/fake-secrets-manager.js";
import { OAuthTokenProvider } from "../../shared/qashio/auth/token-provider.js";
import { json, jwt, scriptedFetch } from "../qashio/helpers.js";
import { RecordingLogger } from "../bridge/fakes.js";


let table: TestTable;
beforeAll(async () => {
  table = await createTestTable();
});
afterAll(async () => table.drop());

let tenantCounter = 0;
/** `versionsOnClock`: the secret's versions, the first one included, are created at the test clock's time. */
function setup(initial: Record<string, unknown> = SECRET, options: { versionsOnClock?: boolean } = {}) {
  tenantCounter += 1;
  const tenant = `tenant-${tenantCounter}`;
  const clock = new FakeClock();
  const secrets = new FakeSecretsManager("arn:secret:provider", initial, options.versionsOnClock ? () => clock.now() : undefined);
  /** The options of this tenant's stores, with `extra` (a logger, metrics). */
  const optionsWith = (extra: Partial<SecretsManagerTokenStoreOptions> = {}): SecretsManagerTokenStoreOptions => ({
    secrets: secrets.client,
    secretId: secrets.secretId,
    doc: table.doc,
    tableName: table.tableName,
    tenant,
    clock,
    backoff: { random: () => 0.5, maxAttempts: 3 },
    cacheTtlMs: 60_000,
    ...extra,
  });
  const make = () => new SecretsManagerTokenStore(optionsWith());
  /** The tenant's shared access-token item, as the table holds it. */
  const accessItem = async () =>
    (await table.doc.send(new GetCommand({ TableName: table.tableName, Key: accessTokenItemKey(tenant), ConsistentRead: true }))).Item;
  return { secrets, clock, make, optionsWith, accessItem, tenant, store: make() };
}

describe("SecretsManagerTokenStore", () => {
  it("loads the refresh token from the secret and no access token before any refresh", async () => {
    const { store } = setup();
    expect(await store.load()).toEqual({ refreshToken: "rt-1" });
  });

  it("writes a new AWSCURRENT version with the rotated refresh token, keeping the other fields", async () => {
    const { store, secrets } = setup();
    await store.save({ refreshToken: "rt-2", accessToken: "at-2", accessTokenExpiresAt: 2_000_000_000_000, scope: "transactions:read" });
    expect(secrets.current()).toEqual({ ...SECRET, refresh_token: "rt-2" });
    expect(secrets.versionCount).toBe(2);
  });

  it("shares the access token with every other container through the table", async () => {
    const { store, make } = setup();
    await store.save({ refreshToken: "rt-2", accessToken: "at-2", accessTokenExpiresAt: 2_000_000_000_000, scope: "s" });
    expect(await make().load()).toEqual({ refreshToken: "rt-2", accessToken: "at-2", accessTokenExpiresAt: 2_000_000_000_000, scope: "s" });
  });

  it("does not create a secret version when only the access token changed", async () => {
    const { store, secrets } = setup();
    await store.save({ refreshToken: "rt-1", accessToken: "at-1" });
    expect(secrets.versionCount).toBe(1);
    expect((await store.load())?.accessToken).toBe("at-1");
  });

  it("re-reads the secret on every load, so a refresh token rotated by another container is seen", async () => {
    const { store, make } = setup();
    expect((await store.load())?.refreshToken).toBe("rt-1");
    await make().save({ refreshToken: "rt-9", accessToken: "at-9" });
    expect((await store.load())?.refreshToken).toBe("rt-9");
  });

  it("reads the secret anew on a load made while an earlier read is on its way back, so a token rotated in between is seen", async () => {
    const { store, make, secrets } = setup();
    // A read without the refresh lease (a token another container stored), answered before that container's rotation.
    const inTransit = secrets.holdNext("GetSecretValue", { answered: true });
    const early = store.readSecret();
    await inTransit.reached;
    // The other container rotates and lets the lease go; this one then loads under the lease, before the early answer lands.
    await make().save({ refreshToken: "rt-9", accessToken: "at-9" });
    const underLease = store.load();
    inTransit.release();
    expect((await early).secret.refresh_token).toBe("rt-1");
    // Joined to the early read, the load would hand out the spent rt-1: presented again, it revokes the family.
    expect((await underLease)?.refreshToken).toBe("rt-9");
    // Nor does the early answer, landing last, put the spent token back into the cache.
    expect((await store.credentials()).refresh_token).toBe("rt-9");
  });

  it("remembers a revoked family for the loaded secret version, for every container, until a new version replaces it", async () => {
    const { store, make } = setup();
    expect(await store.revokedVersion()).toBeUndefined();
    await store.load();
    await store.markRevoked({ refusedRefreshToken: "rt-1" });
    const revoked = await make().revokedVersion();
    expect(revoked).toBeDefined();
    await make().saveVersion({ refreshToken: "rt-new-family" }, { clientRequestToken: "reonboard-1", stages: ["AWSCURRENT"] });
    expect(await make().revokedVersion()).toBeUndefined();
    expect(await store.revokedVersion()).toBeUndefined();
  });

  it("checks a revoked marker against the secret read fresh: a warm container, its credentials cached, sees a re-onboarding at once", async () => {
    const { store, secrets } = setup();
    await store.load();
    await store.markRevoked({ refusedRefreshToken: "rt-1" });
    expect(await store.revokedVersion()).toBeDefined();
    await new ProviderSecretClient({ secrets: secrets.client, secretId: secrets.secretId }).put({ ...SECRET, refresh_token: "rt-new-family" });
    // Against the cached (old) version, the marker would count until the cache expires: the new family's pollers would
    // fail fast with "re-authorize" for minutes after the re-authorization.
    expect(await store.revokedFamily()).toBeUndefined();
  });

  it("records whether the client may be at fault with the revoked family, and reads a marker written without it as not", async () => {
    const { store, make, tenant } = setup();
    await store.load();
    await store.markRevoked({ refusedRefreshToken: "rt-1", clientMayBeRefused: true });
    const versionId = await make().revokedVersion();
    expect(await make().revokedFamily()).toEqual({ secretVersionId: versionId, clientMayBeRefused: true });
    // A marker as versions before the attribute wrote it.
    const legacy = { ...revokedFamilyItemKey(tenant), secretVersionId: versionId, at: "2026-01-01T00:00:00.000Z" };
    await table.doc.send(new PutCommand({ TableName: table.tableName, Item: legacy }));
    expect(await make().revokedFamily()).toEqual({ secretVersionId: versionId, clientMayBeRefused: false });
    await store.markRevoked({ refusedRefreshToken: "rt-1" });
    expect(await make().revokedFamily()).toEqual({ secretVersionId: versionId, clientMayBeRefused: false });
  });

  it("marks the version it last read when nothing was loaded, if that holds the refused token, and records nothing when it read none", async () => {
    const { make } = setup();
    const unread = make();
    await unread.markRevoked({ refusedRefreshToken: "rt-1" });
    expect(await make().revokedVersion()).toBeUndefined();
    const reader = make();
    const { versionId } = await reader.readSecret();
    await reader.markRevoked({ refusedRefreshToken: "rt-from-elsewhere" });
    expect(await make().revokedVersion()).toBeUndefined();
    await reader.markRevoked({ refusedRefreshToken: "rt-1" });
    expect(await make().revokedVersion()).toBe(versionId);
  });

  it("marks, when nothing was loaded, the version a save last read or wrote, if that holds the refused token", async () => {
    const { make } = setup();
    const current = async () => (await make().readSecret()).versionId;
    // A save that keeps the refresh token only reads the secret; one with a new token writes a version.
    const reader = make();
    await reader.save({ refreshToken: "rt-1", accessToken: "at-1" });
    await reader.markRevoked({ refusedRefreshToken: "rt-1" });
    expect(await make().revokedVersion()).toBe(await current());
    const writer = make();
    await writer.save({ refreshToken: "rt-2", accessToken: "at-2" });
    await writer.markRevoked({ refusedRefreshToken: "rt-2" });
    expect(await make().revokedVersion()).toBe(await current());
  });

  it("marks the version last loaded, not a newer one read since (its refresh token was never presented)", async () => {
    const { store, make, secrets } = setup();
    await store.load();
    await new ProviderSecretClient({ secrets: secrets.client, secretId: secrets.secretId }).put({ ...SECRET, refresh_token: "rt-new-family" });
    const newer = (await store.readSecret()).versionId;
    await store.markRevoked({ refusedRefreshToken: "rt-1" });
    expect(await make().revokedVersion()).toBeUndefined();
    expect((await make().readSecret()).versionId).toBe(newer);
  });

  it("marks the version whose load handed out the refused refresh token, not a re-authorized one a later load read", async () => {
    const { store, make, secrets } = setup();
    const { versionId: refusedIn } = await store.readSecret();
    await store.load();
    // `authorize --secret-id` lands while the refresh of rt-1 is in flight; a call made meanwhile loads its version.
    await new ProviderSecretClient({ secrets: secrets.client, secretId: secrets.secretId }).put({ ...SECRET, refresh_token: "rt-new-family" });
    expect((await store.load())?.refreshToken).toBe("rt-new-family");
    await store.markRevoked({ refusedRefreshToken: "rt-1" });
    expect(await make().revokedVersion()).toBeUndefined();
    // Refused in turn, the new family's token is marked for its own version.
    const { versionId: reauthorized } = await make().readSecret();
    expect(reauthorized).not.toBe(refusedIn);
    await store.markRevoked({ refusedRefreshToken: "rt-new-family" });
    expect(await make().revokedVersion()).toBe(reauthorized);
  });

  // Also across an edit that kept the spent token (a new pii_salt): marked for the item's older version instead, the
  // marker would be removed as stale at the next check, and the revoked family forgotten.
  it.each([
    { over: "the version the token was held over", edit: undefined },
    { over: "a version an edit made since, keeping the spent token", edit: { pii_salt: "salt-fedcba9876543210" } },
  ])("marks a refused held refresh token for the secret version it was loaded over: $over", async ({ edit }) => {
    const { store, make, secrets } = setup();
    await store.load();
    secrets.failNext("PutSecretValue", awsError("AccessDeniedException", 400));
    await store.save({ refreshToken: "rt-held", accessToken: "at-2" });
    if (edit !== undefined) await new ProviderSecretClient({ secrets: secrets.client, secretId: secrets.secretId }).put({ ...SECRET, ...edit });
    const { versionId } = await make().readSecret();
    expect((await store.load())?.refreshToken).toBe("rt-held");
    // The secret's own (spent) token was not the one presented: nothing is marked for it.
    await store.markRevoked({ refusedRefreshToken: "rt-1" });
    expect(await make().revokedVersion()).toBeUndefined();
    await store.markRevoked({ refusedRefreshToken: "rt-held" });
    expect(await make().revokedVersion()).toBe(versionId);
  });

  it("removes only a stale revoked marker: one another container writes for the new version meanwhile stays", async () => {
    const secrets = new FakeSecretsManager("arn:secret:provider", SECRET);
    const storeWith = (doc: DynamoDBDocumentClient) =>
      new SecretsManagerTokenStore({ secrets: secrets.client, secretId: secrets.secretId, doc, tableName: table.tableName, tenant: "tenant-marker-race" });
    const first = storeWith(table.doc);
    await first.load();
    await first.markRevoked({ refusedRefreshToken: "rt-1" });
    // Re-onboarding writes a new version; another container finds that family rejected too and marks it, between this
    // container's read of the old marker and its delete of it.
    await new ProviderSecretClient({ secrets: secrets.client, secretId: secrets.secretId }).put({ ...SECRET, refresh_token: "rt-new-family" });
    const other = storeWith(table.doc);
    await other.load();
    const newVersion = (await other.readSecret()).versionId;
    const racing = {
      send: async (command: unknown) => {
        if (command instanceof DeleteCommand) await other.markRevoked({ refusedRefreshToken: "rt-new-family" });
        return table.doc.send(command as never);
      },
    } as unknown as DynamoDBDocumentClient;
    expect(await storeWith(racing).revokedVersion()).toBeUndefined();
    expect(await storeWith(table.doc).revokedVersion()).toBe(newVersion);
  });

  it("stamps the revoked marker with the time of the refusal, for an operator reading the item", async () => {
    const { store, clock, tenant } = setup();
    await store.load();
    clock.advance(3_600_000);
    await store.markRevoked({ refusedRefreshToken: "rt-1" });
    const marker = (await table.doc.send(new GetCommand({ TableName: table.tableName, Key: revokedFamilyItemKey(tenant), ConsistentRead: true }))).Item;
    expect(marker?.["at"]).toBe(new Date(clock.now()).toISOString());
  });

  it("fails when a stale revoked marker cannot be removed (a denied DeleteItem), rather than read the secret on every call unseen", async () => {
    const { store, secrets, optionsWith } = setup();
    await store.load();
    await store.markRevoked({ refusedRefreshToken: "rt-1" });
    await new ProviderSecretClient({ secrets: secrets.client, secretId: secrets.secretId }).put({ ...SECRET, refresh_token: "rt-new-family" });
    const denying = {
      send: async (command: unknown) => {
        if (command instanceof DeleteCommand) throw Object.assign(new Error("not authorized"), { name: "AccessDeniedException" });
        return table.doc.send(command as never);
      },
    } as unknown as DynamoDBDocumentClient;
    await expect(new SecretsManagerTokenStore(optionsWith({ doc: denying })).revokedFamily()).rejects.toMatchObject({ name: "AccessDeniedException" });
  });

  it("reads the revoked marker and the shared access token consistently: a marker or token another container just wrote is seen", async () => {
    const { store, optionsWith } = setup();
    await store.load();
    await store.markRevoked({ refusedRefreshToken: "rt-1" });
    const reads: unknown[] = [];
    const recording = {
      send: async (command: unknown) => {
        if (command instanceof GetCommand) reads.push(command.input.ConsistentRead);
        return table.doc.send(command as never);
      },
    } as unknown as DynamoDBDocumentClient;
    const other = new SecretsManagerTokenStore(optionsWith({ doc: recording }));
    expect(await other.revokedFamily()).toBeDefined();
    await other.load();
    expect(reads).toEqual([true, true]);
  });

  it("drops a shared access token, and its scope, issued under an older secret version (secret replaced out of band)", async () => {
    const { store, make, secrets } = setup();
    await store.save({ refreshToken: "rt-2", accessToken: "at-2", scope: "transactions:read" });
    // An operator re-authorizes (`authorize --secret-id`): a new family's refresh token goes straight into the secret,
    // and the access-token item of the old family stays in the table.
    await new ProviderSecretClient({ secrets: secrets.client, secretId: secrets.secretId }).put({ ...SECRET, refresh_token: "rt-new-family" });
    expect(secrets.current().refresh_token).toBe("rt-new-family");
    expect(await store.load()).toEqual({ refreshToken: "rt-new-family" });
    expect(await make().load()).toEqual({ refreshToken: "rt-new-family" });
  });

  it("fails a save whose secret write fails when nothing was loaded (an onboarding): no token is held, none returned", async () => {
    const { store, secrets } = setup();
    secrets.failNext("PutSecretValue", awsError("AccessDeniedException", 400));
    await expect(store.save({ refreshToken: "rt-2", accessToken: "at-2" })).rejects.toBeInstanceOf(SecretStoreError);
    expect(await store.load()).toEqual({ refreshToken: "rt-1" });
  });

  it("holds a rotated refresh token Secrets Manager refuses in the table, counted and logged without values, until a save writes the secret", async () => {
    const { secrets, make, optionsWith, accessItem } = setup();
    const metrics: string[] = [];
    const logger = new RecordingLogger();
    const recorder = { add: (name: string, value: number) => metrics.push(`${name} ${value}`) };
    const store = new SecretsManagerTokenStore(optionsWith({ logger, metrics: recorder }));
    // A refresh: the token provider loads (the version whose token it spends), refreshes, then saves.
    await store.load();
    secrets.failNext("PutSecretValue", awsError("AccessDeniedException", 400));
    await store.save({ refreshToken: "rt-2", accessToken: "at-2", accessTokenExpiresAt: 2_000_000_000_000, scope: "s" });
    expect(secrets.current().refresh_token).toBe("rt-1");
    expect(secrets.versionCount).toBe(1);
    // The gauge: nothing held at the load, held from the refused write on.
    expect(metrics).toEqual(["TokenHeldInTable 0", "TokenSecretWriteFailed 1", "TokenHeldInTable 1"]);
    // The line docs/runbook.md (TokenSecretWriteFailed) names, at warn: its `reason` names the failed call and the AWS error.
    expect(logger.lines).toEqual([
      {
        level: "warn",
        message: "Secrets Manager refused the rotated refresh token: it is held in the table until a later refresh writes the secret",
        attributes: { error: "SecretStoreError", reason: expect.stringMatching(/^PutSecretValue .*AccessDeniedException/) },
      },
    ]);
    expect(logger.lines[0]?.message).toMatch(new RegExp(`^${literalPattern(runbookSaid("TokenSecretWriteFailed", /the log line "([^"]+)" names the failed call and the AWS error/))}`));
    expect(JSON.stringify(logger.lines)).not.toMatch(/rt-2|at-2/);
    // Every container now gets the held token, never the spent one; the item holding it has no expiry.
    expect(await make().load()).toEqual({ refreshToken: "rt-2", accessToken: "at-2", accessTokenExpiresAt: 2_000_000_000_000, scope: "s" });
    expect((await accessItem())?.["ttl"]).toBeUndefined();
    // The next refresh spends rt-2 (another container's load reports it held); its save writes the secret, which
    // releases the held token, and the gauge drops to 0.
    metrics.length = 0;
    const next = new SecretsManagerTokenStore(optionsWith({ metrics: recorder }));
    expect((await next.load())?.refreshToken).toBe("rt-2");
    await next.save({ refreshToken: "rt-3", accessToken: "at-3", accessTokenExpiresAt: 2_000_000_000_000 });
    expect(secrets.current().refresh_token).toBe("rt-3");
    expect(metrics).toEqual(["TokenHeldInTable 1", "TokenHeldInTable 0"]);
    expect(await make().load()).toEqual({ refreshToken: "rt-3", accessToken: "at-3", accessTokenExpiresAt: 2_000_000_000_000 });
    expect((await accessItem())?.["heldRefreshToken"]).toBeUndefined();
    expect((await accessItem())?.["ttl"]).toBeTypeOf("number");
  });

  it("names Secrets Manager's refusal at warn when holding the token in the table fails too: the save's error, the table's, would hide it", async () => {
    const { secrets, optionsWith } = setup();
    const logger = new RecordingLogger();
    const metrics: string[] = [];
    // The table refuses every item write (a throttled or denied PutItem); reads and deletes go through.
    const refusingPuts = {
      send: async (command: unknown) => {
        if (command instanceof PutCommand) throw Object.assign(new Error("throttled (fake)"), { name: "ProvisionedThroughputExceededException" });
        return table.doc.send(command as never);
      },
    } as unknown as DynamoDBDocumentClient;
    const store = new SecretsManagerTokenStore(optionsWith({ doc: refusingPuts, logger, metrics: { add: (name: string, value: number) => metrics.push(`${name} ${value}`) } }));
    await store.load();
    secrets.failNext("PutSecretValue", awsError("AccessDeniedException", 400));
    const saving = store.save({ refreshToken: "rt-2", accessToken: "at-2" });
    // The save fails with the table's error (the token provider then keeps the tokens in memory)...
    await expect(saving).rejects.toMatchObject({ name: "ProvisionedThroughputExceededException" });
    expect(secrets.current().refresh_token).toBe("rt-1");
    // ...and the log says why the secret did not take the token, which is what the operator must put right.
    expect(logger.lines).toContainEqual({
      level: "warn",
      message: "Secrets Manager refused the rotated refresh token and holding it in the table failed too: the save fails",
      attributes: { error: "SecretStoreError", reason: expect.stringMatching(/^PutSecretValue .*AccessDeniedException/), holdError: "ProvisionedThroughputExceededException" },
    });
    expect(JSON.stringify(logger.lines)).not.toMatch(/rt-2|at-2/);
    // Nothing is held, so nothing is counted as held (TokenSecretWriteFailed counts a save that ends held).
    expect(metrics).not.toContain("TokenSecretWriteFailed 1");
  });

  it("holds the refreshed tokens when the secret cannot even be read at save time, and a token set without an access token too", async () => {
    const { store, secrets, make } = setup();
    await store.load();
    // The cache is bypassed by a fresh store: the save's read of the secret fails, then the held item is written.
    const fresh = make();
    await fresh.load();
    secrets.failNext("GetSecretValue", awsError("InternalServiceError", 500), 3);
    await fresh.save({ refreshToken: "rt-2", scope: "transactions:read" });
    // The set's scope is held with it, though there is no access token to share.
    expect(await make().load()).toEqual({ refreshToken: "rt-2", scope: "transactions:read" });
  });

  it("answers a save that held its tokens with the version they are held over, the one loaded, and a save that wrote with the new version", async () => {
    const { store, secrets } = setup();
    await store.load();
    const loaded = secrets.versionWith("AWSCURRENT");
    secrets.failNext("PutSecretValue", awsError("AccessDeniedException", 400));
    expect(await store.saveVersion({ refreshToken: "rt-2", accessToken: "at-2" })).toBe(loaded);
    const written = await store.saveVersion({ refreshToken: "rt-3", accessToken: "at-3" });
    expect(written).not.toBe(loaded);
    expect(written).toBe(secrets.versionWith("AWSCURRENT"));
  });

  it("binds a held token to the secret read under the lease, not to an earlier read without it that answered later", async () => {
    const { store, secrets, make } = setup();
    // A load without the refresh lease (a caller out of time, for a token another container stored), answered late.
    const inTransit = secrets.holdNext("GetSecretValue", { answered: true });
    const early = store.load();
    await inTransit.reached;
    // Another container rotates; this one then loads under the lease, and that answer lands first.
    const other = make();
    await other.load();
    await other.save({ refreshToken: "rt-9", accessToken: "at-9" });
    expect((await store.load())?.refreshToken).toBe("rt-9");
    inTransit.release();
    expect((await early)?.refreshToken).toBe("rt-1");
    // The refresh spends rt-9; Secrets Manager refuses its successor, which is held in the table.
    secrets.failNext("PutSecretValue", awsError("AccessDeniedException", 400));
    await store.save({ refreshToken: "rt-10", accessToken: "at-10" });
    // Bound to the early read's rt-1, the held token would be ignored and the spent rt-9 handed out: presented, it
    // revokes the family.
    expect((await make().load())?.refreshToken).toBe("rt-10");
  });

  it("reports the held-token gauge from the latest load, not from an earlier one answered after it", async () => {
    const { secrets, make, optionsWith } = setup();
    const gauge: number[] = [];
    const metrics = { add: (name: string, value: number) => void (name === "TokenHeldInTable" && gauge.push(value)) };
    const store = new SecretsManagerTokenStore(optionsWith({ metrics }));
    const inTransit = secrets.holdNext("GetSecretValue", { answered: true });
    const early = store.load();
    await inTransit.reached;
    // Another container rotates, and Secrets Manager refuses its new token: held in the table.
    const other = make();
    await other.load();
    secrets.failNext("PutSecretValue", awsError("AccessDeniedException", 400));
    await other.save({ refreshToken: "rt-9", accessToken: "at-9" });
    expect((await store.load())?.refreshToken).toBe("rt-9");
    expect(gauge.at(-1)).toBe(1);
    inTransit.release();
    await early;
    // The early read saw the secret before the refusal: its 0, reported last, would clear the alarm while rt-9 is held.
    expect(gauge.at(-1)).toBe(1);
  });

  it("ignores a held refresh token once the secret has a newer version (re-authorized out of band)", async () => {
    const { store, secrets, make } = setup();
    await store.load();
    secrets.failNext("PutSecretValue", awsError("AccessDeniedException", 400));
    await store.save({ refreshToken: "rt-2", accessToken: "at-2" });
    await new ProviderSecretClient({ secrets: secrets.client, secretId: secrets.secretId }).put({ ...SECRET, refresh_token: "rt-new-family" });
    expect(await make().load()).toEqual({ refreshToken: "rt-new-family" });
  });

  it("keeps the held refresh token across a new secret version that keeps the spent one (a pii_salt or client secret edit): the spent token is never returned", async () => {
    const { store, secrets, make } = setup();
    await store.load();
    secrets.failNext("PutSecretValue", awsError("AccessDeniedException", 400));
    await store.save({ refreshToken: "rt-2", accessToken: "at-2" });
    // The runbook's pii_salt replacement (get-secret-value | jq | put-secret-value): a new version, refresh token unchanged.
    await new ProviderSecretClient({ secrets: secrets.client, secretId: secrets.secretId }).put({ ...SECRET, pii_salt: "salt-fedcba9876543210" });
    expect(secrets.versionCount).toBe(2);
    expect((await make().load())?.refreshToken).toBe("rt-2");
    // A refresh after it spends rt-2; Secrets Manager refuses again: rt-3 is held, and still found after another edit.
    const next = make();
    expect((await next.load())?.refreshToken).toBe("rt-2");
    secrets.failNext("PutSecretValue", awsError("AccessDeniedException", 400));
    await next.save({ refreshToken: "rt-3", accessToken: "at-3" });
    expect((await make().load())?.refreshToken).toBe("rt-3");
    await new ProviderSecretClient({ secrets: secrets.client, secretId: secrets.secretId }).put({ ...SECRET, client_secret: "csecret-2" });
    expect((await make().load())?.refreshToken).toBe("rt-3");
    // A re-authorization (a new refresh token in the secret) still makes it stale.
    await new ProviderSecretClient({ secrets: secrets.client, secretId: secrets.secretId }).put({ ...SECRET, refresh_token: "rt-new-family" });
    expect(await make().load()).toEqual({ refreshToken: "rt-new-family" });
  });

  it("hands out a held refresh token across an edit that keeps the spent one with its scope, not the access token recorded against the version before it", async () => {
    const { store, secrets, make } = setup();
    await store.load();
    secrets.failNext("PutSecretValue", awsError("AccessDeniedException", 400));
    await store.save({ refreshToken: "rt-2", accessToken: "at-2", accessTokenExpiresAt: 2_000_000_000_000, scope: "transactions:read" });
    await new ProviderSecretClient({ secrets: secrets.client, secretId: secrets.secretId }).put({ ...SECRET, pii_salt: "salt-fedcba9876543210" });
    // The held token's own family, so its scope comes with it; its access token was recorded against the version before
    // the edit, and such a token is not returned (the class's rule): the next call refreshes with the held token.
    expect(await make().load()).toEqual({ refreshToken: "rt-2", scope: "transactions:read" });
  });

  it.each([
    ["PutCommand", { refreshToken: "rt-2", accessToken: "at-2", accessTokenExpiresAt: 2_000_000_000_000 }],
    // A refresh answered with no access token (a 200 that is not a token set): the item write is a delete.
    ["DeleteCommand", { refreshToken: "rt-2" }],
  ])("never lets a late access-token write (%s) of a superseded refresh drop the successor another container holds in the table, nor report it released", async (itemWrite, tokens) => {
    const { secrets, make, optionsWith } = setup();
    // Container A's save writes the secret (rt-2), then its item write is held back: a container frozen or stalled
    // between the two writes, thawed after its refresh lease lapsed.
    let releaseItemWrite!: () => void;
    let itemWriteReached!: () => void;
    const reached = new Promise<void>((resolve) => (itemWriteReached = resolve));
    const gate = new Promise<void>((resolve) => (releaseItemWrite = resolve));
    let holding = true;
    const slowDoc = {
      send: async (command: { constructor: { name: string } }) => {
        if (holding && command.constructor.name === itemWrite) {
          holding = false;
          itemWriteReached();
          await gate;
        }
        return table.doc.send(command as never);
      },
    } as unknown as DynamoDBDocumentClient;
    const gauge: number[] = [];
    const metrics = { add: (name: string, value: number) => void (name === "TokenHeldInTable" && gauge.push(value)) };
    const logger = new RecordingLogger();
    const a = new SecretsManagerTokenStore(optionsWith({ doc: slowDoc, metrics, logger }));
    await a.load();
    const saving = a.save(tokens);
    await reached;
    expect(secrets.current().refresh_token).toBe("rt-2");
    // Container B took the lapsed lease, spent rt-2, and Secrets Manager refused rt-3: it is held in the table.
    const b = make();
    expect((await b.load())?.refreshToken).toBe("rt-2");
    secrets.failNext("PutSecretValue", awsError("AccessDeniedException", 400));
    await b.save({ refreshToken: "rt-3", accessToken: "at-3", accessTokenExpiresAt: 2_000_000_000_000 });
    expect((await make().load())?.refreshToken).toBe("rt-3");
    // A's item write lands now: it must not replace the held rt-3 (rt-2, spent, would be presented next).
    releaseItemWrite();
    await saving;
    expect((await make().load())?.refreshToken).toBe("rt-3");
    // rt-3 is still the live token and held in the table: A's skipped write must not drop the gauge (and the alarm).
    expect(gauge.at(-1)).toBe(1);
    // The operator is told why A's access token went unshared.
    expect(logger.lines.filter((line) => line.message.startsWith("the shared access-token item")).map((line) => [line.level, line.message])).toEqual([
      ["warn", "the shared access-token item holds a newer refresh token than this save's: left as it is"],
    ]);
    expect(logger.lines.map((line) => line.message)).toContain(runbookSaid("TokenSecretWriteFailed", /it logs "([^"]+)"\)/));
  });

  it("does not hold a rotation's own version: the write fails for its caller, which writes a plain version next", async () => {
    const { store, secrets } = setup();
    await store.load();
    secrets.failNext("PutSecretValue", awsError("InvalidRequestException", 400));
    await expect(store.forRotation({ clientRequestToken: "rotation-1", stages: ["AWSCURRENT", "AWSPENDING"] }).save({ refreshToken: "rt-2", accessToken: "at-2" })).rejects.toBeInstanceOf(
      SecretStoreError,
    );
    expect(await store.load()).toEqual({ refreshToken: "rt-1" });
  });

  it("retries a throttled PutSecretValue with the same ClientRequestToken, creating one version", async () => {
    const { store, secrets, clock } = setup();
    secrets.failNext("PutSecretValue", awsError("ThrottlingException", 400, true), 2);
    await store.save({ refreshToken: "rt-2", accessToken: "at-2" });
    const puts = secrets.calls.filter((call) => call.operation === "PutSecretValue");
    expect(puts).toHaveLength(3);
    expect(new Set(puts.map((call) => call.input.ClientRequestToken)).size).toBe(1);
    expect(secrets.versionCount).toBe(2);
    expect(clock.sleeps).toHaveLength(2);
  });

  it("sends a PutSecretValue whose answer was lost (it landed, then timed out) again with its request token: no second version", async () => {
    const { secrets, optionsWith } = setup();
    // The SDK fills in a request token of its own for every command sent without one (a stub client sees none): only
    // the store's own token, kept across the rounds, makes the second round find the version the first one wrote.
    const send = secrets.client.send.bind(secrets.client) as (command: unknown) => Promise<unknown>;
    let lost = 1;
    const losingAnswers = {
      send: async (command: unknown) => {
        const answer = await send(command);
        if (command instanceof PutSecretValueCommand && lost > 0) {
          lost -= 1;
          throw Object.assign(new Error("timed out (fake)"), { name: "TimeoutError", $metadata: { attempts: 3 } });
        }
        return answer;
      },
    } as unknown as SecretsManagerClient;
    const store = new SecretsManagerTokenStore(optionsWith({ secrets: losingAnswers }));
    await store.load();
    await store.save({ refreshToken: "rt-2", accessToken: "at-2" });
    const tokens = secrets.calls.filter((call) => call.operation === "PutSecretValue").map((call) => call.input.ClientRequestToken);
    expect(tokens).toHaveLength(2);
    expect(tokens[0]).toEqual(expect.any(String));
    expect(tokens[1]).toBe(tokens[0]);
    expect(secrets.versionCount).toBe(2);
    expect(secrets.current().refresh_token).toBe("rt-2");
  });

  it("reads one secret version by id, answers undefined for a version that does not exist, and fails a read that failed", async () => {
    const { store, secrets } = setup();
    const { versionId } = await store.readSecret();
    expect((await store.readVersion(versionId))?.secret.refresh_token).toBe("rt-1");
    // The rotation asks whether its own version was written yet: a missing one is an answer, not a failure.
    expect(await store.readVersion("no-such-version")).toBeUndefined();
    // A read that failed is no answer: taken for a missing version, the rotation would refresh again, spending the token.
    secrets.failNext("GetSecretValue", awsError("AccessDeniedException", 400));
    await expect(store.readVersion(versionId)).rejects.toBeInstanceOf(SecretStoreError);
  });

  it("caches the credentials with an explicit expiry", async () => {
    const { store, secrets, clock } = setup();
    await store.credentials();
    await store.credentials();
    const reads = () => secrets.calls.filter((call) => call.operation === "GetSecretValue").length;
    expect(reads()).toBe(1);
    clock.advance(59_999);
    await store.credentials();
    expect(reads()).toBe(1);
    // Expired once cacheTtlMs (60 s here) has passed, not a millisecond later.
    clock.advance(1);
    await store.credentials();
    expect(reads()).toBe(2);
  });

  it("reads the secret once for calls that overlap (single flight)", async () => {
    const { store, secrets } = setup();
    await Promise.all([store.readSecret(), store.credentials(), store.load()]);
    expect(secrets.calls.filter((call) => call.operation === "GetSecretValue")).toHaveLength(1);
  });

  it("refuses to load a secret naming another provider client than the one its credentials were first read with", async () => {
    const { store, secrets } = setup();
    // The runtime is built from credentials() at cold start; the tenant is moved to another client before the first load.
    await store.credentials();
    await new ProviderSecretClient({ secrets: secrets.client, secretId: secrets.secretId }).put({ ...SECRET, client_id: "cid-2", refresh_token: "rt-of-cid-2" });
    await expect(store.load()).rejects.toMatchObject({ name: "ProviderClientChangedError" });
  });

  it("refuses to load a secret whose client_secret changed since its credentials were first read: the runtime refreshes with the old one", async () => {
    const { store, secrets } = setup();
    await store.credentials();
    await new ProviderSecretClient({ secrets: secrets.client, secretId: secrets.secretId }).put({ ...SECRET, client_secret: "csecret-2" });
    await expect(store.load()).rejects.toMatchObject({ name: "ProviderClientChangedError" });
  });

  it("deletes the shared access token when a save has none, rather than leave the previous one for every container", async () => {
    const { store, make, accessItem } = setup();
    await store.save({ refreshToken: "rt-1", accessToken: "at-1" });
    await store.save({ refreshToken: "rt-1" });
    expect(await accessItem()).toBeUndefined();
    expect(await make().load()).toEqual({ refreshToken: "rt-1" });
  });

  it("stamps the shared access-token item with its save's time and lets it expire a day after its access token does, or after the save when the token names no expiry", async () => {
    const { store, clock, accessItem } = setup();
    const expiresAt = clock.now() + 3 * 86_400_000;
    clock.advance(1_000);
    await store.save({ refreshToken: "rt-1", accessToken: "at-1", accessTokenExpiresAt: expiresAt });
    expect((await accessItem())?.["updatedAt"]).toBe(new Date(clock.now()).toISOString());
    // DynamoDB's TTL is in epoch seconds; an item it removed before its token expired would cost every container a refresh.
    expect((await accessItem())?.["ttl"]).toBe(Math.ceil((expiresAt + 86_400_000) / 1000));
    clock.advance(5_000);
    await store.save({ refreshToken: "rt-1", accessToken: "at-2" });
    expect((await accessItem())?.["ttl"]).toBe(Math.ceil((clock.now() + 86_400_000) / 1000));
  });

  it("keeps the client its credentials were first read with: a secret naming another one is refused even after credentials() re-read it", async () => {
    const { store, secrets, clock } = setup();
    await store.credentials();
    await new ProviderSecretClient({ secrets: secrets.client, secretId: secrets.secretId }).put({ ...SECRET, client_id: "cid-2", refresh_token: "rt-of-cid-2" });
    // The cache expires; the runtime cache sees the new client (and rebuilds), but this store's runtime still refreshes with the first.
    clock.advance(60_000);
    expect((await store.credentials()).client_id).toBe("cid-2");
    await expect(store.load()).rejects.toMatchObject({ name: "ProviderClientChangedError" });
  });

  it("names the bad fields of a malformed secret without echoing any value", async () => {
    const { store } = setup({ client_id: "cid", client_secret: "", refresh_token: "super-secret-value" });
    const error = await store.credentials().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SecretFormatError);
    expect(error).toMatchObject({ fields: ["client_secret", "pii_salt"] });
    expect(String((error as Error).message)).not.toContain("super-secret-value");
  });

  it("postpones a refresh while the secret holds SECRET_VERSIONS_PER_DAY_LIMIT versions of the last 24 hours", async () => {
    const { store, secrets, clock } = setup();
    secrets.now = () => clock.now();
    // The first version (from setup) was made at the real time, after the test clock's: it counts as recent.
    for (let i = 1; i < SECRET_VERSIONS_PER_DAY_LIMIT - 1; i += 1) await store.save({ refreshToken: `rt-${i + 1}` });
    await expect(store.beforeRefresh()).resolves.toBeUndefined();
    await store.save({ refreshToken: "rt-at-limit" });
    const refused = await store.beforeRefresh().catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(SecretVersionQuotaError);
    expect(refused).toMatchObject({ recentVersions: SECRET_VERSIONS_PER_DAY_LIMIT, limit: SECRET_VERSIONS_PER_DAY_LIMIT });
    expect((refused as Error).message).not.toContain("rt-");
    // Two versions of margin under Secrets Manager's quota of about 100 (docs/spec-gaps.md, Secret versions): what can
    // land between this check and its write, a rotation's placeholder or an onboarding. Closer, a save could be refused.
    expect(100 - SECRET_VERSIONS_PER_DAY_LIMIT).toBe(2);
    // A day later those versions no longer count.
    clock.advance(86_400_001);
    await expect(store.beforeRefresh()).resolves.toBeUndefined();
  });

  it("refuses an early refresh (the access token still works) from SECRET_VERSIONS_EARLY_REFRESH_LIMIT versions on", async () => {
    const { store, secrets, clock } = setup();
    secrets.now = () => clock.now();
    // The first version (from setup) counts as recent, as above.
    for (let i = 1; i < SECRET_VERSIONS_EARLY_REFRESH_LIMIT - 1; i += 1) await store.save({ refreshToken: `rt-${i + 1}` });
    await expect(store.beforeRefresh(true)).resolves.toBeUndefined();
    await store.save({ refreshToken: "rt-at-early-limit" });
    const refused = await store.beforeRefresh(true).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(SecretVersionQuotaError);
    expect(refused).toMatchObject({ recentVersions: SECRET_VERSIONS_EARLY_REFRESH_LIMIT, limit: SECRET_VERSIONS_EARLY_REFRESH_LIMIT, early: true });
    expect((refused as Error).message).toContain("ahead of the access token's expiry only below");
    // Past the limit (a rotation's version landed since), the error counts the versions there are, against the same limit.
    await store.save({ refreshToken: "rt-past-early-limit" });
    expect(await store.beforeRefresh(true).catch((e: unknown) => e)).toMatchObject({ recentVersions: SECRET_VERSIONS_EARLY_REFRESH_LIMIT + 1, limit: SECRET_VERSIONS_EARLY_REFRESH_LIMIT });
    // A refresh of an expired token still goes ahead: the early limit only stops refreshes that can wait.
    await expect(store.beforeRefresh(false)).resolves.toBeUndefined();
  });

  it("writes a rotation's version with its request token and labels", async () => {
    const { store, secrets } = setup();
    await store.forRotation({ clientRequestToken: "rot-1", stages: ["AWSCURRENT", "AWSPENDING"] }).save({ refreshToken: "rt-2", accessToken: "at-2" });
    expect(secrets.stagesOf("rot-1")).toEqual(["AWSCURRENT", "AWSPENDING"]);
    expect((await store.load())?.accessToken).toBe("at-2");
  });

  it("writes a rotation's version even when the provider handed back the same refresh token", async () => {
    const { store, secrets } = setup();
    // Left empty, the rotation's version would have a retried createSecret refresh again, spending the token twice.
    await store.forRotation({ clientRequestToken: "rot-same", stages: ["AWSCURRENT", "AWSPENDING"] }).save({ refreshToken: "rt-1", accessToken: "at-2" });
    expect(secrets.stagesOf("rot-same")).toEqual(["AWSCURRENT", "AWSPENDING"]);
    expect(secrets.versionCount).toBe(2);
  });
});

describe("SecretsManagerTokenStore under an OAuthTokenProvider, with 15-minute access tokens polled every minute and a daily rotation", () => {
  it("keeps every day's versions within the limit and, from the second day on, fails no poll", async () => {
    const { store, secrets, clock } = setup(SECRET, { versionsOnClock: true });
    const MINUTE = 60_000;
    const DAY = 1440 * MINUTE;
    // The provider's token endpoint: single-use refresh tokens, access tokens living 15 minutes.
    const presented: string[] = [];
    // When each secret version was made: the setup's, then one per refresh.
    const versionsAt: number[] = [clock.now()];
    let issued = 1;
    const fetch = scriptedFetch((call) => {
      presented.push((call.body as Record<string, string>).refresh_token as string);
      versionsAt.push(clock.now());
      issued += 1;
      return json(200, { access_token: jwt({ n: issued, exp: Math.floor((clock.now() + 15 * MINUTE) / 1000) }), token_type: "Bearer", refresh_token: `rt-${issued}` });
    });
    const provider = new OAuthTokenProvider({ baseUrl: "https://api.example.test", clientId: "cid", clientSecret: "csecret", store, fetch, clock });
    const failedPolls: [number, number, number] = [0, 0, 0];
    // A poll asks for the token a little into its minute (a deterministic 0-2 s), as a scheduled Lambda does.
    let seed = 7;
    const jitterMs = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) % 2_000;
    for (let minute = 0; minute < 3 * 1440; minute += 1) {
      // The daily rotation (TOKEN_ROTATION_SCHEDULE): Secrets Manager adds its AWSPENDING placeholder version even
      // when the rotation then skips, as it does from SECRET_VERSIONS_EARLY_REFRESH_LIMIT versions on.
      if (minute % 1440 === 600) {
        secrets.startRotation(`rotation-${minute}`);
        versionsAt.push(clock.now());
      }
      const into = jitterMs();
      clock.advance(into);
      try {
        const token = await provider.getAccessToken();
        // Never handed out expired.
        const { exp } = JSON.parse(Buffer.from(token.split(".")[1] as string, "base64url").toString()) as { exp: number };
        expect(exp * 1000).toBeGreaterThan(clock.now());
      } catch (error) {
        expect(error).toBeInstanceOf(SecretVersionQuotaError);
        failedPolls[Math.floor(minute / 1440) as 0 | 1 | 2] += 1;
      }
      clock.advance(MINUTE - into);
    }
    // Without the early-refresh limit, refreshes a minute early (every 14 minutes) ran into the day's limit for about
    // two hours a day. The first day pays once for its early refreshes; after that, none fails.
    expect(failedPolls.slice(1)).toEqual([0, 0]);
    expect(failedPolls[0]).toBeLessThan(60);
    // Within the limit in every 24-hour window, and no refresh token presented twice.
    for (const end of versionsAt) {
      expect(versionsAt.filter((t) => t > end - DAY && t <= end).length).toBeLessThanOrEqual(SECRET_VERSIONS_PER_DAY_LIMIT);
    }
    expect(new Set(presented).size).toBe(presented.length);
    expect(presented.length).toBeGreaterThan(2 * 96);
  });
});

describe("recordRevokedFamily", () => {
  it("logs a mark it could not write by the failure's name, a network failure (a plain Error to Node) by its system code", async () => {
    const logger = new RecordingLogger();
    const refusal = new ReauthorizationRequiredError("refresh token refused", {}, { refusedRefreshToken: "rt-1" });
    const store = { markRevoked: () => Promise.reject(Object.assign(new Error("connect ECONNREFUSED 10.0.0.1:443"), { code: "ECONNREFUSED" })) };
    await recordRevokedFamily(store, refusal, logger, { kind: "transactions" });
    expect(logger.lines).toEqual([{ level: "warn", message: "Could not record the revoked token family", attributes: { kind: "transactions", error: "ECONNREFUSED" } }]);
  });

  it.each([
    { context: { status: 401 }, clientMayBeRefused: true },
    { context: { status: 400, errors: [{ field: null, code: "invalid_grant", message: "refresh token revoked" }] }, clientMayBeRefused: false },
  ])("marks the refused token with whether the client may be at fault, found on a refusal wrapped as a cause too ($clientMayBeRefused)", async ({ context, clientMayBeRefused }) => {
    const marks: unknown[] = [];
    const store = { markRevoked: async (refusal: unknown) => void marks.push(refusal) };
    const refusal = new ReauthorizationRequiredError("refresh token refused", context, { refusedRefreshToken: "rt-1" });
    await recordRevokedFamily(store, new Error("cycle failed", { cause: refusal }), new RecordingLogger());
    expect(marks).toEqual([{ refusedRefreshToken: "rt-1", clientMayBeRefused }]);
  });
});
