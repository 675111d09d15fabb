/**
 * docs/tenants-file.md's claims that no other test reads from the page: the blanks synth trims, the environment URLs it
 * refuses, which ARNs pin a tenant and where each may live, the names a bus shared between stacks goes by, and which
 * tenant a refused provider URL names. Each is read from the page and held to what synth's loader and app do.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { TenantConfigError } from "../../infra/errors.js";
import { resolveProviderUrl } from "../../infra/provider-urls.js";
import { createdEventBusName, parseTenantConfig } from "../../infra/tenant-config.js";
import { tenantStackName } from "../../infra/tenant-stack.js";
import { parseTenantsDocument } from "../../infra/tenants-document.js";
import { resolveBaseUrl } from "../../shared/qashio/config.js";
import { docSection, docText, firstNumbersSaid, firstTextsSaid, quotedNames } from "../doc-text.js";
import { compileJsonSchema } from "../json-schema.js";
import { thrown } from "../thrown.js";
import { apiKeyAuth, buildTestApp, REPO_ROOT, TENANT_ACCOUNT, TENANT_REGION, entryRefusal, tenantEntry, tenantRefusal, WEBHOOK_SECRET_ARN, webhookEntry } from "./helpers.js";

const page = docText("docs/tenants-file.md");
const schemaSection = docSection(page, "The schema, and what synth checks beyond it");
const placeSection = docSection(page, "Account and region");
const sharedBusSection = docSection(page, "Event sources on a shared bus");
const namingSection = docSection(page, "How synth names a mistake");
const urlSection = docSection(page, "Webhook and token URLs, and webhook credentials");

const withTokenUrl = (tokenUrl: string) =>
  webhookEntry({ auth: { type: "oauthClientCredentials", tokenUrl, clientId: "bridge", clientSecret: { secretArn: WEBHOOK_SECRET_ARN } } });


/** synth's refusal of a tenant's literal `environment` URL once the file passes, or undefined when it takes it. */
const environmentRefusal = (environment: string): string | undefined =>
  tenantRefusal(() => resolveProviderUrl(parseTenantConfig(tenantEntry({ environment })), {}));

describe("docs/tenants-file.md, the schema and what synth checks beyond it", () => {
  const validate = compileJsonSchema(JSON.parse(readFileSync(join(REPO_ROOT, "docs", "tenants.schema.json"), "utf8")) as object, { strictRequired: false });

  it("trims blanks around a webhook or token URL, which the schema refuses, and fails a blank before an environment URL", () => {
    firstTextsSaid(schemaSection, /it also trims blanks around a webhook or token URL, which the schema refuses \(a blank before an `environment` URL fails synth too\)/);
    const padded = { url: " https://erp.acme.example/hooks\t", tokenUrl: "\thttps://auth.acme.example/token " };
    const parsed = parseTenantConfig(tenantEntry({ webhooks: [{ ...withTokenUrl(padded.tokenUrl), url: padded.url }] }));
    const [hook] = parsed.webhooks;
    expect([hook?.url, hook?.auth.type === "oauthClientCredentials" ? hook.auth.tokenUrl : undefined]).toEqual([padded.url.trim(), padded.tokenUrl.trim()]);
    // Each padded, then as synth reads it: the schema refuses the blanks alone.
    const pairs = [
      [webhookEntry({ url: padded.url }), webhookEntry({ url: padded.url.trim() })],
      [withTokenUrl(padded.tokenUrl), withTokenUrl(padded.tokenUrl.trim())],
    ];
    for (const [blanked, trimmed] of pairs) {
      expect(validate({ tenants: [tenantEntry({ webhooks: [blanked] })] }), JSON.stringify(blanked)).toBe(false);
      expect(validate({ tenants: [tenantEntry({ webhooks: [trimmed] })] }), JSON.stringify(trimmed)).toBe(true);
    }
    expect(entryRefusal(tenantEntry({ environment: " https://api.acme.example" }))).toContain("field environment:");
  });

  it("refuses the environment URLs it names, each as the runtime's base URL setting it names is refused", () => {
    const [paths = "", variable = ""] = firstTextsSaid(
      schemaSection,
      /holding the API's own path (`[^)]*?), as `(\w+)` is refused\)/,
    );
    // The functions read that variable with resolveBaseUrl, which the loop below holds to the same refusals.
    const runtimeConfig = readFileSync(join(REPO_ROOT, "shared", "aws", "config.ts"), "utf8");
    expect(runtimeConfig).toContain(`env.${variable}`);
    expect(runtimeConfig).toContain("resolveBaseUrl(");
    const named = quotedNames(paths);
    expect(named.length).toBeGreaterThan(3);
    const base = "https://api.acme.example/bridge";
    expect(environmentRefusal(base)).toBeUndefined();
    for (const path of named) {
      expect(environmentRefusal(`${base}${path}`), path).toContain('tenant "acme": field environment:');
      expect(() => resolveBaseUrl(`${base}${path}`, {}), path).toThrow();
    }
    // "with credentials, a query or a fragment", and "URLs the URL parser refuses (an empty host, a port out of range)".
    firstTextsSaid(schemaSection, /a literal `environment` URL with credentials, a query or a fragment/);
    firstTextsSaid(schemaSection, /URLs the URL parser refuses \(an empty host, a port out of range\)/);
    for (const url of ["https://bridge:pw@api.acme.example", "https://api.acme.example?tenant=acme", "https://api.acme.example#top", "https://:443", "https://api.acme.example:65536"]) {
      expect(environmentRefusal(url), url).toContain('tenant "acme": field environment:');
      expect(() => resolveBaseUrl(url, {}), url).toThrow();
    }
    expect(environmentRefusal("https://api.acme.example:65535")).toBeUndefined();
  });

  it("refuses webhook URLs the URL parser refuses, an empty host or a port out of range", () => {
    const hostless = "https://:443/hooks";
    const outOfRange = "https://erp.acme.example:65536/hooks";
    expect(() => new URL(hostless)).toThrow();
    expect(() => new URL(outOfRange)).toThrow();
    for (const url of [hostless, outOfRange]) expect(entryRefusal(tenantEntry({ webhooks: [webhookEntry({ url })] })), url).toContain("field webhooks[0].url:");
    expect(entryRefusal(tenantEntry({ webhooks: [webhookEntry({ url: "https://erp.acme.example:65535/hooks" })] }))).toBeUndefined();
  });
});

