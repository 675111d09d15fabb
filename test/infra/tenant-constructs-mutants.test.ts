/**
 * Behaviours of the tenant constructs (infra/constructs: tenant-secret, tenant-event-bus, failure-queue,
 * webhook-forwarder) that hand mutation found no test watching: each test here fails on one such change (named in its
 * comment) and passes on the constructs as they are.
 */
import { Duration } from "aws-cdk-lib";
import { Match } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { exampleStacks } from "./helpers.js";

type Resource = { Properties: Record<string, unknown> };

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
});
