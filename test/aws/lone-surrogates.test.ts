/**
 * Provider text holding a lone UTF-16 surrogate (JSON's `"\ud800"`, which no UTF-8 can hold) through the DynamoDB
 * adapters on DynamoDB Local. A record DynamoDB refused would stop every cycle at its page, for good: the quarantine
 * keeps such an id, reason and body as given, a snapshot keeps such an object, and no key the engine builds ever holds
 * one (ids are checked against their §2.1 forms first, which refuse a lone surrogate). These pin what DynamoDB Local
 * does (it takes such strings and gives them back as sent); the service itself is not reached from tests.
 */
import { GetCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { quarantineItemKey } from "../../shared/aws/keys.js";
import { DynamoQuarantine } from "../../shared/aws/quarantine.js";
import { DynamoSnapshotStore } from "../../shared/aws/snapshot-store.js";
import { pollCards, pollTransactions } from "../../shared/bridge/index.js";
import type { Snapshot } from "../../shared/bridge/ports.js";
import { makeRig } from "../bridge/fakes.js";
import { clientOverFake } from "../bridge/provider-client.js";
import { FakeClock } from "./support/clock.js";
import { createTestTable, type TestTable } from "./support/dynamo.js";

/** A lone surrogate of either half, as a JSON body from the provider may hold them. */
const HIGH = "\ud800";
const LOW = "\udc00";
const LONE = /\p{Cs}/u;

let table: TestTable;
beforeAll(async () => {
  table = await createTestTable();
});
afterAll(async () => table.drop());

describe("DynamoQuarantine with lone surrogates in a record's text", () => {
  it("stores, finds again, lists, pages, counts and deletes a record whose entityId, reason and body hold them, each kept exactly", async () => {
    const clock = new FakeClock();
    const quarantine = new DynamoQuarantine({ doc: table.doc, tableName: table.tableName, tenant: "lone-q", clock });
    const entityId = `tx-${HIGH}-${LOW}`;
    const record = {
      id: "r-lone",
      kind: "transaction" as const,
      entityId,
      reason: `validation: id: Invalid UUID (${LOW}${HIGH})`,
      raw: { id: entityId, [`memo${HIGH}`]: `a${LOW}b`, nested: [HIGH] },
      at: "2026-03-01T12:00:00Z",
    };
    // A body over 4 KB goes gzip-compressed: its text holds the surrogates too.
    const large = { ...record, id: "r-lone-gzip", raw: { id: entityId, memo: `${HIGH}${"x".repeat(5_000)}${LOW}` } };
    expect(await quarantine.put(record)).toBe(true);
    expect(await quarantine.put(large)).toBe(true);
    clock.advance(60_000);
    // Found again on a later cycle: the update path takes the same text.
    expect(await quarantine.put({ ...record, at: "2026-03-01T12:01:00Z" })).toBe(false);

    expect(await quarantine.list()).toEqual([record, large]);
    expect((await quarantine.pages({ limit: 1 }).next()).value).toEqual([record]);
    expect(await quarantine.size()).toBe(2);
    // The body is JSON text, whose lone surrogates are escapes (ASCII); the id and reason are the string as given.
    const stored = await table.doc.send(new GetCommand({ TableName: table.tableName, Key: quarantineItemKey("lone-q", "r-lone"), ConsistentRead: true }));
    expect(stored.Item).toMatchObject({ entityId, reason: record.reason, raw: JSON.stringify(record.raw) });
    expect(stored.Item?.["raw"]).toContain("\\ud800");

    await quarantine.deleteMany(["r-lone", "r-lone-gzip"]);
    expect(await quarantine.list()).toEqual([]);
    expect(await quarantine.size()).toBe(0);
  });
});

describe("DynamoSnapshotStore with lone surrogates in a snapshot's object", () => {
  it("reads back by key and by scan the object it wrote, small and gzip-compressed", async () => {
    const store = new DynamoSnapshotStore({ doc: table.doc, tableName: table.tableName, tenant: "lone-s" });
    const small: Snapshot = { key: "transaction:small", hash: "h1", object: { merchant_name: `M${HIGH}`, [`k${LOW}`]: 1 }, updatedAt: "2026-03-01T12:00:00.000Z" };
    const large: Snapshot = { key: "transaction:large", hash: "h2", object: { memo: `${LOW}${"y".repeat(5_000)}${HIGH}` }, updatedAt: "2026-03-01T12:00:00.000Z" };
    await store.putMany([small, large]);
    const found = await store.getMany([small.key, large.key]);
    expect(found.get(small.key)).toEqual(small);
    expect(found.get(large.key)).toEqual(large);
    expect([...(await store.scan({ limit: 10 })).snapshots].sort((a, b) => a.key.localeCompare(b.key))).toEqual([large, small]);
  });
});

describe("a cycle meeting provider text with lone surrogates, on DynamoDB Local", () => {
  /**
   * A rig whose snapshot store and quarantine are the DynamoDB adapters, on the rig's clock, and whose provider answers
   * as JSON text through the real client (its schema check included): a lone surrogate goes as a `\ud800` escape.
   */
  function dynamoRig(tenant: string) {
    const rig = makeRig({ tenant });
    const snapshots = new DynamoSnapshotStore({ doc: table.doc, tableName: table.tableName, tenant, clock: rig.clock });
    const quarantine = new DynamoQuarantine({ doc: table.doc, tableName: table.tableName, tenant, clock: rig.clock });
    const provider = clientOverFake(rig.provider, rig.clock);
    return { rig, snapshots, quarantine, deps: { ...rig.deps, provider, snapshots, quarantine } };
  }

  /** Every snapshot key the tenant's store holds. */
  async function snapshotKeys(store: DynamoSnapshotStore): Promise<string[]> {
    const keys: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await store.scan({ limit: 100, ...(cursor === undefined ? {} : { cursor }) });
      keys.push(...page.snapshots.map((s) => s.key));
      cursor = page.cursor;
    } while (cursor !== undefined);
    return keys;
  }

  it("quarantines the transactions whose ids hold them, acknowledges the rest, and keeps a valid one's text through its snapshot", async () => {
    const { rig, snapshots, quarantine, deps } = dynamoRig("lone-tx");
    const plain = rig.provider.addTransaction();
    const withText = rig.provider.addTransaction({ merchant_name: `Caf${HIGH}`, memo: `${LOW}` });
    const badQashioId = rig.provider.addTransaction({ qashio_id: `CT1${LOW}` });
    const badParent = rig.provider.addTransaction({ transaction_category: "refund", parent_qashio_id: `CT${HIGH}` });
    const badId = rig.provider.addTransaction();
    const loneId = `${badId.id.slice(0, -1)}${HIGH}`;
    rig.provider.rawOverrides.set(badId.id, { ...structuredClone(badId), id: loneId });

    const report = await pollTransactions(deps);
    expect(report.outcome).toBe("complete");
    // Three records, under the raw ids exactly but the one without a transaction UUID, which names none (see
    // entity-id.ts): it cannot be acknowledged and stays listed.
    expect(new Map((await quarantine.list()).map((r) => [r.entityId, r.reason.split(":")[0]]))).toEqual(
      new Map([
        [undefined, "validation"],
        [badQashioId.id, "validation"],
        [badParent.id, "validation"],
      ]),
    );
    expect(rig.provider.pending().map((t) => t.id)).toEqual([badId.id]);
    expect(rig.publisher.ofType("transaction.created").map((e) => e.detail.data.object["merchant_name"])).toEqual([plain.merchant_name, `Caf${HIGH}`]);
    // No key was built from a lone surrogate: ids are checked against their forms (§2.1) before any key is made.
    const keys = await snapshotKeys(snapshots);
    expect(keys).toContain(`transaction:${withText.id}`);
    expect(keys.filter((k) => LONE.test(k))).toEqual([]);

    // The next cycle meets the unacknowledgeable one again: found again (not counted anew), and the cycle completes.
    rig.clock.advance(60_000);
    const again = await pollTransactions(deps);
    expect(again.outcome).toBe("complete");
    expect(rig.metrics.sum("Quarantined")).toBe(3);
    expect(await quarantine.size()).toBe(3);

    // The snapshot kept the text exactly: a change is diffed against it, the lone surrogate as `before`.
    rig.provider.changeTransaction(withText.id, { merchant_name: "Cafe" });
    await pollTransactions(deps);
    const [changed] = rig.publisher.ofType("transaction.changed");
    expect(changed?.detail.data.changes).toContainEqual(expect.objectContaining({ path: "/merchant_name", before: `Caf${HIGH}`, after: "Cafe" }));
  });

  it("quarantines a card whose id holds one, naming no entity (no card id's form), and walks the rest", async () => {
    const { rig, snapshots, quarantine, deps } = dynamoRig("lone-card");
    const good = rig.provider.addCard({ card_nickname: `Nick${LOW}` });
    rig.provider.addCard({ id: `CA1${HIGH}` });
    const report = await pollCards(deps);
    expect(report.outcome).toBe("complete");
    expect((await quarantine.list()).map((r) => [r.kind, r.entityId])).toEqual([["card", undefined]]);
    const keys = await snapshotKeys(snapshots);
    expect(keys).toContain(`card:${String(good["id"])}`);
    expect(keys.filter((k) => LONE.test(k))).toEqual([]);
  });
});
