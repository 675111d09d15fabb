import { ArnFormat, Duration, Stack } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as actions from "aws-cdk-lib/aws-cloudwatch-actions";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as kms from "aws-cdk-lib/aws-kms";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import * as sns from "aws-cdk-lib/aws-sns";
import * as subscriptions from "aws-cdk-lib/aws-sns-subscriptions";
import type * as sqs from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import { DEFAULT_RUNBOOK_URL, runbookLink } from "../runbook-link.js";
import { cycleAlarmWindow, describeAlarmWindow, describePeriodLength, heartbeatAlarmWindow, type AlarmWindow } from "./alarm-window.js";
import { bridgeMetric, bridgeTenantMetric, type BridgeMetricName } from "./bridge-metrics.js";
import { accountServiceKeyStatement } from "./tenant-key.js";

/** A function outside any schedule alarms on its first error, over five minutes. */
const FIRST_ERROR_WINDOW: AlarmWindow = { period: Duration.minutes(5), evaluationPeriods: 1, datapointsToAlarm: 1 };

/** Where alarm notifications go: an email address (a topic is created) or an existing topic. */
export type AlarmTarget = { readonly email: string } | { readonly topicArn: string };

/**
 * What a poller's heartbeat counts instead of its invocations, when another schedule invokes it too (the card fast
 * path): a bridge metric its cycles of the watched schedule emit, one data point each.
 */
export interface HeartbeatCycles {
  /** The metric, e.g. `FullCardWalks`. */
  readonly metric: BridgeMetricName;
  /** One of those cycles in words, for the alarm description, e.g. "full card walk". */
  readonly what: string;
}

/**
 * A schedule that invokes a poller beside the poller's own (the card fast path), watched by a heartbeat of its own,
 * `Heartbeat-<name>`: the poller's invocations and its own schedule's cycles would both go on with it stopped.
 */
export interface HeartbeatSchedule extends HeartbeatCycles {
  /** Minutes between two of its ticks: the alarm's window ({@link heartbeatAlarmWindow}). */
  readonly everyMinutes: number;
}

