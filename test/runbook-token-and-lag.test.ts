/**
 * docs/runbook.md from its top through "SyncLag" held to the stack and the code: the schedules, windows and queue an
 * operator pausing or onboarding a tenant is told about, the empty fields of a tenant not yet onboarded, the time a
 * token save has before the function's timeout, and the alarms on the held token and on the lag, with the engine's
 * numbers behind the lag. Each number is read from the doc and compared with what the code builds or exports.
 */
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { cycleAlarmWindow } from "../infra/constructs/alarm-window.js";
import { DASHBOARD_WIDGETS } from "../infra/constructs/ops-dashboard.js";
import { loadTenantsFile } from "../infra/tenants-file.js";
import { REFRESH_TIMEOUT_MARGIN_MS, SDK_CALL_MAX_MS, TOKEN_LEASE_TTL_MS } from "../shared/aws/config.js";
import { SecretFormatError } from "../shared/aws/errors.js";
import { parseSecret, PUT_TIMEOUT_ROUNDS } from "../shared/aws/provider-secret.js";
import { SAVE_END_MARGIN_MS } from "../shared/aws/token-store.js";
import { pollCards } from "../shared/bridge/cards.js";
import { PUBLISHER_UNAVAILABLE_BATCHES, PUBLISHER_UNAVAILABLE_EVENTS } from "../shared/bridge/cycle.js";
import { DEFAULT_DEADLINE_GRACE_MS } from "../shared/bridge/deps.js";
import { NOT_SYNCED_BUDGET_SHARE, pollTransactions } from "../shared/bridge/transactions.js";
import { refreshDeadline } from "../shared/qashio/auth/refresh-lease.js";
import { makeRig } from "./bridge/fakes.js";
import { docSection, docText, firstNumbersSaid, firstTextsSaid, numbersSaid, quotedNames } from "./doc-text.js";
import { EXAMPLE_TENANTS_FILE, exampleStacks, fastPathGlobex } from "./infra/helpers.js";
import { PROVIDER_SPEC, specSection } from "./provider-spec.js";
import { seconds } from "./spec-gaps-section.js";

const RUNBOOK = docText("docs/runbook.md");
/** The runbook's opening, before its first section. */
const INTRO = RUNBOOK.slice(0, RUNBOOK.indexOf(" ## "));

interface Resource {
  readonly Properties: Record<string, unknown>;
}

/** The resources of `type` in a template, by logical id. */
const resourcesOf = (template: ReturnType<typeof fastPathGlobex>, type: string): [string, Resource][] =>
  Object.entries(template.findResources(type)) as [string, Resource][];

/** The example stacks' alarms whose name ends `-<suffix>`, with their tenant's id. */
function alarmsNamed(suffix: string): { tenant: string; alarm: Record<string, unknown> }[] {
  return Object.values(exampleStacks()).flatMap(({ template }) =>
    resourcesOf(template, "AWS::CloudWatch::Alarm")
      .map(([, resource]) => resource.Properties)
      .filter((alarm) => String(alarm["AlarmName"]).endsWith(`-${suffix}`))
      .map((alarm) => ({ tenant: /^QashioBridge-(.+)-[^-]+$/.exec(String(alarm["AlarmName"]))?.[1] ?? "", alarm })),
  );
}

