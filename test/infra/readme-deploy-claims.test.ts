/**
 * README's "Deploying a tenant" held to the code: the names, numbers and quoted messages of its four parts (describe
 * the tenant, synthesise and deploy, onboard, operate) that deploy-docs.test.ts and the config tests do not read from
 * the README itself. Each is read from the section and compared with what the code builds or answers.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Template } from "aws-cdk-lib/assertions";
import { FLAGS } from "aws-cdk-lib/cx-api";
import { describe, expect, it } from "vitest";
import { bridgeAppOptionsFromContext } from "../../infra/app-context.js";
import { heartbeatAlarmWindow } from "../../infra/constructs/alarm-window.js";
import { providerUrlsFrom, resolveProviderUrl } from "../../infra/provider-urls.js";
import { runbookUrlFrom } from "../../infra/runbook-link.js";
import { MAX_WEBHOOKS_PER_TENANT, parseTenantConfig, type TenantConfig } from "../../infra/tenant-config.js";
import { tenantStackName, type TenantStack } from "../../infra/tenant-stack.js";
import { loadTenantsFile } from "../../infra/tenants-file.js";
import { pollActionOf, type PollEvent } from "../../shared/aws/poll-event.js";
import { piiSaltProblem } from "../../shared/bridge/pii.js";
import { docSection, docText, firstNumbersSaid, firstTextsSaid, quotedNames, textsSaid } from "../doc-text.js";
import { expectCitationsHold, ROOT } from "../spec-gaps-section.js";
import { EXAMPLE_TENANTS_FILE, entryRefusal, exampleStacks, fastPathGlobex, tenantEntry, testApp } from "./helpers.js";

const SECTION = docSection(docText("README.md"), "Deploying a tenant");
const readJson = (path: string): Record<string, unknown> => JSON.parse(readFileSync(join(ROOT, path), "utf8")) as Record<string, unknown>;

interface Resource {
  readonly Type: string;
  readonly DeletionPolicy?: string;
  readonly Properties?: Record<string, unknown>;
}
interface TemplateJson {
  readonly Resources: Record<string, Resource>;
  readonly Outputs: Record<string, { readonly Value: unknown }>;
}
const resourcesIn = (template: Template): [string, Resource][] => Object.entries((template.toJSON() as TemplateJson).Resources);
const resourcesOf = (stack: "acme" | "globex"): [string, Resource][] => resourcesIn(exampleStacks()[stack].template);
const outputsOf = (stack: "acme" | "globex"): TemplateJson["Outputs"] => (exampleStacks()[stack].template.toJSON() as TemplateJson).Outputs;
const ofType = (stack: "acme" | "globex", type: string): [string, Resource][] => resourcesOf(stack).filter(([, r]) => r.Type === type);
const alarmNames = (resources: [string, Resource][]): string[] =>
  resources.filter(([, r]) => r.Type === "AWS::CloudWatch::Alarm").map(([, r]) => String(r.Properties?.["AlarmName"]));
const exampleTenant = (id: string): TenantConfig => loadTenantsFile(EXAMPLE_TENANTS_FILE).find((t) => t.id === id) as TenantConfig;
/** The example app's stacks with the id of the tenant each is built for (the tenants file's order). */
const stacksWithIds = (): { id: string; stack: TenantStack; template: Template }[] => {
  const { acme, globex } = exampleStacks();
  const ids = loadTenantsFile(EXAMPLE_TENANTS_FILE).map((t) => t.id);
  return [acme, globex].map((s, i) => ({ id: ids[i] ?? "", ...s }));
};