/** Properties of {@link OpsAlarms}. */
export interface OpsAlarmsProps {
  /** Tenant id: the metric dimension and part of every alarm name. */
  readonly tenantId: string;
  /** Email address or topic ARN receiving the notifications. */
  readonly target: AlarmTarget;
  /** Key encrypting a created topic (CloudWatch must be allowed to use it). */
  readonly encryptionKey: kms.IKey;
  /** Functions whose errors alarm, by a short name used in the alarm name (e.g. `PollTransactions`). */
  readonly functions: Readonly<Record<string, lambda.IFunction>>;
  /**
   * Schedule, in minutes, of each function that runs in cycles, by the same short name: its errors alarm over
   * windows derived from the schedule ({@link cycleAlarmWindow}), since the next cycle retries a transient failure
   * anyway. A function not listed (e.g. token rotation, which runs rarely) alarms on its first error. The slowest
   * schedule sets EventsFailed's window, so each period holds a cycle of every poller.
   * @default - none
   */
  readonly cycleEveryMinutes?: Readonly<Record<string, number>>;
  /**
   * Schedule of the transactions poller, in minutes: SyncLag, QuarantineGrowing and AcknowledgeRefused are evaluated
   * over windows derived from it.
   */
  readonly syncLagEveryMinutes: number;
  /**
   * Schedule of the card poller, in minutes, when the tenant reads card details: CardDetailsUnread is evaluated over
   * windows derived from it.
   * @default - no CardDetailsUnread alarm (the tenant does not read card details)
   */
  readonly cardDetailsEveryMinutes?: number;
  /** Queues that alarm as long as they hold a message, by short name: their messages need handling (redrive, purge). */
  readonly deadLetterQueues: Readonly<Record<string, sqs.IQueue>>;
  /**
   * Queues receiving scheduled cycles' failed or undelivered ticks, by short name, with the schedule in minutes whose
   * periods their alarm evaluates ({@link cycleAlarmWindow}). They alarm on messages sent, not held, so they clear by
   * themselves once ticks stop failing (the next tick retries anyway), keeping the messages for inspection.
   * @default - none
   */
  readonly cycleDeadLetterQueues?: Readonly<Record<string, { readonly queue: sqs.IQueue; readonly everyMinutes: number }>>;
  /**
   * Counts of events EventBridge could not even write to one of `deadLetterQueues` (dropped for good), by that queue's
   * short name (e.g. `Webhook-erp`): its `DeadLetters-<name>` alarm fires on these too, any in a 5-minute period. A
   * separate alarm would be one more resource per webhook, against CloudFormation's 500.
   * @default - none
   */
  readonly deadLetterWriteFailures?: Readonly<Record<string, cloudwatch.Metric>>;
  /**
   * SyncLagSeconds above which the tenant is considered behind.
   * @default 1800
   */
  readonly syncLagThresholdSeconds?: number;
  /**
   * The functions whose invocations show that their cycles run (the pollers), by their short names in `functions` and
   * `cycleEveryMinutes`: each one's heartbeat alarm fires when it was invoked in none of the periods of
   * {@link heartbeatAlarmWindow} of its own schedule. The first keeps the bare name `Heartbeat` (the alarm deployed stacks
   * have, for the transaction poller), the others are `Heartbeat-<name>`. `notify: false` (the tenant's schedules are
   * deployed disabled) keeps the alarms, with their actions disabled. `cycles` names, by the same short names, the
   * pollers whose heartbeat counts a metric their cycles emit instead (see {@link HeartbeatCycles}), over the same window.
   * `schedules` names, by schedule name, the extra schedules watched by a heartbeat of their own (see {@link HeartbeatSchedule}).
   * @default - no heartbeat alarm
   */
  readonly heartbeat?: {
    readonly of: readonly string[];
    readonly notify: boolean;
    readonly cycles?: Readonly<Record<string, HeartbeatCycles>>;
    readonly schedules?: Readonly<Record<string, HeartbeatSchedule>>;
  };
  /**
   * The runbook page each alarm description links a section of (validated by `runbookUrlFrom`).
   * @default "docs/runbook.md" (repository-relative)
   */
  readonly runbookUrl?: string;
}

/** Name of a tenant's alarm: `QashioBridge-<tenant>-TokenFamilyRevoked`, ... */
function alarmNameOf(tenant: string, suffix: string): string {
  return `QashioBridge-${tenant}-${suffix}`;
}

/**
 * The tenant's alarms (token family revoked, sync lag, function errors, dead letters and events lost on their way
 * there, quarantine held and growing, acknowledges the provider keeps refusing, events the bus keeps refusing, cycles
 * no longer running) and the SNS topic they notify. Each alarm's description points to its section in docs/runbook.md (at `runbookUrl` when given).
 */
export class OpsAlarms extends Construct {
  /** Topic receiving ALARM and OK notifications. */
  public readonly topic: sns.ITopic;
  /** Every alarm, by name suffix (e.g. `TokenFamilyRevoked`, `Errors-PollCards`, `DeadLetters-Pollers`). */
  public readonly alarms: ReadonlyMap<string, cloudwatch.Alarm>;

