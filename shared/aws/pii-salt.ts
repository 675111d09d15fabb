/**
 * The tenant's `hash` salt guard on AWS: the table records a fingerprint of the salt its pseudonyms were made with
 * (`PII#<tenant>`/`SALT`, never the salt), and a runtime whose secret holds another `pii_salt` is refused before it
 * hashes anything. Local mode keeps the same fingerprint in binding.json; both decide by `piiSaltVerdict`.
 */
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { piiSaltFingerprint, piiSaltVerdict, type PiiPolicy } from "../bridge/pii.js";
import type { Clock, Logger, SnapshotStore } from "../bridge/ports.js";
import { CorruptItemError, isConditionFailure, PiiSaltChangedError } from "./errors.js";
import { piiSaltItemKey } from "./keys.js";

/** The salt item: the fingerprint (`piiSaltFingerprint`) and when it was recorded. */
interface PiiSaltItem {
  readonly pk: string;
  readonly sk: string;
  readonly fingerprint: string;
  readonly recordedAt: string;
}

export interface PiiSaltGuardOptions {
  readonly doc: DynamoDBDocumentClient;
  readonly tableName: string;
  readonly tenant: string;
  /** The provider secret the salt comes from: what the refusal names. */
  readonly secretId: string;
  /** The runtime's policy: only `hash` is checked (other modes hash nothing and leave the item for a return to `hash`). */
  readonly pii: PiiPolicy;
  readonly clock: Clock;
  readonly logger: Logger;
}

/**
 * Checks the runtime's salt against the table's fingerprint once it succeeds: a runtime is rebuilt whenever the
 * secret's `pii_salt` changes (RuntimeCache), so its salt is checked before its first hash.
 *
 * @example
 * await guard.check(() => holdsSnapshots(deps.snapshots)); // throws PiiSaltChangedError for another salt
 */
export class PiiSaltGuard {
  readonly #options: PiiSaltGuardOptions;
  #checked = false;

  constructor(options: PiiSaltGuardOptions) {
    this.#options = options;
  }

  /**
   * Records the fingerprint where the table has none (a first hashed cycle, or a table from before fingerprints), and
   * refuses another salt while `holdsSnapshots` says the table holds snapshots (one holding none follows the secret).
   *
   * @throws PiiSaltChangedError when the secret's salt is not the recorded one and snapshots exist.
   */
  async check(holdsSnapshots: () => Promise<boolean>): Promise<void> {
    const { pii } = this.#options;
    if (this.#checked || pii.mode !== "hash" || pii.salt === undefined) return;
    const given = piiSaltFingerprint(pii.salt);
    const recorded = await this.#read();
    const verdict = piiSaltVerdict(recorded, given);
    if (verdict === "differs" && (await holdsSnapshots())) throw this.#refusal();
    if (verdict !== "same") {
      // Conditional on what was read: another container that recorded a salt meanwhile is checked against, not overwritten.
      const written = await this.#write(given, recorded);
      if (!written && piiSaltVerdict(await this.#read(), given) !== "same") throw this.#refusal();
      this.#options.logger.info(recorded === undefined ? "Recorded the PII salt's fingerprint" : "Recorded the new PII salt's fingerprint (the table holds no snapshots)");
    }
    this.#checked = true;
  }

  #refusal(): PiiSaltChangedError {
    const { secretId, tableName, tenant } = this.#options;
    return new PiiSaltChangedError(secretId, tableName, piiSaltItemKey(tenant));
  }

  async #read(): Promise<string | undefined> {
    const { doc, tableName, tenant } = this.#options;
    const key = piiSaltItemKey(tenant);
    const result = await doc.send(new GetCommand({ TableName: tableName, Key: key, ConsistentRead: true }));
    if (result.Item === undefined) return undefined;
    const { fingerprint } = result.Item as Partial<PiiSaltItem>;
    if (typeof fingerprint !== "string") throw new CorruptItemError("The PII salt item has no fingerprint", tableName, key.pk);
    return fingerprint;
  }

  /** Puts `fingerprint` if the item still holds `expected` (none: absent); false when it no longer does. */
  async #write(fingerprint: string, expected: string | undefined): Promise<boolean> {
    const { doc, tableName, tenant, clock } = this.#options;
    const item: PiiSaltItem = { ...piiSaltItemKey(tenant), fingerprint, recordedAt: new Date(clock.now()).toISOString() };
    try {
      await doc.send(
        new PutCommand({
          TableName: tableName,
          Item: item,
          ...(expected === undefined
            ? { ConditionExpression: "attribute_not_exists(pk)" }
            : { ConditionExpression: "fingerprint = :expected", ExpressionAttributeValues: { ":expected": expected } }),
        }),
      );
      return true;
    } catch (error) {
      if (isConditionFailure(error)) return false;
      throw error;
    }
  }
}

/**
 * Snapshots per page of {@link holdsSnapshots}' walk: a store reads a page's worth of items a call (DynamoDB: a Scan's
 * `Limit`), so a page of one read a table holding no snapshot (a backlog quarantined whole) one item a call.
 */
export const HOLDS_SNAPSHOTS_PAGE = 100;

/**
 * Whether the store holds any snapshot: a walk until the first one (a page may come back empty before the end).
 *
 * @example
 * await guard.check(() => holdsSnapshots(runtime.transactions.snapshots));
 */
export async function holdsSnapshots(store: Pick<SnapshotStore, "scan">): Promise<boolean> {
  let cursor: string | undefined;
  do {
    const page = await store.scan({ limit: HOLDS_SNAPSHOTS_PAGE, ...(cursor === undefined ? {} : { cursor }) });
    if (page.snapshots.length > 0) return true;
    cursor = page.cursor;
  } while (cursor !== undefined);
  return false;
}
