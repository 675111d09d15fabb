/**
 * docs/runbook.md's QuarantineNotEmpty, QuarantineGrowing, Re-driving quarantined transactions and AcknowledgeRefused
 * held to the code: the windows, numbers, names, commands and messages they give an operator, read from the doc and
 * compared with what the code does (the behaviour tests count in the code's constants).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EventBridgeClient, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import type { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
import { mockClient } from "aws-sdk-client-mock";
import { Duration } from "aws-cdk-lib";
import { afterEach, describe, expect, it } from "vitest";
import { cycleAlarmWindow, MIN_CYCLE_ALARM_PERIOD_MINUTES } from "../infra/constructs/alarm-window.js";
import { cycleBudgetMs } from "../infra/tenant-stack.js";
import { BATCH_WRITE_LIMIT } from "../shared/aws/batch.js";
import { cycleDeadline } from "../shared/aws/config.js";
import { CorruptItemError } from "../shared/aws/errors.js";
import { outOfRangeIntegerIn } from "../shared/aws/event-integers.js";
import { EventBridgePublisher } from "../shared/aws/event-publisher.js";
import { MAX_ENTRY_BYTES } from "../shared/aws/event-size.js";
import { snapshotItemKey } from "../shared/aws/keys.js";
import { DEFAULT_QUARANTINE_RETENTION_DAYS, DynamoQuarantine } from "../shared/aws/quarantine.js";
import type { BridgeEvent, QuarantineRecord, SnapshotKey } from "../shared/bridge/ports.js";
import { refusedForReference } from "../shared/bridge/provider-errors.js";
import { PUBLISH_FAILURE_PREFIX, redriveQuarantined, VALIDATION_FAILURE_PREFIX } from "../shared/bridge/redrive.js";
import { emptyReport } from "../shared/bridge/report.js";
import { TransactionAcknowledger } from "../shared/bridge/transaction-acknowledge.js";
import { pollTransactions } from "../shared/bridge/transactions.js";
import { streamLogger } from "../shared/cli/console-ports.js";
import { formatCycleSummary, type OutputStream } from "../shared/cli/printer.js";
import { FileQuarantine } from "../shared/local/quarantine.js";
import { FakeClock } from "./aws/support/clock.js";
import { sampleEvent } from "./bridge/contract/event-publisher.js";
import { makeRig, quarantinePublishFailures, RecordingMetrics, refusal } from "./bridge/fakes.js";
import { docSection, docText, firstTextsSaid, numbersSaid, quotedNames, quotePattern, textsSaid } from "./doc-text.js";
import { acceptedScheduleMinutes, exampleStacks } from "./infra/helpers.js";
import { PROVIDER_SPEC, specSection } from "./provider-spec.js";
import { alarmWindowsSaid, cycleAlarmWindowsOf, runbookSection } from "./runbook-section.js";
import { ROOT } from "./spec-gaps-section.js";

const RUNBOOK = docText("docs/runbook.md");
const NOT_EMPTY = docSection(RUNBOOK, "QuarantineNotEmpty");
const GROWING = docSection(RUNBOOK, "QuarantineGrowing");
const REDRIVE = docSection(RUNBOOK, "Re-driving quarantined transactions");
const REFUSED = docSection(RUNBOOK, "AcknowledgeRefused");

describe("docs/runbook.md, AcknowledgeRefused: the alarm's window", () => {
  it("names only windows a transactions schedule the tenants file accepts gives the alarm", () => {
    const schedules = acceptedScheduleMinutes("transactionsEveryMinutes");
    expect(schedules.length).toBeGreaterThan(100);
    const said = alarmWindowsSaid(REFUSED);
    expect(said.length).toBeGreaterThanOrEqual(2);
    for (const window of said) expect(cycleAlarmWindowsOf(schedules), window).toContain(window);
  });

  it("gives a daily schedule's periods and the shortest period as the window has them", () => {
    const [periods = 0] = firstTextsSaid(REFUSED, /\((\d+) one-day periods for a daily one\)/).map(Number);
    const daily = cycleAlarmWindow(1440);
    expect(daily.period.toMinutes()).toBe(1440);
    expect(daily.evaluationPeriods).toBe(periods);
    for (const section of [REFUSED, GROWING]) {
      expect(numbersSaid(section, /one period of the transactions schedule, at least (\d+) minutes/)).toEqual([[MIN_CYCLE_ALARM_PERIOD_MINUTES]]);
    }
    expect(cycleAlarmWindow(1).period.toMinutes()).toBe(MIN_CYCLE_ALARM_PERIOD_MINUTES);
  });
});

describe.skipIf(PROVIDER_SPEC === "")("docs/runbook.md, AcknowledgeRefused: what it reads in the provider's spec", () => {
  const codes = REFUSED.slice(REFUSED.indexOf("2. Read the codes."), REFUSED.indexOf("3. Raise it with the provider"));

  it("quotes the sections it names in their own words", () => {
    // Each quote after a § names that section's words: `(§4.3: ... "not shown")`.
    const quotes = textsSaid(codes, /§([\d.]+)[^§"]*?"([^"]+)"/);
    expect(quotes.length).toBeGreaterThanOrEqual(2);
    for (const [section = "", quote = ""] of quotes) expect(specSection(section), `§${section}: "${quote}"`).toContain(quote);
  });

  it("gives the error rules and codes of §7 as §7 has them", () => {
    const [section = "", codesSeen = ""] = firstTextsSaid(codes, /rules \(§(\d+)\) a refused input gets a `400` with one entry per offending field and a code \(([^)]*) are the codes seen\)/);
    const rules = specSection(section);
    expect(rules).toContain("returns `400` with one `errors` entry per offending field");
    expect(rules).toContain(`Codes seen: ${codesSeen.replace(/,? and |, /g, ", ")}.`);
    expect(rules).toContain(firstTextsSaid(codes, /says to (treat) it (as a scoping problem when the id is believed valid)/).join(" "));
  });
});

/** A DynamoQuarantine whose table answers every call with nothing, and the inputs of the calls it made. */
function recordedQuarantine(clock: FakeClock) {
  const inputs: Record<string, unknown>[] = [];
  const doc = { send: (command: { input: Record<string, unknown> }) => (inputs.push(command.input), Promise.resolve({})) } as unknown as DynamoDBDocumentClient;
  return { quarantine: new DynamoQuarantine({ doc, tableName: "table", tenant: "acme", clock }), inputs };
}

