/**
 * docs/runbook.md's EventsFailed and CardDetailsUnread held to the code: the alarms' windows, the numbers, log lines
 * and limits they give an operator, read from the doc and compared with what the code exports or does.
 */
import { describe, expect, it } from "vitest";
import * as z from "zod";
import { cycleAlarmWindow, MIN_CYCLE_ALARM_PERIOD_MINUTES } from "../infra/constructs/alarm-window.js";
import { tenantSchema } from "../infra/tenant-config.js";
import { docSection, docText, firstNumbersSaid, numbersSaid } from "./doc-text.js";

const RUNBOOK = docText("docs/runbook.md");
const FAILED = docSection(RUNBOOK, "EventsFailed");
const UNREAD = docSection(RUNBOOK, "CardDetailsUnread");

/** Every schedule, in minutes, the tenants file accepts for `field` of `schedules` (its JSON Schema's bounds). */
function acceptedMinutes(field: "transactionsEveryMinutes" | "cardsEveryMinutes"): number[] {
  const schema = z.toJSONSchema(tenantSchema, { io: "input" }) as unknown as {
    properties: { schedules: { properties: Record<string, { minimum: number; maximum: number }> } };
  };
  const { minimum, maximum } = schema.properties.schedules.properties[field] ?? { minimum: 0, maximum: -1 };
  return Array.from({ length: maximum - minimum + 1 }, (_, i) => minimum + i);
}

/** "N of M" for each window `cycleAlarmWindow` gives one of `schedules`. */
const windowsOf = (schedules: readonly number[]): Set<string> =>
  new Set(schedules.map((minutes) => cycleAlarmWindow(minutes)).map((w) => `${w.datapointsToAlarm} of ${w.evaluationPeriods}`));

/** The windows `section` names: "2 of the last 3 periods", "fewer than 2 of its last 3 periods", "a 1-of-1 window". */
const windowsSaid = (section: string): string[] => [
  ...numbersSaid(section, /(\d+) of (?:the|its) last (\d+) periods/).map(([toAlarm, periods]) => `${toAlarm} of ${periods}`),
  ...[...section.matchAll(/(\d+)-of-(\d+) window/g)].map((m) => `${m[1]} of ${m[2]}`),
];

describe("docs/runbook.md, EventsFailed and CardDetailsUnread: the alarms' windows", () => {
  it("EventsFailed names only windows the slower poller's accepted schedules give its alarm", () => {
    // The alarm's period is the slower of the two schedules: any schedule either accepts can be it.
    const schedules = [...new Set([...acceptedMinutes("transactionsEveryMinutes"), ...acceptedMinutes("cardsEveryMinutes")])];
    expect(schedules.length).toBeGreaterThan(100);
    const said = windowsSaid(FAILED);
    expect(said.length).toBeGreaterThanOrEqual(2);
    for (const window of said) expect(windowsOf(schedules), window).toContain(window);
  });

  it("CardDetailsUnread names only windows the card poller's accepted schedules give its alarm", () => {
    const said = windowsSaid(UNREAD);
    expect(said.length).toBeGreaterThanOrEqual(1);
    for (const window of said) expect(windowsOf(acceptedMinutes("cardsEveryMinutes")), window).toContain(window);
  });

  it("gives the shortest period, and a daily schedule's periods, as the window has them", () => {
    expect(firstNumbersSaid(FAILED, /A period is the slower poller's schedule \(at least (\d+) minutes\)/)).toEqual([MIN_CYCLE_ALARM_PERIOD_MINUTES]);
    expect(firstNumbersSaid(UNREAD, /a period at least (\d+) minutes/)).toEqual([MIN_CYCLE_ALARM_PERIOD_MINUTES]);
    expect(cycleAlarmWindow(1).period.toMinutes()).toBe(MIN_CYCLE_ALARM_PERIOD_MINUTES);
    const [periods] = firstNumbersSaid(FAILED, /\((\d+) one-day periods for a daily schedule\)/);
    const daily = cycleAlarmWindow(Math.max(...acceptedMinutes("cardsEveryMinutes")));
    expect(daily.period.toMinutes()).toBe(24 * 60);
    expect(daily.evaluationPeriods).toBe(periods);
  });
});
