/**
 * Items and secret values written by earlier versions of the AWS adapters, as their writers built them (see the
 * commits named at each case), read by the current code: a stack upgraded in place keeps its table and secret, and
 * during a rolling deploy both versions run at once for a few minutes.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gzipSync } from "node:zlib";
import { GetCommand, PutCommand } from "@aws-sdk/lib-dynamodb";
import { eventId } from "../../shared/bridge/hash.js";
import { pollTransactions } from "../../shared/bridge/transactions.js";
import type { SnapshotKey } from "../../shared/bridge/ports.js";
import { accessTokenItemKey, quarantineItemKey, snapshotItemKey } from "../../shared/aws/keys.js";
import { ProviderSecretClient } from "../../shared/aws/provider-secret.js";
import { DynamoQuarantine } from "../../shared/aws/quarantine.js";
import { DynamoSnapshotStore, TRUNCATED_SNAPSHOT_OBJECT } from "../../shared/aws/snapshot-store.js";
import { SecretsManagerTokenStore } from "../../shared/aws/token-store.js";
import { FakeClock } from "./support/clock.js";
import { createTestTable, type TestTable } from "./support/dynamo.js";
import { FakeSecretsManager, PROVIDER_SECRET as SECRET } from "./support/fake-secrets-manager.js";
import { makeRig } from "../bridge/fakes.js";


let table: TestTable;
beforeAll(async () => {
  table = await createTestTable();
});
afterAll(async () => table.drop());

let tenantCounter = 0;
const nextTenant = (): string => `upgrade-${(tenantCounter += 1)}`;

describe("the shared access-token item written by an earlier version", () => {
  function tokenSetup() {
    const tenant = nextTenant();
    const clock = new FakeClock();
    const secrets = new FakeSecretsManager("arn:secret:provider", SECRET);
    const make = () =>
      new SecretsManagerTokenStore({ secrets: secrets.client, secretId: secrets.secretId, doc: table.doc, tableName: table.tableName, tenant, clock });
    const putItem = (item: Record<string, unknown>) => table.doc.send(new PutCommand({ TableName: table.tableName, Item: { ...accessTokenItemKey(tenant), ...item } }));
    return { tenant, clock, secrets, make, putItem };
  }

  it("reads an access token of the first item shape (4272ff2: version-bound, with ttl)", async () => {
    const { make, putItem } = tokenSetup();
    const { versionId } = await make().readSecret();
    await putItem({ accessToken: "at-1", accessTokenExpiresAt: 2_000_000_000_000, scope: "s", secretVersionId: versionId, updatedAt: "2026-11-01T00:00:00.000Z", ttl: 2_000_086_400 });
    expect(await make().load()).toEqual({ refreshToken: "rt-1", accessToken: "at-1", accessTokenExpiresAt: 2_000_000_000_000, scope: "s" });
  });

  it("returns a refresh token held by a version bound to the secret version alone (68f318d, no heldOver), never the spent one", async () => {
    const { make, putItem, secrets } = tokenSetup();
    const { versionId } = await make().readSecret();
    // 68f318d's #writeAccessItem after a refused PutSecretValue: the rotated token, bound to the version it spent; no ttl.
    await putItem({ secretVersionId: versionId, updatedAt: "2026-11-01T00:00:00.000Z", heldRefreshToken: "rt-2", accessToken: "at-2", accessTokenExpiresAt: 2_000_000_000_000 });
    expect(await make().load()).toEqual({ refreshToken: "rt-2", accessToken: "at-2", accessTokenExpiresAt: 2_000_000_000_000 });
    // The next save writes the secret, which releases the held token as for a held token of this version.
    const next = make();
    await next.load();
    await next.save({ refreshToken: "rt-3", accessToken: "at-3" });
    expect(secrets.current().refresh_token).toBe("rt-3");
    expect((await make().load())?.refreshToken).toBe("rt-3");
  });

  it("returns a refresh token held over the secret's spent one by the item shape of c5cda826 (heldOver: a sha-256 hex fingerprint)", async () => {
    const { make, putItem } = tokenSetup();
    const { versionId } = await make().readSecret();
    // The fingerprint of the secret's "rt-1" as c5cda826 wrote it: the sha-256 hex of the JSON array ["rt-1"]. Read
    // another way, the held token would be ignored and the spent one presented, revoking the family.
    const heldOver = "3e1a68708fd13184aea5305127022313244a2d4bc52ceaeb96543ee55f55ddd8";
    await putItem({ secretVersionId: versionId, updatedAt: "2026-11-01T00:00:00.000Z", heldRefreshToken: "rt-2", heldOver, accessToken: "at-2", accessTokenExpiresAt: 2_000_000_000_000 });
    expect(await make().load()).toEqual({ refreshToken: "rt-2", accessToken: "at-2", accessTokenExpiresAt: 2_000_000_000_000 });
  });

  it("drops a refresh token an earlier version held once the secret has a newer version (its own rule then)", async () => {
    const { make, putItem, secrets } = tokenSetup();
    const { versionId } = await make().readSecret();
    await putItem({ secretVersionId: versionId, updatedAt: "2026-11-01T00:00:00.000Z", heldRefreshToken: "rt-2", accessToken: "at-2" });
    await make().saveVersion({ refreshToken: "rt-new-family" }, { clientRequestToken: "reonboard-1", stages: ["AWSCURRENT"] });
    expect(secrets.current().refresh_token).toBe("rt-new-family");
    expect(await make().load()).toEqual({ refreshToken: "rt-new-family" });
  });

  it("ignores a refresh token an earlier version held, still in the table, once the secret has a newer version written out of band", async () => {
    const { make, putItem, secrets } = tokenSetup();
    const { versionId } = await make().readSecret();
    await putItem({ secretVersionId: versionId, updatedAt: "2026-11-01T00:00:00.000Z", heldRefreshToken: "rt-2", accessToken: "at-2" });
    // Re-authorized by hand (the CLI): a new version, the item left as it was.
    await new ProviderSecretClient({ secrets: secrets.client, secretId: secrets.secretId }).put({ ...SECRET, refresh_token: "rt-new-family" });
    expect(await make().load()).toEqual({ refreshToken: "rt-new-family" });
  });
});

describe("snapshot items written by an earlier version", () => {
  it("reads the first item shapes (4272ff2: obj as JSON text, objz gzip, no sequence) and the hash-only marker (25fafb1), in getMany and scan", async () => {
    const tenant = nextTenant();
    const big = { id: "tx-big", note: "x".repeat(5_000) };
    const items = [
      { ...snapshotItemKey(tenant, "transaction:tx-1"), key: "transaction:tx-1", hash: "h1", updatedAt: "2026-11-01T00:00:00.000Z", obj: JSON.stringify({ id: "tx-1", b: 1, a: 2 }) },
      { ...snapshotItemKey(tenant, "transaction:tx-big"), key: "transaction:tx-big", hash: "h2", updatedAt: "2026-11-01T00:00:01.000Z", objz: new Uint8Array(gzipSync(JSON.stringify(big))) },
      { ...snapshotItemKey(tenant, "transaction:tx-huge"), key: "transaction:tx-huge", hash: "h3", updatedAt: "2026-11-01T00:00:02.000Z", obj: JSON.stringify(TRUNCATED_SNAPSHOT_OBJECT), truncatedFromBytes: 500_000 },
      { ...snapshotItemKey(tenant, "transaction:qashio_id:CT1"), key: "transaction:qashio_id:CT1", hash: "h4", updatedAt: "2026-11-01T00:00:03.000Z", obj: JSON.stringify({ id: "tx-1", qashio_id: "CT1" }) },
      { ...snapshotItemKey(tenant, "card:~walk-cursor:full"), key: "card:~walk-cursor:full", hash: "h5", updatedAt: "2026-11-01T00:00:04.000Z", obj: JSON.stringify({ next_offset: 200 }) },
    ];
    for (const Item of items) await table.doc.send(new PutCommand({ TableName: table.tableName, Item }));
    const store = new DynamoSnapshotStore({ doc: table.doc, tableName: table.tableName, tenant });
    const found = await store.getMany(items.map((item) => item.key as SnapshotKey));
    expect(found.get("transaction:tx-1")).toEqual({ key: "transaction:tx-1", hash: "h1", updatedAt: "2026-11-01T00:00:00.000Z", object: { id: "tx-1", b: 1, a: 2 } });
    expect(found.get("transaction:tx-big")?.object).toEqual(big);
    expect(found.get("transaction:tx-huge")?.object).toEqual(TRUNCATED_SNAPSHOT_OBJECT);
    expect(found.get("transaction:qashio_id:CT1")?.object).toEqual({ id: "tx-1", qashio_id: "CT1" });
    expect(found.get("card:~walk-cursor:full")?.object).toEqual({ next_offset: 200 });
    for (const snapshot of found.values()) expect(snapshot.sequence).toBeUndefined();
    const page = await store.scan({ limit: 100 });
    expect(page.snapshots.map((snapshot) => snapshot.key).sort()).toEqual(items.map((item) => item.key).sort());
  });
});

describe("quarantine items written by an earlier version", () => {
  it("lists the first item shapes (4272ff2: raw, rawz, a cut body without rawQashioId) and takes them over when found again", async () => {
    const tenant = nextTenant();
    const clock = new FakeClock();
    const ttl = Math.ceil((clock.now() + 86_400_000) / 1000);
    const big = { id: "a0000000-0000-4000-8000-000000000001", qashio_id: "CT9", note: "y".repeat(5_000) };
    const items = [
      { ...quarantineItemKey(tenant, "q-raw"), kind: "transaction", entityId: "e1", reason: "validation: x", at: "2026-11-01T00:00:00.000Z", ttl, raw: JSON.stringify({ qashio_id: "CT1" }) },
      { ...quarantineItemKey(tenant, "q-rawz"), kind: "transaction", entityId: big.id, reason: "publish: x", at: "2026-11-01T00:00:00.000Z", ttl, rawz: new Uint8Array(gzipSync(JSON.stringify(big))) },
      { ...quarantineItemKey(tenant, "q-cut"), kind: "card", reason: "validation: y", at: "2026-11-01T00:00:00.000Z", ttl, rawz: new Uint8Array(gzipSync('{"id":"CA1","na')), rawTruncatedFrom: 900_000 },
      { ...quarantineItemKey(tenant, "q-none"), kind: "card", reason: "validation: z", at: "2026-11-01T00:00:00.000Z", ttl },
    ];
    for (const Item of items) await table.doc.send(new PutCommand({ TableName: table.tableName, Item }));
    const quarantine = new DynamoQuarantine({ doc: table.doc, tableName: table.tableName, tenant, clock });
    const byId = new Map((await quarantine.list()).map((record) => [record.id, record]));
    expect(byId.get("q-raw")).toEqual({ id: "q-raw", kind: "transaction", entityId: "e1", reason: "validation: x", at: "2026-11-01T00:00:00.000Z", raw: { qashio_id: "CT1" } });
    expect(byId.get("q-rawz")?.raw).toEqual(big);
    expect(byId.get("q-cut")?.raw).toEqual({ _truncated: { bytes: 900_000 }, head: '{"id":"CA1","na' });
    expect(byId.get("q-none")?.raw).toBeUndefined();
    expect(await quarantine.size()).toBe(4);
    // Found again: held (not new), first `at` kept, body in the current form.
    expect(await quarantine.put({ id: "q-cut", kind: "card", reason: "validation: y2", at: "2026-12-01T00:00:00.000Z", raw: { id: "CA1" } })).toBe(false);
    const again = (await quarantine.list()).find((record) => record.id === "q-cut");
    expect(again).toEqual({ id: "q-cut", kind: "card", reason: "validation: y2", at: "2026-11-01T00:00:00.000Z", raw: { id: "CA1" } });
  });
});

describe("event ids of a change diffed against a snapshot an earlier version wrote", () => {
  it("are the ids that version gave the change (tenant, type, subject, before hash and version, after hash), on every re-send", async () => {
    const tenant = nextTenant();
    const snapshots = new DynamoSnapshotStore({ doc: table.doc, tableName: table.tableName, tenant });
    const rig = makeRig({ tenant }, { snapshots });
    const txn = rig.provider.addTransaction();
    await pollTransactions(rig.deps);
    // The snapshot as a version before schema 1.1 wrote it: JSON.stringify's text, no sequence.
    const key = snapshotItemKey(tenant, `transaction:${txn.id}`);
    const stored = (await table.doc.send(new GetCommand({ TableName: table.tableName, Key: key, ConsistentRead: true }))).Item as Record<string, unknown>;
    const old = { pk: key.pk, sk: key.sk, key: stored["key"], hash: stored["hash"], updatedAt: "2026-11-01T00:00:00.000Z", obj: JSON.stringify(JSON.parse(stored["obj"] as string)) };
    await table.doc.send(new PutCommand({ TableName: table.tableName, Item: old }));
    rig.provider.changeTransaction(txn.id, { memo: "after the upgrade" });
    rig.clock.advance(60_000);
    // The first send fails for now (no snapshot written), as after a crash between publish and snapshot.
    rig.publisher.reject = () => ({ reason: "throttled", retryable: true });
    await pollTransactions(rig.deps);
    rig.publisher.reject = () => undefined;
    rig.clock.advance(60_000);
    await pollTransactions(rig.deps);
    const offered = rig.publisher.offered.filter((event) => event.detail.type === "transaction.changed");
    expect(offered).toHaveLength(2);
    const after = (await snapshots.getMany([`transaction:${txn.id}`])).get(`transaction:${txn.id}`);
    const expected = eventId({ tenant, type: "transaction.changed", subjectId: txn.id, beforeHash: old.hash as string, beforeVersion: old.updatedAt, afterHash: after?.hash as string });
    expect(offered.map((event) => event.detail.id)).toEqual([expected, expected]);
    expect(offered[1]?.detail.subject.sequence).toBe(1);
    expect(after?.sequence).toBe(1);
  });
});
