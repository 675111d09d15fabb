import { join } from "node:path";
import { Annotations, CfnOutput, Duration, Stack, type StackProps } from "aws-cdk-lib";
import { RegionInfo } from "aws-cdk-lib/region-info";
import type * as iam from "aws-cdk-lib/aws-iam";
import type * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import type * as sqs from "aws-cdk-lib/aws-sqs";
import type { Construct } from "constructs";
import { CYCLE_SAFETY_MARGIN_MS, MIN_CYCLE_BUDGET_MS, MIN_POLLER_TIMEOUT_MS } from "../shared/aws/config.js";
import { quarantinePartition, type TableUser } from "../shared/aws/keys.js";
import { BridgeFunction, type BridgeFunctionEnvironment } from "./constructs/bridge-function.js";
import { EventSchemas } from "./constructs/event-schemas.js";
import { FailureQueue } from "./constructs/failure-queue.js";
import { OpsAlarms } from "./constructs/ops-alarms.js";
import { OpsDashboard } from "./constructs/ops-dashboard.js";
import { PollSchedules } from "./constructs/poll-schedules.js";
import { TenantEventBus } from "./constructs/tenant-event-bus.js";
import { TenantKey } from "./constructs/tenant-key.js";
import { TenantSecret } from "./constructs/tenant-secret.js";
import { tableGrants, TenantTable } from "./constructs/tenant-table.js";
import { WebhookForwarder } from "./constructs/webhook-forwarder.js";
import type { EventDetailSchema } from "./event-schemas-source.js";
import { acknowledgeTenantStackFindings } from "./nag-acknowledgements.js";
import type { TenantConfig } from "./tenant-config.js";

/** Properties of {@link TenantStack}. */
export interface TenantStackProps extends StackProps {
  /** The validated tenant configuration. */
  readonly tenant: TenantConfig;
  /** Provider base URL resolved from the tenant's environment. */
  readonly providerBaseUrl: string;
  /** The event catalog's detail schemas, registered in the tenant's schema registry. */
  readonly eventSchemas: readonly EventDetailSchema[];
  /**
   * Directory of the Lambda handlers (poll-transactions.ts, poll-cards.ts, rotate-token.ts).
   * @default <repository>/functions
   */
  readonly functionsDir?: string;
  /**
   * The runbook page alarm descriptions and the dashboard link to (validated by `runbookUrlFrom`).
   * @default "docs/runbook.md" (repository-relative)
   */
  readonly runbookUrl?: string;
}

/** Stack name of a tenant. */
export function tenantStackName(tenantId: string): string {
  return `QashioBridge-${tenantId}`;
}

/**
 * Longest an invocation may run: the schedule period, between one and five minutes, so a cycle normally ends
 * before the next tick (the reserved concurrency of 1 and the lease cover the rest). Never under
 * MIN_POLLER_TIMEOUT_MS, which the pollers refuse at entry (test/infra/tenant-stack.test.ts checks the synthesized stacks).
 */
export function pollerTimeout(everyMinutes: number): Duration {
  return Duration.seconds(Math.min(300, Math.max(Math.ceil(MIN_POLLER_TIMEOUT_MS / 1000), everyMinutes * 60)));
}

/** Lambda keeps a queued asynchronous invocation at most 6 hours. */
const MAX_ASYNC_EVENT_AGE_SECONDS = 6 * 60 * 60;
/** Longest Lambda waits between two attempts at a throttled asynchronous invocation (its retries back off up to this). */
const MAX_THROTTLED_RETRY_INTERVAL_SECONDS = 5 * 60;

/**
 * How long a tick may wait behind a running cycle before it goes to the DLQ: one schedule period (the next tick
 * does its work anyway), capped at what Lambda allows for schedules over 6 hours. With `fastPath` (a second, faster
 * schedule invoking the same function: the card fast path) ticks routinely meet a running full walk, so it is at least
 * the walk's timeout plus Lambda's longest wait between retries: a tick meeting a walk then runs after it instead of
 * going to the DLQ, which would page (DeadLetters-Pollers) after every long walk.
 */
export function pollerMaxEventAge(everyMinutes: number, options: { readonly fastPath?: boolean } = {}): Duration {
  const period = Math.max(60, everyMinutes * 60);
  const behindWalk = options.fastPath === true ? pollerTimeout(everyMinutes).toSeconds() + MAX_THROTTLED_RETRY_INTERVAL_SECONDS : 0;
  return Duration.seconds(Math.min(MAX_ASYNC_EVENT_AGE_SECONDS, Math.max(period, behindWalk)));
}

