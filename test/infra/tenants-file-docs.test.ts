/**
 * docs/tenants-file.md held to the validation it describes: the hosts, limits, relations and messages it names are
 * what synth's loader does, read from the page itself so a change on either side fails here.
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RegionInfo } from "aws-cdk-lib/region-info";
import { describe, expect, it } from "vitest";
import { TenantConfigError } from "../../infra/errors.js";
import { TENANT_DEFAULTS } from "../../infra/tenant-defaults.js";
import { parseTenantsDocument } from "../../infra/tenants-document.js";
import { loadTenantsFile } from "../../infra/tenants-file.js";
import { unreachableHost } from "../../infra/webhook-host.js";
import { thrown } from "../thrown.js";
import { entryRefusal, REPO_ROOT, tenantEntry, WEBHOOK_SECRET_ARN, webhookEntry } from "./helpers.js";
import { quotedNames, textsSaid } from "../doc-text.js";

const read = (...path: string[]): string => readFileSync(join(REPO_ROOT, ...path), "utf8");
const page = read("docs", "tenants-file.md").replace(/\s+/g, " ");
const dir = mkdtempSync(join(tmpdir(), "tenants-file-docs-"));

const oauth = (fields: Record<string, unknown>) =>
  webhookEntry({}, { type: "oauthClientCredentials", tokenUrl: "https://auth.acme.example/token", clientId: "bridge", clientSecret: { secretArn: WEBHOOK_SECRET_ARN }, ...fields });
const basic = (username: string) => webhookEntry({}, { type: "basic", username, password: { secretArn: WEBHOOK_SECRET_ARN } });


/** The groups of `pattern`'s first match in the page (whitespace as one space). */
const groupsIn = (pattern: RegExp): string[] => textsSaid(page, pattern)[0] ?? [];

describe("docs/tenants-file.md, webhook hosts EventBridge cannot reach", () => {
  const [listed = ""] = groupsIn(/link-local, multicast or reserved IPv4 addresses \(([^)]*)\)/);
  const ranges = [...listed.matchAll(/`([^`]+)`( and up)?/g)].map(([, range = "", andUp]) => ({ range, andUp: andUp !== undefined }));

  it("lists the ranges it names", () => {
    expect(ranges.length).toBeGreaterThan(5);
  });

  it("refuses the first and last address of each range listed, and takes the addresses just outside it", () => {
    for (const { range, andUp } of ranges) {
      // "127.0.0.1", "10.x", "100.64-127.x": octets, the last given one possibly a span, then any.
      const octets = range.replace(/\.x$/, "").split(".");
      const [low, high = low] = (octets.pop() ?? "").split("-").map(Number) as [number, number?];
      const address = (last: number, fill: number) => [...octets, String(last), ...Array<string>(3 - octets.length).fill(String(fill))].join(".");
      const top = andUp ? 255 : (high ?? low);
      expect(unreachableHost(`https://${address(low, 0)}/`), range).toBeDefined();
      expect(unreachableHost(`https://${address(top, 255)}/`), range).toBeDefined();
      if (octets.length === 3) continue;
      // Neighbours outside a span are public (10.x's are 9.x and 11.x; only the spans' neighbours are checked).
      if (high !== undefined && high !== low) {
        expect(unreachableHost(`https://${address(low - 1, 255)}/`), `${range}, below`).toBeUndefined();
        if (!andUp) expect(unreachableHost(`https://${address(high + 1, 0)}/`), `${range}, above`).toBeUndefined();
      }
      if (andUp) expect(unreachableHost(`https://${address(low - 1, 255)}/`), `${range}, below`).toBeUndefined();
    }
  });

  it("refuses the private names it lists", () => {
    const [names = ""] = groupsIn(/public internet: (`localhost`[^;]*?) names and/);
    const suffixes = quotedNames(names);
    expect(suffixes).toContain("localhost");
    for (const suffix of suffixes) {
      const host = suffix.startsWith(".") ? `printer${suffix}` : suffix;
      expect(entryRefusal(tenantEntry({ webhooks: [webhookEntry({ url: `https://${host}/hooks` })] })), host).toContain("must be reachable from the public internet");
      expect(entryRefusal(tenantEntry({ webhooks: [oauth({ tokenUrl: `https://${host}/token` })] })), `tokenUrl ${host}`).toContain("must be reachable from the public internet");
    }
  });
});

