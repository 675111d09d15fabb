import { createHash, randomBytes } from "node:crypto";
import { gzipSync } from "node:zlib";
import { inspect } from "node:util";
import { BatchGetCommand, BatchWriteCommand, DynamoDBDocumentClient, GetCommand, PutCommand, ScanCommand } from "@aws-sdk/lib-dynamodb";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { mockClient } from "aws-sdk-client-mock";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Logger, Snapshot, SnapshotKey } from "../../shared/bridge/ports.js";
import { DynamoBatchIncompleteError } from "../../shared/aws/errors.js";
import { DynamoSnapshotStore, TRUNCATED_SNAPSHOT_OBJECT } from "../../shared/aws/snapshot-store.js";
import { pollTransactions } from "../../shared/bridge/index.js";
import { makeRig, RecordingLogger } from "../bridge/fakes.js";
import { FakeClock } from "./support/clock.js";
import { createTestTable, type TestTable } from "./support/dynamo.js";

const snapshot = (key: SnapshotKey, object: Record<string, unknown>): Snapshot => ({
  key,
  hash: `hash-of-${key}`,
  object,
  updatedAt: "2026-03-01T12:00:00.000Z",
});

describe("DynamoSnapshotStore on DynamoDB Local", () => {
  let table: TestTable;
  beforeAll(async () => {
    table = await createTestTable();
  });
  afterAll(async () => table.drop());

  const store = (tenant = "acme", logger?: Logger) => new DynamoSnapshotStore({ doc: table.doc, tableName: table.tableName, tenant, logger });

  it("reads back what it wrote, across more keys than one BatchGetItem takes", async () => {
    const snapshots = Array.from({ length: 230 }, (_, i) => snapshot(`transaction:tx_${i}`, { id: `tx_${i}`, amount: i }));
    await store().putMany(snapshots);
    const found = await store().getMany([...snapshots.map((s) => s.key), "transaction:missing"]);
    expect(found.size).toBe(230);
    expect(found.get("transaction:tx_229")).toEqual(snapshots[229]);
    expect(found.has("transaction:missing")).toBe(false);
  });

  it.each([["2"], [-1], [1.5]])("refuses a stored sequence of %j as a corrupt item", async (sequence) => {
    const key = `transaction:seq_${String(sequence)}` as const;
    await table.doc.send(
      new PutCommand({
        TableName: table.tableName,
        Item: { pk: `SNAP#acme#${key}`, sk: "SNAP", key, hash: "h", updatedAt: "2026-03-01T12:00:00.000Z", obj: "{}", sequence },
      }),
    );
    await expect(store().getMany([key])).rejects.toMatchObject({
      name: "CorruptItemError",
      message: `Snapshot item SNAP#acme#${key} cannot be decoded`,
      tableName: table.tableName,
      key: `SNAP#acme#${key}`,
    });
  });

  it("reads back a snapshot's sequence", async () => {
    const sequenced: Snapshot = { ...snapshot("card:seq", { status: "Active" }), sequence: 7 };
    await store().putMany([sequenced]);
    expect((await store().getMany([sequenced.key])).get(sequenced.key)).toEqual(sequenced);
  });

  it.each([["hash"], ["key"]])("refuses an item without its %s as a corrupt item instead of reading it as a snapshot", async (missing) => {
    const key = `transaction:no-${missing}` as const;
    const item: Record<string, unknown> = { pk: `SNAP#acme#${key}`, sk: "SNAP", key, hash: "h", updatedAt: "2026-03-01T12:00:00.000Z", obj: "{}" };
    delete item[missing];
    await table.doc.send(new PutCommand({ TableName: table.tableName, Item: item }));
    await expect(store().getMany([key])).rejects.toMatchObject({ name: "CorruptItemError" });
  });

  it("refuses an item whose object is not JSON without carrying any of its text, in the message or the cause", async () => {
    // V8's JSON.parse message quotes the text it failed on, here a cardholder's name.
    const key = "card:not-json" as const;
    await table.doc.send(
      new PutCommand({
        TableName: table.tableName,
        Item: { pk: `SNAP#acme#${key}`, sk: "SNAP", key, hash: "h", updatedAt: "2026-03-01T12:00:00.000Z", obj: '{"cardholder_name": Jane Holder}' },
      }),
    );
    const error = await store().getMany([key]).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "CorruptItemError", cause: { name: "SyntaxError" } });
    expect(inspect(error, { depth: 5 })).not.toContain("Jane");
  });

  it("keeps tenants apart", async () => {
    await store("tenant-a").putMany([snapshot("card:c1", { status: "Active" })]);
    expect((await store("tenant-b").getMany(["card:c1"])).size).toBe(0);
  });

  it("replaces a snapshot and accepts the same key twice in one write (last wins)", async () => {
    await store().putMany([snapshot("card:c2", { status: "Active" }), snapshot("card:c2", { status: "Suspended" })]);
    expect((await store().getMany(["card:c2", "card:c2"])).get("card:c2")?.object).toEqual({ status: "Suspended" });
  });

  it("stores large objects gzip-compressed and reads them back intact", async () => {
    const lineItems = Array.from({ length: 400 }, (_, i) => ({ id: `li_${i}`, description: `Line item number ${i}`, amount: i * 1.5 }));
    const large = snapshot("transaction:big", { id: "big", line_items: lineItems, note: "ünïcødé" });
    await store().putMany([large]);
    const raw = await table.doc.send(new GetCommand({ TableName: table.tableName, Key: { pk: "SNAP#acme#transaction:big", sk: "SNAP" } }));
    expect(raw.Item?.objz).toBeInstanceOf(Uint8Array);
    expect(raw.Item?.obj).toBeUndefined();
    expect((raw.Item?.objz as Uint8Array).byteLength).toBeLessThan(JSON.stringify(large.object).length / 3);
    expect((await store().getMany(["transaction:big"])).get("transaction:big")).toEqual(large);
  });

  it("stores an object too large for an item even compressed hash-only, with a marker instead of the object", async () => {
    // Random text barely compresses: ~560 KB of base64 stays above 400 KB gzipped.
    const huge = snapshot("transaction:huge", { id: "huge", blob: randomBytes(420 * 1024).toString("base64") });
    const logger = new RecordingLogger();
    await store("acme", logger).putMany([huge, snapshot("transaction:small", { id: "small" })]);
    const found = await store().getMany(["transaction:huge", "transaction:small"]);
    expect(found.get("transaction:huge")).toEqual({ ...huge, object: TRUNCATED_SNAPSHOT_OBJECT });
    expect(found.get("transaction:small")?.object).toEqual({ id: "small" });
    // The item records the compressed size it could not hold, and the operator is warned of the one key cut.
    const stored = await table.doc.send(new GetCommand({ TableName: table.tableName, Key: { pk: "SNAP#acme#transaction:huge", sk: "SNAP" } }));
    expect(stored.Item?.truncatedFromBytes).toBeGreaterThan(400 * 1024);
    expect(logger.lines).toEqual([
      {
        level: "warn",
        message: "Snapshot too large for DynamoDB even compressed; stored hash-only",
        attributes: { key: "transaction:huge", compressedBytes: stored.Item?.truncatedFromBytes },
      },
    ]);
  });

  it("keeps an object that gzips to 390 KiB whole and stores one a byte larger hash-only, leaving room for the item's keys", async () => {
    // Text that does not compress, made from a fixed seed so the sizes below are the same on every run.
    const noise = Array.from({ length: 12_500 }, (_, i) => createHash("sha256").update(`seed-${i}`).digest("base64")).join("");
    const sized = (length: number) => ({ id: "edge", blob: noise.slice(0, length) });
    const gzipped = (length: number) => gzipSync(JSON.stringify(sized(length))).byteLength;
    // The shortest blob whose object gzips to at least `bytes`.
    const reaching = (bytes: number) => {
      let low = 0;
      let high = noise.length;
      while (low < high) {
        const middle = (low + high) >> 1;
        if (gzipped(middle) < bytes) low = middle + 1;
        else high = middle;
      }
      return low;
    };
    const limit = 390 * 1024;
    const [fits, over] = [reaching(limit), reaching(limit + 1)];
    expect([gzipped(fits), gzipped(over)]).toEqual([limit, limit + 1]);
    const kept = snapshot("transaction:gz-fits", sized(fits));
    const cut = snapshot("transaction:gz-over", sized(over));
    await store().putMany([kept, cut]);
    const found = await store().getMany([kept.key, cut.key]);
    expect(found.get(kept.key)).toEqual(kept);
    expect(found.get(cut.key)).toEqual({ ...cut, object: TRUNCATED_SNAPSHOT_OBJECT });
    const stored = await table.doc.send(new GetCommand({ TableName: table.tableName, Key: { pk: `SNAP#acme#${cut.key}`, sk: "SNAP" } }));
    expect(stored.Item?.truncatedFromBytes).toBe(limit + 1);
  });

  it("stores an object above 2 KB gzip-compressed and one of 2 KB or less as JSON text", async () => {
    // An object whose JSON is exactly `bytes` long.
    const sized = (bytes: number) => ({ id: "x", note: "n".repeat(bytes - JSON.stringify({ id: "x", note: "" }).length) });
    const small = snapshot("transaction:two-kb", sized(2_048));
    const above = snapshot("transaction:three-kb", sized(3_072));
    await store().putMany([small, above]);
    const item = async (key: string) =>
      (await table.doc.send(new GetCommand({ TableName: table.tableName, Key: { pk: `SNAP#acme#${key}`, sk: "SNAP" } }))).Item;
    expect((await item(small.key))?.obj).toBe(JSON.stringify(small.object));
    expect((await item(above.key))?.objz).toBeInstanceOf(Uint8Array);
    expect((await item(above.key))?.obj).toBeUndefined();
    expect(await store().getMany([small.key, above.key])).toEqual(new Map([[small.key, small], [above.key, above]]));
  });

  it("compresses above the threshold it is given instead of the 2 KB default", async () => {
    const small = snapshot("transaction:low-threshold", { id: "x", note: "n".repeat(64) });
    await new DynamoSnapshotStore({ doc: table.doc, tableName: table.tableName, tenant: "acme", compressAboveBytes: 16 }).putMany([small]);
    const raw = await table.doc.send(new GetCommand({ TableName: table.tableName, Key: { pk: `SNAP#acme#${small.key}`, sk: "SNAP" } }));
    expect(raw.Item?.objz).toBeInstanceOf(Uint8Array);
    expect((await store().getMany([small.key])).get(small.key)).toEqual(small);
  });

  it("measures the threshold in UTF-8 bytes, as DynamoDB sizes an item, not in characters of the JSON", async () => {
    // 1,100 two-byte characters: about 1.1 K characters of JSON, but about 2.2 KB of it.
    const accented = snapshot("transaction:accented", { id: "x", note: "é".repeat(1_100) });
    const json = JSON.stringify(accented.object);
    expect([json.length <= 2_048, Buffer.byteLength(json) > 2_048]).toEqual([true, true]);
    await store().putMany([accented]);
    const raw = await table.doc.send(new GetCommand({ TableName: table.tableName, Key: { pk: `SNAP#acme#${accented.key}`, sk: "SNAP" } }));
    expect(raw.Item?.objz).toBeInstanceOf(Uint8Array);
    expect(raw.Item?.obj).toBeUndefined();
    expect((await store().getMany([accented.key])).get(accented.key)).toEqual(accented);
  });

  it("keeps an object whose JSON is above the item limit whole when it fits compressed, not hash-only", async () => {
    // ~480 KB of JSON that gzips to a few KB: only the compressed size decides whether the object is kept.
    const lineItems = Array.from({ length: 8_000 }, (_, i) => ({ id: `li_${i}`, description: "Office supplies", amount: 12.5 }));
    const large = snapshot("transaction:compressible", { id: "compressible", line_items: lineItems });
    expect(Buffer.byteLength(JSON.stringify(large.object))).toBeGreaterThan(400 * 1024);
    await store().putMany([large]);
    expect((await store().getMany([large.key])).get(large.key)).toEqual(large);
  });

  it("walks its tenant's snapshots only, past quarantine records, leases and tokens, with full pages until the end", async () => {
    const tenant = "walker";
    const others = [
      ...Array.from({ length: 40 }, (_, i) => ({ pk: `QUAR#${tenant}`, sk: `record-${i}`, kind: "transaction", reason: "validation: x" })),
      { pk: `LEASE#${tenant}#cycle#transactions`, sk: "LEASE", owner: "x" },
      { pk: `TOKEN#${tenant}`, sk: "ACCESS", token: "x" },
      { pk: `SNAP#${tenant}#transaction:odd`, sk: "NOT-A-SNAPSHOT" },
    ];
    for (let i = 0; i < others.length; i += 25) {
      const batch = others.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } }));
      await table.doc.send(new BatchWriteCommand({ RequestItems: { [table.tableName]: batch } }));
    }
    await store(`${tenant}-2`).putMany([snapshot("card:CA1", { status: "Active" })]);
    const mine = Array.from({ length: 23 }, (_, i) => snapshot(`transaction:w${i}`, { i }));
    await store(tenant).putMany(mine);

    const pages: { snapshots: readonly Snapshot[]; cursor?: string }[] = [];
    for (let cursor: string | undefined, first = true; first || cursor !== undefined; first = false) {
      const page = await store(tenant).scan({ limit: 5, ...(cursor === undefined ? {} : { cursor }) });
      pages.push(page);
      cursor = page.cursor;
    }
    expect(pages.flatMap((p) => p.snapshots).sort((a, b) => a.key.localeCompare(b.key))).toEqual(mine.sort((a, b) => a.key.localeCompare(b.key)));
    expect(pages.slice(0, -1).map((p) => p.snapshots.length)).toEqual(pages.slice(0, -1).map(() => 5));
  });

  it("lets the engine get past a transaction too large to snapshot: no event on an identical re-pull, changed on a change", async () => {
    const rig = makeRig({}, { snapshots: store("engine") });
    const txn = rig.provider.addTransaction({ memo: randomBytes(420 * 1024).toString("base64") });
    // The first cycle publishes and snapshots, then loses the acknowledge: the next cycle pulls the same data.
    let failAck = true;
    rig.provider.beforeCall = (call) => {
      if (call.op === "acknowledgeTransactions" && failAck) {
        failAck = false;
        throw new Error("connection reset");
      }
    };
    await pollTransactions(rig.deps).catch(() => undefined);
    expect(rig.publisher.ofType("transaction.created")).toHaveLength(1);

    const second = await pollTransactions(rig.deps);
    expect(second.outcome).toBe("complete");
    expect(rig.publisher.events).toHaveLength(1);
    expect(rig.provider.pending()).toEqual([]);

    rig.provider.changeTransaction(txn.id, { merchant_name: "Renamed" });
    await pollTransactions(rig.deps);
    const changed = rig.publisher.ofType("transaction.changed");
    expect(changed).toHaveLength(1);
    expect(changed[0]?.detail.data.changes).toContainEqual({ path: "/_snapshot_truncated", before: true, after: null });
    expect(changed[0]?.detail.data.changes).toContainEqual(expect.objectContaining({ path: "/merchant_name", after: "Renamed" }));
  });
});

