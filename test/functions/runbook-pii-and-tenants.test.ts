/**
 * docs/runbook.md's "Switching the PII mode", "Changing a webhook's credentials", "Replay from the archive" and
 * "Offboarding and renaming a tenant" held to the code: the numbers, names, results and quotes they give are read
 * from the sections and compared with the exported constants, the pollers' behaviour and the synthesized template, so
 * a doc and code that drift apart fail here.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Template } from "aws-cdk-lib/assertions";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { docSection, docText, firstNumbersSaid, firstTextsSaid, numbersSaid, textsSaid } from "../doc-text.js";
import { ROOT, seconds } from "../spec-gaps-section.js";
import { buildTestApp, EXAMPLE_TENANTS_FILE, exampleStacks } from "../infra/helpers.js";
import { cycleBudgetMs, pollerTimeout, tenantStackName, type TenantStack } from "../../infra/tenant-stack.js";
import { TENANT_DEFAULTS } from "../../infra/tenant-defaults.js";
import { parseTenantConfig, type TenantConfig } from "../../infra/tenant-config.js";
import { loadTenantsFile } from "../../infra/tenants-file.js";
import { CYCLE_SAFETY_MARGIN_MS } from "../../shared/aws/config.js";
import { PiiSaltChangedError } from "../../shared/aws/errors.js";
import { leaseNames } from "../../shared/aws/keys.js";
import { DynamoLeaseLock } from "../../shared/aws/lease-lock.js";
import { DEFAULT_QUARANTINE_RETENTION_DAYS } from "../../shared/aws/quarantine.js";
import { DEFAULT_SECRET_CACHE_TTL_MS } from "../../shared/aws/token-store.js";
import { applyPii, PII_SALT_MIN_LENGTH, piiSaltFingerprint, piiSaltProblem, REDACTED } from "../../shared/bridge/pii.js";
import { ConformIncompleteError, EXIT, PiiSaltUnchangedError } from "../../shared/cli/errors.js";
import { createHarness, TENANT, type Harness } from "./support/harness.js";

const RUNBOOK = docText("docs/runbook.md");
const PII = docSection(RUNBOOK, "Switching the PII mode");
const WEBHOOK = docSection(RUNBOOK, "Changing a webhook's credentials");
const REPLAY = docSection(RUNBOOK, "Replay from the archive");
const OFFBOARD = docSection(RUNBOOK, "Offboarding and renaming a tenant");

interface Resource {
  readonly Type: string;
  readonly DeletionPolicy?: string;
  readonly Properties?: Record<string, unknown>;
}

const resourcesOf = (template: Template): [string, Resource][] => Object.entries(template.toJSON()["Resources"] as Record<string, Resource>);
/** Kept by a stack delete: any DeletionPolicy but Delete. */
const keptByDelete = (r: Resource): boolean => r.DeletionPolicy !== undefined && r.DeletionPolicy !== "Delete";
/** A "Line in the saved list" pattern of the runbook (`Table...`, `...DeadLettersQueue...`) as a logical id test. */
const logicalIdPattern = (line: string): RegExp => new RegExp(`^${line.split("...").join("\\w*")}$`);