describe("docs/tenants-file.md, the limits EventBridge sets", () => {
  it("takes a webhook URL of the length it gives, and refuses one character more", () => {
    const [max = 0] = groupsIn(/no `#fragment`, at most (\d+) characters/).map(Number);
    const url = (length: number) => `https://erp.acme.example/${"a".repeat(length - "https://erp.acme.example/".length)}`;
    expect(entryRefusal(tenantEntry({ webhooks: [webhookEntry({ url: url(max) })] }))).toBeUndefined();
    expect(entryRefusal(tenantEntry({ webhooks: [webhookEntry({ url: url(max + 1) })] }))).toContain(`must be at most ${max} characters`);
  });

  it("takes a username, clientId, headerName and scope of the length it gives, and refuses one more", () => {
    const [params = 0, scope = 0] = groupsIn(/API key `headerName` take at most (\d+) characters,[^;]*; an OAuth `scope` at most (\d+) characters/).map(Number);
    // `over` characters past each limit.
    const entries = (over: number) => ({
      username: basic("u".repeat(params + over)),
      clientId: oauth({ clientId: "c".repeat(params + over) }),
      headerName: webhookEntry({}, { type: "apiKey", headerName: "h".repeat(params + over), value: { secretArn: WEBHOOK_SECRET_ARN } }),
      scope: oauth({ scope: "s".repeat(scope + over) }),
    });
    for (const [field, hook] of Object.entries(entries(0))) expect(entryRefusal(tenantEntry({ webhooks: [hook] })), field).toBeUndefined();
    for (const [field, hook] of Object.entries(entries(1))) expect(entryRefusal(tenantEntry({ webhooks: [hook] })), field).toMatch(/must be at most \d+ characters/);
  });

  it("refuses blank values with the message it quotes", () => {
    const [quoted = ""] = groupsIn(/of spaces only is refused too \(`([^`]+)`\)/);
    const blanks = {
      username: basic("   "),
      clientId: oauth({ clientId: "   " }),
      scope: oauth({ scope: "   " }),
      jsonField: webhookEntry({}, { type: "apiKey", headerName: "x-api-key", value: { secretArn: WEBHOOK_SECRET_ARN, jsonField: "   " } }),
    };
    for (const [field, hook] of Object.entries(blanks)) expect(entryRefusal(tenantEntry({ webhooks: [hook] })), field).toContain(`${field}: ${quoted}`);
  });
});

describe("docs/tenants-file.md, checks across fields and tenants", () => {
  it("needs a SyncLag threshold above the default from the transactions schedule it names on", () => {
    const [minutes = 0, threshold = 0] = groupsIn(/a schedule of (\d+) minutes or more needs a threshold set above the default (\d+)/).map(Number);
    expect(threshold).toBe(TENANT_DEFAULTS.syncLagThresholdSeconds);
    expect(entryRefusal(tenantEntry({ schedules: { transactionsEveryMinutes: minutes - 1 } }))).toBeUndefined();
    expect(entryRefusal(tenantEntry({ schedules: { transactionsEveryMinutes: minutes } }))).toContain("field alarms.syncLagThresholdSeconds: must be more than the transactions schedule");
  });

  it("refuses the webhook names it gives as clashing", () => {
    const [first = "", second = ""] = groupsIn(/\(`([a-z0-9-]+)` and `([a-z0-9-]+)` clash: logical ids drop dashes\)/);
    const hooks = [webhookEntry({ name: first }), webhookEntry({ name: second, eventTypes: ["card.created"] })];
    expect(() => parseTenantsDocument({ tenants: [tenantEntry({ webhooks: hooks })] })).toThrow(`field webhooks[1].name: webhooks "${first}" and "${second}" have the same name once dashes are removed`);
  });

  it("names partitions and a region aws-cdk-lib does not know as its examples say", () => {
    const [china = "", govCloud = ""] = groupsIn(/\(`arn:([a-z-]+):` in China, `arn:([a-z-]+):` in GovCloud/);
    expect([RegionInfo.get("cn-north-1").partition, RegionInfo.get("us-gov-west-1").partition]).toEqual([china, govCloud]);
    const [typo = ""] = groupsIn(/\(a typo such as `([a-z0-9-]+)`\)/);
    expect(RegionInfo.regions.map((region) => region.name)).not.toContain(typo);
    expect(read("infra", "tenant-stack.ts")).toContain(`"${groupsIn(/makes synth warn \(`([^`]+)`/)[0]}"`);
  });
});

describe("docs/tenants-file.md, the messages it quotes", () => {
  it("quotes synth's message for a schedule rate of 0 in full", () => {
    const [prefix = "", rest = ""] = groupsIn(/`(qashio-bridge synth failed: )(tenant "globex": field schedules\.transactionsEveryMinutes: [^`]+)`/);
    expect(entryRefusal(tenantEntry({ id: "globex", schedules: { transactionsEveryMinutes: 0 } }))).toBe(rest);
    expect(read("infra", "app.ts")).toContain(`\`${prefix}\${error.message}\``);
  });

  it("quotes the loader's words for a file cut short and a key given twice", () => {
    const load = (text: string): string => {
      const path = join(dir, "tenants.json");
      writeFileSync(path, text);
      return thrown(() => loadTenantsFile(path), TenantConfigError).message;
    };
    const [cutShort = ""] = groupsIn(/one cut short says only `([^`]+)`/);
    expect(load('{"tenants": [')).toMatch(new RegExp(`: ${cutShort}$`));
    const [twice = ""] = groupsIn(/\(`(field tenants\[0\]\.webhooks is given more than once)`\)/);
    // A fault elsewhere in the tenant too: the key given twice is named first, and alone.
    expect(load(JSON.stringify({ tenants: [{ id: "acme", piiMode: "x", webhooks: [] }] }).replace('"webhooks":[]', '"webhooks":[],"webhooks":[]'))).toContain(`: ${twice}: keep one`);
  });
});
