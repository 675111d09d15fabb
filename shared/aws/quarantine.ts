import { gunzipSync, gzipSync } from "node:zlib";
import { PutCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient, type QueryCommandInput, type QueryCommandOutput } from "@aws-sdk/lib-dynamodb";
import { WriteDeadlineExceededError } from "../bridge/errors.js";
import type { Clock, EntityKind, Logger, Quarantine, QuarantinePagesOptions, QuarantineRecord, StoreCallOptions } from "../bridge/ports.js";
import { recordQashioId } from "../bridge/redrive.js";
import { BATCH_WRITE_LIMIT, DynamoBatchCalls } from "./batch.js";
import { systemClock } from "./clock.js";
import { CorruptItemError, decodeCause, isConditionFailure } from "./errors.js";
import { LIVE_BY_TTL_INDEX, quarantineItemKey, quarantinePartition, ttlSeconds } from "./keys.js";
import { chunk, type BackoffOptions } from "./retry.js";

/** Quarantine records expire after this many days unless configured otherwise. */
export const DEFAULT_QUARANTINE_RETENTION_DAYS = 30;
/** Raw bodies above this are gzip-compressed. */
const COMPRESS_RAW_ABOVE_BYTES = 4_096;
/** Compressed raw bodies above this are cut (the record must still fit one 400 KB item). */
const MAX_RAW_BYTES = 350 * 1024;
/**
 * Longest `entityId` and `reason` stored, in UTF-16 units (at most 3 bytes each in UTF-8): with the raw body's
 * MAX_RAW_BYTES the item stays under DynamoDB's 400 KB. An id of a broken record can be of any length; a record
 * DynamoDB refused would stop every cycle at its page.
 */
const MAX_ENTITY_ID_LENGTH = 1_024;
const MAX_REASON_LENGTH = 4_096;
const CUT_MARK = "…[cut]";

/** `text` cut to `max` UTF-16 units, never inside a surrogate pair, and marked as cut; `text` itself when it fits. */
function capped(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max - CUT_MARK.length;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return text.slice(0, end) + CUT_MARK;
}

export interface DynamoQuarantineOptions {
  readonly doc: DynamoDBDocumentClient;
  readonly tableName: string;
  readonly tenant: string;
  /** @default systemClock */
  readonly clock?: Clock;
  /** Days a record is kept before DynamoDB's TTL deletes it. @default DEFAULT_QUARANTINE_RETENTION_DAYS */
  readonly retentionDays?: number;
  /** Retry of the deletes DynamoDB leaves unprocessed. @default DEFAULT_BACKOFF */
  readonly backoff?: Partial<BackoffOptions>;
  /** Warned when a batch of deletes is throttled and retried. */
  readonly logger?: Logger;
}

interface QuarantineItem {
  pk: string;
  sk: string;
  kind: EntityKind;
  entityId?: string;
  reason: string;
  at: string;
  ttl: number;
  raw?: string;
  rawz?: Uint8Array;
  /** Set when the raw body was too large to keep whole: its original byte length. */
  rawTruncatedFrom?: number;
  /** The cut body's `qashio_id`, kept whole: the re-drive reads the transaction again by it. */
  rawQashioId?: string;
}

/**
 * Quarantine on DynamoDB: one item per record under `QUAR#<tenant>`, sort key = the record's deterministic id, so
 * putting the same id twice keeps one record. Items carry `ttl` (retention) and the raw body as JSON text, gzip when
 * large. Deleted with BatchWriteItem, 25 records a call. Counted on the table's keys-only index (see `size`).
 *
 * @example
 * await new DynamoQuarantine({ doc, tableName, tenant: "acme" }).put(record);
 */
export class DynamoQuarantine implements Quarantine {
  readonly #doc: DynamoDBDocumentClient;
  readonly #table: string;
  readonly #tenant: string;
  readonly #clock: Clock;
  readonly #retentionMs: number;
  readonly #batches: DynamoBatchCalls;