describe("the runbook's Offboarding lists what a stack delete keeps, as the template's deletion policies have it", () => {
  const { acme, globex } = exampleStacks();
  // The rows of the "Kept" table: the saved list's logical id pattern and resource type.
  const rows = textsSaid(OFFBOARD, /\| `([\w.]+)` `(AWS::[\w:]+)` \|/g).map(([line = "", type = ""]) => ({ id: logicalIdPattern(line), type }));

  it("names a row for every resource the delete keeps (a queue's policy goes with its queue), and no row for one it deletes", () => {
    for (const template of [acme.template, globex.template]) {
      for (const [id, resource] of resourcesOf(template).filter(([, r]) => keptByDelete(r) && r.Type !== "AWS::SQS::QueuePolicy")) {
        expect(rows.some((row) => row.type === resource.Type && row.id.test(id)), `${id} ${resource.Type}`).toBe(true);
      }
    }
    // acme creates its bus: every row names resources it keeps, and none its delete removes.
    const resources = resourcesOf(acme.template);
    for (const row of rows) {
      const matching = resources.filter(([id, r]) => r.Type === row.type && row.id.test(id));
      expect(matching.length, String(row.id)).toBeGreaterThan(0);
      for (const [id, r] of matching) expect(keptByDelete(r), id).toBe(true);
    }
  });

  it("says the key, kept last, encrypts every other kept resource and the log groups the delete removes", () => {
    expect(OFFBOARD).toContain("it encrypts every kept resource above: the table, the secret, the dead-letter queues, the archive and a created bus");
    expect(OFFBOARD).toContain("the log groups it encrypted went with the stack");
    const resources = resourcesOf(acme.template);
    const [[keyId]] = resources.filter(([, r]) => r.Type === "AWS::KMS::Key") as [[string, Resource]];
    const encrypted = resources.filter(([, r]) => (keptByDelete(r) && r.Type !== "AWS::SQS::QueuePolicy" && r.Type !== "AWS::KMS::Key") || r.Type === "AWS::Logs::LogGroup");
    expect(new Set(encrypted.map(([, r]) => r.Type)).size).toBe(6);
    for (const [id, r] of encrypted) expect(JSON.stringify(r.Properties), id).toContain(`{"Fn::GetAtt":["${keyId}","Arn"]}`);
  });

  it("says what the delete removes: none of those is retained", () => {
    const deletes = firstTextsSaid(OFFBOARD, /This deletes ([^.]+)\./)[0] ?? "";
    // The runbook's words for each kind of resource, and the type they name.
    const named: Record<string, readonly string[]> = {
      "the functions and their log groups": ["AWS::Lambda::Function", "AWS::Logs::LogGroup"],
      "the schedules and the schedule group": ["AWS::Scheduler::Schedule", "AWS::Scheduler::ScheduleGroup"],
      "the schema registry": ["AWS::EventSchemas::Registry"],
      "the webhooks' rules, connections and API destinations": ["AWS::Events::Rule", "AWS::Events::Connection", "AWS::Events::ApiDestination"],
      "the alarms": ["AWS::CloudWatch::Alarm"],
      "the dashboard": ["AWS::CloudWatch::Dashboard"],
      "the key's alias": ["AWS::KMS::Alias"],
    };
    const resources = resourcesOf(acme.template);
    for (const [words, types] of Object.entries(named)) {
      expect(deletes, words).toContain(words);
      for (const type of types) {
        const ofType = resources.filter(([, r]) => r.Type === type);
        expect(ofType.length, type).toBeGreaterThan(0);
        for (const [id, r] of ofType) expect(keptByDelete(r), id).toBe(false);
      }
    }
  });

  it("keeps only the table through a failed first create's rollback, with deletion protection on", () => {
    const alwaysKept = resourcesOf(acme.template).filter(([, r]) => r.DeletionPolicy === "Retain");
    expect(alwaysKept.map(([, r]) => r.Type)).toEqual(["AWS::DynamoDB::Table"]);
    expect(OFFBOARD).toContain("removes everything it created except the table, which is always kept");
    expect(OFFBOARD).toContain("| Table: snapshots, quarantine (deletion protection on) |");
    expect(alwaysKept[0]?.[1].Properties?.["DeletionProtectionEnabled"]).toBe(true);
  });

  it("gives the key's deletion window in days as the key has it", () => {
    const [[, key]] = Object.entries(acme.template.findResources("AWS::KMS::Key")) as [[string, Resource]];
    const window = key.Properties?.["PendingWindowInDays"];
    const said = [...numbersSaid(OFFBOARD, /--pending-window-in-days (\d+)/g), ...numbersSaid(OFFBOARD, /scheduled its key for deletion in (\d+) days/g)].flat();
    expect(said.length).toBeGreaterThanOrEqual(2);
    for (const days of said) expect(days).toBe(window);
  });

  it("names the stack, the dashboard and a created bus as the app names them, and the other fixed names as fixed", () => {
    const stacks = textsSaid(OFFBOARD, /--stack-name (QashioBridge-\$T)\b/g).flat();
    expect(stacks.length).toBeGreaterThanOrEqual(2);
    for (const name of stacks) expect(name).toBe(tenantStackName("$T"));
    const tenant = "acme-sandbox";
    const nameOf = (type: string, property: string): unknown[] =>
      resourcesOf(acme.template)
        .filter(([, r]) => r.Type === type)
        .map(([, r]) => r.Properties?.[property]);
    const [dashboard] = nameOf("AWS::CloudWatch::Dashboard", "DashboardName") as [string];
    expect(OFFBOARD).toContain(`the dashboard \`${dashboard.replace(tenant, "<tenant>")}\` has a fixed name`);
    const [bus] = nameOf("AWS::Events::EventBus", "Name") as [string];
    expect(OFFBOARD).toContain(`\`${bus.replace(tenant, "<tenant>")}\``);
    expect(OFFBOARD).toContain(`--name ${bus.replace(tenant, "$T")}`);
    // "The stack's other fixed names (alarms, schedule group, schema registry, key alias, a created bus)".
    expect(OFFBOARD).toContain("(alarms, schedule group, schema registry, key alias, a created bus)");
    for (const [type, property] of [
      ["AWS::CloudWatch::Alarm", "AlarmName"],
      ["AWS::Scheduler::ScheduleGroup", "Name"],
      ["AWS::EventSchemas::Registry", "RegistryName"],
      ["AWS::KMS::Alias", "AliasName"],
      ["AWS::Events::EventBus", "Name"],
    ] as const) {
      const names = nameOf(type, property);
      expect(names.length, type).toBeGreaterThan(0);
      for (const name of names) expect(typeof name === "string" && name.includes(tenant), `${type} ${String(name)}`).toBe(true);
    }
  });
});

