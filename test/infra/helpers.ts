import { join } from "node:path";
import { App } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { buildBridgeApp, type BridgeAppOptions } from "../../infra/app-builder.js";
import { loadEventDetailSchemas, type EventDetailSchema } from "../../infra/event-schemas-source.js";
import * as z from "zod";
import { parseTenantConfig, tenantSchema, type TenantConfig } from "../../infra/tenant-config.js";
import { loadTenantsFile } from "../../infra/tenants-file.js";
import type { TenantStack } from "../../infra/tenant-stack.js";
import { EVENT_TYPES } from "../../infra/webhook-schema.js";
import { existsSync, readdirSync } from "node:fs";
import type { PolicyStatement } from "./iam-evaluator.js";
import { TOKEN_ROTATION_SCHEDULE, TOKEN_ROTATION_WINDOW } from "../../infra/constructs/tenant-secret.js";
import { TenantConfigError } from "../../infra/errors.js";

export const REPO_ROOT = join(import.meta.dirname, "..", "..");
export const EXAMPLE_TENANTS_FILE = join(REPO_ROOT, "infra", "tenants.example.json");
/** Stand-in handlers: template tests skip bundling, so only the entry paths must exist. */
export const FIXTURE_FUNCTIONS_DIR = join(import.meta.dirname, "fixtures", "functions");
export const PROVIDER_URLS = {
  production: "https://api.provider.test",
  eu: "https://api.eu.provider.test",
  sandbox: "https://api.sandbox.provider.test",
};

/** The engine's catalog when it has been exported, otherwise a minimal schema per event type. */
export function eventSchemasForTests(): EventDetailSchema[] {
  const dir = join(REPO_ROOT, "docs", "events");
  if (existsSync(dir) && readdirSync(dir).some((f) => f.endsWith(".json"))) return loadEventDetailSchemas(dir);
  return EVENT_TYPES.map((type) => ({
    type,
    file: `${type}.json`,
    schema: { $schema: "http://json-schema.org/draft-04/schema#", type: "object", properties: { type: { enum: [type] } } },
  }));
}

/**
 * An app (with the given context) that skips bundling (context `aws:cdk:bundling-stacks` = []) and the built-in
 * CloudFormation validation, which together take ~15 s per synth; CI's `npm run synth` does both for real.
 */
export function testApp(context: Record<string, unknown> = {}): App {
  return new App({ builtinCloudFormationValidation: false, context: { ...context, "aws:cdk:bundling-stacks": [] } });
}

/** Builds the app of the example tenants file (or the given tenants) the fast way. */
export function buildTestApp(overrides: Partial<BridgeAppOptions> & { tenants?: readonly TenantConfig[] } = {}) {
  return buildBridgeApp({
    app: testApp(),
    tenants: loadTenantsFile(EXAMPLE_TENANTS_FILE),
    providerUrls: PROVIDER_URLS,
    eventSchemas: eventSchemasForTests(),
    functionsDir: FIXTURE_FUNCTIONS_DIR,
    nag: false,
    ...overrides,
  });
}

/** A stack of the example app with its template. */
export interface ExampleStack {
  readonly stack: TenantStack;
  readonly template: Template;
}

/** The example app's stacks: acme-sandbox (pinned, a created bus, webhooks) and globex (environment-agnostic, an imported bus). */
export interface ExampleApp {
  readonly acme: ExampleStack;
  readonly globex: ExampleStack;
}

let example: ExampleApp | undefined;

/**
 * The example app, built once per test file for the tests that need no other configuration (and add nothing to it:
 * the stacks are shared).
 */
export function exampleStacks(): ExampleApp {
  if (example === undefined) {
    const [acme, globex] = buildTestApp().stacks as [TenantStack, TenantStack];
    example = { acme: { stack: acme, template: Template.fromStack(acme) }, globex: { stack: globex, template: Template.fromStack(globex) } };
  }
  return example;
}

let fastPath: Template | undefined;

/** globex with the card fast path (cards every 30 minutes, suspended cards every 2), built once per test file. */
export function fastPathGlobex(): Template {
  if (fastPath === undefined) {
    const globex = loadTenantsFile(EXAMPLE_TENANTS_FILE).find((t) => t.id === "globex") as TenantConfig;
    const tenant = { ...globex, schedules: { ...globex.schedules, cardsEveryMinutes: 30, suspendedCardsEveryMinutes: 2 } };
    const [stack] = buildTestApp({ tenants: [tenant] }).stacks as [TenantStack];
    fastPath = Template.fromStack(stack);
  }
  return fastPath;
}

