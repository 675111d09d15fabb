/**
 * DynamoDB batch calls with the adapters' own retries, shared by the stores that batch (snapshots, quarantine
 * deletes): one call's worth of keys or requests, sent again with backoff until DynamoDB has processed every entry,
 * and, for a read or write held to a deadline, until that deadline has passed.
 */
import { BatchGetCommand, BatchWriteCommand, type BatchWriteCommandInput, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { ReadDeadlineExceededError, WriteDeadlineExceededError } from "../bridge/errors.js";
import type { Clock, Logger, StoreCallOptions } from "../bridge/ports.js";
import { DynamoBatchIncompleteError } from "./errors.js";
import { errorLabel } from "../error-label.js";
import { systemClock } from "./clock.js";
import { DEFAULT_BACKOFF, backoffDelay, withRetries, type BackoffOptions } from "./retry.js";

/** BatchGetItem accepts at most 100 keys per call. */
export const BATCH_GET_LIMIT = 100;
/** BatchWriteItem accepts at most 25 requests per call. */
export const BATCH_WRITE_LIMIT = 25;

type BatchOperation = "BatchGetItem" | "BatchWriteItem";

/**
 * Options of one {@link DynamoBatchCalls} call: its deadline (StoreCallOptions), and `later` when it is not the first
 * the caller sends for its read or write (a store's batch started after others), so its first send is held back past
 * the deadline as well.
 */
export type HeldCallOptions = StoreCallOptions & { readonly later?: boolean };

/** A round of a call held to a deadline: the deadline, and how many entries it still has to send. */
interface HeldRound {
  readonly deadline: number;
  readonly remaining: number;
}

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

  /**
   * Reads `keys` (at most {@link BATCH_GET_LIMIT}) strongly consistently; keys of absent items are simply not answered.
   * Held to `options.deadline` as {@link write} is, rejecting with ReadDeadlineExceededError: retrying on under a
   * throttled table would run the caller's cycle past its invocation's timeout.
   */
  async get(keys: Record<string, unknown>[], options: HeldCallOptions = {}): Promise<Record<string, unknown>[]> {
    const table = this.#options.tableName;
    const items: Record<string, unknown>[] = [];
    await this.#drain("BatchGetItem", "keys", keys, options, async (pending, held) => {
      const result = await this.#sendRetried(
        "BatchGetItem",
        () => this.#options.doc.send(new BatchGetCommand({ RequestItems: { [table]: { Keys: pending, ConsistentRead: true } } })),
        held,
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
   * after a later cycle wrote the same keys, would put an older state over theirs. With `idOf`, that error names (its
   * `doneIds`) the requests DynamoDB had answered processed.
   */
  async write(requests: WriteRequest[], options: HeldCallOptions = {}, idOf?: (request: WriteRequest) => string): Promise<void> {
    const table = this.#options.tableName;
    // What no answer has said is written yet: all of it until the first answer, then what that left unprocessed.
    let unwritten = requests;
    try {
      await this.#drain("BatchWriteItem", "items", requests, options, async (pending, held) => {
        const result = await this.#sendRetried("BatchWriteItem", () => this.#options.doc.send(new BatchWriteCommand({ RequestItems: { [table]: pending } })), held);
        unwritten = result.UnprocessedItems?.[table] ?? [];
        return unwritten;
      });
    } catch (error) {
      if (idOf === undefined || !(error instanceof WriteDeadlineExceededError)) throw error;
      const left = new Set(unwritten.map(idOf));
      throw error.alsoDone(requests.map(idOf).filter((id) => !left.has(id)));
    }
  }

  /**
   * One batch call, sent again with backoff while it fails as a whole with a retryable error: DynamoDB answers a batch
   * it could process none of with a throttling error rather than with every entry unprocessed, and the same pressure
   * deserves the same patience.
   */
  #sendRetried<T>(operation: BatchOperation, send: () => Promise<T>, held?: HeldRound): Promise<T> {
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
          logger?.warn("DynamoDB batch call throttled or failed, retrying", { operation, attempt, error: errorLabel(error) });
        },
      },
    );
  }

  /**
   * Throws when `deadline` has passed, what is `remaining` not to be sent again: WriteDeadlineExceededError for a
   * write, ReadDeadlineExceededError for a read.
   */
  #stopPastDeadline(operation: BatchOperation, deadline: number | undefined, remaining: number, cause?: unknown): void {
    const { clock, tableName, logger } = this.#options;
    if (deadline === undefined || clock.now() < deadline) return;
    logger?.warn("DynamoDB batch call not sent again: past the call's deadline", { operation, remaining });
    const options = cause === undefined ? undefined : { cause };
    const message = `${operation} on ${tableName} not sent again: its deadline passed with ${remaining} entries not`;
    throw operation === "BatchGetItem"
      ? new ReadDeadlineExceededError(`${message} read`, deadline, options)
      : new WriteDeadlineExceededError(`${message} written`, deadline, options);
  }

  /**
   * Sends `first`, then what each answer leaves unprocessed, with backoff, until nothing is left. Gives up after
   * `maxAttempts` rounds in a row that got nothing through: a round that got some through (steady partial throttling,
   * BatchGetItem's 16 MB answer cap) is progress, not a failed attempt, and each takes at least one entry, so the
   * rounds end. Past `options.deadline` (when given), no round after the first starts, nor the first of a `later`
   * call (see {@link write}); `send` gets the deadline to hold its own retries to.
   */
  async #drain<T>(operation: BatchOperation, what: string, first: T[], options: HeldCallOptions, send: (pending: T[], held?: HeldRound) => Promise<T[]>): Promise<void> {
    const { clock, backoff, tableName } = this.#options;
    const { deadline } = options;
    const max = backoff.maxAttempts;
    if (options.later === true) this.#stopPastDeadline(operation, deadline, first.length);
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
      const left = await send(pending, deadline === undefined ? undefined : { deadline, remaining: pending.length });
      stalled = left.length < pending.length ? 0 : stalled + 1;
      pending = left;
    }
  }
}