describe("the runbook's Replay from the archive", () => {
  it("gives the defaults of archiveRetentionDays and maxEventAgeHours, and an archive of every tenant event", () => {
    expect(firstNumbersSaid(REPLAY, /\(`archiveRetentionDays`, default (\d+)\)/)).toEqual([TENANT_DEFAULTS.archiveRetentionDays]);
    expect(firstNumbersSaid(REPLAY, /`maxEventAgeHours` \((\d+) by default\)/)).toEqual([TENANT_DEFAULTS.webhookMaxEventAgeHours]);
    // Every event type: the archive filters on the tenant's source and id, never on a detail-type.
    const [[, archive]] = Object.entries(exampleStacks().globex.template.findResources("AWS::Events::Archive")) as [[string, Resource]];
    expect(Object.keys(archive.Properties?.["EventPattern"] as object).sort()).toEqual(["detail", "source"]);
    expect(REPLAY).toContain("Every tenant event is archived");
  });
});

describe("the runbook's Changing a webhook's credentials sets what the deploy puts into the connection", () => {
  it("names each auth.type's authorization type and the parameters the connection holds", () => {
    const [acme] = loadTenantsFile(EXAMPLE_TENANTS_FILE) as [TenantConfig];
    const [erp, audit] = acme.webhooks as [TenantConfig["webhooks"][number], TenantConfig["webhooks"][number]];
    const basic = { ...erp, name: "basic", auth: { type: "basic" as const, username: "bridge-user", password: { secretArn: "arn:aws:secretsmanager:eu-west-1:111111111111:secret:acme/basic-GhIjKl", jsonField: "password" } } };
    const webhooks = [erp, audit, basic];
    const template = Template.fromStack(buildTestApp({ tenants: [{ ...acme, webhooks }] }).stacks[0] as TenantStack);
    const connections = resourcesOf(template).filter(([, r]) => r.Type === "AWS::Events::Connection");

    // `# auth.type apiKey (--authorization-type API_KEY), ...` then the parameters, jq's object, on the next line(s).
    const said = textsSaid(WEBHOOK, /# auth\.type (\w+)[:(, ]+--authorization-type (\w+)[^{]*(\{[^#]*\}\})/g);
    expect(said.map(([type]) => type).sort()).toEqual(webhooks.map((w) => w.auth.type).sort());
    for (const [authType = "", cliType = "", shape = ""] of said) {
      const hook = webhooks.find((w) => w.auth.type === authType) as (typeof webhooks)[number];
      const [[id, connection]] = connections.filter(([logicalId]) => logicalId.startsWith(`Webhook${hook.name.replace(/-/g, "")}Connection`)) as [[string, Resource]];
      expect(id).toMatch(/^Webhook\w+Connection/);
      expect(connection.Properties?.["AuthorizationType"], authType).toBe(cliType);
      // The doc's object: keys the connection's AuthParameters hold; "<field>" the webhook's auth field, env.V the secret.
      const parameters = JSON.parse(shape.replace(/env\.V/g, '"<secret>"').replace(/(\w+):/g, '"$1":')) as Record<string, unknown>;
      const expectSame = (doc: unknown, deployed: unknown, path: string): void => {
        if (typeof doc === "object" && doc !== null) {
          for (const [key, value] of Object.entries(doc)) expectSame(value, (deployed as Record<string, unknown> | undefined)?.[key], `${path}.${key}`);
        } else if (doc === "<secret>") expect(String(deployed), path).toMatch(/^\{\{resolve:secretsmanager:/);
        else expect(deployed, path).toBe((hook.auth as Record<string, unknown>)[String(doc).slice(1, -1)]);
      };
      expectSame(parameters, connection.Properties?.["AuthParameters"], authType);
    }
  });
});

describe("the runbook's Switching the PII mode gives the numbers the code has", () => {
  it("a conform-pii invoke stops the function timeout less the margin the stack's cycle budget keeps", () => {
    const [margin] = firstNumbersSaid(PII, /the function timeout less (\d+) s/);
    expect(margin).toBe(seconds(CYCLE_SAFETY_MARGIN_MS));
    const timeout = pollerTimeout(TENANT_DEFAULTS.transactionsEveryMinutes);
    expect(seconds(timeout.toMilliseconds() - cycleBudgetMs(timeout))).toBe(margin);
  });

  it("the transaction schedule's default and longest interval, the secret cache, the quarantine retention, the salt's length and fingerprint", () => {
    const [every] = firstNumbersSaid(PII, /`schedules\.transactionsEveryMinutes`, (\d+) minutes by default, up to a day\)/);
    expect(every).toBe(TENANT_DEFAULTS.transactionsEveryMinutes);
    const raw = JSON.parse(readFileSync(join(ROOT, "infra/tenants.example.json"), "utf8")) as { tenants: [Record<string, unknown>] };
    // SyncLag's threshold must exceed the schedule: past a day for the longest.
    const withEvery = (minutes: number) => () =>
      parseTenantConfig({ ...raw.tenants[0], schedules: { transactionsEveryMinutes: minutes }, alarms: { ...(raw.tenants[0]["alarms"] as object), syncLagThresholdSeconds: 2 * 86_400 } });
    expect(withEvery(24 * 60)).not.toThrow();
    expect(withEvery(24 * 60 + 1)).toThrow();

    expect(firstNumbersSaid(PII, /read the secret again within (\d+) minutes/)).toEqual([DEFAULT_SECRET_CACHE_TTL_MS / 60_000]);
    const retention = [...numbersSaid(PII, /their (\d+)-day retention starts over/g), ...numbersSaid(PII, /expires (\d+) days after it was last found/g)].flat();
    expect(retention).toEqual([DEFAULT_QUARANTINE_RETENTION_DAYS, DEFAULT_QUARANTINE_RETENTION_DAYS]);

    const shortest = [...numbersSaid(PII, /shorter than (\d+) characters/g), ...numbersSaid(PII, /Below (\d+),/g)].flat();
    expect(shortest.length).toBeGreaterThanOrEqual(2);
    expect(new Set(shortest)).toEqual(new Set([PII_SALT_MIN_LENGTH]));
    const length = shortest[0] ?? 0;
    expect(piiSaltProblem("s".repeat(length - 1))).toBeDefined();
    expect(piiSaltProblem("s".repeat(length))).toBeUndefined();
    const [digits] = firstNumbersSaid(PII, /\((\d+) hex digits;/);
    expect(piiSaltFingerprint("s".repeat(length))).toMatch(new RegExp(`^[0-9a-f]{${digits}}$`));
  });

  it("point-in-time recovery is on, with the period the runbook gives (AWS's default of 35 days unless the table sets one)", () => {
    const [[, table]] = Object.entries(exampleStacks().acme.template.findResources("AWS::DynamoDB::Table")) as [[string, Resource]];
    const recovery = table.Properties?.["PointInTimeRecoverySpecification"] as { PointInTimeRecoveryEnabled: boolean; RecoveryPeriodInDays?: number };
    expect(recovery.PointInTimeRecoveryEnabled).toBe(true);
    expect(firstNumbersSaid(PII, /point-in-time recovery keeps the table's earlier states for (\d+) days/)).toEqual([recovery.RecoveryPeriodInDays ?? 35]);
  });

  it("the transaction poller takes one invocation at a time: a hand-made invoke meets TooManyRequestsException while a scheduled one runs", () => {
    expect(PII).toContain("the invoke is refused with `TooManyRequestsException` instead");
    const pollers = resourcesOf(exampleStacks().acme.template).filter(([id, r]) => r.Type === "AWS::Lambda::Function" && id.startsWith("PollTransactionsFunction"));
    expect(pollers.map(([, r]) => r.Properties?.["ReservedConcurrentExecutions"])).toEqual([1]);
  });

  it("masks the fields After upgrading lists, in a transaction, a card and a pool account", () => {
    const sentence = firstTextsSaid(PII, /this one also masks (.+?) \(the spec shows them/)[0] ?? "";
    const fields = [...sentence.matchAll(/`([\w.]+)`/g)].map((m) => m[1] ?? "");
    expect(fields.length).toBeGreaterThanOrEqual(10);
    for (const field of fields) {
      // The field at its path, inside an object it may sit in (a bare name: any object, say a pool account's).
      const object: Record<string, unknown> = {};
      const path = field.split(".");
      let at = object;
      for (const key of path.slice(0, -1)) at = (at[key] = {}) as Record<string, unknown>;
      at[path.at(-1) ?? ""] = "Ann Example";
      let masked: unknown = applyPii(object, { mode: "redact" });
      for (const key of path) masked = (masked as Record<string, unknown>)[key];
      expect(masked, field).toBe(REDACTED);
    }
  });

  it("local exit codes and the --new-pii-salt refusal it quotes", () => {
    expect(firstNumbersSaid(PII, /exit (\d+): done; exit (\d+): stopped at/)).toEqual([EXIT.ok, new ConformIncompleteError("stopped", undefined).exitCode]);
    expect(firstNumbersSaid(PII, /exit (\d+) when the cursor is refused/)).toEqual([EXIT.usage]);
    const [quoted = ""] = firstTextsSaid(PII, /exit (\d+) before any provider call or write, `(--new-pii-salt refused: [^`]+)`/).slice(1);
    const refusal = new PiiSaltUnchangedError("/srv/state");
    expect(refusal.message.replace("(/srv/state)", "(...)")).toContain(quoted);
    expect(firstNumbersSaid(PII, /with exit (\d+) before any provider call or write, `--new-pii-salt refused/)).toEqual([refusal.exitCode]);
    expect(new PiiSaltChangedError("secret", "table", { pk: "PII#t", sk: "SALT" }).name).toBe(firstTextsSaid(PII, /fails with `(\w+)` before any provider call or write/)[0]);
  });
});

describe("the runbook's Switching the PII mode shows the conform-pii results and log the poller gives", () => {
  let h: Harness;
  beforeEach(async () => {
    h = await createHarness();
  });
  afterEach(async () => h.close());

  it("skips with the result and log line it quotes while a card cycle holds its lease", async () => {
    const lock = new DynamoLeaseLock({ doc: h.table.doc, tableName: h.table.tableName, clock: h.clock });
    expect(await lock.tryAcquire(leaseNames.cardsCycle(TENANT), 60_000)).toBeDefined();
    const [shown = ""] = firstTextsSaid(PII, /- `("status":"skipped"[^`]*)`: a transaction or card cycle holds its lease/);
    expect(await h.poller("transactions")({ action: "conform-pii" })).toMatchObject(JSON.parse(`{${shown}}`) as object);
    const [message = "", action = ""] = firstTextsSaid(PII, /Its log line, `([^`]+)`, has `action` `([\w-]+)` and, in `kind`, the cycle whose lease is held/);
    const skipped = h.output.map((line) => JSON.parse(line) as Record<string, unknown>).filter((doc) => doc["message"] === message);
    expect(skipped).toEqual([expect.objectContaining({ action, kind: "cards" })]);
  });

  it("reports rewritten 0 when run again, full_mode with nothing read under full, and ConformCursorError for an edited cursor", async () => {
    await h.poller("transactions")();
    expect(await h.poller("transactions")({ action: "conform-pii" })).toMatchObject({ outcome: "complete" });
    const [again = ""] = firstTextsSaid(PII, /once everything is masked it reports `"(\w+)":0`/);
    expect(await h.poller("transactions")({ action: "conform-pii" })).toMatchObject({ outcome: "complete", [again]: 0 });
    const [edited = ""] = firstTextsSaid(PII, /The invoke fails with `(\w+)` \(its message says why\)/);
    await expect(h.poller("transactions")({ action: "conform-pii", cursor: "edited-by-hand" })).rejects.toMatchObject({ name: edited });
    h.env.PII_MODE = "full";
    const [fullMode = ""] = firstTextsSaid(PII, /`"outcome":"(\w+)"`: the deployed mode is `full`; nothing was read/);
    expect(await h.poller("transactions")({ action: "conform-pii" })).toMatchObject({ outcome: fullMode, scanned: 0, rewritten: 0 });
  });
});