describe("the runbook's opening: schedules, heartbeats and the pollers' queue", () => {
  it("names the poller schedules and their group as the stack creates them, the fast path's included", () => {
    const [names = "", group = ""] = firstTextsSaid(INTRO, /The poller schedules are named (`\w+`, `\w+` and, with the card fast path, `\w+`), in the group `([^`]+)`/);
    const [plain, fast] = quotedNames(names).reduce<[string[], string[]]>(([p, f], name, i, all) => (i < all.length - 1 ? [[...p, name], f] : [p, [name]]), [[], []]);
    const schedules = (template: ReturnType<typeof fastPathGlobex>) => resourcesOf(template, "AWS::Scheduler::Schedule").map(([, r]) => r.Properties);
    for (const { template, stack } of Object.values(exampleStacks())) {
      const made = schedules(template);
      expect(made.map((s) => s["Name"]).sort()).toEqual([...plain].sort());
      for (const schedule of made) expect(schedule["GroupName"]).toBe(group.replace("<tenant>", stack.stackName.replace(/^QashioBridge-/, "")));
    }
    expect(schedules(fastPathGlobex()).map((s) => s["Name"]).sort()).toEqual([...plain, ...fast].sort());
    // "disable its schedules (two, three with the card fast path)"
    expect(firstNumbersSaid(INTRO, /disable its schedules \((\w+), (\w+) with the card fast path\)/)).toEqual([plain.length, plain.length + fast.length]);
  });

  it("gives the transaction heartbeat's window on a 5-minute schedule as the alarm evaluates it", () => {
    const [window = 0, every = 0] = firstNumbersSaid(INTRO, /once no cycle has run for their window \((\d+) minutes on a (\d+)-minute schedule/);
    const tenants = loadTenantsFile(EXAMPLE_TENANTS_FILE);
    const checked = alarmsNamed("Heartbeat").filter(({ tenant }) => tenants.find((t) => t.id === tenant)?.schedules.transactionsEveryMinutes === every);
    expect(checked.length).toBeGreaterThan(0);
    for (const { alarm } of checked) {
      expect(alarm["DatapointsToAlarm"]).toBe(alarm["EvaluationPeriods"]);
      expect(((alarm["Period"] as number) * (alarm["EvaluationPeriods"] as number)) / 60).toBe(window);
    }
  });

  it("keeps failed ticks on the pollers' queue as long as Not yet onboarded says, and runs one cycle per poller at a time as SyncLag says", () => {
    const [days = 0] = firstNumbersSaid(RUNBOOK, /The failed ticks stay on the pollers' queue for (\d+) days/);
    const [concurrency = 0] = firstNumbersSaid(RUNBOOK, /\(reserved concurrency is (\d+)\)/);
    for (const { template } of Object.values(exampleStacks())) {
      const queues = resourcesOf(template, "AWS::SQS::Queue").filter(([id]) => id.startsWith("PollerDeadLetters"));
      expect(queues.map(([, q]) => q.Properties["MessageRetentionPeriod"])).toEqual([days * 86_400]);
      const pollers = resourcesOf(template, "AWS::Lambda::Function").filter(([id]) => /^Poll(Transactions|Cards)Function/.test(id));
      expect(pollers.map(([, fn]) => fn.Properties["ReservedConcurrentExecutions"])).toEqual([concurrency, concurrency]);
    }
  });
});

describe("the runbook's Not yet onboarded", () => {
  const section = docSection(RUNBOOK, "Not yet onboarded");

  it("names the fields the stack leaves empty, and SecretFormatError names them when the secret is read", () => {
    const [holds = ""] = firstTextsSaid(section, /a deployed tenant whose secret holds only (`\w+`: `\w+`, `\w+` and `\w+`) stay empty until onboarding/);
    const [generated, ...empty] = quotedNames(holds);
    for (const { template } of Object.values(exampleStacks())) {
      const [[, secret] = ["", { Properties: {} }]] = resourcesOf(template, "AWS::SecretsManager::Secret");
      const generate = secret.Properties["GenerateSecretString"] as { GenerateStringKey: string; SecretStringTemplate: string; PasswordLength: number };
      expect(generate.GenerateStringKey).toBe(generated);
      const fields = JSON.parse(generate.SecretStringTemplate) as Record<string, string>;
      expect(Object.keys(fields).filter((name) => fields[name] === "").sort()).toEqual([...empty].sort());
      // As deployed: the template's fields and a generated salt of the stack's length, no punctuation.
      const deployed = { ...fields, [generate.GenerateStringKey]: randomBytes(generate.PasswordLength).toString("hex").slice(0, generate.PasswordLength) };
      const error = (() => {
        try {
          parseSecret("arn:secret", JSON.stringify(deployed), "v1");
        } catch (e) {
          return e;
        }
        return undefined;
      })();
      expect(error).toBeInstanceOf(SecretFormatError);
      expect(section).toContain(`\`${(error as SecretFormatError).name}\` naming those fields`);
      expect([...(error as SecretFormatError).fields].sort()).toEqual([...empty].sort());
    }
  });

  it("says when the errors and pollers' dead-letter alarms clear, as their windows are set", () => {
    const [breaching = 0, last = 0] = firstNumbersSaid(section, /return to OK once fewer than (\d+) of their last (\d+) periods breach/);
    const [single = 0, of = 0] = firstNumbersSaid(section, /with a (\d+)-of-(\d+) window, after one/);
    const named = [...quotedNames(firstTextsSaid(section, /If the schedules were enabled before onboarding, the (`[^`]+`) and (`[^`]+`) alarms/).join(" "))];
    expect(named).toEqual(["Errors-*", "DeadLetters-Pollers"]);
    const windows = new Set(
      Object.values(exampleStacks())
        .flatMap(({ template }) => resourcesOf(template, "AWS::CloudWatch::Alarm").map(([, r]) => r.Properties))
        .filter((alarm) => /-(Errors-\w+|DeadLetters-Pollers)$/.test(String(alarm["AlarmName"])))
        .map((alarm) => `${String(alarm["DatapointsToAlarm"])} of ${String(alarm["EvaluationPeriods"])}`),
    );
    expect(windows).toEqual(new Set([`${breaching} of ${last}`, `${single} of ${of}`]));
  });
});

