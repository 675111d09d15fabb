import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { parseTenantsDocument } from "../../infra/tenants-document.js";
import { renderTenantsJsonSchema } from "../../infra/tenants-json-schema.js";
import { compileJsonSchema } from "../json-schema.js";
import { EXAMPLE_TENANTS_FILE } from "./helpers.js";

const SCHEMA_FILE = path.resolve(import.meta.dirname, "../../docs/tenants.schema.json");
const committed = readFileSync(SCHEMA_FILE, "utf8");
// strictRequired off: the alarms one-of lists members declared beside it, in `properties`, which is valid JSON Schema.
const validate = compileJsonSchema(JSON.parse(committed) as object, { strictRequired: false });

const secretArn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:hooks-AbCdEf";
const minimal = { id: "acme", environment: "sandbox", alarms: { email: "ops@acme.test" } };
const webhook = {
  name: "erp",
  url: "https://erp.acme.test/hooks",
  eventTypes: ["transaction.created"],
  auth: { type: "apiKey", headerName: "x-api-key", value: { secretArn } },
};

/** Whether synth's own validation takes the document. */
function synthAccepts(document: unknown): boolean {
  try {
    parseTenantsDocument(document);
    return true;
  } catch {
    return false;
  }
}

function fileOf(...tenants: unknown[]): unknown {
  return { $schema: "../docs/tenants.schema.json", tenants };
}

