import { RemovalPolicy } from "aws-cdk-lib";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as kms from "aws-cdk-lib/aws-kms";
import { Construct } from "constructs";
import { LIVE_BY_TTL_INDEX } from "../../shared/aws/keys.js";

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

/**
 * Item actions both pollers send (shared/aws): snapshots (BatchGet, BatchWrite), quarantine (conditional Put, Update of
 * the TTL of a record found again; its size is counted on the index, see grantLiveCount), leases (conditional Put,
 * Delete; Update renews the token lease while rotated tokens are saved, a cycle lease is never renewed: it outlives the
 * function timeout) and the shared access token (Get, Put, Delete). Granted with the poller's partition keys
 * (`partitionKeyPatterns` in shared/aws/keys.ts). No Query: only the transaction poller reads the quarantine's records
 * ({@link TRANSACTION_POLLER_TABLE_ACTIONS}); the card poller would otherwise read every quarantined transaction's body.
 */
export const POLLER_TABLE_ACTIONS = [
  "dynamodb:GetItem",
  "dynamodb:BatchGetItem",
  "dynamodb:PutItem",
  "dynamodb:DeleteItem",
  "dynamodb:UpdateItem",
  "dynamodb:BatchWriteItem",
] as const;

/**
 * Item actions of the transaction poller: {@link POLLER_TABLE_ACTIONS}, and Query to list the quarantine for the
 * re-drive and the conform-pii pass (BatchWrite deletes the records re-driven), which run there only.
 */
export const TRANSACTION_POLLER_TABLE_ACTIONS = [...POLLER_TABLE_ACTIONS, "dynamodb:Query"] as const;

/**
 * Item actions the token rotation sends, on the token lease and the shared access token only: the lease is taken (Put),
 * renewed while the rotated secret is written (Update) and released (Delete).
 */
export const ROTATION_TABLE_ACTIONS = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"] as const;

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
   * Grants item actions (e.g. {@link POLLER_TABLE_ACTIONS}) on this table only (no index or stream ARNs, no
   * wildcard), and only on the items whose partition key matches one of `partitionKeys` (IAM `StringLike` patterns,
   * from `partitionKeyPatterns` in shared/aws/keys.ts) through a `dynamodb:LeadingKeys` condition.
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
