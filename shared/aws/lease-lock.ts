import { randomUUID } from "node:crypto";
import { DeleteCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import type { Clock, Lock, LockHandle } from "../bridge/ports.js";
import { systemClock } from "./clock.js";
import { isConditionFailure } from "./errors.js";
import { leaseItemKey, ttlSeconds } from "./keys.js";

/** DynamoDB deletes expired leases lazily; the TTL is only housekeeping, `expiresAt` is what the condition checks. */
const TTL_SLACK_MS = 3_600_000;

export interface DynamoLeaseLockOptions {
  readonly doc: DynamoDBDocumentClient;
  readonly tableName: string;
  /** @default systemClock */
  readonly clock?: Clock;
  /** Owner token generator, called once per acquire: each call must give a new token. @default randomUUID */
  readonly ownerId?: () => string;
}

/**
 * Lease lock on DynamoDB: a lease is the item `LEASE#<name>` holding an owner token and `expiresAt` (epoch ms).
 * Acquire is a conditional put that succeeds when no lease exists or the existing one expired; renew and release are
 * conditional on the owner token, so a lease taken over by another owner is never extended or deleted.
 *
 * @example
 * const lock = new DynamoLeaseLock({ doc, tableName });
 * const lease = await lock.tryAcquire("acme#token-refresh", 30_000);
 * if (lease) try { ... } finally { await lease.release(); }
 */
export class DynamoLeaseLock implements Lock {
  readonly #doc: DynamoDBDocumentClient;
  readonly #table: string;
  readonly #clock: Clock;
  readonly #ownerId: () => string;

  constructor(options: DynamoLeaseLockOptions) {
    this.#doc = options.doc;
    this.#table = options.tableName;
    this.#clock = options.clock ?? systemClock;
    this.#ownerId = options.ownerId ?? randomUUID;
  }

  async tryAcquire(name: string, ttlMs: number): Promise<LockHandle | undefined> {
    const owner = this.#ownerId();
    const now = this.#clock.now();
    const key = leaseItemKey(name);
    try {
      await this.#doc.send(
        new PutCommand({
          TableName: this.#table,
          Item: { ...key, name, owner, expiresAt: now + ttlMs, ttl: ttlSeconds(now + ttlMs + TTL_SLACK_MS) },
          // `owner` is new to this call: the SDK sending the put again after a lost answer (a reset, a timeout) finds its
          // own write, which must count as acquired, not as another holder's lease left to block every cycle.
          ConditionExpression: "attribute_not_exists(pk) OR expiresAt <= :now OR #owner = :owner",
          ExpressionAttributeNames: { "#owner": "owner" },
          ExpressionAttributeValues: { ":now": now, ":owner": owner },
        }),
      );
    } catch (error) {
      if (isConditionFailure(error)) return undefined;
      // The put may have landed with every answer lost: give back what this owner may hold, or the lease would block
      // every cycle until it expires. Best effort: a put that never landed leaves nothing of this owner to delete.
      await this.#handle(key, owner).release().catch(() => undefined);
      throw error;
    }
    return this.#handle(key, owner);
  }

  #handle(key: { pk: string; sk: string }, owner: string): LockHandle {
    return {
      renew: async (ttlMs, signal) => {
        const now = this.#clock.now();
        try {
          await this.#doc.send(
            new UpdateCommand({
              TableName: this.#table,
              Key: key,
              UpdateExpression: "SET expiresAt = :expiresAt, #ttl = :ttl",
              ConditionExpression: "#owner = :owner",
              ExpressionAttributeNames: { "#owner": "owner", "#ttl": "ttl" },
              ExpressionAttributeValues: { ":owner": owner, ":expiresAt": now + ttlMs, ":ttl": ttlSeconds(now + ttlMs + TTL_SLACK_MS) },
            }),
            // Aborted, the request may still land later, harmlessly: the owner condition fails once the lease is released.
            { abortSignal: signal },
          );
          return true;
        } catch (error) {
          if (isConditionFailure(error)) return false;
          throw error;
        }
      },
      release: async () => {
        try {
          await this.#doc.send(
            new DeleteCommand({
              TableName: this.#table,
              Key: key,
              ConditionExpression: "#owner = :owner",
              ExpressionAttributeNames: { "#owner": "owner" },
              ExpressionAttributeValues: { ":owner": owner },
            }),
          );
        } catch (error) {
          if (!isConditionFailure(error)) throw error;
        }
      },
    };
  }
}
