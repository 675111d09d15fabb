import { Metrics } from "@aws-lambda-powertools/metrics";
import { Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as kms from "aws-cdk-lib/aws-kms";
import * as lambda from "aws-cdk-lib/aws-lambda";
import * as sqs from "aws-cdk-lib/aws-sqs";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { PowertoolsMetricsAdapter } from "../../shared/aws/observability.js";
import type { MetricName } from "../../shared/bridge/ports.js";
import { cycleAlarmWindow, describePeriodLength, heartbeatAlarmWindow } from "../../infra/constructs/alarm-window.js";
import { OpsAlarms } from "../../infra/constructs/ops-alarms.js";
import type { TenantConfig } from "../../infra/tenant-config.js";
import { loadTenantsFile } from "../../infra/tenants-file.js";
import type { TenantStack } from "../../infra/tenant-stack.js";
import { buildTestApp, EXAMPLE_TENANTS_FILE, exampleStacks } from "./helpers.js";

type AlarmProperties = Record<string, unknown> & { Dimensions?: { Name: string; Value: string }[] };

const DAY_SECONDS = 86_400;

/** The example's globex tenant on other schedules. */
function globexEvery(transactionsEveryMinutes: number, cardsEveryMinutes: number): TenantConfig {
  const globex = loadTenantsFile(EXAMPLE_TENANTS_FILE).find((t) => t.id === "globex") as TenantConfig;
  return { ...globex, schedules: { ...globex.schedules, transactionsEveryMinutes, cardsEveryMinutes } };
}

function templateOf(tenant: TenantConfig): Template {
  const [stack] = buildTestApp({ tenants: [tenant] }).stacks as [TenantStack];
  return Template.fromStack(stack);
}

function alarmsOf(tenant: TenantConfig): (suffix: string) => AlarmProperties {
  return alarmsIn(templateOf(tenant));
}

let fastGlobex: Template | undefined;

/** globex every 2 (transactions) and 30 (cards) minutes with a suspended-only fast path every minute, built once per file. */
function fastGlobexTemplate(): Template {
  if (fastGlobex === undefined) {
    const globex = globexEvery(2, 30);
    fastGlobex = templateOf({ ...globex, schedules: { ...globex.schedules, suspendedCardsEveryMinutes: 1 } });
  }
  return fastGlobex;
}

const globexTemplates = new Map<string, Template>();

/** The template of globex on the given schedules, each configuration built once per file (the stacks are only read). */
function templateOfGlobexEvery(transactionsEveryMinutes: number, cardsEveryMinutes: number): Template {
  const key = `${transactionsEveryMinutes}/${cardsEveryMinutes}`;
  let template = globexTemplates.get(key);
  if (template === undefined) {
    template = templateOf(globexEvery(transactionsEveryMinutes, cardsEveryMinutes));
    globexTemplates.set(key, template);
  }
  return template;
}

/** The alarms of globex on the given schedules (see {@link templateOfGlobexEvery}). */
function alarmsOfGlobexEvery(transactionsEveryMinutes: number, cardsEveryMinutes: number): (suffix: string) => AlarmProperties {
  return alarmsIn(templateOfGlobexEvery(transactionsEveryMinutes, cardsEveryMinutes));
}

/** The properties of every alarm named `name` in `template`. */
function alarmsNamed(template: Template, name: string): AlarmProperties[] {
  return Object.values(template.findResources("AWS::CloudWatch::Alarm", { Properties: { AlarmName: name } })).map(
    (resource) => (resource as { Properties: AlarmProperties }).Properties,
  );
}

/**
 * A heartbeat of globex (fastGlobexTemplate) counting a cycle metric of the runtime: below 1 in all of the last 3
 * periods of `period` seconds, missing data breaching, notifying `actions` (the tenant's topic), linking the runbook.
 */
function expectCycleHeartbeat(heartbeat: AlarmProperties, metric: string, period: number, actions: unknown): void {
  expect(heartbeat).toMatchObject({
    Namespace: "QashioBridge",
    MetricName: metric,
    Statistic: "Sum",
    Threshold: 1,
    ComparisonOperator: "LessThanThreshold",
    Period: period,
    EvaluationPeriods: 3,
    DatapointsToAlarm: 3,
    TreatMissingData: "breaching",
    ActionsEnabled: true,
  });
  expect(heartbeat.Dimensions).toEqual([
    { Name: "service", Value: "qashio-bridge" },
    { Name: "tenant", Value: "globex" },
  ]);
  expect(heartbeat.AlarmDescription).toMatch(/Runbook: docs\/runbook\.md#heartbeat$/);
  expect(heartbeat).toMatchObject({ AlarmActions: actions, OKActions: actions });
}

/** The properties of globex's alarm of each suffix in `template`. */
function alarmsIn(template: Template): (suffix: string) => AlarmProperties {
  return (suffix) => {
    const found = Object.values(template.findResources("AWS::CloudWatch::Alarm", { Properties: { AlarmName: `QashioBridge-globex-${suffix}` } }));
    expect(found).toHaveLength(1);
    return (found[0] as { Properties: AlarmProperties }).Properties;
  };
}

describe("cycle alarms follow the tenant's schedule", () => {
  let short: (suffix: string) => AlarmProperties;
  let long: (suffix: string) => AlarmProperties;
  beforeAll(() => {
    short = alarmsOfGlobexEvery(2, 30);
    long = alarmsOfGlobexEvery(1440, 600);
  });

  it("evaluates a short schedule over 2 of 3 periods of at least five minutes", () => {
    expect(short("SyncLag")).toMatchObject({ Period: 300, EvaluationPeriods: 3, DatapointsToAlarm: 2, TreatMissingData: "ignore" });
    // runbook: "SyncLagSeconds, maximum per period"
    expect(short("SyncLag")).toMatchObject({ Namespace: "QashioBridge", MetricName: "SyncLagSeconds", Statistic: "Maximum" });
    // the tenant's own threshold (globex: 900 s), on the alarm and in the text an operator reads
    expect(short("SyncLag")).toMatchObject({ Threshold: 900 });
    expect(short("SyncLag").AlarmDescription).toContain("older than 900 s in 2 of the last 3 5-minute periods");
    expect(short("Errors-PollTransactions")).toMatchObject({ Period: 300, EvaluationPeriods: 3, DatapointsToAlarm: 2, TreatMissingData: "ignore" });
    expect(short("Errors-PollCards")).toMatchObject({ Period: 1800, EvaluationPeriods: 3, DatapointsToAlarm: 2 });
    expect(short("Errors-PollCards").AlarmDescription).toContain("2 of the last 3 30-minute periods");
  });

  it("evaluates a long schedule over 2 of 3 periods as long as the schedule, within CloudWatch's seven-day window", () => {
    // PutMetricAlarm allows seven days of window for periods of an hour or more: three days of a daily schedule fit,
    // so one failed cycle, retried by the next tick, does not page there either.
    expect(long("SyncLag")).toMatchObject({ Period: DAY_SECONDS, EvaluationPeriods: 3, DatapointsToAlarm: 2, TreatMissingData: "ignore" });
    expect(long("SyncLag").AlarmDescription).toContain("in 2 of the last 3 one-day periods");
    expect(long("Errors-PollTransactions")).toMatchObject({ Period: DAY_SECONDS, EvaluationPeriods: 3, DatapointsToAlarm: 2 });
    expect(long("Errors-PollTransactions").AlarmDescription).toContain("failed in 2 of the last 3 one-day periods");
    expect(long("Errors-PollCards")).toMatchObject({ Period: 36_000, EvaluationPeriods: 3, DatapointsToAlarm: 2 });
  });

  it("keeps 2 of 3 periods on a 13-hour schedule, past the day three periods used to be held to", () => {
    const thirteen = alarmsOfGlobexEvery(780, 780);
    const window = { Period: 46_800, EvaluationPeriods: 3, DatapointsToAlarm: 2 };
    for (const suffix of ["SyncLag", "Errors-PollTransactions", "Errors-PollCards", "AcknowledgeRefused", "EventsFailed", "DeadLetters-Pollers"]) {
      expect(thirteen(suffix)).toMatchObject(window);
      expect(thirteen(suffix).AlarmDescription).toContain("2 of the last 3 780-minute periods");
    }
  });

  /** The properties of an alarm on a state gauge (1 on, 0 off): on at its first 1, periods without a report keeping the state. */
  const stateGaugeAlarm = (MetricName: string) => ({
    Namespace: "QashioBridge",
    MetricName,
    Statistic: "Maximum",
    Period: 60,
    Threshold: 1,
    ComparisonOperator: "GreaterThanOrEqualToThreshold",
    EvaluationPeriods: 1,
    TreatMissingData: "ignore",
  });

  it("alarms while the quarantine holds a record, whatever the schedule: the tenant's greatest QuarantineSize of 5 minutes, keeping its state between cycles", () => {
    // A gauge of records held (every cycle reports it), read through Metrics Insights; its maximum, which the alarm
    // mail shows, is the count held (a sum would add every cycle's report); periods without a cycle keep the state.
    for (const alarms of [short, long]) {
      const held = alarms("QuarantineNotEmpty");
      expect(held).toMatchObject({ Threshold: 1, ComparisonOperator: "GreaterThanOrEqualToThreshold", EvaluationPeriods: 1, TreatMissingData: "ignore" });
      expect(held["Metrics"]).toEqual([
        expect.objectContaining({ Expression: "SELECT MAX(QuarantineSize) FROM QashioBridge WHERE tenant = 'globex'", Label: "QuarantineSize", Period: 300, ReturnData: true }),
      ]);
      expect(held.AlarmDescription).toMatch(/the quarantine holds provider records that were not published\. Runbook: docs\/runbook\.md#quarantinenotempty$/);
    }
  });

  it("alarms on records newly quarantined in one period of the transactions schedule, clearing in a period without", () => {
    const growing = { MetricName: "Quarantined", Statistic: "Sum", Threshold: 1, EvaluationPeriods: 1, DatapointsToAlarm: 1, TreatMissingData: "notBreaching" };
    expect(short("QuarantineGrowing")).toMatchObject({ ...growing, Period: 300 });
    expect(long("QuarantineGrowing")).toMatchObject({ ...growing, Period: DAY_SECONDS });
    expect(long("QuarantineGrowing").AlarmDescription).toContain("in the last one-day period");
    // its own section, not QuarantineNotEmpty's (which names it too, so the docs test alone would not see the swap)
    expect(short("QuarantineGrowing").AlarmDescription).toMatch(/Runbook: docs\/runbook\.md#quarantinegrowing$/);
  });

  it("keeps TokenFamilyRevoked in its state between reports, whatever the schedule: on at the first 1, off at the first 0", () => {
    // A gauge (1 revoked, 0 when a cycle or rotation the provider answered): a period without a report keeps the state,
    // so the alarm neither clears between ticks nor while the pollers are paused, and clears at the first good cycle.
    const gauge = stateGaugeAlarm("TokenFamilyRevoked");
    for (const alarms of [short, alarmsOfGlobexEvery(90, 240), long, alarmsOfGlobexEvery(1440, 1440)]) {
      expect(alarms("TokenFamilyRevoked")).toMatchObject(gauge);
      expect(alarms("TokenFamilyRevoked")).not.toHaveProperty("DatapointsToAlarm");
    }
    expect(long("TokenFamilyRevoked").AlarmDescription).toMatch(/revoked the token family.*until a poll or token rotation the provider answers/);
    expect(long("TokenFamilyRevoked").AlarmDescription).toMatch(/Runbook: docs\/runbook\.md#tokenfamilyrevoked$/);
  });

  it("alarms while the live refresh token is held in the table for want of a Secrets Manager write, whatever the schedule, keeping its state between reports", () => {
    const held = stateGaugeAlarm("TokenHeldInTable");
    expect(short("TokenSecretWriteFailed")).toMatchObject(held);
    expect(long("TokenSecretWriteFailed")).toMatchObject(held);
    expect(short("TokenSecretWriteFailed").Dimensions).toEqual(
      expect.arrayContaining([
        { Name: "service", Value: "qashio-bridge" },
        { Name: "tenant", Value: "globex" },
      ]),
    );
    expect(short("TokenSecretWriteFailed").AlarmDescription).toMatch(/Runbook: docs\/runbook\.md#tokensecretwritefailed$/);
  });

  it("alarms on card details unread in 2 of 3 periods of the cards schedule, only for a tenant that reads card details", () => {
    const acmeUnread = alarmsNamed(exampleStacks().acme.template, "QashioBridge-acme-sandbox-CardDetailsUnread");
    expect(acmeUnread).toHaveLength(1);
    expect(acmeUnread[0]).toMatchObject({
      Namespace: "QashioBridge",
      MetricName: "CardDetailsUnread",
      Statistic: "Sum",
      Threshold: 1,
      EvaluationPeriods: 3,
      DatapointsToAlarm: 2,
      TreatMissingData: "notBreaching",
    });
    expect(String(acmeUnread[0]?.["AlarmDescription"])).toMatch(/Runbook: docs\/runbook\.md#carddetailsunread$/);
    // Both causes the runbook names: failed reads, and a page of reads too slow for a cycle.
    expect(String(acmeUnread[0]?.["AlarmDescription"])).toMatch(/card detail reads failed, or a page's reads did not fit in a cycle/);
    // runbook: "the alarm description states the tenant's window" (acme walks its cards every 15 minutes)
    expect(String(acmeUnread[0]?.["AlarmDescription"])).toContain("in 2 of the last 3 15-minute periods;");
    // globex does not read card details: no such alarm.
    const globex = Template.fromStack(buildTestApp({ tenants: [globexEvery(5, 30)] }).stacks[0] as TenantStack);
    expect(alarmsNamed(globex, "QashioBridge-globex-CardDetailsUnread")).toHaveLength(0);
    const withDetails = Template.fromStack(buildTestApp({ tenants: [{ ...globexEvery(5, 30), cardDetails: true }] }).stacks[0] as TenantStack);
    expect(alarmsNamed(withDetails, "QashioBridge-globex-CardDetailsUnread")[0]).toMatchObject({ Period: 1800, EvaluationPeriods: 3, DatapointsToAlarm: 2 });
    // Only that alarm follows the cards schedule: the transaction poller's refusals keep its own.
    expect(alarmsNamed(withDetails, "QashioBridge-globex-AcknowledgeRefused")[0]).toMatchObject({ Period: 300, EvaluationPeriods: 3, DatapointsToAlarm: 2 });
  });

  it("alarms on acknowledges refused in 2 of 3 periods of the transactions schedule, not on one refusal, clearing in periods without", () => {
    const refused = {
      Namespace: "QashioBridge",
      MetricName: "AcknowledgeRefused",
      Statistic: "Sum",
      Threshold: 1,
      ComparisonOperator: "GreaterThanOrEqualToThreshold",
      TreatMissingData: "notBreaching",
    };
    expect(short("AcknowledgeRefused")).toMatchObject({ ...refused, Period: 300, EvaluationPeriods: 3, DatapointsToAlarm: 2 });
    expect(alarmsOfGlobexEvery(60, 5)("AcknowledgeRefused")).toMatchObject({ ...refused, Period: 3600, EvaluationPeriods: 3, DatapointsToAlarm: 2 });
    expect(alarmsOfGlobexEvery(720, 5)("AcknowledgeRefused")).toMatchObject({ ...refused, Period: 43_200, EvaluationPeriods: 3, DatapointsToAlarm: 2 });
    // A daily schedule too: one refusal a retry clears does not page.
    expect(long("AcknowledgeRefused")).toMatchObject({ ...refused, Period: DAY_SECONDS, EvaluationPeriods: 3, DatapointsToAlarm: 2 });
    expect(short("AcknowledgeRefused").AlarmDescription).toContain("in 2 of the last 3 5-minute periods");
    expect(short("AcknowledgeRefused").AlarmDescription).toMatch(/Runbook: docs\/runbook\.md#acknowledgerefused$/);
    // Notifies ALARM and OK on the same topic as the other alarms.
    const actions = short("SyncLag")["AlarmActions"];
    expect(actions).toHaveLength(1);
    expect(short("AcknowledgeRefused")).toMatchObject({ AlarmActions: actions, OKActions: actions });
  });

  it("alarms on events the bus keeps refusing in 2 of 3 periods of the slower schedule, not on one refused cycle, clearing in periods without", () => {
    const failed = {
      Namespace: "QashioBridge",
      MetricName: "EventsFailed",
      Statistic: "Sum",
      Threshold: 1,
      ComparisonOperator: "GreaterThanOrEqualToThreshold",
      TreatMissingData: "notBreaching",
    };
    // Every cycle of either poller sends a refused event again: the slower schedule's period holds a cycle of both,
    // so a card event the card poller keeps deferring pages however rarely transactions fail.
    expect(short("EventsFailed")).toMatchObject({ ...failed, Period: 1800, EvaluationPeriods: 3, DatapointsToAlarm: 2 });
    expect(alarmsOfGlobexEvery(60, 5)("EventsFailed")).toMatchObject({ ...failed, Period: 3600, EvaluationPeriods: 3, DatapointsToAlarm: 2 });
    expect(long("EventsFailed")).toMatchObject({ ...failed, Period: DAY_SECONDS, EvaluationPeriods: 3, DatapointsToAlarm: 2 });
    const description = String(short("EventsFailed").AlarmDescription);
    expect(description).toContain("in 2 of the last 3 30-minute periods");
    // Counted for events refused for now and for good: the text names both, and where each one ends up.
    expect(description).toMatch(/for now/);
    expect(description).toMatch(/quarantined/);
    expect(description).toMatch(/Runbook: docs\/runbook\.md#eventsfailed$/);
    const actions = short("SyncLag")["AlarmActions"];
    expect(short("EventsFailed")).toMatchObject({ AlarmActions: actions, OKActions: actions });
  });

  it("alarms on ticks sent to the pollers' DLQ in 2 of 3 periods of the slower schedule, clearing without a purge", () => {
    // a single tick sent in a period is a breaching period ("> 1" would need two)
    const sent = { MetricName: "NumberOfMessagesSent", Statistic: "Sum", Threshold: 1, ComparisonOperator: "GreaterThanOrEqualToThreshold", TreatMissingData: "notBreaching" };
    expect(short("DeadLetters-Pollers")).toMatchObject({ ...sent, Period: 1800, EvaluationPeriods: 3, DatapointsToAlarm: 2 });
    expect(long("DeadLetters-Pollers")).toMatchObject({ ...sent, Period: DAY_SECONDS, EvaluationPeriods: 3, DatapointsToAlarm: 2 });
    expect(long("DeadLetters-Pollers").AlarmDescription).toContain("2 of the last 3 one-day periods");
    expect(short("DeadLetters-Pollers").AlarmDescription).toContain("2 of the last 3 30-minute periods");
  });

  /** What every invocation-counting heartbeat alarm shares. */
  const heartbeat = {
    Namespace: "AWS/Lambda",
    MetricName: "Invocations",
    Statistic: "Sum",
    Threshold: 1,
    ComparisonOperator: "LessThanThreshold",
    TreatMissingData: "breaching",
    ActionsEnabled: true,
  };

  it("alarms when the transaction poller was invoked in none of the periods of its schedule's window, missing data breaching", () => {
    expect(short("Heartbeat")).toMatchObject({ ...heartbeat, Period: 300, EvaluationPeriods: 3, DatapointsToAlarm: 3 });
    expect(short("Heartbeat").Dimensions).toEqual([{ Name: "FunctionName", Value: { Ref: expect.stringMatching(/^PollTransactionsFunction/) } }]);
    expect(short("Heartbeat").AlarmDescription).toContain("was not invoked in any of the last 3 5-minute periods");
    expect(short("Heartbeat").AlarmDescription).toMatch(/Runbook: docs\/runbook\.md#heartbeat$/);
    expect(alarmsOfGlobexEvery(60, 5)("Heartbeat")).toMatchObject({ ...heartbeat, Period: 3600, EvaluationPeriods: 3, DatapointsToAlarm: 3 });
    expect(alarmsOfGlobexEvery(720, 5)("Heartbeat")).toMatchObject({ ...heartbeat, Period: 43_200, EvaluationPeriods: 2, DatapointsToAlarm: 2 });
    // Over 12 hours, hours covering the schedule plus one, all without a beat: a single period as long as the
    // schedule (a sliding window) could lose the last tick before the next one's data point landed, and go to ALARM.
    expect(long("Heartbeat")).toMatchObject({ ...heartbeat, Period: 3600, EvaluationPeriods: 25, DatapointsToAlarm: 25 });
    expect(long("Heartbeat").AlarmDescription).toContain("was not invoked in any of the last 25 60-minute periods");
    expect(alarmsOfGlobexEvery(780, 5)("Heartbeat")).toMatchObject({ ...heartbeat, Period: 3600, EvaluationPeriods: 14, DatapointsToAlarm: 14 });
    // Notifies ALARM and OK on the same topic as the other alarms.
    const actions = short("SyncLag")["AlarmActions"];
    expect(short("Heartbeat")).toMatchObject({ AlarmActions: actions, OKActions: actions });
  });

  it("alarms when the card poller was invoked in none of the periods of the cards schedule's window, beside the transaction poller's", () => {
    // Its own window, from the cards schedule: card.suspended stops with the card walks, whatever transactions do.
    expect(short("Heartbeat-PollCards")).toMatchObject({ ...heartbeat, Period: 1800, EvaluationPeriods: 3, DatapointsToAlarm: 3 });
    expect(short("Heartbeat-PollCards").Dimensions).toEqual([{ Name: "FunctionName", Value: { Ref: expect.stringMatching(/^PollCardsFunction/) } }]);
    expect(short("Heartbeat-PollCards").AlarmDescription).toContain("PollCards was not invoked in any of the last 3 30-minute periods");
    expect(short("Heartbeat-PollCards").AlarmDescription).toMatch(/Runbook: docs\/runbook\.md#heartbeat$/);
    expect(alarmsOfGlobexEvery(60, 5)("Heartbeat-PollCards")).toMatchObject({ ...heartbeat, Period: 300, EvaluationPeriods: 3, DatapointsToAlarm: 3 });
    expect(long("Heartbeat-PollCards")).toMatchObject({ ...heartbeat, Period: 36_000, EvaluationPeriods: 2, DatapointsToAlarm: 2 });
    const actions = short("SyncLag")["AlarmActions"];
    expect(short("Heartbeat-PollCards")).toMatchObject({ AlarmActions: actions, OKActions: actions });
    // The transaction poller's alarm keeps the construct id and name deployed stacks have: no replacement on update.
    const [stack] = buildTestApp({ tenants: [globexEvery(2, 30)] }).stacks as [TenantStack];
    const ids = Object.entries(Template.fromStack(stack).findResources("AWS::CloudWatch::Alarm"))
      .filter(([, alarm]) => /-Heartbeat/.test((alarm as { Properties: { AlarmName: string } }).Properties.AlarmName))
      .map(([id, alarm]) => [(alarm as { Properties: { AlarmName: string } }).Properties.AlarmName, id]);
    expect(Object.fromEntries(ids)).toEqual({
      "QashioBridge-globex-Heartbeat": "AlarmsHeartbeatCA27EA06",
      "QashioBridge-globex-Heartbeat-PollCards": expect.stringMatching(/^AlarmsHeartbeatPollCards[0-9A-F]{8}$/),
    });
  });

  it("keeps the card alarms on the full walk's cadence when a suspended-only fast path runs beside it", () => {
    // globex every 2 (transactions) and 30 (cards) minutes, with a fast path every minute: each period of the card
    // alarms must hold a full walk, so a walk that keeps failing (or stops: the heartbeat) pages whatever the fast ticks do.
    const fast = alarmsIn(fastGlobexTemplate());
    for (const suffix of ["Errors-PollCards", "Heartbeat-PollCards", "DeadLetters-Pollers", "EventsFailed", "Heartbeat", "SyncLag"]) {
      const { Period, EvaluationPeriods, DatapointsToAlarm } = short(suffix);
      expect(fast(suffix), suffix).toMatchObject({ Period, EvaluationPeriods, DatapointsToAlarm });
    }
    expect(fast("Errors-PollCards")).toMatchObject({ Period: 1800, EvaluationPeriods: 3, DatapointsToAlarm: 2 });
    expect(fast("Heartbeat-PollCards")).toMatchObject({ Period: 1800, EvaluationPeriods: 3, DatapointsToAlarm: 3 });
  });

  it("beats the card poller's heartbeat on full walks, not invocations, when the fast path's ticks would keep it OK", () => {
    // A full-walk schedule stopped alone leaves the fast ticks invoking the card poller: Invocations would stay OK
    // while card.status_changed and card.updated stop. A tenant without the fast path keeps Invocations (above).
    const template = fastGlobexTemplate();
    const heartbeat = alarmsIn(template)("Heartbeat-PollCards");
    expectCycleHeartbeat(heartbeat, "FullCardWalks", 1800, short("SyncLag")["AlarmActions"]);
    expect(heartbeat.AlarmDescription).toContain("PollCards started no full card walk in any of the last 3 30-minute periods");
    // The same alarm, updated in place: same name and logical id as without the fast path.
    const idOf = (t: Template) => Object.keys(t.findResources("AWS::CloudWatch::Alarm", { Properties: { AlarmName: "QashioBridge-globex-Heartbeat-PollCards" } }));
    expect(idOf(template)).toEqual(idOf(templateOfGlobexEvery(2, 30)));
    expect(idOf(template)).toEqual([expect.stringMatching(/^AlarmsHeartbeatPollCards[0-9A-F]{8}$/)]);
    // The transaction poller has no second schedule: its heartbeat stays on Invocations.
    expect(alarmsIn(template)("Heartbeat")).toMatchObject({ Namespace: "AWS/Lambda", MetricName: "Invocations" });
  });

  it("alarms when the fast path's own schedule stops: Heartbeat-SuspendedCards counts suspended-only cycles over the fast path's window", () => {
    // The SuspendedCards schedule disabled or deleted alone: full walks go on (Heartbeat-PollCards stays OK) and
    // card.suspended waits for the next full walk, the delay the tenant set the fast path up to avoid.
    const template = fastGlobexTemplate();
    const heartbeat = alarmsIn(template)("Heartbeat-SuspendedCards");
    // the fast path every minute: 5-minute periods, all of the last 3 without a suspended-only cycle
    expectCycleHeartbeat(heartbeat, "FastPathCardWalks", 300, short("SyncLag")["AlarmActions"]);
    expect(heartbeat.AlarmDescription).toContain("SuspendedCards started no suspended-only card cycle in any of the last 3 5-minute periods");
    // No fast path, no such alarm; a fast path deployed disabled keeps it without notifying, as the other heartbeats.
    expect(alarmsNamed(templateOfGlobexEvery(2, 30), "QashioBridge-globex-Heartbeat-SuspendedCards")).toEqual([]);
    const fast = { ...globexEvery(2, 30) };
    const disabled = alarmsOf({ ...fast, schedules: { ...fast.schedules, suspendedCardsEveryMinutes: 10, enabled: false } });
    expect(disabled("Heartbeat-SuspendedCards")).toMatchObject({ ActionsEnabled: false, Period: 600, EvaluationPeriods: 3, DatapointsToAlarm: 3 });
  });

  it("keeps the heartbeats of a tenant deployed with its schedules disabled, without notifying, and only those alarms", () => {
    const enabled = globexEvery(5, 15);
    const disabled = alarmsOf({ ...enabled, schedules: { ...enabled.schedules, enabled: false } });
    const actions = short("SyncLag")["AlarmActions"];
    expect(disabled("Heartbeat")).toMatchObject({ ActionsEnabled: false, TreatMissingData: "breaching", AlarmActions: actions, OKActions: actions });
    expect(disabled("Heartbeat-PollCards")).toMatchObject({ ActionsEnabled: false, TreatMissingData: "breaching", AlarmActions: actions, OKActions: actions });
    for (const other of ["SyncLag", "Errors-PollTransactions", "Errors-RotateToken", "DeadLetters-Pollers", "TokenFamilyRevoked"]) {
      expect(disabled(other)["ActionsEnabled"]).not.toBe(false);
    }
  });

  it("refuses a heartbeat naming a function it has no schedule or function for", () => {
    const cases: [string[], Record<string, number>][] = [
      [["PollTransactions"], {}],
      [[], { PollTransactions: 5 }],
      // the second one named is checked as the first is
      [["PollTransactions"], { PollTransactions: 5 }],
    ];
    for (const [functions, cycleEveryMinutes] of cases) {
      const stack = new Stack();
      const fn = new lambda.Function(stack, "Fn", { runtime: lambda.Runtime.NODEJS_22_X, handler: "index.handler", code: lambda.Code.fromInline("exports.handler = () => {}") });
      const props = {
        tenantId: "acme",
        target: { email: "ops@acme.test" },
        encryptionKey: new kms.Key(stack, "Key"),
        functions: Object.fromEntries(functions.map((name) => [name, fn])),
        cycleEveryMinutes,
        syncLagEveryMinutes: 5,
        deadLetterQueues: {},
        heartbeat: { of: ["PollTransactions", "PollCards"], notify: true },
      };
      const missing = functions.length === 1 && "PollTransactions" in cycleEveryMinutes ? "PollCards" : "PollTransactions";
      expect(() => new OpsAlarms(stack, "Alarms", props)).toThrow(`heartbeat names "${missing}", which functions and cycleEveryMinutes must both list`);
    }
  });

  it("refuses a heartbeat metric for a function without a heartbeat, rather than leaving it unwatched", () => {
    const stack = new Stack();
    const fn = new lambda.Function(stack, "Fn", { runtime: lambda.Runtime.NODEJS_22_X, handler: "index.handler", code: lambda.Code.fromInline("exports.handler = () => {}") });
    const props = {
      tenantId: "acme",
      target: { email: "ops@acme.test" },
      encryptionKey: new kms.Key(stack, "Key"),
      functions: { PollTransactions: fn, PollCards: fn },
      cycleEveryMinutes: { PollTransactions: 5, PollCards: 15 },
      syncLagEveryMinutes: 5,
      deadLetterQueues: {},
      heartbeat: { of: ["PollTransactions"], notify: true, cycles: { PollCards: { metric: "FullCardWalks", what: "full card walk" } } },
    } as const;
    expect(() => new OpsAlarms(stack, "Alarms", props)).toThrow(`heartbeat cycles name "PollCards", which heartbeat.of must list`);
  });

  it("refuses failed dead-letter writes of a queue it has no alarm for, rather than leaving them unwatched", () => {
    const stack = new Stack();
    const lost = new cloudwatch.Metric({ namespace: "AWS/Events", metricName: "InvocationsFailedToBeSentToDlq" });
    const props = {
      tenantId: "acme",
      target: { email: "ops@acme.test" },
      encryptionKey: new kms.Key(stack, "Key"),
      functions: {},
      syncLagEveryMinutes: 5,
      deadLetterQueues: {},
      deadLetterWriteFailures: { "Webhook-erp": lost },
    };
    expect(() => new OpsAlarms(stack, "Alarms", props)).toThrow(`deadLetterWriteFailures names "Webhook-erp", which deadLetterQueues must list`);
  });

  it("keeps the rotation's errors alarm on its first error whatever the schedules", () => {
    for (const alarm of [short, long]) {
      expect(alarm("Errors-RotateToken")).toMatchObject({ Period: 300, EvaluationPeriods: 1, DatapointsToAlarm: 1, TreatMissingData: "notBreaching" });
    }
  });

  it("counts a period with one failed invocation as breaching, for every function's errors alarm", () => {
    // Sum of Errors >= 1: a single failed cycle (or rotation) is a breaching period; "> 1" would need two failures in
    // one period, which a poller with one invocation per period never has, so its errors would never page.
    const firstError = { MetricName: "Errors", Statistic: "Sum", Threshold: 1, ComparisonOperator: "GreaterThanOrEqualToThreshold" };
    for (const alarm of [short, long]) {
      for (const name of ["PollTransactions", "PollCards", "RotateToken"]) expect(alarm(`Errors-${name}`)).toMatchObject(firstError);
    }
  });

  it("names in each errors alarm's description the function whose invocations failed", () => {
    for (const name of ["PollTransactions", "PollCards", "RotateToken"]) {
      expect(short(`Errors-${name}`).AlarmDescription).toMatch(new RegExp(`^Tenant globex: ${name} invocations failed[ .]`));
    }
  });

  it("gives every allowed schedule a window CloudWatch accepts, with a cycle in every period, 2 of 3 breaching", () => {
    for (let everyMinutes = 1; everyMinutes <= 1440; everyMinutes++) {
      const window = cycleAlarmWindow(everyMinutes);
      const periodSeconds = window.period.toSeconds();
      expect(periodSeconds % 60).toBe(0);
      expect(periodSeconds).toBeGreaterThanOrEqual(everyMinutes * 60);
      // PutMetricAlarm: period x evaluation periods at most a day for periods under an hour, seven days otherwise
      expect(periodSeconds * window.evaluationPeriods).toBeLessThanOrEqual(periodSeconds < 3600 ? DAY_SECONDS : 7 * DAY_SECONDS);
      // one failed cycle, retried by the next tick, does not alarm, whatever the schedule
      expect(window).toMatchObject({ evaluationPeriods: 3, datapointsToAlarm: 2 });
      // the descriptions name the period as it is: "one-day" for a day only (a 1200-minute period is no day)
      expect(describePeriodLength(window)).toBe(periodSeconds === DAY_SECONDS ? "one-day" : `${periodSeconds / 60}-minute`);
    }
  });

  it("evaluates fewer periods only beyond the allowed schedules, as many as CloudWatch's seven days hold, at least one", () => {
    const periodsOf = (everyMinutes: number) => {
      const { evaluationPeriods, datapointsToAlarm } = cycleAlarmWindow(everyMinutes);
      return [evaluationPeriods, datapointsToAlarm];
    };
    // 3 x 3360 minutes is seven days; a longer period fits 2, one over 3.5 days fits 1, one over 7 days still gets 1
    expect(periodsOf(3360)).toEqual([3, 2]);
    expect(periodsOf(3361)).toEqual([2, 2]);
    expect(periodsOf(5041)).toEqual([1, 1]);
    expect(periodsOf(10_081)).toEqual([1, 1]);
  });

  it("gives every allowed schedule a heartbeat window CloudWatch accepts, holding the last tick until the next one's data point lands", () => {
    for (let everyMinutes = 1; everyMinutes <= 1440; everyMinutes++) {
      const window = heartbeatAlarmWindow(everyMinutes);
      const periodSeconds = window.period.toSeconds();
      const spanSeconds = periodSeconds * window.evaluationPeriods;
      expect(periodSeconds % 60).toBe(0);
      // PutMetricAlarm: period x evaluation periods at most a day for periods under an hour, seven days otherwise
      expect(spanSeconds).toBeLessThanOrEqual(periodSeconds < 3600 ? DAY_SECONDS : 7 * DAY_SECONDS);
      // past the schedule by two more ticks or an hour: a tick's data point a few minutes late does not empty the window
      expect(spanSeconds - everyMinutes * 60).toBeGreaterThanOrEqual(Math.min(3600, 2 * everyMinutes * 60));
      expect(window.datapointsToAlarm).toBe(window.evaluationPeriods);
      // fires at most two hours after a missed tick, however long the schedule; up to 12 hours, the cycle alarms'
      // periods as fit in a day (3, 2 over 8 hours), so a stopped poller still pages within a day of silence
      if (everyMinutes > 720) expect(spanSeconds - everyMinutes * 60).toBeLessThan(2 * 3600);
      else {
        const periods = everyMinutes <= 480 ? 3 : 2;
        expect(window).toEqual({ period: cycleAlarmWindow(everyMinutes).period, evaluationPeriods: periods, datapointsToAlarm: periods });
        expect(spanSeconds).toBeLessThanOrEqual(DAY_SECONDS);
      }
    }
  });

  it("sets EventsFailed's window by the transactions schedule when it is slower than every schedule in cycleEveryMinutes", () => {
    const stack = new Stack();
    new OpsAlarms(stack, "Alarms", {
      tenantId: "acme",
      target: { email: "ops@acme.test" },
      encryptionKey: new kms.Key(stack, "Key"),
      functions: {},
      cycleEveryMinutes: { PollCards: 15 },
      syncLagEveryMinutes: 60,
      deadLetterQueues: {},
    });
    Template.fromStack(stack).hasResourceProperties("AWS::CloudWatch::Alarm", {
      AlarmName: "QashioBridge-acme-EventsFailed",
      Period: 3600,
      EvaluationPeriods: 3,
      DatapointsToAlarm: 2,
    });
  });

  it("alarms on a sync lag over 1800 s when given no threshold", () => {
    const stack = new Stack();
    const fn = new lambda.Function(stack, "Fn", { runtime: lambda.Runtime.NODEJS_22_X, handler: "index.handler", code: lambda.Code.fromInline("exports.handler = () => {}") });
    new OpsAlarms(stack, "Alarms", {
      tenantId: "acme",
      target: { email: "ops@acme.test" },
      encryptionKey: new kms.Key(stack, "Key"),
      functions: { PollTransactions: fn },
      syncLagEveryMinutes: 5,
      deadLetterQueues: {},
    });
    Template.fromStack(stack).hasResourceProperties("AWS::CloudWatch::Alarm", {
      AlarmName: "QashioBridge-acme-SyncLag",
      Threshold: 1800,
      ComparisonOperator: "GreaterThanThreshold",
    });
  });
});

describe("what an alarm's description tells the operator it reaches", () => {
  it("names what each heartbeat counts and every way its cycles can stop", () => {
    const fast = alarmsIn(fastGlobexTemplate());
    expect(fast("Heartbeat").AlarmDescription).toContain(
      "none of its cycles runs (schedules disabled or deleted, or EventBridge Scheduler cannot invoke it).",
    );
    // A heartbeat on a cycle metric names the metric to graph, and a cause Invocations cannot have: invocations that
    // fail before their cycle starts.
    expect(fast("Heartbeat-PollCards").AlarmDescription).toContain(
      "(FullCardWalks): its schedule is disabled or deleted, EventBridge Scheduler cannot invoke it, or every invocation fails before the cycle starts.",
    );
    expect(fast("Heartbeat-SuspendedCards").AlarmDescription).toContain(
      "(FastPathCardWalks): it is disabled or deleted, EventBridge Scheduler cannot invoke its function, or every tick fails before the cycle starts.",
    );
  });

  it("says what still works and what does not while the alarm is on", () => {
    const globex = alarmsOfGlobexEvery(2, 30);
    expect(globex("TokenFamilyRevoked").AlarmDescription).toContain("the provider revoked the token family; polling stopped until re-authorization.");
    expect(globex("TokenSecretWriteFailed").AlarmDescription).toContain("polling goes on, but the secret must be made writable again.");
    expect(globex("AcknowledgeRefused").AlarmDescription).toContain(
      "their events are published, but they stay unsynced at the provider and are pulled again every cycle.",
    );
    const [unread] = alarmsNamed(exampleStacks().acme.template, "QashioBridge-acme-sandbox-CardDetailsUnread");
    expect(String(unread?.["AlarmDescription"])).toContain("those cards were taken as listed, so their limit changes are not seen until a read works.");
  });
});

describe("the alarms on plain bridge metrics", () => {
  afterEach(() => vi.unstubAllEnvs());

  it.each([
    ["SyncLag", "globex"],
    ["QuarantineGrowing", "globex"],
    ["TokenFamilyRevoked", "globex"],
    ["AcknowledgeRefused", "globex"],
    ["EventsFailed", "globex"],
    ["TokenSecretWriteFailed", "globex"],
    ["CardDetailsUnread", "acme-sandbox"],
  ] as const)("%s has exactly the dimensions the runtime emits its metric with, under the functions' environment (%s)", (suffix, tenant) => {
    const { template } = tenant === "globex" ? exampleStacks().globex : exampleStacks().acme;
    expectEmittedDimensions(template, tenant, suffix);
  });

  it("Heartbeat-PollCards of a fast-path tenant has exactly the dimensions the runtime emits FullCardWalks with", () => {
    expectEmittedDimensions(fastGlobexTemplate(), "globex", "Heartbeat-PollCards");
  });

  it("Heartbeat-SuspendedCards of a fast-path tenant has exactly the dimensions the runtime emits FastPathCardWalks with", () => {
    expectEmittedDimensions(fastGlobexTemplate(), "globex", "Heartbeat-SuspendedCards");
  });

  /** Emits the metric of `tenant`'s alarm `suffix` through the runtime's adapter, as the functions of `template` would, and checks the alarm reads it. */
  function expectEmittedDimensions(template: Template, tenant: string, suffix: string): void {
    const [alarm] = alarmsNamed(template, `QashioBridge-${tenant}-${suffix}`);
    if (alarm === undefined) throw new Error(`no alarm ${suffix} for ${tenant}`);
    const env = (template.findResources("AWS::Lambda::Function") as Record<string, { Properties: { Environment: { Variables: Record<string, unknown> } } }>);
    const variables = Object.values(env)[0]?.Properties.Environment.Variables ?? {};
    vi.stubEnv("POWERTOOLS_DEV", "true");
    vi.stubEnv("POWERTOOLS_METRICS_DISABLED", "false");
    vi.stubEnv("POWERTOOLS_SERVICE_NAME", String(variables["POWERTOOLS_SERVICE_NAME"]));
    vi.stubEnv("POWERTOOLS_METRICS_NAMESPACE", String(variables["POWERTOOLS_METRICS_NAMESPACE"]));
    const lines: Record<string, unknown>[] = [];
    vi.spyOn(console, "log").mockImplementation((line: unknown) => void lines.push(JSON.parse(String(line)) as Record<string, unknown>));
    vi.spyOn(console, "warn").mockImplementation(() => undefined);
    const metrics = new Metrics();
    metrics.setDefaultDimensions({ tenant });
    const name = alarm["MetricName"] as MetricName;
    const adapter = new PowertoolsMetricsAdapter(metrics);
    adapter.add(name, 12, name === "SyncLagSeconds" ? "Seconds" : "Count");
    // As the handlers' middleware does at the end of an invocation: the adapter's flush, then Powertools' publish.
    adapter.flush();
    metrics.publishStoredMetrics();

    const emf = lines[0] as { _aws: { CloudWatchMetrics: { Namespace: string; Dimensions: string[][] }[] } } & Record<string, unknown>;
    const [directive] = emf._aws.CloudWatchMetrics;
    expect(directive?.Namespace).toBe(alarm["Namespace"]);
    expect(emf[name]).toBe(12);
    expect(directive?.Dimensions).toEqual([alarm.Dimensions?.map((d) => d.Name).sort()]);
    for (const { Name, Value } of alarm.Dimensions ?? []) expect(emf[Name]).toBe(Value);
  }
});

type DeadLetterAlarm = AlarmProperties & {
  Metrics: { Id: string; Expression?: string; Label?: string; ReturnData?: boolean; MetricStat?: { Metric: Record<string, unknown>; Period: number; Stat: string } }[];
};

/**
 * The DeadLetters alarm OpsAlarms makes for `Webhook-erp`, a queue whose failed writes are watched too, or for
 * `EventBus`, one whose are not.
 */
function deadLetterAlarm(name: "Webhook-erp" | "EventBus"): DeadLetterAlarm {
  const stack = new Stack();
  const failed = new cloudwatch.Metric({ namespace: "AWS/Events", metricName: "InvocationsFailedToBeSentToDlq", dimensionsMap: { RuleName: "erp" } });
  new OpsAlarms(stack, "Alarms", {
    tenantId: "acme",
    target: { email: "ops@acme.test" },
    encryptionKey: new kms.Key(stack, "Key"),
    functions: {},
    syncLagEveryMinutes: 5,
    deadLetterQueues: { "Webhook-erp": new sqs.Queue(stack, "Queue"), EventBus: new sqs.Queue(stack, "BusQueue") },
    deadLetterWriteFailures: { "Webhook-erp": failed },
  });
  const found = Object.values(Template.fromStack(stack).findResources("AWS::CloudWatch::Alarm", { Properties: { AlarmName: `QashioBridge-acme-DeadLetters-${name}` } }));
  expect(found).toHaveLength(1);
  return (found[0] as { Properties: DeadLetterAlarm }).Properties;
}

describe("a dead-letter queue's alarm on the messages it holds", () => {
  it("fires as soon as the queue's greatest depth of a 5-minute period is a message, and clears once it is empty", () => {
    const alarm = deadLetterAlarm("EventBus");
    expect(alarm).toMatchObject({
      Namespace: "AWS/SQS",
      MetricName: "ApproximateNumberOfMessagesVisible",
      Statistic: "Maximum",
      Period: 300,
      Threshold: 1,
      ComparisonOperator: "GreaterThanOrEqualToThreshold",
      EvaluationPeriods: 1,
      DatapointsToAlarm: 1,
      // SQS sends no depth for an idle queue: no data is an empty queue
      TreatMissingData: "notBreaching",
    });
    expect(alarm.AlarmDescription).toBe("Tenant acme: dead-letter queue EventBus is not empty. Runbook: docs/runbook.md#dead-letters");
  });

  it("reads a webhook queue's depth and failed writes over the same 5-minute periods, and says its events may be lost", () => {
    const alarm = deadLetterAlarm("Webhook-erp");
    const term = (id: string) => alarm.Metrics.find((m) => m.Id === id)?.MetricStat;
    expect(term("visible")).toMatchObject({ Metric: { Namespace: "AWS/SQS", MetricName: "ApproximateNumberOfMessagesVisible" }, Period: 300, Stat: "Maximum" });
    // failed writes counted, not averaged: one lost event in a period reaches the threshold
    expect(term("failed")).toMatchObject({ Metric: { Namespace: "AWS/Events", MetricName: "InvocationsFailedToBeSentToDlq" }, Period: 300, Stat: "Sum" });
    expect(alarm).toMatchObject({ TreatMissingData: "notBreaching" });
    expect(alarm.AlarmDescription).toBe(
      "Tenant acme: dead-letter queue Webhook-erp is not empty, or events could not even be written to it (lost). Runbook: docs/runbook.md#dead-letters",
    );
  });
});

describe("a webhook queue's alarm on messages held or events EventBridge could not write to it", () => {
  /**
   * Functions AWS's metric math reference ("Functions supported for metric math") recommends against in alarms: they act
   * differently when an alarm retrieves more data points than its evaluation periods.
   */
  const NOT_FOR_ALARMS = ["AVG", "DATAPOINT_COUNT", "MAX", "MIN", "REMOVE_EMPTY", "RUNNING_SUM", "STDDEV", "SUM"];

  /** The DeadLetters alarm OpsAlarms makes for a queue whose failed writes are watched too. */
  const webhookAlarm = () => deadLetterAlarm("Webhook-erp");

  it("combines the two with no metric math function CloudWatch recommends against in alarms", () => {
    const [watched, ...more] = webhookAlarm().Metrics.filter((m) => m.ReturnData === true);
    expect(more).toEqual([]);
    const expression = watched?.Expression ?? "";
    // both metrics take part, the queue's depth and the failed writes
    expect(expression).toMatch(/\bvisible\b/);
    expect(expression).toMatch(/\bfailed\b/);
    const called = [...expression.matchAll(/\b([A-Z_]+)\s*\(/g)].map((m) => m[1]);
    expect(called.filter((name) => NOT_FOR_ALARMS.includes(name as string))).toEqual([]);
  });

  it("labels the sum it alarms on as the queue's messages held or lost, the line the alarm's graph shows", () => {
    const watched = webhookAlarm().Metrics.filter((m) => m.ReturnData === true);
    expect(watched.map((m) => m.Label)).toEqual(["Webhook-erp messages held or lost"]);
  });

  it("fills both terms of its sum with 0: a queue EventBridge cannot write to may send no depth at all", () => {
    // SQS sends a queue's metrics only while it is active (messages in it, or calls on it within six hours): an idle
    // dead-letter queue EventBridge fails to write to has no `visible` points, and a sum with a missing term is not
    // documented to read it as 0, so the lost events' count alone must still reach the threshold.
    const expression = webhookAlarm().Metrics.find((m) => m.ReturnData === true)?.Expression ?? "";
    const terms = [...expression.matchAll(/\b(visible|failed)\b/g)].map((m) => m.index ?? 0);
    expect(terms).toHaveLength(2);
    for (const at of terms) expect(expression.slice(0, at)).toMatch(/FILL\(\s*$/);
  });

  it("still sees a failed write reported after its period ended: 1 of the last 2 periods, as FILL gives the latest a 0", () => {
    // EventBridge's metrics may come late (best effort), and FILL puts a 0 in the latest period until they do; AWS's
    // FILL entry names that case and an M out of N alarm as the remedy. With 1 of 1 the late count was never evaluated.
    const alarm = webhookAlarm();
    expect(alarm.Metrics.some((m) => m.Expression?.includes("FILL(failed, 0)"))).toBe(true);
    expect(alarm).toMatchObject({ EvaluationPeriods: 2, DatapointsToAlarm: 1, Threshold: 1, ComparisonOperator: "GreaterThanOrEqualToThreshold" });
  });
});
