import { App, Duration, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import * as kms from "aws-cdk-lib/aws-kms";
import { describe, expect, it } from "vitest";
import { FailureQueue } from "../../infra/constructs/failure-queue.js";

/** The MessageRetentionPeriod of a FailureQueue made with the given retention. */
function retentionSeconds(retentionPeriod?: Duration): unknown {
  const stack = new Stack(new App(), "Acme");
  new FailureQueue(stack, "DeadLetters", { encryptionKey: new kms.Key(stack, "Key"), ...(retentionPeriod === undefined ? {} : { retentionPeriod }) });
  const [queue] = Object.values(Template.fromStack(stack).findResources("AWS::SQS::Queue")) as [{ Properties: { MessageRetentionPeriod: unknown } }];
  return queue.Properties.MessageRetentionPeriod;
}

describe("FailureQueue", () => {
  it("keeps a failed message the SQS maximum of 14 days, or the retention it is given", () => {
    expect(retentionSeconds()).toBe(14 * 24 * 3600);
    expect(retentionSeconds(Duration.days(4))).toBe(4 * 24 * 3600);
  });
});
