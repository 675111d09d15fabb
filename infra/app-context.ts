/**
 * The app's settings from its CDK context: `tenantsFile` (required, no default: a deploy without it must not fall
 * back to the example tenants; `npm run synth` passes infra/tenants.example.json), `eventsDir` (default
 * docs/events), `qashioUrls` ({production, eu, sandbox}, overridden by QASHIO_PRODUCTION_URL / QASHIO_EU_URL /
 * QASHIO_SANDBOX_URL), `runbookUrl` (optional https address of docs/runbook.md, for absolute links in alarm
 * descriptions and dashboards). Relative paths are taken from the repository root.
 */
import { isAbsolute, join } from "node:path";
import type { Construct } from "constructs";
import type { BridgeAppOptions } from "./app-builder.js";
import { InfraError } from "./errors.js";
import { loadEventDetailSchemas } from "./event-schemas-source.js";
import { runbookUrlFrom } from "./runbook-link.js";
import { loadTenantsFile, providerUrlsFrom } from "./tenant-config.js";

const repoRoot = join(import.meta.dirname, "..");
const fromRoot = (path: string): string => (isAbsolute(path) ? path : join(repoRoot, path));

/**
 * The {@link BridgeAppOptions} that the context of `scope`'s app and the environment `env` set.
 *
 * @throws InfraError (TenantConfigError among them) naming the setting, tenant and field that is wrong.
 */
export function bridgeAppOptionsFromContext(scope: Construct, env: Readonly<Record<string, string | undefined>>): BridgeAppOptions {
  const context = (key: string): unknown => scope.node.tryGetContext(key);
  const tenantsFile = context("tenantsFile");
  if (typeof tenantsFile !== "string" || tenantsFile.trim() === "") {
    throw new InfraError(
      "context tenantsFile is not set: pass -c tenantsFile=path/to/tenants.json (the example tenants: npm run synth, " +
        "which passes -c tenantsFile=infra/tenants.example.json)",
    );
  }
  return {
    tenants: loadTenantsFile(fromRoot(tenantsFile)),
    eventSchemas: loadEventDetailSchemas(fromRoot(String(context("eventsDir") ?? "docs/events"))),
    providerUrls: providerUrlsFrom(context("qashioUrls"), env),
    runbookUrl: runbookUrlFrom(context("runbookUrl")),
  };
}
