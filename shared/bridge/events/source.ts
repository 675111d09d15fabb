/**
 * The EventBridge `Source` the bridge may publish under, one rule for the tenants file (infra/tenant-config.ts) and the
 * functions' EVENT_SOURCE (shared/aws/config.ts), so a value set by hand is held to what synth accepts.
 */
import * as z from "zod";

/**
 * A source led by a letter or digit, of at most 256 characters (EventBridge's limit), in either case as EventBridge
 * takes it, outside `aws.`, which EventBridge keeps for AWS services (every PutEvents entry under it is refused). No
 * `/`, which EventBridge would take: the stack names each registry schema `<source>@<type>`, and schema names take
 * only letters, digits and `- _ . @`.
 *
 * @example
 * eventSourceSchema.parse("acme.qashio.bridge"); // "acme.qashio.bridge"
 */
export const eventSourceSchema = z
  .string()
  .regex(/^[A-Za-z0-9][\w.-]{0,255}$/, "must be an EventBridge source such as qashio.bridge")
  .regex(/^(?!aws\.)/, "must not start with aws.");
