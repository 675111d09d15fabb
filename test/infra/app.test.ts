import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Template } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { bridgeAppOptionsFromContext } from "../../infra/app-context.js";
import { InfraError, TenantConfigError } from "../../infra/errors.js";
import { parseTenantsDocument } from "../../infra/tenants-document.js";
import { buildTestApp, EXAMPLE_TENANTS_FILE, PROVIDER_URLS, REPO_ROOT, testApp } from "./helpers.js";

/** Runs infra/app.ts as `cdk synth` does (context in CDK_CONTEXT_JSON, output in CDK_OUTDIR): its exit and output. */
function runApp(context: Record<string, unknown>) {
  const outdir = mkdtempSync(join(tmpdir(), "cdk-out-"));
  return spawnSync(process.execPath, ["--import", "tsx", join(REPO_ROOT, "infra", "app.ts")], {
    cwd: REPO_ROOT,
    encoding: "utf8",
    env: { ...process.env, CDK_CONTEXT_JSON: JSON.stringify(context), CDK_OUTDIR: outdir },
  });
}

describe("infra/app.ts", () => {
  it("fails synth on a bad tenant config with one line naming the tenant and the field", () => {
    const dir = mkdtempSync(join(tmpdir(), "tenants-"));
    const file = join(dir, "tenants.json");
    writeFileSync(
      file,
      JSON.stringify({
        tenants: [{ id: "initech", environment: "sandbox", alarms: { email: "ops@initech.test" }, schedules: { transactionsEveryMinutes: -5 } }],
      }),
    );
    const result = runApp({ tenantsFile: file });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(
      'qashio-bridge synth failed: tenant "initech": field schedules.transactionsEveryMinutes: Too small',
    );
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it("fails synth when the event catalog is missing", () => {
    const result = runApp({ tenantsFile: EXAMPLE_TENANTS_FILE, eventsDir: join(tmpdir(), "no-such-catalog") });
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/qashio-bridge synth failed: event catalog .*no-such-catalog is missing/);
  });

  it("refuses a context runbookUrl that is not https without echoing it", () => {
    const bad = runApp({ tenantsFile: EXAMPLE_TENANTS_FILE, runbookUrl: "http://wiki:hunter2@git.example/runbook.md" });
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain("qashio-bridge synth failed: context runbookUrl: must be an https:// URL");
    expect(bad.stderr).not.toContain("hunter2");
  });

  it("has no default tenants file: without -c tenantsFile synth fails, so no deploy falls back to the example tenants", () => {
    const result = runApp({});
    expect(result.status).toBe(1);
    expect(result.stderr).toContain("qashio-bridge synth failed: context tenantsFile is not set: pass -c tenantsFile=path/to/tenants.json");
    const cdkJson = JSON.parse(readFileSync(join(REPO_ROOT, "cdk.json"), "utf8")) as { context: Record<string, unknown> };
    expect(cdkJson.context).not.toHaveProperty("tenantsFile");
    // `npm run synth` (CI, offline) names the example explicitly, and asks the registry for no newer CLI (no cdk.json
    // setting switches that check off).
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> };
    expect(pkg.scripts.synth).toBe("CDK_DISABLE_VERSION_CHECK=1 cdk synth --quiet -c tenantsFile=infra/tenants.example.json");
  });

  it("switches the CLI's notices off where the CLI reads that setting: cdk.json's top level (in its context alone it fetched them on every command)", () => {
    const cdkJson = JSON.parse(readFileSync(join(REPO_ROOT, "cdk.json"), "utf8")) as { notices?: unknown; context: Record<string, unknown> };
    expect(cdkJson.notices).toBe(false);
    // Telemetry, by contrast, is a context value.
    expect(cdkJson.context["cli-telemetry"]).toBe(false);
  });
});

