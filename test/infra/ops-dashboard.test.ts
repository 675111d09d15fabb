import { App, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { beforeAll, describe, expect, it } from "vitest";
import { DASHBOARD_WIDGETS, OpsDashboard, type OpsDashboardProps } from "../../infra/constructs/ops-dashboard.js";

interface Widget {
  readonly type: string;
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
  readonly properties: {
    title?: string;
    markdown?: string;
    stacked?: boolean;
    metrics?: unknown[][];
    alarms?: unknown[];
    annotations?: { horizontal?: unknown[] };
  };
}

/**
 * The dashboard of tenant `acme` with one function and one queue, imported so the test synthesises nothing else.
 * Props that are constructs are given as a function of the stack they are imported into.
 */
function dashboardOf(
  props: Partial<OpsDashboardProps> | ((stack: Stack) => Partial<OpsDashboardProps>) = {},
): { widgets: Widget[]; properties: Record<string, unknown> } {
  const stack = new Stack(new App(), "Acme");
  new OpsDashboard(stack, "Ops", {
    tenantId: "acme",
    functions: { PollCards: lambda.Function.fromFunctionName(stack, "Fn", "acme-poll-cards") },
    deadLetterQueues: { Webhook: sqs.Queue.fromQueueArn(stack, "Dlq", "arn:aws:sqs:eu-west-1:111111111111:acme-dlq") },
    ...(typeof props === "function" ? props(stack) : props),
  });
  const [dashboard] = Object.values(Template.fromStack(stack).findResources("AWS::CloudWatch::Dashboard")) as { Properties: Record<string, unknown> }[];
  const body = dashboard?.Properties["DashboardBody"] as { "Fn::Join": [string, unknown[]] } | string;
  const text = typeof body === "string" ? body : body["Fn::Join"][1].map((part) => (typeof part === "string" ? part : "TOKEN")).join("");
  return { widgets: (JSON.parse(text) as { widgets: Widget[] }).widgets, properties: dashboard?.Properties ?? {} };
}

/** Each series of a graph as `<metric> <label>/<stat>` (CloudWatch's default stat is Average) or its Insights query. */
function seriesOf(widgets: Widget[], title: string): string[] {
  const graph = widgets.find((w) => w.properties.title === title);
  return (graph?.properties.metrics ?? []).map((m) => {
    const options = m.at(-1) as { label?: string; stat?: string; expression?: string };
    return options.expression ?? `${String(m[1])} ${options.label}/${options.stat ?? "Average"}`;
  });
}

describe("OpsDashboard", () => {
  // The first synth of a process loads the CDK's libraries: within the hook's longer timeout.
  let plain: ReturnType<typeof dashboardOf>;
  beforeAll(() => {
    plain = dashboardOf();
  });

  it("opens on a 24-hour range with a text naming the tenant and its metrics' namespace", () => {
    const { widgets, properties } = plain;
    expect(properties).toMatchObject({ DashboardName: "QashioBridge-acme" });
    expect(widgets[0]?.properties.markdown).toBe(
      "# qashio-bridge: acme\nAlarms and what to do: docs/runbook.md. Metrics: namespace QashioBridge, tenant = acme.",
    );
    const body = JSON.stringify(properties["DashboardBody"]);
    expect(body).toContain(String.raw`{\"start\":\"-P1D\",`);
  });

  it("escapes parentheses of the runbook URL, which would end the markdown link early", () => {
    const { widgets } = dashboardOf({ runbookUrl: "https://git.example/wiki/Runbook_(bridge).md" });
    expect(widgets[0]?.properties.markdown).toContain("[docs/runbook.md](https://git.example/wiki/Runbook_%28bridge%29.md).");
  });

  // With alarms, tenant-stack.test.ts pins the widget ("shows every alarm's state").
  it("draws no alarm status widget for an empty list of alarms, which CloudWatch would show as an empty box", () => {
    expect(dashboardOf({ alarms: [] }).widgets.filter((w) => w.type === "alarm")).toEqual([]);
  });

  it("stacks the events by type and graphs every series of the cycle, token, quarantine and throughput graphs with its statistic", () => {
    const { widgets } = plain;
    expect(widgets.find((w) => w.properties.title === DASHBOARD_WIDGETS.events)?.properties.stacked).toBe(true);
    const expected: Partial<Record<keyof typeof DASHBOARD_WIDGETS, string[]>> = {
      cycleDuration: ["CycleDurationMs max/Maximum", "CycleDurationMs average/Average"],
      tokens: [
        "TokenRefreshes refreshes/Sum",
        "TokenFamilyRevoked family revoked (1 = yes)/Maximum",
        "TokenSecretWriteFailed secret write refused/Sum",
        "TokenHeldInTable token held in table (1 = yes)/Maximum",
      ],
      quarantine: ["QuarantineSize records held/Maximum", "Quarantined newly quarantined/Sum"],
      throughput: [
        "TransactionsPulled transactions pulled/Sum",
        "CardsPulled cards pulled/Sum",
        "Acknowledged acknowledged/Sum",
        "AcknowledgeRefused acknowledge refused/Sum",
        "CardDetailsUnread card details unread/Sum",
        "FastPathCardDetailsUnread card details unread (fast path)/Sum",
        "FullCardWalks full card walks/Sum",
        "FastPathCardWalks fast-path card cycles/Sum",
        "EventsFailed publish failures/Sum",
      ],
    };
    for (const [graph, series] of Object.entries(expected)) {
      expect(seriesOf(widgets, DASHBOARD_WIDGETS[graph as keyof typeof DASHBOARD_WIDGETS]), graph).toEqual(series);
    }
    expect(seriesOf(widgets, DASHBOARD_WIDGETS.syncLag)).toEqual(["SELECT MAX(SyncLagSeconds) FROM QashioBridge WHERE tenant = 'acme'"]);
    expect(seriesOf(widgets, DASHBOARD_WIDGETS.deadLetters)).toEqual(["ApproximateNumberOfMessagesVisible Webhook/Maximum"]);
  });

  it("graphs the bridge's plain metrics over 5-minute periods, the alarms' shortest, not a finer one", () => {
    // CloudWatch graphs a series without a period over 300 s; a finer one would split a cycle's counts into points.
    const { widgets } = plain;
    const graphs = [DASHBOARD_WIDGETS.backlog, DASHBOARD_WIDGETS.cycleDuration, DASHBOARD_WIDGETS.tokens, DASHBOARD_WIDGETS.quarantine, DASHBOARD_WIDGETS.throughput];
    const periods = graphs.flatMap((title) =>
      (widgets.find((w) => w.properties.title === title)?.properties.metrics ?? []).map((m) => (m.at(-1) as { period?: number }).period ?? 300),
    );
    expect(periods.length).toBeGreaterThan(graphs.length);
    expect(new Set(periods)).toEqual(new Set([300]));
  });

  it("graphs each function's errors and throttles, and its p95 duration on the right axis", () => {
    const { widgets } = plain;
    expect(seriesOf(widgets, DASHBOARD_WIDGETS.functions)).toEqual([
      "Errors PollCards errors/Sum",
      "Throttles PollCards throttles/Sum",
      "Duration PollCards p95 duration/p95",
    ]);
    const functions = widgets.find((w) => w.properties.title === DASHBOARD_WIDGETS.functions);
    expect((functions?.properties.metrics?.at(-1)?.at(-1) as { yAxis?: string }).yAxis).toBe("right");
    expect(functions?.width).toBe(24);
  });

  it("draws the SyncLag alarm's threshold only when given one", () => {
    const lag = (props: Partial<OpsDashboardProps>) =>
      JSON.stringify(dashboardOf(props).widgets.find((w) => w.properties.title === DASHBOARD_WIDGETS.syncLag)?.properties);
    expect(lag({ syncLagThresholdSeconds: 900 })).toContain('"annotations":{"horizontal":[{"value":900,"label":"alarm threshold"');
    expect(lag({})).not.toContain("annotations");
  });

  it("lays out the text, the alarms and then each row of graphs in DASHBOARD_WIDGETS order, every row filling the 24 columns", () => {
    const { widgets } = dashboardOf((stack) => ({ alarms: [cloudwatch.Alarm.fromAlarmArn(stack, "Alarm", "arn:aws:cloudwatch:eu-west-1:111111111111:alarm:acme-SyncLag")] }));
    const layout = widgets.map((w) => `${w.properties.title ?? w.type} @${w.x},${w.y} ${w.width}x${w.height}`);
    expect(layout).toEqual([
      "text @0,0 24x2",
      "Alarms @0,2 24x3",
      `${DASHBOARD_WIDGETS.events} @0,5 12x6`,
      `${DASHBOARD_WIDGETS.providerErrors} @12,5 12x6`,
      `${DASHBOARD_WIDGETS.syncLag} @0,11 8x6`,
      `${DASHBOARD_WIDGETS.backlog} @8,11 8x6`,
      `${DASHBOARD_WIDGETS.cycleDuration} @16,11 8x6`,
      `${DASHBOARD_WIDGETS.tokens} @0,17 12x6`,
      `${DASHBOARD_WIDGETS.quarantine} @12,17 12x6`,
      `${DASHBOARD_WIDGETS.throughput} @0,23 12x6`,
      `${DASHBOARD_WIDGETS.deadLetters} @12,23 12x6`,
      `${DASHBOARD_WIDGETS.functions} @0,29 24x6`,
    ]);
  });

  it("graphs every queue's depth and every function's p95 duration, not only the first's", () => {
    const { widgets } = dashboardOf((stack) => ({
      functions: {
        PollCards: lambda.Function.fromFunctionName(stack, "Cards", "acme-poll-cards"),
        RotateToken: lambda.Function.fromFunctionName(stack, "Rotate", "acme-rotate-token"),
      },
      deadLetterQueues: {
        Webhook: sqs.Queue.fromQueueArn(stack, "Hook", "arn:aws:sqs:eu-west-1:111111111111:acme-dlq"),
        EventBus: sqs.Queue.fromQueueArn(stack, "Bus", "arn:aws:sqs:eu-west-1:111111111111:acme-bus-dlq"),
      },
    }));
    expect(seriesOf(widgets, DASHBOARD_WIDGETS.deadLetters)).toEqual(["ApproximateNumberOfMessagesVisible Webhook/Maximum", "ApproximateNumberOfMessagesVisible EventBus/Maximum"]);
    expect(seriesOf(widgets, DASHBOARD_WIDGETS.functions)).toEqual([
      "Errors PollCards errors/Sum",
      "Throttles PollCards throttles/Sum",
      "Errors RotateToken errors/Sum",
      "Throttles RotateToken throttles/Sum",
      "Duration PollCards p95 duration/p95",
      "Duration RotateToken p95 duration/p95",
    ]);
  });

  it("labels the lag line and draws the alarm's threshold on it in red", () => {
    const lag = dashboardOf({ syncLagThresholdSeconds: 900 }).widgets.find((w) => w.properties.title === DASHBOARD_WIDGETS.syncLag);
    expect(lag?.properties.metrics?.[0]?.at(-1)).toMatchObject({ label: "max lag" });
    expect(lag?.properties.annotations?.horizontal).toEqual([{ value: 900, label: "alarm threshold", color: cloudwatch.Color.RED, yAxis: "left" }]);
  });
});
