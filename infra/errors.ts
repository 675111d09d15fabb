/**
 * Errors raised while building the CDK app. They fail synth with a message an operator can act on:
 * the tenant, the field and what is wrong, never a secret value.
 */

/** Base class of every infrastructure error. */
export class InfraError extends Error {
  override name = "InfraError";
}

/** A tenant configuration that does not validate. */
export class TenantConfigError extends InfraError {
  override name = "TenantConfigError";
  /** Tenant id (or `tenants[<index>]` when the id itself is unusable), undefined for file-level problems. */
  readonly tenant: string | undefined;
  /** Dotted path of the offending field inside the tenant entry, e.g. `webhooks[0].url`. */
  readonly field: string | undefined;

  constructor(message: string, details: { tenant?: string; field?: string } = {}, options?: ErrorOptions) {
    super(message, options);
    this.tenant = details.tenant;
    this.field = details.field;
  }
}

/** The event catalog's JSON Schemas are missing or unusable for the EventBridge schema registry. */
export class EventSchemaError extends InfraError {
  override name = "EventSchemaError";
  /** File the problem was found in, when there is one. */
  readonly file: string | undefined;

  constructor(message: string, details: { file?: string } = {}, options?: ErrorOptions) {
    super(message, options);
    this.file = details.file;
  }
}