describe("docs/tenants-file.md, account and region", () => {
  it("requires account and region as soon as any ARN it lists is configured, naming that ARN", () => {
    const [listed = ""] = firstTextsSaid(placeSection, /as soon as the tenant configures any ARN \(([^)]*)\)/);
    const topicArn = `arn:aws:sns:${TENANT_REGION}:${TENANT_ACCOUNT}:ops`;
    // Each ARN the page names, alone in a tenant, and the field synth names for it.
    const byName: Record<string, { fields: Record<string, unknown>; path: string }> = {
      "eventBus.arn": { fields: { eventBus: { mode: "import", arn: `arn:aws:events:${TENANT_REGION}:${TENANT_ACCOUNT}:event-bus/finance` } }, path: "eventBus.arn" },
      "alarms.topicArn": { fields: { alarms: { topicArn } }, path: "alarms.topicArn" },
      secretArn: { fields: { webhooks: [webhookEntry()] }, path: "webhooks[0].auth.value.secretArn" },
    };
    const names = quotedNames(listed);
    expect(names.length).toBeGreaterThan(2);
    for (const name of names) {
      const arn = byName[name];
      expect(arn, `an ARN the page names: ${name}`).toBeDefined();
      const unpinned = { ...tenantEntry(arn?.fields), account: undefined, region: undefined };
      const refusal = entryRefusal(unpinned);
      for (const field of ["account", "region"]) expect(refusal, `${name}, ${field}`).toContain(`field ${field}: is required when an ARN is configured (${arn?.path})`);
      expect(entryRefusal(tenantEntry(arn?.fields)), name).toBeUndefined();
    }
  });

  it("checks the partition only for a region aws-cdk-lib knows", () => {
    firstTextsSaid(placeSection, /every ARN must be in the region's partition \([^)]*, for a region aws-cdk-lib knows\)/);
    const [typo = ""] = firstTextsSaid(placeSection, /\(a typo such as `([a-z0-9-]+)`\)/);
    const topicIn = (partition: string, region: string) => ({ region, alarms: { topicArn: `arn:${partition}:sns:${region}:${TENANT_ACCOUNT}:ops` } });
    expect(entryRefusal(tenantEntry(topicIn("aws", "cn-north-1")))).toContain("field alarms.topicArn: must start with arn:aws-cn:");
    expect(entryRefusal(tenantEntry(topicIn("aws-cn", typo)))).toBeUndefined();
  });

  it("holds the bus to the tenant's account, the topic and secrets to its region, and another account's secret to its full ARN", () => {
    firstTextsSaid(placeSection, /the bus in the tenant's account and region, the alarm topic and webhook secrets in its region/);
    const [suffix = 0] = firstNumbersSaid(placeSection, /named by its full ARN, with the (\w+) characters Secrets Manager appends/);
    const elsewhere = "222222222222";
    expect(entryRefusal(tenantEntry({ eventBus: { mode: "import", arn: `arn:aws:events:${TENANT_REGION}:${elsewhere}:event-bus/finance` } }))).toContain("field eventBus.arn: must be in the tenant's account");
    expect(entryRefusal(tenantEntry({ alarms: { topicArn: `arn:aws:sns:${TENANT_REGION}:${elsewhere}:ops` } }))).toBeUndefined();
    expect(entryRefusal(tenantEntry({ alarms: { topicArn: `arn:aws:sns:eu-west-2:${TENANT_ACCOUNT}:ops` } }))).toContain("field alarms.topicArn: must be in the tenant's region");
    expect(entryRefusal(tenantEntry({ webhooks: [webhookEntry({ auth: apiKeyAuth(WEBHOOK_SECRET_ARN.replace(TENANT_REGION, "eu-west-2")) })] }))).toContain("must be in the tenant's region");
    const otherAccountSecret = (name: string) => tenantEntry({ webhooks: [webhookEntry({ auth: apiKeyAuth(`arn:aws:secretsmanager:${TENANT_REGION}:${elsewhere}:secret:${name}`) })] });
    expect(entryRefusal(otherAccountSecret(`acme/hooks-${"a".repeat(suffix)}`))).toBeUndefined();
    for (const name of ["acme/hooks", `acme/hooks-${"a".repeat(suffix - 1)}`]) {
      expect(entryRefusal(otherAccountSecret(name)), name).toContain("must be the secret's full ARN");
    }
  });
});

describe("docs/tenants-file.md, a bus one tenant's stack creates and another imports", () => {
  const [busName = "", owner = ""] = firstTextsSaid(sharedBusSection, /\(`"mode": "import", "name": "([a-z-]+-(<\w+>))"`\)/);
  const [stackName = ""] = firstTextsSaid(sharedBusSection, /deploy the owner first \(`cdk deploy ([\w-]+<\w+>)`\)/);

  it("names the owner's bus and stack as synth names them", () => {
    expect(busName).toBe(createdEventBusName(owner));
    expect(stackName).toBe(tenantStackName(owner));
  });

  it("refuses the importer on the owner's source, and takes it on one of its own, with no deploy-order link between the stacks", () => {
    const ownerTenant = { id: "owner", environment: "sandbox", alarms: { email: "ops@owner.test" } };
    const importer = (eventSource: string) => ({ ...ownerTenant, id: "importer", eventBus: { mode: "import", name: createdEventBusName("owner") }, eventSource });
    expect(() => parseTenantsDocument({ tenants: [ownerTenant, importer("qashio.bridge")] })).toThrow('tenant "importer": field eventSource:');
    const tenants = parseTenantsDocument({ tenants: [ownerTenant, importer("importer.qashio.bridge")] });
    const { stacks } = buildTestApp({ tenants });
    expect(stacks.map((stack) => stack.dependencies)).toEqual([[], []]);
  });
});

describe("docs/tenants-file.md, how synth names a mistake", () => {
  it("names only the first tenant whose environment URL is refused or not set", () => {
    const [count = 0] = firstNumbersSaid(namingSection, /so a synth names (\w+) tenant whose URL is refused or not set, the first/);
    const tenants = parseTenantsDocument({
      tenants: [
        { id: "fine", environment: "sandbox", alarms: { email: "ops@fine.test" } },
        { id: "refused", environment: "https://api.acme.example?x=1", eventSource: "refused.bridge", alarms: { email: "ops@refused.test" } },
        { id: "unset", environment: "eu", eventSource: "unset.bridge", alarms: { email: "ops@unset.test" } },
      ],
    });
    const message = thrown(() => buildTestApp({ tenants, providerUrls: { sandbox: "https://api.sandbox.example" } }), TenantConfigError).message;
    expect(message.match(/tenant "[^"]+"/g)).toHaveLength(count);
    expect(message).toMatch(/^tenant "refused": field environment:/);
  });
});

describe("docs/tenants-file.md, webhook and token URLs", () => {
  it("refuses https:/// whose host a URL parser reads as the one it gives, and a non-ASCII host but in its xn-- form", () => {
    const [url = "", host = ""] = firstTextsSaid(urlSection, /\(`(https:\/\/\/\w+)`, which URL parsers read as the host `(\w+)`, is refused\)/);
    expect(new URL(url).hostname).toBe(host);
    expect(entryRefusal(tenantEntry({ webhooks: [webhookEntry({ url })] }))).toContain("field webhooks[0].url:");
    firstTextsSaid(urlSection, /a non-ASCII host in its `(xn--)` form; an IPv6 literal host cannot be used/);
    const unicode = "https://bücher.example/hooks";
    expect(entryRefusal(tenantEntry({ webhooks: [webhookEntry({ url: unicode })] }))).toContain("field webhooks[0].url:");
    expect(entryRefusal(tenantEntry({ webhooks: [webhookEntry({ url: new URL(unicode).href })] }))).toBeUndefined();
    expect(entryRefusal(tenantEntry({ webhooks: [webhookEntry({ url: "https://[2001:db8::1]/hooks" })] }))).toContain("field webhooks[0].url:");
  });
});
