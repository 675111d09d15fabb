/**
 * Behaviours of the tenant stack that hand mutation of infra/tenant-stack.ts found no test watching: each test here
 * fails on one such change (named in its comment) and passes on the stack as it is.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Template } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import type { TenantConfig } from "../../infra/tenant-config.js";
import { loadTenantsFile } from "../../infra/tenants-file.js";
import type { TenantStack } from "../../infra/tenant-stack.js";
import { buildTestApp, EXAMPLE_TENANTS_FILE, exampleStacks, REPO_ROOT } from "./helpers.js";

type Alarm = { Properties: { AlarmName: string; Period?: number; EvaluationPeriods: number; DatapointsToAlarm?: number } };

/** The stack's alarms by the name after `QashioBridge-<tenant>-`. */
function alarmsOf(template: Template, tenant: string): Map<string, Alarm["Properties"]> {
  const prefix = `QashioBridge-${tenant}-`;
  return new Map((Object.values(template.findResources("AWS::CloudWatch::Alarm")) as Alarm[]).map((a) => [a.Properties.AlarmName.slice(prefix.length), a.Properties]));
}

const [acmeConfig, globexConfig] = loadTenantsFile(EXAMPLE_TENANTS_FILE) as [TenantConfig, TenantConfig];
const templateOf = (tenant: TenantConfig): Template => Template.fromStack(buildTestApp({ tenants: [tenant] }).stacks[0] as TenantStack);

describe("tenant stack settings the runbook and the alarms rely on", () => {
  it("gives the rotation function the 10-minute timeout the runbook tells an operator to set back (--timeout 600)", () => {
    // mutant: Duration.minutes(5), still over MIN_ROTATION_TIMEOUT_MS
    const runbook = readFileSync(join(REPO_ROOT, "docs", "runbook.md"), "utf8");
    expect(runbook).toContain("the stack sets 10 minutes");
    expect(runbook).toContain("--function-name <RotateTokenFunction name> --timeout 600");
    const { acme } = exampleStacks();
    acme.template.hasResourceProperties("AWS::Lambda::Function", { Description: `qashio-bridge acme-sandbox: Secrets Manager rotation, refreshes the provider token under the lease`, Timeout: 600 });
  });

  it("alarms on unread card details only for a tenant that reads them (cardDetails)", () => {
    // mutant: cardDetailsEveryMinutes passed whatever cardDetails says
    const { acme, globex } = exampleStacks();
    expect(acmeConfig.cardDetails).toBe(true);
    expect(globexConfig.cardDetails).toBe(false);
    // acme's card walks every 15 minutes: the alarm's periods are the walk's
    expect(alarmsOf(acme.template, "acme-sandbox").get("CardDetailsUnread")).toMatchObject({ Period: 900, EvaluationPeriods: 3, DatapointsToAlarm: 2 });
    expect(alarmsOf(globex.template, "globex").has("CardDetailsUnread")).toBe(false);
  });

  it("measures SyncLag and AcknowledgeRefused over the transactions schedule, not the card walks'", () => {
    // mutant: syncLagEveryMinutes from cardsEveryMinutes. globex: transactions every 2 minutes (5-minute periods, the
    // floor), cards every 30.
    const { globex } = exampleStacks();
    const alarms = alarmsOf(globex.template, "globex");
    expect(alarms.get("AcknowledgeRefused")).toMatchObject({ Period: 300, EvaluationPeriods: 3, DatapointsToAlarm: 2 });
    const slow = alarmsOf(templateOf({ ...globexConfig, schedules: { ...globexConfig.schedules, transactionsEveryMinutes: 20, cardsEveryMinutes: 60 } }), "globex");
    expect(slow.get("AcknowledgeRefused")).toMatchObject({ Period: 1200 });
    expect(slow.get("SyncLag")).toMatchObject({ Period: 1200 });
  });

  it("watches the card fast path with a heartbeat over its own schedule, not the full walk's", () => {
    // mutant: the SuspendedCards heartbeat's everyMinutes from cardsEveryMinutes
    const alarms = alarmsOf(templateOf({ ...acmeConfig, schedules: { ...acmeConfig.schedules, cardsEveryMinutes: 60, suspendedCardsEveryMinutes: 10 } }), "acme-sandbox");
    // 10-minute periods, every one of three without a fast-path cycle
    expect(alarms.get("Heartbeat-SuspendedCards")).toMatchObject({ Period: 600, EvaluationPeriods: 3, DatapointsToAlarm: 3 });
    expect(alarms.get("Heartbeat-PollCards")).toMatchObject({ Period: 3600 });
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
