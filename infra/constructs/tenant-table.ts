import { RemovalPolicy } from "aws-cdk-lib";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as kms from "aws-cdk-lib/aws-kms";
import { Construct } from "constructs";
import { LIVE_BY_TTL_INDEX, partitionKeyPatterns, type PartitionKind, type TableUser } from "../../shared/aws/keys.js";

/** Properties of {@link TenantTable}. */
export interface TenantTableProps {
  /** Customer-managed key encrypting the table. */
  readonly encryptionKey: kms.IKey;
  /**
   * What happens to the table when the stack is deleted.
   * @default RemovalPolicy.RETAIN (snapshots are the record of what was published). Not RETAIN_ON_UPDATE_OR_DELETE
   * like the key, secret and queues: the table has deletion protection, which refuses CloudFormation's DeleteTable
   * too, so a rollback of a failed first create could not remove it and would end in ROLLBACK_FAILED. Its name is
   * generated, so the empty table a failed first deploy leaves behind does not block the retry (runbook,
   * "Offboarding and renaming a tenant").
   */
  readonly removalPolicy?: RemovalPolicy;
}

/** An item action a function's role may be granted on the table's partitions (a Scan is granted apart: grantScan). */
export type TableItemAction =
  | "dynamodb:GetItem"
  | "dynamodb:BatchGetItem"
  | "dynamodb:PutItem"
  | "dynamodb:UpdateItem"
  | "dynamodb:DeleteItem"
  | "dynamodb:BatchWriteItem"
  | "dynamodb:Query";

/** A lease (shared/aws/lease-lock.ts): taken with a conditional Put, released with a conditional Delete. */
const CYCLE_LEASE: readonly TableItemAction[] = ["dynamodb:PutItem", "dynamodb:DeleteItem"];
/** The token refresh lease: a cycle lease's actions and Update, which renews it while rotated tokens are saved. */
const TOKEN_LEASE: readonly TableItemAction[] = [...CYCLE_LEASE, "dynamodb:UpdateItem"];
/**
 * The token partition (shared/aws/token-store.ts): the access token read, put and deleted (nothing left to hold),
 * the revoked-family marker read, put and deleted when it names an older secret version.
 */
const TOKEN: readonly TableItemAction[] = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem"];
/** The PII salt item (shared/aws/pii-salt.ts): read, and put conditionally when no or another fingerprint is recorded. */
const PII_SALT: readonly TableItemAction[] = ["dynamodb:GetItem", "dynamodb:PutItem"];
/** Snapshots (shared/aws/snapshot-store.ts): BatchGet and BatchWrite of puts; never a single-item call. */
const SNAPSHOTS: readonly TableItemAction[] = ["dynamodb:BatchGetItem", "dynamodb:BatchWriteItem"];
/**
 * Quarantine records (shared/aws/quarantine.ts), written by both pollers: an Update, new record or found again, and a
 * Put for one past its TTL not yet swept. Its size is counted on the index (grantLiveCount).
 */
const QUARANTINE_WRITE: readonly TableItemAction[] = ["dynamodb:PutItem", "dynamodb:UpdateItem"];

/**
 * The item actions each function's code sends on each kind of partition (`partitionKeyPatterns` in
 * shared/aws/keys.ts), and no other: test/functions/table-access.test.ts fails on a grant no recorded request uses.
 * The transaction poller: every snapshot (conform-pii rewrites card snapshots too), the quarantine also read (Query:
 * the re-drive and conform-pii list it) and deleted from (BatchWrite: the records re-driven), both cycle leases (a
 * re-drive runs under the transaction cycle's, conform-pii under both), the token lease, token and PII salt. The card
 * poller: card snapshots only, quarantine writes (it never reads a record, which would hold a quarantined
 * transaction's body, nor deletes one), its own cycle lease, the token lease, token and PII salt. The rotation: the
 * token lease and token only. Neither cycle lease is renewed: it outlives the function timeout.
 */
export const TABLE_ACCESS: Readonly<Record<TableUser, Readonly<Partial<Record<PartitionKind, readonly TableItemAction[]>>>>> = {
  pollTransactions: {
    snapshots: SNAPSHOTS,
    quarantine: [...QUARANTINE_WRITE, "dynamodb:Query", "dynamodb:BatchWriteItem"],
    transactionsCycleLease: CYCLE_LEASE,
    cardsCycleLease: CYCLE_LEASE,
    tokenLease: TOKEN_LEASE,
    token: TOKEN,
    piiSalt: PII_SALT,
  },
  pollCards: {
    cardSnapshots: SNAPSHOTS,
    quarantine: QUARANTINE_WRITE,
    cardsCycleLease: CYCLE_LEASE,
    tokenLease: TOKEN_LEASE,
    token: TOKEN,
    piiSalt: PII_SALT,
  },
  rotateToken: { tokenLease: TOKEN_LEASE, token: TOKEN },
};

/** Item actions on the partitions matching `partitionKeys` (IAM `StringLike` patterns): one statement. */
export interface ItemGrant {
  readonly actions: readonly TableItemAction[];
  readonly partitionKeys: readonly string[];
}

