import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { bridgeAppOptionsFromContext } from "../../infra/app-context.js";
import { heartbeatAlarmWindow } from "../../infra/constructs/alarm-window.js";
import { MAX_WEBHOOKS_PER_TENANT } from "../../infra/tenant-config.js";
import { parseTenantsDocument } from "../../infra/tenants-document.js";
import { docSection, docText } from "../doc-text.js";
import { exampleStacks, REPO_ROOT, rotationWindow, testApp } from "./helpers.js";
import type { PolicyStatement } from "./iam-evaluator.js";

const read = (...path: string[]): string => readFileSync(join(REPO_ROOT, ...path), "utf8");

/** The `- **<name>.**` bullet of docs/spec-gaps.md, up to the next top-level bullet or heading. */
function specGapsBullet(name: string): string {
  const bullet = new RegExp(String.raw`^- \*\*${name}\.\*\*[^]*?(?=\n- \*\*|\n#)`, "m").exec(read("docs", "spec-gaps.md"))?.[0];
  expect(bullet, name).toBeDefined();
  return bullet ?? "";
}

const actionsOf = (s: PolicyStatement): string[] => (Array.isArray(s.Action) ? s.Action : [s.Action]);

describe("docs/spec-gaps.md's key use of the functions", () => {
  it("gives no function kms:Encrypt or kms:ReEncrypt, as neither the roles' policies nor the key policy do", () => {
    for (const { template } of Object.values(exampleStacks())) {
      const roleStatements = Object.values(template.findResources("AWS::IAM::Policy")).flatMap(
        (policy) => (policy as { Properties: { PolicyDocument: { Statement: PolicyStatement[] } } }).Properties.PolicyDocument.Statement,
      );
      expect(roleStatements.flatMap(actionsOf).filter((action) => /^kms:(Re)?Encrypt/.test(action))).toEqual([]);
      const key = Object.values(template.findResources("AWS::KMS::Key"))[0] as { Properties: { KeyPolicy: { Statement: PolicyStatement[] } } };
      const toRoles = key.Properties.KeyPolicy.Statement.filter((st) => JSON.stringify(st.Principal?.AWS ?? "").includes("Fn::GetAtt"));
      expect(toRoles).toEqual([]);
    }
    // The rotation's RotationSchedule is built on a keyless view of the secret (tenant-secret.ts), so CDK's grant of
    // Encrypt, ReEncrypt* and GenerateDataKey* to the rotation role is not made: the notes must not say it is.
    for (const name of ["Least privilege", "Encryption"]) {
      expect(specGapsBullet(name), name).not.toMatch(/[Rr]otation[^.]*\b(?:kms:)?(?:Re)?Encrypt\b/);
    }
    expect(specGapsBullet("Least privilege")).toMatch(/\*KMS\*[^.]*no role[^.]*`kms:Encrypt`/);
  });
});

/** Every property of the tenants file's JSON Schema, nested ones included, with its default when it has one. */
function schemaProperties(node: unknown, found: { name: string; default: unknown }[] = []): { name: string; default: unknown }[] {
  if (Array.isArray(node)) for (const item of node) schemaProperties(item, found);
  if (typeof node !== "object" || node === null || Array.isArray(node)) return found;
  const schema = node as { properties?: Record<string, { default?: unknown }> } & Record<string, unknown>;
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    found.push({ name, default: property.default });
    schemaProperties(property, found);
  }
  for (const key of ["items", "anyOf", "oneOf", "allOf"]) schemaProperties(schema[key], found);
  return found;
}

