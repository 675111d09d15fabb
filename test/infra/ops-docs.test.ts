import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Template } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { loadTenantsFile, type TenantConfig } from "../../infra/tenant-config.js";
import type { TenantStack } from "../../infra/tenant-stack.js";
import { runbookIntro, runbookSection } from "../runbook-section.js";
import { buildTestApp, EXAMPLE_TENANTS_FILE, exampleStacks, REPO_ROOT } from "./helpers.js";

interface AlarmProperties {
  readonly AlarmName: string;
  readonly Namespace?: string;
  readonly MetricName?: string;
  readonly TreatMissingData?: string;
}

let fastPath: Template | undefined;

/** globex with the card fast path (cards every 30 minutes, suspended cards every 2), built once per file. */
function fastPathGlobex(): Template {
  if (fastPath === undefined) {
    const globex = loadTenantsFile(EXAMPLE_TENANTS_FILE).find((t) => t.id === "globex") as TenantConfig;
    const tenant = { ...globex, schedules: { ...globex.schedules, cardsEveryMinutes: 30, suspendedCardsEveryMinutes: 2 } };
    const [stack] = buildTestApp({ tenants: [tenant] }).stacks as [TenantStack];
    fastPath = Template.fromStack(stack);
  }
  return fastPath;
}

function alarmsOf(template: Template): AlarmProperties[] {
  return Object.values(template.findResources("AWS::CloudWatch::Alarm")).map((resource) => (resource as { Properties: AlarmProperties }).Properties);
}

/** An alarm's name without its `QashioBridge-<tenant>-` prefix, e.g. `Heartbeat-PollCards`. */
const suffixOf = (alarm: AlarmProperties) => alarm.AlarmName.replace(/^QashioBridge-(?:globex|acme-sandbox)-/, "");

describe("the runbook's opening says which alarms' signals the dashboard leaves out", () => {
  it("counts as ungraphed only the heartbeats on Lambda Invocations: a fast-path tenant's cycle heartbeats are graphed", () => {
    const template = fastPathGlobex();
    const dashboard = JSON.stringify(template.findResources("AWS::CloudWatch::Dashboard"));
    const graphed = alarmsOf(template).filter(
      (alarm) =>
        suffixOf(alarm).startsWith("Heartbeat") &&
        alarm.Namespace === "QashioBridge" &&
        dashboard.includes(String.raw`\"QashioBridge\",\"${alarm.MetricName}\"`),
    );
    expect(graphed.map((alarm) => alarm.MetricName).sort()).toEqual(["FastPathCardWalks", "FullCardWalks"]);
    // The opening's exception for the heartbeats on Invocations names each of these as one whose metric is graphed.
    const exception = /the Heartbeat alarms but ([^)]*)\)/.exec(runbookIntro())?.[1] ?? "";
    for (const alarm of graphed) {
      expect(exception).toContain(`\`${suffixOf(alarm)}\``);
      expect(exception).toContain(`\`${alarm.MetricName}\``);
    }
  });
});

describe("docs/spec-gaps.md's Metric dimensions names every alarm on a plain bridge metric", () => {
  it("names each such alarm and its metric, a fast-path tenant's heartbeats included", () => {
    const specGaps = readFileSync(join(REPO_ROOT, "docs", "spec-gaps.md"), "utf8");
    const bullet = /^- \*\*Metric dimensions\.\*\*[^]*?\n- \*\*/m.exec(specGaps)?.[0] ?? "";
    const plain = [exampleStacks().acme.template, fastPathGlobex()]
      .flatMap(alarmsOf)
      .filter((alarm) => alarm.Namespace === "QashioBridge");
    expect(plain.length).toBeGreaterThan(5);
    for (const alarm of plain) {
      expect(bullet, suffixOf(alarm)).toContain(suffixOf(alarm));
      expect(bullet, suffixOf(alarm)).toContain(`${alarm.MetricName}\``);
    }
  });
});

describe("the runbook's Function errors says when an errors alarm's OK is no fix", () => {
  it("says Errors-RotateToken, whose missing data does not breach, returns to OK by itself while the rotation stays broken", () => {
    const [rotation] = alarmsOf(exampleStacks().globex.template).filter((alarm) => suffixOf(alarm) === "Errors-RotateToken");
    // The rotation runs once a day: the periods after a failure have no data point, so the alarm clears on its own.
    expect(rotation?.TreatMissingData).toBe("notBreaching");
    const means = runbookSection("Function errors").split("**Do:**")[0] ?? "";
    expect(means).toMatch(/`Errors-RotateToken`[^]*OK by itself[^]*no fix/);
  });
});
