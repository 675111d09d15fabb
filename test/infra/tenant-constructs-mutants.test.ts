/**
 * Behaviours of the tenant constructs (infra/constructs: tenant-secret, tenant-event-bus, failure-queue,
 * webhook-forwarder) that hand mutation found no test watching: each test here fails on one such change (named in its
 * comment) and passes on the constructs as they are.
 */
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
});