/**
 * Cycle budget handed to the engine: the timeout minus what the runtime keeps back anyway (the calls' grace past the
 * deadline, writing the page in flight, flushing metrics), so the setting and the runtime agree; never under the
 * smallest budget the functions accept (one that can still refresh the token).
 */
export function cycleBudgetMs(timeout: Duration): number {
  return Math.max(MIN_CYCLE_BUDGET_MS, timeout.toMilliseconds() - CYCLE_SAFETY_MARGIN_MS);
}

/**
 * Everything one customer tenant runs on: table, secret, functions, schedules, bus, archive, schema
 * registry, webhooks, alarms and dashboard. Tenants share nothing, not even a KMS key.
 */
export class TenantStack extends Stack {
  public readonly key: TenantKey;
  public readonly table: TenantTable;
  public readonly secret: TenantSecret;
  public readonly eventBus: TenantEventBus;
  public readonly pollerDeadLetters: FailureQueue;
  public readonly pollTransactions: BridgeFunction;
  public readonly pollCards: BridgeFunction;
  public readonly rotateToken: BridgeFunction;
  public readonly schedules: PollSchedules;
  public readonly eventSchemas: EventSchemas;
  public readonly webhooks: readonly WebhookForwarder[];
  /**
   * Every dead-letter queue of the tenant, by the short name its alarm and dashboard line carry: `Pollers` (failed
   * ticks), then a created bus's (`EventBus`) and each webhook's (`Webhook-<name>`), which hold events to deliver.
   */
  public readonly deadLetterQueues: Readonly<Record<string, sqs.Queue>>;
  public readonly alarms: OpsAlarms;
  public readonly dashboard: OpsDashboard;