describe("DynamoSnapshotStore batching and retries", () => {
  const doc = DynamoDBDocumentClient.from(new DynamoDBClient({ region: "eu-west-1" }));
  const make = (clock = new FakeClock()) =>
    new DynamoSnapshotStore({ doc, tableName: "t", tenant: "acme", clock, backoff: { random: () => 0.5, maxAttempts: 4 } });

  it("retries only the unprocessed keys, with a backoff between attempts", async () => {
    const mock = mockClient(doc);
    const item = { pk: "SNAP#acme#card:a", sk: "SNAP", key: "card:a", hash: "h", updatedAt: "t", obj: "{}" };
    const itemB = { ...item, pk: "SNAP#acme#card:b", key: "card:b" };
    mock
      .on(BatchGetCommand)
      .resolvesOnce({ Responses: { t: [item] }, UnprocessedKeys: { t: { Keys: [{ pk: itemB.pk, sk: "SNAP" }] } } })
      .resolvesOnce({ Responses: { t: [itemB] } });
    const clock = new FakeClock();
    const found = await make(clock).getMany(["card:a", "card:b"]);
    expect([...found.keys()].sort()).toEqual(["card:a", "card:b"]);
    const second = mock.commandCalls(BatchGetCommand)[1]?.args[0].input;
    expect(second?.RequestItems?.t?.Keys).toEqual([{ pk: itemB.pk, sk: "SNAP" }]);
    expect(clock.sleeps).toHaveLength(1);
    mock.restore();
  });

  it("reads with strongly consistent BatchGetItem calls, so a cycle sees every snapshot the cycle before it wrote", async () => {
    const mock = mockClient(doc);
    mock.on(BatchGetCommand).resolves({ Responses: { t: [] } });
    await make().getMany(["card:a"]);
    expect(mock.commandCalls(BatchGetCommand)[0]?.args[0].input.RequestItems?.t?.ConsistentRead).toBe(true);
    mock.restore();
  });

  it("gives up on keys that stay unprocessed with a typed error, instead of retrying until the invocation times out", async () => {
    const mock = mockClient(doc);
    let calls = 0;
    // Unprocessed for 9 calls: a store that kept retrying past its 4 attempts would get the key at call 10.
    mock.on(BatchGetCommand).callsFake((input: { RequestItems: Record<string, { Keys: unknown[] }> }) =>
      ++calls < 10 ? { Responses: { t: [] }, UnprocessedKeys: { t: { Keys: input.RequestItems.t?.Keys } } } : { Responses: { t: [] } },
    );
    const clock = new FakeClock();
    const error = await make(clock)
      .getMany(["card:a"])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DynamoBatchIncompleteError);
    expect(error).toMatchObject({ name: "DynamoBatchIncompleteError", operation: "BatchGetItem", remaining: 1, attempts: 4 });
    expect(mock.commandCalls(BatchGetCommand)).toHaveLength(4);
    expect(clock.sleeps).toHaveLength(3);
    mock.restore();
  });

  it("counts only rounds that got nothing through towards giving up: steady partial throttling still drains the batch", async () => {
    const mock = mockClient(doc);
    // One item through per round: 10 rounds for 10 items, more than the 4 attempts allowed, each of them progress.
    mock.on(BatchWriteCommand).callsFake((input: { RequestItems: Record<string, unknown[]> }) => ({ UnprocessedItems: { t: input.RequestItems.t?.slice(1) } }));
    mock.on(BatchGetCommand).callsFake((input: { RequestItems: Record<string, { Keys: { pk: string }[] }> }) => {
      const [taken, ...left] = input.RequestItems.t?.Keys ?? [];
      const key = taken!.pk.replace("SNAP#acme#", "");
      return { Responses: { t: [{ pk: taken!.pk, sk: "SNAP", key, hash: "h", updatedAt: "t", obj: "{}" }] }, UnprocessedKeys: { t: { Keys: left } } };
    });
    const keys = Array.from({ length: 10 }, (_, i) => `card:${i}` as SnapshotKey);
    const clock = new FakeClock();
    await make(clock).putMany(keys.map((key) => snapshot(key, {})));
    expect(mock.commandCalls(BatchWriteCommand)).toHaveLength(10);
    expect([...(await make(clock).getMany(keys)).keys()].sort()).toEqual([...keys].sort());
    expect(mock.commandCalls(BatchGetCommand)).toHaveLength(10);
    // After progress the backoff starts again at its first step.
    expect(Math.max(...clock.sleeps)).toBeLessThanOrEqual(50);
    mock.restore();
  });

  it("sends at most 100 keys per BatchGetItem and 25 items per BatchWriteItem", async () => {
    const mock = mockClient(doc);
    mock.on(BatchGetCommand).resolves({ Responses: { t: [] } });
    mock.on(BatchWriteCommand).resolves({});
    const keys = Array.from({ length: 250 }, (_, i) => `card:${i}` as SnapshotKey);
    await make().getMany(keys);
    await make().putMany(keys.map((key) => snapshot(key, {})));
    expect(mock.commandCalls(BatchGetCommand).map((c) => c.args[0].input.RequestItems?.t?.Keys?.length)).toEqual([100, 100, 50]);
    expect(mock.commandCalls(BatchWriteCommand).map((c) => c.args[0].input.RequestItems?.t?.length)).toEqual(
      [...Array(10).fill(25)],
    );
    mock.restore();
  });

  it("retries a batch DynamoDB throttled as a whole (it then answers an error, not every entry unprocessed), with backoff", async () => {
    const mock = mockClient(doc);
    // As the SDK surfaces it once its own attempts are spent.
    const throttled = () =>
      Object.assign(new Error("throughput exceeded"), { name: "ProvisionedThroughputExceededException", $fault: "client", $metadata: { httpStatusCode: 400, attempts: 3 } });
    mock.on(BatchWriteCommand).rejectsOnce(throttled()).resolves({});
    mock.on(BatchGetCommand).rejectsOnce(throttled()).resolves({ Responses: { t: [] } });
    const clock = new FakeClock();
    await make(clock).putMany([snapshot("card:a", {})]);
    expect(await make(clock).getMany(["card:a"])).toEqual(new Map());
    expect(mock.commandCalls(BatchWriteCommand)).toHaveLength(2);
    expect(mock.commandCalls(BatchGetCommand)).toHaveLength(2);
    expect(clock.sleeps).toHaveLength(2);
    // A refusal that no retry changes fails at once.
    mock.on(BatchWriteCommand).rejects(Object.assign(new Error("denied"), { name: "AccessDeniedException", $fault: "client", $metadata: { httpStatusCode: 400 } }));
    await expect(make(clock).putMany([snapshot("card:a", {})])).rejects.toMatchObject({ name: "AccessDeniedException" });
    expect(mock.commandCalls(BatchWriteCommand)).toHaveLength(3);
    mock.restore();
  });

  it("hands its logger to its batch calls: a retried batch is warned of", async () => {
    const mock = mockClient(doc);
    mock.on(BatchWriteCommand).rejectsOnce(Object.assign(new Error("throughput exceeded"), { name: "ProvisionedThroughputExceededException", $fault: "client", $metadata: {} })).resolves({});
    const logger = new RecordingLogger();
    await new DynamoSnapshotStore({ doc, tableName: "t", tenant: "acme", clock: new FakeClock(), backoff: { random: () => 0.5 }, logger }).putMany([snapshot("card:a", {})]);
    expect(logger.lines.map((line) => line.message)).toEqual(["DynamoDB batch call throttled or failed, retrying"]);
    mock.restore();
  });

  it("starts no batch after one failed, and reports the failure only once the batches in flight have ended", async () => {
    const mock = mockClient(doc);
    let calls = 0;
    mock.on(BatchWriteCommand).callsFake(async (input: { RequestItems: Record<string, unknown[]> }) => {
      const call = ++calls;
      await new Promise((resolve) => setTimeout(resolve, 5));
      if (call === 1) throw Object.assign(new Error("denied"), { name: "AccessDeniedException", $fault: "client", $metadata: { httpStatusCode: 400 } });
      // The second batch is retried: it is still writing when the first has failed.
      return call === 2 ? { UnprocessedItems: { t: input.RequestItems.t?.slice(0, 1) } } : {};
    });
    const snapshots = Array.from({ length: 200 }, (_, i) => snapshot(`transaction:tx_${i}`, {}));
    await expect(make().putMany(snapshots)).rejects.toMatchObject({ name: "AccessDeniedException" });
    const atRejection = mock.commandCalls(BatchWriteCommand).length;
    // The four batches started together (the store's concurrency), and the second one's retry; none of the other four.
    expect(atRejection).toBe(5);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(mock.commandCalls(BatchWriteCommand)).toHaveLength(atRejection);
    mock.restore();
  });

  it("retries unprocessed items and gives up with a typed error when they never go through", async () => {
    const mock = mockClient(doc);
    mock.on(BatchWriteCommand).callsFake((input: { RequestItems: Record<string, unknown[]> }) => ({ UnprocessedItems: input.RequestItems }));
    const clock = new FakeClock();
    const error = await make(clock)
      .putMany([snapshot("card:a", {})])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DynamoBatchIncompleteError);
    expect(error).toMatchObject({ name: "DynamoBatchIncompleteError", operation: "BatchWriteItem", remaining: 1, attempts: 4 });
    expect(mock.commandCalls(BatchWriteCommand)).toHaveLength(4);
    expect(clock.sleeps).toHaveLength(3);
    expect(clock.sleeps[1]).toBeGreaterThan(clock.sleeps[0] as number);
    mock.restore();
  });
});

