import { Duration, RemovalPolicy } from "aws-cdk-lib";
import type * as kms from "aws-cdk-lib/aws-kms";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";

/** Properties of {@link FailureQueue}. */
export interface FailureQueueProps {
  /** Customer-managed key encrypting the messages. */
  readonly encryptionKey: kms.IKey;
  /**
   * How long a failed message is kept for inspection and redrive.
   * @default Duration.days(14) (the SQS maximum)
   */
  readonly retentionPeriod?: Duration;
}

/**
 * An encrypted SQS queue that receives what could not be delivered (failed poller invocations, schedule
 * deliveries, webhook events). Nothing consumes it automatically: an alarm fires, an operator redrives.
 */
export class FailureQueue extends Construct {
  /** The queue. */
  public readonly queue: sqs.Queue;

  constructor(scope: Construct, id: string, props: FailureQueueProps) {
    super(scope, id);
    this.queue = new sqs.Queue(this, "Queue", {
      encryption: sqs.QueueEncryption.KMS,
      encryptionMasterKey: props.encryptionKey,
      dataKeyReuse: Duration.hours(1),
      enforceSSL: true,
      retentionPeriod: props.retentionPeriod ?? Duration.days(14),
      // kept on update and delete (messages to inspect), removed when the create that made it rolls back
      removalPolicy: RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE,
    });
  }
}
