import { Duration } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import type * as sqs from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import { DEFAULT_RUNBOOK_URL } from "../runbook-link.js";
import type { PullStatus } from "../../shared/bridge/provider.js";
import { bridgeMetric, bridgeTenantMetric, type BridgeMetricName } from "./bridge-metrics.js";

/** Properties of {@link OpsDashboard}. */
export interface OpsDashboardProps {
  /** Tenant id: the metric dimension and the dashboard name. */
  readonly tenantId: string;
  /** Functions graphed (invocations, errors, throttles, duration), by short name. */
  readonly functions: Readonly<Record<string, lambda.IFunction>>;
  /** Queues whose depth is graphed, by short name. */
  readonly deadLetterQueues: Readonly<Record<string, sqs.IQueue>>;
  /**
   * Alarms shown in the status widget at the top.
   * @default - no alarm widget
   */
  readonly alarms?: readonly cloudwatch.IAlarm[];
  /**
   * SyncLagSeconds threshold drawn on the lag graph.
   * @default - no line
   */
  readonly syncLagThresholdSeconds?: number;
  /**
   * The runbook page the text at the top links to (validated by `runbookUrlFrom`).
   * @default "docs/runbook.md" (repository-relative, shown as text)
   */
  readonly runbookUrl?: string;
}

/** Titles of the dashboard's graphs, in order (tests and the runbook refer to them). */
export const DASHBOARD_WIDGETS = {
  events: "Events published by type",
  providerErrors: "Provider errors by status class",
  syncLag: "Sync lag (s)",
  backlog: "Transactions listed at each cycle's first read, by status",
  cycleDuration: "Cycle duration (ms)",
  tokens: "Token refreshes / family revoked / secret write refused / held in table",
  quarantine: "Quarantine size / newly quarantined",
  throughput: "Pulled / acknowledged / acknowledge refused / publish failures / card details unread / full card walks / fast-path card cycles",
  deadLetters: "Dead-letter queue depth",
  functions: "Function errors and throttles",
} as const;

/** The backlog graph's line of each pull status: a Record, so a status the cycle comes to pull gets its line. */
const BACKLOG_LINES: Readonly<Record<PullStatus, string>> = { not_synced: "not_synced (new)", outdated: "outdated (changed)" };

