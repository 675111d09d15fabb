/**
 * Tenant configuration of the CDK app: one entry of the tenants file, which lists every customer tenant (its webhooks'
 * schema in webhook-schema.ts). Validated with zod; a bad entry fails synth with a message naming the tenant and the field.
 */
import { RegionInfo } from "aws-cdk-lib/region-info";
import * as z from "zod";
import { eventSourceSchema } from "../shared/bridge/events/source-schema.js";
import { EVENT_BUS_ARN_PATTERN, EVENT_BUS_NAME_PATTERN, TENANT_ID_PATTERN, TENANT_ID_RULE } from "../shared/aws/resource-ids.js";
import { PII_MODES } from "../shared/bridge/pii.js";
import { TenantConfigError } from "./errors.js";
import { formatPath, issueField } from "./field-path.js";
import { didYouMean } from "../shared/nearest.js";
import { meantFields, meantOption, tenantIssueMessage } from "./tenant-issue-messages.js";
import { TENANT_DEFAULTS } from "./tenant-defaults.js";
import { webhookSchema, type WebhookAuthConfig } from "./webhook-schema.js";

/** A named provider deployment, or a literal https base URL (checked in full when the stack is built). */
const ENVIRONMENT_PATTERN = /^(?:(?:production|eu|sandbox)$|https:\/\/[^\s/])/;
/** An SNS topic ARN: topic names are 1 to 256 letters, digits, '_' and '-' (CreateTopic). */
const SNS_TOPIC_ARN_PATTERN = /^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[\w-]{1,256}$/;

/**
 * Webhooks one tenant may list. Each adds 8 resources to the tenant's stack (connection, API destination, rule, target
 * role and policy, dead-letter queue and its policy, alarm) to about 60 of its own; CloudFormation refuses a
 * stack of more than 500, which synth would only report after building it all, without naming the setting.
 */
export const MAX_WEBHOOKS_PER_TENANT = 50;
const WEBHOOKS_CAP_MESSAGE =
  `at most ${MAX_WEBHOOKS_PER_TENANT} webhooks per tenant: each adds 8 resources to the tenant's stack and CloudFormation takes at most 500; ` +
  "forward to more endpoints from your own rules on the tenant's event bus";

const EVENT_BUS_FORMS = '{ "mode": "create" } or { "mode": "import", "name" | "arn": ... }';
const eventBusOptions = [
  z.strictObject({ mode: z.literal("create") }),
  z.strictObject({ mode: z.literal("import"), name: z.string().regex(EVENT_BUS_NAME_PATTERN, "must be an event bus name") }),
  z.strictObject({ mode: z.literal("import"), arn: z.string().regex(EVENT_BUS_ARN_PATTERN, "must be an event bus ARN") }),
] as const;
const EVENT_BUS_KEYS: ReadonlySet<string> = new Set(eventBusOptions.flatMap((option) => Object.keys(option.shape)));
const EVENT_BUS_MODES = eventBusOptions.map((option) => option.shape.mode.value);

/**
 * When no form of eventBus fits: the keys none of them has first (a misspelt `name`), as for any other object, each with
 * the field likely meant; else the forms, with the mode likely meant.
 */
function eventBusMismatch(issue: { readonly input?: unknown }): string {
  const input = typeof issue.input === "object" && issue.input !== null ? (issue.input as Record<string, unknown>) : {};
  const unknown = Object.keys(input).filter((key) => !EVENT_BUS_KEYS.has(key));
  if (unknown.length === 0) return `must be ${EVENT_BUS_FORMS}${didYouMean(meantOption(input.mode, EVENT_BUS_MODES))}`;
  const keys = unknown.map((key) => JSON.stringify(key)).join(", ");
  const hint = didYouMean(meantFields(unknown, input, [...EVENT_BUS_KEYS]));
  return `${keys} ${unknown.length === 1 ? "is not a field" : "are not fields"} of eventBus${hint}, which must be ${EVENT_BUS_FORMS}`;
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
  // The relations below hold between valid fields: one already refused (a malformed ARN, a rate out of range) is named
  // once, by its own fault, not again by a relation it fails only because of it.
  const refused = (...paths: (string | number)[][]): boolean =>
    ctx.issues.some((issue) => paths.some((path) => path.every((key, i) => issue.path?.[i] === key)));
  // A cycle publishes the changes made since the last one, up to one schedule old: a threshold no longer than the
  // schedule keeps SyncLag in alarm for any tenant with steady transactions, while nothing is late.
  const scheduleSeconds = tenant.schedules.transactionsEveryMinutes * 60;
  const syncLag = ["alarms", "syncLagThresholdSeconds"];
  if (tenant.alarms.syncLagThresholdSeconds <= scheduleSeconds && !refused(syncLag, ["schedules", "transactionsEveryMinutes"])) {
    ctx.addIssue({
      code: "custom",
      path: syncLag,
      message:
        `must be more than the transactions schedule (${scheduleSeconds} s): each cycle publishes changes up to one schedule old, ` +
        `so SyncLag would stay in alarm; set it above ${scheduleSeconds}, with room for a cycle's own duration`,
    });
  }
  // A full walk reads every suspended card too: a fast path no faster than it would only double the calls.
  const { cardsEveryMinutes, suspendedCardsEveryMinutes } = tenant.schedules;
  const fastPathRefused = refused(["schedules", "cardsEveryMinutes"], ["schedules", "suspendedCardsEveryMinutes"]);
  if (suspendedCardsEveryMinutes !== undefined && suspendedCardsEveryMinutes >= cardsEveryMinutes && !fastPathRefused) {
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
    if (refused(path, ["region"], ["account"])) continue;
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
  webhooks: readonly { auth: WebhookAuthConfig }[];
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
  const result = tenantSchema.safeParse(raw, { error: tenantIssueMessage });
  if (result.success) return result.data;
  const rawId = typeof raw === "object" && raw !== null ? (raw as { id?: unknown }).id : undefined;
  const tenant = typeof rawId === "string" && TENANT_ID_PATTERN.test(rawId) ? rawId : `tenants[${index}]`;
  // A misspelt key explains the "missing" one it was meant to be: report it first. Every issue is listed, so one run
  // shows every field's own faults; the relations between fields (the superRefine above) are checked only when no
  // field aborted its parse (a missing or mistyped member, a URL that is no https URL), so theirs may show next run.
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
