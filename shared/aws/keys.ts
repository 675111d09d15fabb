/**
 * Item layout of the single bridge table (partition key `pk`, sort key `sk`, TTL attribute `ttl`).
 *
 * | item            | pk                              | sk               |
 * | --------------- | ------------------------------- | ---------------- |
 * | snapshot        | `SNAP#<tenant>#<kind>:<id>`     | `SNAP`           |
 * | quarantine      | `QUAR#<tenant>`                 | `<record id>`    |
 * | lease           | `LEASE#<name>`                  | `LEASE`          |
 * | access token    | `TOKEN#<tenant>`                | `ACCESS`         |
 * | revoked family  | `TOKEN#<tenant>`                | `REVOKED`        |
 * | PII salt        | `PII#<tenant>`                  | `SALT`           |
 *
 * Snapshots get one partition each so BatchGetItem spreads over partitions; quarantine records share one partition per
 * tenant so `list()` is a single Query. The index LIVE_BY_TTL_INDEX holds the keys of the items with a `ttl` only.
 */
import type { SnapshotKey } from "../bridge/ports.js";
import { CARD_KEY_PREFIX } from "../bridge/cards.js";

/** Primary key of one item. */
export interface ItemKey {
  readonly pk: string;
  readonly sk: string;
}

/** Start of the partition key of every snapshot of `tenant` (tenant ids hold no `#`, so no other tenant's starts so). */
export const snapshotPartitionPrefix = (tenant: string): string => `SNAP#${tenant}#`;
export const SNAPSHOT_SORT_KEY = "SNAP";
export const snapshotItemKey = (tenant: string, key: SnapshotKey): ItemKey => ({ pk: `${snapshotPartitionPrefix(tenant)}${key}`, sk: SNAPSHOT_SORT_KEY });
export const quarantinePartition = (tenant: string): string => `QUAR#${tenant}`;
export const quarantineItemKey = (tenant: string, id: string): ItemKey => ({ pk: quarantinePartition(tenant), sk: id });
export const leaseItemKey = (name: string): ItemKey => ({ pk: `LEASE#${name}`, sk: "LEASE" });
export const accessTokenItemKey = (tenant: string): ItemKey => ({ pk: `TOKEN#${tenant}`, sk: "ACCESS" });
export const revokedFamilyItemKey = (tenant: string): ItemKey => ({ pk: `TOKEN#${tenant}`, sk: "REVOKED" });
/** Fingerprint of the `hash` salt the tenant's pseudonyms are made with (pii-salt.ts); the pollers' only, not the rotation's. */
export const piiSaltItemKey = (tenant: string): ItemKey => ({ pk: `PII#${tenant}`, sk: "SALT" });

/**
 * Tags the stack puts on the tenant's provider secret: they lead `authorize --secret-id`, given only the secret, to
 * the token lease the pollers refresh under (`tokenRefresh` of the tenant, in the table).
 */
export const SECRET_TAGS = {
  tenant: "qashio-bridge:tenant",
  leaseTable: "qashio-bridge:lease-table",
} as const;

/** Lease names used by the handlers: one per cycle kind and one for token refresh, all per tenant. */
export const leaseNames = {
  transactionsCycle: (tenant: string) => `${tenant}#cycle#transactions`,
  cardsCycle: (tenant: string) => `${tenant}#cycle#cards`,
  tokenRefresh: (tenant: string) => `${tenant}#token-refresh`,
} as const;

/** The functions that use the table, each with an IAM role of its own. */
export type TableUser = "pollTransactions" | "pollCards" | "rotateToken";

/**
 * The partition keys each function reads or writes, as IAM `StringLike` patterns for a `dynamodb:LeadingKeys`
 * condition (the CDK app scopes each role's item actions with them). Every function: the token refresh lease and the
 * token partition (access token and revoked-family marker); the rotation nothing more. Both pollers: the PII salt item,
 * which each cycle checks under `hash` before it hashes. The transaction poller: every
 * snapshot of the tenant, its quarantine partition and both cycle leases (a re-drive runs under the transaction
 * cycle's lease; conform-pii rewrites card snapshots too, under both). The card poller: card snapshots only, the
 * quarantine partition and its own cycle lease. Tenant ids hold no `*` or `?`, so only the snapshot patterns' own `*`
 * is a wildcard.
 *
 * @example
 * partitionKeyPatterns("acme", "rotateToken"); // ["LEASE#acme#token-refresh", "TOKEN#acme"]
 */
export function partitionKeyPatterns(tenant: string, user: TableUser): string[] {
  const token = [...new Set([leaseItemKey(leaseNames.tokenRefresh(tenant)).pk, accessTokenItemKey(tenant).pk, revokedFamilyItemKey(tenant).pk])];
  if (user === "rotateToken") return token;
  const salt = piiSaltItemKey(tenant).pk;
  if (user === "pollCards") {
    return [`${snapshotPartitionPrefix(tenant)}${CARD_KEY_PREFIX}*`, quarantinePartition(tenant), leaseItemKey(leaseNames.cardsCycle(tenant)).pk, salt, ...token];
  }
  return [
    `${snapshotPartitionPrefix(tenant)}*`,
    quarantinePartition(tenant),
    leaseItemKey(leaseNames.transactionsCycle(tenant)).pk,
    leaseItemKey(leaseNames.cardsCycle(tenant)).pk,
    salt,
    ...token,
  ];
}

/**
 * Global secondary index of the table: partition key `pk`, sort key `ttl`, keys only. Sparse: it holds the items with
 * a `ttl` (quarantine records, leases, the access token), never a snapshot. `DynamoQuarantine.size` counts from it, so
 * a count reads ~100 bytes an entry instead of whole records with their raw bodies. Named here, not in infra, so the
 * table (infra/constructs/tenant-table.ts) and the code querying it cannot drift.
 */
export const LIVE_BY_TTL_INDEX = "live-by-ttl";

/** Epoch seconds for DynamoDB's TTL attribute. */
export const ttlSeconds = (epochMs: number): number => Math.ceil(epochMs / 1000);
