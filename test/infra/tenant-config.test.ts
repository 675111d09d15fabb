import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RegionInfo } from "aws-cdk-lib/region-info";
import { describe, expect, it } from "vitest";
import { TenantConfigError } from "../../infra/errors.js";
import { providerUrlsFrom, resolveProviderUrl } from "../../infra/provider-urls.js";
import { MAX_WEBHOOKS_PER_TENANT, parseTenantConfig } from "../../infra/tenant-config.js";
import { TENANT_DEFAULTS } from "../../infra/tenant-defaults.js";
import { parseTenantsDocument } from "../../infra/tenants-document.js";
import { loadTenantsFile } from "../../infra/tenants-file.js";
import { validTenantOf } from "../../shared/aws/config.js";
import { EXAMPLE_TENANTS_FILE } from "./helpers.js";
import { thrown } from "../thrown.js";

const minimal = { id: "acme", environment: "sandbox", alarms: { email: "ops@acme.test" } };
const secretArn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:hooks-AbCdEf";

describe("tenant config", () => {
  it("accepts the two-tenant example file", () => {
    const tenants = loadTenantsFile(EXAMPLE_TENANTS_FILE);
    expect(tenants.map((t) => t.id)).toEqual(["acme-sandbox", "globex"]);
    expect(tenants[0]?.webhooks).toHaveLength(2);
    expect(tenants[1]?.eventBus).toEqual({ mode: "import", name: "globex-finance" });
  });

  it("takes every region aws-cdk-lib knows (sovereign and government partitions included), and refuses a malformed one", () => {
    const refused = RegionInfo.regions.map((r) => r.name).filter((region) => {
      try {
        parseTenantConfig({ ...minimal, region });
        return false;
      } catch {
        return true;
      }
    });
    expect(refused).toEqual([]);
    expect(thrown(() => parseTenantConfig({ ...minimal, region: "eu_west_1" }), TenantConfigError).message).toContain("field region: must be an AWS region such as eu-west-1");
  });

  it("fills every optional field with its named default", () => {
    const tenant = parseTenantConfig(minimal);
    expect(tenant).toMatchObject({
      eventSource: TENANT_DEFAULTS.eventSource,
      piiMode: TENANT_DEFAULTS.piiMode,
      emitCardCreated: false,
      cardDetails: false,
      eventBus: { mode: "create" },
      schedules: { enabled: true, transactionsEveryMinutes: 5, cardsEveryMinutes: 15 },
      archiveRetentionDays: 30,
      alarms: { syncLagThresholdSeconds: 1800 },
      webhooks: [],
    });
  });

  it.each([
    ["an unknown environment", { ...minimal, environment: "staging" }, "environment", "production, eu, sandbox or an https:// URL"],
    ["a plain-http environment URL", { ...minimal, environment: "http://provider.test" }, "environment", "https"],
    ["a zero schedule rate", { ...minimal, schedules: { cardsEveryMinutes: 0 } }, "schedules.cardsEveryMinutes", ">=1"],
    ["a misspelt field", { ...minimal, schedule: {} }, "schedule", "Unrecognized key"],
    ["schedules enabled given as a string", { ...minimal, schedules: { enabled: "false" } }, "schedules.enabled", "must be true or false"],
    ["both alarm targets", { ...minimal, alarms: { email: "a@b.test", topicArn: "arn:aws:sns:eu-west-1:123456789012:t" } }, "alarms", "exactly one"],
    ["an unknown PII mode", { ...minimal, piiMode: "mask" }, "piiMode", "Invalid option"],
    ["an alarm email whose domain has a label ending in a dash", { ...minimal, alarms: { email: "ops@acme-.test" } }, "alarms.email", "Invalid email address"],
    ["an imported bus with neither name nor ARN", { ...minimal, eventBus: { mode: "import" } }, "eventBus", "mode"],
    // Misspelt, the key is what to fix: naming only the forms left the reader to spot it.
    ["an imported bus whose name key is misspelt", { ...minimal, eventBus: { mode: "import", nmae: "globex-finance" } }, "eventBus", '"nmae" is not a field of eventBus'],
    ["an imported bus given two keys of no form", { ...minimal, eventBus: { mode: "import", arm: "x", Name: "y" } }, "eventBus", '"arm", "Name" are not fields of eventBus'],
    [
      "a webhook with an unknown event type",
      { ...minimal, webhooks: [{ name: "erp", url: "https://erp.test/h", eventTypes: ["card.deleted"], auth: { type: "basic", username: "u", password: { secretArn } } }] },
      "webhooks[0].eventTypes[0]",
      "card.created",
    ],
    [
      "a webhook secret given as a literal instead of a secret ARN",
      { ...minimal, webhooks: [{ name: "erp", url: "https://erp.test/h", eventTypes: ["card.created"], auth: { type: "apiKey", headerName: "x-api-key", value: "s3cr3t" } }] },
      "webhooks[0].auth.value",
      "",
    ],
    [
      "a secret ARN with characters a secret name cannot have",
      { ...minimal, webhooks: [{ name: "erp", url: "https://erp.test/h", eventTypes: ["card.created"], auth: { type: "basic", username: "u", password: { secretArn: `${secretArn} y}}` } } }] },
      "webhooks[0].auth.password.secretArn",
      "must be a Secrets Manager secret ARN",
    ],
    [
      "a secret JSON key with a colon",
      { ...minimal, webhooks: [{ name: "erp", url: "https://erp.test/h", eventTypes: ["card.created"], auth: { type: "basic", username: "u", password: { secretArn, jsonField: "a:b" } } }] },
      "webhooks[0].auth.password.jsonField",
      "must not contain ':'",
    ],
    [
      "a header name with a line break",
      { ...minimal, webhooks: [{ name: "erp", url: "https://erp.test/h", eventTypes: ["card.created"], auth: { type: "apiKey", headerName: "bad header\nx", value: { secretArn } } }] },
      "webhooks[0].auth.headerName",
      "must be an HTTP header name",
    ],
    [
      "a webhook URL carrying credentials",
      { ...minimal, webhooks: [{ name: "erp", url: "https://user:pw@erp.test/h", eventTypes: ["card.created"], auth: { type: "basic", username: "u", password: { secretArn } } }] },
      "webhooks[0].url",
      "must not carry credentials",
    ],
    [
      // A WHATWG parser takes the path's first segment for the host (https://hooks/): the template would hold a URL
      // with no host, and behind the extra slash credentials the check above does not see.
      "a webhook URL without a host (https:///...)",
      { ...minimal, webhooks: [{ name: "erp", url: "https:///hooks", eventTypes: ["card.created"], auth: { type: "basic", username: "u", password: { secretArn } } }] },
      "webhooks[0].url",
      "must name a host right after https://",
    ],
    [
      "a webhook URL hiding credentials behind a third slash",
      { ...minimal, webhooks: [{ name: "erp", url: "https:///user:pw@erp.test/h", eventTypes: ["card.created"], auth: { type: "basic", username: "u", password: { secretArn } } }] },
      "webhooks[0].url",
      "must name a host right after https://",
    ],
    [
      "an OAuth token URL without a host",
      {
        ...minimal,
        webhooks: [{ name: "erp", url: "https://erp.test/h", eventTypes: ["card.created"], auth: { type: "oauthClientCredentials", tokenUrl: "https:///token", clientId: "c", clientSecret: { secretArn } } }],
      },
      "webhooks[0].auth.tokenUrl",
      "must name a host right after https://",
    ],
    [
      "an imported bus in another account than the tenant's",
      { ...minimal, account: "111122223333", region: "eu-west-1", eventBus: { mode: "import", arn: "arn:aws:events:eu-west-1:999999999999:event-bus/shared" } },
      "eventBus.arn",
      "must be in the tenant's account",
    ],
    [
      "an alarm topic in another region than the tenant's",
      { ...minimal, account: "123456789012", region: "eu-west-1", alarms: { topicArn: "arn:aws:sns:us-east-1:123456789012:ops" } },
      "alarms.topicArn",
      "must be in the tenant's region",
    ],
    [
      "an alarm topic ARN without the tenant's region",
      { ...minimal, alarms: { topicArn: "arn:aws:sns:eu-west-1:123456789012:ops" } },
      "region",
      "is required when an ARN is configured (alarms.topicArn)",
    ],
    [
      "an imported bus ARN without the tenant's account",
      { ...minimal, region: "eu-west-1", eventBus: { mode: "import", arn: "arn:aws:events:eu-west-1:123456789012:event-bus/shared" } },
      "account",
      "is required when an ARN is configured (eventBus.arn)",
    ],
    [
      "a webhook secret without the tenant's region and account",
      { ...minimal, webhooks: [{ name: "erp", url: "https://erp.test/h", eventTypes: ["card.created"], auth: { type: "basic", username: "u", password: { secretArn } } }] },
      "region",
      "is required when an ARN is configured (webhooks[0].auth.password.secretArn)",
    ],
    [
      "a webhook secret in another region than the tenant's",
      {
        ...minimal,
        account: "123456789012",
        region: "us-east-1",
        webhooks: [{ name: "erp", url: "https://erp.test/h", eventTypes: ["card.created"], auth: { type: "apiKey", headerName: "x-api-key", value: { secretArn } } }],
      },
      "webhooks[0].auth.value.secretArn",
      "must be in the tenant's region",
    ],
  ])("rejects %s, naming the tenant and the field", (_what, raw, field, message) => {
    const error = thrown(() => parseTenantConfig(raw, 3), TenantConfigError);
    expect(error.tenant).toBe("acme");
    expect(error.field).toBe(field);
    expect(error.message).toContain(`tenant "acme": field ${field}`);
    expect(error.message).toContain(message);
  });

  it("accepts an imported bus and an alarm topic in the tenant's own account and region", () => {
    const tenant = parseTenantConfig({
      ...minimal,
      account: "123456789012",
      region: "eu-west-1",
      eventBus: { mode: "import", arn: "arn:aws:events:eu-west-1:123456789012:event-bus/shared" },
      alarms: { topicArn: "arn:aws:sns:eu-west-1:210987654321:ops" },
    });
    expect(tenant.eventBus).toEqual({ mode: "import", arn: "arn:aws:events:eu-west-1:123456789012:event-bus/shared" });
  });

  it("takes an alarm topic name of SNS's 256 characters at most, and refuses a longer one, which names no topic", () => {
    const pinned = { ...minimal, account: "123456789012", region: "eu-west-1" };
    const topicArn = (name: string) => `arn:aws:sns:eu-west-1:123456789012:${name}`;
    expect(parseTenantConfig({ ...pinned, alarms: { topicArn: topicArn("t".repeat(256)) } }).alarms.topicArn).toBe(topicArn("t".repeat(256)));
    expect(thrown(() => parseTenantConfig({ ...pinned, alarms: { topicArn: topicArn("t".repeat(257)) } }), TenantConfigError).message).toBe(
      'tenant "acme": field alarms.topicArn: must be an SNS topic ARN',
    );
  });

  it("deploys a tenant's schedules disabled when asked, keeping their rates", () => {
    expect(parseTenantConfig({ ...minimal, schedules: { enabled: false, cardsEveryMinutes: 30 } }).schedules).toEqual({
      enabled: false,
      transactionsEveryMinutes: 5,
      cardsEveryMinutes: 30,
    });
  });

  it("takes an optional suspended-only card schedule, absent unless set, faster than the full walk", () => {
    expect(parseTenantConfig(minimal).schedules).not.toHaveProperty("suspendedCardsEveryMinutes");
    expect(parseTenantConfig({ ...minimal, schedules: { cardsEveryMinutes: 15, suspendedCardsEveryMinutes: 2 } }).schedules).toEqual({
      enabled: true,
      transactionsEveryMinutes: 5,
      cardsEveryMinutes: 15,
      suspendedCardsEveryMinutes: 2,
    });
    // checked against the default cards schedule (15) when cardsEveryMinutes is not given
    expect(parseTenantConfig({ ...minimal, schedules: { suspendedCardsEveryMinutes: 14 } }).schedules.suspendedCardsEveryMinutes).toBe(14);
  });

  it.each([
    [{ cardsEveryMinutes: 15, suspendedCardsEveryMinutes: 15 }, 15],
    [{ cardsEveryMinutes: 10, suspendedCardsEveryMinutes: 30 }, 10],
    [{ suspendedCardsEveryMinutes: 20 }, 15],
  ])("refuses a suspended-only card schedule not faster than the full walk (%o)", (schedules, cards) => {
    const error = thrown(() => parseTenantConfig({ ...minimal, schedules }), TenantConfigError);
    expect(error.field).toBe("schedules.suspendedCardsEveryMinutes");
    expect(error.message).toBe(
      `tenant "acme": field schedules.suspendedCardsEveryMinutes: must be less than cardsEveryMinutes (${cards}): the fast path runs ` +
        "between full walks, and a full walk already reads every suspended card; leave it out for no fast path",
    );
  });

  it("refuses a suspended-only card schedule that is no whole number of minutes from 1 to 1440", () => {
    expect(thrown(() => parseTenantConfig({ ...minimal, schedules: { suspendedCardsEveryMinutes: 1.5 } }), TenantConfigError).message).toBe(
      'tenant "acme": field schedules.suspendedCardsEveryMinutes: must be a whole number of minutes',
    );
    expect(thrown(() => parseTenantConfig({ ...minimal, schedules: { suspendedCardsEveryMinutes: "2" } }), TenantConfigError).message).toBe(
      'tenant "acme": field schedules.suspendedCardsEveryMinutes: must be a number of minutes',
    );
    expect(thrown(() => parseTenantConfig({ ...minimal, schedules: { suspendedCardsEveryMinutes: 0 } }), TenantConfigError).field).toBe("schedules.suspendedCardsEveryMinutes");
  });

  it("accepts a webhook secret of another account in the tenant's region (dynamic references take a full ARN)", () => {
    const tenant = parseTenantConfig({
      ...minimal,
      account: "210987654321",
      region: "eu-west-1",
      webhooks: [{ name: "erp", url: "https://erp.test/h", eventTypes: ["card.created"], auth: { type: "oauthClientCredentials", tokenUrl: "https://auth.test/t", clientId: "c", clientSecret: { secretArn } } }],
    });
    expect(tenant.webhooks).toHaveLength(1);
  });

  it("refuses a partial ARN (no six-character suffix) for a webhook secret of another account, and takes one in the tenant's own", () => {
    const partial = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:globex/erp-hook";
    const hookWith = (arn: string) => [{ name: "erp", url: "https://erp.test/h", eventTypes: ["card.created"], auth: { type: "basic", username: "u", password: { secretArn: arn } } }];
    const error = thrown(() => parseTenantConfig({ ...minimal, account: "210987654321", region: "eu-west-1", webhooks: hookWith(partial) }), TenantConfigError);
    expect(error.field).toBe("webhooks[0].auth.password.secretArn");
    expect(error.message).toContain("must be the secret's full ARN");
    expect(parseTenantConfig({ ...minimal, account: "123456789012", region: "eu-west-1", webhooks: hookWith(partial) }).webhooks).toHaveLength(1);
  });

  it("refuses an ARN of another partition than the tenant's region (arn:aws: in China), which only the deploy would find", () => {
    const china = { ...minimal, account: "123456789012", region: "cn-north-1" };
    const error = thrown(() => parseTenantConfig({ ...china, alarms: { topicArn: "arn:aws:sns:cn-north-1:123456789012:ops" } }), TenantConfigError);
    expect(error.field).toBe("alarms.topicArn");
    expect(error.message).toContain("field alarms.topicArn: must start with arn:aws-cn: (the partition of cn-north-1)");
    const bus = thrown(() => parseTenantConfig({ ...china, eventBus: { mode: "import", arn: "arn:aws:events:cn-north-1:123456789012:event-bus/shared" } }), TenantConfigError);
    expect(bus.field).toBe("eventBus.arn");
    expect(parseTenantConfig({ ...china, alarms: { topicArn: "arn:aws-cn:sns:cn-north-1:123456789012:ops" } }).alarms.topicArn).toBe(
      "arn:aws-cn:sns:cn-north-1:123456789012:ops",
    );
    // A region newer than aws-cdk-lib has no known partition: its ARNs are taken as written.
    expect(parseTenantConfig({ ...minimal, account: "123456789012", region: "xx-new-1", alarms: { topicArn: "arn:aws-xx:sns:xx-new-1:123456789012:ops" } })).toBeDefined();
  });

  it("keeps a tenant without any ARN environment-agnostic: account and region stay optional", () => {
    expect(parseTenantConfig(minimal)).not.toHaveProperty("region");
    expect(parseTenantConfig({ ...minimal, region: "eu-west-1" }).region).toBe("eu-west-1");
  });

  it("reports a misspelt key before the required field it was meant to be", () => {
    const { environment, ...rest } = minimal;
    const error = thrown(() => parseTenantConfig({ ...rest, enviroment: environment }), TenantConfigError);
    expect(error.field).toBe("enviroment");
    expect(error.message).toContain('tenant "acme": field enviroment: Unrecognized key');
  });

  it("lists every field at fault in a tenant, the misspelt key first, so one run shows every field's own faults", () => {
    const { environment, ...rest } = minimal;
    const error = thrown(() => parseTenantConfig({ ...rest, enviroment: environment, alarms: { email: "ops@acme.test", topicArn: "arn:aws:sns:eu-west-1:123456789012:ops" } }), TenantConfigError);
    expect(error.message).toMatch(/^tenant "acme": field enviroment: Unrecognized key.*; field environment: .*; field alarms: set exactly one of email or topicArn/);
    expect(error.message).not.toContain("more issue");
  });

  it("names a misspelt key of the tenants file itself, not a missing tenants list", () => {
    expect(thrown(() => parseTenantsDocument({ tenant: [minimal] }), TenantConfigError).message).toBe(
      'tenants file: field tenant: is not a field of the tenants file, which holds "tenants" (and "$schema")',
    );
    expect(thrown(() => parseTenantsDocument({ tenants: minimal }), TenantConfigError).message).toBe("tenants file: field tenants: must list the tenants (an array)");
  });

  it.each([
    ["localhost", "https://localhost/hooks", '"localhost" is a loopback name'],
    ["a name under localhost, with a port", "https://erp.localhost:8443/hooks", '"erp.localhost" is a loopback name'],
    ["a loopback address", "https://127.0.0.1/hooks", '"127.0.0.1" is a loopback, private or link-local address'],
    ["a loopback address written as one number", "https://2130706433/hooks", '"127.0.0.1" is a loopback, private or link-local address'],
    ["a loopback address in hex and short form", "https://0x7f.1/hooks", '"127.0.0.1" is a loopback, private or link-local address'],
    ["a loopback address in octal, one number", "https://017700000001/hooks", '"127.0.0.1" is a loopback, private or link-local address'],
    ["a 10/8 address", "https://10.1.2.3/hooks", '"10.1.2.3" is a loopback, private or link-local address'],
    ["a 172.16/12 address", "https://172.31.255.1/hooks", '"172.31.255.1" is a loopback, private or link-local address'],
    ["a 192.168/16 address", "https://192.168.0.10/hooks", '"192.168.0.10" is a loopback, private or link-local address'],
    ["the top of 192.168/16", "https://192.168.255.254/hooks", '"192.168.255.254" is a loopback, private or link-local address'],
    ["a link-local address (instance metadata)", "https://169.254.169.254/latest", '"169.254.169.254" is a loopback, private or link-local address'],
    ["a shared (RFC 6598, carrier-grade NAT) address", "https://100.127.0.1/hooks", '"100.127.0.1" is a loopback, private or link-local address'],
    ["a \"this network\" address", "https://0.1.2.3/hooks", '"0.1.2.3" is a loopback, private or link-local address'],
    ["a reserved (240/4) address", "https://240.0.0.1/hooks", '"240.0.0.1" is a multicast, reserved or broadcast address'],
    ["an .internal host", "https://erp.corp.internal/hooks", '"erp.corp.internal" is a name of a private network (.internal)'],
    ["the bare name internal", "https://internal/hooks", '"internal" is a name of a private network (.internal)'],
    ["a .local host, in capitals and with a trailing dot", "https://ERP.Local./hooks", '"erp.local." is a name of a private network (.local)'],
    ["a home.arpa host (RFC 8375)", "https://erp.home.arpa/hooks", '"erp.home.arpa" is a name of a private network (.home.arpa)'],
    ["a multicast address", "https://224.0.0.251/hooks", '"224.0.0.251" is a multicast, reserved or broadcast address'],
    ["the broadcast address", "https://255.255.255.255/hooks", '"255.255.255.255" is a multicast, reserved or broadcast address'],
  ])("refuses a webhook URL EventBridge cannot reach from the public internet (%s), naming the tenant, the webhook and the host", (_what, url, why) => {
    const hook = { name: "erp", url, eventTypes: ["card.created"], auth: { type: "basic", username: "u", password: { secretArn } } };
    const error = thrown(() => parseTenantConfig({ ...minimal, account: "123456789012", region: "eu-west-1", webhooks: [hook] }), TenantConfigError);
    expect(error.tenant).toBe("acme");
    expect(error.field).toBe("webhooks[0].url");
    expect(error.message).toBe(
      `tenant "acme": field webhooks[0].url: must be reachable from the public internet: ${why}, which EventBridge cannot ` +
        "deliver to (an API destination takes a public domain name, and this stack's connections are public ones; AWS " +
        'EventBridge User Guide, "API destinations as targets"): every event would go to the webhook\'s dead-letter queue',
    );
  });

  it.each([
    ["localhost", "https://localhost:8443/token", '"localhost" is a loopback name'],
    ["a private address", "https://10.0.0.5/oauth/token", '"10.0.0.5" is a loopback, private or link-local address'],
    ["an .internal host", "https://sso.corp.internal/token", '"sso.corp.internal" is a name of a private network (.internal)'],
  ])("refuses an OAuth token URL EventBridge cannot reach from the public internet (%s), as for the webhook URL", (_what, tokenUrl, why) => {
    const auth = { type: "oauthClientCredentials", tokenUrl, clientId: "c", clientSecret: { secretArn } };
    const hook = { name: "erp", url: "https://erp.test/h", eventTypes: ["card.created"], auth };
    const error = thrown(() => parseTenantConfig({ ...minimal, account: "123456789012", region: "eu-west-1", webhooks: [hook] }), TenantConfigError);
    expect(error.field).toBe("webhooks[0].auth.tokenUrl");
    expect(error.message).toBe(
      `tenant "acme": field webhooks[0].auth.tokenUrl: must be reachable from the public internet: ${why}, which EventBridge ` +
        "cannot fetch a token from (this stack's connections take a public OAuth endpoint, a private one needing a VPC Lattice " +
        'resource configuration; AWS EventBridge User Guide, "Authorization methods for connections"): without a token every ' +
        "event would go to the webhook's dead-letter queue",
    );
  });

  it.each([
    ["a public name that begins like a private one", "https://localhost.example.com/hooks"],
    ["a public name holding .local inside", "https://hooks.local.example.com/h"],
    ["a public address next to 172.16/12", "https://172.32.0.1/hooks"],
    ["a public address next to 100.64/10", "https://100.128.0.1/hooks"],
    ["a public address", "https://8.8.8.8/hooks"],
    ["a public address below 224/4", "https://223.255.255.1/hooks"],
    ["a public name ending like home.arpa", "https://myhome.arpa.example.com/hooks"],
  ])("accepts a webhook URL on a public host (%s)", (_what, url) => {
    const hook = { name: "erp", url, eventTypes: ["card.created"], auth: { type: "basic", username: "u", password: { secretArn } } };
    expect(parseTenantConfig({ ...minimal, account: "123456789012", region: "eu-west-1", webhooks: [hook] }).webhooks[0]?.url).toBe(url);
  });

  it.each([
    ["a #fragment", "https://erp.test/h#frag"],
    ["brackets in the query", "https://erp.test/h?a=[1]"],
    ["a non-ASCII host", "https://bücher.example/h"],
    ["a pipe", "https://erp.test/h|x"],
    ["2049 characters, one more than EventBridge takes", `https://erp.test/${"a".repeat(2049 - "https://erp.test/".length)}`],
  ])("refuses a webhook URL EventBridge would refuse at deploy (%s), and the same for an OAuth token URL", (_what, url) => {
    const pinned = { ...minimal, account: "123456789012", region: "eu-west-1" };
    const basic = { type: "basic", username: "u", password: { secretArn } };
    const hook = { name: "erp", url, eventTypes: ["card.created"], auth: basic };
    expect(thrown(() => parseTenantConfig({ ...pinned, webhooks: [hook] }), TenantConfigError).message).toMatch(
      /^tenant "acme": field webhooks\[0\]\.url: must (hold only ASCII letters, digits and .*EventBridge refuses other URLs at deploy|be at most 2048 characters)/,
    );
    const oauth = { type: "oauthClientCredentials", tokenUrl: url, clientId: "c", clientSecret: { secretArn } };
    expect(thrown(() => parseTenantConfig({ ...pinned, webhooks: [{ ...hook, url: "https://erp.test/h", auth: oauth }] }), TenantConfigError).field).toBe("webhooks[0].auth.tokenUrl");
    expect(parseTenantConfig({ ...pinned, webhooks: [{ ...hook, url: "https://erp.test/h?a=%5B1%5D&b=x,y" }] }).webhooks[0]?.url).toBe("https://erp.test/h?a=%5B1%5D&b=x,y");
  });

  it.each([
    ["a basic user name with a colon", { type: "basic", username: "svc:bridge", password: { secretArn } }, "webhooks[0].auth.username", "must not contain ':'"],
    ["a basic user name with a line break", { type: "basic", username: "svc\nbridge", password: { secretArn } }, "webhooks[0].auth.username", "must not contain ':'"],
    ["a basic user name over 512 characters", { type: "basic", username: "u".repeat(513), password: { secretArn } }, "webhooks[0].auth.username", "at most 512"],
    // EventBridge's own pattern backtracks exponentially on this one: synth must fail, not hang.
    ["a basic user name of many words ending in a colon", { type: "basic", username: `${"svc ".repeat(60)}:`, password: { secretArn } }, "webhooks[0].auth.username", "must not contain ':'"],
    ["a basic user name of tabs only", { type: "basic", username: "\t\t", password: { secretArn } }, "webhooks[0].auth.username", "must not be blank"],
    [
      "an OAuth client id with a colon",
      { type: "oauthClientCredentials", tokenUrl: "https://auth.test/token", clientId: "urn:client", clientSecret: { secretArn } },
      "webhooks[0].auth.clientId",
      "must not contain ':'",
    ],
    ["an API key header name over 512 characters", { type: "apiKey", headerName: "x".repeat(513), value: { secretArn } }, "webhooks[0].auth.headerName", "at most 512"],
    // A body parameter of the connection: CloudFormation's Parameter value takes at most 512 characters, no control character but line breaks.
    [
      "an OAuth scope over 512 characters",
      { type: "oauthClientCredentials", tokenUrl: "https://auth.test/token", clientId: "c", clientSecret: { secretArn }, scope: "s".repeat(513) },
      "webhooks[0].auth.scope",
      "at most 512",
    ],
    [
      "an OAuth scope with a tab",
      { type: "oauthClientCredentials", tokenUrl: "https://auth.test/token", clientId: "c", clientSecret: { secretArn }, scope: "events:write\tevents:read" },
      "webhooks[0].auth.scope",
      "must be scope tokens",
    ],
  ])("refuses a connection parameter EventBridge would refuse at deploy: %s", (_what, auth, field, message) => {
    const pinned = { ...minimal, account: "123456789012", region: "eu-west-1" };
    const error = thrown(() => parseTenantConfig({ ...pinned, webhooks: [{ name: "erp", url: "https://erp.test/h", eventTypes: ["card.created"], auth }] }), TenantConfigError);
    expect(error.field).toBe(field);
    expect(error.message).toContain(message);
  });

  it.each([
    ["a basic user name", { type: "basic", username: "   ", password: { secretArn } }, "webhooks[0].auth.username"],
    ["an OAuth client id", { type: "oauthClientCredentials", tokenUrl: "https://auth.test/token", clientId: " \t ", clientSecret: { secretArn } }, "webhooks[0].auth.clientId"],
    ["an OAuth scope", { type: "oauthClientCredentials", tokenUrl: "https://auth.test/token", clientId: "c", clientSecret: { secretArn }, scope: "  " }, "webhooks[0].auth.scope"],
    ["a secret's JSON key", { type: "apiKey", headerName: "x-api-key", value: { secretArn, jsonField: " " } }, "webhooks[0].auth.value.jsonField"],
    ["a secret's JSON key, empty", { type: "basic", username: "u", password: { secretArn, jsonField: "" } }, "webhooks[0].auth.password.jsonField"],
    ["a basic user name of no-break spaces", { type: "basic", username: "\u00a0\u00a0", password: { secretArn } }, "webhooks[0].auth.username"],
  ])("refuses a blank value EventBridge would take but is surely a mistake: %s, naming the tenant and the field", (_what, auth, field) => {
    const pinned = { ...minimal, account: "123456789012", region: "eu-west-1" };
    const error = thrown(() => parseTenantConfig({ ...pinned, webhooks: [{ name: "erp", url: "https://erp.test/h", eventTypes: ["card.created"], auth }] }), TenantConfigError);
    expect(error.field).toBe(field);
    expect(error.message).toBe(`tenant "acme": field ${field}: must not be blank`);
  });

  it.each([
    ["a basic user name with a trailing space", { type: "basic", username: "svc ", password: { secretArn } }, "webhooks[0].auth.username"],
    ["a basic user name led by a tab", { type: "basic", username: "\tsvc", password: { secretArn } }, "webhooks[0].auth.username"],
    ["an OAuth client id with a leading space", { type: "oauthClientCredentials", tokenUrl: "https://auth.test/token", clientId: " client-1", clientSecret: { secretArn } }, "webhooks[0].auth.clientId"],
    ["a secret's JSON key with a trailing space", { type: "apiKey", headerName: "x-api-key", value: { secretArn, jsonField: "api_key " } }, "webhooks[0].auth.value.jsonField"],
  ])("refuses a name pasted with white space around it: %s, naming the field", (_what, auth, field) => {
    const pinned = { ...minimal, account: "123456789012", region: "eu-west-1" };
    const error = thrown(() => parseTenantConfig({ ...pinned, webhooks: [{ name: "erp", url: "https://erp.test/h", eventTypes: ["card.created"], auth }] }), TenantConfigError);
    expect(error.field).toBe(field);
    expect(error.message).toBe(`tenant "acme": field ${field}: must not start or end with white space`);
  });

  it.each([
    ["a line break", "events:write\nevents:read"],
    ["a leading space", " events:write"],
    ["two spaces between tokens", "events:write  events:read"],
    ["a non-ASCII character", "événements"],
    ["a double quote", 'events:"write"'],
    ["a backslash", "events\\write"],
  ])("refuses an OAuth scope outside RFC 6749's grammar, which EventBridge would send as it is: %s", (_what, scope) => {
    const pinned = { ...minimal, account: "123456789012", region: "eu-west-1" };
    const auth = { type: "oauthClientCredentials", tokenUrl: "https://auth.test/token", clientId: "c", clientSecret: { secretArn }, scope };
    const error = thrown(() => parseTenantConfig({ ...pinned, webhooks: [{ name: "erp", url: "https://erp.test/h", eventTypes: ["card.created"], auth }] }), TenantConfigError);
    expect(error.message).toBe(
      'tenant "acme": field webhooks[0].auth.scope: must be scope tokens separated by single spaces, each of printable ASCII ' +
        "characters but '\"' and '\\' (RFC 6749, section 3.3)",
    );
  });

  it.each([
    ["in curly quotes pasted from a document", "\u201cqashio-bridge\u201d"],
    ["with a non-ASCII letter", "qashio-brïdge"],
    ["with a tab", "qashio\tbridge"],
  ])("refuses an OAuth client id outside RFC 6749's printable ASCII, which EventBridge would send as it is: %s", (_what, clientId) => {
    const pinned = { ...minimal, account: "123456789012", region: "eu-west-1" };
    const auth = { type: "oauthClientCredentials", tokenUrl: "https://auth.test/token", clientId, clientSecret: { secretArn } };
    const error = thrown(() => parseTenantConfig({ ...pinned, webhooks: [{ name: "erp", url: "https://erp.test/h", eventTypes: ["card.created"], auth }] }), TenantConfigError);
    expect(error.message).toBe('tenant "acme": field webhooks[0].auth.clientId: must be printable ASCII characters (RFC 6749, appendix A.1)');
  });

  it("takes an OAuth scope of several tokens, URLs among them", () => {
    const pinned = { ...minimal, account: "123456789012", region: "eu-west-1" };
    const scope = "events:write https://api.acme.test/webhooks.read openid";
    const auth = { type: "oauthClientCredentials", tokenUrl: "https://auth.test/token", clientId: "c", clientSecret: { secretArn }, scope };
    expect(parseTenantConfig({ ...pinned, webhooks: [{ name: "erp", url: "https://erp.test/h", eventTypes: ["card.created"], auth }] }).webhooks[0]?.auth).toMatchObject({ scope });
  });

  it.each([
    ["no URL at all", "erp.test/hooks"],
    ["a plain-http URL", "http://erp.test/hooks"],
  ])("reports a webhook URL or OAuth token URL that is %s once, as not an https:// URL (the checks after that one stop)", (_what, url) => {
    const pinned = { ...minimal, account: "123456789012", region: "eu-west-1" };
    const basic = { type: "basic", username: "u", password: { secretArn } };
    const hook = { name: "erp", url, eventTypes: ["card.created"], auth: basic };
    expect(thrown(() => parseTenantConfig({ ...pinned, webhooks: [hook] }), TenantConfigError).message).toBe('tenant "acme": field webhooks[0].url: must be an https:// URL');
    const oauth = { type: "oauthClientCredentials", tokenUrl: url, clientId: "c", clientSecret: { secretArn } };
    expect(thrown(() => parseTenantConfig({ ...pinned, webhooks: [{ ...hook, url: "https://erp.test/h", auth: oauth }] }), TenantConfigError).message).toBe(
      'tenant "acme": field webhooks[0].auth.tokenUrl: must be an https:// URL',
    );
  });

  it("takes a connection parameter EventBridge accepts: spaces, punctuation other than ':', 512 characters", () => {
    const pinned = { ...minimal, account: "123456789012", region: "eu-west-1" };
    for (const username of ["svc bridge", "svc@acme.example", "u".repeat(512), "svc\tbridge"]) {
      const hook = { name: "erp", url: "https://erp.test/h", eventTypes: ["card.created"], auth: { type: "basic", username, password: { secretArn } } };
      expect(parseTenantConfig({ ...pinned, webhooks: [hook] }).webhooks[0]?.auth).toMatchObject({ username });
    }
  });

  it("takes an event source with capitals as EventBridge does, and refuses a '/', which the registry's schema names (<source>@<type>) take not", () => {
    expect(parseTenantConfig({ ...minimal, eventSource: "Acme.Finance" }).eventSource).toBe("Acme.Finance");
    expect(thrown(() => parseTenantConfig({ ...minimal, eventSource: "acme/finance" }), TenantConfigError).message).toContain("field eventSource: must be an EventBridge source such as qashio.bridge");
  });

  it("refuses a webhook listing an event type twice, and a schedule that is not a whole number of minutes", () => {
    const pinned = { ...minimal, account: "123456789012", region: "eu-west-1" };
    const hook = { name: "erp", url: "https://erp.test/h", eventTypes: ["card.created", "card.created"], auth: { type: "basic", username: "u", password: { secretArn } } };
    expect(thrown(() => parseTenantConfig({ ...pinned, webhooks: [hook] }), TenantConfigError).message).toBe('tenant "acme": field webhooks[0].eventTypes: must not list an event type twice');
    expect(thrown(() => parseTenantConfig({ ...minimal, schedules: { transactionsEveryMinutes: 1.5 } }), TenantConfigError).message).toBe(
      'tenant "acme": field schedules.transactionsEveryMinutes: must be a whole number of minutes',
    );
    expect(thrown(() => parseTenantConfig({ ...minimal, schedules: { cardsEveryMinutes: "5m" } }), TenantConfigError).message).toBe(
      'tenant "acme": field schedules.cardsEveryMinutes: must be a number of minutes',
    );
  });

  it("refuses a SyncLag threshold no longer than the transactions schedule, which every cycle of a busy tenant would breach", () => {
    // Each cycle publishes changes made since the last one, up to one schedule old: a 60-minute schedule under the
    // default 1800 s threshold would keep SyncLag in alarm while nothing is late.
    expect(thrown(() => parseTenantConfig({ ...minimal, schedules: { transactionsEveryMinutes: 60 } }), TenantConfigError).message).toBe(
      'tenant "acme": field alarms.syncLagThresholdSeconds: must be more than the transactions schedule (3600 s): ' +
        "each cycle publishes changes up to one schedule old, so SyncLag would stay in alarm; set it above 3600, with room for a cycle's own duration",
    );
    expect(thrown(() => parseTenantConfig({ ...minimal, schedules: { transactionsEveryMinutes: 30 } }), TenantConfigError).field).toBe("alarms.syncLagThresholdSeconds");
    expect(parseTenantConfig({ ...minimal, schedules: { transactionsEveryMinutes: 60 }, alarms: { ...minimal.alarms, syncLagThresholdSeconds: 7200 } }).alarms)
      .toMatchObject({ syncLagThresholdSeconds: 7200 });
    expect(parseTenantConfig({ ...minimal, schedules: { transactionsEveryMinutes: 29 } }).alarms.syncLagThresholdSeconds).toBe(1800);
  });

  it("refuses two tenants importing one bus with one source (either could publish as the other), naming both", () => {
    const shared = { eventBus: { mode: "import", name: "shared" } };
    const byArn = { account: "123456789012", region: "eu-west-1", eventBus: { mode: "import", arn: "arn:aws:events:eu-west-1:123456789012:event-bus/shared" } };
    expect(thrown(() => parseTenantsDocument({ tenants: [{ ...minimal, ...shared }, { ...minimal, ...shared, id: "globex" }] }), TenantConfigError).message).toBe(
      'tenant "globex": field eventSource: "qashio.bridge" is also the source of tenant "acme" on what may be the same event bus: give each tenant on a shared bus a source of its own (or pin account and region where they differ)',
    );
    const pinnedByName = { account: "123456789012", region: "eu-west-1", ...shared };
    expect(thrown(() => parseTenantsDocument({ tenants: [{ ...minimal, ...byArn }, { ...minimal, ...pinnedByName, id: "globex" }] }), TenantConfigError).field).toBe("eventSource");
    // An unpinned account or region is wherever the shell deploys: it may be a pinned tenant's, so this may be one bus.
    expect(thrown(() => parseTenantsDocument({ tenants: [{ ...minimal, ...byArn }, { ...minimal, ...shared, id: "globex" }] }), TenantConfigError).field).toBe("eventSource");
    expect(thrown(() => parseTenantsDocument({ tenants: [minimal, { ...minimal, id: "globex", eventBus: { mode: "import", name: "qashio-bridge-acme" } }] }), TenantConfigError).message).toMatch(
      /^tenant "globex": field eventSource: "qashio.bridge" is also the source of tenant "acme" on what may be the same event bus/,
    );
    // Pinned apart, sources of their own, or buses of their own are fine.
    const otherRegion = { account: "123456789012", region: "eu-central-1", ...shared };
    expect(parseTenantsDocument({ tenants: [{ ...minimal, ...pinnedByName }, { ...minimal, ...otherRegion, id: "globex" }] })).toHaveLength(2);
    expect(parseTenantsDocument({ tenants: [{ ...minimal, ...shared }, { ...minimal, ...shared, id: "globex", eventSource: "globex.qashio.bridge" }] })).toHaveLength(2);
    expect(parseTenantsDocument({ tenants: [minimal, { ...minimal, id: "globex" }] })).toHaveLength(2);
  });

  it("names the tenant by position when its id is unusable", () => {
    const error = thrown(() => parseTenantsDocument({ tenants: [minimal, { ...minimal, id: "Not A Slug" }] }), TenantConfigError);
    expect(error.message).toMatch(/^tenant "tenants\[1\]": field id: must be a lowercase slug/);
  });

  it("takes as an id exactly what the functions take as TENANT_ID, which the stack writes from it", () => {
    const env = { QASHIO_BASE_URL: "https://api.example.com", TABLE_NAME: "bridge", SECRET_ID: "qashio/acme", EVENT_BUS_NAME: "bus", PII_MODE: "hash" };
    for (const id of ["a", "acme-sandbox", "x".repeat(32), "Acme", "acme_1", "acme.eu", "a:b", "-acme", "acme-", "x".repeat(33)]) {
      const inFile = (() => {
        try {
          return parseTenantConfig({ ...minimal, id }).id === id;
        } catch {
          return false;
        }
      })();
      expect(validTenantOf({ ...env, TENANT_ID: id }) === id, id).toBe(inFile);
    }
  });

  it("rejects a tenant listed twice and a webhook name used twice", () => {
    expect(thrown(() => parseTenantsDocument({ tenants: [minimal, minimal] }), TenantConfigError).message).toBe(
      'tenant "acme": field id: listed more than once',
    );
    const hook = { name: "erp", url: "https://erp.test/h", eventTypes: ["card.created"], auth: { type: "basic", username: "u", password: { secretArn } } };
    const error = thrown(() => parseTenantsDocument({ tenants: [{ ...minimal, account: "123456789012", region: "eu-west-1", webhooks: [hook, hook] }] }), TenantConfigError);
    expect(error.field).toBe("webhooks[1].name");
    expect(error.message).toBe('tenant "acme": field webhooks[1].name: "erp" is used twice');
    // A second entry of one id is that fault alone: its own webhooks are not checked as a tenant's, nor its source.
    const pinned = { ...minimal, account: "123456789012", region: "eu-west-1" };
    expect(thrown(() => parseTenantsDocument({ tenants: [pinned, { ...pinned, webhooks: [hook, hook] }] }), TenantConfigError).message).toBe(
      'tenant "acme": field id: listed more than once',
    );
  });

  it("rejects webhook names that are the same once dashes are removed, naming both", () => {
    const hook = (name: string) => ({ name, url: `https://erp.test/${name}`, eventTypes: ["card.created"], auth: { type: "basic", username: "u", password: { secretArn } } });
    // A webhook secret's ARN needs the tenant pinned to an account and region.
    const pinned = { ...minimal, account: "123456789012", region: "eu-west-1" };
    const error = thrown(() => parseTenantsDocument({ tenants: [{ ...pinned, webhooks: [hook("erp"), hook("a-b"), hook("ab")] }] }), TenantConfigError);
    expect(error.field).toBe("webhooks[2].name");
    expect(error.message).toBe(
      'tenant "acme": field webhooks[2].name: webhooks "a-b" and "ab" have the same name once dashes are removed, as in their resources\' logical ids: rename one',
    );
    expect(parseTenantsDocument({ tenants: [{ ...pinned, webhooks: [hook("a-b"), hook("a-c")] }] })[0]?.webhooks).toHaveLength(2);
  });

  it("rejects two webhooks sending one event type to one URL (every such event delivered twice), naming both and the types", () => {
    const hook = (name: string, url: string, eventTypes: string[]) => ({ name, url, eventTypes, auth: { type: "basic", username: "u", password: { secretArn } } });
    const pinned = { ...minimal, account: "123456789012", region: "eu-west-1" };
    const webhooks = [
      hook("erp", "https://erp.test/h", ["card.created", "card.updated"]),
      hook("audit", "https://audit.test/h", ["card.created"]),
      // The same URL once parsed: a host is case-blind.
      hook("erp-cards", "https://ERP.test/h", ["card.updated", "card.created", "transaction.created"]),
    ];
    const error = thrown(() => parseTenantsDocument({ tenants: [{ ...pinned, webhooks }] }), TenantConfigError);
    expect(error.field).toBe("webhooks[2].url");
    expect(error.message).toBe(
      'tenant "acme": field webhooks[2].url: webhook "erp" already sends card.updated, card.created to this URL: each would be delivered twice; list each event type in one webhook only',
    );
    // One URL for event types apart (each with its own rate limit or retries, say) is fine.
    const apart = [hook("erp", "https://erp.test/h", ["card.created"]), hook("erp-tx", "https://erp.test/h", ["transaction.created"])];
    expect(parseTenantsDocument({ tenants: [{ ...pinned, webhooks: apart }] })[0]?.webhooks).toHaveLength(2);
  });

  it("caps webhooks per tenant below CloudFormation's 500 resources, naming the field and the way around it", () => {
    const hook = (name: string) => ({ name, url: `https://erp.test/${name}`, eventTypes: ["card.created"], auth: { type: "basic", username: "u", password: { secretArn } } });
    const pinned = { ...minimal, account: "123456789012", region: "eu-west-1" };
    const hooks = (n: number) => Array.from({ length: n }, (_, i) => hook(`h${i}`));
    // 50, the cap tenant files were written against: a lower one would refuse files that deploy today
    expect(MAX_WEBHOOKS_PER_TENANT).toBe(50);
    expect(parseTenantsDocument({ tenants: [{ ...pinned, webhooks: hooks(50) }] })[0]?.webhooks).toHaveLength(50);
    const error = thrown(() => parseTenantsDocument({ tenants: [{ ...pinned, webhooks: hooks(51) }] }), TenantConfigError);
    expect(error.field).toBe("webhooks");
    expect(error.message).toBe(
      `tenant "acme": field webhooks: at most 50 webhooks per tenant: each adds 8 resources to the tenant's stack and CloudFormation takes at most 500; forward to more endpoints from your own rules on the tenant's event bus`,
    );
  });

  it("reads a file that starts with a byte-order mark", () => {
    const dir = mkdtempSync(join(tmpdir(), "tenants-"));
    writeFileSync(join(dir, "bom.json"), `\uFEFF${JSON.stringify({ tenants: [minimal] })}`);
    expect(loadTenantsFile(join(dir, "bom.json")).map((t) => t.id)).toEqual(["acme"]);
  });

  it("fails on a file that is missing, not JSON, or lists no tenant", () => {
    const dir = mkdtempSync(join(tmpdir(), "tenants-"));
    writeFileSync(join(dir, "broken.json"), "{ tenants: ");
    writeFileSync(join(dir, "empty.json"), JSON.stringify({ tenants: [] }));
    expect(() => loadTenantsFile(join(dir, "absent.json"))).toThrow(/cannot be read \(ENOENT\)/);
    expect(() => loadTenantsFile(dir)).toThrow(/cannot be read \(EISDIR\)/);
    expect(() => loadTenantsFile(join(dir, "broken.json"))).toThrow(/is not valid JSON \(YAML is not supported\): .*JSON/);
    expect(() => loadTenantsFile(join(dir, "empty.json"))).toThrow("tenants file: field tenants: list at least one tenant");
  });

  it("refuses a key given twice in one object, naming each, rather than keep only the last as JSON.parse does", () => {
    const dir = mkdtempSync(join(tmpdir(), "tenants-"));
    const hook = { name: "erp", url: "https://erp.test/h", eventTypes: ["card.created"], auth: { type: "basic", username: "u", password: { secretArn } } };
    const acme = JSON.stringify({ ...minimal, account: "123456789012", region: "eu-west-1", webhooks: [hook] });
    // A merge gone wrong: the later empty `webhooks` would drop acme's webhook at deploy, and the later `tenants` acme.
    const text = `{"tenants": [${acme.replace(/}$/, ', "webhooks": []}')}], "tenants": [{"id": "globex", "environment": "sandbox", "alarms": {"email": "a@b.test"}}]}`;
    writeFileSync(join(dir, "twice.json"), text);
    const error = thrown(() => loadTenantsFile(join(dir, "twice.json")), TenantConfigError);
    expect(error.message).toBe(
      `tenants file ${join(dir, "twice.json")}: field tenants[0].webhooks is given more than once; field tenants is given more than once: keep one of each (JSON keeps only the last)`,
    );
    // A key is compared as JSON reads it, escapes resolved; the same name in different objects is no repeat.
    writeFileSync(join(dir, "escaped.json"), `{"tenants": [{"id": "acme", "i\\u0064": "globex"}]}`);
    expect(thrown(() => loadTenantsFile(join(dir, "escaped.json")), TenantConfigError).message).toMatch(/field tenants\[0\]\.id is given more than once/);
    writeFileSync(join(dir, "apart.json"), JSON.stringify({ tenants: [minimal, { ...minimal, id: "globex", eventSource: "globex.bridge" }] }));
    expect(loadTenantsFile(join(dir, "apart.json")).map((t) => t.id)).toEqual(["acme", "globex"]);
    // In a later tenant: named by its own index, which the field of the error carries too.
    const second = JSON.stringify({ ...minimal, id: "globex", eventSource: "globex.bridge" }).replace(/^\{/, '{"id": "initech", ');
    writeFileSync(join(dir, "second.json"), `{"tenants": [${JSON.stringify(minimal)}, ${second}]}`);
    const inSecond = thrown(() => loadTenantsFile(join(dir, "second.json")), TenantConfigError);
    expect(inSecond.message).toMatch(/: field tenants\[1\]\.id is given more than once: keep one \(/);
    expect(inSecond.field).toBe("tenants[1].id");
  });
});

describe("tenant config: the forms and bounds README gives each field", () => {
  const refusal = (raw: unknown) => thrown(() => parseTenantConfig(raw, 2), TenantConfigError).message;

  it.each(["sandboxes", "production-eu", "https://", "https:///hooks", "https:// provider.test"])(
    "refuses the environment %j: a named deployment is the whole value, and a URL names a host right after https://",
    (environment) => {
      expect(refusal({ ...minimal, environment })).toBe('tenant "acme": field environment: must be production, eu, sandbox or an https:// URL');
    },
  );

  it("refuses an account, or an alarm topic ARN's account, that is not 12 digits, and a region not led by its letters", () => {
    expect(refusal({ ...minimal, account: "12345678901" })).toBe('tenant "acme": field account: must be a 12-digit AWS account id');
    expect(refusal({ ...minimal, region: "x_eu-west-1" })).toBe('tenant "acme": field region: must be an AWS region such as eu-west-1');
    const topic = { ...minimal, account: "123456789012", region: "eu-west-1", alarms: { topicArn: "arn:aws:sns:eu-west-1:12345678901:ops" } };
    expect(refusal(topic)).toBe('tenant "acme": field alarms.topicArn: must be an SNS topic ARN');
  });

  it("refuses an imported bus name or ARN EventBridge would not take, naming the key", () => {
    expect(refusal({ ...minimal, eventBus: { mode: "import", name: "globex finance" } })).toBe('tenant "acme": field eventBus.name: must be an event bus name');
    const bySnsArn = { ...minimal, account: "123456789012", region: "eu-west-1", eventBus: { mode: "import", arn: "arn:aws:sns:eu-west-1:123456789012:finance" } };
    expect(refusal(bySnsArn)).toBe('tenant "acme": field eventBus.arn: must be an event bus ARN');
  });

  it("names the forms of eventBus, and no key, when it is no object at all", () => {
    expect(refusal({ ...minimal, eventBus: "create" })).toBe(
      'tenant "acme": field eventBus: must be { "mode": "create" } or { "mode": "import", "name" | "arn": ... }',
    );
  });

  it.each(["ops@-acme.test", "ops@acme.t"])("refuses the alarm email %j, which mail would not deliver", (email) => {
    expect(refusal({ ...minimal, alarms: { email } })).toBe('tenant "acme": field alarms.email: Invalid email address');
  });

  // A relation between fields is checked only where each field is valid itself: a second message about a value already
  // refused (a malformed ARN "not in the region", a refused rate's SyncLag bound) sends the reader after the wrong fix.
  it.each([
    ["a malformed topic ARN", { account: "123456789012", region: "eu-west-1", alarms: { topicArn: "nope" } }, "alarms.topicArn"],
    ["a region of the wrong form beside a valid topic ARN", { account: "123456789012", region: "EU", alarms: { topicArn: "arn:aws:sns:eu-west-1:123456789012:ops" } }, "region"],
    ["a transactions rate over a day", { schedules: { transactionsEveryMinutes: 1441 } }, "schedules.transactionsEveryMinutes"],
    ["a SyncLag threshold under a minute, at a one-minute rate", { schedules: { transactionsEveryMinutes: 1 }, alarms: { email: "ops@acme.test", syncLagThresholdSeconds: 45 } }, "alarms.syncLagThresholdSeconds"],
    ["a card rate of 0 beside a fast path", { schedules: { cardsEveryMinutes: 0, suspendedCardsEveryMinutes: 2 } }, "schedules.cardsEveryMinutes"],
  ])("names only the field at fault for %s, not a relation it fails because of it", (_, fields, field) => {
    const message = refusal({ ...minimal, ...fields });
    expect(message.match(/field [\w.]+:/g)).toEqual([`field ${field}:`]);
  });

  it("takes schedule rates up to 1440 minutes (a day) and no more", () => {
    expect(parseTenantConfig({ ...minimal, schedules: { cardsEveryMinutes: 1440 } }).schedules.cardsEveryMinutes).toBe(1440);
    expect(refusal({ ...minimal, schedules: { cardsEveryMinutes: 1441 } })).toBe('tenant "acme": field schedules.cardsEveryMinutes: Too big: expected number to be <=1440');
  });

  it("takes a SyncLag threshold of whole seconds, at least 60", () => {
    expect(refusal({ ...minimal, alarms: { ...minimal.alarms, syncLagThresholdSeconds: 1800.5 } })).toBe(
      'tenant "acme": field alarms.syncLagThresholdSeconds: Invalid input: expected int, received number',
    );
    const quick = { ...minimal, schedules: { transactionsEveryMinutes: 1 } };
    expect(refusal({ ...quick, alarms: { ...minimal.alarms, syncLagThresholdSeconds: 45 } })).toMatch(
      /^tenant "acme": field alarms\.syncLagThresholdSeconds: Too small: expected number to be >=60$/,
    );
    expect(parseTenantConfig({ ...quick, alarms: { ...minimal.alarms, syncLagThresholdSeconds: 61 } }).alarms.syncLagThresholdSeconds).toBe(61);
  });

  it("keeps bus archives for whole days from 0 (forever) to 3650", () => {
    expect(parseTenantConfig({ ...minimal, archiveRetentionDays: 0 }).archiveRetentionDays).toBe(0);
    expect(parseTenantConfig({ ...minimal, archiveRetentionDays: 3650 }).archiveRetentionDays).toBe(3650);
    expect(refusal({ ...minimal, archiveRetentionDays: 3651 })).toBe('tenant "acme": field archiveRetentionDays: Too big: expected number to be <=3650');
    expect(refusal({ ...minimal, archiveRetentionDays: 30.5 })).toBe('tenant "acme": field archiveRetentionDays: Invalid input: expected int, received number');
  });
});

describe("tenant config: ARNs against the tenant's account, region and partition", () => {
  const refusal = (raw: unknown) => thrown(() => parseTenantConfig(raw, 2), TenantConfigError).message;
  const busArn = "arn:aws:events:eu-west-1:123456789012:event-bus/shared";
  const hook = (name: string, auth: unknown) => ({ name, url: `https://erp.test/${name}`, eventTypes: ["card.created"], auth });

  it("asks for region and account once each, naming the first ARN, and checks no ARN against a place not given", () => {
    expect(refusal({ ...minimal, eventBus: { mode: "import", arn: busArn }, alarms: { topicArn: "arn:aws:sns:us-east-1:999999999999:ops" } })).toBe(
      'tenant "acme": field region: is required when an ARN is configured (eventBus.arn); field account: is required when an ARN is configured (eventBus.arn)',
    );
    expect(refusal({ ...minimal, region: "eu-west-1", eventBus: { mode: "import", arn: busArn.replace("123456789012", "999999999999") } })).toBe(
      'tenant "acme": field account: is required when an ARN is configured (eventBus.arn)',
    );
  });

  it("reports one fault per ARN: its region before its partition, its partition before its account", () => {
    const china = { ...minimal, account: "123456789012", region: "cn-north-1" };
    expect(refusal({ ...china, alarms: { topicArn: "arn:aws:sns:eu-west-1:123456789012:ops" } })).toBe('tenant "acme": field alarms.topicArn: must be in the tenant\'s region');
    expect(refusal({ ...china, eventBus: { mode: "import", arn: "arn:aws:events:cn-north-1:999999999999:event-bus/shared" } })).toBe(
      'tenant "acme": field eventBus.arn: must start with arn:aws-cn: (the partition of cn-north-1)',
    );
  });

  it("checks the secret of every webhook, an OAuth client secret too, naming its own path", () => {
    const east = { ...minimal, account: "123456789012", region: "us-east-1" };
    const eastSecret = secretArn.replace("eu-west-1", "us-east-1");
    const oauth = { type: "oauthClientCredentials", tokenUrl: "https://auth.test/t", clientId: "c", clientSecret: { secretArn } };
    expect(refusal({ ...east, webhooks: [hook("erp", oauth)] })).toBe('tenant "acme": field webhooks[0].auth.clientSecret.secretArn: must be in the tenant\'s region');
    const basic = (arn: string) => ({ type: "basic", username: "u", password: { secretArn: arn } });
    expect(refusal({ ...east, webhooks: [hook("audit", basic(eastSecret)), hook("erp", basic(secretArn))] })).toBe(
      'tenant "acme": field webhooks[1].auth.password.secretArn: must be in the tenant\'s region',
    );
  });

  // "erp-webhook": seven characters after its last dash, not the six appended ones.
  it.each(["globexerphook", "globex-ledger/erp", "erp-hook", "erp-webhook"])(
    "refuses the partial secret name %j of another account: a full ARN ends in '-' and six letters or digits",
    (name) => {
      const other = { ...minimal, account: "210987654321", region: "eu-west-1" };
      const arn = `arn:aws:secretsmanager:eu-west-1:123456789012:secret:${name}`;
      expect(refusal({ ...other, webhooks: [hook("erp", { type: "basic", username: "u", password: { secretArn: arn } })] })).toMatch(
        /^tenant "acme": field webhooks\[0\]\.auth\.password\.secretArn: must be the secret's full ARN/,
      );
    },
  );
});

describe("tenant config: how a refusal names the tenant", () => {
  it("names the tenant by position when its id is no string or the entry no object", () => {
    expect(thrown(() => parseTenantConfig({ ...minimal, id: 123 }, 2), TenantConfigError).message).toBe(
      'tenant "tenants[2]": field id: Invalid input: expected string, received number',
    );
    const entry = thrown(() => parseTenantConfig(null, 2), TenantConfigError);
    expect([entry.tenant, entry.field, entry.message]).toEqual(["tenants[2]", "(root)", 'tenant "tenants[2]": field (root): Invalid input: expected object, received null']);
  });

  it("lists every fault past the first, not only the second", () => {
    expect(thrown(() => parseTenantConfig({ ...minimal, piiMode: "mask", emitCardCreated: "yes", archiveRetentionDays: -1 }), TenantConfigError).message).toBe(
      'tenant "acme": field piiMode: Invalid option: expected one of "full"|"redact"|"hash"; ' +
        "field emitCardCreated: Invalid input: expected boolean, received string; field archiveRetentionDays: Too small: expected number to be >=0",
    );
  });
});

describe("tenants file with several tenants at fault", () => {
  it("names every tenant at fault in one message, not only the first", () => {
    const error = thrown(
      () =>
        parseTenantsDocument({
          tenants: [
            { ...minimal, id: "first", schedules: { transactionsEveryMinutes: 0 } },
            { ...minimal, id: "fine" },
            { ...minimal, id: "third", piiMode: "masked" },
          ],
        }),
      TenantConfigError,
    );
    expect(error.message).toMatch(/^tenant "first": field schedules\.transactionsEveryMinutes: .*; tenant "third": field piiMode: /);
    expect(error.message).not.toContain('"fine"');
    expect(error.message).not.toContain("\n");
    expect([error.tenant, error.field]).toEqual(["first", "schedules.transactionsEveryMinutes"]);
  });

  it("names every fault across tenants too (ids, webhook names, sources on a shared bus) in the same run", () => {
    const pinned = { ...minimal, account: "123456789012", region: "eu-west-1" };
    const hook = (name: string) => ({ name, url: "https://erp.test/h", eventTypes: ["card.created"], auth: { type: "basic", username: "u", password: { secretArn } } });
    const shared = { eventBus: { mode: "import", name: "shared" } };
    const error = thrown(
      () =>
        parseTenantsDocument({
          tenants: [
            { ...minimal, id: "bad", piiMode: "masked" },
            { ...pinned, id: "twice", webhooks: [hook("erp"), hook("erp")] },
            { ...pinned, id: "dashes", webhooks: [hook("a-b"), hook("ab")] },
            { ...minimal, id: "fine" },
            { ...minimal, id: "fine" },
            { ...minimal, id: "bus-a", ...shared },
            { ...minimal, id: "bus-b", ...shared },
          ],
        }),
      TenantConfigError,
    );
    expect(error.message).toMatch(/^tenant "bad": field piiMode: /);
    for (const fault of [
      'tenant "twice": field webhooks[1].name: "erp" is used twice',
      'tenant "dashes": field webhooks[1].name: webhooks "a-b" and "ab" have the same name once dashes are removed',
      'tenant "fine": field id: listed more than once',
      'tenant "bus-b": field eventSource: "qashio.bridge" is also the source of tenant "bus-a"',
    ]) {
      expect(error.message).toContain(`; ${fault}`);
    }
    expect([error.tenant, error.field]).toEqual(["bad", "piiMode"]);
    // Once the tenant checks pass, the checks across tenants still name every fault, each once.
    const across = thrown(() => parseTenantsDocument({ tenants: [minimal, minimal, { ...minimal, id: "bus-a", ...shared }, { ...minimal, id: "bus-b", ...shared }, { ...minimal, id: "bus-c", ...shared }] }), TenantConfigError);
    expect(across.message).toBe(
      'tenant "acme": field id: listed more than once; ' +
        'tenant "bus-b": field eventSource: "qashio.bridge" is also the source of tenant "bus-a" on what may be the same event bus: give each tenant on a shared bus a source of its own (or pin account and region where they differ); ' +
        'tenant "bus-c": field eventSource: "qashio.bridge" is also the source of tenant "bus-a" on what may be the same event bus: give each tenant on a shared bus a source of its own (or pin account and region where they differ)',
    );
    expect([across.tenant, across.field]).toEqual(["acme", "id"]);
  });
});

describe("provider URL", () => {
  const tenant = parseTenantConfig(minimal);

  it("takes the environment variable over the cdk context", () => {
    const urls = providerUrlsFrom(
      { sandbox: "https://context.test", production: "https://prod-context.test" },
      { QASHIO_SANDBOX_URL: "https://env.test/" },
    );
    expect(urls).toEqual({ sandbox: "https://env.test/", production: "https://prod-context.test" });
    expect(resolveProviderUrl(tenant, urls)).toBe("https://env.test");
  });

  it("takes a variable set to blanks as unset, falling back to the cdk context", () => {
    expect(providerUrlsFrom({ sandbox: "https://context.test" }, { QASHIO_SANDBOX_URL: "  " })).toEqual({ sandbox: "https://context.test" });
  });

  it("resolves each named deployment to its own URL, eu too", () => {
    const urls = providerUrlsFrom({ production: "https://production.test", eu: "https://eu.test", sandbox: "https://sandbox.test" }, {});
    for (const deployment of ["production", "eu", "sandbox"]) {
      expect(resolveProviderUrl(parseTenantConfig({ ...minimal, environment: deployment }), urls)).toBe(`https://${deployment}.test`);
    }
  });

  it("reads qashioUrls given on the command line (-c passes JSON text) as cdk.json's object", () => {
    expect(providerUrlsFrom('{"sandbox":"https://cli.test"}', {})).toEqual({ sandbox: "https://cli.test" });
    expect(providerUrlsFrom(undefined, {})).toEqual({});
    // cdk.json's "qashioUrls": null is no context either, not a refused one
    expect(providerUrlsFrom(null, {})).toEqual({});
  });

  it("refuses a qashioUrls that is no object of URLs by deployment, naming each problem, rather than ignoring it", () => {
    expect(() => providerUrlsFrom("https://cli.test", {})).toThrow(/qashioUrls must be a JSON object of base URLs by deployment \(production, eu, sandbox\).*not JSON/);
    expect(() => providerUrlsFrom(["https://a.test"], {})).toThrow(/qashioUrls must be a JSON object.*got an array/);
    expect(() => providerUrlsFrom({ prod: "https://a.test", eu: 5, toString: "https://b.test" }, {})).toThrow(
      /prod is no deployment; eu is not a string; toString is no deployment/,
    );
    expect(() => providerUrlsFrom({ sandbox: "https://a.test" }, {})).not.toThrow();
  });

  it("uses a literal https URL as it is", () => {
    expect(resolveProviderUrl(parseTenantConfig({ ...minimal, environment: "https://custom.test/" }), {})).toBe(
      "https://custom.test",
    );
  });

  it.each([
    ["https://svc:Pr0d/S3cret@api.example", ["Pr0d", "S3cret", "svc", "api.example"]],
    ["https://svc:Pr0d@S3cret@api.example", ["Pr0d", "S3cret", "svc", "api.example"]],
  ])("never echoes the URL %s at synth, named or literal", (url, leaks) => {
    const errors = [
      thrown(() => resolveProviderUrl(parseTenantConfig({ ...minimal, environment: "production" }), { production: url }), TenantConfigError),
      thrown(() => resolveProviderUrl(parseTenantConfig({ ...minimal, environment: url }), {}), TenantConfigError),
    ];
    for (const error of errors) {
      expect(error.message).toMatch(/^tenant "acme": field environment: (QASHIO_PRODUCTION_URL|environment) /);
      for (const leak of leaks) expect(error.message).not.toContain(leak);
    }
  });

  it("refuses a named deployment's plain-http URL at synth, a loopback one too (a Lambda cannot reach it), naming where it came from", () => {
    const prod = parseTenantConfig({ ...minimal, environment: "production" });
    const rest = "must be an https:// URL for an AWS stack (http:// is for a local sandbox only)";
    for (const url of ["http://api.provider.example", "http://127.0.0.1:4010", "HTTP://localhost:4010"]) {
      expect(thrown(() => resolveProviderUrl(prod, providerUrlsFrom({}, { QASHIO_PRODUCTION_URL: url })), TenantConfigError).message).toBe(
        `tenant "acme": field environment: QASHIO_PRODUCTION_URL ${rest}`,
      );
      // From the cdk context (cdk.json or -c qashioUrls=...), not a variable the operator never set.
      for (const context of [{ production: url }, JSON.stringify({ production: url })]) {
        expect(thrown(() => resolveProviderUrl(prod, providerUrlsFrom(context, {})), TenantConfigError).message).toBe(
          `tenant "acme": field environment: "production" in the cdk context qashioUrls ${rest}`,
        );
      }
    }
  });

  it("refuses at synth a tenant's environment pasted from a sign-in page (ending /oauth2, /oauth2/validate or /oauth2/authorize)", () => {
    for (const url of ["https://auth.provider.example/oauth2", "https://auth.provider.example/oauth2/validate", "https://auth.provider.example/oauth2/authorize"]) {
      expect(thrown(() => resolveProviderUrl(parseTenantConfig({ ...minimal, environment: url }), {}), TenantConfigError).message).toMatch(
        /^tenant "acme": field environment: environment \(host auth\.provider\.example\) must not end with an OAuth path \(\/oauth2, /,
      );
    }
  });

  it("fails naming the variable and context key when a named deployment has no URL", () => {
    const error = thrown(() => resolveProviderUrl(tenant, {}), TenantConfigError);
    expect(error.message).toBe(
      'tenant "acme": field environment: "sandbox" needs its base URL; set QASHIO_SANDBOX_URL, or "sandbox" in the cdk context qashioUrls (cdk.json)',
    );
  });
});