  constructor(scope: Construct, id: string, props: TenantStackProps) {
    super(scope, id, {
      description: `qashio-bridge tenant ${props.tenant.id}`,
      ...props,
    });
    const tenant = props.tenant;
    if (/\.(example|invalid|test)$/.test(new URL(props.providerBaseUrl).hostname)) {
      // A named deployment takes its URL from the environment or cdk.json; a literal one is the tenant's own field.
      const where = /^https:/.test(tenant.environment) ? "the tenant's environment field" : "QASHIO_*_URL or cdk context qashioUrls";
      Annotations.of(this).addWarningV2(
        "qashio-bridge:placeholderProviderUrl",
        `provider URL ${props.providerBaseUrl} is a placeholder: set the real one (${where}) before deploying`,
      );
    }
    // The tenants file checks a region's shape only: a typo such as eu-west-7 would fail the deploy, not synth.
    if (tenant.region !== undefined && !RegionInfo.regions.some((known) => known.name === tenant.region)) {
      Annotations.of(this).addWarningV2(
        "qashio-bridge:unknownRegion",
        `region ${tenant.region} is not one this aws-cdk-lib knows: check it for a typo (a region newer than the library is fine)`,
      );
    }
    const functionsDir = props.functionsDir ?? join(import.meta.dirname, "..", "functions");

    // NEVER change the construct ids "Key", "Table", "Secret", "EventBus" (nor the ids inside those constructs) on
    // deployed stacks: they make the logical ids, and a new logical id orphans the retained resource and starts an
    // empty one (no snapshots, no refresh token, a new pii_salt, an empty archive). test/infra pins them.
    this.key = new TenantKey(this, "Key", { tenantId: tenant.id });
    const key = this.key.key;
    this.table = new TenantTable(this, "Table", { encryptionKey: key });
    this.secret = new TenantSecret(this, "Secret", { tenantId: tenant.id, leaseTableName: this.table.table.tableName, encryptionKey: key });
    this.eventBus = new TenantEventBus(this, "EventBus", {
      tenantId: tenant.id,
      bus: tenant.eventBus,
      eventSource: tenant.eventSource,
      archiveRetentionDays: tenant.archiveRetentionDays,
      encryptionKey: key,
    });
    this.pollerDeadLetters = new FailureQueue(this, "PollerDeadLetters", { encryptionKey: key });

    const environment: BridgeFunctionEnvironment = {
      TENANT_ID: tenant.id,
      QASHIO_BASE_URL: props.providerBaseUrl,
      TABLE_NAME: this.table.table.tableName,
      SECRET_ID: this.secret.secret.secretArn,
      EVENT_BUS_NAME: this.eventBus.busNameForPutEvents,
      EVENT_SOURCE: tenant.eventSource,
      PII_MODE: tenant.piiMode,
      EMIT_CARD_CREATED: tenant.emitCardCreated ? "true" : "false",
      CARD_DETAILS: tenant.cardDetails ? "true" : "false",
    };
    const poller = (name: string, file: string, everyMinutes: number, what: string, fastPath = false): BridgeFunction => {
      const timeout = pollerTimeout(everyMinutes);
      return new BridgeFunction(this, name, {
        entry: join(functionsDir, file),
        description: `qashio-bridge ${tenant.id}: ${what}`,
        environment: { ...environment, CYCLE_BUDGET_MS: String(cycleBudgetMs(timeout)) },
        timeout,
        reservedConcurrentExecutions: 1,
        onFailure: this.pollerDeadLetters.queue,
        maxEventAge: pollerMaxEventAge(everyMinutes, { fastPath }),
        logEncryptionKey: key,
      });
    };
    this.pollTransactions = poller(
      "PollTransactions",
      "poll-transactions.ts",
      tenant.schedules.transactionsEveryMinutes,
      "pull, publish and acknowledge transactions",
    );
    // Its timeout follows the full walk's schedule: a fast-path tick gets the same budget, and rarely needs it.
    const fastPath = tenant.schedules.suspendedCardsEveryMinutes !== undefined;
    this.pollCards = poller("PollCards", "poll-cards.ts", tenant.schedules.cardsEveryMinutes, "diff cards and publish", fastPath);
    this.rotateToken = new BridgeFunction(this, "RotateToken", {
      entry: join(functionsDir, "rotate-token.ts"),
      description: `qashio-bridge ${tenant.id}: Secrets Manager rotation, refreshes the provider token under the lease`,
      environment,
      // Room to spare: createSecret is sure to refresh only with MIN_ROTATION_TIMEOUT_MS left (its wait for the refresh
      // lease, the lease, and the margin it keeps before the timeout), after a few provider and AWS calls.
      timeout: Duration.minutes(10),
      logEncryptionKey: key,
    });

    // Each function's item actions, per kind of partition its code sends them to (TABLE_ACCESS).
    const grantTableItems = (fn: iam.IGrantable, user: TableUser) => {
      for (const { actions, partitionKeys } of tableGrants(tenant.id, user)) this.table.grantItemAccess(fn, actions, partitionKeys);
    };
    const pollers: [BridgeFunction, TableUser][] = [
      [this.pollTransactions, "pollTransactions"],
      [this.pollCards, "pollCards"],
    ];
    for (const [{ function: fn }, user] of pollers) {
      grantTableItems(fn, user);
      // Each poller counts the quarantine after its cycle (QuarantineSize): on the index, that partition only.
      this.table.grantLiveCount(fn, [quarantinePartition(tenant.id)]);
      this.secret.grantRuntimeAccess(fn);
      // sqs: Lambda writes a failed invocation to the encrypted DLQ with the function's role
      this.key.grantDataUse(fn, ["dynamodb", "secretsmanager", "sqs"]);
      this.eventBus.grantPutEvents(fn);
    }
    // The transaction poller scans the snapshots (conform-pii, the PII salt check); a Scan cannot be partition-scoped.
    this.table.grantScan(this.pollTransactions.function);
    grantTableItems(this.rotateToken.function, "rotateToken");
    this.secret.grantRuntimeAccess(this.rotateToken.function);
    this.key.grantDataUse(this.rotateToken.function, ["dynamodb", "secretsmanager"]);
    this.secret.addTokenRotation(this.rotateToken.function);

    this.schedules = new PollSchedules(this, "Schedules", {
      tenantId: tenant.id,
      pollTransactions: this.pollTransactions.function,
      pollCards: this.pollCards.function,
      transactionsEveryMinutes: tenant.schedules.transactionsEveryMinutes,
      cardsEveryMinutes: tenant.schedules.cardsEveryMinutes,
      suspendedCardsEveryMinutes: tenant.schedules.suspendedCardsEveryMinutes,
      deadLetterQueue: this.pollerDeadLetters.queue,
      enabled: tenant.schedules.enabled,
    });
    this.key.grantDataUse(this.schedules.role, ["sqs"]);

    this.eventSchemas = new EventSchemas(this, "EventSchemas", {
      tenantId: tenant.id,
      eventSource: tenant.eventSource,
      schemas: props.eventSchemas,
    });

    // Each message in these is an event still to deliver: a created bus's DLQ holds events the bus accepted but could
    // not encrypt or decrypt, a webhook's those EventBridge could not deliver to the endpoint.
    const eventDeadLetters: Record<string, sqs.Queue> =
      this.eventBus.deadLetters === undefined ? {} : { EventBus: this.eventBus.deadLetters.queue };
    const deadLetterWriteFailures: Record<string, cloudwatch.Metric> = {};
    this.webhooks = tenant.webhooks.map((webhook) => {
      const name = `Webhook-${webhook.name}`;
      const dlq = new FailureQueue(this, `${name}-DeadLetters`, { encryptionKey: key });
      eventDeadLetters[name] = dlq.queue;
      const forwarder = new WebhookForwarder(this, name, {
        tenantId: tenant.id,
        bus: this.eventBus.bus,
        eventSource: tenant.eventSource,
        webhook,
        deadLetterQueue: dlq.queue,
      });
      deadLetterWriteFailures[name] = forwarder.metricInvocationsFailedToBeSentToDlq();
      return forwarder;
    });
    this.deadLetterQueues = { Pollers: this.pollerDeadLetters.queue, ...eventDeadLetters };

    const functions = {
      PollTransactions: this.pollTransactions.function,
      PollCards: this.pollCards.function,
      RotateToken: this.rotateToken.function,
    };
    this.alarms = new OpsAlarms(this, "Alarms", {
      tenantId: tenant.id,
      target: tenant.alarms.email === undefined ? { topicArn: tenant.alarms.topicArn ?? "" } : { email: tenant.alarms.email },
      encryptionKey: key,
      functions,
      // The card poller's alarms follow its full walk, never the fast path: each period then holds a walk, so walks
      // that keep failing page (Errors) while one failed fast tick does not, and the heartbeat waits a walk's window.
      cycleEveryMinutes: {
        PollTransactions: tenant.schedules.transactionsEveryMinutes,
        PollCards: tenant.schedules.cardsEveryMinutes,
      },
      syncLagEveryMinutes: tenant.schedules.transactionsEveryMinutes,
      ...(tenant.cardDetails ? { cardDetailsEveryMinutes: tenant.schedules.cardsEveryMinutes } : {}),
      // events still to deliver: they alarm while not empty
      deadLetterQueues: eventDeadLetters,
      // events EventBridge could not even put there (lost) fire the same queue's alarm
      deadLetterWriteFailures,
      // the slower schedule, so each period holds a tick of both pollers
      cycleDeadLetterQueues: {
        Pollers: {
          queue: this.pollerDeadLetters.queue,
          everyMinutes: Math.max(tenant.schedules.transactionsEveryMinutes, tenant.schedules.cardsEveryMinutes),
        },
      },
      syncLagThresholdSeconds: tenant.alarms.syncLagThresholdSeconds,
      // each poller on its own schedule: card.suspended stops with the card walks, whatever transactions do. With the
      // fast path, its ticks invoke the card poller too: Invocations would stay up with the full walk's schedule
      // stopped, so the heartbeat counts full walks instead; and the fast path's own schedule gets a heartbeat counting
      // its cycles, as the full walks would keep both the invocations and FullCardWalks up with it stopped.
      heartbeat: {
        of: ["PollTransactions", "PollCards"],
        notify: tenant.schedules.enabled,
        ...(tenant.schedules.suspendedCardsEveryMinutes !== undefined
          ? {
              cycles: { PollCards: { metric: "FullCardWalks", what: "full card walk" } },
              schedules: {
                SuspendedCards: {
                  metric: "FastPathCardWalks",
                  what: "suspended-only card cycle",
                  everyMinutes: tenant.schedules.suspendedCardsEveryMinutes,
                },
              },
            }
          : {}),
      },
      runbookUrl: props.runbookUrl,
    });
    this.dashboard = new OpsDashboard(this, "Dashboard", {
      tenantId: tenant.id,
      functions,
      deadLetterQueues: this.deadLetterQueues,
      alarms: [...this.alarms.alarms.values()],
      syncLagThresholdSeconds: tenant.alarms.syncLagThresholdSeconds,
      runbookUrl: props.runbookUrl,
    });

    new CfnOutput(this, "SecretArn", {
      value: this.secret.secret.secretArn,
      description: "Onboarding (README step 3): QASHIO_BASE_URL=<ProviderBaseUrl output> npm run bridge -- authorize --secret-id <this ARN>",
    });
    // Not in the secret (its description): authorize reads only the secret's value, and the stack cannot write the
    // value without changing GenerateSecretString, which regenerates it. README step 3 passes this as QASHIO_BASE_URL.
    new CfnOutput(this, "ProviderBaseUrl", {
      value: props.providerBaseUrl,
      description: "Provider base URL of the pollers: onboarding passes it to authorize as QASHIO_BASE_URL",
    });
    new CfnOutput(this, "TableName", { value: this.table.table.tableName });
    new CfnOutput(this, "EventBusName", { value: this.eventBus.busNameForPutEvents });
    new CfnOutput(this, "DashboardName", { value: this.dashboard.dashboard.dashboardName });

    acknowledgeTenantStackFindings(this);
  }
}
