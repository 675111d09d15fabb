import { ArnFormat, Duration, RemovalPolicy, Stack } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import * as scheduler from "aws-cdk-lib/aws-scheduler";
import * as targets from "aws-cdk-lib/aws-scheduler-targets";
import type * as sqs from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import type { CycleKind } from "../../shared/aws/cycle.js";
import type { PollEvent } from "../../shared/aws/poll-event.js";

/** Properties of {@link PollSchedules}. */
export interface PollSchedulesProps {
  /** Tenant id, named in the schedule group and descriptions. */
  readonly tenantId: string;
  /** Function polling transactions. */
  readonly pollTransactions: lambda.IFunction;
  /** Function polling cards. */
  readonly pollCards: lambda.IFunction;
  /** Minutes between two transaction cycles. */
  readonly transactionsEveryMinutes: number;
  /** Minutes between two card cycles (full walks). */
  readonly cardsEveryMinutes: number;
  /**
   * Minutes between two suspended-only card cycles (the fast path), run beside the full walk.
   * @default - no fast-path schedule
   */
  readonly suspendedCardsEveryMinutes?: number;
  /** Queue receiving schedule deliveries EventBridge Scheduler could not make. */
  readonly deadLetterQueue: sqs.IQueue;
  /**
   * Create the schedules enabled.
   * @default true
   */
  readonly enabled?: boolean;
}

/**
 * EventBridge Scheduler schedules that start the tenant's polling cycles, in a schedule group of their own
 * so an operator can find (and pause) one tenant's schedules.
 */
export class PollSchedules extends Construct {
  /** The tenant's schedule group. */
  public readonly group: scheduler.ScheduleGroup;
  /** Role EventBridge Scheduler assumes to invoke the pollers and write dead letters (grant it the queue's key). */
  public readonly role: iam.Role;
  /** Schedule of transaction cycles. */
  public readonly transactions: scheduler.Schedule;
  /** Schedule of card cycles (full walks). */
  public readonly cards: scheduler.Schedule;
  /** Schedule of suspended-only card cycles, when the tenant runs the fast path. */
  public readonly suspendedCards?: scheduler.Schedule;

  constructor(scope: Construct, id: string, props: PollSchedulesProps) {
    super(scope, id);
    const groupName = `qashio-bridge-${props.tenantId}`;
    this.group = new scheduler.ScheduleGroup(this, "Group", {
      scheduleGroupName: groupName,
      // Holds no state, and its name is fixed: a retained group would make the next create of this tenant's stack
      // (a retry after a failed first deploy, or re-onboarding) fail with "already exists".
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.role = new iam.Role(this, "Role", {
      description: `qashio-bridge ${props.tenantId}: EventBridge Scheduler invoking the pollers`,
      // AWS's Scheduler guide, "Confused deputy prevention": aws:SourceAccount, and aws:SourceArn the schedule group's
      // ARN (an earlier edition said the schedule's, `schedule/<group>/<name>`): either, of this tenant's group only.
      assumedBy: new iam.ServicePrincipal("scheduler.amazonaws.com", {
        conditions: {
          StringEquals: { "aws:SourceAccount": Stack.of(this).account },
          ArnLike: {
            "aws:SourceArn": [
              Stack.of(this).formatArn({ service: "scheduler", resource: "schedule-group", resourceName: groupName, arnFormat: ArnFormat.SLASH_RESOURCE_NAME }),
              Stack.of(this).formatArn({ service: "scheduler", resource: "schedule", resourceName: `${groupName}/*`, arnFormat: ArnFormat.SLASH_RESOURCE_NAME }),
            ],
          },
        },
      }),
    });
    /** A schedule invoking `fn` every `minutes` with the poll event of a `kind` cycle, plus `extra` (a card mode). */
    const schedule = (id: string, what: string, kind: CycleKind, fn: lambda.IFunction, minutes: number, extra: Pick<PollEvent, "mode"> = {}): scheduler.Schedule =>
      new scheduler.Schedule(this, id, {
        // Named as the runbook and the heartbeat alarms call it: a generated name is cut to 64 characters.
        scheduleName: id,
        scheduleGroup: this.group,
        description: `qashio-bridge ${props.tenantId}: poll ${what} every ${minutes} min`,
        schedule: scheduler.ScheduleExpression.rate(Duration.minutes(minutes)),
        enabled: props.enabled ?? true,
        target: new targets.LambdaInvoke(fn, {
          role: this.role,
          input: scheduler.ScheduleTargetInput.fromObject({
            kind,
            tenant: props.tenantId,
            scheduledTime: scheduler.ContextAttribute.scheduledTime,
            ...extra,
          }),
          deadLetterQueue: props.deadLetterQueue,
          // a missed tick is made up by the next one: deliver promptly or not at all
          retryAttempts: 2,
          maxEventAge: Duration.seconds(Math.max(60, minutes * 60)),
        }),
      });
    this.transactions = schedule("Transactions", "transactions", "transactions", props.pollTransactions, props.transactionsEveryMinutes);
    this.cards = schedule("Cards", "cards", "cards", props.pollCards, props.cardsEveryMinutes);
    if (props.suspendedCardsEveryMinutes !== undefined) {
      this.suspendedCards = schedule("SuspendedCards", "suspended cards", "cards", props.pollCards, props.suspendedCardsEveryMinutes, { mode: "suspended-only" });
    }
  }
}
