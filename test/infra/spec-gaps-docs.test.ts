/**
 * docs/spec-gaps.md's "Infrastructure" section held to the code: the numbers, names and ranges it gives a reader,
 * read from the doc and compared with the code's exported constants or run through its exported functions. The
 * synthesized stacks are checked by the behaviour tests beside this one; these need no synth.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { Duration } from "aws-cdk-lib";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";
import { ESM_REQUIRE_BANNER } from "../../infra/constructs/bridge-function.js";
import { cycleAlarmWindow, heartbeatAlarmWindow, MIN_CYCLE_ALARM_PERIOD_MINUTES, type AlarmWindow } from "../../infra/constructs/alarm-window.js";
import { TABLE_ACCESS, tableGrants, type TableItemAction } from "../../infra/constructs/tenant-table.js";
import { TOKEN_ROTATION_SCHEDULE, TOKEN_ROTATION_WINDOW } from "../../infra/constructs/tenant-secret.js";
import { toDraft04 } from "../../infra/event-schemas-source.js";
import { providerUrlsFrom, resolveProviderUrl } from "../../infra/provider-urls.js";
import { TENANT_DEFAULTS } from "../../infra/tenant-defaults.js";
import { parseTenantConfig } from "../../infra/tenant-config.js";
import { cycleBudgetMs, pollerMaxEventAge, pollerTimeout } from "../../infra/tenant-stack.js";
import { unreachableHost } from "../../infra/webhook-host.js";
import { ACCESS_TOKEN_TTL_SECONDS, REFRESH_TOKEN_TTL_SECONDS } from "../../sandbox/oauth.js";
import { CYCLE_SAFETY_MARGIN_MS, DEFAULT_METRICS_NAMESPACE, DEFAULT_SERVICE_NAME, MAX_CYCLE_BUDGET_MS, MIN_CYCLE_BUDGET_MS } from "../../shared/aws/config.js";
import { LIVE_BY_TTL_INDEX, type PartitionKind } from "../../shared/aws/keys.js";
import { LAST_VALUE_METRICS } from "../../shared/aws/observability.js";
import { SECRET_VERSION_WINDOW_MS, SECRET_VERSIONS_EARLY_REFRESH_LIMIT, SECRET_VERSIONS_PER_DAY_LIMIT } from "../../shared/aws/token-store.js";
import { DEFAULT_REFRESH_SKEW_MS } from "../../shared/qashio/auth/token-expiry.js";
import { BASE_URL_ENV_VARS } from "../../shared/qashio/config.js";
import { numbersSaid, quotedNames, textsSaid } from "../doc-text.js";
import { expectCitationsHold, specGapsSection } from "../spec-gaps-section.js";
import { thrown } from "../thrown.js";
import { REPO_ROOT } from "./helpers.js";

const INFRA = specGapsSection("Infrastructure");
const said = (pattern: RegExp): number[][] => numbersSaid(INFRA, pattern);
const quoted = (pattern: RegExp): string[][] => textsSaid(INFRA, pattern);

const MINUTE_MS = 60_000;
const DAY_MINUTES = 24 * 60;
/** An alarm window with its period in minutes, to compare (a Duration keeps the unit it was made in). */
const inMinutes = ({ period, ...counts }: AlarmWindow) => ({ minutes: period.toMinutes(), ...counts });
const minimalTenant = { id: "acme", environment: "sandbox", alarms: { email: "ops@acme.test" } };

describe("docs/spec-gaps.md, Infrastructure: provider base URLs", () => {
  it("names the variables the app reads, the environment winning over the cdk context", () => {
    const [[production, eu, sandbox] = []] = quoted(/Resolved at synth from `(\w+)` \/ `(\w+)` \/ `(\w+)` \(environment wins\)/);
    expect({ production, eu, sandbox }).toEqual(BASE_URL_ENV_VARS);
    const urls = providerUrlsFrom({ sandbox: "https://context.provider.test" }, { [BASE_URL_ENV_VARS.sandbox]: "https://env.provider.test" });
    expect(urls.sandbox).toBe("https://env.provider.test");
  });

  it("has cdk.json carry the placeholders it says, a tenant's literal https:// URL taken instead", () => {
    const [[suffix] = []] = quoted(/cdk\.json carries `\*(\.\w+)` placeholders/);
    const cdkJson = JSON.parse(readFileSync(join(REPO_ROOT, "cdk.json"), "utf8")) as { context: { qashioUrls: Record<string, string> } };
    const placeholders = Object.values(cdkJson.context.qashioUrls);
    expect(Object.keys(cdkJson.context.qashioUrls).sort()).toEqual(Object.keys(BASE_URL_ENV_VARS).sort());
    for (const url of placeholders) expect(new URL(url).hostname.endsWith(suffix ?? "?")).toBe(true);
    const [[warning] = []] = quoted(/synth warns \(`([\w:-]+)`\)/);
    expect(readFileSync(join(REPO_ROOT, "infra", "tenant-stack.ts"), "utf8")).toContain(`"${warning}"`);
    expect(quoted(/A tenant may give a literal `(\w+):\/\/` URL instead/)).toEqual([["https"]]);
    const literal = parseTenantConfig({ ...minimalTenant, environment: "https://api.provider.test" });
    expect(resolveProviderUrl(literal, {})).toBe("https://api.provider.test");
  });
});