describe("README's Describe the tenant", () => {
  const section = (): string => /^### 1\. Describe the tenant\n([^]*?)^### 2\./m.exec(read("README.md"))?.[1] ?? "";

  it("shows a tenants file synth accepts once its comments are taken out, as a reader copying it would", () => {
    const example = /```json\n([^]*?)```/.exec(section())?.[1] ?? "";
    // A comment starts at `//` after a blank; the `//` of a URL follows its scheme's colon.
    const json = example.replace(/(^|\s)\/\/\s.*$/gm, "");
    const [tenant, ...more] = parseTenantsDocument(JSON.parse(json));
    expect(more).toEqual([]);
    expect(tenant?.webhooks.map((hook) => hook.name)).toEqual(["erp"]);
  });

  it("names every field of the tenants file, and each scalar default beside its field", () => {
    const properties = schemaProperties(JSON.parse(read("docs", "tenants.schema.json")));
    expect(properties.length).toBeGreaterThan(30);
    for (const { name, default: value } of properties) {
      const lines = section().split("\n").filter((line) => line.includes(`"${name}"`));
      expect(lines.length, name).toBeGreaterThan(0);
      // Objects and lists ({}, [], { "mode": "create" }) are described in words; a number, word or flag is shown.
      if (value === undefined || typeof value === "object") continue;
      const shown = lines.some((line) => /\bdefaults?\b/.test(line) && new RegExp(String.raw`\b${String(value).replaceAll(".", String.raw`\.`)}\b`).test(line));
      expect(shown, `${name}: default ${String(value)}`).toBe(true);
    }
  });
});

/** README's "Deploying a tenant", all four parts, line breaks read as spaces. */
const DEPLOYING = docSection(docText("README.md"), "Deploying a tenant");

describe("README's Deploying a tenant, for the platform engineer handing a tenant over", () => {
  it("names every output of a tenant's stack", () => {
    const outputs = Object.keys((exampleStacks().globex.template.toJSON() as { Outputs: Record<string, unknown> }).Outputs);
    expect(outputs.length).toBeGreaterThan(0);
    expect(outputs.filter((key) => !DEPLOYING.includes(`\`${key}\``))).toEqual([]);
  });

  it("says what the tenant's consumers subscribe to: its bus, its source, and the rule patterns in docs/events.md", () => {
    expect(DEPLOYING).toMatch(/`EventBusName` output[^]*`eventSource`[^]*`detail\.tenant`[^]*\(docs\/events\.md#subscribing\)/);
  });
});

describe("README's Deploying a tenant, on the numbers and names it gives", () => {
  const windowMinutes = (everyMinutes: number): number => {
    const window = heartbeatAlarmWindow(everyMinutes);
    return window.period.toMinutes() * window.evaluationPeriods;
  };

  it("gives the heartbeat windows of its examples as heartbeatAlarmWindow builds them", () => {
    const [, minutes, every] = /so (\d+) minutes for a (\d+)-minute schedule/.exec(DEPLOYING) ?? [];
    expect(windowMinutes(Number(every))).toBe(Number(minutes));
    const [, hours] = /so (\d+) hours for a daily schedule/.exec(DEPLOYING) ?? [];
    expect(windowMinutes(24 * 60)).toBe(Number(hours) * 60);
  });

  it("gives the hours of the token rotation's daily window", () => {
    const { start, end } = rotationWindow();
    expect(DEPLOYING).toContain(`rotates the token daily between ${start} and ${end} UTC`);
  });

  it("gives the tenant's webhook cap", () => {
    expect(DEPLOYING).toContain(`A tenant takes at most ${MAX_WEBHOOKS_PER_TENANT} webhooks`);
  });

  it("names as the app's settings context keys the app reads: each, misspelt, fails synth naming it", () => {
    const listed = /The app's settings are the context values ([^(]*)\(/.exec(DEPLOYING)?.[1] ?? "";
    const names = [...listed.matchAll(/`(\w+)`/g)].map((m) => m[1] as string);
    expect(names.length).toBeGreaterThan(2);
    for (const name of names) {
      expect(() => bridgeAppOptionsFromContext(testApp({ [`${name}s`]: "x" }), {}), name).toThrow(`did you mean ${name}?`);
    }
  });
});
