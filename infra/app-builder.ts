import { App, Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks } from "cdk-nag";
import type { EventDetailSchema } from "./event-schemas-source.js";
import { resolveProviderUrl, type ProviderUrls } from "./provider-urls.js";
import type { TenantConfig } from "./tenant-config.js";
import { TenantStack, tenantStackName } from "./tenant-stack.js";

/** Inputs of {@link buildBridgeApp}. */
export interface BridgeAppOptions {
  /** Validated tenants; one stack each. */
  readonly tenants: readonly TenantConfig[];
  /** Base URLs of the named provider deployments. */
  readonly providerUrls: ProviderUrls;
  /** The event catalog's detail schemas. */
  readonly eventSchemas: readonly EventDetailSchema[];
  /**
   * The app to add stacks to (tests pass one with bundling switched off).
   * @default new App()
   */
  readonly app?: App;
  /**
   * Directory of the Lambda handlers.
   * @default <repository>/functions
   */
  readonly functionsDir?: string;
  /**
   * Register cdk-nag's AwsSolutions pack as a validation plugin, so synth fails on any unacknowledged finding.
   * @default true
   */
  readonly nag?: boolean;
  /**
   * The runbook page alarm descriptions and dashboards link to (validated by `runbookUrlFrom`).
   * @default "docs/runbook.md" (repository-relative)
   */
  readonly runbookUrl?: string;
}

/**
 * Builds the CDK app: one `QashioBridge-<tenant>` stack per tenant, cdk-nag AwsSolutions on the whole app.
 * Stacks are environment-agnostic unless the tenant sets account/region, so synth needs no credentials.
 *
 * @throws TenantConfigError when a tenant's provider URL cannot be resolved.
 * @example
 * ```ts
 * const { app } = buildBridgeApp({ tenants, providerUrls, eventSchemas: loadEventDetailSchemas("docs/events") });
 * app.synth();
 * ```
 */
export function buildBridgeApp(options: BridgeAppOptions): { app: App; stacks: TenantStack[] } {
  const app = options.app ?? new App();
  // Every tenant's URL first: a bad one then fails synth before any stack is built (and any function bundled).
  const resolved = options.tenants.map((tenant) => ({ tenant, providerBaseUrl: resolveProviderUrl(tenant, options.providerUrls) }));
  const stacks = resolved.map(
    ({ tenant, providerBaseUrl }) =>
      new TenantStack(app, tenantStackName(tenant.id), {
        tenant,
        providerBaseUrl,
        eventSchemas: options.eventSchemas,
        functionsDir: options.functionsDir,
        runbookUrl: options.runbookUrl,
        env: tenant.account === undefined && tenant.region === undefined ? undefined : { account: tenant.account, region: tenant.region },
      }),
  );
  if (options.nag ?? true) Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return { app, stacks };
}
