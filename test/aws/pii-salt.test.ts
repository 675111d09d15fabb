/**
 * PiiSaltGuard on DynamoDB Local, by itself: what it reads and writes, and the races between containers recording a
 * salt's fingerprint at once (the handler-level behaviour is in test/functions/pii-salt.test.ts).
 */
import { randomUUID } from "node:crypto";
import { BatchWriteCommand, DeleteCommand, GetCommand, PutCommand, ScanCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { CorruptItemError, PiiSaltChangedError } from "../../shared/aws/errors.js";
import { piiSaltItemKey } from "../../shared/aws/keys.js";
import { HOLDS_SNAPSHOTS_PAGE, PiiSaltGuard, holdsSnapshots, type PiiSaltGuardOptions } from "../../shared/aws/pii-salt.js";
import { DynamoSnapshotStore } from "../../shared/aws/snapshot-store.js";
import { piiSaltFingerprint } from "../../shared/bridge/pii.js";
import type { Snapshot, SnapshotPage, SnapshotScanOptions } from "../../shared/bridge/ports.js";
import { RecordingLogger } from "../bridge/fakes.js";
import { FakeClock } from "./support/clock.js";
import { createTestTable, type TestTable } from "./support/dynamo.js";

let table: TestTable;
beforeAll(async () => {
  table = await createTestTable();
});
afterAll(async () => table.drop());

const SALT = "salt-of-this-tenant-0123456789";
const OTHER = "salt-of-another-tenant-0123";
const THIRD = "a-third-salt-0123456789abcd";

function setup() {
  const tenant = `pii-${randomUUID()}`;
  const optionsOf = (salt: string): PiiSaltGuardOptions => ({
    doc: table.doc,
    tableName: table.tableName,
    tenant,
    secretId: "arn:secret:provider",
    pii: { mode: "hash", salt },
    clock: new FakeClock(),
    logger: new RecordingLogger(),
  });
  const guard = (salt: string) => new PiiSaltGuard(optionsOf(salt));
  const record = (salt: string) =>
    table.doc.send(new PutCommand({ TableName: table.tableName, Item: { ...piiSaltItemKey(tenant), fingerprint: piiSaltFingerprint(salt), recordedAt: "2026-03-01T12:00:00.000Z" } }));
  const recorded = async () =>
    (await table.doc.send(new GetCommand({ TableName: table.tableName, Key: piiSaltItemKey(tenant), ConsistentRead: true }))).Item?.["fingerprint"];
  return { tenant, optionsOf, guard, record, recorded };
}

describe("PiiSaltGuard", () => {
  it("checks once: a guard that passed reads the table no more (its runtime is rebuilt when the salt changes)", async () => {
    const { guard, record } = setup();
    const checked = guard(SALT);
    await checked.check(async () => true);
    await record(OTHER);
    const send = vi.spyOn(table.doc, "send");
    await checked.check(async () => true);
    expect(send).not.toHaveBeenCalled();
    send.mockRestore();
    await expect(guard(SALT).check(async () => true)).rejects.toBeInstanceOf(PiiSaltChangedError);
  });

  it("refuses a salt when another container records a third one between its read and its write (a table holding no snapshots)", async () => {
    const { guard, record, recorded } = setup();
    await record(OTHER);
    // Asked after the read, before the write: the other container's write lands there.
    const error = await guard(SALT)
      .check(async () => {
        await record(THIRD);
        return false;
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PiiSaltChangedError);
    expect(await recorded()).toBe(piiSaltFingerprint(THIRD));
  });

  it("refuses, recording nothing and saying nothing of a record, when the fingerprint item is deleted between its read and its write", async () => {
    const { tenant, optionsOf, guard, record, recorded } = setup();
    await record(OTHER);
    const options = optionsOf(SALT);
    // An operator taking a new salt on purpose deletes the item: the conditional put on OTHER's fingerprint then fails.
    const error = await new PiiSaltGuard(options)
      .check(async () => {
        await table.doc.send(new DeleteCommand({ TableName: table.tableName, Key: piiSaltItemKey(tenant) }));
        return false;
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PiiSaltChangedError);
    expect(await recorded()).toBeUndefined();
    expect((options.logger as RecordingLogger).lines).toEqual([]);
    // Not passed: the next check records the salt before anything is hashed with it.
    await guard(SALT).check(async () => false);
    expect(await recorded()).toBe(piiSaltFingerprint(SALT));
  });

  it("refuses a first salt when another container records its own first between this one's read and write", async () => {
    const { optionsOf, record, recorded } = setup();
    let raced = false;
    // The other container's put lands just before this one's.
    const send = async (command: unknown) => {
      if (command instanceof PutCommand && !raced) {
        raced = true;
        await record(OTHER);
      }
      return (table.doc.send as (c: unknown) => Promise<unknown>)(command);
    };
    const doc = new Proxy(table.doc, { get: (target, name, receiver) => (name === "send" ? send : Reflect.get(target, name, receiver)) });
    const racing = new PiiSaltGuard({ ...optionsOf(SALT), doc });
    await expect(racing.check(async () => false)).rejects.toBeInstanceOf(PiiSaltChangedError);
    expect(raced).toBe(true);
    expect(await recorded()).toBe(piiSaltFingerprint(OTHER));
  });

  it("passes when another container records the same new salt between its read and its write", async () => {
    const { guard, record, recorded } = setup();
    await record(OTHER);
    await guard(SALT).check(async () => {
      await record(SALT);
      return false;
    });
    expect(await recorded()).toBe(piiSaltFingerprint(SALT));
  });
});

describe("PiiSaltGuard, what it records and says", () => {
  /** `table.doc` with `send` answered by `intercept` when it returns something, else sent as is. */
  const docWith = (intercept: (command: unknown) => Promise<unknown> | undefined) => {
    const send = (command: unknown) => intercept(command) ?? (table.doc.send as (c: unknown) => Promise<unknown>)(command);
    return new Proxy(table.doc, { get: (target, name, receiver) => (name === "send" ? send : Reflect.get(target, name, receiver)) });
  };

  it("records the salt's fingerprint at the clock's time, saying so, and never the salt in the item or the log", async () => {
    const { tenant, optionsOf } = setup();
    const options = optionsOf(SALT);
    const send = vi.spyOn(table.doc, "send");
    await new PiiSaltGuard(options).check(async () => false);
    // A put that took is not read back: one read and one write, on every container's first cycle.
    expect(send.mock.calls.map(([command]) => command.constructor.name)).toEqual(["GetCommand", "PutCommand"]);
    send.mockRestore();
    const item = (await table.doc.send(new GetCommand({ TableName: table.tableName, Key: piiSaltItemKey(tenant), ConsistentRead: true }))).Item;
    expect(item).toEqual({ ...piiSaltItemKey(tenant), fingerprint: piiSaltFingerprint(SALT), recordedAt: "2026-03-01T12:00:00.000Z" });
    const logger = options.logger as RecordingLogger;
    expect(logger.lines.map((l) => [l.level, l.message])).toEqual([["info", "Recorded the PII salt's fingerprint"]]);
    expect(JSON.stringify(logger.lines)).not.toContain(SALT);
  });

  it("replaces another salt's fingerprint while the table holds no snapshots, saying why, and logs nothing for the same salt", async () => {
    const { optionsOf, record, recorded } = setup();
    await record(OTHER);
    const options = optionsOf(SALT);
    await new PiiSaltGuard(options).check(async () => false);
    expect(await recorded()).toBe(piiSaltFingerprint(SALT));
    expect((options.logger as RecordingLogger).lines.map((l) => [l.level, l.message])).toEqual([["info", "Recorded the new PII salt's fingerprint (the table holds no snapshots)"]]);
    const again = optionsOf(SALT);
    await new PiiSaltGuard(again).check(async () => true);
    expect((again.logger as RecordingLogger).lines).toEqual([]);
  });

  it("reads and writes nothing in a mode other than hash, whatever salt the secret holds, nor under hash without a salt", async () => {
    const { optionsOf, record, recorded } = setup();
    await record(OTHER);
    const send = vi.spyOn(table.doc, "send");
    for (const pii of [{ mode: "full", salt: SALT }, { mode: "redact", salt: SALT }, { mode: "hash" }] as const) await new PiiSaltGuard({ ...optionsOf(SALT), pii }).check(async () => true);
    expect(send).not.toHaveBeenCalled();
    send.mockRestore();
    expect(await recorded()).toBe(piiSaltFingerprint(OTHER));
  });

  it("reads the recorded fingerprint strongly consistent, so another container's write just before is seen", async () => {
    const { optionsOf } = setup();
    const send = vi.spyOn(table.doc, "send");
    await new PiiSaltGuard(optionsOf(SALT)).check(async () => false);
    const gets = send.mock.calls.map(([command]) => command).filter((command) => command instanceof GetCommand);
    send.mockRestore();
    expect(gets.length).toBeGreaterThan(0);
    for (const get of gets) expect((get as GetCommand).input.ConsistentRead).toBe(true);
  });

  it.each([
    ["without a fingerprint", {}],
    ["whose fingerprint is no text", { fingerprint: 1234 }],
  ])("refuses an item %s as corrupt rather than taking it as none or as another salt", async (_, fields) => {
    const { tenant, guard } = setup();
    await table.doc.send(new PutCommand({ TableName: table.tableName, Item: { ...piiSaltItemKey(tenant), ...fields, recordedAt: "2026-03-01T12:00:00.000Z" } }));
    const error = await guard(SALT)
      .check(async () => true)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CorruptItemError);
    expect(error).toMatchObject({ tableName: table.tableName, key: piiSaltItemKey(tenant).pk });
  });

  it("throws a failed write as it is, not as another salt", async () => {
    const { optionsOf, recorded } = setup();
    const denied = Object.assign(new Error("not allowed"), { name: "AccessDeniedException" });
    const doc = docWith((command) => (command instanceof PutCommand ? Promise.reject(denied) : undefined));
    const error = await new PiiSaltGuard({ ...optionsOf(SALT), doc }).check(async () => false).catch((e: unknown) => e);
    expect(error).toBe(denied);
    expect(await recorded()).toBeUndefined();
  });

  it("names the secret, the table and the fingerprint item in its refusal, never the salt", async () => {
    const { tenant, guard, record } = setup();
    await record(OTHER);
    const error = await guard(SALT)
      .check(async () => true)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PiiSaltChangedError);
    expect(error).toMatchObject({ secretId: "arn:secret:provider", tableName: table.tableName, key: piiSaltItemKey(tenant) });
    const message = (error as Error).message;
    expect(message).toContain(`secret arn:secret:provider`);
    expect(message).toContain(`table ${table.tableName}`);
    for (const salt of [SALT, OTHER]) expect(message).not.toContain(salt);
  });
});

describe("holdsSnapshots", () => {
  const snapshot: Snapshot = { key: "transaction:tx-1", hash: "h", object: { id: "tx-1" }, updatedAt: "2026-03-01T12:00:00.000Z" };
  /** A store whose scan answers `pages` in turn, each page's cursor leading to the next. */
  const storeOf = (pages: readonly Snapshot[][]) => ({
    scans: [] as SnapshotScanOptions[],
    async scan(options: SnapshotScanOptions): Promise<SnapshotPage> {
      // A walk that lost its cursor would loop on microtasks alone, where no test timeout fires: fail it instead.
      if (this.scans.length >= pages.length) throw new Error(`scanned past the last of ${pages.length} pages`);
      this.scans.push(options);
      const index = options.cursor === undefined ? 0 : Number(options.cursor);
      const snapshots = pages[index] ?? [];
      return index + 1 < pages.length ? { snapshots, cursor: String(index + 1) } : { snapshots };
    },
  });

  it("walks past empty pages to the first snapshot, and answers false only at the end of the table", async () => {
    const empty = storeOf([[], [], []]);
    expect(await holdsSnapshots(empty)).toBe(false);
    expect(empty.scans).toHaveLength(3);
    const late = storeOf([[], [], [snapshot], []]);
    expect(await holdsSnapshots(late)).toBe(true);
    expect(late.scans).toEqual([{ limit: HOLDS_SNAPSHOTS_PAGE }, { limit: HOLDS_SNAPSHOTS_PAGE, cursor: "1" }, { limit: HOLDS_SNAPSHOTS_PAGE, cursor: "2" }]);
  });

  it("reads a table that holds no snapshot, only quarantine records, in Scan calls of a page each, not one a record", async () => {
    const tenant = `pii-${randomUUID()}`;
    const records = Array.from({ length: 300 }, (_, i) => ({ pk: `QUAR#${tenant}`, sk: `r${i}`, kind: "transaction", reason: "validation: x" }));
    for (let i = 0; i < records.length; i += 25) {
      const batch = records.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } }));
      await table.doc.send(new BatchWriteCommand({ RequestItems: { [table.tableName]: batch } }));
    }
    const send = vi.spyOn(table.doc, "send");
    expect(await holdsSnapshots(new DynamoSnapshotStore({ doc: table.doc, tableName: table.tableName, tenant }))).toBe(false);
    const scans = send.mock.calls.filter(([command]) => command instanceof ScanCommand).length;
    send.mockRestore();
    // The table holds the other test's items too: a page of them a call, plus the call that finds the end.
    const items = (await table.doc.send(new ScanCommand({ TableName: table.tableName, Select: "COUNT" }))).Count ?? 0;
    expect(scans).toBeLessThanOrEqual(Math.ceil(items / HOLDS_SNAPSHOTS_PAGE) + 1);
    // Bounded by the constant alone, a page of one (the walk this replaced) would pass too: at most ten records a call.
    expect(scans).toBeLessThanOrEqual(Math.ceil(items / 10) + 1);
  });
});
