/**
 * Tenant configuration of the CDK app: one JSON file lists every customer tenant.
 * Validated with zod; a bad entry fails synth with a message naming the tenant and the field.
 */
import { RegionInfo } from "aws-cdk-lib/region-info";
import * as z from "zod";
import { EVENT_TYPES } from "../shared/bridge/events/schemas.js";
import { eventSourceSchema } from "../shared/bridge/events/source-schema.js";
import { EVENT_BUS_ARN_PATTERN, EVENT_BUS_NAME_PATTERN, SECRET_ARN_PATTERN, TENANT_ID_PATTERN, TENANT_ID_RULE } from "../shared/aws/resource-ids.js";
import { DEFAULT_SOURCE } from "../shared/bridge/deps.js";
import { PII_MODES } from "../shared/bridge/pii.js";
import { TenantConfigError } from "./errors.js";
import { formatPath, issueField } from "./field-path.js";
import { unreachableHost } from "./webhook-host.js";

/** Event types a webhook may forward: the ones the engine publishes (docs/events.md). */
export { EVENT_TYPES, type EventType } from "../shared/bridge/events/schemas.js";

/** Defaults of optional tenant fields, named so docs and tests can refer to them. */
export const TENANT_DEFAULTS = {
  eventSource: DEFAULT_SOURCE,
  piiMode: "redact",
  emitCardCreated: false,
  cardDetails: false,
  schedulesEnabled: true,
  transactionsEveryMinutes: 5,
  cardsEveryMinutes: 15,
  archiveRetentionDays: 30,
  syncLagThresholdSeconds: 1800,
  webhookRetryAttempts: 24,
  webhookMaxEventAgeHours: 24,
} as const;

/** A named provider deployment, or a literal https base URL (checked in full when the stack is built). */
const ENVIRONMENT_PATTERN = /^(?:(?:production|eu|sandbox)$|https:\/\/[^\s/])/;
/** An HTTP header name (RFC 9110 token). */
const HEADER_NAME_PATTERN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** An SNS topic ARN: topic names are 1 to 256 letters, digits, '_' and '-' (CreateTopic). */
const SNS_TOPIC_ARN_PATTERN = /^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[\w-]{1,256}$/;

/**
 * CloudFormation's pattern for an API destination's InvocationEndpoint (and a connection's AuthorizationEndpoint):
 * ASCII letters, digits and `-()_.!~*';/?:@&=+$,`, anything else percent-encoded, no `#fragment`. A URL outside it
 * passes synth with a mere warning and fails the deploy.
 */