describe.skipIf(PROVIDER_SPEC === "")("the runbook's TokenFamilyRevoked quotes the provider's spec by its sections", () => {
  const revoked = docSection(RUNBOOK, "TokenFamilyRevoked");

  it("cites the rule that a spent refresh token presented again revokes the family, and the section answering wrong client credentials with 401", () => {
    const [section = 0, rule = 0] = firstNumbersSaid(revoked, /\(spec (\d+)\.(\d+): a refresh token presented twice revokes the family/);
    expect(specSection(`${section} rule ${rule}`)).toMatch(/Presenting a used refresh token revokes the whole token family/);
    const [oauth = ""] = firstTextsSaid(revoked, /though spec ([\d.]+) gives `401` for wrong client credentials too/);
    expect(specSection(oauth)).toMatch(/`401` for [^.]*invalid client credentials, or a refresh token that is invalid, expired, revoked or reused/);
  });
});

describe("the runbook's TokenFamilyRevoked and TokenSecretWriteFailed", () => {
  const writeFailed = docSection(RUNBOOK, "TokenSecretWriteFailed");

  it("gives the time a token save has before the function's timeout, what a silent Secrets Manager could take, and when the token is held at the latest", () => {
    const [before = 0, rounds = 0, hung = 0] = firstNumbersSaid(
      writeFailed,
      /the save has at least (\d+) s before the function's timeout, where the secret's read and (\w+) write rounds against a silent endpoint could take ~(\d+) s/,
    );
    // The refresh call ends by the lease's first half; the lease itself ends REFRESH_TIMEOUT_MARGIN_MS before the timeout.
    expect(before).toBe(seconds(TOKEN_LEASE_TTL_MS - refreshDeadline(0, TOKEN_LEASE_TTL_MS) + REFRESH_TIMEOUT_MARGIN_MS));
    expect(rounds).toBe(PUT_TIMEOUT_ROUNDS);
    expect(hung).toBe(seconds((1 + PUT_TIMEOUT_ROUNDS) * SDK_CALL_MAX_MS));
    // More than the save has: why the token store holds the token first.
    expect(hung).toBeGreaterThan(before);
    const [latest = 0] = firstNumbersSaid(writeFailed, /in any case (\d+) s before the timeout at the latest/);
    expect(latest).toBe(seconds(SAVE_END_MARGIN_MS + SDK_CALL_MAX_MS));
  });

  it("describes TokenSecretWriteFailed's alarm as the stack sets it: the gauge, its statistic and period, missing data keeping the state", () => {
    const [gauge = "", statistic = "", minutes = "", periods = ""] = firstTextsSaid(writeFailed, /The alarm follows the `(\w+)` gauge \([^)]*?; (\w+) per (\w+)-minute period, (\d+) period\)/);
    expect(writeFailed).toContain("(no report keeps the state)");
    const alarms = alarmsNamed("TokenSecretWriteFailed");
    expect(alarms.length).toBe(2);
    for (const { alarm } of alarms) {
      expect(alarm).toMatchObject({
        MetricName: gauge,
        Statistic: statistic.charAt(0).toUpperCase() + statistic.slice(1),
        Period: (numbersSaid(minutes, /(\w+)/)[0]?.[0] ?? 0) * 60,
        EvaluationPeriods: Number(periods),
        TreatMissingData: "ignore",
      });
    }
  });

  it("names the dashboard line of the refreshes TokenRefreshes counts", () => {
    const [metric = "", line = ""] = firstTextsSaid(docSection(RUNBOOK, "TokenFamilyRevoked"), /\(`(\w+)` in the invocation's metrics line; the `([^`]+)` line of the dashboard's token graph\)/);
    for (const { template } of Object.values(exampleStacks())) {
      const dashboard = JSON.stringify(template.findResources("AWS::CloudWatch::Dashboard"));
      const tokens = dashboard.slice(dashboard.indexOf(DASHBOARD_WIDGETS.tokens), dashboard.indexOf(DASHBOARD_WIDGETS.quarantine));
      expect(tokens).toMatch(new RegExp(String.raw`\\"${metric}\\"[^\]]*\{\\"label\\":\\"${line}\\"`));
    }
  });
});

