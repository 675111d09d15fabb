import { Aws, Duration, RemovalPolicy, Stack } from "aws-cdk-lib";
import * as events from "aws-cdk-lib/aws-events";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as kms from "aws-cdk-lib/aws-kms";
import { Construct } from "constructs";

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
  /** The tenant's key: encrypts a created bus and the archive. */
  readonly encryptionKey: kms.IKey;
  /**
   * Days the archive keeps events for replay; 0 keeps them indefinitely.
   * @default 30
   */
  readonly archiveRetentionDays?: number;
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
  /** Value for the functions' EVENT_BUS_NAME: the bus name, or the ARN for a bus imported by ARN. */
  public readonly busNameForPutEvents: string;
  /** The `source` the tenant's functions publish under (the only one {@link grantPutEvents} allows). */
  public readonly eventSource: string;

  constructor(scope: Construct, id: string, props: TenantEventBusProps) {
    super(scope, id);
    this.eventSource = props.eventSource;
    const source = props.bus;
    const createdName = `qashio-bridge-${props.tenantId}`;
    if (source.mode === "create") {
      this.bus = new events.EventBus(this, "Bus", {
        eventBusName: createdName,
        description: `qashio-bridge events of tenant ${props.tenantId}`,
        kmsKey: props.encryptionKey,
      });
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
        eventBusArn: `arn:${Aws.PARTITION}:events:${Aws.REGION}:${Aws.ACCOUNT_ID}:event-bus/${source.name}`,
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
    this.encryptArchive(props.encryptionKey, source.mode === "create" ? this.createdBusArn(createdName) : this.bus.eventBusArn);
  }

  /**
   * The created bus's ARN built from its name, as CDK's own key policy statement for the bus does: the bus's
   * `Fn::GetAtt` in the key policy would make key and bus depend on each other.
   */
  private createdBusArn(name: string): string {
    return Stack.of(this).formatArn({ service: "events", resource: "event-bus", resourceName: name });
  }

  /**
   * Puts the archive under the tenant key. Not through `Archive`'s `kmsKey`, whose key policy statement names the bus
   * by `Fn::GetAtt` (a dependency cycle with a created bus) and lets EventBridge use the key without any condition
   * for DescribeKey only. The statements follow AWS's example for archives: data-key actions only for events of this
   * bus (`kms:EncryptionContext:aws:events:event-bus:arn`, the context EventBridge encrypts archived events under).
   */
  private encryptArchive(key: kms.IKey, busArn: string): void {
    (this.archive.node.defaultChild as events.CfnArchive).kmsKeyIdentifier = key.keyArn;
    key.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: "AllowEventBridgeToEncryptTheArchive",
        principals: [new iam.ServicePrincipal("events.amazonaws.com")],
        actions: ["kms:Decrypt", "kms:GenerateDataKey", "kms:ReEncrypt*"],
        resources: ["*"],
        conditions: { StringEquals: { "kms:EncryptionContext:aws:events:event-bus:arn": busArn } },
      }),
    );
    key.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: "AllowEventBridgeToDescribeTheKey",
        principals: [new iam.ServicePrincipal("events.amazonaws.com")],
        actions: ["kms:DescribeKey"],
        resources: ["*"],
      }),
    );
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
