import { Aws, Duration, RemovalPolicy } from "aws-cdk-lib";
import * as events from "aws-cdk-lib/aws-events";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as kms from "aws-cdk-lib/aws-kms";
import type * as sqs from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import { createdEventBusName } from "../tenant-config.js";
import { FailureQueue } from "./failure-queue.js";

/** Where the tenant's events go: a bus of its own, or an existing one. */
export type TenantEventBusSource =
  | { readonly mode: "create" }
  | { readonly mode: "import"; readonly name: string }
  | { readonly mode: "import"; readonly arn: string };

/** Properties of {@link TenantEventBus}. */
export interface TenantEventBusProps {
  /** Tenant id: names a created bus, and filters the archive on `detail.tenant`. */
  readonly tenantId: string;
  /** Create a bus, or import one by name or ARN. */
  readonly bus: TenantEventBusSource;
  /** EventBridge `source` of the bridge's events. */
  readonly eventSource: string;
  /** The tenant's key: encrypts a created bus and the archive. Its policy must let EventBridge use it (TenantKey's does). */
  readonly encryptionKey: kms.IKey;
  /**
   * Days the archive keeps events for replay; 0 keeps them indefinitely.
   * @default 30
   */
  readonly archiveRetentionDays?: number;
}

/**
 * The ARN of the event bus `name` (or `*`: every bus) of the stack's account and region, from the pseudo parameters
 * even in a pinned stack, so pinning a deployed tenant rewrites neither the imported bus's ARN nor the key policy's
 * pattern that must cover it.
 */
export function accountEventBusArn(name: string): string {
  return `arn:${Aws.PARTITION}:events:${Aws.REGION}:${Aws.ACCOUNT_ID}:event-bus/${name}`;
}

/**
 * The tenant's event bus (created or imported) and an archive of the tenant's bridge events on it, so
 * consumers can be replayed after an outage.
 */
export class TenantEventBus extends Construct {
  /** The bus the pollers publish to. */
  public readonly bus: events.IEventBus;
  /** Archive of this tenant's events (source and `detail.tenant` filtered, as an imported bus may be shared). */
  public readonly archive: events.Archive;
  /**
   * Dead-letter queue of a created bus: events the bus accepted but could not process because of an encryption or
   * decryption error (AWS strongly recommends one on a bus under a customer managed key). None for an imported bus,
   * whose settings are its owner's.
   */
  public readonly deadLetters?: FailureQueue;
  /** Value for the functions' EVENT_BUS_NAME: the bus name, or the ARN for a bus imported by ARN. */
  public readonly busNameForPutEvents: string;
  /** The `source` the tenant's functions publish under (the only one {@link grantPutEvents} allows). */
  private readonly eventSource: string;

  constructor(scope: Construct, id: string, props: TenantEventBusProps) {
    super(scope, id);
    this.eventSource = props.eventSource;
    const source = props.bus;
    const createdName = createdEventBusName(props.tenantId);
    if (source.mode === "create") {
      // Under the tenant key like the other DLQs (EventBridge may write to it: TenantKey's statement for encrypted
      // dead letters). It cannot take events while that key itself is disabled or pending deletion; the pollers stop
      // then too (table and secret are under the same key), so only events in flight at that moment are exposed.
      const deadLetters = new FailureQueue(this, "DeadLetters", { encryptionKey: props.encryptionKey });
      this.deadLetters = deadLetters;
      this.bus = new events.EventBus(this, "Bus", {
        eventBusName: createdName,
        description: `qashio-bridge events of tenant ${props.tenantId}`,
        deadLetterQueue: deadLetters.queue,
      });
      // AWS's queue policy for an event bus DLQ: EventBridge sends on behalf of this bus only. Kept like the queue and
      // the bus (RetainExceptOnCreate), so a bus left behind by a change of eventBus can still write to it (a replay
      // from the kept archive goes to that bus).
      deadLetters.queue.addToResourcePolicy(
        new iam.PolicyStatement({
          sid: "AllowTheBusToSendDeadLetters",
          principals: [new iam.ServicePrincipal("events.amazonaws.com")],
          actions: ["sqs:SendMessage"],
          resources: [deadLetters.queue.queueArn],
          conditions: { ArnEquals: { "aws:SourceArn": this.bus.eventBusArn } },
        }),
      );
      (deadLetters.queue.node.findChild("Policy") as sqs.QueuePolicy).applyRemovalPolicy(RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE);
      // Not through `kmsKey`, whose key policy statement lets EventBridge use the key for this bus only: see TenantKey's
      // statement for the buses and archives of the account.
      (this.bus.node.defaultChild as events.CfnEventBus).kmsKeyIdentifier = props.encryptionKey.keyArn;
      this.busNameForPutEvents = this.bus.eventBusName;
      // Kept with its archive: a replay goes only to the bus the archive records, and EventBridge refuses to delete a
      // bus that still has rules (the kept archive's managed rule, consumers' own rules), which would fail the stack
      // delete. Removed when the create that made it rolls back. Its name is fixed: after offboarding, delete it
      // (archive first) before the same tenant id is deployed again (runbook, "Offboarding and renaming a tenant").
      this.bus.applyRemovalPolicy(RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE);
    } else if ("arn" in source) {
      this.bus = events.EventBus.fromEventBusArn(this, "Bus", source.arn);
      this.busNameForPutEvents = source.arn;
    } else {
      // The ARN from the pseudo parameters even when the stack is pinned to an account and region (where
      // fromEventBusName would write literals): the archive's SourceArn stays the same text when a deployed tenant
      // gets account and region, and a changed SourceArn would replace the archive and lose its events.
      this.bus = events.EventBus.fromEventBusAttributes(this, "Bus", {
        eventBusName: source.name,
        eventBusArn: accountEventBusArn(source.name),
        eventBusPolicy: "",
      });
      this.busNameForPutEvents = source.name;
    }
    const retentionDays = props.archiveRetentionDays ?? 30;
    // The id "Archive" must never change on deployed stacks (it makes the logical id; test/infra pins it).
    this.archive = new events.Archive(this, "Archive", {
      sourceEventBus: this.bus,
      description: `qashio-bridge tenant ${props.tenantId}: replay source`,
      eventPattern: { source: [props.eventSource], detail: { tenant: [props.tenantId] } },
      retention: retentionDays === 0 ? undefined : Duration.days(retentionDays),
    });
    // The replay source: kept when the stack is deleted, and when a new bus source (import <-> create, another ARN)
    // replaces it, so its events can still be replayed by the old archive's name. Removed only when the create that
    // made it rolls back.
    this.archive.applyRemovalPolicy(RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE);
    // Not through `Archive`'s `kmsKey`, whose key policy statement names the bus by `Fn::GetAtt` (a dependency cycle
    // with a created bus) and binds the key to this one bus.
    (this.archive.node.defaultChild as events.CfnArchive).kmsKeyIdentifier = props.encryptionKey.keyArn;
  }

  /**
   * Grants events:PutEvents on this bus only, and only for entries whose `source` is the tenant's: on a shared bus a
   * tenant's function cannot publish under another tenant's source (`detail.tenant` is beyond IAM's reach, so a
   * per-tenant source is what isolates tenants there). Every entry must carry it (`ForAllValues`), and the key must be
   * present (`Null`), since `ForAllValues` of no value is true.
   */
  grantPutEvents(grantee: iam.IGrantable): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ["events:PutEvents"],
        resources: [this.bus.eventBusArn],
        conditions: {
          "ForAllValues:StringEquals": { "events:source": [this.eventSource] },
          Null: { "events:source": "false" },
        },
      }),
    );
  }
}