describe("README, Deploying a tenant: the stacks and the app", () => {
  it("names each tenant's stack QashioBridge-<tenant>, as the app names them", () => {
    const [pattern = ""] = firstTextsSaid(SECTION, /its own CloudFormation stack, `([^`]+)`/);
    for (const { id, stack } of stacksWithIds()) {
      expect(stack.stackName).toBe(pattern.replace("<tenant>", id));
      expect(tenantStackName(id)).toBe(stack.stackName);
    }
  });

  it("gives the command cdk.json runs, and the script npm run synth runs with the example tenants file", () => {
    const [app = ""] = firstTextsSaid(SECTION, /`cdk\.json` runs `([^`]+)`/);
    expect(readJson("cdk.json")["app"]).toBe(app);
    const [example = ""] = firstTextsSaid(SECTION, /The example, `([^`]+)`, has/);
    expect((readJson("package.json")["scripts"] as Record<string, string>)["synth"]).toContain(`-c tenantsFile=${example}`);
  });

  it("describes the example's two tenants as the example file sets them", () => {
    const [count = 0] = firstNumbersSaid(SECTION, /The example, `[^`]+`, has (\w+) tenants/);
    const tenants = loadTenantsFile(EXAMPLE_TENANTS_FILE);
    expect(tenants.length).toBe(count);
    const [acmeId = "", acmeSaid = "", globexId = "", globexSaid = ""] = firstTextsSaid(SECTION, /tenants: `([\w-]+)` \(([^)]+)\) and `([\w-]+)` \(([^)]+)\)/);
    const [acme, globex] = [exampleTenant(acmeId), exampleTenant(globexId)];
    // acme-sandbox: "provider sandbox, its own bus, two webhooks, alarms to an existing SNS topic, so pinned to an account and region"
    expect(acme.environment).toBe("sandbox");
    expect(acmeSaid).toMatch(/^provider sandbox, its own bus, (\w+) webhooks, alarms to an existing SNS topic, so pinned to an account and region$/);
    expect(acme.eventBus.mode).toBe("create");
    expect(acme.webhooks.length).toBe(firstNumbersSaid(acmeSaid, /bus, (\w+) webhooks/)[0]);
    expect([acme.alarms.topicArn !== undefined, acme.account !== undefined, acme.region !== undefined]).toEqual([true, true, true]);
    // globex: "production, an existing bus, alarms by email"
    expect(globexSaid).toBe("production, an existing bus, alarms by email");
    expect([globex.environment, globex.eventBus.mode, globex.alarms.email !== undefined]).toEqual(["production", "import", true]);
  });

  it("cites code and files that exist", () => {
    expect(expectCitationsHold(SECTION)).toBeGreaterThan(0);
  });
});

describe("README, Describe the tenant: what synth checks and says", () => {
  it("quotes synth's refusal of a transactions schedule of 0 as the tenant parser words it", () => {
    const [quote = ""] = firstTextsSaid(SECTION, /e\.g\. `qashio-bridge synth failed: (tenant "globex": field schedules\.transactionsEveryMinutes: [^`]+)`/);
    expect(entryRefusal(tenantEntry({ id: "globex", schedules: { transactionsEveryMinutes: 0 } }))).toBe(quote);
  });

  it("names the JSON Schema member the example file carries, relative to the tenants file", () => {
    const [member = ""] = firstTextsSaid(SECTION, /as the example does: `"\$schema": "([^"]+)"`/);
    expect(readJson("infra/tenants.example.json")["$schema"]).toBe(member);
    expect(() => readFileSync(join(dirname(EXAMPLE_TENANTS_FILE), member))).not.toThrow();
  });

  it("names the variables that give each deployment's base URL, each winning over the cdk context, an http:// one refused by name", () => {
    const [variables = ""] = firstTextsSaid(SECTION, /base URLs for `production`, `eu` and `sandbox` come from ((?:`\w+`,? )+)or, failing those, the context `qashioUrls`/);
    const named = quotedNames(variables);
    expect(named.length).toBe(3);
    const deployments = ["production", "eu", "sandbox"] as const;
    named.forEach((variable, i) => {
      const deployment = deployments[i] as (typeof deployments)[number];
      const urls = providerUrlsFrom({ [deployment]: "https://context.provider.test" }, { [variable]: "https://env.provider.test" });
      expect(urls[deployment], variable).toBe("https://env.provider.test");
      const tenant = parseTenantConfig({ ...tenantEntry(), environment: deployment });
      expect(() => resolveProviderUrl(tenant, providerUrlsFrom(undefined, { [variable]: "http://provider.test" })), variable).toThrow(variable);
      expect(() => resolveProviderUrl(tenant, providerUrlsFrom({ [deployment]: "http://127.0.0.1:8080" }, {}))).toThrow(`"${deployment}" in the cdk context qashioUrls`);
    });
  });

  it("refuses a -c qashioUrls that is no such JSON object or names another deployment, as it says", () => {
    const [example = ""] = firstTextsSaid(SECTION, /which `-c '(qashioUrls=[^`]+)'` replaces/);
    expect(example).toMatch(/^qashioUrls=\{"sandbox":"https:\/\//);
    for (const value of ["{sandbox: https://x}", '["https://x"]', '{"staging":"https://provider.test"}']) {
      expect(() => providerUrlsFrom(value, {}), value).toThrow("qashioUrls");
    }
  });

  it("gives the resources a webhook adds, and a cap that keeps the largest stack under CloudFormation's limit", () => {
    const [cap = 0, perHook = 0, limit = 0] = firstNumbersSaid(SECTION, /at most (\d+) webhooks: each adds (\d+) resources to its stack, and CloudFormation refuses a stack of more than (\d+)/);
    expect(cap).toBe(MAX_WEBHOOKS_PER_TENANT);
    const resources = resourcesOf("acme");
    const hooks = exampleTenant("acme-sandbox").webhooks.map((hook) => `Webhook${hook.name.replace(/[^A-Za-z0-9]/g, "")}`);
    expect(hooks.length).toBeGreaterThan(0);
    for (const hook of hooks) expect(resources.filter(([id]) => id.includes(hook)).length, hook).toBe(perHook);
    const withoutHooks = resources.length - hooks.length * perHook;
    expect(withoutHooks + cap * perHook).toBeLessThanOrEqual(limit);
  });
});

