/**
 * docs/runbook.md's QuarantineNotEmpty, QuarantineGrowing, Re-driving quarantined transactions and AcknowledgeRefused
 * held to the code: the windows, numbers, names, commands and messages they give an operator, read from the doc and
 * compared with what the code does (the behaviour tests count in the code's constants).
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { cycleAlarmWindow, MIN_CYCLE_ALARM_PERIOD_MINUTES } from "../infra/constructs/alarm-window.js";
import { parseTenantConfig } from "../infra/tenant-config.js";
import { docSection, docText, firstTextsSaid, numbersSaid, textsSaid } from "./doc-text.js";
import { EXAMPLE_TENANTS_FILE } from "./infra/helpers.js";
import { PROVIDER_SPEC, specSection } from "./provider-spec.js";

const RUNBOOK = docText("docs/runbook.md");
const GROWING = docSection(RUNBOOK, "QuarantineGrowing");
const REFUSED = docSection(RUNBOOK, "AcknowledgeRefused");

/** Every transactions schedule, in minutes, the tenants file accepts up to two days (its bound is a day). */
function acceptedSchedules(): number[] {
  const [example] = (JSON.parse(readFileSync(EXAMPLE_TENANTS_FILE, "utf8")) as { tenants: Record<string, object>[] }).tenants;
  const accepts = (minutes: number) => {
    try {
      // The sync lag threshold must exceed the schedule: set above each, so only the schedule's own bounds refuse it.
      const alarms = { ...example?.["alarms"], syncLagThresholdSeconds: minutes * 120 };
      parseTenantConfig({ ...example, schedules: { ...example?.["schedules"], transactionsEveryMinutes: minutes }, alarms });
      return true;
    } catch {
      return false;
    }
  };
  return Array.from({ length: 2 * 1440 }, (_, i) => i + 1).filter(accepts);
}

describe("docs/runbook.md, AcknowledgeRefused: the alarm's window", () => {
  it("names only windows a transactions schedule the tenants file accepts gives the alarm", () => {
    const schedules = acceptedSchedules();
    expect(schedules.length).toBeGreaterThan(100);
    const windows = new Set(schedules.map((minutes) => cycleAlarmWindow(minutes)).map((w) => `${w.datapointsToAlarm} of ${w.evaluationPeriods}`));
    // "in 2 of the last 3 periods", "fewer than 2 of its last 3 periods", "with an N-of-M window".
    const said = [
      ...numbersSaid(REFUSED, /(\d+) of (?:the|its) last (\d+) periods/),
      ...[...REFUSED.matchAll(/(\d+)-of-(\d+) window/g)].map((m) => [Number(m[1]), Number(m[2])]),
    ];
    expect(said.length).toBeGreaterThanOrEqual(2);
    for (const [toAlarm, periods] of said) expect(windows, `${toAlarm} of ${periods}`).toContain(`${toAlarm} of ${periods}`);
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