describe("the runbook's SyncLag", () => {
  const section = docSection(RUNBOOK, "SyncLag");

  it("describes the alarm as the stack sets it for each tenant: metric, statistic, threshold, window, period and missing data", () => {
    const [metric = "", statistic = ""] = firstTextsSaid(section, /the oldest change not yet published \(`(\w+)`, (\w+) per period\)/);
    const [field = ""] = firstTextsSaid(section, /was above the tenant's `alarms\.(\w+)`/);
    const [breaching = 0, evaluated = 0] = firstNumbersSaid(section, /in (\d+) of the last (\d+) periods/);
    const [shortest = 0] = firstNumbersSaid(section, /\(`transactionsEveryMinutes`, at least (\d+) minutes\)/);
    expect(section).toContain("A period without a transaction cycle keeps the alarm's state");
    expect(section).toContain("The alarm description states the tenant's window");
    const tenants = loadTenantsFile(EXAMPLE_TENANTS_FILE);
    const alarms = alarmsNamed("SyncLag");
    expect(alarms.length).toBe(2);
    for (const { tenant, alarm } of alarms) {
      const config = tenants.find((t) => t.id === tenant);
      const threshold = (config?.alarms as Record<string, unknown> | undefined)?.[field];
      expect(threshold, tenant).toBeTypeOf("number");
      expect(alarm).toMatchObject({
        MetricName: metric,
        Statistic: statistic.charAt(0).toUpperCase() + statistic.slice(1),
        ComparisonOperator: "GreaterThanThreshold",
        Threshold: threshold,
        DatapointsToAlarm: breaching,
        EvaluationPeriods: evaluated,
        Period: Math.max(shortest, config?.schedules.transactionsEveryMinutes ?? 0) * 60,
        TreatMissingData: "ignore",
      });
      expect(alarm["AlarmDescription"]).toContain(`${breaching} of the last ${evaluated} `);
    }
  });

  it("gives a daily schedule's window as the stack builds it", () => {
    const [periods = 0] = firstNumbersSaid(section, /\((\d+) one-day periods for a daily one: CloudWatch allows \w+ days of window for periods of an hour or more\)/);
    const daily = cycleAlarmWindow(24 * 60);
    expect(daily.period.toDays()).toBe(1);
    expect(daily.evaluationPeriods).toBe(periods);
  });

  it("says card cycles report no lag and transaction cycles do", async () => {
    expect(section).toContain("(card cycles report no lag)");
    const cards = makeRig();
    cards.provider.addCard({});
    await pollCards(cards.deps, { pageSize: 10 });
    expect(cards.metrics.sum("SyncLagSeconds")).toBe(0);
    expect(cards.metrics.points.some((point) => point.name === "SyncLagSeconds")).toBe(false);
    const transactions = makeRig();
    transactions.provider.addTransaction();
    await pollTransactions(transactions.deps, { pageSize: 10 });
    expect(transactions.metrics.points.some((point) => point.name === "SyncLagSeconds")).toBe(true);
  });

  it("gives the engine's numbers: when a cycle stops for an unavailable bus, the budget share for new transactions, the calls' grace", () => {
    expect(numbersSaid(section, /when the bus took none of (\w+) batches in a row \((\d+) events or more\)/)).toEqual([[PUBLISHER_UNAVAILABLE_BATCHES, PUBLISHER_UNAVAILABLE_EVENTS]]);
    const shares = numbersSaid(section, /at (three quarters) of (?:its|the) budget/).flat();
    expect(shares.length).toBeGreaterThanOrEqual(2);
    expect(new Set(shares)).toEqual(new Set([NOT_SYNCED_BUDGET_SHARE]));
    expect(numbersSaid(section, /\(plus its (\d+) s grace\)/)).toEqual([[seconds(DEFAULT_DEADLINE_GRACE_MS)]]);
  });

  it("finds the transaction poller's p95 duration on the right axis of the functions graph", () => {
    const [graph = ""] = firstTextsSaid(section, /the transaction poller's p95 duration, on the right axis of `([^`]+)`/);
    expect(DASHBOARD_WIDGETS.functions).toBe(graph);
    for (const { template } of Object.values(exampleStacks())) {
      const dashboard = JSON.stringify(template.findResources("AWS::CloudWatch::Dashboard"));
      expect(dashboard).toMatch(/PollTransactions p95 duration\\",\\"stat\\":\\"p95\\",\\"yAxis\\":\\"right\\"/);
    }
  });
});