// In-process: what infra/app.ts builds from its context. The cases above run it for real; the successful synth it
// ends with is `npm run synth`'s (CI).
describe("the app's context (bridgeAppOptionsFromContext)", () => {
  it("builds absolute runbook links from the context runbookUrl", () => {
    const runbookUrl = "https://git.example/qashio-bridge/blob/main/docs/runbook.md";
    const app = testApp({ tenantsFile: EXAMPLE_TENANTS_FILE, qashioUrls: PROVIDER_URLS, runbookUrl });
    const { stacks } = buildTestApp({ ...bridgeAppOptionsFromContext(app, {}), app });
    const template = JSON.stringify(Template.fromStack(stacks.find((stack) => stack.stackName === "QashioBridge-globex")!).toJSON());
    expect(template).toContain(`Runbook: ${runbookUrl}#synclag`);
    expect(template).not.toContain("Runbook: docs/runbook.md");
  });

  it.each([
    ["runbookURL", "https://git.example/qashio-bridge/blob/main/docs/runbook.md", "runbookUrl"],
    ["qashioUrl", { sandbox: "https://api.sandbox.provider.test" }, "qashioUrls"],
    ["eventDir", "docs/events", "eventsDir"],
  ])("refuses a misspelt setting (%s), which it would otherwise ignore, naming the one meant", (key, value, meant) => {
    const app = testApp({ tenantsFile: EXAMPLE_TENANTS_FILE, qashioUrls: PROVIDER_URLS, [key]: value });
    expect(() => bridgeAppOptionsFromContext(app, {})).toThrow(InfraError);
    expect(() => bridgeAppOptionsFromContext(app, {})).toThrow(`context ${key} is no setting of this app: did you mean ${meant}?`);
  });

  it("reads the catalog from the context eventsDir, and takes a tenantsFile of blanks as unset", () => {
    const app = testApp({ tenantsFile: EXAMPLE_TENANTS_FILE, qashioUrls: PROVIDER_URLS, eventsDir: "no/such/events" });
    expect(() => bridgeAppOptionsFromContext(app, {})).toThrow(`event catalog ${join(REPO_ROOT, "no/such/events")} is missing`);
    expect(() => bridgeAppOptionsFromContext(testApp({ tenantsFile: "  ", qashioUrls: PROVIDER_URLS }), {})).toThrow("context tenantsFile is not set");
  });

  it("passes the environment's QASHIO_*_URL on, which wins over the context qashioUrls", () => {
    const app = testApp({ tenantsFile: EXAMPLE_TENANTS_FILE, qashioUrls: PROVIDER_URLS });
    const { providerUrls } = bridgeAppOptionsFromContext(app, { QASHIO_EU_URL: "https://api.eu.override.test" });
    expect(providerUrls).toEqual({ ...PROVIDER_URLS, eu: "https://api.eu.override.test" });
  });

  it("takes the context CDK and its CLI set beside the app's own settings", () => {
    const context = {
      "cli-telemetry": false,
      notices: false,
      "@aws-cdk/core:newStyleStackSynthesis": true,
      "@aws-cdk/aws-events:requireEventBusPolicySid": true,
      "acknowledged-issue-numbers": [1],
      "aws:cdk:enable-path-metadata": true,
      "aws:cdk:enable-asset-metadata": true,
      "aws:cdk:version-reporting": true,
      "aws:cdk:disable-asset-staging": false,
      // Lookups the CLI caches in cdk.context.json.
      "availability-zones:account=111111111111:region=eu-west-1": ["eu-west-1a"],
      "hosted-zone:account=111111111111:domainName=acme.example:region=eu-west-1": { Id: "/hostedzone/Z1", Name: "acme.example." },
      "ssm:account=111111111111:parameterName=/qashio/eventsDir:region=eu-west-1": "docs/events",
      "ami:account=111111111111:filters.image-type.0=machine:region=eu-west-1": "ami-1",
      "vpc-provider:account=111111111111:filter.isDefault=true:region=eu-west-1:returnAsymmetricSubnets=true": { vpcId: "vpc-1" },
    };
    const app = testApp({ tenantsFile: EXAMPLE_TENANTS_FILE, qashioUrls: PROVIDER_URLS, ...context });
    expect(bridgeAppOptionsFromContext(app, {}).tenants.map((tenant) => tenant.id)).toEqual(["acme-sandbox", "globex"]);
  });
});

describe("buildBridgeApp", () => {
  it("checks every tenant's provider URL before it builds any stack, so a bad one leaves nothing half-built", () => {
    const tenants = parseTenantsDocument({
      tenants: [
        { id: "good", environment: "sandbox", alarms: { email: "ops@good.test" } },
        { id: "bad", environment: "https://api.provider.test/v1?x=1", eventSource: "bad.bridge", alarms: { email: "ops@bad.test" } },
      ],
    });
    const app = testApp();
    expect(() => buildTestApp({ app, tenants })).toThrow(TenantConfigError);
    expect(() => buildTestApp({ app: testApp(), tenants })).toThrow('tenant "bad": field environment:');
    // No stack (and so no bundled asset) of the tenants before it.
    expect(app.node.children).toHaveLength(0);
  });
});
