/**
 * The app's settings from its CDK context: `tenantsFile` (required, no default: a deploy without it must not fall
 * back to the example tenants; `npm run synth` passes infra/tenants.example.json), `eventsDir` (default
 * docs/events), `qashioUrls` ({production, eu, sandbox}, overridden by QASHIO_PRODUCTION_URL / QASHIO_EU_URL /
 * QASHIO_SANDBOX_URL), `runbookUrl` (optional https address of docs/runbook.md, for absolute links in alarm
 * descriptions and dashboards). Relative paths are taken from the repository root. A misspelt setting fails synth.
 */
import { isAbsolute, join } from "node:path";
import type { Construct } from "constructs";
import type { BridgeAppOptions } from "./app-builder.js";
import { nearest } from "../shared/nearest.js";
import { InfraError } from "./errors.js";
import { loadEventDetailSchemas } from "./event-schemas-source.js";
import { runbookUrlFrom } from "./runbook-link.js";
import { providerUrlsFrom } from "./provider-urls.js";
import { loadTenantsFile } from "./tenants-file.js";

const repoRoot = join(import.meta.dirname, "..");
/** The context settings the app reads. */
const SETTINGS = ["tenantsFile", "eventsDir", "qashioUrls", "runbookUrl"] as const;
const fromRoot = (path: string): string => (isAbsolute(path) ? path : join(repoRoot, path));

/**
 * The {@link BridgeAppOptions} that the context of `scope`'s app and the environment `env` set.
 *
 * @throws InfraError (TenantConfigError among them) naming the setting, tenant and field that is wrong.
 */
export function bridgeAppOptionsFromContext(scope: Construct, env: Readonly<Record<string, string | undefined>>): BridgeAppOptions {
  refuseMisspeltSettings(scope);
  const context = (key: (typeof SETTINGS)[number]): unknown => scope.node.tryGetContext(key);
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

/**
 * Fails on a context key that is one of {@link SETTINGS} misspelt (`runbookURL`, `qashioUrl`): ignored, it left the
 * setting at its default with no word on why (alarm mails with repository-relative links, the placeholder URLs).
 * Other keys (CDK's feature flags, the CLI's settings, cached lookups) are not the app's to judge.
 */
function refuseMisspeltSettings(scope: Construct): void {
  const misspelt = Object.keys(scope.node.getAllContext() as Record<string, unknown>).flatMap((key) => {
    const meant = (SETTINGS as readonly string[]).includes(key) ? undefined : nearest(key, SETTINGS);
    return meant === undefined ? [] : [`context ${key} is no setting of this app: did you mean ${meant}?`];
  });
  if (misspelt.length > 0) throw new InfraError(misspelt.join("; "));
}
