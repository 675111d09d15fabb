import { Duration, RemovalPolicy } from "aws-cdk-lib";
import * as events from "aws-cdk-lib/aws-events";
import * as iam from "aws-cdk-lib/aws-iam";
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

  constructor(scope: Construct, id: string, props: TenantEventBusProps) {
    super(scope, id);
    const source = props.bus;
    if (source.mode === "create") {
      this.bus = new events.EventBus(this, "Bus", {
        eventBusName: `qashio-bridge-${props.tenantId}`,
        description: `qashio-bridge events of tenant ${props.tenantId}`,
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
      this.bus = events.EventBus.fromEventBusName(this, "Bus", source.name);
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
  }

  /** Grants events:PutEvents on this bus only. */
  grantPutEvents(grantee: iam.IGrantable): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: ["events:PutEvents"], resources: [this.bus.eventBusArn] }),
    );
  }
}
