/**
 * A platform engineer's typical mistakes in a tenants file, as synth reports them: each message names the tenant, the
 * field and what to do about it.
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { TenantConfigError } from "../../infra/errors.js";
import { loadTenantsFile } from "../../infra/tenants-file.js";
import { EXAMPLE_TENANTS_FILE, REPO_ROOT } from "./helpers.js";
import { thrown } from "../thrown.js";

const dir = mkdtempSync(join(tmpdir(), "tenants-try-"));
const example = JSON.parse(readFileSync(EXAMPLE_TENANTS_FILE, "utf8")) as { tenants: Record<string, unknown>[] };

/** The synth message for the example file with a third tenant `initech`, changed by `edit`. */
function messageFor(edit: (tenant: Record<string, unknown>) => void): string {
  const initech: Record<string, unknown> = { id: "initech", environment: "eu", eventSource: "initech.qashio.bridge", alarms: { email: "ops@initech.example" } };
  edit(initech);
  const path = join(dir, "tenants.json");
  writeFileSync(path, JSON.stringify({ tenants: [...example.tenants, initech] }, null, 2));
  return thrown(() => loadTenantsFile(path), TenantConfigError).message;
}

/** A valid apiKey webhook of initech, its auth and its own fields changed by `auth` and `fields` (undefined drops one). */
function webhook(auth: Record<string, unknown>, fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: "erp",
    url: "https://erp.initech.example/hooks",
    eventTypes: ["transaction.created"],
    auth: { type: "apiKey", headerName: "x-api-key", value: { secretArn: "arn:aws:secretsmanager:eu-west-1:111111111111:secret:initech/erp-AbCdEf" }, ...auth },
    ...fields,
  };
}