/** One CloudWatch dashboard per tenant: `QashioBridge-<tenant>`. */
export class OpsDashboard extends Construct {
  /** The dashboard. */
  public readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, props: OpsDashboardProps) {
    super(scope, id);
    const t = props.tenantId;
    const fns = Object.entries(props.functions);
    this.dashboard = new cloudwatch.Dashboard(this, "Dashboard", {
      // Per account, not per region (CloudWatch dashboards are global): the tenant's stack in a second region of the
      // same account fails on it, so a move within one account deletes the old stack first (runbook, "Offboarding").
      dashboardName: `QashioBridge-${t}`,
      defaultInterval: Duration.hours(24),
    });
    const graph = (title: string, left: cloudwatch.IMetric[], extra: Partial<cloudwatch.GraphWidgetProps> = {}) =>
      new cloudwatch.GraphWidget({ title, left, width: 12, height: 6, ...extra });
    // A graph may hold only one Metrics Insights query (one per GetMetricData call): a graph of several series draws
    // plain metrics, which only metrics emitted without a dimension of open-ended values (`type`, `status_class`) can
    // be; the backlog's `status` takes the pull statuses only, one plain metric each.
    const plain = (name: BridgeMetricName, statistic: string, label: string, dimension?: { readonly status: string }) =>
      bridgeTenantMetric(t, name, { statistic, period: Duration.minutes(5), dimension }).with({ label });

    const runbookUrl = props.runbookUrl ?? DEFAULT_RUNBOOK_URL;
    // A relative path is no link from the console: shown as text. An absolute URL is a markdown link.
    const runbook =
      runbookUrl === DEFAULT_RUNBOOK_URL ? DEFAULT_RUNBOOK_URL : `[docs/runbook.md](${runbookUrl.replaceAll("(", "%28").replaceAll(")", "%29")})`;
    this.dashboard.addWidgets(
      new cloudwatch.TextWidget({
        markdown: `# qashio-bridge: ${t}\nAlarms and what to do: ${runbook}. Metrics: namespace QashioBridge, tenant = ${t}.`,
        width: 24,
        height: 2,
      }),
    );
    if (props.alarms && props.alarms.length > 0) {
      this.dashboard.addWidgets(
        new cloudwatch.AlarmStatusWidget({ title: "Alarms", alarms: [...props.alarms], width: 24, height: 3 }),
      );
    }
    this.dashboard.addWidgets(
      graph(DASHBOARD_WIDGETS.events, [bridgeMetric(t, "EventsPublished", { aggregate: "SUM", groupBy: "type" })], {
        stacked: true,
      }),
      graph(DASHBOARD_WIDGETS.providerErrors, [
        bridgeMetric(t, "ProviderErrors", { aggregate: "SUM", groupBy: "status_class" }),
      ]),
    );
    // Side by side, a third of the row each: a lag that looks fine beside a backlog that does not shrink, cycles that
    // last their whole budget (runbook, "SyncLag").
    this.dashboard.addWidgets(
      graph(DASHBOARD_WIDGETS.syncLag, [bridgeMetric(t, "SyncLagSeconds", { aggregate: "MAX", label: "max lag" })], {
        width: 8,
        leftAnnotations:
          props.syncLagThresholdSeconds === undefined
            ? undefined
            : [{ value: props.syncLagThresholdSeconds, label: "alarm threshold", color: cloudwatch.Color.RED }],
      }),
      graph(
        DASHBOARD_WIDGETS.backlog,
        Object.entries(BACKLOG_LINES).map(([status, label]) => plain("TransactionsBacklog", "Maximum", label, { status })),
        { width: 8 },
      ),
      graph(DASHBOARD_WIDGETS.cycleDuration, [plain("CycleDurationMs", "Maximum", "max"), plain("CycleDurationMs", "Average", "average")], {
        width: 8,
      }),
    );
    this.dashboard.addWidgets(
      graph(DASHBOARD_WIDGETS.tokens, [
        plain("TokenRefreshes", "Sum", "refreshes"),
        plain("TokenFamilyRevoked", "Maximum", "family revoked (1 = yes)"),
        plain("TokenSecretWriteFailed", "Sum", "secret write refused"),
        plain("TokenHeldInTable", "Maximum", "token held in table (1 = yes)"),
      ]),
      graph(DASHBOARD_WIDGETS.quarantine, [
        plain("QuarantineSize", "Maximum", "records held"),
        plain("Quarantined", "Sum", "newly quarantined"),
      ]),
    );
    this.dashboard.addWidgets(
      graph(DASHBOARD_WIDGETS.throughput, [
        plain("TransactionsPulled", "Sum", "transactions pulled"),
        // the card poller's counterpart of TransactionsPulled: every card its pages listed
        plain("CardsPulled", "Sum", "cards pulled"),
        plain("Acknowledged", "Sum", "acknowledged"),
        plain("AcknowledgeRefused", "Sum", "acknowledge refused"),
        plain("CardDetailsUnread", "Sum", "card details unread"),
        // Not in the CardDetailsUnread alarm: fast ticks are many per full walk, which reads those cards again.
        plain("FastPathCardDetailsUnread", "Sum", "card details unread (fast path)"),
        // What Heartbeat-PollCards counts on a fast-path tenant (emitted by every tenant's full walks).
        plain("FullCardWalks", "Sum", "full card walks"),
        // What Heartbeat-SuspendedCards counts (a fast-path tenant's suspended-only cycles).
        plain("FastPathCardWalks", "Sum", "fast-path card cycles"),
        plain("EventsFailed", "Sum", "publish failures"),
      ]),
      graph(
        DASHBOARD_WIDGETS.deadLetters,
        Object.entries(props.deadLetterQueues).map(([name, queue]) =>
          queue.metricApproximateNumberOfMessagesVisible({ label: name, statistic: "Maximum" }),
        ),
      ),
    );
    this.dashboard.addWidgets(
      graph(
        DASHBOARD_WIDGETS.functions,
        fns.flatMap(([name, fn]) => [
          fn.metricErrors({ label: `${name} errors`, statistic: "Sum" }),
          fn.metricThrottles({ label: `${name} throttles`, statistic: "Sum" }),
        ]),
        {
          width: 24,
          right: fns.map(([name, fn]) => fn.metricDuration({ label: `${name} p95 duration`, statistic: "p95" })),
        },
      ),
    );
  }
}
