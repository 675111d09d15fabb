/**
 * The zod schema of one webhook of a tenant: its https URL, the event types it forwards, how EventBridge authenticates
 * to it (credentials by secret reference) and how long a delivery is retried.
 */
import * as z from "zod";
import { EVENT_TYPES } from "../shared/bridge/events/schemas.js";
import { SECRET_ARN_PATTERN } from "../shared/aws/resource-ids.js";
import { TENANT_DEFAULTS } from "./tenant-defaults.js";
import { unreachableHost } from "./webhook-host.js";

/** Event types a webhook may forward: the ones the engine publishes (docs/events.md). */
export { EVENT_TYPES, type EventType } from "../shared/bridge/events/schemas.js";

/** An HTTP header name (RFC 9110 token). */
const HEADER_NAME_PATTERN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * CloudFormation's pattern for an API destination's InvocationEndpoint (and a connection's AuthorizationEndpoint):
 * ASCII letters, digits and `-()_.!~*';/?:@&=+$,`, anything else percent-encoded, no `#fragment`. A URL outside it
 * passes synth with a mere warning and fails the deploy.
 */
const API_DESTINATION_URL = /^((%[0-9A-Fa-f]{2}|[-()_.!~*';/?:@&=+$,A-Za-z0-9])+)([).!';/?:,])?$/;

const httpsUrl = z
  // A URL left out is left to the tenant's error map ("is required", tenant-issue-messages.ts), which a schema's own
  // message would outrank.
  .url({ error: (issue) => (issue.input === undefined ? undefined : "must be an https:// URL"), abort: true })
  // The scheme as a pattern rather than z.url's protocol option, so the JSON Schema (editors) checks it too. Both
  // abort: a URL that does not parse, or is not https://, gets that one message.
  .regex(/^[Hh][Tt][Tt][Pp][Ss]:\/\//, { error: "must be an https:// URL", abort: true })
  // The URL parser reads https:///hooks as https://hooks/, but the template gets the text as written: no host, and
  // credentials after the third slash that the check below would not see.
  .regex(/^[Hh][Tt][Tt][Pp][Ss]:\/\/[^/]/, { error: "must name a host right after https:// (no third slash)", abort: true })
  // Credentials in a URL would land in the template in clear: they belong in a secret (auth).
  .regex(/^(?![Hh][Tt][Tt][Pp][Ss]:\/\/[^/?#]*@)/, "must not carry credentials (user:password@); use auth")
  .max(2048, "must be at most 2048 characters (EventBridge's limit)")
  .regex(
    API_DESTINATION_URL,
    "must hold only ASCII letters, digits and -()_.!~*';/?:@&=+$, with no #fragment (percent-encode other characters of " +
      "path and query, write a non-ASCII host in its xn-- form; an IPv6 literal host cannot be used): EventBridge refuses other URLs at deploy",
  );

/**
 * An https URL whose host EventBridge reaches from the public internet (infra/webhook-host.ts).
 *
 * @param consequence - what a host it cannot reach means, after "must be reachable from the public internet: <why>, ".
 */
function publicHttpsUrl(consequence: string) {
  return httpsUrl.superRefine((url, ctx) => {
    const why = unreachableHost(url);
    if (why !== undefined) ctx.addIssue({ code: "custom", message: `must be reachable from the public internet: ${why}, ${consequence}` });
  });
}

/**
 * A string with something besides white space. EventBridge takes a user name, client id or scope of spaces only, and
 * CloudFormation a secret's JSON key of spaces, but none can be meant. Aborts: a blank value is that one fault.
 */
const nonBlankString = z.string().regex(/\S/, { error: "must not be blank", abort: true });

/**
 * A name or key as written, without white space around it: a user name, client id or JSON key pasted with a stray space
 * would be sent (or looked up) with it, and fail authentication only once events flow.
 */
const trimmedString = nonBlankString.regex(/^\S(?:[\s\S]*\S)?$/, "must not start or end with white space");

/**
 * What EventBridge's pattern for a connection's user name, OAuth client id and API key name (CreateConnection,
 * `^[ \t]*[^\x00-\x1F:\x7F]+([ \t]+[^\x00-\x1F:\x7F]+)*[ \t]*$`) accepts: no ':' and no control character but
 * tab, and something besides tabs. Written without that pattern's nested repeats, which backtrack exponentially on a
 * long value with a bad character at its end (synth hung rather than failed).
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONNECTION_PARAMETER = /^\t*[^\x00-\x1F:\x7F][^\x00-\x08\x0A-\x1F:\x7F]*$/;
const CONNECTION_PARAMETER_MAX = "must be at most 512 characters (EventBridge's limit)";
const connectionParameter = trimmedString
  .max(512, CONNECTION_PARAMETER_MAX)
  .regex(CONNECTION_PARAMETER, "must not contain ':' or control characters: EventBridge refuses them at deploy");

/** RFC 6749's scope: `scope-token *( SP scope-token )`, a token being 1*( %x21 / %x23-5B / %x5D-7E ). */
const OAUTH_SCOPE = /^[\x21\x23-\x5B\x5D-\x7E]+(?: [\x21\x23-\x5B\x5D-\x7E]+)*$/;

/** A reference to a value kept in an existing Secrets Manager secret, never the value itself. */
const secretRef = z
  .strictObject({
    secretArn: z.string().regex(SECRET_ARN_PATTERN, "must be a Secrets Manager secret ARN").meta({ description: "ARN of an existing secret" }),
    jsonField: trimmedString
      .regex(/^[^:{}]+$/, "must not contain ':', '{' or '}' (they would break CloudFormation's dynamic reference)")
      .optional()
      .meta({ description: "JSON key inside the secret; the whole secret string when absent" }),
  })
  .meta({ description: "A value kept in an existing Secrets Manager secret, never the value itself" });

const webhookAuthSchema = z.discriminatedUnion("type", [
  z.strictObject({
    type: z.literal("apiKey"),
    headerName: z.string().max(512, CONNECTION_PARAMETER_MAX).regex(HEADER_NAME_PATTERN, "must be an HTTP header name (letters, digits, -, no spaces)"),
    value: secretRef,
  }),
  z.strictObject({
    type: z.literal("basic"),
    username: connectionParameter,
    password: secretRef,
  }),
  z.strictObject({
    type: z.literal("oauthClientCredentials"),
    tokenUrl: publicHttpsUrl(
      "which EventBridge cannot fetch a token from (this stack's connections take a public OAuth endpoint, a private one " +
        'needing a VPC Lattice resource configuration; AWS EventBridge User Guide, "Authorization methods for connections"): ' +
        "without a token every event would go to the webhook's dead-letter queue",
    ),
    // RFC 6749 has a client id of printable ASCII (VSCHAR); EventBridge would send curly quotes pasted with it as they are.
    clientId: connectionParameter.regex(/^[\x20-\x7E]+$/, "must be printable ASCII characters (RFC 6749, appendix A.1)"),
    clientSecret: secretRef,
    // Sent as a body parameter of the connection, as written: EventBridge takes any text without control characters but
    // line breaks, yet anything outside RFC 6749's grammar is a malformed scope, which a token endpoint may refuse (invalid_scope).
    scope: nonBlankString
      .max(512, CONNECTION_PARAMETER_MAX)
      .regex(
        OAUTH_SCOPE,
        "must be scope tokens separated by single spaces, each of printable ASCII characters but '\"' and '\\' (RFC 6749, section 3.3)",
      )
      .optional(),
  }),
]);

/** One entry of a tenant's `webhooks`. */
export const webhookSchema = z.strictObject({
  name: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]{0,30}$/, "must be a lowercase slug of at most 31 characters")
    .meta({ description: "Short name, unique in the tenant: used in construct ids and resource names" }),
  url: publicHttpsUrl(
    "which EventBridge cannot deliver to (an API destination takes a public domain name, and this stack's connections are " +
      'public ones; AWS EventBridge User Guide, "API destinations as targets"): every event would go to the webhook\'s dead-letter queue',
  ).meta({ description: "https:// endpoint EventBridge posts each whole event (the envelope with its detail) to: a public host" }),
  eventTypes: z
    .array(z.enum(EVENT_TYPES))
    .min(1)
    .refine((types) => new Set(types).size === types.length, "must not list an event type twice")
    // uniqueItems: the refine above, for editors (refinements do not reach the JSON Schema).
    .meta({ description: "Event types forwarded to this URL (docs/events.md)", uniqueItems: true }),
  auth: webhookAuthSchema.meta({ description: "How EventBridge authenticates: apiKey, basic or oauthClientCredentials, credentials by secret reference" }),
  rateLimitPerSecond: z.number().int().min(1).max(300).optional().meta({ description: "Invocations per second EventBridge may send to this URL" }),
  retryAttempts: z
    .number()
    .int()
    .min(0)
    .max(185)
    .default(TENANT_DEFAULTS.webhookRetryAttempts)
    .meta({ description: "Retries of a failed delivery before it goes to the dead-letter queue" }),
  maxEventAgeHours: z
    .number()
    .int()
    .min(1)
    .max(24)
    .default(TENANT_DEFAULTS.webhookMaxEventAgeHours)
    .meta({ description: "Age after which an undelivered event stops being retried and goes to the dead-letter queue" }),
});

/** One webhook of a tenant, validated. */
export type WebhookConfig = z.output<typeof webhookSchema>;
/** How a webhook authenticates, validated. */
export type WebhookAuthConfig = WebhookConfig["auth"];