describe("docs/spec-gaps.md, Infrastructure: token rotation and secret versions", () => {
  it("rotates on the schedule and window it gives, so two rotations are the hours apart it says", () => {
    const [[schedule, window] = []] = quoted(/\(`(cron\([^`]+\))`, window `(\w+)`, so two rotations are/);
    expect(schedule).toBe(TOKEN_ROTATION_SCHEDULE);
    expect(window).toBe(TOKEN_ROTATION_WINDOW);
    const windowHours = Duration.parse(`PT${(window ?? "").toUpperCase()}`).toHours();
    expect(said(/so two rotations are (\d+) to (\d+) hours apart/)).toEqual([[24 - windowHours, 24 + windowHours]]);
  });

  it("counts the sandbox's token lifetimes and the refreshes a day they make as the code has them", () => {
    expect(said(/refresh tokens outlive a day unused \(the sandbox's live (\d+) days\)/)).toEqual([[REFRESH_TOKEN_TTL_SECONDS / 86_400]]);
    const [[perDay, minutes] = []] = said(/one per access-token lifetime while the pollers run \((\d+) a day with the sandbox's (\d+) minutes\)/);
    expect(minutes).toBe(ACCESS_TOKEN_TTL_SECONDS / 60);
    expect(perDay).toBe(DAY_MINUTES / (minutes ?? 1));
  });

  it("refuses refreshes at the two limits it names, over the window it gives, with the margin it says", () => {
    expect(said(/at (\d+) \(`SECRET_VERSIONS_PER_DAY_LIMIT`\)/)).toEqual([[SECRET_VERSIONS_PER_DAY_LIMIT]]);
    expect(said(/at (\d+) \(`SECRET_VERSIONS_EARLY_REFRESH_LIMIT`\)/)).toEqual([[SECRET_VERSIONS_EARLY_REFRESH_LIMIT]]);
    expect(said(/counts the versions of the last (\d+) hours/)).toEqual([[SECRET_VERSION_WINDOW_MS / 3_600_000]]);
    const [[margin, quota] = []] = said(/(\w+) versions of margin under (\d+)/);
    expect(margin).toBe((quota ?? 0) - SECRET_VERSIONS_PER_DAY_LIMIT);
    expect(said(/ahead of the access token's expiry \(the (\d+) s refresh skew\)/)).toEqual([[DEFAULT_REFRESH_SKEW_MS / 1000]]);
    // "refreshes a minute early come every 14 minutes, 103 a day": the sandbox's lifetime less the skew.
    const [[every, count] = []] = said(/refreshes a minute early come every (\d+) minutes, (\d+) a day/);
    expect(every).toBe(ACCESS_TOKEN_TTL_SECONDS / 60 - DEFAULT_REFRESH_SKEW_MS / MINUTE_MS);
    expect(count).toBe(Math.ceil(DAY_MINUTES / (every ?? 1)));
  });

  it("has an invocation publish only the last value of the two gauges it names", () => {
    expect(quoted(/An invocation publishes only the gauge's last value \(`(\w+)` in `shared\/aws\/observability\.ts`\)/)).toEqual([["LAST_VALUE_METRICS"]]);
    for (const gauge of ["TokenHeldInTable", "TokenFamilyRevoked"] as const) expect(LAST_VALUE_METRICS.has(gauge), gauge).toBe(true);
  });
});

describe("docs/spec-gaps.md, Infrastructure: overlapping cycles", () => {
  it("clamps the timeout to the minutes it gives and takes the budget from it as it says", () => {
    const [[shortest, longest] = []] = said(/Function timeout = the schedule period clamped to (\d+)\.\.(\d+) minutes/);
    expect(pollerTimeout(1).toMinutes()).toBe(shortest);
    for (const everyMinutes of [(longest ?? 0) + 1, DAY_MINUTES]) expect(pollerTimeout(everyMinutes).toMinutes()).toBe(longest);
    expect(pollerTimeout((longest ?? 0) - 1).toMinutes()).toBe((longest ?? 0) - 1);
    const [[less, floor, most, accepted] = []] = said(
      /`CYCLE_BUDGET_MS` = timeout − (\d+) s, never under (\d+) s \(`MIN_CYCLE_BUDGET_MS`, see "Time budget"\), so at most (\d+) s, within the (\d+) s the functions accept/,
    );
    expect(less).toBe(CYCLE_SAFETY_MARGIN_MS / 1000);
    expect(floor).toBe(MIN_CYCLE_BUDGET_MS / 1000);
    expect(cycleBudgetMs(pollerTimeout(DAY_MINUTES)) / 1000).toBe(most);
    expect(cycleBudgetMs(Duration.seconds(less ?? 0)) / 1000).toBe(floor);
    expect(accepted).toBe(MAX_CYCLE_BUDGET_MS / 1000);
  });

  it("drops a tick after the wait it says, a fast-path card poller's after its timeout plus the minutes it gives", () => {
    const [[hours] = []] = said(/at most (\d+) hours, the longest Lambda keeps a queued asynchronous invocation/);
    expect(pollerMaxEventAge(DAY_MINUTES).toHours()).toBe(hours);
    expect(pollerMaxEventAge(60).toMinutes()).toBe(60);
    const [[plus] = []] = said(/the card poller's waits at least its timeout plus (\d+) minutes/);
    for (const everyMinutes of [1, 5, 15]) {
      expect(pollerMaxEventAge(everyMinutes, { fastPath: true }).toMinutes()).toBe(Math.max(everyMinutes, pollerTimeout(everyMinutes).toMinutes() + (plus ?? 0)));
    }
  });
});

describe("docs/spec-gaps.md, Infrastructure: AWS SDK bundled", () => {
  /** Bytes and gzipped bytes of `entry` bundled as BridgeFunction bundles it (minified ESM for node24), `external` left out. */
  async function bundleSize(entry: string, external: string[]): Promise<{ bytes: number; gzip: number }> {
    const result = await build({
      entryPoints: [join(REPO_ROOT, "functions", `${entry}.ts`)],
      bundle: true,
      minify: true,
      format: "esm",
      platform: "node",
      target: "node24",
      mainFields: ["module", "main"],
      banner: { js: ESM_REQUIRE_BANNER },
      external,
      write: false,
      logLevel: "silent",
    });
    const code = result.outputFiles[0]?.contents ?? new Uint8Array();
    return { bytes: code.length, gzip: gzipSync(code).length };
  }
  /** Within 5% of `measured`: the doc's rounding passes, a bundle grown or shrunk since it was measured does not. */
  const near = (stated: number, measured: number, what: string): void => expect(Math.abs(stated - measured) / measured, `${what}: ${stated} stated, ${measured} measured`).toBeLessThan(0.05);

  it("gives the bundle sizes esbuild makes of the function it names, with and without the SDK", { timeout: 30_000 }, async () => {
    const [[entry = "", ...sizes] = []] = quoted(
      /Measured with esbuild \(minified ESM, `([\w-]+)`\): ([\d.]+) MB \((\d+) KB gzip\) with the SDK v3 clients bundled, ([\d.]+) MB \((\d+) KB gzip\) with `@aws-sdk\/\*` and `@smithy\/\*` external/,
    );
    const [bundledMb, bundledGzipKb, externalMb, externalGzipKb] = sizes.map(Number);
    const bundled = await bundleSize(entry, []);
    const external = await bundleSize(entry, ["@aws-sdk/*", "@smithy/*"]);
    near((bundledMb ?? 0) * 1e6, bundled.bytes, "bundled");
    near((bundledGzipKb ?? 0) * 1e3, bundled.gzip, "bundled, gzip");
    near((externalMb ?? 0) * 1e6, external.bytes, "SDK external");
    near((externalGzipKb ?? 0) * 1e3, external.gzip, "SDK external, gzip");
    const [[difference = 0] = []] = said(/The ~(\d+) KB difference/);
    near(difference * 1e3, bundled.bytes - external.bytes, "difference");
  });
});

describe("docs/spec-gaps.md, Infrastructure: metrics and alarm windows", () => {
  it("queries the namespace and service dimension the runtime emits under", () => {
    expect(quoted(/`SELECT MAX\(QuarantineSize\) FROM (\w+) WHERE tenant = '<id>'`/)).toEqual([[DEFAULT_METRICS_NAMESPACE]]);
    expect(quoted(/`QashioBridge\/SyncLagSeconds`/)).toHaveLength(1);
    expect(quoted(/\(`service` = `([\w-]+)`, one constant shared/)).toEqual([[DEFAULT_SERVICE_NAME]]);
  });

  it("states the SyncLag default and the schedule rates synth takes", () => {
    expect(said(/`alarms\.syncLagThresholdSeconds` \(default (\d+);/)).toEqual([[TENANT_DEFAULTS.syncLagThresholdSeconds]]);
    const [[slowest, fastest] = []] = said(/never shorter than (\d+) minutes, so every period holds a cycle's data point at any allowed rate \((\d+) to (\d+) minutes\)/).map(
      ([floor, low, high]) => {
        expect(floor).toBe(MIN_CYCLE_ALARM_PERIOD_MINUTES);
        return [high, low];
      },
    );
    const schedule = (transactionsEveryMinutes: number) => () => parseTenantConfig({ ...minimalTenant, schedules: { transactionsEveryMinutes }, alarms: { ...minimalTenant.alarms, syncLagThresholdSeconds: 86_460 } });
    for (const rate of [fastest ?? 0, slowest ?? 0]) expect(schedule(rate)).not.toThrow();
    for (const rate of [(fastest ?? 0) - 1, (slowest ?? 0) + 1]) expect(thrown(schedule(rate)).message).toContain("transactionsEveryMinutes");
    // "synth refuses one no longer than the transactions schedule"
    const lag = (syncLagThresholdSeconds: number) => () => parseTenantConfig({ ...minimalTenant, schedules: { transactionsEveryMinutes: 10 }, alarms: { ...minimalTenant.alarms, syncLagThresholdSeconds } });
    expect(thrown(lag(600)).message).toContain("syncLagThresholdSeconds");
    expect(lag(601)).not.toThrow();
  });

  it("has 2 of 3 periods breach, and 3 periods fit at the schedules it names", () => {
    const [[breach, of] = []] = said(/(\d+) of (\d+) periods must breach \(one failed cycle is retried by the next tick\), at every allowed schedule/);
    const [[fits, under] = []] = said(/\((\d+) x (\d+) minutes fits\)/);
    const [[days] = []] = said(/\((\d+) one-day periods of a daily schedule fit\)/);
    for (const everyMinutes of [1, under ?? 0, 60, DAY_MINUTES]) {
      expect(cycleAlarmWindow(everyMinutes), String(everyMinutes)).toMatchObject({ evaluationPeriods: of, datapointsToAlarm: breach });
    }
    expect(cycleAlarmWindow(under ?? 0).evaluationPeriods).toBe(fits);
    expect(inMinutes(cycleAlarmWindow(DAY_MINUTES))).toMatchObject({ minutes: DAY_MINUTES, evaluationPeriods: days });
  });

  it("gives a heartbeat the windows it says: all periods of the schedule up to 12 hours, one-hour periods beyond", () => {
    const [[all, twoOf, over = 0] = []] = said(/\((\d+) of \d+, (\d+) of \d+ over (\d+) hours: the periods that fit in a day/);
    expect(heartbeatAlarmWindow(over * 60)).toMatchObject({ evaluationPeriods: all, datapointsToAlarm: all });
    expect(heartbeatAlarmWindow(over * 60 + 1)).toMatchObject({ evaluationPeriods: twoOf, datapointsToAlarm: twoOf });
    const [[beyond = 0, forDaily] = []] = said(/over (\d+) hours \(`heartbeatAlarmWindow`\), one-hour periods covering the schedule plus an hour, all of them \((\d+) for a daily schedule\)/);
    expect(heartbeatAlarmWindow(beyond * 60).period.toMinutes()).toBe(beyond * 60);
    expect(inMinutes(heartbeatAlarmWindow(beyond * 60 + 1))).toEqual({ minutes: 60, evaluationPeriods: beyond + 2, datapointsToAlarm: beyond + 2 });
    expect(inMinutes(heartbeatAlarmWindow(DAY_MINUTES))).toEqual({ minutes: 60, evaluationPeriods: forDaily, datapointsToAlarm: forDaily });
  });
});

describe("docs/spec-gaps.md, Infrastructure: table grants", () => {
  const allActions = (kinds: readonly PartitionKind[]): string[] =>
    [...new Set(Object.values(TABLE_ACCESS).flatMap((access) => kinds.flatMap((kind): readonly TableItemAction[] => access[kind] ?? [])))]
      .map((action) => action.replace("dynamodb:", ""))
      .sort();
  /** The DynamoDB actions named in `text`, parentheses left out. */
  const named = (text: string): string[] => [...new Set(text.replace(/\([^)]*\)/g, "").match(/\b\w+Item\b|\bQuery\b/g) ?? [])].sort();

  it("grants each kind of partition the actions it lists for it", () => {
    const listed: readonly [RegExp, readonly PartitionKind[]][] = [
      [/Per partition kind: snapshots ([^;]*);/, ["snapshots", "cardSnapshots"]],
      [/`QUAR#<tenant>` (.*?); the cycle leases/, ["quarantine"]],
      [/the cycle leases ([^;]*);/, ["transactionsCycleLease", "cardsCycleLease"]],
      [/the token-refresh lease \(`LEASE#<tenant>#token-refresh`\) ([^;]*);/, ["tokenLease"]],
      [/`TOKEN#<tenant>` (GetItem[^;(]*)\(the access/, ["token"]],
      [/`PII#<tenant>` ([^,]*), pollers only/, ["piiSalt"]],
    ];
    for (const [pattern, kinds] of listed) expect(named(quoted(pattern)[0]?.[0] ?? ""), String(pattern)).toEqual(allActions(kinds));
    expect(TABLE_ACCESS.rotateToken).toEqual({ tokenLease: TABLE_ACCESS.rotateToken.tokenLease, token: TABLE_ACCESS.rotateToken.token });
  });

  it("makes the item statements it counts, and names the index the quarantine is counted on", () => {
    const [[poller, rotation] = []] = said(/That makes (\d+) item statements a poller and (\d+) for the rotation/);
    expect(tableGrants("acme", "pollTransactions")).toHaveLength(poller ?? 0);
    expect(tableGrants("acme", "pollCards")).toHaveLength(poller ?? 0);
    expect(tableGrants("acme", "rotateToken")).toHaveLength(rotation ?? 0);
    expect(quoted(/`dynamodb:Query` on the index `([\w-]+)`/)).toEqual([[LIVE_BY_TTL_INDEX]]);
  });
});

