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
 * The kinds of partition a function's IAM role is granted item actions on, each its own actions (TABLE_ACCESS in
 * infra/constructs/tenant-table.ts): every snapshot, the card snapshots alone, the quarantine, each cycle lease, the
 * token refresh lease, the token partition (access token and revoked-family marker) and the PII salt item.
 */
export type PartitionKind =
  | "snapshots"
  | "cardSnapshots"
  | "quarantine"
  | "transactionsCycleLease"
  | "cardsCycleLease"
  | "tokenLease"
  | "token"
  | "piiSalt";

/**
 * The partition keys of each kind of partition of `tenant`, as an IAM `StringLike` pattern for a
 * `dynamodb:LeadingKeys` condition. Tenant ids hold no `*` or `?`, so only the snapshot patterns' own `*` is a
 * wildcard.
 *
 * @example
 * partitionKeyPatterns("acme").cardSnapshots; // "SNAP#acme#card:*"
 */
export function partitionKeyPatterns(tenant: string): Record<PartitionKind, string> {
  return {
    snapshots: `${snapshotPartitionPrefix(tenant)}*`,
    cardSnapshots: `${snapshotPartitionPrefix(tenant)}${CARD_KEY_PREFIX}*`,
    quarantine: quarantinePartition(tenant),
    transactionsCycleLease: leaseItemKey(leaseNames.transactionsCycle(tenant)).pk,
    cardsCycleLease: leaseItemKey(leaseNames.cardsCycle(tenant)).pk,
    tokenLease: leaseItemKey(leaseNames.tokenRefresh(tenant)).pk,
    // The access token and the revoked-family marker share it.
    token: accessTokenItemKey(tenant).pk,
    piiSalt: piiSaltItemKey(tenant).pk,
  };
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
