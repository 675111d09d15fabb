/**
 * The tenant's `hash` salt on AWS: the table records its fingerprint (never the salt) on the first hashed cycle, and a
 * secret whose `pii_salt` was changed by mistake is refused by every cycle, re-drive and conform-pii pass before any
 * provider call or write, until the salt is put back or the fingerprint item is deleted on purpose.
 */
import { PutSecretValueCommand } from "@aws-sdk/client-secrets-manager";
import { DeleteCommand, GetCommand, ScanCommand } from "@aws-sdk/lib-dynamodb";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DEFAULT_SECRET_CACHE_TTL_MS } from "../../shared/aws/token-store.js";
import { PiiSaltChangedError } from "../../shared/aws/errors.js";
import { piiSaltItemKey } from "../../shared/aws/keys.js";
import { piiSaltFingerprint } from "../../shared/bridge/pii.js";
import { createHarness, PII_SALT, TENANT, type Harness } from "./support/harness.js";

const OTHER_SALT = "salt-of-another-tenant-0123";
const KEY = piiSaltItemKey(TENANT);

let h: Harness;
beforeEach(async () => {
  h = await createHarness({ piiMode: "hash" });
});
afterEach(async () => h.close());

/** Every item of the table but the leases (which a refused invocation takes and gives back), by key. */
async function stateItems(): Promise<Record<string, unknown>> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await h.table.doc.send(new ScanCommand({ TableName: h.table.tableName, ConsistentRead: true, ExclusiveStartKey: start }));
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start !== undefined);
  return Object.fromEntries(items.filter((item) => !String(item["pk"]).startsWith("LEASE#")).map((item) => [`${String(item["pk"])}|${String(item["sk"])}`, item]));
}

async function saltItem(): Promise<Record<string, unknown> | undefined> {
  return (await h.table.doc.send(new GetCommand({ TableName: h.table.tableName, Key: KEY, ConsistentRead: true }))).Item;
}

/** The runbook's get-secret-value | jq '.pii_salt = …' | put-secret-value, then as long as a warm container caches it. */
async function putSalt(salt: string): Promise<void> {
  await h.secrets.client.send(new PutSecretValueCommand({ SecretId: h.secrets.secretId, SecretString: JSON.stringify({ ...h.secrets.current(), pii_salt: salt }) }));
  h.sandbox.control.advanceClock(DEFAULT_SECRET_CACHE_TTL_MS / 1_000 + 1);
}

/** A provider transport that records each call and answers none. */
function refusingFetch(): { calls: string[]; fetch: (input: string | URL | Request) => Promise<never> } {
  const calls: string[] = [];
  return {
    calls,
    fetch: async (input) => {
      calls.push(String(input));
      throw new Error("must not be called");
    },
  };
}

