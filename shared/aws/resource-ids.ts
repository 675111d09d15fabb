/**
 * What names a tenant, an event bus and a secret, one rule each for the tenants file (infra/tenant-config.ts) and the
 * functions' TENANT_ID, EVENT_BUS_NAME and SECRET_ID (shared/aws/config.ts), so a value set by hand is held to what
 * synth accepts.
 */

/**
 * A tenant id: a lowercase slug of at most 32, as it becomes stack and resource names and a metric dimension (and
 * holds no `#`, the table keys' separator). @example TENANT_ID_PATTERN.test("acme-sandbox") // true
 */
export const TENANT_ID_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?$/;
/** What a refusal of an id outside {@link TENANT_ID_PATTERN} says. */
export const TENANT_ID_RULE = "must be a lowercase slug (a-z, 0-9, '-') of at most 32 characters";

/** An event bus name (EventBridge: at most 256 characters). @example EVENT_BUS_NAME_PATTERN.test("finance") // true */
export const EVENT_BUS_NAME_PATTERN = /^[\w.-]{1,256}$/;

/** An event bus ARN. @example EVENT_BUS_ARN_PATTERN.test("arn:aws:events:eu-west-1:123456789012:event-bus/finance") // true */
export const EVENT_BUS_ARN_PATTERN = /^arn:aws[a-z-]*:events:[a-z0-9-]+:\d{12}:event-bus\/[\w.\-/]+$/;

/**
 * A secret name: letters, digits and `/_+=.@-` (Secrets Manager, at most 512), the only characters a
 * `{{resolve:...}}` reference takes too. @example SECRET_NAME_PATTERN.test("qashio/acme") // true
 */
export const SECRET_NAME_PATTERN = /^[\w/+=.@-]{1,512}$/;

/** A Secrets Manager secret ARN. @example SECRET_ARN_PATTERN.test("arn:aws:secretsmanager:eu-west-1:123456789012:secret:acme-AbCdEf") // true */
export const SECRET_ARN_PATTERN = /^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[\w/+=.@-]+$/;
