/**
 * docs/runbook.md's EventsFailed and CardDetailsUnread held to the code: the alarms' windows, the numbers, log lines
 * and limits they give an operator, read from the doc and compared with what the code exports or does.
 */
import { describe, expect, it } from "vitest";
import { cycleAlarmWindow, MIN_CYCLE_ALARM_PERIOD_MINUTES } from "../infra/constructs/alarm-window.js";
import { pollerTimeout } from "../infra/tenant-stack.js";
import { CardDetailReads } from "../shared/bridge/card-details.js";
import { pollCards } from "../shared/bridge/cards.js";
import { PUBLISHER_UNAVAILABLE_BATCHES, PUBLISHER_UNAVAILABLE_EVENTS } from "../shared/bridge/cycle.js";
import { DEFAULT_PAGE_SIZE } from "../shared/bridge/deps.js";
import { SINGLE_READ_CONCURRENCY } from "../shared/bridge/provider.js";
import { pollTransactions } from "../shared/bridge/transactions.js";
import { ERP_CARD_DETAIL_KEYS } from "../shared/qashio/schemas/erp-card.js";
import { makeRig, RecordingLogger } from "./bridge/fakes.js";
import { acceptedScheduleMinutes } from "./infra/helpers.js";
import { PROVIDER_SPEC, specSection } from "./provider-spec.js";
import { docSection, docText, firstNumbersSaid, firstTextsSaid } from "./doc-text.js";
import { alarmWindowsSaid, cycleAlarmWindowsOf, runbookQueryFilter } from "./runbook-section.js";

const RUNBOOK = docText("docs/runbook.md");
const FAILED = docSection(RUNBOOK, "EventsFailed");
const UNREAD = docSection(RUNBOOK, "CardDetailsUnread");