describe("tenants file JSON Schema (docs/tenants.schema.json)", () => {
  it("matches the zod schema synth validates with (regenerate: npx tsx infra/tenants-json-schema.ts)", () => {
    expect(committed).toBe(renderTenantsJsonSchema());
  });

  it("accepts the example tenants file, which names it for editors", () => {
    const example = JSON.parse(readFileSync(EXAMPLE_TENANTS_FILE, "utf8")) as { $schema?: string };
    expect(validate(example), JSON.stringify(validate.errors)).toBe(true);
    // The example's `$schema` resolves to the committed file, as an editor would resolve it.
    expect(path.resolve(path.dirname(EXAMPLE_TENANTS_FILE), example.$schema ?? "")).toBe(SCHEMA_FILE);
  });

  it.each([
    ["a minimal tenant", minimal],
    ["an https environment", { ...minimal, environment: "https://qashio.internal.test/api" }],
    ["alarms to a topic", { ...minimal, account: "123456789012", region: "eu-west-1", alarms: { topicArn: "arn:aws:sns:eu-west-1:123456789012:ops" } }],
    ["an imported bus", { ...minimal, eventBus: { mode: "import", name: "finance" } }],
    ["a webhook", { ...minimal, account: "123456789012", region: "eu-west-1", webhooks: [webhook] }],
    ["every default written out", { ...minimal, schedules: { enabled: false, transactionsEveryMinutes: 5, cardsEveryMinutes: 15 }, piiMode: "hash", emitCardCreated: true, cardDetails: true, archiveRetentionDays: 0 }],
  ])("accepts what synth accepts: %s", (_name, tenant) => {
    const document = fileOf(tenant);
    expect(synthAccepts(document)).toBe(true);
    expect(validate(document), JSON.stringify(validate.errors)).toBe(true);
  });

  it.each([
    ["a misspelt field", { ...minimal, piiMod: "hash" }],
    ["an unknown PII mode", { ...minimal, piiMode: "none" }],
    ["an unknown environment", { ...minimal, environment: "staging" }],
    ["an http environment", { ...minimal, environment: "http://qashio.test" }],
    ["no alarms", { id: "acme", environment: "sandbox" }],
    ["both alarm targets", { ...minimal, alarms: { email: "ops@acme.test", topicArn: "arn:aws:sns:eu-west-1:123456789012:ops" } }],
    ["neither alarm target", { ...minimal, alarms: { syncLagThresholdSeconds: 900 } }],
    ["a bad email", { ...minimal, alarms: { email: "ops at acme" } }],
    // The schema's "format": "email" refuses a domain label ending in a dash (no host name has one); so must synth.
    ["an email domain label ending in a dash", { ...minimal, alarms: { email: "ops@acme-.test" } }],
    ["minutes as a fraction", { ...minimal, schedules: { transactionsEveryMinutes: 2.5 } }],
    ["a schedule of 0 minutes", { ...minimal, schedules: { cardsEveryMinutes: 0 } }],
    ["an upper-case id", { ...minimal, id: "Acme" }],
    ["a bus mode of its own", { ...minimal, eventBus: { mode: "share" } }],
    ["an unknown event type", { ...minimal, webhooks: [{ ...webhook, eventTypes: ["card.deleted"] }] }],
    ["an http webhook", { ...minimal, webhooks: [{ ...webhook, url: "http://erp.acme.test/hooks" }] }],
    ["a secret value instead of a reference", { ...minimal, webhooks: [{ ...webhook, auth: { ...webhook.auth, value: "s3cret" } }] }],
    ["a URL with credentials", { ...minimal, webhooks: [{ ...webhook, url: "https://user:pw@erp.acme.test/hooks" }] }],
    ["a token URL with a user", { ...minimal, webhooks: [{ ...webhook, auth: { type: "oauthClientCredentials", tokenUrl: "HTTPS://me@auth.acme.test/token", clientId: "c", clientSecret: { secretArn } } }] }],
    ["a URL without its slashes", { ...minimal, webhooks: [{ ...webhook, url: "https:erp.acme.test/hooks" }] }],
    ["a URL without a host", { ...minimal, webhooks: [{ ...webhook, url: "https:///hooks" }] }],
    ["a URL with a #fragment", { ...minimal, webhooks: [{ ...webhook, url: "https://erp.acme.test/hooks#x" }] }],
    ["an event type listed twice", { ...minimal, webhooks: [{ ...webhook, eventTypes: ["card.updated", "card.updated"] }] }],
    ["an AWS event source", { ...minimal, eventSource: "aws.qashio" }],
    ["an OAuth scope over 512 characters", { ...minimal, webhooks: [{ ...webhook, auth: { type: "oauthClientCredentials", tokenUrl: "https://auth.acme.test/t", clientId: "c", clientSecret: { secretArn }, scope: "s".repeat(513) } }] }],
    ["a blank basic user name", { ...minimal, webhooks: [{ ...webhook, auth: { type: "basic", username: "  ", password: { secretArn } } }] }],
    ["a blank secret JSON key", { ...minimal, webhooks: [{ ...webhook, auth: { ...webhook.auth, value: { secretArn, jsonField: " " } } }] }],
    ["a basic user name with a trailing space", { ...minimal, webhooks: [{ ...webhook, auth: { type: "basic", username: "svc ", password: { secretArn } } }] }],
    ["an OAuth scope with a line break", { ...minimal, webhooks: [{ ...webhook, auth: { type: "oauthClientCredentials", tokenUrl: "https://auth.acme.test/t", clientId: "c", clientSecret: { secretArn }, scope: "a\nb" } }] }],
    ["an alarm topic name over 256 characters", { ...minimal, account: "123456789012", region: "eu-west-1", alarms: { topicArn: `arn:aws:sns:eu-west-1:123456789012:${"t".repeat(257)}` } }],
    ["an OAuth client id in curly quotes", { ...minimal, webhooks: [{ ...webhook, auth: { type: "oauthClientCredentials", tokenUrl: "https://auth.acme.test/t", clientId: "\u201cc\u201d", clientSecret: { secretArn } } }] }],
    ["a basic user name with a colon", { ...minimal, webhooks: [{ ...webhook, auth: { type: "basic", username: "svc:bridge", password: { secretArn } } }] }],
  ])("refuses what synth refuses: %s", (_name, tenant) => {
    const document = fileOf(tenant);
    expect(synthAccepts(document)).toBe(false);
    expect(validate(document)).toBe(false);
  });

  it("refuses a file without tenants or with a misspelt top-level field, as synth does", () => {
    for (const document of [{ tenants: [] }, { tenant: [minimal] }, { tenants: [minimal], version: 2 }]) {
      expect(synthAccepts(document), JSON.stringify(document)).toBe(false);
      expect(validate(document), JSON.stringify(document)).toBe(false);
    }
  });

  it("leaves checks across fields and tenants to synth (documented in its description)", () => {
    const elsewhere = { ...minimal, account: "123456789012", region: "eu-west-1", alarms: { topicArn: "arn:aws:sns:us-east-1:123456789012:ops" } };
    const badPort = { ...minimal, webhooks: [{ ...webhook, url: "https://erp.acme.test:99999/hooks" }] };
    for (const document of [fileOf(elsewhere), fileOf(minimal, minimal), fileOf(badPort)]) {
      expect(validate(document)).toBe(true);
      expect(synthAccepts(document)).toBe(false);
    }
    expect(JSON.parse(committed).description).toMatch(/Synth checks more than this schema/);
  });
});

/** Runs `npx tsx infra/tenants-json-schema.ts [file]` in `cwd`: its exit and output. */
function runScript(cwd: string, ...args: string[]) {
  // tsx by its resolved path: a working directory outside the repository does not resolve the bare name.
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
  return spawnSync(process.execPath, ["--import", tsx, path.resolve(import.meta.dirname, "../../infra/tenants-json-schema.ts"), ...args], { cwd, encoding: "utf8" });
}

describe("npx tsx infra/tenants-json-schema.ts", () => {
  it("writes the schema to the file given, and by default to docs/tenants.schema.json of the working directory", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "tenants-schema-"));
    const given = path.join(dir, "given.json");
    const named = runScript(dir, given);
    expect([named.status, named.stdout]).toEqual([0, `wrote ${given}\n`]);
    expect(readFileSync(given, "utf8")).toBe(renderTenantsJsonSchema());

    mkdirSync(path.join(dir, "docs"));
    const byDefault = runScript(dir);
    expect([byDefault.status, byDefault.stdout]).toEqual([0, "wrote docs/tenants.schema.json\n"]);
    expect(readFileSync(path.join(dir, "docs", "tenants.schema.json"), "utf8")).toBe(renderTenantsJsonSchema());
  });
});
