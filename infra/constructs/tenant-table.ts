import { RemovalPolicy } from "aws-cdk-lib";
import * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as kms from "aws-cdk-lib/aws-kms";
import { Construct } from "constructs";

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
 * Item actions a poller sends (shared/aws): snapshots (BatchGet, BatchWrite), quarantine (conditional Put, Update of
 * the TTL of a record found again, Query for its size and the re-drive, Delete once re-driven), leases (conditional
 * Put, Delete; never renewed, the cycle lease outlives the function timeout) and the shared access token (Get, Put,
 * Delete).
 */
export const POLLER_TABLE_ACTIONS = [
  "dynamodb:GetItem",
  "dynamodb:BatchGetItem",
  "dynamodb:Query",
  "dynamodb:PutItem",
  "dynamodb:DeleteItem",
  "dynamodb:UpdateItem",
  "dynamodb:BatchWriteItem",
] as const;

/**
 * Table actions only the transaction poller sends: the Scan of its `conform-pii` action, which walks the tenant's
 * snapshots to re-mask them after a PII mode switch.
 */
export const SNAPSHOT_SCAN_ACTIONS = ["dynamodb:Scan"] as const;

/** Item actions the token rotation sends: the token lease and the shared access token only. */
export const ROTATION_TABLE_ACTIONS = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem"] as const;

/**
 * The tenant's DynamoDB table: snapshots, leases and quarantine (keys `pk`/`sk`, TTL attribute `ttl`).
 * On demand, point-in-time recovery, encrypted with the tenant key.
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
  }

  /**
   * Grants item actions (e.g. {@link POLLER_TABLE_ACTIONS}) on this table only (no index or stream ARNs, no
   * wildcard).
   */
  grantItemAccess(grantee: iam.IGrantable, actions: readonly string[]): void {
    grantee.grantPrincipal.addToPrincipalPolicy(new iam.PolicyStatement({ actions: [...actions], resources: [this.table.tableArn] }));
  }
}
