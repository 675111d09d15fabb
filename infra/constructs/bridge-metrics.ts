import { Duration } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import type { MetricName } from "../../shared/bridge/ports.js";

/** Namespace of the bridge's custom metrics (POWERTOOLS_METRICS_NAMESPACE). */
export const METRIC_NAMESPACE = "QashioBridge";
/** Service name of the functions (POWERTOOLS_SERVICE_NAME), which Powertools adds as the `service` dimension. */
export const METRIC_SERVICE = "qashio-bridge";

/** Custom metrics the runtime emits (issue 5), each with dimension `tenant`: the engine's own names. */
export type BridgeMetricName = MetricName;

/** Aggregations CloudWatch Metrics Insights supports. */
export type InsightsAggregate = "SUM" | "MAX" | "MIN" | "AVG" | "COUNT";

/** Options of {@link bridgeMetric}. */
export interface BridgeMetricOptions {
  /** Aggregate over the period. */
  readonly aggregate: InsightsAggregate;
  /**
   * Dimension to split the result by (one line per value, e.g. `type` or `status_class`).
   * @default - one series for the tenant
   */
  readonly groupBy?: "type" | "status_class";
  /**
   * Period of each data point.
   * @default Duration.minutes(5)
   */
  readonly period?: Duration;
  /**
   * Label of the series.
   * @default - the metric name
   */
  readonly label?: string;
}

/**
 * A Metrics Insights query over one bridge metric of one tenant. Insights aggregates every dimension set
 * carrying `tenant = <id>`, so graphs and alarms keep working when the runtime adds dimensions (Powertools'
 * `service`, `type`, `status_class`), which a plain metric with an exact dimension set would silently miss.
 *
 * @example
 * ```ts
 * bridgeMetric("acme", "EventsPublished", { aggregate: "SUM", groupBy: "type" });
 * // SELECT SUM(EventsPublished) FROM QashioBridge WHERE tenant = 'acme' GROUP BY type
 * ```
 */
export function bridgeMetric(
  tenantId: string,
  name: BridgeMetricName,
  options: BridgeMetricOptions,
): cloudwatch.MathExpression {
  const groupBy = options.groupBy === undefined ? "" : ` GROUP BY ${options.groupBy}`;
  return new cloudwatch.MathExpression({
    expression: `SELECT ${options.aggregate}(${name}) FROM ${METRIC_NAMESPACE} WHERE tenant = '${tenantId}'${groupBy}`,
    period: options.period ?? Duration.minutes(5),
    label: options.label ?? name,
  });
}

/** Options of {@link bridgeTenantMetric}. */
export interface BridgeTenantMetricOptions {
  /** Statistic over the period, e.g. `Maximum`. */
  readonly statistic: string;
  /** Period of each data point. */
  readonly period: Duration;
  /**
   * The dimension the runtime emits the metric with besides `service` and `tenant`, with the one value to graph (e.g.
   * `{ status: "outdated" }` of TransactionsBacklog): a plain metric matches its exact dimension set only.
   * @default - none
   */
  readonly dimension?: { readonly status: string };
}

/**
 * One bridge metric of one tenant with the exact dimension set the runtime emits it with: `service`, `tenant`, and
 * `options.dimension` when the runtime adds one whose values are known in advance (a pull status). Alarms on a plain
 * metric may look back a whole day, while {@link bridgeMetric}'s Metrics Insights alarms see only the last 3 hours, and
 * a dashboard graph may hold only one Insights query: use this one for an alarm whose period follows a slow schedule or
 * a graph of several series, and never for metrics emitted with `type` or `status_class` (open-ended values).
 *
 * @example
 * ```ts
 * bridgeTenantMetric("acme", "SyncLagSeconds", { statistic: "Maximum", period: Duration.hours(1) });
 * bridgeTenantMetric("acme", "TransactionsBacklog", { statistic: "Maximum", period: Duration.minutes(5), dimension: { status: "outdated" } });
 * ```
 */
export function bridgeTenantMetric(tenantId: string, name: BridgeMetricName, options: BridgeTenantMetricOptions): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: METRIC_NAMESPACE,
    metricName: name,
    dimensionsMap: { service: METRIC_SERVICE, tenant: tenantId, ...options.dimension },
    statistic: options.statistic,
    period: options.period,
  });
}
