import { Template } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { loadTenantsFile, type TenantConfig } from "../../infra/tenant-config.js";
import type { TenantStack } from "../../infra/tenant-stack.js";
import { runbookIntro } from "../runbook-section.js";
import { buildTestApp, EXAMPLE_TENANTS_FILE } from "./helpers.js";

interface AlarmProperties {
  readonly AlarmName: string;
  readonly Namespace?: string;
  readonly MetricName?: string;
}

describe("the runbook's opening says which alarms' signals the dashboard leaves out", () => {
  it("counts as ungraphed only the heartbeats on Lambda Invocations: a fast-path tenant's cycle heartbeats are graphed", () => {
    const globex = loadTenantsFile(EXAMPLE_TENANTS_FILE).find((t) => t.id === "globex") as TenantConfig;
    const tenant = { ...globex, schedules: { ...globex.schedules, cardsEveryMinutes: 30, suspendedCardsEveryMinutes: 2 } };
    const [stack] = buildTestApp({ tenants: [tenant] }).stacks as [TenantStack];
    const template = Template.fromStack(stack);
    const dashboard = JSON.stringify(template.findResources("AWS::CloudWatch::Dashboard"));
    const heartbeats = Object.values(template.findResources("AWS::CloudWatch::Alarm"))
      .map((resource) => (resource as { Properties: AlarmProperties }).Properties)
      .filter((alarm) => alarm.AlarmName.startsWith("QashioBridge-globex-Heartbeat"));
    const graphed = heartbeats.filter((alarm) => alarm.Namespace === "QashioBridge" && dashboard.includes(String.raw`\"QashioBridge\",\"${alarm.MetricName}\"`));
    expect(graphed.map((alarm) => alarm.MetricName).sort()).toEqual(["FastPathCardWalks", "FullCardWalks"]);
    // The opening's exception for the heartbeats on Invocations names each of these as one whose metric is graphed.
    const exception = /the Heartbeat alarms but ([^)]*)\)/.exec(runbookIntro())?.[1] ?? "";
    for (const alarm of graphed) {
      const name = alarm.AlarmName.replace("QashioBridge-globex-", "");
      expect(exception).toContain(`\`${name}\``);
      expect(exception).toContain(`\`${alarm.MetricName}\``);
    }
  });
});
