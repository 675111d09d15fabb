import { App, Duration, Stack } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import * as kms from "aws-cdk-lib/aws-kms";
import { describe, expect, it } from "vitest";
import { FailureQueue } from "../../infra/constructs/failure-queue.js";

/** The template of a stack holding one FailureQueue made with the given retention. */
function failureQueueTemplate(retentionPeriod?: Duration): Template {
  const stack = new Stack(new App(), "Acme");
  new FailureQueue(stack, "DeadLetters", { encryptionKey: new kms.Key(stack, "Key"), ...(retentionPeriod === undefined ? {} : { retentionPeriod }) });
  return Template.fromStack(stack);
}

/** The MessageRetentionPeriod of a FailureQueue made with the given retention. */
function retentionSeconds(retentionPeriod?: Duration): unknown {
  const [queue] = Object.values(failureQueueTemplate(retentionPeriod).findResources("AWS::SQS::Queue")) as [{ Properties: { MessageRetentionPeriod: unknown } }];
  return queue.Properties.MessageRetentionPeriod;
}

describe("FailureQueue", () => {
  it("keeps a failed message the SQS maximum of 14 days, or the retention it is given", () => {
    expect(retentionSeconds()).toBe(14 * 24 * 3600);
    expect(retentionSeconds(Duration.days(4))).toBe(4 * 24 * 3600);
  });

  // Failed deliveries may hold cardholder data: the queue refuses any request not made over TLS (cdk-nag checks it too, but
  // an acknowledgement added there later would hide its loss).
  it("refuses every request made without TLS", () => {
    failureQueueTemplate().hasResourceProperties("AWS::SQS::QueuePolicy", {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: "Deny", Action: "sqs:*", Principal: { AWS: "*" }, Condition: { Bool: { "aws:SecureTransport": "false" } } }),
        ]),
      },
    });
  });
});