describe("a tenants file's mistakes, as synth names them", () => {
  it("names the field a misspelt key was meant to be", () => {
    expect(messageFor((t) => (t.archiveRetentionDay = 7))).toBe(
      'tenant "initech": field archiveRetentionDay: Unrecognized key: "archiveRetentionDay" (did you mean "archiveRetentionDays"?)',
    );
    expect(messageFor((t) => (t.schedules = { enable: false }))).toBe(
      'tenant "initech": field schedules.enable: Unrecognized key: "enable" (did you mean "enabled"?)',
    );
  });

  it("is what docs/tenants-file.md quotes for a misspelt key", () => {
    const message = messageFor((t) => (t.archiveRetentionDay = 7)).replace('tenant "initech": ', "");
    expect(readFileSync(join(REPO_ROOT, "docs", "tenants-file.md"), "utf8")).toContain(`\`${message}\``);
  });

  it("names the field meant for each of several misspelt keys of one object", () => {
    const message = messageFor((t) => {
      t.enviroment = t.environment;
      delete t.environment;
      t.piiMod = "hash";
    });
    expect(message).toMatch(
      /^tenant "initech": field enviroment: Unrecognized keys: "enviroment", "piiMod" \(did you mean "environment" for "enviroment", "piiMode" for "piiMod"\?\); field environment: is required$/,
    );
  });

  it("names the field a misspelt key of eventBus was meant to be", () => {
    expect(messageFor((t) => (t.eventBus = { mode: "import", nmae: "initech-finance" }))).toBe(
      'tenant "initech": field eventBus: "nmae" is not a field of eventBus (did you mean "name"?), which must be { "mode": "create" } or { "mode": "import", "name" | "arn": ... }',
    );
  });

  it("names the eventBus mode a mistyped one was meant to be", () => {
    expect(messageFor((t) => (t.eventBus = { mode: "imprt", name: "initech-finance" }))).toBe(
      'tenant "initech": field eventBus: must be { "mode": "create" } or { "mode": "import", "name" | "arn": ... } (did you mean "import"?)',
    );
  });

  it("suggests no field the object already sets, nor one too far from the key", () => {
    expect(messageFor((t) => (t.eventSourc = "x"))).toBe('tenant "initech": field eventSourc: Unrecognized key: "eventSourc"');
    expect(messageFor((t) => (t.colour = "red"))).toBe('tenant "initech": field colour: Unrecognized key: "colour"');
  });

  it("says a missing required field is required, not that it was undefined", () => {
    expect(messageFor((t) => delete t.alarms)).toBe('tenant "initech": field alarms: is required');
    expect(messageFor((t) => delete t.environment)).toBe('tenant "initech": field environment: is required');
  });

  it("names the option a mistyped one was meant to be", () => {
    expect(messageFor((t) => (t.piiMode = "hashed"))).toBe('tenant "initech": field piiMode: Invalid option: expected one of "full"|"redact"|"hash" (did you mean "hash"?)');
    expect(messageFor((t) => (t.piiMode = "Redact"))).toBe('tenant "initech": field piiMode: Invalid option: expected one of "full"|"redact"|"hash" (did you mean "redact"?)');
    expect(messageFor((t) => (t.piiMode = "mask"))).toBe('tenant "initech": field piiMode: Invalid option: expected one of "full"|"redact"|"hash"');
  });

  it("names the webhook auth type a mistyped one was meant to be", () => {
    expect(messageFor((t) => (t.webhooks = [webhook({ type: "apikey" })]))).toBe(
      `tenant "initech": field webhooks[0].auth.type: Invalid discriminator value. Expected 'apiKey' | 'basic' | 'oauthClientCredentials' (did you mean "apiKey"?)`,
    );
    expect(messageFor((t) => (t.webhooks = [webhook({ type: "bearer" })]))).toBe(
      `tenant "initech": field webhooks[0].auth.type: Invalid discriminator value. Expected 'apiKey' | 'basic' | 'oauthClientCredentials'`,
    );
  });

  it("says a webhook auth left without its type is required, naming the types", () => {
    expect(messageFor((t) => (t.webhooks = [webhook({ type: undefined })]))).toBe(
      'tenant "initech": field webhooks[0].auth.type: is required: expected one of "apiKey"|"basic"|"oauthClientCredentials"',
    );
  });

  it("says a webhook's missing url is required, not that it must be an https:// URL", () => {
    expect(messageFor((t) => (t.webhooks = [webhook({}, { url: undefined })]))).toBe('tenant "initech": field webhooks[0].url: is required');
    const clientSecret = { secretArn: "arn:aws:secretsmanager:eu-west-1:111111111111:secret:initech/oauth-AbCdEf" };
    const oauth = { type: "oauthClientCredentials", headerName: undefined, value: undefined, clientId: "bridge", clientSecret };
    expect(messageFor((t) => (t.webhooks = [webhook(oauth)]))).toBe('tenant "initech": field webhooks[0].auth.tokenUrl: is required');
  });

  it("still names a value of the wrong type by what it must be", () => {
    expect(messageFor((t) => (t.emitCardCreated = "true"))).toBe('tenant "initech": field emitCardCreated: Invalid input: expected boolean, received string');
  });
});

describe("a tenants file that is no JSON document", () => {
  it("names the line and column of a syntax error, not only the character offset", () => {
    const path = join(dir, "syntax.json");
    writeFileSync(path, '{\n  "tenants": [\n    { "id": "initech" "environment": "eu" }\n  ]\n}\n');
    expect(thrown(() => loadTenantsFile(path), TenantConfigError).message).toMatch(/is not valid JSON \(YAML is not supported\): .*\(line 3, column 23\)$/);
  });

  it("says a file of a bare list of tenants must be an object holding them", () => {
    const path = join(dir, "list.json");
    writeFileSync(path, JSON.stringify(example.tenants));
    expect(thrown(() => loadTenantsFile(path), TenantConfigError).message).toBe(
      'tenants file: field (root): must be an object holding the tenants, {"tenants": [ ... ]}; got an array',
    );
  });

  it("names the kind of any other JSON value a file holds instead", () => {
    const path = join(dir, "scalar.json");
    const kinds = ['"tenants"', "null", "42"].map((text) => {
      writeFileSync(path, text);
      return /; got (.*)$/.exec(thrown(() => loadTenantsFile(path), TenantConfigError).message)?.[1];
    });
    expect(kinds).toEqual(["a string", "null", "a number"]);
  });

  it("says an empty file is empty", () => {
    const path = join(dir, "empty.json");
    writeFileSync(path, " \n");
    expect(thrown(() => loadTenantsFile(path), TenantConfigError).message).toBe(`tenants file ${path} is empty: it must hold {"tenants": [ ... ]}`);
  });
});
