/**
 * Behaviours of the tenant constructs (infra/constructs: tenant-secret, tenant-event-bus, failure-queue,
 * webhook-forwarder) that hand mutation found no test watching: each test here fails on one such change (named in its
 * comment) and passes on the constructs as they are.
 */
import { Duration, Stack } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import * as iam from "aws-cdk-lib/aws-iam";
import * as kms from "aws-cdk-lib/aws-kms";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { describe, expect, it } from "vitest";
import { TenantEventBus } from "../../infra/constructs/tenant-event-bus.js";
import { TenantSecret } from "../../infra/constructs/tenant-secret.js";
import { exampleStacks, testApp } from "./helpers.js";

type Resource = { Properties: Record<string, unknown> };

/** A TenantSecret alone in a stack pinned to account 111111111111. */
function secretStack(): { stack: Stack; secret: TenantSecret } {
  const stack = new Stack(testApp(), "Rotation", { env: { account: "111111111111", region: "eu-west-1" } });
  const secret = new TenantSecret(stack, "Secret", { tenantId: "acme", leaseTableName: "table", encryptionKey: new kms.Key(stack, "Key") });
  return { stack, secret };
}

describe("tenant construct settings an operator or a deploy relies on", () => {
  it("keeps every dead letter 14 days, the SQS maximum, the created bus's as the webhooks' and the pollers'", () => {
    // mutant: the bus's FailureQueue given a shorter retentionPeriod (the hasResourceProperties pin matches any one queue)
    const { acme } = exampleStacks();
    const queues = Object.entries(acme.template.findResources("AWS::SQS::Queue")) as [string, Resource][];
    expect(queues.map(([id]) => id.replace(/Queue[0-9A-F]{8}$/, "")).sort()).toEqual([
      "EventBusDeadLetters",
      "PollerDeadLetters",
      "WebhookcardsauditDeadLetters",
      "WebhookerpDeadLetters",
    ]);
    for (const [id, queue] of queues) expect(queue.Properties["MessageRetentionPeriod"], id).toBe(14 * 24 * 3600);
  });

  it("tells who reads the secret in the console that pii_salt must never change: the hashed identifiers depend on it", () => {
    // mutant: the description's last sentence dropped
    exampleStacks().acme.template.hasResourceProperties("AWS::SecretsManager::Secret", {
      Description: Match.stringLikeRegexp("Do not write this JSON by hand: pii_salt must stay unchanged \\(hashed identifiers depend on it\\)\\.$"),
    });
  });

  it("names the tenant in the description of its bus and archive, and the tenant and webhook in each webhook resource's", () => {
    // mutants: a description that no longer names the tenant (bus, archive) or the webhook (rule, connection, destination, role)
    const { template } = exampleStacks().acme;
    const descriptions = (type: string): unknown[] => (Object.values(template.findResources(type)) as Resource[]).map((r) => r.Properties["Description"]).sort();
    expect(descriptions("AWS::Events::EventBus")).toEqual(["qashio-bridge events of tenant acme-sandbox"]);
    expect(descriptions("AWS::Events::Archive")).toEqual(["qashio-bridge tenant acme-sandbox: replay source"]);
    expect(descriptions("AWS::Events::Rule")).toEqual([
      "qashio-bridge acme-sandbox: card.created, card.updated, card.suspended, card.status_changed to webhook cards-audit",
      "qashio-bridge acme-sandbox: transaction.created, transaction.changed to webhook erp",
    ]);
    const webhooks = ["qashio-bridge acme-sandbox webhook cards-audit", "qashio-bridge acme-sandbox webhook erp"];
    expect(descriptions("AWS::Events::Connection")).toEqual(webhooks);
    expect(descriptions("AWS::Events::ApiDestination")).toEqual(webhooks);
    const roles = (Object.entries(template.findResources("AWS::IAM::Role")) as [string, Resource][]).filter(([id]) => id.startsWith("Webhook"));
    expect(roles.map(([, r]) => r.Properties["Description"]).sort()).toEqual([
      "qashio-bridge acme-sandbox: EventBridge delivering to webhook cards-audit",
      "qashio-bridge acme-sandbox: EventBridge delivering to webhook erp",
    ]);
  });

  it("counts a webhook rule's lost events as a Sum, unless the caller asks for another statistic or period", () => {
    // mutant: `statistic: "Sum"` after `...options`, so a caller's statistic is ignored
    const [forwarder] = exampleStacks().acme.stack.webhooks;
    expect(forwarder?.metricInvocationsFailedToBeSentToDlq().statistic).toBe("Sum");
    const custom = forwarder?.metricInvocationsFailedToBeSentToDlq({ statistic: "Maximum", period: Duration.minutes(1) });
    expect(custom?.statistic).toBe("Maximum");
    expect(custom?.period.toMinutes()).toBe(1);
  });

  it("conditions only Secrets Manager's invoke of the rotation function on the account, not another permission the function has", () => {
    // mutant: the filter on the Secrets Manager principal dropped, so every permission of the function gets SourceAccount
    const { stack, secret } = secretStack();
    const rotate = new lambda.Function(stack, "Rotate", { runtime: lambda.Runtime.NODEJS_20_X, handler: "index.handler", code: lambda.Code.fromInline("exports.handler = async () => {};") });
    // a topic of another account: a SourceAccount of this stack's would refuse its invokes
    rotate.addPermission("FromTopic", { principal: new iam.ServicePrincipal("sns.amazonaws.com"), sourceArn: "arn:aws:sns:eu-west-1:222222222222:alerts" });
    secret.addTokenRotation(rotate);
    const permissions = (Object.values(Template.fromStack(stack).findResources("AWS::Lambda::Permission")) as Resource[]).map((p) => p.Properties);
    expect(permissions.find((p) => p["Principal"] === "secretsmanager.amazonaws.com")?.["SourceAccount"]).toEqual({ Ref: "AWS::AccountId" });
    expect(permissions.find((p) => p["Principal"] === "sns.amazonaws.com")).not.toHaveProperty("SourceAccount");
  });

  it("fails synth rather than schedule the rotation through a function Secrets Manager gets no permission on (another account's)", () => {
    // mutant: the check for a created Lambda permission dropped, so the rotation is scheduled without one
    const { stack, secret } = secretStack();
    const foreign = lambda.Function.fromFunctionArn(stack, "Foreign", "arn:aws:lambda:eu-west-1:222222222222:function:rotate");
    expect(() => secret.addTokenRotation(foreign)).toThrow("RotationSchedule created no Lambda permission for Secrets Manager to condition");
  });

  it("archives and grants PutEvents on a bus imported by ARN under that ARN's exact text, which a deployed archive's SourceArn holds", () => {
    // mutant: the ARN's bus imported by its name (fromEventBusName), whose ARN is rebuilt from the stack's partition token:
    // a changed SourceArn replaces the archive and loses its events
    const arn = "arn:aws:events:eu-west-1:111111111111:event-bus/shared";
    const stack = new Stack(testApp(), "Imported", { env: { account: "111111111111", region: "eu-west-1" } });
    const bus = new TenantEventBus(stack, "EventBus", { tenantId: "acme", bus: { mode: "import", arn }, eventSource: "qashio.bridge", encryptionKey: new kms.Key(stack, "Key") });
    bus.grantPutEvents(new iam.Role(stack, "Publisher", { assumedBy: new iam.ServicePrincipal("lambda.amazonaws.com") }));
    const template = Template.fromStack(stack);
    template.hasResourceProperties("AWS::Events::Archive", { SourceArn: arn });
    template.hasResourceProperties("AWS::IAM::Policy", { PolicyDocument: { Statement: [Match.objectLike({ Action: "events:PutEvents", Resource: arn })] } });
    expect(bus.busNameForPutEvents).toBe(arn);
  });
});