/** An AWS::IAM::Policy resource of a synthesized template: its logical id and its statements. */
export interface RolePolicy {
  readonly id: string;
  readonly statements: PolicyStatement[];
}

/** The AWS::IAM::Policy resources attached (by `Ref`) to a role whose logical id starts with `role`. */
export function rolePolicies(template: Template, role: string): RolePolicy[] {
  const policies = template.findResources("AWS::IAM::Policy") as Record<
    string,
    { Properties: { Roles: { Ref: string }[]; PolicyDocument: { Statement: PolicyStatement[] } } }
  >;
  return Object.entries(policies)
    .filter(([, p]) => p.Properties.Roles.some((r) => r.Ref.startsWith(role)))
    .map(([id, p]) => ({ id, statements: p.Properties.PolicyDocument.Statement }));
}

/** The statements of all the policies attached to a role whose logical id starts with `role`. */
export function roleStatements(template: Template, role: string): PolicyStatement[] {
  return rolePolicies(template, role).flatMap((p) => p.statements);
}

/**
 * The token rotation's daily window as the docs write it, from the secret's schedule (`cron(<minute> <hour> * * ? *)`)
 * and its window of whole hours.
 *
 * @example
 * rotationWindow(); // { start: "03:00", end: "04:00" }
 */
export function rotationWindow(): { readonly start: string; readonly end: string } {
  const [, minute = "", hour = ""] = /^cron\((\d+) (\d+) /.exec(TOKEN_ROTATION_SCHEDULE) ?? [];
  const windowHours = Number(/^(\d+)h$/.exec(TOKEN_ROTATION_WINDOW)?.[1]);
  const clock = (h: number) => `${String(h).padStart(2, "0")}:${minute.padStart(2, "0")}`;
  return { start: clock(Number(hour)), end: clock(Number(hour) + windowHours) };
}


/**
 * The message of the TenantConfigError `check` throws (synth's refusal), or undefined when it passes; any other error
 * is thrown on.
 *
 * @example
 * tenantRefusal(() => parseTenantConfig({ id: "acme" })); // 'tenant "acme": field environment: is required; ...'
 */
export function tenantRefusal(check: () => unknown): string | undefined {
  try {
    check();
    return undefined;
  } catch (error) {
    if (!(error instanceof TenantConfigError)) throw error;
    return error.message;
  }
}

/** synth's refusal of one tenants-file entry (see {@link tenantRefusal}), or undefined when it takes it. */
export function entryRefusal(entry: Record<string, unknown>): string | undefined {
  return tenantRefusal(() => parseTenantConfig(entry));
}

/** Every schedule, in minutes, the tenants file accepts for `field` of `schedules` (its JSON Schema's bounds). */
export function acceptedScheduleMinutes(field: "transactionsEveryMinutes" | "cardsEveryMinutes"): number[] {
  const schema = z.toJSONSchema(tenantSchema, { io: "input" }) as unknown as {
    properties: { schedules: { properties: Record<string, { minimum: number; maximum: number }> } };
  };
  const { minimum, maximum } = schema.properties.schedules.properties[field] ?? { minimum: 0, maximum: -1 };
  return Array.from({ length: maximum - minimum + 1 }, (_, i) => minimum + i);
}

/** The account and region of the tenants-file entries below ({@link tenantEntry}). */
export const TENANT_ACCOUNT = "111111111111";
export const TENANT_REGION = "eu-west-1";
/** A webhook credential's secret in the tenant's account and region. */
export const WEBHOOK_SECRET_ARN = `arn:aws:secretsmanager:${TENANT_REGION}:${TENANT_ACCOUNT}:secret:acme/hooks-AbCdEf`;

/** A tenants-file entry synth takes, with `fields` over it. */
export function tenantEntry(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return { id: "acme", environment: "sandbox", account: TENANT_ACCOUNT, region: TENANT_REGION, alarms: { email: "ops@acme.test" }, ...fields };
}

/** A webhook's API-key credential, its value in `secretArn`. */
export function apiKeyAuth(secretArn = WEBHOOK_SECRET_ARN): Record<string, unknown> {
  return { type: "apiKey", headerName: "x-api-key", value: { secretArn } };
}

/** A tenant's webhook synth takes, sending with `auth`, with `fields` over it. */
export function webhookEntry(fields: Record<string, unknown> = {}, auth: Record<string, unknown> = apiKeyAuth()): Record<string, unknown> {
  return { name: "erp", url: "https://erp.acme.example/hooks", eventTypes: ["transaction.created"], auth, ...fields };
}
