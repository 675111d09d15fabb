/**
 * What names an event bus to PutEvents, one rule for the tenants file's imported bus (infra/tenant-config.ts) and the
 * functions' EVENT_BUS_NAME (shared/aws/config.ts), so a value set by hand is held to what synth accepts.
 */

/** An event bus name (EventBridge: at most 256 characters). @example EVENT_BUS_NAME_PATTERN.test("finance") // true */
export const EVENT_BUS_NAME_PATTERN = /^[\w.-]{1,256}$/;

/** An event bus ARN. @example EVENT_BUS_ARN_PATTERN.test("arn:aws:events:eu-west-1:123456789012:event-bus/finance") // true */
export const EVENT_BUS_ARN_PATTERN = /^arn:aws[a-z-]*:events:[a-z0-9-]+:\d{12}:event-bus\/[\w.\-/]+$/;