describe("the tenant's PII salt fingerprint in the table", () => {
  it("is recorded by the first hashed cycle: a fingerprint of the secret's pii_salt, never the salt", async () => {
    expect(await saltItem()).toBeUndefined();
    expect(await h.poller("transactions")()).toMatchObject({ status: "completed" });
    const item = await saltItem();
    expect(item).toMatchObject({ ...KEY, fingerprint: piiSaltFingerprint(PII_SALT) });
    expect(JSON.stringify(item)).not.toContain(PII_SALT);
  });

  it("is learnt, not refused, by a table that holds snapshots from a version before fingerprints", async () => {
    await h.poller("transactions")();
    await h.poller("cards")();
    await h.table.doc.send(new DeleteCommand({ TableName: h.table.tableName, Key: KEY }));
    h.published.length = 0;
    expect(await h.poller("cards")()).toMatchObject({ status: "completed", published: 0 });
    expect(await saltItem()).toMatchObject({ fingerprint: piiSaltFingerprint(PII_SALT) });
  });

  it("refuses another pii_salt in every cycle, re-drive and conform-pii pass, naming the secret and pii_salt, before any provider call or write", async () => {
    await h.poller("transactions")();
    await h.poller("cards")();
    await putSalt(OTHER_SALT);
    const state = await stateItems();
    h.published.length = 0;
    const { calls, fetch } = refusingFetch();

    for (const [kind, event] of [
      ["transactions", undefined],
      ["cards", undefined],
      ["transactions", { action: "redrive" as const }],
      ["transactions", { action: "conform-pii" as const }],
    ] as const) {
      const error = await h.poller(kind, { fetch })(event).catch((e: unknown) => e);
      expect(error, `${kind} ${event?.action ?? "cycle"}`).toBeInstanceOf(PiiSaltChangedError);
      expect(error).toMatchObject({ secretId: h.secrets.secretId, field: "pii_salt" });
      const message = (error as Error).message;
      for (const named of [h.secrets.secretId, "pii_salt", KEY.pk]) expect(message).toContain(named);
      for (const secret of [OTHER_SALT, PII_SALT, piiSaltFingerprint(OTHER_SALT), piiSaltFingerprint(PII_SALT)]) expect(message).not.toContain(secret);
    }

    expect(calls).toEqual([]);
    expect(h.published).toEqual([]);
    expect(await stateItems()).toEqual(state);
    const logged = h.output.join("\n");
    const failures = h.output.map((line) => JSON.parse(line) as Record<string, unknown>).filter((doc) => doc["message"] === "Cycle failed");
    expect(failures.map((doc) => (doc["error"] as { name?: unknown } | undefined)?.name)).toEqual(Array(4).fill("PiiSaltChangedError"));
    for (const secret of [OTHER_SALT, PII_SALT, piiSaltFingerprint(OTHER_SALT), piiSaltFingerprint(PII_SALT)]) expect(logged).not.toContain(secret);

    // The salt put back: the cycles go on, quietly.
    await putSalt(PII_SALT);
    expect(await h.poller("cards")()).toMatchObject({ status: "completed", published: 0 });
    expect(await h.poller("transactions")()).toMatchObject({ status: "completed" });
    expect(h.published).toEqual([]);
  });

  it("takes a new salt on purpose once the fingerprint item is deleted: each hashed card then publishes one pseudonym change", async () => {
    // The first walk stores the cards' snapshots and publishes nothing (EMIT_CARD_CREATED is false).
    expect(await h.poller("cards")()).toMatchObject({ status: "completed" });
    await putSalt(OTHER_SALT);
    await expect(h.poller("cards")()).rejects.toBeInstanceOf(PiiSaltChangedError);
    // The runbook: aws dynamodb delete-item --table-name <table> --key '{"pk":{"S":"PII#<tenant>"},"sk":{"S":"SALT"}}'
    await h.table.doc.send(new DeleteCommand({ TableName: h.table.tableName, Key: KEY }));
    h.published.length = 0;
    expect(await h.poller("cards")()).toMatchObject({ status: "completed" });
    expect(await saltItem()).toMatchObject({ fingerprint: piiSaltFingerprint(OTHER_SALT) });
    expect(h.published.length).toBeGreaterThan(0);
    h.published.length = 0;
    expect(await h.poller("cards")()).toMatchObject({ status: "completed", published: 0 });
  });

  it("follows the secret while the table holds no snapshots (transaction poller); the card poller, which cannot scan, refuses meanwhile", async () => {
    await h.poller("transactions")();
    const snapshots = Object.values(await stateItems()).filter((item) => String((item as Record<string, unknown>)["pk"]).startsWith("SNAP#"));
    for (const item of snapshots) {
      const { pk, sk } = item as { pk: string; sk: string };
      await h.table.doc.send(new DeleteCommand({ TableName: h.table.tableName, Key: { pk, sk } }));
    }
    await putSalt(OTHER_SALT);
    await expect(h.poller("cards")()).rejects.toBeInstanceOf(PiiSaltChangedError);
    expect(await h.poller("transactions", { fetch: refusingFetch().fetch })({ action: "conform-pii" })).toMatchObject({ status: "completed" });
    expect(await saltItem()).toMatchObject({ fingerprint: piiSaltFingerprint(OTHER_SALT) });
    expect(await h.poller("cards")()).toMatchObject({ status: "completed" });
  });

  it("is neither checked nor recorded under redact, and stays for a return to hash", async () => {
    await h.poller("transactions")();
    h.env.PII_MODE = "redact";
    await putSalt(OTHER_SALT);
    expect(await h.poller("cards")()).toMatchObject({ status: "completed" });
    expect(await saltItem()).toMatchObject({ fingerprint: piiSaltFingerprint(PII_SALT) });
    h.env.PII_MODE = "hash";
    await expect(h.poller("cards")()).rejects.toBeInstanceOf(PiiSaltChangedError);
  });
});
