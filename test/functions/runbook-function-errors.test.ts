/**
 * docs/runbook.md's "Function errors", "Dead letters" and "Heartbeat" held to the code: the messages they quote (run
 * through the code that writes them), and the numbers, names and alarm windows they give an operator (read from the
 * exported constants and a tenant's template built in-process). The behaviour tests count in the constants; these
 * read what the runbook says.
 */
import { randomUUID } from "node:crypto";
import type { Template } from "aws-cdk-lib/assertions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { heartbeatAlarmWindow, cycleAlarmWindow, MIN_CYCLE_ALARM_PERIOD_MINUTES } from "../../infra/constructs/alarm-window.js";
import type { TenantConfig } from "../../infra/tenant-config.js";
import { TENANT_DEFAULTS } from "../../infra/tenant-defaults.js";
import { loadTenantsFile } from "../../infra/tenants-file.js";
import { pollerMaxEventAge, pollerTimeout } from "../../infra/tenant-stack.js";
import {
  INVOCATION_EARLY_END_MS,
  LOG_LEVELS,
  MAX_CYCLE_BUDGET_MS,
  MIN_CYCLE_BUDGET_MS,
  REFRESH_TIMEOUT_MARGIN_MS,
  SDK_TIMEOUTS,
  TOKEN_LEASE_TTL_MS,
  checkPollerTimeout,
  loadConfig,
} from "../../shared/aws/config.js";
import { CYCLE_LEASE_SLACK_MS } from "../../shared/aws/cycle.js";
import { PiiSaltChangedError, ProviderClientChangedError, ProviderClientRejectedError, SecretVersionQuotaError } from "../../shared/aws/errors.js";
import { piiSaltItemKey } from "../../shared/aws/keys.js";
import { checkPollTarget, type PollEvent } from "../../shared/aws/poll-event.js";
import { REDRIVE_CHUNK_RECORDS } from "../../shared/bridge/redrive.js";
import { StaticTokenProvider } from "../../shared/qashio/auth/token-provider.js";
import { DEFAULT_RETRY, HttpCore, type HttpRequest } from "../../shared/qashio/http.js";
import { docSection, docText, firstNumbersSaid, quotePattern, textsSaid } from "../doc-text.js";
import { EXAMPLE_TENANTS_FILE, exampleStacks, fastPathGlobex } from "../infra/helpers.js";
import { VALID_FUNCTION_ENV } from "../aws/support/function-env.js";
import { fakeClock, scriptedFetch } from "../qashio/helpers.js";
import { thrown } from "../thrown.js";
import { createHarness, type Harness } from "./support/harness.js";
import { seconds } from "../spec-gaps-section.js";

const RUNBOOK = docText("docs/runbook.md");
const ERRORS = docSection(RUNBOOK, "Function errors");
const DEAD_LETTERS = docSection(RUNBOOK, "Dead letters");
const HEARTBEAT = docSection(RUNBOOK, "Heartbeat");

/**
 * A quote of the runbook as a pattern over the message the code writes: `…`/`...` and `<placeholder>`/`N` stand for
 * what the message fills in (a secret id, a time, a count).
 */
const runbookQuote = (quote: string): RegExp => quotePattern(quote, /\s*(?:…|\.\.\.)\s*|<[\w -]+>|\bN\b/);

/** The runbook's quotes of an error (`Name` "message"), for the name given, as the doc writes them. */
const quotesOf = (section: string, name: string): string[] => textsSaid(section, new RegExp(`\`${name}\` "([^"]+)"`)).map(([quote = ""]) => quote);

/** Fails unless every quote matches one of the messages (and there is a quote). */
function expectQuoted(quotes: readonly string[], messages: readonly string[]): void {
  expect(quotes.length).toBeGreaterThan(0);
  for (const quote of quotes) expect(messages.some((message) => runbookQuote(quote).test(message)), `"${quote}" in ${messages.join(" | ")}`).toBe(true);
}

/** The units the runbook spells out as a word ("a minute"), in ms. */
const UNIT_MS: Readonly<Record<string, number>> = { minute: 60_000, hour: 3_600_000 };
const unitSaid = (section: string, pattern: RegExp): number => UNIT_MS[textsSaid(section, pattern)[0]?.[0] ?? ""] ?? Number.NaN;