describe("DynamoSnapshotStore scan requests", () => {
  const doc = DynamoDBDocumentClient.from(new DynamoDBClient({ region: "eu-west-1" }));
  const make = (tenant = "acme", tableName = "t") => new DynamoSnapshotStore({ doc, tableName, tenant });
  const item = { pk: "SNAP#acme#card:a", sk: "SNAP", key: "card:a", hash: "h", updatedAt: "t", obj: "{}" };

  it("reads strongly consistently (a pass must see every write before it) and only the tenant's snapshot items", async () => {
    const mock = mockClient(doc);
    // The last item read is a quarantine record: the cursor is where the Scan stopped, whatever the item there.
    const stoppedAt = { pk: "QUAR#acme", sk: "0b7c1c36" };
    mock.on(ScanCommand).resolvesOnce({ Items: [item], LastEvaluatedKey: stoppedAt }).resolves({ Items: [] });
    const page = await make().scan({ limit: 1 });
    expect(page.snapshots.map((s) => s.key)).toEqual(["card:a"]);
    await make().scan({ limit: 1, cursor: page.cursor as string });
    expect(mock.commandCalls(ScanCommand).map((c) => c.args[0].input)).toEqual([
      {
        TableName: "t",
        ConsistentRead: true,
        Limit: 1,
        FilterExpression: "begins_with(pk, :prefix) AND sk = :sk",
        ExpressionAttributeValues: { ":prefix": "SNAP#acme#", ":sk": "SNAP" },
      },
      {
        TableName: "t",
        ConsistentRead: true,
        Limit: 1,
        FilterExpression: "begins_with(pk, :prefix) AND sk = :sk",
        ExpressionAttributeValues: { ":prefix": "SNAP#acme#", ":sk": "SNAP" },
        ExclusiveStartKey: stoppedAt,
      },
    ]);
    mock.restore();
  });

  it("refuses its cursor on another tenant's store and on another table's, without sending a Scan", async () => {
    const mock = mockClient(doc);
    mock.on(ScanCommand).resolvesOnce({ Items: [item], LastEvaluatedKey: { pk: "SNAP#acme#card:a", sk: "SNAP" } });
    const { cursor } = await make().scan({ limit: 1 });
    expect(cursor).toEqual(expect.any(String));
    await expect(make("globex").scan({ limit: 1, cursor })).rejects.toMatchObject({ name: "SnapshotCursorError" });
    await expect(make("acme", "other-table").scan({ limit: 1, cursor })).rejects.toMatchObject({ name: "SnapshotCursorError" });
    // The key alone, as cursors were before they named their tenant and table, is refused too.
    const bare = Buffer.from(JSON.stringify({ pk: "SNAP#acme#card:a", sk: "SNAP" })).toString("base64url");
    await expect(make().scan({ limit: 1, cursor: bare })).rejects.toMatchObject({ name: "SnapshotCursorError" });
    // Nor one with a member this store never writes, or an empty key part (DynamoDB would refuse the start key).
    const own = JSON.parse(Buffer.from(cursor as string, "base64url").toString("utf8")) as Record<string, unknown>;
    for (const forged of [{ ...own, extra: 1 }, { ...own, pk: "" }, { ...own, sk: "" }]) {
      await expect(make().scan({ limit: 1, cursor: Buffer.from(JSON.stringify(forged)).toString("base64url") })).rejects.toMatchObject({ name: "SnapshotCursorError" });
    }
    expect(mock.commandCalls(ScanCommand)).toHaveLength(1);
    mock.restore();
  });

  it("keeps a page within its limit when a Scan call finds more snapshots than the page has room for, resuming after the last one taken", async () => {
    const mock = mockClient(doc);
    const snap = (id: string) => ({ ...item, pk: `SNAP#acme#card:${id}`, key: `card:${id}` });
    mock
      .on(ScanCommand)
      .resolvesOnce({ Items: [snap("a")], LastEvaluatedKey: { pk: snap("a").pk, sk: "SNAP" } })
      .resolvesOnce({ Items: [snap("b"), snap("c"), snap("d")], LastEvaluatedKey: { pk: snap("d").pk, sk: "SNAP" } })
      .resolves({ Items: [] });
    const page = await make().scan({ limit: 3 });
    expect(page.snapshots.map((s) => s.key)).toEqual(["card:a", "card:b", "card:c"]);
    await make().scan({ limit: 3, cursor: page.cursor as string });
    // The next page starts after card:c, the last snapshot taken, not after card:d, where the Scan stopped.
    expect(mock.commandCalls(ScanCommand)[2]?.args[0].input.ExclusiveStartKey).toEqual({ pk: snap("c").pk, sk: "SNAP" });
    mock.restore();
  });

  it("reads a walk in Scan calls of a whole page each, however many other items sit between the snapshots", async () => {
    // A table in Scan order: a page's worth of snapshots but one, the quarantine partition (contiguous in Scan order),
    // then more snapshots. Asking each further call for the rest of the page only read the quarantine one item a call.
    const items: Record<string, unknown>[] = [
      ...Array.from({ length: 99 }, (_, i) => ({ ...item, pk: `SNAP#acme#card:a${i}`, key: `card:a${i}` })),
      ...Array.from({ length: 1_000 }, (_, i) => ({ pk: "QUAR#acme", sk: `r${String(i).padStart(4, "0")}`, reason: "x" })),
      ...Array.from({ length: 50 }, (_, i) => ({ ...item, pk: `SNAP#acme#card:b${i}`, key: `card:b${i}` })),
    ];
    const mock = mockClient(doc);
    mock.on(ScanCommand).callsFake((input: { Limit: number; ExclusiveStartKey?: { pk: string; sk: string } }) => {
      const after = input.ExclusiveStartKey;
      const start = after === undefined ? 0 : items.findIndex((i) => i["pk"] === after.pk && i["sk"] === after.sk) + 1;
      const read = items.slice(start, start + input.Limit);
      const last = read.at(-1);
      return {
        Items: read.filter((i) => String(i["pk"]).startsWith("SNAP#acme#") && i["sk"] === "SNAP"),
        ...(start + read.length < items.length && last ? { LastEvaluatedKey: { pk: last["pk"], sk: last["sk"] } } : {}),
      };
    });
    const keys: string[] = [];
    const sizes: number[] = [];
    for (let cursor: string | undefined, first = true; first || cursor !== undefined; first = false) {
      const page = await make().scan({ limit: 100, ...(cursor === undefined ? {} : { cursor }) });
      keys.push(...page.snapshots.map((s) => s.key));
      sizes.push(page.snapshots.length);
      cursor = page.cursor;
    }
    expect(keys).toEqual(items.filter((i) => i["sk"] === "SNAP").map((i) => i["key"]));
    expect(Math.max(...sizes)).toBeLessThanOrEqual(100);
    // The floor: every item read once, 100 a call (1,149 items), plus the call that finds the end.
    expect(mock.commandCalls(ScanCommand).length).toBeLessThanOrEqual(Math.ceil(items.length / 100) + 1);
    mock.restore();
  });
});