describe("docs/runbook.md, EventsFailed and CardDetailsUnread: the alarms' windows", () => {
  it("EventsFailed names only windows the slower poller's accepted schedules give its alarm", () => {
    // The alarm's period is the slower of the two schedules: any schedule either accepts can be it.
    const schedules = [...new Set([...acceptedScheduleMinutes("transactionsEveryMinutes"), ...acceptedScheduleMinutes("cardsEveryMinutes")])];
    expect(schedules.length).toBeGreaterThan(100);
    const said = alarmWindowsSaid(FAILED);
    expect(said.length).toBeGreaterThanOrEqual(2);
    for (const window of said) expect(cycleAlarmWindowsOf(schedules), window).toContain(window);
  });

  it("CardDetailsUnread names only windows the card poller's accepted schedules give its alarm", () => {
    const said = alarmWindowsSaid(UNREAD);
    expect(said.length).toBeGreaterThanOrEqual(1);
    for (const window of said) expect(cycleAlarmWindowsOf(acceptedScheduleMinutes("cardsEveryMinutes")), window).toContain(window);
  });

  it("gives the shortest period, and a daily schedule's periods, as the window has them", () => {
    expect(firstNumbersSaid(FAILED, /A period is the slower poller's schedule \(at least (\d+) minutes\)/)).toEqual([MIN_CYCLE_ALARM_PERIOD_MINUTES]);
    expect(firstNumbersSaid(UNREAD, /a period at least (\d+) minutes/)).toEqual([MIN_CYCLE_ALARM_PERIOD_MINUTES]);
    expect(cycleAlarmWindow(1).period.toMinutes()).toBe(MIN_CYCLE_ALARM_PERIOD_MINUTES);
    const [periods] = firstNumbersSaid(FAILED, /\((\d+) one-day periods for a daily schedule\)/);
    const daily = cycleAlarmWindow(Math.max(...acceptedScheduleMinutes("cardsEveryMinutes")));
    expect(daily.period.toMinutes()).toBe(24 * 60);
    expect(daily.evaluationPeriods).toBe(periods);
  });
});



describe("docs/runbook.md, EventsFailed: the lines and outcome a cycle shows refused events by", () => {
  it("quotes the two lines its query finds, each with up to the number of distinct reasons it says", async () => {
    const rig = makeRig();
    for (let i = 0; i < 14; i++) rig.provider.addTransaction();
    // Each event refused with a reason of its own: seven for good (quarantined), seven for now.
    let n = 0;
    rig.publisher.reject = () => {
      n += 1;
      return n % 2 === 0 ? `ValidationException: refused ${n}` : { reason: `ThrottlingException: slow down ${n}`, retryable: true };
    };
    // One page, so one batch of each kind.
    await pollTransactions(rig.deps, { pageSize: 20 });
    const [forNow = "", forGood = ""] = firstTextsSaid(FAILED, /`([^`]+)` is a refusal for now, `([^`]+)` one for good/);
    const [most] = firstNumbersSaid(FAILED, /the line's `reasons` holds up to (\w+) distinct/);
    const lines = rig.logger.aboveDebug().filter((line) => line.message !== "record quarantined");
    expect(lines.map((line) => [line.level, line.message]).sort()).toEqual([
      ["warn", forNow],
      ["warn", forGood],
    ].sort());
    const filter = runbookQueryFilter("EventsFailed");
    for (const line of lines) {
      expect(line.message).toMatch(filter);
      expect((line.attributes as { reasons: string[] }).reasons).toHaveLength(most ?? 0);
    }
    // The query's fields the lines carry (the others are Logs Insights' own).
    const fields = (firstTextsSaid(FAILED, /`fields ([^|`]+) \|/)[0] ?? "").split(",").map((f) => f.trim()).filter((f) => !f.startsWith("@"));
    expect(fields).not.toEqual([]);
    for (const line of lines) for (const field of fields) expect(Object.keys({ message: line.message, ...line.attributes }), field).toContain(field);
  });

  it("stops a cycle whose bus took none of the batches it says as the outcome and line it names, at warn", async () => {
    const [batches, events] = firstNumbersSaid(FAILED, /the bus took none of (\w+) batches in a row \((\d+) events or more\)/);
    expect([batches, events]).toEqual([PUBLISHER_UNAVAILABLE_BATCHES, PUBLISHER_UNAVAILABLE_EVENTS]);
    const [outcome = "", transactionsLine = "", cardsLine = ""] = firstTextsSaid(FAILED, /outcome `(\w+)` \(logged at warn, `([^`]+)` or `([^`]+)`\)/);
    const rig = makeRig();
    for (let i = 0; i < 3 * PUBLISHER_UNAVAILABLE_EVENTS; i++) rig.provider.addTransaction();
    rig.publisher.reject = () => ({ reason: "ThrottlingException: Rate exceeded", retryable: true });
    expect(await pollTransactions(rig.deps, { pageSize: 10 })).toMatchObject({ outcome });
    expect(rig.logger.lines).toContainEqual(expect.objectContaining({ level: "warn", message: transactionsLine }));
    expect(cardsLine).toBe(transactionsLine.replace(/^transactions /, "cards "));
  });
});

describe("docs/runbook.md, CardDetailsUnread: the reads, their numbers and lines", () => {
  it("counts the configuration objects, the reads at once and a page as the card reads do", () => {
    expect(firstNumbersSaid(UNREAD, /single view \(the (\w+) configuration objects/)).toEqual([ERP_CARD_DETAIL_KEYS.length]);
    // "When the first four reads", "four at a time", "(as many as are read at once, four)".
    const atOnce = [
      ...firstNumbersSaid(UNREAD, /When the first (\w+) reads of a page all fail/),
      ...firstNumbersSaid(UNREAD, /\(up to \d+ cards, (\w+) at a time\)/),
      ...firstNumbersSaid(UNREAD, /as many as are read at once, (\w+)\)/),
    ];
    expect(atOnce).toEqual([SINGLE_READ_CONCURRENCY, SINGLE_READ_CONCURRENCY, SINGLE_READ_CONCURRENCY]);
    expect(firstNumbersSaid(UNREAD, /\(up to (\d+) cards/)).toEqual([DEFAULT_PAGE_SIZE]);
  });

  it("gives the longest poller timeout, and the schedule from which it applies", () => {
    const [from, longest] = firstNumbersSaid(UNREAD, /\((\d+) minutes or more gives the longest, (\d+) s\)/);
    const schedules = acceptedScheduleMinutes("cardsEveryMinutes");
    const timeouts = schedules.map((minutes) => pollerTimeout(minutes).toSeconds());
    expect(longest).toBe(Math.max(...timeouts));
    expect(from).toBe(schedules[timeouts.indexOf(Math.max(...timeouts))]);
  });

  it("quotes the line of a walk that stopped reading details, with the field it names, and the query finds every line", async () => {
    const rig = makeRig({}, { cardDetails: true });
    for (let i = 0; i < 2 * SINGLE_READ_CONCURRENCY + 1; i++) rig.provider.addCard();
    rig.provider.beforeCall = (call) => {
      if (call.op === "readErpCard") throw Object.assign(new Error("503"), { name: "ProviderError", status: 503 });
    };
    await pollCards(rig.deps, { pageSize: 10 });
    const [stopped = "", field = ""] = firstTextsSaid(UNREAD, /the line "([^"]+)" \(`(\w+)`: how many\)/);
    const lines = rig.logger.aboveDebug();
    expect(lines).toContainEqual(expect.objectContaining({ level: "warn", message: stopped, attributes: { [field]: SINGLE_READ_CONCURRENCY } }));
    // Only the first reads tried are named: one line each, and none for the cards after them.
    expect(lines.filter((line) => (line.attributes as { cardId?: string } | undefined)?.cardId !== undefined)).toHaveLength(SINGLE_READ_CONCURRENCY);
    for (const line of lines) expect(line.message).toMatch(runbookQueryFilter("CardDetailsUnread"));
    // The query's fields: each is an attribute of some line the walk logs.
    const fields = (firstTextsSaid(UNREAD, /`fields ([^|`]+) \|/)[0] ?? "").split(",").map((f) => f.trim()).filter((f) => !f.startsWith("@"));
    expect(fields.length).toBeGreaterThan(2);
    const logged = new Set(lines.flatMap((line) => Object.keys(line.attributes ?? {})));
    // `unstarted` is the deadline's line (test/functions/invocation-end.test.ts), which this walk does not meet.
    for (const name of fields.filter((f) => f !== "unstarted")) expect(logged, name).toContain(name);
  });

  it("quotes the line of a first page whose reads the deadline left unstarted: no card id, the count in the field the query reads", async () => {
    const [quote = "", field = ""] = firstTextsSaid(UNREAD, /Lines "([^"]+)" \(no card id; `(\w+)` says how many\)/);
    const logger = new RecordingLogger();
    // The deadline passes once the first card's read has started: the page's other cards are not read.
    let checks = 0;
    const reads = new CardDetailReads({
      logger,
      random: () => 0,
      validateCard: (raw) => ({ success: true, data: raw as Record<string, unknown> }),
      pastDeadline: () => (checks += 1) > 1,
      stopRequested: () => false,
      outOfTime: () => false,
      readCard: (_step, id) => Promise.resolve({ data: [{ id, status: "Active" }] }),
      readSnapshots: () => Promise.resolve(new Map()),
    });
    await reads.read(["c1", "c2", "c3"].map((id) => ({ raw: { id, status: "Active" } })), true);
    const line = logger.lines.find((l) => l.message.startsWith(quote));
    expect(line).toMatchObject({ level: "warn", attributes: { [field]: 2 } });
    expect(Object.keys(line?.attributes ?? {})).toEqual([field]);
    expect(firstTextsSaid(UNREAD, /`fields ([^|`]+) \|/)[0]).toContain(field);
  });
});

describe.skipIf(PROVIDER_SPEC === "")("docs/runbook.md, CardDetailsUnread: the provider's spec it cites", () => {
  it("cites the rule that lists the scopes, and the spec names no operation's scope", () => {
    const [section = "", rule = "", scope = ""] = firstTextsSaid(UNREAD, /\(spec (\d+)\.(\d+) lists scopes such as `([^`]+)` but not which operation needs which\)/);
    expect(specSection(`${section} rule ${rule}`)).toMatch(new RegExp(`^Scope strings seen: .*\`${scope}\``));
    expect(specSection(section)).toMatch(/which operation needs which scope: not shown/);
  });
});