/**
 * {@link TABLE_ACCESS} of `user` for `tenant`, as few grants as it allows: partitions whose actions are the same
 * share one (the transaction poller's two cycle leases), so each role keeps a statement per set of actions and its
 * policy stays well under IAM's size limit. Actions sorted, partition keys in {@link TABLE_ACCESS}'s order.
 *
 * @example
 * tableGrants("acme", "rotateToken"); // [{ actions: [Delete, Put, Update], partitionKeys: ["LEASE#acme#token-refresh"] }, ...]
 */
export function tableGrants(tenant: string, user: TableUser): ItemGrant[] {
  const patterns = partitionKeyPatterns(tenant);
  const grants = new Map<string, { actions: TableItemAction[]; partitionKeys: string[] }>();
  for (const [kind, actions] of Object.entries(TABLE_ACCESS[user]) as [PartitionKind, readonly TableItemAction[]][]) {
    const sorted = [...new Set(actions)].sort();
    const grant = grants.get(sorted.join()) ?? { actions: sorted, partitionKeys: [] };
    grant.partitionKeys.push(patterns[kind]);
    grants.set(sorted.join(), grant);
  }
  return [...grants.values()];
}

/**
 * Condition operator of the `dynamodb:LeadingKeys` scope: every partition key a request names (all of a batch's)
 * must match one of the patterns (`StringLike`, so `SNAP#<tenant>#*` covers the snapshots).
 */
const LEADING_KEYS_OPERATOR = "ForAllValues:StringLike";

/** The IAM condition letting a request name only partition keys matching `partitionKeys`. */
const leadingKeysCondition = (partitionKeys: readonly string[]) => ({ [LEADING_KEYS_OPERATOR]: { "dynamodb:LeadingKeys": [...partitionKeys] } });

/**
 * The tenant's DynamoDB table: snapshots, leases and quarantine (keys `pk`/`sk`, TTL attribute `ttl`), with the
 * keys-only index LIVE_BY_TTL_INDEX (`pk`, `ttl`) the quarantine is counted on. On demand, point-in-time recovery,
 * encrypted with the tenant key.
 */
export class TenantTable extends Construct {
  /** The table. */
  public readonly table: dynamodb.Table;

  constructor(scope: Construct, id: string, props: TenantTableProps) {
    super(scope, id);
    // The id "Table" must never change on deployed stacks (it makes the logical id; test/infra pins it).
    this.table = new dynamodb.Table(this, "Table", {
      partitionKey: { name: "pk", type: dynamodb.AttributeType.STRING },
      sortKey: { name: "sk", type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED,
      encryptionKey: props.encryptionKey,
      timeToLiveAttribute: "ttl",
      deletionProtection: true,
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    });
    // Sparse (items without `ttl`, the snapshots, are not in it) and keys only: counting the quarantine reads ~100
    // bytes a record there, where a Query on the table reads each record's raw body. Added in place to a deployed table.
    this.table.addGlobalSecondaryIndex({
      indexName: LIVE_BY_TTL_INDEX,
      partitionKey: { name: "pk", type: dynamodb.AttributeType.STRING },
      sortKey: { name: "ttl", type: dynamodb.AttributeType.NUMBER },
      projectionType: dynamodb.ProjectionType.KEYS_ONLY,
    });
  }

  /**
   * Grants item actions (one of {@link tableGrants}) on this table only (no index or stream ARNs, no
   * wildcard), and only on the items whose partition key matches one of `partitionKeys` (IAM `StringLike` patterns,
   * from `partitionKeyPatterns` in shared/aws/keys.ts) through a `dynamodb:LeadingKeys` condition. A batch request
   * must name partitions of one grant only: every key it names is checked against one statement.
   */
  grantItemAccess(grantee: iam.IGrantable, actions: readonly string[], partitionKeys: readonly string[]): void {
    if (partitionKeys.length === 0) throw new Error("grantItemAccess needs at least one partition key pattern");
    if (actions.includes("dynamodb:Scan")) {
      // A Scan names no partition key: the condition would not scope it (ForAllValues of nothing is true).
      throw new Error("dynamodb:Scan cannot be scoped by dynamodb:LeadingKeys; use grantScan");
    }
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: [...actions], resources: [this.table.tableArn], conditions: leadingKeysCondition(partitionKeys) }),
    );
  }

  /**
   * Grants `dynamodb:Query` on the index LIVE_BY_TTL_INDEX only (its ARN, no `index/*`), on the partitions matching
   * `partitionKeys` (IAM `StringLike` patterns): the index's partition key is the table's `pk`, so the partition key
   * value a Query names there, `dynamodb:LeadingKeys`, is the one it names on the table.
   */
  grantLiveCount(grantee: iam.IGrantable, partitionKeys: readonly string[]): void {
    if (partitionKeys.length === 0) throw new Error("grantLiveCount needs at least one partition key pattern");
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ["dynamodb:Query"],
        resources: [`${this.table.tableArn}/index/${LIVE_BY_TTL_INDEX}`],
        conditions: leadingKeysCondition(partitionKeys),
      }),
    );
  }

  /**
   * Grants `dynamodb:Scan` on this table, without a partition-key condition: a Scan names no partition key, so
   * `dynamodb:LeadingKeys` cannot scope it and the caller reads every item of the (tenant's own) table.
   */
  grantScan(grantee: iam.IGrantable): void {
    grantee.grantPrincipal.addToPrincipalPolicy(new iam.PolicyStatement({ actions: ["dynamodb:Scan"], resources: [this.table.tableArn] }));
  }
}
