import * as iam from "aws-cdk-lib/aws-iam";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { AwsSolutionsChecks } from "cdk-nag";
import { describe, expect, it } from "vitest";
import type { TenantConfig } from "../../infra/tenant-config.js";
import { loadTenantsFile } from "../../infra/tenants-file.js";
import type { TenantStack } from "../../infra/tenant-stack.js";
import { buildTestApp, EXAMPLE_TENANTS_FILE } from "./helpers.js";

function findings(report: ReturnType<AwsSolutionsChecks["validateScope"]>): string[] {
  return report.violations.flatMap((v) => v.violatingResources.map((r) => `${v.ruleName} ${r.constructPath ?? ""}`));
}

describe("cdk-nag AwsSolutions", () => {
  it("reports no unacknowledged finding on the two-tenant example app", () => {
    const { app } = buildTestApp();
    const report = new AwsSolutionsChecks().validateScope(app);
    expect(findings(report)).toEqual([]);
    expect(report.success).toBe(true);
  });

  it("reports no unacknowledged finding on a tenant with the card fast path (a third schedule on the Scheduler role)", () => {
    const [acme] = loadTenantsFile(EXAMPLE_TENANTS_FILE) as [TenantConfig];
    const { app } = buildTestApp({ tenants: [{ ...acme, schedules: { ...acme.schedules, suspendedCardsEveryMinutes: 2 } }] });
    const report = new AwsSolutionsChecks().validateScope(app);
    expect(findings(report)).toEqual([]);
  });

  it("still reports a finding nobody acknowledged (the check above can fail)", () => {
    const { app, stacks } = buildTestApp();
    new sqs.Queue(stacks[0]!, "UnencryptedQueue", { encryption: sqs.QueueEncryption.UNENCRYPTED });
    const report = new AwsSolutionsChecks().validateScope(app);
    expect(report.success).toBe(false);
    expect(findings(report)).toEqual(
      expect.arrayContaining([expect.stringMatching(/^AwsSolutions-SQS4 QashioBridge-acme-sandbox\/UnencryptedQueue/)]),
    );
  });

  it.each([
    ["PollTransactions", ["secretsmanager:GetSecretValue", "dynamodb:GetItem"]],
    ["PollCards", ["xray:PutTraceSegments", "secretsmanager:GetSecretValue"]],
    ["RotateToken", ["kms:Decrypt"]],
  ] as const)("still fails on any other wildcard on the %s role, whatever its action", (fn, actions) => {
    const { app, stacks } = buildTestApp();
    const stack = stacks[0] as TenantStack;
    const target = { PollTransactions: stack.pollTransactions, PollCards: stack.pollCards, RotateToken: stack.rotateToken }[fn];
    target.function.addToRolePolicy(new iam.PolicyStatement({ actions: [...actions], resources: ["*"] }));
    const report = new AwsSolutionsChecks().validateScope(app);
    expect(report.success).toBe(false);
    expect(findings(report)).toEqual([`AwsSolutions-IAM5[Resource::*] QashioBridge-acme-sandbox/${fn}/Role/DefaultPolicy/Resource`]);
  });

  it("acknowledges the poller's <function ARN>:* only on the Scheduler role's policy, not on another role granted it", () => {
    const { app, stacks } = buildTestApp();
    const stack = stacks[0] as TenantStack;
    const other = new iam.Role(stack, "OtherInvoker", { assumedBy: new iam.ServicePrincipal("lambda.amazonaws.com") });
    stack.pollTransactions.function.grantInvoke(other);
    const report = new AwsSolutionsChecks().validateScope(app);
    expect(report.success).toBe(false);
    expect(findings(report)).toEqual([
      expect.stringMatching(/^AwsSolutions-IAM5\[Resource::<PollTransactionsFunction[0-9A-F]{8}\.Arn>:\*\] QashioBridge-acme-sandbox\/OtherInvoker\/DefaultPolicy\/Resource$/),
    ]);
  });

  it("acknowledges the missing dead-letter queue only on the tenant's dead-letter queues, not on another queue of the stack", () => {
    const { app, stacks } = buildTestApp();
    const stack = stacks[0] as TenantStack;
    new sqs.Queue(stack, "WorkQueue", { encryption: sqs.QueueEncryption.KMS, encryptionMasterKey: stack.key.key, enforceSSL: true });
    const report = new AwsSolutionsChecks().validateScope(app);
    expect(report.success).toBe(false);
    expect(findings(report)).toEqual([expect.stringMatching(/^AwsSolutions-SQS3 QashioBridge-acme-sandbox\/WorkQueue\/Resource$/)]);
  });

  it("runs the checks on synth unless told not to: an app built without the nag option fails on a finding", () => {
    const { app, stacks } = buildTestApp({ nag: undefined });
    new sqs.Queue(stacks[1]!, "UnencryptedQueue", { encryption: sqs.QueueEncryption.UNENCRYPTED });
    expect(() => app.synth()).toThrow(/AwsSolutions-SQS/);
  });

  it("is registered on the app as a validation plugin, so synth fails on a finding", () => {
    const { app, stacks } = buildTestApp({ nag: true });
    new sqs.Queue(stacks[1]!, "UnencryptedQueue", { encryption: sqs.QueueEncryption.UNENCRYPTED });
    expect(() => app.synth()).toThrow(/AwsSolutions-SQS/);
  });
});
