/**
 * Items and secret values written by earlier versions of the AWS adapters, as their writers built them (see the
 * commits named at each case), read by the current code: a stack upgraded in place keeps its table and secret, and
 * during a rolling deploy both versions run at once for a few minutes.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PutCommand } from "@aws-sdk/lib-dynamodb";
import { accessTokenItemKey } from "../../shared/aws/keys.js";
import { SecretsManagerTokenStore } from "../../shared/aws/token-store.js";
import { FakeClock } from "./support/clock.js";
import { createTestTable, type TestTable } from "./support/dynamo.js";
import { FakeSecretsManager } from "./support/fake-secrets-manager.js";

const SECRET = { client_id: "cid", client_secret: "csecret", refresh_token: "rt-1", pii_salt: "salt-0123456789abcdef" };

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

  it("drops a refresh token an earlier version held once the secret has a newer version (its own rule then)", async () => {
    const { make, putItem, secrets } = tokenSetup();
    const { versionId } = await make().readSecret();
    await putItem({ secretVersionId: versionId, updatedAt: "2026-11-01T00:00:00.000Z", heldRefreshToken: "rt-2", accessToken: "at-2" });
    await make().saveVersion({ refreshToken: "rt-new-family" }, { clientRequestToken: "reonboard-1", stages: ["AWSCURRENT"] });
    expect(secrets.current().refresh_token).toBe("rt-new-family");
    expect(await make().load()).toEqual({ refreshToken: "rt-new-family" });
  });
});
