/**
 * CDK entry point (cdk.json: `npx tsx infra/app.ts`). Context: `tenantsFile` (required, no default: a deploy
 * without it must not fall back to the example tenants; `npm run synth` passes infra/tenants.example.json),
 * `eventsDir` (default docs/events), `qashioUrls` ({production, eu, sandbox},
 * overridden by QASHIO_PRODUCTION_URL / QASHIO_EU_URL / QASHIO_SANDBOX_URL), `runbookUrl` (optional https address of
 * docs/runbook.md, for absolute links in alarm descriptions and dashboards).
 */
import { isAbsolute, join } from "node:path";
import { App } from "aws-cdk-lib";
import { buildBridgeApp } from "./app-builder.js";
import { InfraError } from "./errors.js";
import { loadEventDetailSchemas } from "./event-schemas-source.js";
import { runbookUrlFrom } from "./runbook-link.js";
import { loadTenantsFile, providerUrlsFrom } from "./tenant-config.js";

const repoRoot = join(import.meta.dirname, "..");
const fromRoot = (path: string): string => (isAbsolute(path) ? path : join(repoRoot, path));

const app = new App();
try {
  const tenantsFile: unknown = app.node.tryGetContext("tenantsFile");
  if (typeof tenantsFile !== "string" || tenantsFile.trim() === "") {
    throw new InfraError(
      "context tenantsFile is not set: pass -c tenantsFile=path/to/tenants.json (the example tenants: npm run synth, " +
        "which passes -c tenantsFile=infra/tenants.example.json)",
    );
  }
  const tenants = loadTenantsFile(fromRoot(tenantsFile));
  const eventSchemas = loadEventDetailSchemas(fromRoot(String(app.node.tryGetContext("eventsDir") ?? "docs/events")));
  buildBridgeApp({
    app,
    tenants,
    eventSchemas,
    providerUrls: providerUrlsFrom(app.node.tryGetContext("qashioUrls"), process.env),
    runbookUrl: runbookUrlFrom(app.node.tryGetContext("runbookUrl")),
  });
} catch (error) {
  if (!(error instanceof InfraError)) throw error;
  // a configuration mistake: the message names tenant and field, a stack trace would only hide it
  console.error(`qashio-bridge synth failed: ${error.message}`);
  process.exit(1);
}
app.synth();
