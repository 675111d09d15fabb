import { Duration, RemovalPolicy, Stack } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import * as kms from "aws-cdk-lib/aws-kms";
import { Construct } from "constructs";

/** Services that store the tenant's data under the key on a caller's behalf. */
export type KeyService = "dynamodb" | "secretsmanager" | "sqs";

/**
 * Key actions a caller of each service needs. None calls kms:Encrypt: they encrypt under data keys
 * (GenerateDataKey) and read with Decrypt; an SQS producer needs no key metadata.
 */
export const KEY_ACTIONS_VIA: Readonly<Record<KeyService, readonly string[]>> = {
  dynamodb: ["kms:Decrypt", "kms:GenerateDataKey", "kms:DescribeKey"],
  secretsmanager: ["kms:Decrypt", "kms:GenerateDataKey", "kms:DescribeKey"],
  sqs: ["kms:Decrypt", "kms:GenerateDataKey"],
};

/** Properties of {@link TenantKey}. */
export interface TenantKeyProps {
  /** Tenant id, named in the key's alias and description. */
  readonly tenantId: string;
  /**
   * Let CloudWatch alarms use the key (needed when the alarm topic is encrypted with it).
   * @default true
   */
  readonly allowCloudWatchAlarms?: boolean;
  /**
   * Let EventBridge use the key (needed when a rule's DLQ is encrypted with it).
   * @default true
   */
  readonly allowEventBridgeDlq?: boolean;
}

/**
 * The tenant's customer-managed KMS key: encrypts its table, secret, queues, alarm topic, event bus and archive, so one
 * tenant's data can be revoked or audited without touching another's.
 */
export class TenantKey extends Construct {
  /** The key, with yearly automatic rotation. */
  public readonly key: kms.Key;

  /**
   * Lets a principal use the key through the given services only (kms:ViaService), with the actions those services
   * need ({@link KEY_ACTIONS_VIA}) instead of grantEncryptDecrypt's `Encrypt`/`GenerateDataKey*`/`ReEncrypt*`.
   */
  grantDataUse(grantee: iam.IGrantable, services: readonly KeyService[]): void {
    const region = Stack.of(this).region;
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: [...new Set(services.flatMap((service) => KEY_ACTIONS_VIA[service]))],
        resources: [this.key.keyArn],
        conditions: {
          StringEquals: { "kms:ViaService": services.map((service) => `${service}.${region}.amazonaws.com`) },
        },
      }),
    );
  }

  constructor(scope: Construct, id: string, props: TenantKeyProps) {
    super(scope, id);
    const account = Stack.of(this).account;
    this.key = new kms.Key(this, "Key", {
      alias: `alias/qashio-bridge/${props.tenantId}`,
      description: `qashio-bridge tenant ${props.tenantId}: table, secret, queues, alarm topic, event bus and archive`,
      enableKeyRotation: true,
      pendingWindow: Duration.days(30),
      removalPolicy: RemovalPolicy.RETAIN,
    });
    if (props.allowCloudWatchAlarms ?? true) {
      // CloudWatch alarms publish to the encrypted topic only if the key policy lets them
      this.key.addToResourcePolicy(
        new iam.PolicyStatement({
          sid: "AllowCloudWatchAlarmsToPublishToEncryptedTopic",
          principals: [new iam.ServicePrincipal("cloudwatch.amazonaws.com")],
          actions: ["kms:Decrypt", "kms:GenerateDataKey*"],
          resources: ["*"],
          conditions: { StringEquals: { "aws:SourceAccount": account } },
        }),
      );
    }
    if (props.allowEventBridgeDlq ?? true) {
      // EventBridge writes undeliverable webhook events to the encrypted DLQ under its own principal
      this.key.addToResourcePolicy(
        new iam.PolicyStatement({
          sid: "AllowEventBridgeToWriteEncryptedDeadLetters",
          principals: [new iam.ServicePrincipal("events.amazonaws.com")],
          actions: ["kms:Decrypt", "kms:GenerateDataKey"],
          resources: ["*"],
          conditions: { StringEquals: { "aws:SourceAccount": account } },
        }),
      );
    }
  }
}
