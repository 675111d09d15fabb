/** docs/runbook.md by section, for tests that hold its text to what the code does. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { cycleAlarmWindow } from "../infra/constructs/alarm-window.js";
import { firstTextsSaid, numbersSaid } from "./doc-text.js";

const RUNBOOK = readFileSync(join(import.meta.dirname, "../docs/runbook.md"), "utf8");

/**
 * The runbook section under `## <title>`, up to the next section.
 *
 * @example
 * runbookSection("Heartbeat"); // "\n## Heartbeat\n\nAlarms `Heartbeat` ..."
 */
export function runbookSection(title: string): string {
  const start = RUNBOOK.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`runbook has no section ${title}`);
  const end = RUNBOOK.indexOf("\n## ", start + 1);
  return RUNBOOK.slice(start, end < 0 ? undefined : end);
}

/** The runbook's opening, before its first section. */
export function runbookIntro(): string {
  return RUNBOOK.slice(0, RUNBOOK.indexOf("\n## "));
}

/**
 * What the runbook's section `title` says where `pattern` matches (its first group, line breaks read as spaces): a
 * quote of a log line, a name; fails when it matches nowhere.
 *
 * @example
 * runbookSaid("TokenSecretWriteFailed", /it logs "([^"]+)"/); // "the shared access-token item holds ..."
 */
export function runbookSaid(title: string, pattern: RegExp): string {
  return firstTextsSaid(runbookSection(title).replace(/\s+/g, " "), pattern)[0] ?? "";
}

/**
 * The alarm windows a runbook section names, as "N of M": "2 of the last 3 periods", "fewer than 2 of its last 3
 * periods", "a 1-of-1 window".
 */
export function alarmWindowsSaid(section: string): string[] {
  return [
    ...numbersSaid(section, /(\d+) of (?:the|its) last (\d+) periods/).map(([toAlarm, periods]) => `${toAlarm} of ${periods}`),
    ...[...section.matchAll(/(\d+)-of-(\d+) window/g)].map((m) => `${m[1]} of ${m[2]}`),
  ];
}

/** "N of M" for each window `cycleAlarmWindow` gives one of `schedules` (in minutes). */
export function cycleAlarmWindowsOf(schedules: readonly number[]): Set<string> {
  return new Set(schedules.map((minutes) => cycleAlarmWindow(minutes)).map((w) => `${w.datapointsToAlarm} of ${w.evaluationPeriods}`));
}

/** The `filter message like /.../` of the Logs Insights query the runbook's section `title` gives, as a RegExp. */
export function runbookQueryFilter(title: string): RegExp {
  const match = /filter message like \/([^/]+)\//.exec(runbookSection(title));
  if (match?.[1] === undefined) throw new Error(`section ${title} has no Logs Insights message filter`);
  return new RegExp(match[1]);
}