const ENV = VALID_FUNCTION_ENV;
const SECRET = ENV["SECRET_ID"] ?? "";

/** The message loadConfig fails with for `env` over a valid environment, or "" when it takes it. */
const configMessage = (env: Record<string, string | undefined>): string => {
  try {
    loadConfig({ ...ENV, ...env });
    return "";
  } catch (error) {
    return (error as Error).message;
  }
};

describe("docs/runbook.md, Function errors: the alarms", () => {
  it("gives the pollers' errors window and the rotation's as the alarms evaluate them", () => {
    const [evaluated, breaching] = [cycleAlarmWindow(1).evaluationPeriods, cycleAlarmWindow(1).datapointsToAlarm];
    expect(firstNumbersSaid(ERRORS, /\(errors in (\d+) of the last (\d+) periods/)).toEqual([breaching, evaluated]);
    expect(firstNumbersSaid(ERRORS, /a period being the poller's schedule and at least (\d+) minutes/)).toEqual([MIN_CYCLE_ALARM_PERIOD_MINUTES]);
    const alarms = Object.values(exampleStacks().acme.template.findResources("AWS::CloudWatch::Alarm")).map(
      (resource) => (resource as { Properties: { AlarmName: string; Period: number; EvaluationPeriods: number; DatapointsToAlarm: number } }).Properties,
    );
    const rotation = alarms.find((alarm) => alarm.AlarmName.endsWith("-Errors-RotateToken"));
    expect(rotation).toMatchObject({ EvaluationPeriods: 1, DatapointsToAlarm: 1 });
    expect(firstNumbersSaid(ERRORS, /`Errors-RotateToken` \(any error within (\d+) minutes/)).toEqual([(rotation?.Period ?? 0) / 60]);
    expect(firstNumbersSaid(ERRORS, /returns to OK by itself once its (\d+)-minute period has passed/)).toEqual([(rotation?.Period ?? 0) / 60]);
  });
});

describe("docs/runbook.md, Function errors: configuration errors at cold start", () => {
  it("names the log levels and which variable a bad one is named in, as loadConfig reads them", () => {
    const [first, last] = textsSaid(ERRORS, /a value that is no level, `(\w+)` to `(\w+)`/)[0] ?? [];
    expect([first, last]).toEqual([LOG_LEVELS[0].toLowerCase(), LOG_LEVELS[LOG_LEVELS.length - 1]?.toLowerCase()]);
    expect(ERRORS).toContain("set the function's `POWERTOOLS_LOG_LEVEL` to `debug`, any case");
    expect(configMessage({ POWERTOOLS_LOG_LEVEL: "DeBuG" })).toBe("");
    // A value that is no level fails with LambdaConfigurationError naming the variable...
    expect(configMessage({ POWERTOOLS_LOG_LEVEL: "verbose" })).toMatch(/^Invalid function environment: POWERTOOLS_LOG_LEVEL /);
    // ...so does the legacy LOG_LEVEL, read only while POWERTOOLS_LOG_LEVEL is unset or blank.
    expect(configMessage({ LOG_LEVEL: "verbose" })).toMatch(/^Invalid function environment: LOG_LEVEL /);
    expect(configMessage({ POWERTOOLS_LOG_LEVEL: " ", LOG_LEVEL: "verbose" })).toMatch(/^Invalid function environment: LOG_LEVEL /);
    expect(configMessage({ POWERTOOLS_LOG_LEVEL: "debug", LOG_LEVEL: "verbose" })).toBe("");
    // A blank one of either counts as unset.
    expect(configMessage({ POWERTOOLS_LOG_LEVEL: "", LOG_LEVEL: " " })).toBe("");
  });

  it("quotes the environment and CYCLE_BUDGET_MS errors as loadConfig writes them", () => {
    expectQuoted(quotesOf(ERRORS, "LambdaConfigurationError"), [configMessage({ TABLE_NAME: undefined })]);
    const [least, most] = [MIN_CYCLE_BUDGET_MS - 1, MAX_CYCLE_BUDGET_MS + 1].map((budget) => configMessage({ CYCLE_BUDGET_MS: String(budget) }));
    const budgetQuotes = textsSaid(ERRORS, /"(CYCLE_BUDGET_MS must be at (?:least|most) \d+)"/).map(([quote = ""]) => quote);
    expect(budgetQuotes).toHaveLength(2);
    expectQuoted(budgetQuotes.slice(0, 1), [least ?? ""]);
    expectQuoted(budgetQuotes.slice(1), [most ?? ""]);
    expect(firstNumbersSaid(ERRORS, /set by hand over the (\d+) minutes no Lambda outlasts/)).toEqual([MAX_CYCLE_BUDGET_MS / 60_000]);
  });

  it("quotes the FunctionTimeoutTooShortError of a poller's cycle and of a conform-pii pass", () => {
    const budgetMs = 270_000;
    const refusal = (timeoutMs: number, action: "cycle" | "conform-pii") => thrown(() => checkPollerTimeout(timeoutMs, 0, budgetMs, action)).message;
    const [cycleQuote = ""] = quotesOf(ERRORS, "FunctionTimeoutTooShortError");
    const [cycleMinimum = 0] = firstNumbersSaid(cycleQuote, /at least (\d+) s/);
    expectQuoted([cycleQuote], [refusal((cycleMinimum - 1) * 1000, "cycle")]);
    expect(() => checkPollerTimeout(cycleMinimum * 1000, 0, budgetMs, "cycle")).not.toThrow();
    const [conformQuote = ""] = textsSaid(ERRORS, /\("(where a conform-pii pass needs at least \d+ s)"\)/)[0] ?? [];
    const [conformMinimum = 0] = firstNumbersSaid(conformQuote, /at least (\d+) s/);
    expectQuoted([conformQuote], [refusal((conformMinimum - 1) * 1000, "conform-pii")]);
    expect(() => checkPollerTimeout(conformMinimum * 1000, 0, budgetMs, "conform-pii")).not.toThrow();
  });
});

describe("docs/runbook.md, Function errors: AWS and provider failures", () => {
  it("gives the SDK's attempts and their bound, and how long before its timeout an invocation gives up", () => {
    expect(firstNumbersSaid(ERRORS, /after the SDK's (\d+) attempts of at most (\d+) s each/)).toEqual([SDK_TIMEOUTS.maxAttempts, seconds(SDK_TIMEOUTS.requestTimeoutMs)]);
    expect(firstNumbersSaid(ERRORS, /the invocation gives up (\d+) s before its\s+timeout/)).toEqual([seconds(INVOCATION_EARLY_END_MS)]);
  });

  it("quotes the InvalidResponseError of a compressed answer the transport did not ask for", async () => {
    const fetch = scriptedFetch(new Response("\u001f\u008b", { status: 200, headers: { "content-encoding": "gzip" } }));
    const http = new HttpCore({ baseUrl: "https://api.example.test", fetch, clock: fakeClock(), tokenProvider: new StaticTokenProvider(["t"]), retry: { random: () => 0.5 } });
    const request: HttpRequest = { method: "GET", path: "/public/v1/erp/transactions", auth: "bearer", retry: "idempotent" };
    const error = (await http.request(request).catch((e: unknown) => e)) as Error;
    expect(error.name).toBe("InvalidResponseError");
    expectQuoted(quotesOf(ERRORS, "InvalidResponseError"), [error.message]);
  });

  it("quotes the RateLimitedError of a 429's wait longer than a retry waits, then of the requests it holds back", async () => {
    expect(unitSaid(ERRORS, /a provider `429` asking\s+for a wait longer than an? (\w+)/)).toBe(DEFAULT_RETRY.maxRetryAfterMs);
    /** The errors of a request the provider answers 429 asking for `retryAfterSeconds`, then of the next one. */
    const limited = async (retryAfterSeconds: number): Promise<Error[]> => {
      const fetch = scriptedFetch(new Response("", { status: 429, headers: { "retry-after": String(retryAfterSeconds) } }));
      const http = new HttpCore({ baseUrl: "https://api.example.test", fetch, clock: fakeClock(), tokenProvider: new StaticTokenProvider(["t"]), retry: { random: () => 0.5 } });
      const request: HttpRequest = { method: "GET", path: "/public/v1/erp/transactions", auth: "bearer", retry: "idempotent" };
      const errors = [await http.request(request).catch((e: unknown) => e), await http.request(request).catch((e: unknown) => e)] as Error[];
      // The second was not sent.
      expect(fetch.calls).toHaveLength(1);
      expect(errors.map((error) => error.name)).toEqual(["RateLimitedError", "RateLimitedError"]);
      return errors;
    };
    const [answered, held] = await limited(600);
    const quotes = textsSaid(ERRORS, /`RateLimitedError 429: ([^`]+)`/).map(([quote = ""]) => quote);
    expect(quotes).toHaveLength(2);
    expectQuoted(quotes.slice(0, 1), [answered?.message ?? ""]);
    expectQuoted(quotes.slice(1), [held?.message ?? ""]);
    // Asked for longer than an hour: the wait is an hour, and the message says so where the runbook does.
    const [, capped] = await limited(7200);
    const [cap = "(none)"] = textsSaid(ERRORS, /with `(, capped at an hour)` when the provider asked for longer/)[0] ?? [];
    expect(capped?.message).toContain(`Retry-After${cap})`);
    expect(capped?.message).toMatch(/, 3600 s from now$/);
  });

  it("quotes the errors of the provider client and the pii_salt in the secret", () => {
    expectQuoted(quotesOf(ERRORS, "ProviderClientChangedError"), [new ProviderClientChangedError(SECRET).message]);
    expectQuoted(quotesOf(ERRORS, "ProviderClientRejectedError"), [new ProviderClientRejectedError(SECRET).message]);
    const salt = piiSaltItemKey("acme");
    expectQuoted(quotesOf(ERRORS, "PiiSaltChangedError"), [new PiiSaltChangedError(SECRET, "bridge", salt).message]);
  });

  it("quotes the SecretVersionQuotaError of a postponed refresh", () => {
    const [quote = ""] = quotesOf(ERRORS, "SecretVersionQuotaError");
    expectQuoted([quote], [new SecretVersionQuotaError(SECRET, 98, 98).message, new SecretVersionQuotaError(SECRET, 48, 48, true).message]);
  });

  it("gives the rotation's refresh lease and margin as its refusal names them, and the timeout the stack sets", () => {
    const [lease, margin] = firstNumbersSaid(ERRORS, /a refresh needs its (\d+) s lease to end (\d+) s before the function's timeout/);
    expect([lease, margin]).toEqual([seconds(TOKEN_LEASE_TTL_MS), seconds(REFRESH_TIMEOUT_MARGIN_MS)]);
    const functions = Object.values(exampleStacks().acme.template.findResources("AWS::Lambda::Function")) as { Properties: { Timeout?: number; Environment?: { Variables?: Record<string, unknown> } } }[];
    // The rotation function is the one whose environment gives no cycle budget.
    const rotation = functions.filter((fn) => fn.Properties.Environment?.Variables?.["TENANT_ID"] !== undefined && fn.Properties.Environment.Variables["CYCLE_BUDGET_MS"] === undefined);
    expect(rotation).toHaveLength(1);
    const timeout = rotation[0]?.Properties.Timeout;
    expect(firstNumbersSaid(ERRORS, /\(console or CLI; the stack sets (\d+) minutes\)/)).toEqual([(timeout ?? 0) / 60]);
    expect(firstNumbersSaid(ERRORS, /--function-name <RotateTokenFunction name> --timeout (\d+)/)).toEqual([timeout]);
  });

  it("gives the chunk of quarantine records re-driven before a damaged one", () => {
    expect(firstNumbersSaid(ERRORS, /the chunks of ([\d,]+) records taken before it are re-driven/)).toEqual([REDRIVE_CHUNK_RECORDS]);
  });
});

describe("docs/runbook.md, Function errors: a rotation invoked by hand with the wrong event", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(async () => h.close());

  it("quotes the RotationError of a token under no rotation, and of each hand-made event refused before any read", async () => {
    const rotationError = async (ClientRequestToken: string, Step: string): Promise<string> => {
      const error = (await h.rotator()({ SecretId: h.secrets.secretId, ClientRequestToken, Step }).catch((e: unknown) => e)) as Error;
      expect(error.name).toBe("RotationError");
      return error.message;
    };
    expectQuoted(quotesOf(ERRORS, "RotationError").filter((quote) => quote.startsWith("Version")), [await rotationError(randomUUID(), "setSecret")]);
    // The sentence on a Step that is none of Secrets Manager's four, or an empty ClientRequestToken: one quote for each.
    const [handMade = ""] = textsSaid(ERRORS, /(A hand-made invoke with a Step that is none of [^]*? before anything is read)/)[0] ?? [];
    const [four] = firstNumbersSaid(handMade, /none of Secrets Manager's (\w+)/);
    const badStep = await rotationError(randomUUID(), "rotate");
    expect(badStep.match(/"\w+Secret"/g)).toHaveLength(four ?? 0);
    const quotes = textsSaid(handMade, /"([^"]+)"/).map(([quote = ""]) => quote);
    expect(quotes).toHaveLength(2);
    expectQuoted(quotes.slice(0, 1), [badStep]);
    expectQuoted(quotes.slice(1), [await rotationError("", "createSecret")]);
  });
});

describe("docs/runbook.md, Function errors: a poll event for another poller or tenant, or with a typo", () => {
  /** The messages checkPollTarget refuses the runbook's examples with, on either poller of tenant acme. */
  const refusals = (events: readonly unknown[]): string[] =>
    events.flatMap((event) =>
      (["transactions", "cards"] as const).flatMap((kind) => {
        try {
          checkPollTarget(event as PollEvent, kind, "acme");
          return [];
        } catch (error) {
          return [(error as Error).message];
        }
      }),
    );

  it("quotes each PollEventError message as the poller writes it", () => {
    const events = [{ kind: "cards" }, { kind: "transactions" }, { tenant: "globex" }, { mode: "suspended-only" }, { detail: "suspended-only" }, { acton: "redrive" }];
    const quotes = [...quotesOf(ERRORS, "PollEventError"), ...textsSaid(ERRORS, /"(Poll event field [^"]+)"/).map(([quote = ""]) => quote)];
    expect(new Set(quotes).size).toBeGreaterThanOrEqual(5);
    expectQuoted([...new Set(quotes)], refusals(events));
    // The runbook's way round a detail given as a string is taken.
    expect(ERRORS).toContain('give `{"mode":"suspended-only"}`');
    expect(refusals([{ mode: "suspended-only" }]).filter((message) => message.includes("goes only to the card poller"))).toHaveLength(1);
  });

  it("names the poll event's fields, the typos it refuses, and the members it lets through", () => {
    const [fields = ""] = textsSaid(ERRORS, /A poll event has ((?:`[\w-]+`(?:, | and )?)+)/)[0] ?? [];
    const named = [...fields.matchAll(/`([\w-]+)`/g)].map((m) => m[1] ?? "");
    // The list the error names when a key is no field name, which is not quoted back.
    const [noName = ""] = refusals([{ 'cursor:"abc"': 1 }]);
    expect(noName).not.toContain("abc");
    expect(noName).toContain(`a poll event has ${named.join(", ")}`);
    for (const typo of ["acton", "cursr", "Action", "Cursor", "MODE"]) {
      expect(ERRORS).toContain(`\`${typo}\``);
      expect(refusals([{ [typo]: "x" }])[0]).toMatch(new RegExp(`^Poll event field ${typo} is no field; did you mean (${named.join("|")})\\?$`));
    }
    const [through = ""] = textsSaid(ERRORS, /a schedule's `scheduledTime` and\s+an EventBridge rule event's own members \(([^)]+)\) are let through/)[0] ?? [];
    const members = ["scheduledTime", ...[...through.matchAll(/`([\w-]+)`/g)].map((m) => m[1] ?? "")];
    expect(members.length).toBeGreaterThanOrEqual(6);
    expect(refusals([Object.fromEntries(members.map((member) => [member, "x"]))])).toEqual([]);
  });
});

interface Alarm {
  readonly AlarmName: string;
  readonly Period?: number;
  readonly EvaluationPeriods: number;
  readonly DatapointsToAlarm: number;
  readonly Metrics?: readonly { readonly MetricStat?: { readonly Metric: { readonly MetricName: string; readonly Namespace: string }; readonly Stat: string; readonly Period: number } }[];
}
const alarmsOf = (template: Template): Alarm[] => Object.values(template.findResources("AWS::CloudWatch::Alarm")).map((r) => (r as { Properties: Alarm }).Properties);

describe("docs/runbook.md, Dead letters", () => {
  it("keeps messages as long as it says, under the tenant key", () => {
    const queues = Object.values(exampleStacks().acme.template.findResources("AWS::SQS::Queue")) as { Properties: { MessageRetentionPeriod: number; KmsMasterKeyId?: unknown } }[];
    expect(queues.length).toBeGreaterThanOrEqual(3);
    const [days] = firstNumbersSaid(DEAD_LETTERS, /Messages are kept (\d+) days and encrypted with the tenant key/);
    for (const queue of queues) {
      expect(queue.Properties.MessageRetentionPeriod).toBe((days ?? 0) * 86_400);
      expect(JSON.stringify(queue.Properties.KmsMasterKeyId)).toMatch(/"Key[0-9A-F]{8}"/);
    }
  });

  it("gives how long a tick may wait before it goes to the pollers' queue", () => {
    const [hours] = firstNumbersSaid(DEAD_LETTERS, /waited longer than one schedule period \(at most (\d+) hours/);
    expect(pollerMaxEventAge(24 * 60).toSeconds()).toBe((hours ?? 0) * 3600);
    expect(pollerMaxEventAge(10).toSeconds()).toBe(10 * 60);
    const [slack] = firstNumbersSaid(DEAD_LETTERS, /at\s+least a whole full walk plus (\d+) minutes for the card poller/);
    for (const every of [5, 15, 60]) expect(pollerMaxEventAge(every, { fastPath: true }).toSeconds()).toBe(Math.max(every * 60, pollerTimeout(every).toSeconds() + (slack ?? 0) * 60));
  });

  it("gives the pollers' alarm window over the slower poller's schedule", () => {
    const [breaching, evaluated, least] = firstNumbersSaid(DEAD_LETTERS, /ticks went there in (\d+) of the last (\d+) periods \(a period being the slower poller's schedule, at least\s+(\d+) minutes/);
    expect(least).toBe(MIN_CYCLE_ALARM_PERIOD_MINUTES);
    const tenants = loadTenantsFile(EXAMPLE_TENANTS_FILE);
    for (const [id, { template }] of Object.entries(exampleStacks())) {
      const tenant = tenants.find((t) => t.id.startsWith(id)) as TenantConfig;
      const alarm = alarmsOf(template).find((a) => a.AlarmName.endsWith("-DeadLetters-Pollers"));
      const slower = Math.max(tenant.schedules.transactionsEveryMinutes, tenant.schedules.cardsEveryMinutes, least ?? 0);
      expect(alarm).toMatchObject({ EvaluationPeriods: evaluated, DatapointsToAlarm: breaching, Period: slower * 60 });
    }
  });

  it("gives the webhooks' retry defaults and the window and metrics of a webhook's alarm", () => {
    expect(firstNumbersSaid(DEAD_LETTERS, /\((\d+) retries within (\d+) hours by default\)/)).toEqual([TENANT_DEFAULTS.webhookRetryAttempts, TENANT_DEFAULTS.webhookMaxEventAgeHours]);
    expect(firstNumbersSaid(DEAD_LETTERS, /`maxEventAgeHours` \((\d+) by default\)/)).toEqual([TENANT_DEFAULTS.webhookMaxEventAgeHours]);
    const webhook = alarmsOf(exampleStacks().acme.template).find((a) => /-DeadLetters-Webhook-/.test(a.AlarmName));
    const stats = (webhook?.Metrics ?? []).flatMap((m) => (m.MetricStat === undefined ? [] : [m.MetricStat]));
    expect(stats).toHaveLength(2);
    const [periodMinutes] = firstNumbersSaid(DEAD_LETTERS, /The alarm is the sum of two metrics, each per\s+(\d+) minutes/);
    for (const stat of stats) {
      expect(stat.Period).toBe((periodMinutes ?? 0) * 60);
      expect(DEAD_LETTERS).toContain(`\`${stat.Metric.MetricName}\` (\`${stat.Metric.Namespace}\`, ${stat.Stat}`);
    }
    const [breaching, evaluated] = firstNumbersSaid(DEAD_LETTERS, /The alarm\s+fires on (\d+) of the last (\d+) periods/);
    expect(webhook).toMatchObject({ EvaluationPeriods: evaluated, DatapointsToAlarm: breaching });
    expect(firstNumbersSaid(DEAD_LETTERS, /so it clears (\d+) minutes\s+after both parts are back to 0/)).toEqual([(evaluated ?? 0) * (periodMinutes ?? 0)]);
  });

  it("names the key policy statements EventBridge's dead letters and encrypted events need", () => {
    const policy = JSON.stringify(exampleStacks().acme.template.findResources("AWS::KMS::Key"));
    const sids = textsSaid(DEAD_LETTERS, /`(AllowEventBridge\w+)`/).map(([sid = ""]) => sid);
    expect(sids.length).toBeGreaterThanOrEqual(2);
    for (const sid of sids) expect(policy).toContain(`"Sid":"${sid}"`);
  });
});

describe("docs/runbook.md, Heartbeat", () => {
  it("gives the heartbeat windows as heartbeatAlarmWindow sets them", () => {
    const [periods] = firstNumbersSaid(HEARTBEAT, /all\s+of the last (\d+) must lack a cycle/);
    const [longPeriods, overHours] = firstNumbersSaid(HEARTBEAT, /both of the last (\d+) for schedules over (\d+) hours/);
    expect(heartbeatAlarmWindow((overHours ?? 0) * 60).evaluationPeriods).toBe(periods);
    expect(heartbeatAlarmWindow((overHours ?? 0) * 60 + 1).evaluationPeriods).toBe(longPeriods);
    const [hourlyOver] = firstNumbersSaid(HEARTBEAT, /Over (\d+) hours a period is one hour instead/);
    expect(heartbeatAlarmWindow((hourlyOver ?? 0) * 60).evaluationPeriods).toBe(longPeriods);
    expect(heartbeatAlarmWindow((hourlyOver ?? 0) * 60 + 1).period.toMinutes()).toBe(60);
    expect(firstNumbersSaid(HEARTBEAT, /\((\d+) of them for a daily schedule\)/)).toEqual([heartbeatAlarmWindow(24 * 60).evaluationPeriods]);
    const fastest = heartbeatAlarmWindow(1);
    expect(firstNumbersSaid(HEARTBEAT, /under a (\d+)-minute schedule, once (\d+) minutes pass without a tick/)).toEqual([
      fastest.period.toMinutes(),
      fastest.period.toMinutes() * fastest.evaluationPeriods,
    ]);
  });

  it("names the metrics, dimensions and dashboard lines of a fast-path tenant's card heartbeats", () => {
    const alarms = alarmsOf(fastPathGlobex());
    const heartbeatMetrics = textsSaid(HEARTBEAT, /`(\w+CardWalks)` \(`(\w+)`, dimensions `(\w+)` and `(\w+)`, summed\)/);
    expect(heartbeatMetrics).toHaveLength(2);
    const body = JSON.stringify(fastPathGlobex().findResources("AWS::CloudWatch::Dashboard"));
    for (const [metric = "", namespace, ...dimensions] of heartbeatMetrics) {
      const alarm = alarms.find((a) => JSON.stringify(a).includes(`"MetricName":"${metric}"`)) as unknown as { Namespace: string; Statistic: string; Dimensions: { Name: string }[] } | undefined;
      expect(alarm, metric).toBeDefined();
      expect(alarm?.Namespace).toBe(namespace);
      expect(alarm?.Statistic).toBe("Sum");
      expect(alarm?.Dimensions.map((d) => d.Name).sort()).toEqual(dimensions.sort());
      expect(body).toContain(metric);
    }
    for (const [label = ""] of textsSaid(HEARTBEAT, /The dashboard graphs the metric \(`([^`]+)`\)/)) expect(body).toContain(`\\"label\\":\\"${label}\\"`);
  });

  it("names the schedules of the tenant's group and when a held card cycle lease expires", () => {
    const schedules = Object.values(fastPathGlobex().findResources("AWS::Scheduler::Schedule")).map((r) => (r as { Properties: { Name: string; GroupName: unknown } }).Properties);
    const [group] = textsSaid(RUNBOOK, /--group-name (qashio-bridge-)\$T/)[0] ?? [];
    expect(JSON.stringify(fastPathGlobex().findResources("AWS::Scheduler::ScheduleGroup"))).toContain(`"Name":"${group ?? ""}globex"`);
    const [cards, fast, transactions] = textsSaid(HEARTBEAT, /The card poller's schedules are `(\w+)` and `(\w+)` \(the fast path, [^)]*\), the transaction poller's `(\w+)`/)[0] ?? [];
    expect(schedules.map((s) => s.Name).sort()).toEqual([cards, fast, transactions].sort());
    expect(unitSaid(HEARTBEAT, /which expires an? (\w+) after that one's deadline/)).toBe(CYCLE_LEASE_SLACK_MS);
  });
});