const RECORD: QuarantineRecord = {
  id: "6f1c2a0e-8d4b-4c3e-9a51-2b7d0e4f8a13",
  kind: "transaction",
  entityId: "0b6c3f0a-1d2e-4f5a-8b9c-0d1e2f3a4b5c",
  reason: `${PUBLISH_FAILURE_PREFIX}MalformedDetail: bad`,
  raw: { qashio_id: "CT00000001" },
  at: "2026-03-01T12:00:00.000Z",
};

describe("docs/runbook.md, QuarantineNotEmpty: where the records are and how long they stay", () => {
  it("keeps a record the days it says after it was last found, a record found again starting over", async () => {
    const days = numbersSaid(NOT_EMPTY, /\((\d+) days after (?:a record was |it was )?last found/).map(([n]) => n);
    expect(days.length).toBeGreaterThanOrEqual(3);
    for (const n of days) expect(n).toBe(DEFAULT_QUARANTINE_RETENTION_DAYS);
    const clock = new FakeClock();
    const { quarantine, inputs } = recordedQuarantine(clock);
    const expiresAt = async () => {
      await quarantine.put(RECORD);
      return ((inputs.at(-1)?.["ExpressionAttributeValues"] as Record<string, number>)[":ttl"] ?? 0) * 1000;
    };
    expect(await expiresAt()).toBe(clock.now() + days[0]! * 86_400_000);
    clock.advance(10 * 86_400_000);
    expect(await expiresAt()).toBe(clock.now() + days[0]! * 86_400_000);
  });

  it("lists the records the quarantine holds with the filter the quarantine reads them with, on the attributes it writes", async () => {
    const clock = new FakeClock(Date.parse("2026-03-01T12:00:00.500Z"));
    const { quarantine, inputs } = recordedQuarantine(clock);
    await quarantine.put(RECORD);
    const written = Object.values(inputs[0]?.["ExpressionAttributeNames"] as Record<string, string>).concat(Object.keys(inputs[0]?.["Key"] as object));
    for await (const _ of quarantine.pages({ limit: 1 })) break;
    const query = inputs[1] ?? {};
    const list = firstTextsSaid(NOT_EMPTY, /--filter-expression '([^']+)' (?:\\ )?--expression-attribute-names '([^']+)'/);
    expect(list[0]).toBe(query["FilterExpression"]);
    expect(JSON.parse(list[1] ?? "")).toEqual(query["ExpressionAttributeNames"]);
    // `:now` is `$(date +%s)`: epoch seconds, as the item's `ttl`.
    expect(firstTextsSaid(NOT_EMPTY, /":now":\{"N":"'(\$\(date \+%s\))'"\}/)).toEqual(["$(date +%s)"]);
    expect(Math.abs((query["ExpressionAttributeValues"] as Record<string, number>)[":now"]! - clock.now() / 1000)).toBeLessThan(1);
    const projected = firstTextsSaid(NOT_EMPTY, /--projection-expression '([^']+)'/)[0]?.split(", ") ?? [];
    // QuarantineGrowing adds `at` through a name of its own (a reserved word).
    const [atName = "", at = ""] = Object.entries(JSON.parse(`{${firstTextsSaid(GROWING, /adding `("#at":"at")`/)[0] ?? ""}}`) as Record<string, string>)[0] ?? [];
    expect(GROWING).toContain(`\`${atName}\` to the projection`);
    for (const attribute of [...projected, at]) expect(written, attribute).toContain(attribute);
  });

  it("names the reasons' prefixes and the snapshot item of a transaction as the code writes them", () => {
    const prefixes = textsSaid(NOT_EMPTY, /- `((?:validation|publish): \.\.\.)`:/).map(([quote = ""]) => quote);
    expect(prefixes.map((quote) => quotePattern(quote, /\.\.\./).test(`${quote.startsWith("publish") ? PUBLISH_FAILURE_PREFIX : VALIDATION_FAILURE_PREFIX}x`))).toEqual([true, true]);
    expect(prefixes.map((quote) => quote.replace("...", ""))).toEqual([VALIDATION_FAILURE_PREFIX, PUBLISH_FAILURE_PREFIX]);
    const [snapshot = ""] = firstTextsSaid(NOT_EMPTY, /no snapshot item `([^`]+)`/);
    expect(snapshotItemKey("<tenant>", "transaction:<entityId>" as SnapshotKey).pk).toBe(snapshot);
  });
});

const eventBridge = new EventBridgeClient({ region: "eu-west-1", credentials: { accessKeyId: "x", secretAccessKey: "x" } });
const eventBridgeMock = mockClient(eventBridge);
afterEach(() => eventBridgeMock.reset());

/** The contract tests' sample transaction event, its `data.object` replaced by `object`. */
const eventOf = (object: Record<string, unknown>): BridgeEvent => {
  const sample = sampleEvent(1);
  return { ...sample, detail: { ...sample.detail, data: { object } } };
};

/** What the publisher does with an event each PutEvents answers with `code`: its failure, and the calls it made. */
async function publishAnswered(code: string) {
  eventBridgeMock.reset();
  eventBridgeMock.on(PutEventsCommand).resolves({ FailedEntryCount: 1, Entries: [{ ErrorCode: code, ErrorMessage: "refused" }] });
  const publisher = new EventBridgePublisher({ client: eventBridge, eventBusName: "bus", clock: new FakeClock(), backoff: { maxAttempts: 3, random: () => 0.5 } });
  const { failed } = await publisher.publish([eventOf({ id: "t1" })]);
  return { retryable: failed[0]?.retryable === true, calls: eventBridgeMock.commandCalls(PutEventsCommand).length };
}

describe("docs/runbook.md, QuarantineNotEmpty: which refusals of EventBridge are quarantined", () => {
  const publish = NOT_EMPTY.slice(NOT_EMPTY.indexOf("- `publish: ...`"), NOT_EMPTY.indexOf("- `publish: oversized: ...`"));

  it("quarantines the codes it names as for good, and retries those it names as retryable or of the setup", async () => {
    const forGood = quotedNames(firstTextsSaid(publish, /non-retryable error code of the event such as ([^)]*)\)/)[0] ?? "");
    const retried = quotedNames(firstTextsSaid(publish, /Retryable refusals \(([^)]*)\)/)[0] ?? "");
    const setup = quotedNames(firstTextsSaid(publish, /refusals of the setup \((.*?): see \[EventsFailed\]/)[0] ?? "");
    expect([forGood.length, retried.length, setup.length]).toEqual([2, 2, 5]);
    for (const code of forGood) expect(await publishAnswered(code), code).toEqual({ retryable: false, calls: 1 });
    // "or any code not known to be permanent"
    for (const code of [...retried, "SomeNewCode"]) expect(await publishAnswered(code), code).toEqual({ retryable: true, calls: 3 });
    // A setup code's pattern (`AccessDenied*`, `*NotFound*`) as EventBridge spells such codes: not sent again, left pending.
    for (const pattern of setup) {
      const code = pattern.replace(/^\*/, "Resource").replace(/\*$/, "Exception");
      expect(await publishAnswered(code), code).toEqual({ retryable: true, calls: 1 });
    }
  });

  it("gives the entry limit and the example of an integer outside int64 as the publisher finds them", () => {
    const [kb] = firstTextsSaid(NOT_EMPTY, /too large for one (\d+) KB EventBridge entry/).map(Number);
    expect(MAX_ENTRY_BYTES + 1).toBe(kb! * 1024);
    const [path = "", value = ""] = firstTextsSaid(NOT_EMPTY, /its JSON Pointer and value, e\.g\. `(\S+) is (-?\d+)`/);
    const key = path.split("/").at(-1) ?? "";
    const text = JSON.stringify(eventOf({ id: "t1", [key]: 0 }).detail).replace(`"${key}":0`, `"${key}":${value}`);
    expect(outOfRangeIntegerIn(text, JSON.parse(text) as BridgeEvent["detail"])).toEqual({ path, text: value });
  });
});

describe("docs/runbook.md, Re-driving quarantined transactions: a record that cannot be decoded, a refused read, a local record", () => {
  it("quotes the error a re-drive fails with where its walk meets a record the store cannot decode", async () => {
    const rig = makeRig();
    await quarantinePublishFailures(rig, 1);
    const decoding = new CorruptItemError("Quarantine item QUAR#t/q cannot be decoded", "table", "QUAR#t/q");
    // eslint-disable-next-line require-yield -- the store fails at its first page
    rig.quarantine.pages = async function* () {
      throw decoding;
    };
    const error = await redriveQuarantined(rig.deps).catch((e: unknown) => e);
    const [quote = ""] = firstTextsSaid(REDRIVE, /\(`(re-drive stopped: [^`]+)`\)/);
    expect((error as Error).message).toMatch(quotePattern(quote, /\.\.\./));
  });

  it("keeps as refused a read of a qashio_id the provider answers with a 4xx other than those it names", () => {
    const [named = ""] = firstTextsSaid(REDRIVE, /\(a 4xx other than ([\d, and]+) for that read alone/);
    const others = named.split(/, | and /).map(Number);
    expect(others.length).toBe(4);
    for (let status = 400; status < 500; status += 1) {
      expect(refusedForReference(Object.assign(new Error("refused"), { status })), String(status)).toBe(!others.includes(status));
    }
  });

  it("deletes delivered records in DynamoDB's batches of the size it says", () => {
    expect(numbersSaid(REDRIVE, /DynamoDB removes them (\d+) at a time/)).toEqual([[BATCH_WRITE_LIMIT]]);
  });

  it("names the local record's file and the member holding its body as the local quarantine writes them", async () => {
    const [file = "", member = ""] = firstTextsSaid(REDRIVE, /A local record is the file `<BRIDGE_STATE_DIR>\/([^`]+)`, its body under `(\w+)`/);
    const stateDir = mkdtempSync(join(tmpdir(), "runbook-quarantine-"));
    try {
      await new FileQuarantine(stateDir).put(RECORD);
      const written = JSON.parse(readFileSync(join(stateDir, file.replace("<record id>", RECORD.id)), "utf8")) as Record<string, unknown>;
      expect(written[member]).toEqual(RECORD.raw);
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  });
});

describe("docs/runbook.md, AcknowledgeRefused: the refusal as the bridge reads and reports it", () => {
  /** The warning and summary a refusal of the second of three ids, named as the doc says the provider names it, gives. */
  async function refusedSecondOfThree() {
    const [field = ""] = firstTextsSaid(REFUSED, /The refused acknowledge names each id it refuses \(`([^`]+)`\)/);
    const refusal = Object.assign(new Error("refused"), { name: "InvalidRequestError", status: 400, errors: [{ field: field.replace("<i>", "1"), code: "NOT_FOUND" }] });
    const sent: string[][] = [];
    const lines: string[] = [];
    const report = emptyReport("transactions");
    const acknowledger = new TransactionAcknowledger({
      logger: streamLogger({ write: (text: string) => void lines.push(text) } as unknown as OutputStream, "info"),
      metrics: new RecordingMetrics(),
      report,
      acknowledgeTransactions: (_step, ids) => (sent.push(ids), sent.length === 1 ? Promise.reject(refusal) : Promise.resolve(undefined)),
      wait: () => Promise.resolve(),
      pageSize: () => 10,
    });
    await acknowledger.acknowledge(["t0", "t1", "t2"], undefined);
    return { sent, lines, report };
  }

  it("names the refused ids by the field it quotes, and sends the page's other ids again", async () => {
    const { sent, report } = await refusedSecondOfThree();
    expect(sent).toEqual([["t0", "t1", "t2"], ["t0", "t2"]]);
    expect(report).toMatchObject({ acknowledged: 2, acknowledgeRefused: 1 });
  });

  it("quotes the local warning and summary as local mode writes them", async () => {
    const { lines, report } = await refusedSecondOfThree();
    // Read as written: the level is padded with two blanks.
    const [warning = ""] = firstTextsSaid(runbookSection("AcknowledgeRefused"), /the warning goes to stderr\s+\(`([^`]+)`\)/);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(quotePattern(warning, /\.\.\./));
    const [shown = ""] = firstTextsSaid(REFUSED, /summary line shows `N ([^`]+)`/);
    const summary = formatCycleSummary({ cycle: 1, published: {}, acknowledged: report.acknowledged, acknowledgeRefused: report.acknowledgeRefused, quarantined: 0, durationMs: 1 });
    expect(summary).toContain(`${report.acknowledgeRefused} ${shown}`);
  });
});

describe("docs/runbook.md: the alarms' metrics, as the tenant stack alarms on them", () => {
  interface Alarm {
    readonly AlarmName: string;
    readonly MetricName?: string;
    readonly Statistic?: string;
    readonly Metrics?: readonly { readonly Label?: string; readonly Expression?: string }[];
  }
  /** The example globex stack's alarm named `QashioBridge-globex-<suffix>`. */
  const alarm = (suffix: string): Alarm | undefined =>
    Object.values(exampleStacks().globex.template.findResources("AWS::CloudWatch::Alarm"))
      .map((resource) => (resource as { Properties: Alarm }).Properties)
      .find((a) => a.AlarmName === `QashioBridge-globex-${suffix}`);

  it("counts each alarm of these sections on the metric, and with the statistic, the section names", () => {
    const [gauge = ""] = firstTextsSaid(NOT_EMPTY, /\(gauge `(\w+)`, the number of unexpired items/);
    expect(alarm("QuarantineNotEmpty")?.Metrics?.[0]).toMatchObject({ Label: gauge, Expression: expect.stringContaining(`MAX(${gauge})`) });
    const [quarantined = ""] = firstTextsSaid(GROWING, /\(`(\w+)`, records quarantined per period, summed/);
    expect(alarm("QuarantineGrowing")).toMatchObject({ MetricName: quarantined, Statistic: "Sum" });
    const [refused = ""] = firstTextsSaid(REFUSED, /\(`(\w+)`, ids refused, summed/);
    expect(alarm("AcknowledgeRefused")).toMatchObject({ MetricName: refused, Statistic: "Sum" });
    // The re-drive's late changes raise SyncLag through the metric it names; its long ticks, the pollers' queue alarm.
    const [lag = ""] = firstTextsSaid(REDRIVE, /count as such in `(\w+)`, which may raise \[SyncLag\]/);
    expect(alarm("SyncLag")).toMatchObject({ MetricName: lag });
    const [deadLetters = ""] = firstTextsSaid(REDRIVE, /may raise \[([\w-]+)\]\(#dead-letters\) once/);
    expect(alarm(deadLetters)).toBeDefined();
  });
});

describe("docs/runbook.md, Re-driving quarantined transactions: why a record is kept", () => {
  it("quotes only whys a re-drive keeps a record for", () => {
    const tally = REDRIVE.slice(REDRIVE.indexOf("counts every kept record by why (`keptByWhy`)"), REDRIVE.indexOf("These last three"));
    const whys = [
      // Phrases, not names; the log line of a refused read (`...; record kept`) aside.
      ...quotedNames(tally).filter((name) => name.includes(" ") && !name.includes(";")),
      ...textsSaid(REDRIVE, /"((?:not|its) [^"]+)"/).map(([why = ""]) => why),
    ];
    expect(new Set(whys).size).toBeGreaterThanOrEqual(9);
    // Each is one of the `why`s of KeptRecord (shared/bridge/redrive.ts), spelled as the code has it.
    const source = readFileSync(join(ROOT, "shared/bridge/redrive.ts"), "utf8");
    for (const why of whys) expect(source, why).toContain(`"${why}"`);
  });
});

describe("docs/runbook.md, AcknowledgeRefused and Re-driving: what a cycle counts and when an invocation stops", () => {
  it("counts each refused acknowledge in the provider errors' status class it says", async () => {
    const rig = makeRig();
    for (let i = 0; i < 3; i++) rig.provider.addTransaction();
    const stuck = rig.provider.addTransaction().id;
    rig.provider.beforeCall = (call) => {
      if (call.op === "acknowledgeTransactions" && call.ids.includes(stuck)) throw refusal(call.ids, [stuck]);
    };
    const report = await pollTransactions(rig.deps);
    expect(report).toMatchObject({ acknowledged: 3, acknowledgeRefused: 1 });
    const [statusClass = ""] = firstTextsSaid(REFUSED, /Each refused call also counts as `(\dxx)` in `Provider errors by status class`/);
    expect(rig.metrics.sum("ProviderErrors")).toBe(1);
    expect(rig.metrics.sum("ProviderErrors", { status_class: statusClass })).toBe(1);
  });

  it("stops a re-drive at the deadline it says, whether the stack's budget or the remaining time sets it", () => {
    const [margin = 0] = numbersSaid(REDRIVE, /An invocation stops at its deadline \(the function timeout less (\d+) s\)/).map(([s]) => s);
    const timeout = Duration.minutes(5);
    expect(cycleBudgetMs(timeout)).toBe(timeout.toMilliseconds() - margin * 1000);
    expect(cycleDeadline(0, timeout.toMilliseconds())).toBe(timeout.toMilliseconds() - margin * 1000);
    expect(cycleDeadline(0, timeout.toMilliseconds(), cycleBudgetMs(timeout))).toBe(timeout.toMilliseconds() - margin * 1000);
  });
});
