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
   * @default RemovalPolicy.RETAIN (snapshots are the record of what was published)
   */
  readonly removalPolicy?: RemovalPolicy;
}

/** Item-level actions the runtime needs: snapshots (batch), lease and quarantine (conditional single items). */
export const TABLE_DATA_ACTIONS = [
  "dynamodb:GetItem",
  "dynamodb:BatchGetItem",
  "dynamodb:Query",
  "dynamodb:PutItem",
  "dynamodb:UpdateItem",
  "dynamodb:DeleteItem",
  "dynamodb:BatchWriteItem",
  "dynamodb:ConditionCheckItem",
  "dynamodb:DescribeTable",
] as const;

/**
 * The tenant's DynamoDB table: snapshots, leases and quarantine (keys `pk`/`sk`, TTL attribute `ttl`).
 * On demand, point-in-time recovery, encrypted with the tenant key.
 */
export class TenantTable extends Construct {
  /** The table. */
  public readonly table: dynamodb.Table;

  constructor(scope: Construct, id: string, props: TenantTableProps) {
    super(scope, id);
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

  /** Grants the item-level actions on this table only (no index or stream ARNs, no wildcard). */
  grantItemAccess(grantee: iam.IGrantable): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: [...TABLE_DATA_ACTIONS], resources: [this.table.tableArn] }),
    );
  }
}
