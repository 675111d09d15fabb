import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Template } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { DASHBOARD_WIDGETS } from "../../infra/constructs/ops-dashboard.js";
import { loadTenantsFile } from "../../infra/tenants-file.js";
import { headingAnchor } from "../markdown-anchor.js";
import { runbookIntro, runbookSection } from "../runbook-section.js";
import { EXAMPLE_TENANTS_FILE, exampleStacks, fastPathGlobex, REPO_ROOT, rotationWindow } from "./helpers.js";

interface AlarmProperties {
  readonly AlarmName: string;
  readonly Namespace?: string;
  readonly MetricName?: string;
  readonly TreatMissingData?: string;
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

/** The runbook's section titles by their GitHub anchor (`## Dead letters` is `#dead-letters`). */
function sectionTitlesByAnchor(): Map<string, string> {
  const runbook = readFileSync(join(REPO_ROOT, "docs", "runbook.md"), "utf8");
  const titles = [...runbook.matchAll(/^## (.+)$/gm)].map((m) => m[1] as string);
  return new Map(titles.map((title) => [headingAnchor(title), title]));
}

describe("the runbook section each alarm links to", () => {
  it("names that alarm, for every kind of tenant: webhooks and a created bus, an imported bus, the card fast path", () => {
    const sections = sectionTitlesByAnchor();
    const templates = [exampleStacks().acme.template, exampleStacks().globex.template, fastPathGlobex()];
    const alarms = templates.flatMap((template) =>
      Object.values(template.findResources("AWS::CloudWatch::Alarm")).map(
        (resource) => (resource as { Properties: AlarmProperties & { AlarmDescription: string } }).Properties,
      ),
    );
    const webhooks = new Set(loadTenantsFile(EXAMPLE_TENANTS_FILE).flatMap((tenant) => tenant.webhooks.map((hook) => hook.name)));
    expect(webhooks.size).toBeGreaterThan(0);
    const named = new Set<string>();
    for (const alarm of alarms) {
      const anchor = /Runbook: docs\/runbook\.md#([\w-]+)$/.exec(alarm.AlarmDescription)?.[1] ?? "";
      const title = sections.get(anchor);
      expect(title, `${alarm.AlarmName} links #${anchor}`).toBeDefined();
      // A webhook's alarm is named once for all of them, as `DeadLetters-Webhook-<name>`.
      const suffix = suffixOf(alarm).replace(/^(DeadLetters-Webhook-)(.+)$/, (whole, prefix: string, name: string) => (webhooks.has(name) ? `${prefix}<name>` : whole));
      // Named by the section's own title (## SyncLag), or in its text.
      const names = title === suffix || runbookSection(title ?? "").includes(`\`${suffix}\``);
      expect(names, `${alarm.AlarmName} in ## ${title}`).toBe(true);
      named.add(suffix);
    }
    // Every kind of alarm was met: the webhooks', a created bus's and the fast path's included.
    expect([...named]).toEqual(expect.arrayContaining(["DeadLetters-Webhook-<name>", "DeadLetters-EventBus", "Heartbeat-SuspendedCards", "CardDetailsUnread"]));
  });
});

describe("the runbook shows where the error of a dead-lettered tick or webhook event is", () => {
  /** The Dead letters section's bullet that starts with `- **<queue>**`, up to the next bullet of the section. */
  const bullet = (queue: string): string => {
    const section = runbookSection("Dead letters");
    const start = section.indexOf(`\n- **${queue}**`);
    const next = section.indexOf("\n- **", start + 1);
    return section.slice(start, next < 0 ? undefined : next);
  };

  it("reads the pollers' and a webhook's queue with their message attributes, where Scheduler and EventBridge put the error", () => {
    // `aws sqs receive-message` returns no message attributes unless asked: Scheduler's ERROR_CODE / ERROR_MESSAGE and
    // an EventBridge rule target's would be missing, the body alone (the schedule's input, the event) naming no error.
    const pollers = bullet("Pollers queue");
    const read = /aws sqs receive-message [^`]*?(?=\n\s*```)/.exec(pollers)?.[0] ?? "";
    expect(read).toContain("--message-attribute-names All");
    // Left visible for the next reader: a received message is hidden for the queue's visibility timeout otherwise.
    expect(read).toContain("--visibility-timeout 0");
    expect(pollers).toMatch(/`ERROR_CODE`[^]*`ERROR_MESSAGE`/);
    const webhooks = bullet("Webhook queues");
    expect(webhooks).toMatch(/error in its attributes \(`ERROR_CODE`, `ERROR_MESSAGE`[^]*read them as the pollers' queue's/);
    // Heartbeat's step that sends the reader to those messages names the command's place.
    expect(runbookSection("Heartbeat")).toMatch(/Read the messages of the pollers' queue \([^)]*\[Dead letters\]\(#dead-letters\)/);
  });
});

describe("the runbook says which card walks a per-card failure can page for", () => {
  /**
   * The longest walk, in the alarm's periods, whose once-per-walk count of a card can still breach `datapointsToAlarm`
   * of `evaluationPeriods`: counted every `w` periods, d counts span (d - 1) * w + 1 periods.
   */
  const longestPagingWalk = (alarm: AlarmProperties & { EvaluationPeriods: number; DatapointsToAlarm: number }) =>
    Math.floor((alarm.EvaluationPeriods - 1) / (alarm.DatapointsToAlarm - 1));

  it("names, in CardDetailsUnread and EventsFailed, the walk length from which a card failing every walk never pages", () => {
    // A walk cut short by the cycle's budget resumes in the next cycle: each card is read, and its event sent, once
    // per walk, so a lasting failure of one card is counted once every walk, not every period.
    for (const [suffix, section] of [
      ["CardDetailsUnread", "CardDetailsUnread"],
      ["EventsFailed", "EventsFailed"],
    ] as const) {
      const alarm = [exampleStacks().acme.template, exampleStacks().globex.template, fastPathGlobex()]
        .flatMap(alarmsOf)
        .find((a) => suffixOf(a) === suffix) as AlarmProperties & {
        EvaluationPeriods: number;
        DatapointsToAlarm: number;
      };
      expect(alarm, suffix).toBeDefined();
      const longest = longestPagingWalk(alarm);
      expect(longest).toBeGreaterThanOrEqual(1);
      expect(runbookSection(section), section).toContain(`a walk spanning ${longest + 1} or more of its periods`);
    }
  });
});

describe("README's Observability names every metric the runtime emits", () => {
  it("lists each name of the MetricName union, which the alarms and dashboard read by that spelling", () => {
    const ports = readFileSync(join(REPO_ROOT, "shared", "bridge", "ports.ts"), "utf8");
    const union = /export type MetricName =([^;]*);/.exec(ports)?.[1] ?? "";
    const names = [...union.matchAll(/\|\s*"(\w+)"/g)].map((m) => m[1] as string);
    expect(names.length).toBeGreaterThan(15);
    const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
    const list = /EMF metrics in namespace `QashioBridge` with[^]*?\), X-Ray traces/.exec(readme)?.[0] ?? "";
    const listed = new Set(list.match(/\b[A-Z]\w+\b/g));
    expect(names.filter((name) => !listed.has(name))).toEqual([]);
  });
});

describe("the runbook's stack outputs are the stack's", () => {
  it("lists every output of a tenant's stack at the top, and `out` reads only those", () => {
    const runbook = readFileSync(join(REPO_ROOT, "docs", "runbook.md"), "utf8");
    const listed = /--query 'Stacks\[0\]\.Outputs\[\]\.\[OutputKey,OutputValue\]' --output table\n# ([^\n]+)/.exec(runbook)?.[1] ?? "";
    const names = listed.replace(/\([^)]*\)/g, "").split(",").map((name) => name.trim());
    for (const { template } of Object.values(exampleStacks())) {
      expect(names.sort()).toEqual(Object.keys(template.toJSON().Outputs as object).sort());
    }
    const read = [...runbook.matchAll(/\$\(out (\w+)\)/g)].map((m) => m[1]);
    expect(read.length).toBeGreaterThan(5);
    expect(read.filter((name) => !names.includes(name as string))).toEqual([]);
  });
});

describe("the runbook's daily rotation window is the secret's rotation schedule", () => {
  it("gives the hours of the cron expression and its window, wherever it names them", () => {
    const { start, end } = rotationWindow();
    const runbook = readFileSync(join(REPO_ROOT, "docs", "runbook.md"), "utf8").replace(/\s+/g, " ");
    const windows = [...runbook.matchAll(/(\d\d:\d\d-\d\d:\d\d) UTC/g)].map((m) => m[1]);
    expect(windows.length).toBeGreaterThanOrEqual(4);
    expect(new Set(windows)).toEqual(new Set([`${start}-${end}`]));
  });
});

describe("the dashboard graphs the runbook sends an operator to", () => {
  it("names each by its title, as the dashboard shows it (its unit aside)", () => {
    const runbook = readFileSync(join(REPO_ROOT, "docs", "runbook.md"), "utf8").replace(/\s+/g, " ");
    // The graphs the runbook's sections read: the throughput and token lines, errors, provider errors, cycle times, the backlog.
    const read = ["throughput", "tokens", "functions", "providerErrors", "cycleDuration", "backlog"] as const;
    for (const graph of read) {
      const title = DASHBOARD_WIDGETS[graph].replace(/ \(\w+\)$/, "");
      expect(runbook.includes(`\`${title}\``), `${graph}: ${title}`).toBe(true);
    }
  });
});
