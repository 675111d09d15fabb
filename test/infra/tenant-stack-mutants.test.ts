/**
 * Behaviours of the tenant stack that hand mutation of infra/tenant-stack.ts found no test watching: each test here
 * fails on one such change (named in its comment) and passes on the stack as it is.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { exampleStacks, REPO_ROOT } from "./helpers.js";

describe("tenant stack settings the runbook and the alarms rely on", () => {
  it("gives the rotation function the 10-minute timeout the runbook tells an operator to set back (--timeout 600)", () => {
    // mutant: Duration.minutes(5), still over MIN_ROTATION_TIMEOUT_MS
    const runbook = readFileSync(join(REPO_ROOT, "docs", "runbook.md"), "utf8");
    expect(runbook).toContain("the stack sets 10 minutes");
    expect(runbook).toContain("--function-name <RotateTokenFunction name> --timeout 600");
    const { acme } = exampleStacks();
    acme.template.hasResourceProperties("AWS::Lambda::Function", { Description: `qashio-bridge acme-sandbox: Secrets Manager rotation, refreshes the provider token under the lease`, Timeout: 600 });
  });

  it("outputs exactly what the runbook's outputs line lists, each the resource's ARN or name as its key says", () => {
    // mutants: the DashboardName output dropped; SecretArn giving the secret's name
    const runbook = readFileSync(join(REPO_ROOT, "docs", "runbook.md"), "utf8");
    const line = /^# (SecretArn, .*)$/m.exec(runbook)?.[1] ?? "";
    const listed = line.replace(/ \([^)]*\)/g, "").split(", ");
    const { acme, globex } = exampleStacks();
    for (const { template } of [acme, globex]) {
      const outputs = template.toJSON().Outputs as Record<string, { Value: unknown }>;
      expect(Object.keys(outputs).sort()).toEqual([...listed].sort());
      const refOf = (type: string) => ({ Ref: Object.keys(template.findResources(type))[0] });
      // Ref of a secret is its ARN, of a table and a dashboard their names
      expect(outputs.SecretArn?.Value).toEqual(refOf("AWS::SecretsManager::Secret"));
      expect(outputs.TableName?.Value).toEqual(refOf("AWS::DynamoDB::Table"));
      expect(outputs.DashboardName?.Value).toEqual(refOf("AWS::CloudWatch::Dashboard"));
    }
  });
});
