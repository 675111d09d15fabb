import { randomBytes } from "node:crypto";
import { inspect } from "node:util";
import { BatchWriteCommand, DeleteCommand, GetCommand, PutCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient, type QueryCommandInput } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { LIVE_BY_TTL_INDEX } from "../../shared/aws/keys.js";
import { DynamoLeaseLock } from "../../shared/aws/lease-lock.js";
import { DynamoQuarantine } from "../../shared/aws/quarantine.js";
import { isRedrivable, recordQashioId } from "../../shared/bridge/redrive.js";
import { FakeClock } from "./support/clock.js";
import { createTestTable, docLosingAnswersOf, type TestTable } from "./support/dynamo.js";

let table: TestTable;
beforeAll(async () => {
  table = await createTestTable();
});
afterAll(async () => table.drop());

describe("DynamoQuarantine on DynamoDB Local", () => {
  const make = (tenant: string, clock = new FakeClock()) =>
    new DynamoQuarantine({ doc: table.doc, tableName: table.tableName, tenant, clock, retentionDays: 7 });

  it("keeps one record per id, with a TTL of the retention period rounded up to the second", async () => {
    // Part way through a second: DynamoDB must not sweep the record before the retention period is over.
    const clock = new FakeClock(Date.parse("2026-03-01T12:00:00.250Z"));
    const quarantine = make("q1", clock);
    const record = { id: "r1", kind: "transaction" as const, entityId: "tx_1", reason: "invalid amount", raw: { amount: "x" }, at: "2026-03-01T12:00:00Z" };
    await quarantine.put(record);
    await quarantine.put(record);
    expect(await quarantine.list()).toEqual([record]);
    const item = await table.doc.send(new GetCommand({ TableName: table.tableName, Key: { pk: "QUAR#q1", sk: "r1" } }));
    expect(item.Item?.ttl).toBe(Math.ceil((clock.now() + 7 * 86_400_000) / 1000));
  });

  it("keeps a record 30 days by default (the deployed bridge's retention, as the docs say), and not past them", async () => {
    const clock = new FakeClock();
    const quarantine = new DynamoQuarantine({ doc: table.doc, tableName: table.tableName, tenant: "q-default-retention", clock });
    const record = { id: "r1", kind: "transaction" as const, reason: "invalid amount", raw: { amount: "x" }, at: "2026-03-01T12:00:00Z" };
    await quarantine.put(record);
    clock.advance(30 * 86_400_000);
    expect(await quarantine.list()).toEqual([record]);
    clock.advance(1_000);
    expect(await quarantine.list()).toEqual([]);
  });

  it("finds a record put again with its own `at` a second later (as the PII conform rewrites its body) again, not new", async () => {
    const clock = new FakeClock();
    const quarantine = make("q-same-at", clock);
    const record = { id: "r1", kind: "card" as const, reason: "validation: status: missing", raw: { id: "c1" }, at: "2026-03-01T12:00:00Z" };
    expect(await quarantine.put(record)).toBe(true);
    clock.advance(1_000);
    expect(await quarantine.put({ ...record, raw: { id: "c1", masked: true } })).toBe(false);
  });

  it("rejects with the put's own error when putting an expired record again fails for another reason than its condition", async () => {
    const clock = new FakeClock();
    const record = { id: "denied", kind: "card" as const, reason: "validation: status: missing", raw: { id: "c1" }, at: "2026-03-01T12:00:00Z" };
    expect(await make("q-put-denied", clock).put(record)).toBe(true);
    clock.advance(8 * 86_400_000);
    const denied = Object.assign(new Error("denied"), { name: "AccessDeniedException", $fault: "client", $metadata: { httpStatusCode: 400 } });
    const doc = {
      send: async (command: unknown) => {
        if (command instanceof PutCommand) throw denied;
        return table.doc.send(command as never);
      },
    } as unknown as DynamoDBDocumentClient;
    const quarantine = new DynamoQuarantine({ doc, tableName: table.tableName, tenant: "q-put-denied", clock, retentionDays: 7 });
    await expect(quarantine.put({ ...record, at: "2026-03-09T12:00:00Z" })).rejects.toBe(denied);
  });

  it("stores a raw body of up to 4 KB of JSON as text and a larger one gzip-compressed, both read back whole", async () => {
    const quarantine = make("q-gzip");
    // `{"note":"…"}` is 11 bytes around the note.
    const body = (bytes: number) => ({ note: "n".repeat(bytes - 11) });
    await quarantine.put({ id: "at-limit", kind: "card", reason: "invalid", raw: body(4_096), at: "2026-03-01T12:00:00Z" });
    await quarantine.put({ id: "over-limit", kind: "card", reason: "invalid", raw: body(4_097), at: "2026-03-01T12:00:00Z" });
    const stored = async (id: string) => (await table.doc.send(new GetCommand({ TableName: table.tableName, Key: { pk: "QUAR#q-gzip", sk: id } }))).Item;
    expect(await stored("at-limit")).toMatchObject({ raw: JSON.stringify(body(4_096)) });
    expect(await stored("at-limit")).not.toHaveProperty("rawz");
    expect(await stored("over-limit")).toMatchObject({ rawz: expect.any(Uint8Array) });
    expect(await stored("over-limit")).not.toHaveProperty("raw");
    expect(new Map((await quarantine.list()).map((r) => [r.id, r.raw]))).toEqual(
      new Map([
        ["at-limit", body(4_096)],
        ["over-limit", body(4_097)],
      ]),
    );
  });

  it("refuses a record whose raw body is not JSON without carrying any of its text, in the message or the cause", async () => {
    const clock = new FakeClock();
    // V8's JSON.parse message quotes the text it failed on, here a cardholder's name.
    const item = { pk: "QUAR#q-corrupt", sk: "r1", kind: "card", reason: "invalid", at: "2026-03-01T12:00:00Z", ttl: Math.ceil(clock.now() / 1000) + 3600, raw: '{"cardholder_name": Jane Holder}' };
    await table.doc.send(new PutCommand({ TableName: table.tableName, Item: item }));
    const error = await make("q-corrupt", clock).list().catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "CorruptItemError", cause: { name: "SyntaxError" } });
    expect(inspect(error, { depth: 5 })).not.toContain("Jane");
  });

  it("treats an expired record DynamoDB has not swept yet as gone, and restarts the retention of one found again", async () => {
    const clock = new FakeClock();
    const quarantine = make("q-ttl", clock);
    const record = (id: string, at: string) => ({ id, kind: "card" as const, reason: "validation: status: missing", raw: { id }, at });
    expect(await quarantine.put(record("found-again", "2026-03-01T12:00:00Z"))).toBe(true);
    expect(await quarantine.put(record("expires", "2026-03-01T12:00:00Z"))).toBe(true);
    clock.advance(5 * 86_400_000);
    // Found again after 5 of its 7 days: not new, keeps its first `at`, and holds for 7 days from now.
    expect(await quarantine.put(record("found-again", "2026-03-06T12:00:00Z"))).toBe(false);
    clock.advance(3 * 86_400_000);
    // Day 8: "expires" is past its TTL though still stored (DynamoDB Local, like DynamoDB, sweeps lazily or never).
    expect((await quarantine.list()).map((r) => [r.id, r.at])).toEqual([["found-again", "2026-03-01T12:00:00Z"]]);
    expect(await quarantine.size()).toBe(1);
    // Put again, the expired one is a new record.
    expect(await quarantine.put(record("expires", "2026-03-09T12:00:00Z"))).toBe(true);
    expect((await quarantine.list()).find((r) => r.id === "expires")?.at).toBe("2026-03-09T12:00:00Z");
  });

  it("stores a record found again whole when it was deleted just before its write, not a bare key", async () => {
    const key = { pk: "QUAR#q-race", sk: "raced" };
    // Deletes the item just before the write reaches DynamoDB, as a re-drive or a TTL sweep could.
    const doc = {
      send: async (command: unknown) => {
        if (command instanceof UpdateCommand) await table.doc.send(new DeleteCommand({ TableName: table.tableName, Key: key }));
        return table.doc.send(command as never);
      },
    } as unknown as DynamoDBDocumentClient;
    const quarantine = new DynamoQuarantine({ doc, tableName: table.tableName, tenant: "q-race", clock: new FakeClock(), retentionDays: 7 });
    const record = { id: "raced", kind: "card" as const, reason: "validation: status: missing", raw: { id: "c1" }, at: "2026-03-01T12:00:00Z" };
    expect(await quarantine.put(record)).toBe(true);
    // Found again a day later (another `at`), after the delete: new, and written whole with this `at`.
    const again = { ...record, reason: "validation: status: unknown", at: "2026-03-02T12:00:00Z" };
    expect(await quarantine.put(again)).toBe(true);
    expect(await quarantine.list()).toEqual([again]);
  });

  it("counts an expired record found again by two writers at once as new for one of them only, keeping the first `at` and the later write's reason and body", async () => {
    const clock = new FakeClock();
    const record = (at: string, raw: unknown = { id: "c1" }) => ({ id: "twice", kind: "card" as const, reason: "validation: status: missing", raw, at });
    expect(await make("q-ttl-race", clock).put(record("2026-03-01T12:00:00Z"))).toBe(true);
    clock.advance(8 * 86_400_000);
    // Another poller (or a re-drive) writes the record between this writer's refused update and its put.
    let other: Promise<boolean> | undefined;
    const doc = {
      send: async (command: unknown) => {
        if (command instanceof PutCommand && other === undefined) {
          other = make("q-ttl-race", clock).put({ ...record("2026-03-09T12:00:00Z", { id: "c1", cardholder: { name: "Ann Example" } }), reason: "validation: status: unknown" });
          await other;
        }
        return table.doc.send(command as never);
      },
    } as unknown as DynamoDBDocumentClient;
    const quarantine = new DynamoQuarantine({ doc, tableName: table.tableName, tenant: "q-ttl-race", clock, retentionDays: 7 });
    const masked = { id: "c1", cardholder: { name: "[redacted]" } };
    const added = await quarantine.put(record("2026-03-09T12:00:01Z", masked));
    expect(await other).toBe(true);
    expect(added).toBe(false);
    // Found again, so written over the other writer's: its reason and body as found last (a PII mode switch masks them).
    expect(await quarantine.list()).toEqual([record("2026-03-09T12:00:00Z", masked)]);
  });

  it("answers new for an expired record put again whose put the SDK sent again after losing DynamoDB's answer", async () => {
    const clock = new FakeClock();
    const record = (at: string) => ({ id: "again", kind: "card" as const, reason: "validation: status: missing", raw: { id: "c1" }, at });
    expect(await make("q-ttl-retried", clock).put(record("2026-03-01T12:00:00Z"))).toBe(true);
    clock.advance(8 * 86_400_000);
    const lossy = docLosingAnswersOf("PutItemCommand");
    const quarantine = new DynamoQuarantine({ doc: lossy.doc, tableName: table.tableName, tenant: "q-ttl-retried", clock, retentionDays: 7 });
    expect(await quarantine.put(record("2026-03-09T12:00:00Z"))).toBe(true);
    expect(lossy.sent()).toBe(2);
    expect((await quarantine.list()).map((r) => r.at)).toEqual(["2026-03-09T12:00:00Z"]);
  });

  it("holds a record through the last second of its TTL: listed, counted and found again, not new", async () => {
    const clock = new FakeClock();
    const quarantine = make("q-ttl-edge", clock);
    const record = { id: "edge", kind: "card" as const, reason: "validation: status: missing", raw: { id: "c1" }, at: "2026-03-01T12:00:00Z" };
    await quarantine.put(record);
    // The clock at the item's ttl second (7 days on, from a whole second).
    clock.advance(7 * 86_400_000);
    expect((await quarantine.list()).map((r) => r.id)).toEqual(["edge"]);
    expect(await quarantine.size()).toBe(1);
    expect(await quarantine.put({ ...record, at: "2026-03-08T12:00:00Z" })).toBe(false);
    expect((await quarantine.list())[0]?.at).toBe("2026-03-01T12:00:00Z");
  });

  it("lists every record of its tenant only, across Query pages, with large raw bodies intact", async () => {
    // Random text barely compresses: 24 records of ~64 KB overflow one 1 MB Query page.
    const big = { blob: randomBytes(48 * 1024).toString("base64") };
    const quarantine = make("q2");
    await Promise.all(
      Array.from({ length: 24 }, (_, i) => quarantine.put({ id: `r${i}`, kind: "card", reason: "bad", raw: big, at: "2026-03-01T12:00:00Z" })),
    );
    await make("q3").put({ id: "other", kind: "card", reason: "bad", raw: null, at: "2026-03-01T12:00:00Z" });
    const records = await quarantine.list();
    expect(records).toHaveLength(24);
    expect(records[0]?.raw).toEqual(big);
  });

  it("keeps the head of a raw body too large for an item even compressed, flagged with its size, instead of failing the write", async () => {
    const quarantine = make("q-huge");
    // Random text barely compresses: ~560 KB of base64 stays far above the 350 KB kept, even gzipped.
    // The qashio_id comes after the blob, so the kept head does not hold it.
    const raw = { id: "tx_huge", blob: randomBytes(420 * 1024).toString("base64"), qashio_id: "QSH-HUGE-1" };
    const json = JSON.stringify(raw);
    const record = { id: "huge", kind: "transaction" as const, entityId: "tx_huge", reason: "publish: oversized", raw, at: "2026-03-01T12:00:00Z" };
    expect(await quarantine.put(record)).toBe(true);
    const [held] = await quarantine.list();
    expect(held).toMatchObject({ id: "huge", entityId: "tx_huge", reason: "publish: oversized", at: record.at });
    const kept = held?.raw as { _truncated: { bytes: number }; head: string };
    expect(kept._truncated).toEqual({ bytes: Buffer.byteLength(json) });
    expect(kept.head).toBe(json.slice(0, 350 * 1024));
    expect(kept.head).not.toContain("QSH-HUGE-1");
    // Kept whole beside the cut body: the re-drive reads the transaction again by it.
    expect(recordQashioId(held?.raw)).toBe("QSH-HUGE-1");
    expect(isRedrivable(held!)).toBe(true);

    // A qashio_id too long for the item beside the cut body is not kept: the record is written all the same.
    const longId = { id: "tx_long", blob: randomBytes(420 * 1024).toString("base64"), qashio_id: randomBytes(120 * 1024).toString("base64") };
    expect(await make("q-huge-id").put({ ...record, id: "long-id", raw: longId })).toBe(true);
    const [withLongId] = await make("q-huge-id").list();
    expect((withLongId?.raw as { _truncated: unknown })._truncated).toEqual({ bytes: Buffer.byteLength(JSON.stringify(longId)) });
    expect(recordQashioId(withLongId?.raw)).toBeUndefined();

    // Found again with a body that fits: the cut body and its kept qashio_id go.
    const small = { id: "tx_huge", qashio_id: "QSH-HUGE-1" };
    expect(await quarantine.put({ ...record, raw: small, at: "2026-03-02T12:00:00Z" })).toBe(false);
    expect((await quarantine.list())[0]?.raw).toEqual(small);
  });

  it("cuts a raw body of many-byte characters at 350 KB of UTF-8, not 350 K characters, so the record still fits one item", async () => {
    // Random CJK text (3 bytes a character in UTF-8) barely compresses: 350 K characters of it stay above 400 KB gzipped.
    const bytes = randomBytes(2 * 400_000);
    const text = Array.from({ length: 400_000 }, (_, i) => String.fromCharCode(0x4e00 + (bytes.readUInt16LE(2 * i) % 0x5000))).join("");
    const record = { id: "cjk", kind: "transaction" as const, reason: "publish: oversized", raw: { memo: text }, at: "2026-03-01T12:00:00Z" };
    expect(await make("q-huge-cjk").put(record)).toBe(true);
    const [held] = await make("q-huge-cjk").list();
    const kept = held?.raw as { _truncated: { bytes: number }; head: string };
    expect(kept._truncated).toEqual({ bytes: Buffer.byteLength(JSON.stringify(record.raw)) });
    expect(Buffer.byteLength(kept.head)).toBeLessThanOrEqual(350 * 1024 + 2);
    expect(text.startsWith(kept.head.slice(9, -1))).toBe(true);
  });

  it("answers new for a record whose put the SDK sent again after losing DynamoDB's answer to its own write", async () => {
    const lossy = docLosingAnswersOf("UpdateItemCommand");
    const quarantine = new DynamoQuarantine({ doc: lossy.doc, tableName: table.tableName, tenant: "q-retried" });
    const record = { id: "r-retried", kind: "transaction" as const, reason: "publish: MalformedDetail", raw: { id: "t1" }, at: "2026-03-01T12:00:00Z" };
    expect(await quarantine.put(record)).toBe(true);
    expect(lossy.sent()).toBe(2);
    expect(await make("q-retried").list()).toEqual([record]);
  });

  it("writes a record with one request, new or found again (a card invalid on every walk costs one write per walk)", async () => {
    const clock = new FakeClock();
    const send = vi.spyOn(table.doc, "send");
    const quarantine = make("q-one-request", clock);
    const record = { id: "r1", kind: "card" as const, entityId: "ZZ1", reason: "validation: id", raw: { id: "ZZ1" }, at: "2026-03-01T12:00:00Z" };
    expect(await quarantine.put(record)).toBe(true);
    expect(send).toHaveBeenCalledTimes(1);
    clock.advance(600_000);
    expect(await quarantine.put({ ...record, at: "2026-03-01T12:10:00Z" })).toBe(false);
    expect(send).toHaveBeenCalledTimes(2);
    send.mockRestore();
    expect(await quarantine.list()).toEqual([record]);
  });

  it("cuts an entity id and a reason of any length so the record fits one item, marked as cut", async () => {
    const quarantine = make("q-long");
    const entityId = "T".repeat(420 * 1024);
    const reason = `validation: ${"r".repeat(20_000)}`;
    expect(await quarantine.put({ id: "r-long", kind: "card", entityId, reason, raw: { id: entityId }, at: "2026-03-01T12:00:00Z" })).toBe(true);
    const [stored] = await quarantine.list();
    expect(stored!.entityId).toBe(`${"T".repeat(1_024 - "…[cut]".length)}…[cut]`);
    expect(stored!.reason).toBe(`${reason.slice(0, 4_096 - "…[cut]".length)}…[cut]`);
    // Found again (its reason reworded): the update path cuts the reason the same way.
    expect(await quarantine.put({ id: "r-long", kind: "card", entityId, reason: `${reason}!`, raw: { id: "x" }, at: "2026-03-02T12:00:00Z" })).toBe(false);
    expect((await quarantine.list())[0]!.reason).toHaveLength(4_096);
    // A reason of exactly the limit is kept whole; a cut never splits a surrogate pair (an emoji at the cut goes whole).
    const exact = `validation: ${"e".repeat(4_096 - "validation: ".length)}`;
    await quarantine.put({ id: "r-exact", kind: "card", reason: exact, raw: null, at: "2026-03-01T12:00:00Z" });
    const emoji = `${"x".repeat(4_096 - "…[cut]".length - 1)}${"😀".repeat(10)}`;
    await quarantine.put({ id: "r-emoji", kind: "card", reason: emoji, raw: null, at: "2026-03-01T12:00:00Z" });
    const reasons = new Map((await quarantine.list()).map((r) => [r.id, r.reason]));
    expect(reasons.get("r-exact")).toBe(exact);
    expect(reasons.get("r-emoji")).toBe(`${"x".repeat(4_096 - "…[cut]".length - 1)}…[cut]`);
  });

  it("counts every record of its tenant only, across COUNT Query pages", async () => {
    const clock = new FakeClock();
    const quarantine = make("q4", clock);
    await Promise.all(
      Array.from({ length: 24 }, (_, i) => quarantine.put({ id: `r${i}`, kind: "card", reason: "bad", raw: null, at: "2026-03-01T12:00:00Z" })),
    );
    await make("q5").put({ id: "other", kind: "card", reason: "bad", raw: null, at: "2026-03-01T12:00:00Z" });
    // Pages of 5 entries: more than one page proves the count follows LastEvaluatedKey rather than trusting the first.
    const pages: (number | undefined)[] = [];
    const doc = {
      send: async (command: unknown) => {
        if (!(command instanceof QueryCommand)) return table.doc.send(command as never);
        const page = await table.doc.send(new QueryCommand({ ...command.input, Limit: 5 }));
        pages.push(page.Count);
        return page;
      },
    } as unknown as DynamoDBDocumentClient;
    expect(await new DynamoQuarantine({ doc, tableName: table.tableName, tenant: "q4", clock }).size()).toBe(24);
    expect(pages).toEqual([5, 5, 5, 5, 4]);
  });

  it("lists with strongly consistent Query pages, so a list right after a cycle's puts holds them", async () => {
    const quarantine = make("q-consistent");
    await putRecords(quarantine, 3);
    const send = vi.spyOn(table.doc, "send");
    expect(await quarantine.list()).toHaveLength(3);
    expect(send.mock.calls.length).toBeGreaterThan(0);
    expect(send.mock.calls.map(([command]) => (command as { input: { ConsistentRead?: boolean } }).input.ConsistentRead)).toEqual(send.mock.calls.map(() => true));
  });

  it("counts from the keys-only index, reading a few bytes an entry and no record body, live records only", async () => {
    const clock = new FakeClock();
    const quarantine = make("q-cost", clock);
    // Bodies of 48 KB of base64 (~37 KB gzip-compressed): a Query on the table reads every one, filtered, counted or not.
    const big = () => ({ blob: randomBytes(36 * 1024).toString("base64") });
    const put = (id: string) => quarantine.put({ id, kind: "card", reason: "bad", raw: big(), at: "2026-03-01T12:00:00Z" });
    await Promise.all(Array.from({ length: 20 }, (_, i) => put(`expiring${i}`)));
    clock.advance(3 * 86_400_000);
    await Promise.all(Array.from({ length: 24 }, (_, i) => put(`live${i}`)));
    await Promise.all(Array.from({ length: 6 }, (_, i) => put(`deleted${i}`)));
    await quarantine.deleteMany(Array.from({ length: 6 }, (_, i) => `deleted${i}`));
    // Day 8: the first 20 are past their TTL, not swept (DynamoDB Local never sweeps).
    clock.advance(5 * 86_400_000);
    const queries: QueryCommandInput[] = [];
    let capacity = 0;
    const doc = {
      send: async (command: unknown) => {
        if (!(command instanceof QueryCommand)) return table.doc.send(command as never);
        queries.push(command.input);
        const page = await table.doc.send(new QueryCommand({ ...command.input, ReturnConsumedCapacity: "TOTAL" }));
        capacity += page.ConsumedCapacity?.CapacityUnits ?? Number.NaN;
        return page;
      },
    } as unknown as DynamoDBDocumentClient;
    const counter = new DynamoQuarantine({ doc, tableName: table.tableName, tenant: "q-cost", clock, retentionDays: 7 });
    expect(await counter.size()).toBe(24);
    // Half a read unit, an eventually consistent read of 4 KB, holds the 24 entries; on the table, ~37 KB an item.
    expect(capacity).toBeLessThanOrEqual(0.5);
    expect(queries).toEqual([
      expect.objectContaining({ IndexName: LIVE_BY_TTL_INDEX, Select: "COUNT", KeyConditionExpression: "pk = :pk AND #ttl >= :now" }),
    ]);
    // No filter (a filter reads what it drops) and no ConsistentRead, which DynamoDB refuses on a global index.
    expect(queries[0]).not.toHaveProperty("FilterExpression");
    expect(queries[0]).not.toHaveProperty("ConsistentRead");
  });

  /** Puts `count` records, `r0`, `r1`, ...; their ids. */
  async function putRecords(quarantine: DynamoQuarantine, count: number): Promise<string[]> {
    const ids = Array.from({ length: count }, (_, i) => `r${i}`);
    await Promise.all(ids.map((id) => quarantine.put({ id, kind: "transaction", entityId: id, reason: "publish: x", raw: { qashio_id: id }, at: "2026-03-01T12:00:00Z" })));
    return ids;
  }

  it.each([1, 25, 26, 60, 101])("deletes %i records with one BatchWriteItem per 25 (a re-drive's batch, past the first four calls too), not a DeleteItem each", async (n) => {
    const quarantine = make(`q-delete-${n}`);
    const ids = await putRecords(quarantine, n + 1);
    const deleted = ids.slice(0, n);
    const send = vi.spyOn(table.doc, "send");
    // An id given twice goes once: DynamoDB refuses a call naming one key twice.
    await quarantine.deleteMany([...deleted, deleted[0]!]);
    const sent = send.mock.calls.map(([command]) => command);
    send.mockRestore();
    expect(sent.every((command) => command instanceof BatchWriteCommand)).toBe(true);
    expect(sent).toHaveLength(Math.ceil(n / 25));
    const requests = sent.map((command) => (command as BatchWriteCommand).input.RequestItems?.[table.tableName] ?? []);
    expect(requests.flat().map((request) => request.DeleteRequest?.Key?.["sk"]).sort()).toEqual([...deleted].sort());
    expect((await quarantine.list()).map((r) => r.id)).toEqual([ids[n]]);
  });

  it("sends again, with backoff, the deletes DynamoDB left unprocessed, until every record is gone", async () => {
    const clock = new FakeClock();
    let calls = 0;
    // The first call is throttled part way: DynamoDB applies its first 10 deletes and hands the rest back unprocessed.
    const doc = {
      send: async (command: unknown) => {
        if (!(command instanceof BatchWriteCommand) || calls++ > 0) return table.doc.send(command as never);
        const requests = command.input.RequestItems?.[table.tableName] ?? [];
        await table.doc.send(new BatchWriteCommand({ RequestItems: { [table.tableName]: requests.slice(0, 10) } }));
        return { UnprocessedItems: { [table.tableName]: requests.slice(10) } };
      },
    } as unknown as DynamoDBDocumentClient;
    const quarantine = new DynamoQuarantine({ doc, tableName: table.tableName, tenant: "q-unprocessed", clock, backoff: { random: () => 0.5 } });
    const ids = await putRecords(quarantine, 25);
    await quarantine.deleteMany(ids);
    expect(calls).toBe(2);
    expect(clock.sleeps).toHaveLength(1);
    expect(await quarantine.size()).toBe(0);
  });

  it("gives up on deletes that stay unprocessed with a typed error, leaving those records in place", async () => {
    const doc = {
      send: async (command: unknown) =>
        command instanceof BatchWriteCommand ? { UnprocessedItems: command.input.RequestItems } : table.doc.send(command as never),
    } as unknown as DynamoDBDocumentClient;
    const clock = new FakeClock();
    const quarantine = new DynamoQuarantine({ doc, tableName: table.tableName, tenant: "q-stuck", clock, backoff: { random: () => 0.5, maxAttempts: 3 } });
    const ids = await putRecords(quarantine, 3);
    await expect(quarantine.deleteMany(ids)).rejects.toMatchObject({ name: "DynamoBatchIncompleteError", operation: "BatchWriteItem", remaining: 3, attempts: 3 });
    expect(clock.sleeps).toHaveLength(2);
    expect(await quarantine.size()).toBe(3);
  });
});

