import { gunzipSync, gzipSync } from "node:zlib";
import { ScanCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { SnapshotCursorError } from "../bridge/errors.js";
import type { Clock, Logger, Snapshot, SnapshotKey, SnapshotPage, SnapshotScanOptions, SnapshotStore, StoreCallOptions } from "../bridge/ports.js";
import { isSnapshotSequence } from "../bridge/validate.js";
import { jsonOf } from "../bridge/hash.js";
import { BATCH_GET_LIMIT, BATCH_WRITE_LIMIT, DynamoBatchCalls } from "./batch.js";
import { CorruptItemError, decodeCause } from "./errors.js";
import { SNAPSHOT_SORT_KEY, snapshotItemKey, snapshotPartitionPrefix, type ItemKey } from "./keys.js";
import { mapLimit } from "../bridge/map-limit.js";
import { chunk, type BackoffOptions } from "./retry.js";
/** Objects whose JSON is larger than this are stored gzip-compressed as a binary attribute. */
export const DEFAULT_COMPRESS_ABOVE_BYTES = 2_048;
/** DynamoDB's item limit is 400 KB; keep room for keys and attribute names. */
const MAX_OBJECT_BYTES = 390 * 1024;
/**
 * Object stored in place of one too large for an item even gzip-compressed: the hash is kept, so an identical re-pull
 * still yields no event, and a change yields `transaction.changed` diffed against this marker (see docs/spec-gaps.md).
 */
export const TRUNCATED_SNAPSHOT_OBJECT: Readonly<Record<string, unknown>> = Object.freeze({ _snapshot_truncated: true });

export interface DynamoSnapshotStoreOptions {
  readonly doc: DynamoDBDocumentClient;
  readonly tableName: string;
  readonly tenant: string;
  /** @default systemClock */
  readonly clock?: Clock;
  /** Retry of unprocessed keys/items. @default DEFAULT_BACKOFF */
  readonly backoff?: Partial<BackoffOptions>;
  /** @default DEFAULT_COMPRESS_ABOVE_BYTES */
  readonly compressAboveBytes?: number;
  /** Batch calls in flight at once. @default 4 */
  readonly concurrency?: number;
  /** Warned when a snapshot is stored hash-only. */
  readonly logger?: Logger;
}

/** What a scan cursor holds (see DynamoSnapshotStore's #encodeCursor). */
interface CursorJson {
  readonly tenant: string;
  readonly table: string;
  readonly pk: string;
  readonly sk: string;
}

/** Stored shape of one snapshot item: hash and time in the clear, the object as JSON text or gzip of it. */
interface SnapshotItem {
  pk: string;
  sk: string;
  key: SnapshotKey;
  hash: string;
  updatedAt: string;
  /** The snapshot's `sequence`; absent in items written before sequences existed. */
  sequence?: number;
  /** JSON of the object when small. */
  obj?: string;
  /** gzip of the JSON when large. */
  objz?: Uint8Array;
  /** Set when the object was replaced by TRUNCATED_SNAPSHOT_OBJECT: its compressed size in bytes. */
  truncatedFromBytes?: number;
}

/**
 * Snapshot store on DynamoDB: one item per entity (`SNAP#<tenant>#<kind>:<id>`), read with BatchGetItem (100 keys,
 * strongly consistent) and written with BatchWriteItem (25 items), retrying unprocessed keys and items with backoff,
 * up to the caller's deadline when it gives one.
 * No version check on write: the per-tenant cycle lease makes the running cycle the only writer of its entity kind.
 * An object too large for one item even gzip-compressed is stored hash-only (TRUNCATED_SNAPSHOT_OBJECT).
 * `scan` walks the table with a strongly consistent Scan filtered to the tenant's snapshot items (the table also holds
 * quarantine records, leases, tokens and, in tests, other tenants), each call reading a whole page's `Limit`; its
 * cursor is the Scan's last evaluated key (or the last snapshot taken, when a call found more than the page had room
 * for), with the tenant and table it belongs to.
 *
 * @example
 * const store = new DynamoSnapshotStore({ doc, tableName: "bridge", tenant: "acme" });
 * const found = await store.getMany(["transaction:tx_1"]);
 */
export class DynamoSnapshotStore implements SnapshotStore {
  readonly #doc: DynamoDBDocumentClient;
  readonly #table: string;
  readonly #tenant: string;
  readonly #batches: DynamoBatchCalls;
  readonly #compressAbove: number;
  readonly #concurrency: number;
  readonly #logger?: Logger;

  constructor(options: DynamoSnapshotStoreOptions) {
    this.#doc = options.doc;
    this.#table = options.tableName;
    this.#tenant = options.tenant;
    this.#batches = new DynamoBatchCalls({
      doc: options.doc,
      tableName: options.tableName,
      clock: options.clock,
      backoff: options.backoff,
      logger: options.logger,
    });
    this.#compressAbove = options.compressAboveBytes ?? DEFAULT_COMPRESS_ABOVE_BYTES;
    this.#concurrency = options.concurrency ?? 4;
    this.#logger = options.logger;
  }

  /**
   * BatchGetItem calls of 100, `concurrency` at a time. Past `options.deadline` nothing is sent again, nor is a batch
   * started after the first ones: a call that rejects with ReadDeadlineExceededError (see DynamoBatchCalls.get).
   */
  async getMany(keys: readonly SnapshotKey[], options: StoreCallOptions = {}): Promise<Map<SnapshotKey, Snapshot>> {
    const unique = [...new Set(keys)];
    const found = new Map<SnapshotKey, Snapshot>();
    await mapLimit(chunk(unique, BATCH_GET_LIMIT), this.#concurrency, async (batch, index) => {
      const itemKeys = batch.map((key) => ({ ...snapshotItemKey(this.#tenant, key) }));
      for (const item of await this.#batches.get(itemKeys, { ...options, later: index >= this.#concurrency })) {
        const snapshot = this.#decode(item as unknown as SnapshotItem);
        found.set(snapshot.key, snapshot);
      }
    });
    return found;
  }

  /**
   * BatchWriteItem calls of 25, `concurrency` at a time. Past `options.deadline` nothing is sent again, nor is a batch
   * started after the first ones: a call that rejects with WriteDeadlineExceededError (see DynamoBatchCalls.write).
   */
  async putMany(snapshots: readonly Snapshot[], options: StoreCallOptions = {}): Promise<void> {
    // BatchWriteItem rejects two requests for one key; the last write of a key wins, as sequential puts would.
    const latest = new Map<SnapshotKey, Snapshot>();
    for (const snapshot of snapshots) latest.set(snapshot.key, snapshot);
    const items = [...latest.values()].map((snapshot) => this.#encode(snapshot));
    await mapLimit(chunk(items, BATCH_WRITE_LIMIT), this.#concurrency, (batch, index) =>
      this.#batches.write(
        batch.map((item) => ({ PutRequest: { Item: item as unknown as Record<string, unknown> } })),
        { ...options, later: index >= this.#concurrency },
      ),
    );
  }

  async scan(options: SnapshotScanOptions): Promise<SnapshotPage> {
    let start = options.cursor === undefined ? undefined : this.#decodeCursor(options.cursor);
    const snapshots: Snapshot[] = [];
    // `Limit` bounds the items a Scan call reads before the filter: calls go on until the page is full or the table ends.
    // Each asks for a whole page, not the page's room left: that read the items between snapshots (a quarantine
    // partition, contiguous in Scan order) a few at a time, down to one a call.
    do {
      const result = await this.#doc.send(
        new ScanCommand({
          TableName: this.#table,
          ConsistentRead: true,
          Limit: options.limit,
          FilterExpression: "begins_with(pk, :prefix) AND sk = :sk",
          ExpressionAttributeValues: { ":prefix": snapshotPartitionPrefix(this.#tenant), ":sk": SNAPSHOT_SORT_KEY },
          ...(start === undefined ? {} : { ExclusiveStartKey: start }),
        }),
      );
      const items = (result.Items ?? []) as unknown as SnapshotItem[];
      const room = options.limit - snapshots.length;
      for (const item of items.slice(0, room)) snapshots.push(this.#decode(item));
      // More found than the page has room for: the next page starts after the last snapshot taken, a key Scan order
      // places as it does the key it stopped at.
      const last = items[room - 1];
      start = items.length > room && last !== undefined ? { pk: last.pk, sk: last.sk } : (result.LastEvaluatedKey as ItemKey | undefined);
    } while (start !== undefined && snapshots.length < options.limit);
    return start === undefined ? { snapshots } : { snapshots, cursor: this.#encodeCursor(start) };
  }

  /**
   * A Scan's last evaluated key (or a snapshot's key) as a cursor: base64url of its JSON (the key of a table item, no PII) with this store's
   * tenant and table, since the key alone (possibly a quarantine, lease or token item) does not say whose walk it was.
   */
  #encodeCursor(key: ItemKey): string {
    const cursor: CursorJson = { tenant: this.#tenant, table: this.#table, pk: key.pk, sk: key.sk };
    return Buffer.from(JSON.stringify(cursor), "utf8").toString("base64url");
  }

  /** @throws SnapshotCursorError when `cursor` is not one this store's scan handed out (this tenant, this table). */
  #decodeCursor(cursor: string): ItemKey {
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
    } catch (error) {
      throw new SnapshotCursorError({ cause: error });
    }
    const { tenant, table, pk, sk, ...rest } = (typeof parsed === "object" && parsed !== null ? parsed : {}) as Partial<Record<keyof CursorJson, unknown>>;
    const fits = typeof pk === "string" && typeof sk === "string" && pk !== "" && sk !== "" && Object.keys(rest).length === 0;
    // Another tenant's walk, or another table's (a cursor of another stack): refused, not taken as a place in this one.
    if (!fits || tenant !== this.#tenant || table !== this.#table) throw new SnapshotCursorError();
    return { pk, sk };
  }

  /** Nothing to do: a put replaces the item in place (point-in-time recovery keeps its own copies, see the runbook). */
  async vacuum(): Promise<void> {}

  #encode(snapshot: Snapshot): SnapshotItem {
    const key = snapshotItemKey(this.#tenant, snapshot.key);
    // The object's text as the engine made it to hash it, not serialised again.
    const json = jsonOf(snapshot.object);
    const base = {
      ...key,
      key: snapshot.key,
      hash: snapshot.hash,
      updatedAt: snapshot.updatedAt,
      ...(snapshot.sequence === undefined ? {} : { sequence: snapshot.sequence }),
    };
    if (Buffer.byteLength(json) <= this.#compressAbove) return { ...base, obj: json };
    const compressed = gzipSync(json);
    if (compressed.byteLength > MAX_OBJECT_BYTES) {
      // Failing here would block the tenant for good (published, never acknowledged, re-published every cycle).
      this.#logger?.warn("Snapshot too large for DynamoDB even compressed; stored hash-only", {
        key: snapshot.key,
        compressedBytes: compressed.byteLength,
      });
      return { ...base, obj: JSON.stringify(TRUNCATED_SNAPSHOT_OBJECT), truncatedFromBytes: compressed.byteLength };
    }
    return { ...base, objz: new Uint8Array(compressed) };
  }

  #decode(item: SnapshotItem): Snapshot {
    try {
      const json = item.objz !== undefined ? gunzipSync(item.objz).toString("utf8") : item.obj;
      if (json === undefined || typeof item.hash !== "string" || typeof item.key !== "string") throw new Error("missing attributes");
      const object = JSON.parse(json) as Record<string, unknown>;
      if (!isSnapshotSequence(item.sequence)) throw new Error("sequence is not a whole number of at least 0");
      return { key: item.key, hash: item.hash, object, updatedAt: item.updatedAt, ...(item.sequence === undefined ? {} : { sequence: item.sequence }) };
    } catch (error) {
      throw new CorruptItemError(`Snapshot item ${item.pk} cannot be decoded`, this.#table, item.pk, { cause: decodeCause(error) });
    }
  }
}
