/**
 * DynamoDB batch calls with the adapters' own retries, shared by the stores that batch (snapshots, quarantine
 * deletes): one call's worth of keys or requests, sent again with backoff until DynamoDB has processed every entry,
 * and, for a write held to a deadline, until that deadline has passed.
 */
import { BatchGetCommand, BatchWriteCommand, type BatchWriteCommandInput, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { WriteDeadlineExceededError } from "../bridge/errors.js";
import type { Clock, Logger, StoreWriteOptions } from "../bridge/ports.js";
import { DynamoBatchIncompleteError } from "./errors.js";
import { systemClock } from "./clock.js";
import { DEFAULT_BACKOFF, backoffDelay, withRetries, type BackoffOptions } from "./retry.js";

/** BatchGetItem accepts at most 100 keys per call. */
export const BATCH_GET_LIMIT = 100;
/** BatchWriteItem accepts at most 25 requests per call. */
export const BATCH_WRITE_LIMIT = 25;

/** One request of a BatchWriteItem call (a put or a delete), as the document client takes it. */
export type WriteRequest = NonNullable<BatchWriteCommandInput["RequestItems"]>[string][number];

/** What {@link DynamoBatchCalls} sends with. */
export interface DynamoBatchCallsOptions {
  readonly doc: DynamoDBDocumentClient;
  readonly tableName: string;
  /** @default systemClock */
  readonly clock?: Clock;
  /** Retry of unprocessed entries and of calls throttled as a whole. @default DEFAULT_BACKOFF */
  readonly backoff?: Partial<BackoffOptions>;
  /** Warned at each retry of a call that failed as a whole. */
  readonly logger?: Logger;
}

/**
 * BatchGetItem and BatchWriteItem on one table, each retrying what DynamoDB left unprocessed with backoff, and a call
 * throttled as a whole.
 *
 * @example
 * const calls = new DynamoBatchCalls({ doc, tableName, clock });
 * await calls.write(ids.map((id) => ({ DeleteRequest: { Key: quarantineItemKey(tenant, id) } })));
 */
export class DynamoBatchCalls {
  readonly #options: DynamoBatchCallsOptions & { readonly clock: Clock; readonly backoff: BackoffOptions };

  constructor(options: DynamoBatchCallsOptions) {
    this.#options = { ...options, clock: options.clock ?? systemClock, backoff: { ...DEFAULT_BACKOFF, ...options.backoff } };
  }

  /** Reads `keys` (at most {@link BATCH_GET_LIMIT}) strongly consistently; keys of absent items are simply not answered. */
  async get(keys: Record<string, unknown>[]): Promise<Record<string, unknown>[]> {
    const table = this.#options.tableName;
    const items: Record<string, unknown>[] = [];
    await this.#drain("BatchGetItem", "keys", keys, async (pending) => {
      const result = await this.#sendRetried("BatchGetItem", () =>
        this.#options.doc.send(new BatchGetCommand({ RequestItems: { [table]: { Keys: pending, ConsistentRead: true } } })),
      );
      items.push(...(result.Responses?.[table] ?? []));
      return result.UnprocessedKeys?.[table]?.Keys ?? [];
    });
    return items;
  }

  /**
   * Applies `requests` (at most {@link BATCH_WRITE_LIMIT}, no two for one key, as DynamoDB requires); resolves once all
   * are. Past `options.deadline` nothing is sent again (unprocessed items, a throttled call): the first send goes
   * whatever the time, each later one only while the clock, read after the backoff, is still before it, else the
   * call rejects with WriteDeadlineExceededError. A write landing late, its container frozen in the backoff and thawed
   * after a later cycle wrote the same keys, would put an older state over theirs. `later`: these requests are not the
   * first the caller sends for its write (a store's batch started after others), so their first send is held back
   * past the deadline as well.
   */
  async write(requests: WriteRequest[], options: StoreWriteOptions & { readonly later?: boolean } = {}): Promise<void> {
    const table = this.#options.tableName;
    const { deadline } = options;
    if (options.later === true) this.#stopPastDeadline("BatchWriteItem", deadline, requests.length);
    await this.#drain(
      "BatchWriteItem",
      "items",
      requests,
      async (pending) => {
        const result = await this.#sendRetried(
          "BatchWriteItem",
          () => this.#options.doc.send(new BatchWriteCommand({ RequestItems: { [table]: pending } })),
          deadline === undefined ? undefined : { deadline, remaining: pending.length },
        );
        return result.UnprocessedItems?.[table] ?? [];
      },
      deadline,
    );
  }

  /**
   * One batch call, sent again with backoff while it fails as a whole with a retryable error: DynamoDB answers a batch
   * it could process none of with a throttling error rather than with every entry unprocessed, and the same pressure
   * deserves the same patience.
   */
  #sendRetried<T>(operation: "BatchGetItem" | "BatchWriteItem", send: () => Promise<T>, held?: { readonly deadline: number; readonly remaining: number }): Promise<T> {
    const { clock, backoff, logger } = this.#options;
    let last: unknown;
    return withRetries(
      // Thrown from the attempt, the deadline's error is not retryable, so withRetries hands it on as it is.
      (attempt) => {
        if (attempt > 1 && held !== undefined) this.#stopPastDeadline(operation, held.deadline, held.remaining, last);
        return send();
      },
      {
        clock,
        backoff,
        onRetry: (error, attempt) => {
          last = error;
          logger?.warn("DynamoDB batch call throttled or failed, retrying", { operation, attempt, error: (error as Error).name });
        },
      },
    );
  }

  /** Throws WriteDeadlineExceededError when `deadline` has passed: what is `remaining` must not be sent again. */
  #stopPastDeadline(operation: "BatchGetItem" | "BatchWriteItem", deadline: number | undefined, remaining: number, cause?: unknown): void {
    const { clock, tableName, logger } = this.#options;
    if (deadline === undefined || clock.now() < deadline) return;
    logger?.warn("DynamoDB batch call not sent again: past the write's deadline", { operation, remaining });
    throw new WriteDeadlineExceededError(
      `${operation} on ${tableName} not sent again: its deadline passed with ${remaining} entries not written`,
      deadline,
      cause === undefined ? undefined : { cause },
    );
  }

  /**
   * Sends `first`, then what each answer leaves unprocessed, with backoff, until nothing is left. Gives up after
   * `maxAttempts` rounds in a row that got nothing through: a round that got some through (steady partial throttling,
   * BatchGetItem's 16 MB answer cap) is progress, not a failed attempt, and each takes at least one entry, so the
   * rounds end. Past `deadline` (when given), no round after the first starts (see {@link write}).
   */
  async #drain<T>(operation: "BatchGetItem" | "BatchWriteItem", what: string, first: T[], send: (pending: T[]) => Promise<T[]>, deadline?: number): Promise<void> {
    const { clock, backoff, tableName } = this.#options;
    const max = backoff.maxAttempts;
    let pending = first;
    let stalled = 0;
    for (let round = 1; pending.length > 0; round += 1) {
      if (stalled >= max) {
        throw new DynamoBatchIncompleteError(`${operation} left ${pending.length} ${what} unprocessed after ${max} attempts in a row`, tableName, operation, pending.length, max);
      }
      if (round > 1) {
        await clock.sleep(backoffDelay(Math.max(1, stalled), backoff));
        this.#stopPastDeadline(operation, deadline, pending.length);
      }
      const left = await send(pending);
      stalled = left.length < pending.length ? 0 : stalled + 1;
      pending = left;
    }
  }
}
