import { Duration } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import type { MetricName } from "../../shared/bridge/ports.js";

/** Namespace of the bridge's custom metrics (POWERTOOLS_METRICS_NAMESPACE). */
export const METRIC_NAMESPACE = "QashioBridge";

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