describe("DynamoLeaseLock on DynamoDB Local", () => {
  const lockWith = (clock: FakeClock) => new DynamoLeaseLock({ doc: table.doc, tableName: table.tableName, clock });
  /** Asserts that the lease `name` is refused to another owner until `ms` from now, and granted from that very millisecond. */
  const handedOverIn = async (clock: FakeClock, name: string, ms: number) => {
    clock.advance(ms - 1);
    expect(await lockWith(clock).tryAcquire(name, 1_000)).toBeUndefined();
    clock.advance(1);
    expect(await lockWith(clock).tryAcquire(name, 1_000)).toBeDefined();
  };

  it("lets one owner hold a lease until it is released", async () => {
    const clock = new FakeClock();
    const first = await lockWith(clock).tryAcquire("acme#cycle", 10_000);
    expect(first).toBeDefined();
    expect(await lockWith(clock).tryAcquire("acme#cycle", 10_000)).toBeUndefined();
    await first?.release();
    expect(await lockWith(clock).tryAcquire("acme#cycle", 10_000)).toBeDefined();
  });

  it("hands an expired lease to a new owner, after which the old owner can neither renew nor release it", async () => {
    const clock = new FakeClock();
    const old = await lockWith(clock).tryAcquire("acme#expiring", 1_000);
    clock.advance(1_001);
    const taker = await lockWith(clock).tryAcquire("acme#expiring", 5_000);
    expect(taker).toBeDefined();
    expect(await old?.renew(5_000)).toBe(false);
    await old?.release();
    expect(await lockWith(clock).tryAcquire("acme#expiring", 5_000)).toBeUndefined();
  });

  it.each([1_000, 250])("holds a lease of %i ms until its expiresAt, and hands it over from that very millisecond", async (ttlMs) => {
    const clock = new FakeClock();
    await lockWith(clock).tryAcquire(`acme#edge-${ttlMs}`, ttlMs);
    await handedOverIn(clock, `acme#edge-${ttlMs}`, ttlMs);
  });

  it("gives up a renewal once its signal aborts, without extending the lease", async () => {
    const clock = new FakeClock();
    const lease = await lockWith(clock).tryAcquire("acme#aborted", 1_000);
    const stop = new AbortController();
    stop.abort();
    await expect(lease?.renew(60_000, stop.signal)).rejects.toMatchObject({ name: "AbortError" });
    clock.advance(1_001);
    expect(await lockWith(clock).tryAcquire("acme#aborted", 1_000)).toBeDefined();
  });

  it("holds a lease whose put the SDK sent again after losing DynamoDB's answer, rather than waiting out its own lease", async () => {
    const lossy = docLosingAnswersOf("PutItemCommand");
    const name = `retried-${randomBytes(4).toString("hex")}`;
    const handle = await new DynamoLeaseLock({ doc: lossy.doc, tableName: table.tableName }).tryAcquire(name, 60_000);
    expect(lossy.sent()).toBe(2);
    expect(handle).toBeDefined();
    expect(await new DynamoLeaseLock({ doc: table.doc, tableName: table.tableName }).tryAcquire(name, 60_000)).toBeUndefined();
    await handle!.release();
    expect(await new DynamoLeaseLock({ doc: table.doc, tableName: table.tableName }).tryAcquire(name, 60_000)).toBeDefined();
  });

  it("gives back a lease whose put landed while every answer was lost, so the next cycle need not wait out its ttl", async () => {
    const lossy = docLosingAnswersOf("PutItemCommand", 3);
    const name = `all-lost-${randomBytes(4).toString("hex")}`;
    await expect(new DynamoLeaseLock({ doc: lossy.doc, tableName: table.tableName }).tryAcquire(name, 60_000)).rejects.toMatchObject({ code: "ECONNRESET" });
    expect(lossy.sent()).toBe(3);
    expect(await new DynamoLeaseLock({ doc: table.doc, tableName: table.tableName }).tryAcquire(name, 60_000)).toBeDefined();
  });

  it("leaves another owner's lease alone when its own put fails", async () => {
    const name = `held-${randomBytes(4).toString("hex")}`;
    const held = await new DynamoLeaseLock({ doc: table.doc, tableName: table.tableName }).tryAcquire(name, 60_000);
    expect(held).toBeDefined();
    // Every answer lost: the puts were refused by the condition, but this caller cannot know that.
    const lossy = docLosingAnswersOf("PutItemCommand", 3);
    await expect(new DynamoLeaseLock({ doc: lossy.doc, tableName: table.tableName }).tryAcquire(name, 60_000)).rejects.toMatchObject({ code: "ECONNRESET" });
    expect(await new DynamoLeaseLock({ doc: table.doc, tableName: table.tableName }).tryAcquire(name, 60_000)).toBeUndefined();
  });

  it("rejects a release that fails for another reason than the owner condition, so its caller learns of it", async () => {
    const lossy = docLosingAnswersOf("DeleteItemCommand", 3);
    const name = `release-lost-${randomBytes(4).toString("hex")}`;
    const handle = await new DynamoLeaseLock({ doc: lossy.doc, tableName: table.tableName }).tryAcquire(name, 60_000);
    expect(handle).toBeDefined();
    await expect(handle!.release()).rejects.toMatchObject({ code: "ECONNRESET" });
    expect(lossy.sent()).toBe(3);
  });

  it("rejects with its put's own error, not that of giving back what it may hold, when both fail", async () => {
    const lost = Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
    const denied = Object.assign(new Error("not allowed"), { name: "AccessDeniedException" });
    const sent: unknown[] = [];
    const doc = {
      send: async (command: unknown) => {
        sent.push(command);
        throw command instanceof PutCommand ? lost : denied;
      },
    } as unknown as DynamoDBDocumentClient;
    await expect(new DynamoLeaseLock({ doc, tableName: table.tableName }).tryAcquire("acme#unreachable", 60_000)).rejects.toBe(lost);
    expect(sent.map((command) => command instanceof DeleteCommand)).toEqual([false, true]);
  });

  it("keeps the item's ttl an hour past its expiresAt, on acquire and on renew, so DynamoDB never sweeps a live lease, even one longer than that", async () => {
    const clock = new FakeClock(Date.parse("2026-03-01T12:00:00.250Z"));
    const ttlMs = 2 * 3_600_000;
    // A name in mixed case: the item is keyed by it as given, as the runbook reads it.
    const lease = await lockWith(clock).tryAcquire("Acme#long", ttlMs);
    const stored = async () => (await table.doc.send(new GetCommand({ TableName: table.tableName, Key: { pk: "LEASE#Acme#long", sk: "LEASE" }, ConsistentRead: true }))).Item;
    // DynamoDB's TTL runs on its own clock, and sweeps by the second: the hour covers a skewed clock here.
    const heldFor = () => ({ expiresAt: clock.now() + ttlMs, ttl: Math.ceil((clock.now() + ttlMs + 3_600_000) / 1000) });
    expect(await stored()).toMatchObject(heldFor());
    clock.advance(ttlMs - 1);
    expect(await lease?.renew(ttlMs)).toBe(true);
    expect(await stored()).toMatchObject(heldFor());
  });

  it("keeps a renewed lease past its first expiry, until now plus the renewal's ttl, and hands it over from that very millisecond", async () => {
    const clock = new FakeClock();
    const lease = await lockWith(clock).tryAcquire("acme#renewed", 1_000);
    clock.advance(900);
    expect(await lease?.renew(1_000)).toBe(true);
    clock.advance(900);
    expect(await lockWith(clock).tryAcquire("acme#renewed", 1_000)).toBeUndefined();
    const item = await table.doc.send(new GetCommand({ TableName: table.tableName, Key: { pk: "LEASE#acme#renewed", sk: "LEASE" } }));
    expect(item.Item?.ttl).toBeGreaterThan(clock.now() / 1000);
    await handedOverIn(clock, "acme#renewed", 100);
  });

  it("renews a lease that ran out while no other owner took it (its holder stalled past it): still its own, held until now plus the renewal's ttl", async () => {
    // Lost means taken (the Lock port): nobody can have held it meanwhile, so a keep-alive or a re-save goes on under it.
    const clock = new FakeClock();
    const lease = await lockWith(clock).tryAcquire("acme#lapsed", 1_000);
    clock.advance(5_000);
    expect(await lease?.renew(1_000)).toBe(true);
    await handedOverIn(clock, "acme#lapsed", 1_000);
  });

  it("grants a contended lease to exactly one of many concurrent callers", async () => {
    const clock = new FakeClock();
    const results = await Promise.all(Array.from({ length: 16 }, () => lockWith(clock).tryAcquire("acme#contended", 10_000)));
    expect(results.filter((r) => r !== undefined)).toHaveLength(1);
  });
});