  constructor(options: DynamoQuarantineOptions) {
    this.#doc = options.doc;
    this.#table = options.tableName;
    this.#tenant = options.tenant;
    this.#clock = options.clock ?? systemClock;
    this.#retentionMs = (options.retentionDays ?? DEFAULT_QUARANTINE_RETENTION_DAYS) * 86_400_000;
    this.#batches = new DynamoBatchCalls({
      doc: this.#doc,
      tableName: this.#table,
      clock: this.#clock,
      backoff: options.backoff,
      logger: options.logger,
    });
  }

  /**
   * One UpdateItem, new record or found again: it writes the record whole (its first `at` and `entityId` kept by
   * `if_not_exists`; the `ttl` restarts, the reason and body take their current form) and hands back the item it
   * replaced (`ALL_OLD`), which says whether the record was new. (A put and then, for a record found again, an update
   * cost two single-item writes per invalid card on every card walk.) A second call only for an expired item DynamoDB
   * has not swept yet (it may take days): it counts as gone, so the update's condition refuses it and it is put again
   * whole, new, unless another writer put it first (then a third, the update again: found again).
   */
  async put(record: QuarantineRecord): Promise<boolean> {
    const reason = capped(record.reason, MAX_REASON_LENGTH);
    const item: QuarantineItem = {
      ...quarantineItemKey(this.#tenant, record.id),
      kind: record.kind,
      reason,
      at: record.at,
      ttl: ttlSeconds(this.#clock.now() + this.#retentionMs),
      ...(record.entityId !== undefined ? { entityId: capped(record.entityId, MAX_ENTITY_ID_LENGTH) } : {}),
      ...encodeRaw(record.raw),
    };
    const now = ttlSeconds(this.#clock.now());
    const set = ["#kind = :kind", "#ttl = :ttl", "#reason = :reason", "#at = if_not_exists(#at, :at)"];
    const remove: string[] = [];
    const names: Record<string, string> = { "#kind": "kind", "#ttl": "ttl", "#reason": "reason", "#at": "at" };
    const values: Record<string, unknown> = { ":kind": item.kind, ":ttl": item.ttl, ":reason": reason, ":at": item.at };
    if (item.entityId !== undefined) {
      names["#entityId"] = "entityId";
      values[":entityId"] = item.entityId;
      set.push("#entityId = if_not_exists(#entityId, :entityId)");
    }
    for (const attribute of RAW_ATTRIBUTES) {
      names[`#${attribute}`] = attribute;
      if (item[attribute] === undefined) remove.push(`#${attribute}`);
      else {
        set.push(`#${attribute} = :${attribute}`);
        values[`:${attribute}`] = item[attribute];
      }
    }
    const update = async () => {
      const result = await this.#doc.send(
        new UpdateCommand({
          TableName: this.#table,
          Key: quarantineItemKey(this.#tenant, record.id),
          UpdateExpression: `SET ${set.join(", ")}${remove.length > 0 ? ` REMOVE ${remove.join(", ")}` : ""}`,
          // Absent or held; not an expired item, which keeps an `at` (and entity id) of a record that is gone.
          ConditionExpression: "attribute_not_exists(pk) OR #ttl >= :now",
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: { ...values, ":now": now },
          ReturnValues: "ALL_OLD",
        }),
      );
      return result.Attributes as Partial<QuarantineItem> | undefined;
    };
    let old: Partial<QuarantineItem> | undefined;
    try {
      old = await update();
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      try {
        // Past its TTL, not swept yet: gone for the bridge, so a new record, stored whole with this `at`. Conditional
        // as well: another writer (a second poller, a re-drive) may have found it expired too and put it first, and
        // that one is the new record. The SDK sending this put again after a lost answer finds its own write.
        await this.#doc.send(
          new PutCommand({
            TableName: this.#table,
            Item: item as unknown as Record<string, unknown>,
            ConditionExpression: "attribute_not_exists(pk) OR #ttl < :now OR (#at = :at AND #ttl = :ttl)",
            ExpressionAttributeNames: { "#ttl": "ttl", "#at": "at" },
            ExpressionAttributeValues: { ":now": now, ":at": item.at, ":ttl": item.ttl },
          }),
        );
        return true;
      } catch (putError) {
        if (!isConditionFailure(putError)) throw putError;
      }
      // Put by the other writer meanwhile: held now, so found again (its `at` kept).
      old = await update();
    }
    // The SDK sending this update again after a lost answer finds its own write (same `at` and `ttl`): still new.
    return old === undefined || (old.at === item.at && old.ttl === item.ttl);
  }

  /**
   * One BatchWriteItem of DeleteRequests per 25 ids (a re-drive after a bad rule may delete thousands), one call after
   * the other, unprocessed ones retried with backoff. A record past its TTL, not swept yet, goes as well. Past
   * `options.deadline` nothing is sent again, nor is a call after the first started: WriteDeadlineExceededError (see
   * DynamoBatchCalls.write), naming in `doneIds` the records deleted before it stopped.
   */
  async deleteMany(ids: readonly string[], options: StoreCallOptions = {}): Promise<void> {
    // BatchWriteItem refuses two requests for one key.
    const batches = chunk([...new Set(ids)], BATCH_WRITE_LIMIT);
    const deleted: string[] = [];
    for (const [i, batch] of batches.entries()) {
      const requests = batch.map((id) => ({ DeleteRequest: { Key: { ...quarantineItemKey(this.#tenant, id) } } }));
      try {
        await this.#batches.write(requests, { ...options, later: i > 0 }, (request) => String(request.DeleteRequest?.Key?.sk));
      } catch (error) {
        // Stopped at the deadline part way: the records already gone are named, for the re-drive to count them re-driven.
        throw error instanceof WriteDeadlineExceededError ? error.alsoDone(deleted) : error;
      }
      deleted.push(...batch);
    }
  }

  async list(): Promise<QuarantineRecord[]> {
    const records: QuarantineRecord[] = [];
    for await (const page of this.#records()) records.push(...page);
    return records;
  }

  /**
   * One Query call per page, `Limit` items each (expired items read and dropped, so a page may hold fewer), in sort key
   * (record id) order, from after `after` when given.
   */
  pages({ limit, after }: QuarantinePagesOptions): AsyncGenerator<QuarantineRecord[]> {
    return this.#records({ limit, ...(after === undefined ? {} : { after }) });
  }

  /** The decoded records of each non-empty page of {@link #pages}. */
  async *#records(options: { readonly limit?: number; readonly after?: string } = {}): AsyncGenerator<QuarantineRecord[]> {
    for await (const page of this.#pages(options)) {
      const records = (page.Items ?? []).map((item) => this.#decode(item as unknown as QuarantineItem));
      if (records.length > 0) yield records;
    }
  }

  /**
   * Counts the tenant's live records (`ttl` not passed) on the keys-only index LIVE_BY_TTL_INDEX, `Select: COUNT`,
   * following every page. A Query is charged for the bytes it reads, counted or filtered: on the table that is every
   * record with its raw body (up to 350 KB), on the index ~100 bytes a record. An index read is eventually consistent
   * (DynamoDB refuses ConsistentRead there), so the count may lag a write by a moment: a gauge the next cycle corrects.
   */
  async size(): Promise<number> {
    let count = 0;
    const pages = this.#query({
      IndexName: LIVE_BY_TTL_INDEX,
      // Expired items linger until DynamoDB sweeps them (days): the key condition leaves them unread.
      KeyConditionExpression: "pk = :pk AND #ttl >= :now",
      Select: "COUNT",
    });
    for await (const page of pages) count += page.Count ?? 0;
    return count;
  }

  /**
   * Every page of the tenant's quarantine partition (consistent reads), of up to `limit` items when given, from after
   * the record `after` when given.
   */
  #pages(options: { readonly limit?: number; readonly after?: string } = {}): AsyncGenerator<QueryCommandOutput> {
    const { limit, after } = options;
    return this.#query(
      {
        KeyConditionExpression: "pk = :pk",
        // Expired items linger until DynamoDB sweeps them (days): they are gone for the bridge already.
        FilterExpression: "#ttl >= :now",
        ...(limit !== undefined ? { Limit: limit } : {}),
        ConsistentRead: true,
      },
      after === undefined ? undefined : { ...quarantineItemKey(this.#tenant, after) },
    );
  }

  /** Every page of a Query of the tenant's partition (`:pk`) whose expressions may use `#ttl` and `:now`, from `startKey`. */
  async *#query(input: Omit<QueryCommandInput, "TableName">, startKey?: Record<string, unknown>): AsyncGenerator<QueryCommandOutput> {
    do {
      const page = await this.#doc.send(
        new QueryCommand({
          ...input,
          TableName: this.#table,
          ExpressionAttributeNames: { "#ttl": "ttl" },
          ExpressionAttributeValues: { ":pk": quarantinePartition(this.#tenant), ":now": ttlSeconds(this.#clock.now()) },
          ExclusiveStartKey: startKey,
        }),
      );
      yield page;
      startKey = page.LastEvaluatedKey;
    } while (startKey !== undefined);
  }

  #decode(item: QuarantineItem): QuarantineRecord {
    try {
      const rawJson = item.rawz !== undefined ? gunzipSync(item.rawz).toString("utf8") : item.raw;
      // A body cut when written comes back as the engine's CutQuarantineBody (shared/bridge/ports.ts).
      const raw: unknown =
        item.rawTruncatedFrom !== undefined
          ? { _truncated: { bytes: item.rawTruncatedFrom }, head: rawJson, ...(item.rawQashioId !== undefined ? { qashio_id: item.rawQashioId } : {}) }
          : rawJson === undefined
            ? undefined
            : JSON.parse(rawJson);
      return {
        id: item.sk,
        kind: item.kind,
        reason: item.reason,
        raw,
        at: item.at,
        ...(item.entityId !== undefined ? { entityId: item.entityId } : {}),
      };
    } catch (error) {
      throw new CorruptItemError(`Quarantine item ${item.pk}/${item.sk} cannot be decoded`, this.#table, `${item.pk}/${item.sk}`, {
        cause: decodeCause(error),
      });
    }
  }
}

/** The attributes a raw body is stored in (see encodeRaw): a record found again replaces all four. */
const RAW_ATTRIBUTES = ["raw", "rawz", "rawTruncatedFrom", "rawQashioId"] as const;

/**
 * JSON text of the raw body; gzip when large; cut (and flagged) when it could not fit an item even compressed, its
 * `qashio_id` then kept apart so a re-drive can still read the transaction again.
 */
function encodeRaw(raw: unknown): Pick<QuarantineItem, "raw" | "rawz" | "rawTruncatedFrom" | "rawQashioId"> {
  if (raw === undefined) return {};
  const json = JSON.stringify(raw) ?? "null";
  const bytes = Buffer.byteLength(json);
  if (bytes <= COMPRESS_RAW_ABOVE_BYTES) return { raw: json };
  const compressed = gzipSync(json);
  if (compressed.byteLength <= MAX_RAW_BYTES) return { rawz: new Uint8Array(compressed) };
  // Keeping the head of an absurdly large body beats losing the whole record.
  const head = Buffer.from(json).subarray(0, MAX_RAW_BYTES).toString("utf8");
  // Kept when short enough for the item (a broken body's member can be of any length).
  const qashioId = recordQashioId(raw);
  return { rawz: new Uint8Array(gzipSync(head)), rawTruncatedFrom: bytes, ...(qashioId !== undefined && qashioId.length <= MAX_ENTITY_ID_LENGTH ? { rawQashioId: qashioId } : {}) };
}