const API_DESTINATION_URL = /^((%[0-9A-Fa-f]{2}|[-()_.!~*';/?:@&=+$,A-Za-z0-9])+)([).!';/?:,])?$/;

const httpsUrl = z
  .url({ error: "must be an https:// URL", abort: true })
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

/**
 * Webhooks one tenant may list. Each adds 8 resources to the tenant's stack (connection, API destination, rule, target
 * role and policy, dead-letter queue and its policy, alarm) to about 60 of its own; CloudFormation refuses a
 * stack of more than 500, which synth would only report after building it all, without naming the setting.
 */
export const MAX_WEBHOOKS_PER_TENANT = 50;
const WEBHOOKS_CAP_MESSAGE =
  `at most ${MAX_WEBHOOKS_PER_TENANT} webhooks per tenant: each adds 8 resources to the tenant's stack and CloudFormation takes at most 500; ` +
  "forward to more endpoints from your own rules on the tenant's event bus";

const webhookSchema = z.strictObject({
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

const EVENT_BUS_FORMS = '{ "mode": "create" } or { "mode": "import", "name" | "arn": ... }';
const eventBusOptions = [
  z.strictObject({ mode: z.literal("create") }),
  z.strictObject({ mode: z.literal("import"), name: z.string().regex(EVENT_BUS_NAME_PATTERN, "must be an event bus name") }),
  z.strictObject({ mode: z.literal("import"), arn: z.string().regex(EVENT_BUS_ARN_PATTERN, "must be an event bus ARN") }),
] as const;
const EVENT_BUS_KEYS: ReadonlySet<string> = new Set(eventBusOptions.flatMap((option) => Object.keys(option.shape)));

/** When no form of eventBus fits: the keys none of them has first (a misspelt `name`), as for any other object. */
function eventBusMismatch(issue: { readonly input?: unknown }): string {
  const input = issue.input;
  const unknown = typeof input === "object" && input !== null ? Object.keys(input).filter((key) => !EVENT_BUS_KEYS.has(key)) : [];
  if (unknown.length === 0) return `must be ${EVENT_BUS_FORMS}`;
  const keys = unknown.map((key) => JSON.stringify(key)).join(", ");
  return `${keys} ${unknown.length === 1 ? "is not a field" : "are not fields"} of eventBus, which must be ${EVENT_BUS_FORMS}`;
}

const eventBusSchema = z.union(eventBusOptions, { error: eventBusMismatch }).meta({
  description: "The tenant's event bus: created by the stack (default), or an existing one imported by name or ARN",
});

/**
 * zod's email pattern with host name labels that neither start nor end with '-': zod's own takes `acme-.test`, which
 * the JSON Schema's `"format": "email"` (and mail) refuses.
 */
const EMAIL_PATTERN = /^(?:[A-Za-z0-9_'+-]+\.)*[A-Za-z0-9_'+-]*[A-Za-z0-9_+-]@(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z]{2,}$/;

const alarmsSchema = z
  .strictObject({
    email: z.email({ pattern: EMAIL_PATTERN }).optional().meta({ description: "Email address subscribed to an SNS topic the stack creates (confirm the subscription mail)" }),
    topicArn: z.string().regex(SNS_TOPIC_ARN_PATTERN, "must be an SNS topic ARN").optional().meta({ description: "An existing SNS topic in the tenant's region" }),
    syncLagThresholdSeconds: z
      .number()
      .int()
      .min(60)
      .default(TENANT_DEFAULTS.syncLagThresholdSeconds)
      .meta({ description: "SyncLag alarm threshold: age of the oldest undelivered change; more than the transactions schedule in seconds" }),
  })
  .refine((a) => (a.email === undefined) !== (a.topicArn === undefined), {
    message: "set exactly one of email or topicArn",
  })
  // The refine above, for editors: zod's JSON Schema export leaves refinements out.
  .meta({ description: "Where alarms notify: exactly one of email or topicArn", oneOf: [{ required: ["email"] }, { required: ["topicArn"] }] });

/** A schedule rate: EventBridge Scheduler takes whole minutes; more than a day apart would leave the alarms blind. */
const everyMinutes = z
  .number({ error: (issue) => (issue.code === "invalid_type" ? "must be a number of minutes" : undefined) })
  .int("must be a whole number of minutes")
  .min(1)
  .max(1440);

/** One entry of the tenants file: parse it with {@link parseTenantConfig}, whose messages name the tenant. */
export const tenantSchema = z.strictObject({
  id: z
    .string()
    .regex(TENANT_ID_PATTERN, TENANT_ID_RULE)
    .meta({ description: "Slug: the stack name QashioBridge-<id>, resource names and the metric dimension" }),
  environment: z
    .string()
    .regex(ENVIRONMENT_PATTERN, "must be production, eu, sandbox or an https:// URL")
    .meta({ description: "Provider deployment: production, eu, sandbox (base URLs from QASHIO_*_URL or the cdk context qashioUrls), or an https:// base URL" }),
  account: z
    .string()
    .regex(/^\d{12}$/, "must be a 12-digit AWS account id")
    .optional()
    .meta({ description: "AWS account the stack deploys to; required when any ARN is configured" }),
  region: z
    .string()
    .regex(/^[a-z]{2,4}(-[a-z]+)+-\d+$/, "must be an AWS region such as eu-west-1")
    .optional()
    .meta({ description: "AWS region the stack deploys to; required when any ARN is configured" }),
  schedules: z
    .strictObject({
      // false: no cycle runs and the Heartbeat alarms do not notify, for a tenant not yet onboarded.
      enabled: z
        .boolean({ error: "must be true or false" })
        .default(TENANT_DEFAULTS.schedulesEnabled)
        .meta({ description: "false deploys every schedule disabled (onboarding: deploy, authorize, then set true and redeploy)" }),
      transactionsEveryMinutes: everyMinutes
        .default(TENANT_DEFAULTS.transactionsEveryMinutes)
        .meta({ description: "Minutes between transaction cycles" }),
      cardsEveryMinutes: everyMinutes.default(TENANT_DEFAULTS.cardsEveryMinutes).meta({ description: "Minutes between card cycles" }),
      // No default: absent, the stack has no fast-path schedule (tenants deployed before it synth unchanged).
      suspendedCardsEveryMinutes: everyMinutes.optional().meta({
        description:
          "Minutes between suspended-only card cycles (the fast path: reads only suspended cards, so card.suspended comes sooner), " +
          "beside the full walk; less than cardsEveryMinutes; absent: no fast path",
      }),
    })
    .prefault({}),
  eventBus: eventBusSchema.prefault({ mode: "create" }),
  eventSource: eventSourceSchema
    .default(TENANT_DEFAULTS.eventSource)
    .meta({ description: "Source of the published events; give each tenant on a shared bus its own" }),
  piiMode: z
    .enum(PII_MODES)
    .default(TENANT_DEFAULTS.piiMode)
    .meta({ description: "Personal fields (docs/events.md, PII modes) in events, snapshots and quarantine records: full, redact, or hash (salted per tenant)" }),
  emitCardCreated: z
    .boolean()
    .default(TENANT_DEFAULTS.emitCardCreated)
    .meta({ description: "Publish card.created for a card seen for the first time (otherwise recorded silently)" }),
  cardDetails: z
    .boolean()
    .default(TENANT_DEFAULTS.cardDetails)
    .meta({
      description:
        "Read each card's detail in the card walk, so spend limit amounts and periods, top-up, ATM, country and merchant settings yield card.updated too (one provider call per card per full walk; the suspended-only fast path reads only cards not yet recorded suspended)",
    }),
  archiveRetentionDays: z
    .number()
    .int()
    .min(0)
    .max(3650)
    .default(TENANT_DEFAULTS.archiveRetentionDays)
    .meta({ description: "Days the bus archive keeps events for replay; 0 keeps them forever" }),
  alarms: alarmsSchema,
  webhooks: z
    .array(webhookSchema)
    .max(MAX_WEBHOOKS_PER_TENANT, WEBHOOKS_CAP_MESSAGE)
    .default([])
    .meta({ description: `HTTPS endpoints that receive chosen event types through EventBridge API destinations (at most ${MAX_WEBHOOKS_PER_TENANT})` }),
}).superRefine((tenant, ctx) => {
  // A cycle publishes the changes made since the last one, up to one schedule old: a threshold no longer than the
  // schedule keeps SyncLag in alarm for any tenant with steady transactions, while nothing is late.
  const scheduleSeconds = tenant.schedules.transactionsEveryMinutes * 60;
  if (tenant.alarms.syncLagThresholdSeconds <= scheduleSeconds) {
    ctx.addIssue({
      code: "custom",
      path: ["alarms", "syncLagThresholdSeconds"],
      message:
        `must be more than the transactions schedule (${scheduleSeconds} s): each cycle publishes changes up to one schedule old, ` +
        `so SyncLag would stay in alarm; set it above ${scheduleSeconds}, with room for a cycle's own duration`,
    });
  }
  // A full walk reads every suspended card too: a fast path no faster than it would only double the calls.
  const { cardsEveryMinutes, suspendedCardsEveryMinutes } = tenant.schedules;
  if (suspendedCardsEveryMinutes !== undefined && suspendedCardsEveryMinutes >= cardsEveryMinutes) {
    ctx.addIssue({
      code: "custom",
      path: ["schedules", "suspendedCardsEveryMinutes"],
      message:
        `must be less than cardsEveryMinutes (${cardsEveryMinutes}): the fast path runs between full walks, and a full walk ` +
        "already reads every suspended card; leave it out for no fast path",
    });
  }
  // Caught here rather than at deploy: an ARN of another partition than the region's names nothing there, rules and the
  // archive need the bus in the stack's own account and region, an alarm can only notify a topic in its own region, and
  // CloudFormation resolves a webhook secret in the stack's region (a secret of another account is fine: dynamic
  // references take its full ARN).
  const placed = arnsOf(tenant);
  const first = placed[0];
  if (first !== undefined) {
    // An ARN pins the tenant to a place, so the stack is pinned too: the checks below then always run, and a deploy
    // from a shell with another default account or region fails at once instead of half-way.
    for (const field of ["region", "account"] as const) {
      if (tenant[field] === undefined) {
        ctx.addIssue({ code: "custom", path: [field], message: `is required when an ARN is configured (${formatPath(first.path)})` });
      }
    }
  }
  // The partition follows from the region (arn:aws-cn: in China, ...); unknown for a region newer than aws-cdk-lib.
  const partition = tenant.region === undefined ? undefined : RegionInfo.get(tenant.region).partition;
  for (const { path, arn, account, secret } of placed) {
    const [, arnPartition, , region, accountId] = arn.split(":");
    const elsewhere = tenant.account !== undefined && accountId !== tenant.account;
    if (tenant.region !== undefined && region !== tenant.region) {
      ctx.addIssue({ code: "custom", path, message: "must be in the tenant's region" });
    } else if (partition !== undefined && arnPartition !== partition) {
      ctx.addIssue({ code: "custom", path, message: `must start with arn:${partition}: (the partition of ${tenant.region})` });
    } else if (account && elsewhere) {
      ctx.addIssue({ code: "custom", path, message: "must be in the tenant's account" });
    } else if (secret && elsewhere && !SECRET_ARN_SUFFIX.test(arn)) {
      // A name ending in "-" and six letters or digits passes as a full ARN: only a certainly partial one is refused.
      ctx.addIssue({
        code: "custom",
        path,
        message: "must be the secret's full ARN, ending in the six characters Secrets Manager appends to its name: a secret of another account is resolved only by full ARN",
      });
    }
  }
});

/** An ARN of the tenant's config: where it is, and whether it must also be in the tenant's account. */
interface PlacedArn {
  readonly path: (string | number)[];
  readonly arn: string;
  readonly account: boolean;
  /** A webhook secret: one of another account is resolved only by its full ARN. */
  readonly secret?: boolean;
}

/** The end of a secret's full ARN: Secrets Manager appends `-` and six random characters to the name. */
const SECRET_ARN_SUFFIX = /-[A-Za-z0-9]{6}$/;

/** Every ARN a tenant configures. */
function arnsOf(tenant: {
  eventBus: { mode: string; arn?: string } | { mode: string; name: string };
  alarms: { topicArn?: string | undefined };
  webhooks: readonly { auth: z.output<typeof webhookAuthSchema> }[];
}): PlacedArn[] {
  const placed: (Omit<PlacedArn, "arn"> & { arn: string | undefined })[] = [
    { path: ["eventBus", "arn"], arn: "arn" in tenant.eventBus ? tenant.eventBus.arn : undefined, account: true },
    { path: ["alarms", "topicArn"], arn: tenant.alarms.topicArn, account: false },
    ...tenant.webhooks.map((hook, i) => {
      const [field, ref] =
        hook.auth.type === "apiKey"
          ? (["value", hook.auth.value] as const)
          : hook.auth.type === "basic"
            ? (["password", hook.auth.password] as const)
            : (["clientSecret", hook.auth.clientSecret] as const);
      return { path: ["webhooks", i, "auth", field, "secretArn"], arn: ref.secretArn, account: false, secret: true };
    }),
  ];
  return placed.filter((p): p is PlacedArn => p.arn !== undefined);
}

/** One tenant, validated and with defaults applied. */
export type TenantConfig = z.output<typeof tenantSchema>;
/** One webhook of a tenant, validated. */
export type WebhookConfig = TenantConfig["webhooks"][number];
/** How a webhook authenticates, validated. */
export type WebhookAuthConfig = WebhookConfig["auth"];

/**
 * Validates one tenant entry.
 *
 * @param raw - the entry as read from JSON.
 * @param index - position in the file, named when the id is unusable.
 * @throws TenantConfigError naming the tenant and every offending field zod reports (the misspelt key first).
 * @example
 * ```ts
 * const tenant = parseTenantConfig({ id: "acme", environment: "sandbox", alarms: { email: "ops@acme.test" } });
 * tenant.schedules.transactionsEveryMinutes; // 5
 * ```
 */
export function parseTenantConfig(raw: unknown, index = 0): TenantConfig {
  const result = tenantSchema.safeParse(raw);
  if (result.success) return result.data;
  const rawId = typeof raw === "object" && raw !== null ? (raw as { id?: unknown }).id : undefined;
  const tenant = typeof rawId === "string" && TENANT_ID_PATTERN.test(rawId) ? rawId : `tenants[${index}]`;
  // A misspelt key explains the "missing" one it was meant to be: report it first. Every issue is listed, so one run
  // shows all there is to fix.
  const issues = [...result.error.issues].sort((a, b) => Number(b.code === "unrecognized_keys") - Number(a.code === "unrecognized_keys"));
  const [first, ...rest] = issues;
  const field = first ? issueField(first) : "(root)";
  const more = rest.map((issue) => `; field ${issueField(issue)}: ${issue.message}`).join("");
  throw new TenantConfigError(`tenant "${tenant}": field ${field}: ${first?.message ?? "invalid"}${more}`, {
    tenant,
    field,
  });
}

/** Name of the bus a tenant with `eventBus: { mode: "create" }` gets (TenantEventBus). */
export function createdEventBusName(tenantId: string): string {
  return `qashio-bridge-${tenantId}`;
}