  constructor(scope: Construct, id: string, props: OpsAlarmsProps) {
    super(scope, id);
    const tenant = props.tenantId;
    /** The topic this construct creates (an email target), granted to the alarms once they all exist. */
    let ownTopic: sns.Topic | undefined;
    if ("email" in props.target) {
      const topic = new sns.Topic(this, "Topic", {
        displayName: `qashio-bridge ${tenant} alarms`,
        masterKey: props.encryptionKey,
        enforceSSL: true,
      });
      topic.addSubscription(new subscriptions.EmailSubscription(props.target.email));
      ownTopic = topic;
      // CloudWatch alarms publish to the encrypted topic only if the key policy lets them; a topic of the tenant's
      // own (topicArn) brings its own key, so the statement is made only with this topic. The source account only if
      // the call carries it: AWS's statement for alarms on an encrypted topic has no condition and AWS does not say
      // these calls carry it, and a required key they lack would drop every notification with nothing to show it.
      props.encryptionKey.addToResourcePolicy(
        accountServiceKeyStatement(
          this,
          "AllowCloudWatchAlarmsToPublishToEncryptedTopic",
          "cloudwatch.amazonaws.com",
          ["kms:Decrypt", "kms:GenerateDataKey*"],
          "ifPresent",
        ),
      );
      this.topic = topic;
    } else {
      this.topic = sns.Topic.fromTopicArn(this, "Topic", props.target.topicArn);
    }
    const action = new actions.SnsAction(this.topic);
    const runbookUrl = props.runbookUrl ?? DEFAULT_RUNBOOK_URL;
    const alarms = new Map<string, cloudwatch.Alarm>();
    const add = (suffix: string, runbook: string, metric: cloudwatch.IMetric, options: Omit<cloudwatch.AlarmProps, "metric">) => {
      const alarm = new cloudwatch.Alarm(this, suffix, {
        ...options,
        metric,
        alarmName: alarmNameOf(tenant, suffix),
        alarmDescription: `${options.alarmDescription} Runbook: ${runbookLink(runbookUrl, runbook)}`,
      });
      alarm.addAlarmAction(action);
      alarm.addOkAction(action);
      alarms.set(suffix, alarm);
    };
    /**
     * An alarm on a plain metric the runtime emits only when something happened: at least one in `datapointsToAlarm` of
     * the window's periods; a period without a data point is a period without it, so the alarm clears by itself.
     */
    const addOccurrences = (suffix: string, runbook: string, name: BridgeMetricName, statistic: "Sum" | "Maximum", window: AlarmWindow, description: string) =>
      add(suffix, runbook, bridgeTenantMetric(tenant, name, { statistic, period: window.period }), {
        alarmDescription: description,
        threshold: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluationPeriods: window.evaluationPeriods,
        datapointsToAlarm: window.datapointsToAlarm,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });

    /**
     * An alarm on a state gauge the runtime reports whenever it learns the state (1 on, 0 off), published at an
     * invocation's last value (LAST_VALUE_METRICS): on from the first 1 until a 0, however far apart reports are, as
     * periods without one keep the state.
     */
    const addStateGauge = (suffix: string, runbook: string, name: BridgeMetricName, description: string) =>
      add(suffix, runbook, bridgeTenantMetric(tenant, name, { statistic: "Maximum", period: Duration.minutes(1) }), {
        alarmDescription: description,
        threshold: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluationPeriods: 1,
        treatMissingData: cloudwatch.TreatMissingData.IGNORE,
      });
    // 1 from every run the revoked family stops (the pollers' ticks, the daily rotation), 0 from a cycle or rotation
    // the provider answered: it stays on while the pollers are paused, and clears at the first good cycle.
    addStateGauge(
      "TokenFamilyRevoked",
      "tokenfamilyrevoked",
      "TokenFamilyRevoked",
      `Tenant ${tenant}: the provider revoked the token family; polling stopped until re-authorization. On until a poll or token rotation the provider answers.`,
    );
    // TokenHeldInTable: the token store reports it at each load and save (a refresh, a cold start), 1 while the live
    // refresh token is held in the table: on from the refused write until a save writes the secret.
    addStateGauge(
      "TokenSecretWriteFailed",
      "tokensecretwritefailed",
      "TokenHeldInTable",
      `Tenant ${tenant}: the live refresh token is held in the table because Secrets Manager refused to store it; ` +
        "polling goes on, but the secret must be made writable again.",
    );
    const lagThreshold = props.syncLagThresholdSeconds ?? 1800;
    const lagWindow = cycleAlarmWindow(props.syncLagEveryMinutes);
    // A plain metric: a Metrics Insights alarm cannot look back further than 3 hours, a slow schedule's window can.
    add("SyncLag", "synclag", bridgeTenantMetric(tenant, "SyncLagSeconds", { statistic: "Maximum", period: lagWindow.period }), {
      alarmDescription: `Tenant ${tenant}: the oldest unpublished change was older than ${lagThreshold} s in ${describeAlarmWindow(lagWindow)}.`,
      threshold: lagThreshold,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: lagWindow.evaluationPeriods,
      datapointsToAlarm: lagWindow.datapointsToAlarm,
      // A period without a cycle (a tick late into the next period) says nothing new: keep the state.
      treatMissingData: cloudwatch.TreatMissingData.IGNORE,
    });
    // A gauge of records held (emitted after every cycle), not new records per period: the alarm stays on while
    // any record remains and a re-quarantined record is not counted again.
    add("QuarantineNotEmpty", "quarantinenotempty", bridgeMetric(tenant, "QuarantineSize", { aggregate: "MAX" }), {
      alarmDescription: `Tenant ${tenant}: the quarantine holds provider records that were not published.`,
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
      // Periods between cycles carry no data point; keep the last state instead of clearing.
      treatMissingData: cloudwatch.TreatMissingData.IGNORE,
    });
    // QuarantineNotEmpty stays on while any record is held, so it says nothing about records quarantined later.
    const growingWindow: AlarmWindow = { period: lagWindow.period, evaluationPeriods: 1, datapointsToAlarm: 1 };
    // Quarantined is emitted only when a cycle quarantines something: a period without it is a period without new records.
    addOccurrences(
      "QuarantineGrowing",
      "quarantinegrowing",
      "Quarantined",
      "Sum",
      growingWindow,
      `Tenant ${tenant}: provider records were quarantined in ${describeAlarmWindow(growingWindow)}.`,
    );
    // A refused id stays listed and every transaction cycle tries it again, so a refusal that persists is reported in
    // every period of the transactions schedule, while one a retry clears is reported once: 2 of 3 periods (the id was
    // refused again when retried) page, a single refusal does not.
    const refusedWindow = cycleAlarmWindow(props.syncLagEveryMinutes);
    // AcknowledgeRefused is emitted only when an acknowledge is refused: a period without it is a period without
    // refusals, so the alarm clears by itself once the provider takes the ids.
    addOccurrences(
      "AcknowledgeRefused",
      "acknowledgerefused",
      "AcknowledgeRefused",
      "Sum",
      refusedWindow,
      `Tenant ${tenant}: the provider refused to acknowledge transactions in ${describeAlarmWindow(refusedWindow)}; ` +
        "their events are published, but they stay unsynced at the provider and are pulled again every cycle.",
    );
    // EventsFailed counts every event the bus did not take. One refused for now (throttling, the bus's policy or key)
    // stays pending and every cycle of its poller sends it again; so does a card's refused for good (no publish
    // quarantine for cards), while a transaction's is quarantined once (QuarantineGrowing). Periods of the slower
    // schedule hold a cycle of both pollers, so card events deferred in a tenant with few transactions, which SyncLag
    // never sees, page too; 2 of 3 periods, so one throttled cycle does not.
    const failedEvery = Math.max(props.syncLagEveryMinutes, ...Object.values(props.cycleEveryMinutes ?? {}));
    const failedWindow = cycleAlarmWindow(failedEvery);
    addOccurrences(
      "EventsFailed",
      "eventsfailed",
      "EventsFailed",
      "Sum",
      failedWindow,
      `Tenant ${tenant}: the event bus refused events in ${describeAlarmWindow(failedWindow)}. Refused for now ` +
        "(throttling, the bus policy or key): not delivered, sent again every cycle until the bus takes them. Refused " +
        "for good: a card's event is sent again every walk, a transaction's is quarantined.",
    );
    if (props.cardDetailsEveryMinutes !== undefined) {
      // As AcknowledgeRefused: a card the provider will not read is taken as listed again every walk, so a lasting
      // failure is reported in every period of the cards schedule, a passing one (a card removed while read) once.
      // Full walks only emit it: fast ticks count theirs in FastPathCardDetailsUnread (graphed), many per period.
      const unreadWindow = cycleAlarmWindow(props.cardDetailsEveryMinutes);
      addOccurrences(
        "CardDetailsUnread",
        "carddetailsunread",
        "CardDetailsUnread",
        "Sum",
        unreadWindow,
        `Tenant ${tenant}: card detail reads failed, or a page's reads did not fit in a cycle (a slow detail endpoint), in ${describeAlarmWindow(unreadWindow)}; ` +
          "those cards were taken as listed, so their limit changes are not seen until a read works.",
      );
    }
    for (const [name, fn] of Object.entries(props.functions)) {
      const everyMinutes = props.cycleEveryMinutes?.[name];
      const window = everyMinutes === undefined ? FIRST_ERROR_WINDOW : cycleAlarmWindow(everyMinutes);
      const when = everyMinutes === undefined ? "" : ` in ${describeAlarmWindow(window)}`;
      add(`Errors-${name}`, "function-errors", fn.metricErrors({ period: window.period, statistic: "Sum" }), {
        alarmDescription: `Tenant ${tenant}: ${name} invocations failed${when}.`,
        threshold: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluationPeriods: window.evaluationPeriods,
        datapointsToAlarm: window.datapointsToAlarm,
        // Lambda reports Errors (0 on success) only for periods with an invocation; between a cycle's ticks keep the
        // state, while a rare one-off function (rotation) clears once its failure is a period old.
        treatMissingData: everyMinutes === undefined ? cloudwatch.TreatMissingData.NOT_BREACHING : cloudwatch.TreatMissingData.IGNORE,
      });
    }
    const writeFailures = props.deadLetterWriteFailures ?? {};
    for (const name of Object.keys(writeFailures)) {
      if (!(name in props.deadLetterQueues)) throw new Error(`OpsAlarms: deadLetterWriteFailures names "${name}", which deadLetterQueues must list`);
    }
    for (const [name, queue] of Object.entries(props.deadLetterQueues)) {
      const period = Duration.minutes(5);
      const visible = queue.metricApproximateNumberOfMessagesVisible({ period, statistic: "Maximum" });
      const failed = writeFailures[name];
      // EventBridge reports failed writes only when not zero, and SQS a queue's depth only while it is active (an idle
      // DLQ EventBridge cannot write to sends none): FILL keeps either one's gap from hiding the other, a sum with a
      // missing term not being documented to read it as 0. A sum, not MAX([...]) (which CloudWatch's metric math
      // reference advises against in alarms): two counts, so it reaches 1 exactly when one of them does.
      const metric =
        failed === undefined
          ? visible
          : new cloudwatch.MathExpression({
              expression: "FILL(visible, 0) + FILL(failed, 0)",
              usingMetrics: { visible, failed: failed.with({ period, statistic: "Sum" }) },
              label: `${name} messages held or lost`,
              period,
            });
      const lost = failed === undefined ? "" : ", or events could not even be written to it (lost)";
      add(`DeadLetters-${name}`, "dead-letters", metric, {
        alarmDescription: `Tenant ${tenant}: dead-letter queue ${name} is not empty${lost}.`,
        threshold: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        // FILL puts a 0 in the latest period until EventBridge's late (best-effort) count comes: 1 of 2 still sees it.
        evaluationPeriods: failed === undefined ? 1 : 2,
        datapointsToAlarm: 1,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
    }
    for (const [name, { queue, everyMinutes }] of Object.entries(props.cycleDeadLetterQueues ?? {})) {
      const window = cycleAlarmWindow(everyMinutes);
      add(`DeadLetters-${name}`, "dead-letters", queue.metricNumberOfMessagesSent({ period: window.period, statistic: "Sum" }), {
        alarmDescription: `Tenant ${tenant}: ticks went to dead-letter queue ${name} in ${describeAlarmWindow(window)}.`,
        threshold: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluationPeriods: window.evaluationPeriods,
        datapointsToAlarm: window.datapointsToAlarm,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
    }
    const { of: beating = [], notify = true, cycles = {}, schedules = {} } = props.heartbeat ?? {};
    for (const name of Object.keys(cycles)) {
      if (!beating.includes(name)) throw new Error(`OpsAlarms: heartbeat cycles name "${name}", which heartbeat.of must list`);
    }
    /** A heartbeat alarm: `beat` (data only for periods with a beat) below 1 in every period of `everyMinutes`' window. */
    const addHeartbeat = (suffix: string, everyMinutes: number, beat: (span: string, period: Duration) => { metric: cloudwatch.IMetric; description: string }) => {
      // Every evaluated period must lack a beat, so a tick late into the next period does not page.
      const window = heartbeatAlarmWindow(everyMinutes);
      const span = `any of the last ${window.evaluationPeriods} ${describePeriodLength(window)} periods`;
      const { metric, description } = beat(span, window.period);
      add(suffix, "heartbeat", metric, {
        alarmDescription: description,
        threshold: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
        evaluationPeriods: window.evaluationPeriods,
        datapointsToAlarm: window.datapointsToAlarm,
        treatMissingData: cloudwatch.TreatMissingData.BREACHING,
        // A tenant deployed with its schedules disabled runs no cycle on purpose: the alarm shows it, silently.
        actionsEnabled: notify,
      });
    };
    beating.forEach((name, i) => {
      const fn = props.functions[name];
      const everyMinutes = props.cycleEveryMinutes?.[name];
      if (fn === undefined || everyMinutes === undefined) {
        throw new Error(`OpsAlarms: heartbeat names "${name}", which functions and cycleEveryMinutes must both list`);
      }
      const counted = cycles[name];
      // The first keeps the id "Heartbeat": a new construct id would replace the alarm of deployed stacks.
      addHeartbeat(i === 0 ? "Heartbeat" : `Heartbeat-${name}`, everyMinutes, (span, period) =>
        // Lambda reports Invocations, and the runtime its cycle metric, only for periods with one: no data is the signal.
        counted === undefined
          ? {
              metric: fn.metricInvocations({ period, statistic: "Sum" }),
              description:
                `Tenant ${tenant}: ${name} was not invoked in ${span}: none of its cycles runs ` +
                "(schedules disabled or deleted, or EventBridge Scheduler cannot invoke it).",
            }
          : {
              // A plain metric: the window of a slow schedule is longer than a Metrics Insights alarm can look back.
              metric: bridgeTenantMetric(tenant, counted.metric, { statistic: "Sum", period }),
              description:
                `Tenant ${tenant}: ${name} started no ${counted.what} in ${span} (${counted.metric}): its schedule is ` +
                "disabled or deleted, EventBridge Scheduler cannot invoke it, or every invocation fails before the cycle starts.",
            },
      );
    });
    for (const [name, schedule] of Object.entries(schedules)) {
      addHeartbeat(`Heartbeat-${name}`, schedule.everyMinutes, (span, period) => ({
        metric: bridgeTenantMetric(tenant, schedule.metric, { statistic: "Sum", period }),
        description:
          `Tenant ${tenant}: schedule ${name} started no ${schedule.what} in ${span} (${schedule.metric}): it is ` +
          "disabled or deleted, EventBridge Scheduler cannot invoke its function, or every tick fails before the cycle starts.",
      }));
    }
    this.alarms = alarms;
    if (ownTopic) {
      // enforceSSL makes the topic policy, which replaces SNS's default one (the account's principals may publish):
      // CloudWatch then needs an explicit grant, or every alarm action fails with "not authorized to perform
      // SNS:Publish". Only for this tenant's alarms, in this account: their ARNs one by one, since a name prefix
      // (`QashioBridge-globex-*`) would also match another tenant's (`QashioBridge-globex-eu-...`).
      ownTopic.addToResourcePolicy(
        new iam.PolicyStatement({
          sid: "AllowCloudWatchAlarmsToPublish",
          principals: [new iam.ServicePrincipal("cloudwatch.amazonaws.com")],
          actions: ["sns:Publish"],
          resources: [ownTopic.topicArn],
          conditions: {
            StringEquals: { "aws:SourceAccount": Stack.of(this).account },
            ArnEquals: {
              "aws:SourceArn": [...alarms.keys()].map((suffix) =>
                Stack.of(this).formatArn({ service: "cloudwatch", resource: "alarm", resourceName: alarmNameOf(tenant, suffix), arnFormat: ArnFormat.COLON_RESOURCE_NAME }),
              ),
            },
          },
        }),
      );
    }
  }
}