describe("README, Synthesise and deploy", () => {
  it("counts the feature flags CDK's closing line reports unconfigured: unset in cdk.json and defaulting off their recommended value", () => {
    const [said = 0] = firstNumbersSaid(SECTION, /Its closing line, "(\d+) feature flags are not configured"/);
    const context = readJson("cdk.json")["context"] as Record<string, unknown>;
    // The CLI's count (cdk flags, "needs attention"): a flag of the library not set, whose unset value is not the
    // recommended one.
    const unconfigured = Object.entries(FLAGS).filter(
      ([name, flag]) => context[name] === undefined && (flag.unconfiguredBehavesLike?.v2 ?? false) !== flag.recommendedValue,
    );
    expect(unconfigured.length).toBe(said);
  });

  it("quotes the refusal of a synth without tenantsFile, and fails on the misspellings it gives naming the setting meant", () => {
    const [quote = ""] = firstTextsSaid(SECTION, /fails with `(context tenantsFile is not set)`/);
    expect(() => bridgeAppOptionsFromContext(testApp(), {})).toThrow(quote);
    const [examples = ""] = firstTextsSaid(SECTION, /one of them misspelt \(([^)]+)\) fails synth naming the one meant/);
    const misspelt = quotedNames(examples).map((name) => name.replace(/^-c /, "").replace(/=.*$/, ""));
    expect(misspelt.length).toBe(2);
    for (const name of misspelt) {
      const meant = quotedNames(firstTextsSaid(SECTION, /The app's settings are the context values ([^(]*)\(/)[0] ?? "").find((s) => s.toLowerCase().startsWith(name.toLowerCase()));
      expect(meant, name).toBeDefined();
      expect(() => bridgeAppOptionsFromContext(testApp({ [name]: "x" }), {}), name).toThrow(`did you mean ${meant}?`);
    }
  });

  it("reserves as many concurrent executions for each poller as it says, and for no other function", () => {
    const [each = 0] = firstNumbersSaid(SECTION, /The pollers reserve (\w+) concurrent execution each/);
    for (const stack of ["acme", "globex"] as const) {
      const reserved = ofType(stack, "AWS::Lambda::Function").filter(([, r]) => r.Properties?.["ReservedConcurrentExecutions"] !== undefined);
      expect(reserved.map(([id]) => id.replace(/Function[0-9A-F]{8}$/, ""))).toEqual(["PollTransactions", "PollCards"]);
      expect(reserved.map(([, r]) => r.Properties?.["ReservedConcurrentExecutions"])).toEqual([each, each]);
    }
  });

  it("counts per stack the schema registries, Metrics Insights alarms and created buses it says meet the region's quotas", () => {
    expect(SECTION).toContain("each stack creates one, so ask for more");
    const [insights = 0] = firstNumbersSaid(SECTION, /Each stack also has (\w+) Metrics Insights alarm/);
    const [insightsAlarm = ""] = firstTextsSaid(SECTION, /Metrics Insights alarm \(`(\w+)`/);
    for (const stack of ["acme", "globex"] as const) {
      expect(ofType(stack, "AWS::EventSchemas::Registry").length, stack).toBe(1);
      const selects = ofType(stack, "AWS::CloudWatch::Alarm").filter(([, r]) => /"Expression":"SELECT /.test(JSON.stringify(r.Properties?.["Metrics"] ?? [])));
      expect(selects.length, stack).toBe(insights);
      expect(alarmNames(selects).every((name) => name.endsWith(`-${insightsAlarm}`)), stack).toBe(true);
    }
    // "each tenant with `eventBus` mode `create` (the default) adds an event bus": acme creates its bus, globex imports one.
    const [mode = ""] = firstTextsSaid(SECTION, /each tenant with `eventBus` mode `(\w+)` \(the default\) adds an event bus/);
    expect(exampleTenant("acme-sandbox").eventBus.mode).toBe(mode);
    expect(parseTenantConfig(tenantEntry()).eventBus.mode).toBe(mode);
    expect([ofType("acme", "AWS::Events::EventBus").length, ofType("globex", "AWS::Events::EventBus").length]).toEqual([1, 0]);
  });

  it("keeps only the table through the rollback of a failed first deploy: every other kept resource is kept except on create", () => {
    expect(SECTION).toContain("the rollback removes what it created except the empty table");
    for (const stack of ["acme", "globex"] as const) {
      const keptOnCreate = resourcesOf(stack).filter(([, r]) => r.DeletionPolicy === "Retain" || r.DeletionPolicy === "Snapshot");
      expect(keptOnCreate.map(([, r]) => r.Type), stack).toEqual(["AWS::DynamoDB::Table"]);
    }
  });

  it("gives the rules of runbookUrl as runbookUrlFrom applies them, each refusal naming runbookUrl", () => {
    const [example = ""] = firstTextsSaid(SECTION, /`-c runbookUrl=(https:\/\/[^`]+)`/);
    expect(runbookUrlFrom(example)).toBe(example);
    const [rules = ""] = firstTextsSaid(SECTION, /It must be an `https:\/\/` URL without credentials, ([^;]+); anything else fails synth with one line naming `runbookUrl`/);
    const [longest = 0] = firstNumbersSaid(rules, /at most (\d+) characters/);
    const host = "https://git.example/";
    expect(runbookUrlFrom(host + "a".repeat(longest - host.length))).toHaveLength(longest);
    const [queryNames = ""] = firstTextsSaid(rules, /a parameter named like ([^,]+(?:, [^,]+)*?), e\.g\./);
    const [hostParameter = ""] = firstTextsSaid(rules, /a Git host's `\?(\w+)=`/);
    const names = [...quotedNames(queryNames), hostParameter];
    expect(names.length).toBe(4);
    const refused = [
      "http://git.example/docs/runbook.md",
      "https://ops:pw@git.example/docs/runbook.md",
      ...names.map((name) => `${host}docs/runbook.md?${name}=x`),
      `${host}docs/runbook.md#synclag`,
      host + "a".repeat(longest - host.length + 1),
    ];
    for (const url of refused) expect(() => runbookUrlFrom(url), url).toThrow(/^context runbookUrl: /);
  });

  it("sends the reader to the runbook's subscription check, which holds the command and the status it names", () => {
    const [command = "", pending = ""] = firstTextsSaid(SECTION, /Check with `([^`]+)` \(`(\w+)` means not confirmed yet; the command is in docs\/runbook\.md\)/);
    const runbook = docText("docs/runbook.md");
    expect(runbook).toContain(command);
    expect(runbook).toContain(`\`${pending}\``);
  });
});