describe("docs/spec-gaps.md, Infrastructure: webhooks", () => {
  it("states the delivery defaults the config applies", () => {
    expect(said(/defaults (\d+) retries within (\d+) hours, then the webhook's DLQ/)).toEqual([[TENANT_DEFAULTS.webhookRetryAttempts, TENANT_DEFAULTS.webhookMaxEventAgeHours]]);
  });

  it("refuses every host and range it lists, and none of those it says are not refused", () => {
    const ranges = quoted(/`(\d+(?:\.\d+)*\/\d+)`/g).map(([cidr]) => cidr ?? "");
    expect(ranges.length).toBeGreaterThanOrEqual(9);
    for (const cidr of ranges) {
      const [net = "", prefix = ""] = cidr.split("/");
      const first = [...net.split("."), "0", "0", "0"].slice(0, 4).map(Number);
      // The range's first and last address: both refused.
      const size = 2 ** (32 - Number(prefix));
      const start = first.reduce((n, octet) => n * 256 + octet, 0);
      for (const address of [start, start + size - 1]) {
        const dotted = [24, 16, 8, 0].map((shift) => (address >>> shift) & 255).join(".");
        expect(unreachableHost(`https://${dotted}/hooks`), `${dotted} in ${cidr}`).toBeDefined();
      }
    }
    expect(unreachableHost("https://255.255.255.255/")).toBeDefined();
    const [privateSuffixes = []] = quoted(/names under `\.(\w+)`, `\.(\w+)` or `\.([\w.]+)` \(RFC 8375\)/);
    for (const suffix of privateSuffixes) expect(unreachableHost(`https://hooks.${suffix}/`), suffix).toBeDefined();
    expect(unreachableHost("https://localhost/")).toBeDefined();
    expect(unreachableHost("https://api.localhost/")).toBeDefined();
    const spellings = quoted(/\(`(https:\/\/\w+\/)`, `(https:\/\/[\w.]+\/)`, `(https:\/\/[\w.]+\/)` and `(https:\/\/\w+\/)` are all `([\d.]+)`/)[0] ?? [];
    const loopback = spellings.pop();
    for (const url of spellings) {
      expect(new URL(url).hostname, url).toBe(loopback);
      expect(unreachableHost(url), url).toBeDefined();
    }
    const [[test, example, invalid] = []] = quoted(/reserved test names \(`\.(\w+)`, `\.(\w+)`, `\.(\w+)`, RFC 6761/);
    for (const suffix of [test, example, invalid]) expect(unreachableHost(`https://hooks.${suffix}/`), suffix).toBeUndefined();
    expect(unreachableHost("https://hooks/"), "a single-label host").toBeUndefined();
    expect(unreachableHost("https://203.0.113.7/"), "a public IP literal").toBeUndefined();
  });
  it("names the tenant, the field it gives and the host when synth refuses a webhook url, and holds an OAuth tokenUrl to the same hosts", () => {
    const [[field = ""] = []] = quoted(/naming the tenant, the field \(`([^`]+)`\) and the host/);
    const secretArn = "arn:aws:secretsmanager:eu-west-1:111111111111:secret:hook-AbCdEf";
    const tenantWith = (url: string, tokenUrl: string) => () =>
      parseTenantConfig({
        ...minimalTenant,
        account: "111111111111",
        region: "eu-west-1",
        webhooks: [{ name: "erp", url, eventTypes: ["transaction.created"], auth: { type: "oauthClientCredentials", tokenUrl, clientId: "bridge", clientSecret: { secretArn } } }],
      });
    const refused = thrown(tenantWith("https://10.1.2.3/hooks", "https://idp.provider.test/token")).message;
    for (const part of ['tenant "acme"', field.replace("<i>", "0"), '"10.1.2.3"']) expect(refused).toContain(part);
    expect(thrown(tenantWith("https://hooks.provider.test/", "https://idp.internal/token")).message).toContain('"idp.internal"');
    expect(tenantWith("https://hooks.provider.test/", "https://idp.provider.test/token")).not.toThrow();
  });
});

describe("docs/spec-gaps.md, Infrastructure: event schema format", () => {
  const DRAFT_2020 = "https://json-schema.org/draft/2020-12/schema";

  it("rewrites each keyword it lists to its draft-04 form", () => {
    const converted = toDraft04(
      { $schema: DRAFT_2020, $defs: { id: { const: "a" } }, properties: { n: { exclusiveMinimum: 0 }, t: { prefixItems: [{ type: "string" }] } } },
      "x.json",
    );
    expect(converted).toEqual({
      $schema: "http://json-schema.org/draft-04/schema#",
      definitions: { id: { enum: ["a"] } },
      properties: { n: { minimum: 0, exclusiveMinimum: true }, t: { items: [{ type: "string" }] } },
    });
    expect(quoted(/\(`\$defs` → `(\w+)`, `const` → one-value `(\w+)`, numeric `exclusiveMinimum\/Maximum` → boolean form, `prefixItems` →/)).toEqual([
      ["definitions", "enum"],
    ]);
  });

  it("fails on every keyword it says has no draft-04 form", () => {
    const [[list] = []] = quoted(/Keywords with no draft-04 form \(([^)]*)\) fail synth/);
    const keywords = quotedNames(list ?? "").flatMap((k) => k.split("/"));
    expect(keywords.length).toBeGreaterThanOrEqual(6);
    for (const keyword of keywords.flatMap((k) => (k.endsWith("*") ? [`${k.slice(0, -1)}Properties`, `${k.slice(0, -1)}Items`] : [k]))) {
      expect(() => toDraft04({ $schema: DRAFT_2020, [keyword]: {} }, "x.json"), keyword).toThrow(keyword);
    }
  });
});

describe("docs/spec-gaps.md, Infrastructure: retention", () => {
  it("states the archive's default retention", () => {
    expect(said(/the archive keeps `archiveRetentionDays` \(default (\d+)\)/)).toEqual([[TENANT_DEFAULTS.archiveRetentionDays]]);
  });
});

describe("docs/spec-gaps.md, Infrastructure: the code it names", () => {
  it("cites files that exist, holding each name it places in them (`NAME` in `path`)", () => {
    expect(expectCitationsHold(INFRA)).toBeGreaterThan(20);
    const placed = [...INFRA.matchAll(/`([\w.]+)` in `((?:infra|shared)\/[\w/.-]+\.ts)`/g)];
    expect(placed.length).toBeGreaterThanOrEqual(3);
    for (const [, name = "", path = ""] of placed) expect(readFileSync(join(REPO_ROOT, path), "utf8"), `${name} in ${path}`).toMatch(new RegExp(`\\b${name}\\b`));
  });
});
