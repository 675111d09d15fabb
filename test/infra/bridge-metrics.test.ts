import { Duration } from "aws-cdk-lib";
import { describe, expect, it } from "vitest";
import { bridgeMetric, bridgeTenantMetric } from "../../infra/constructs/bridge-metrics.js";

describe("bridgeMetric: a Metrics Insights query over one metric of one tenant", () => {
  it("aggregates the tenant's series as asked, split by the dimension given, over 5-minute periods labelled by the metric unless told", () => {
    const byType = bridgeMetric("acme", "EventsPublished", { aggregate: "SUM", groupBy: "type" });
    expect(byType.expression).toBe("SELECT SUM(EventsPublished) FROM QashioBridge WHERE tenant = 'acme' GROUP BY type");
    expect(byType.period.toMinutes()).toBe(5);
    expect(byType.label).toBe("EventsPublished");
    const byStatus = bridgeMetric("globex-eu", "ProviderErrors", { aggregate: "MAX", groupBy: "status_class" });
    expect(byStatus.expression).toBe("SELECT MAX(ProviderErrors) FROM QashioBridge WHERE tenant = 'globex-eu' GROUP BY status_class");
  });

  it("takes the period and label it is given", () => {
    const lag = bridgeMetric("acme", "SyncLagSeconds", { aggregate: "MAX", period: Duration.minutes(1), label: "max lag" });
    expect(lag.expression).toBe("SELECT MAX(SyncLagSeconds) FROM QashioBridge WHERE tenant = 'acme'");
    expect(lag.period.toMinutes()).toBe(1);
    expect(lag.label).toBe("max lag");
  });
});

describe("bridgeTenantMetric: one metric of one tenant with the exact dimension set the runtime emits it with", () => {
  it("has the service and tenant dimensions, the statistic and period it is given", () => {
    const lag = bridgeTenantMetric("acme", "SyncLagSeconds", { statistic: "Maximum", period: Duration.hours(1) });
    expect(lag.namespace).toBe("QashioBridge");
    expect(lag.metricName).toBe("SyncLagSeconds");
    expect(lag.dimensions).toEqual({ service: "qashio-bridge", tenant: "acme" });
    expect(lag.statistic).toBe("Maximum");
    expect(lag.period.toMinutes()).toBe(60);
  });

  it("adds the one further dimension it is given, a pull status", () => {
    const outdated = bridgeTenantMetric("acme", "TransactionsBacklog", { statistic: "Sum", period: Duration.minutes(5), dimension: { status: "outdated" } });
    expect(outdated.dimensions).toEqual({ service: "qashio-bridge", tenant: "acme", status: "outdated" });
    expect(outdated.statistic).toBe("Sum");
  });
});