describe("README, Onboard: authorize once", () => {
  it("reads from the stack's outputs only outputs the stack has", () => {
    const read = textsSaid(SECTION, /\$\(out (\w+)\)/).map(([key]) => key);
    const outputs = Object.keys(outputsOf("globex"));
    expect(read.length).toBe(2);
    expect(outputs).toEqual(expect.arrayContaining(read));
  });

  it("gives the shortest pii_salt the runtime takes", () => {
    const [shortest = 0] = firstNumbersSaid(SECTION, /The runtime refuses a `pii_salt` shorter than (\d+) characters/);
    expect(piiSaltProblem("s".repeat(shortest - 1))).toBeDefined();
    expect(piiSaltProblem("s".repeat(shortest))).toBeUndefined();
  });
});

describe("README, Operate", () => {
  it("names the actions the transaction poller takes from an operator", () => {
    const actions = textsSaid(SECTION, /`(\{"action":"[\w-]+"\})`/).map(([json]) => JSON.parse(json ?? "") as PollEvent);
    expect(actions.map((event) => event.action)).toEqual(["redrive", "conform-pii"]);
    for (const event of actions) expect(pollActionOf(event, "transactions")).toBe(event.action);
  });

  it("gives the default event source consumers match, and an imported bus's own name as the EventBusName output", () => {
    const [source = ""] = firstTextsSaid(SECTION, /the tenant's `eventSource` \(`([\w.-]+)` by default\)/);
    expect(parseTenantConfig(tenantEntry()).eventSource).toBe(source);
    expect(SECTION).toContain("(an imported bus keeps its own name)");
    const globex = exampleTenant("globex");
    const outputs = outputsOf("globex");
    expect(globex.eventBus).toMatchObject({ mode: "import" });
    expect(outputs["EventBusName"]?.Value).toBe((globex.eventBus as { name: string }).name);
  });

  it("names the dashboard and the alarms QashioBridge-<tenant>, and the heartbeat alarms by the names they get", () => {
    const [dashboard = ""] = firstTextsSaid(SECTION, /Each tenant has a dashboard `([^`]+)`/);
    const [alarmPattern = ""] = firstTextsSaid(SECTION, /and alarms `([^`]+)\*` notifying/);
    for (const { id, template } of stacksWithIds()) {
      template.hasResourceProperties("AWS::CloudWatch::Dashboard", { DashboardName: dashboard.replace("<tenant>", id) });
      const names = alarmNames(resourcesIn(template));
      expect(names.filter((name) => !name.startsWith(alarmPattern.replace("<tenant>", id)))).toEqual([]);
    }
    // With the card fast path a tenant has every heartbeat alarm: the section names each, and no other.
    const heartbeats = new Set(textsSaid(SECTION, /`(Heartbeat[\w-]*)`/).map(([name]) => name ?? ""));
    const fastPath = alarmNames(resourcesIn(fastPathGlobex()));
    const built = fastPath.filter((name) => name.includes("-Heartbeat")).map((name) => name.replace("QashioBridge-globex-", ""));
    expect(built.length).toBeGreaterThan(2);
    expect(new Set(built)).toEqual(heartbeats);
  });

  it("gives the heartbeat window's rules as heartbeatAlarmWindow applies them", () => {
    const [shortest = 0, periods = 0, fewer = 0, fewerOver = 0] = firstNumbersSaid(
      SECTION,
      /a period is the poller's own schedule but at least (\d+) minutes, the window (\d+) periods, (\d+) over (\d+) hours/,
    );
    const [hourlyOver = 0] = firstNumbersSaid(SECTION, /over (\d+) hours, one-hour periods covering the schedule plus an hour/);
    const window = (minutes: number) => {
      const w = heartbeatAlarmWindow(minutes);
      return [w.period.toMinutes(), w.evaluationPeriods];
    };
    expect(window(1)).toEqual([shortest, periods]);
    expect(window(shortest + 1)).toEqual([shortest + 1, periods]);
    expect(window(fewerOver * 60)).toEqual([fewerOver * 60, periods]);
    expect(window(fewerOver * 60 + 1)).toEqual([fewerOver * 60 + 1, fewer]);
    expect(window(hourlyOver * 60)).toEqual([hourlyOver * 60, fewer]);
    // one-hour periods covering the schedule (12 hours and a minute: 13 hours) plus an hour
    expect(window(hourlyOver * 60 + 1)).toEqual([60, hourlyOver + 1 + 1]);
  });
});
