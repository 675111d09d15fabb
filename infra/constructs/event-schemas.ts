import * as eventschemas from "aws-cdk-lib/aws-eventschemas";
import { Construct } from "constructs";
import { eventEnvelopeSchema, type EventDetailSchema } from "../event-schemas-source.js";

/** The longest registry description the Schemas API takes (CreateRegistry); CloudFormation checks it only at deploy. */
const REGISTRY_DESCRIPTION_MAX = 256;

/**
 * The registry's description: it names the source, unless that would make it longer than Schemas accepts (a source
 * of more than about 170 characters, which the tenants file allows up to 256); each schema's name carries it anyway.
 */
function registryDescription(tenantId: string, eventSource: string): string {
  const description = `Events published by qashio-bridge for tenant ${tenantId}`;
  const withSource = `${description} (source ${eventSource})`;
  return withSource.length <= REGISTRY_DESCRIPTION_MAX ? withSource : description;
}

/** Properties of {@link EventSchemas}. */
export interface EventSchemasProps {
  /** Tenant id, naming the registry. */
  readonly tenantId: string;
  /** EventBridge `source` of the bridge's events. */
  readonly eventSource: string;
  /** The catalog's detail schemas, one per event type (draft-04). */
  readonly schemas: readonly EventDetailSchema[];
}

/**
 * A schema registry of the tenant with one JSONSchemaDraft4 schema per event type, describing the whole
 * EventBridge event (envelope plus `detail`), so consumers can browse it and download code bindings.
 */
export class EventSchemas extends Construct {
  /** The registry. */
  public readonly registry: eventschemas.CfnRegistry;
  /** Schemas by event type. */
  public readonly schemas: ReadonlyMap<string, eventschemas.CfnSchema>;

  constructor(scope: Construct, id: string, props: EventSchemasProps) {
    super(scope, id);
    this.registry = new eventschemas.CfnRegistry(this, "Registry", {
      registryName: `qashio-bridge-${props.tenantId}`,
      description: registryDescription(props.tenantId, props.eventSource),
    });
    const schemas = new Map<string, eventschemas.CfnSchema>();
    for (const detail of props.schemas) {
      const schema = new eventschemas.CfnSchema(this, `Schema-${detail.type}`, {
        registryName: this.registry.attrRegistryName,
        schemaName: `${props.eventSource}@${detail.type}`,
        type: "JSONSchemaDraft4",
        description: `qashio-bridge ${detail.type} event`,
        content: JSON.stringify(eventEnvelopeSchema(detail, props.eventSource)),
      });
      schemas.set(detail.type, schema);
    }
    this.schemas = schemas;
  }
}
