/**
 * Durations as people write them (`500ms`, `30s`, `5m`, `1h`, `1m30s`), for the options and the settings: read into
 * milliseconds, their problems worded once for both, and the range Node's timers take.
 */
import { UsageError } from "./errors.js";

/** Longest duration accepted: Node timers overflow above 2^31-1 ms (about 24.8 days) and then fire at once. */
export const MAX_DURATION_MS = 2 ** 31 - 1;

/** Milliseconds of each unit, largest first: the order a duration writes them in. */
const UNIT_MS: Readonly<Record<string, number>> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 };
const UNITS = Object.keys(UNIT_MS);

/** The units read, as a message names them. */
const UNIT_LIST = "ms, s, m or h";

/** Numbers each followed by a word (`30d`, `1h30x`): a duration written with units, known or not. */
const NUMBERS_WITH_WORDS = /^(?:\d+(?:\.\d+)?[A-Za-z]+)+$/;

/** A number without a unit. */
const BARE_NUMBER = /^\d+(?:\.\d+)?$/;

/** Milliseconds of a duration's text, or what is wrong with its form, worded for a prefix that names the value or not. */
export type DurationReading = { readonly ms: number } | { readonly problem: string };

/**
 * Reads `magnitude` (a duration's text without its sign). Each unit may come once, largest first (`1h30m`): `1h1h`
 * or `30s1h` is more likely a slip than a way to write 2h or 1h30s, and summing it would hide the slip. A sum past
 * what a number holds is Infinity: a duration too long, which the range check names, not a wrong form.
 */
function readMagnitude(magnitude: string, echo: boolean): DurationReading {
  if (/^0+(?:\.0+)?$/.test(magnitude)) return { ms: 0 };
  // A number alone is no duration: 30 could mean seconds or minutes.
  if (BARE_NUMBER.test(magnitude)) {
    return { problem: `no unit; ${echo ? `write e.g. ${magnitude}s or ${magnitude}m` : "put s (seconds) or m (minutes) after the number"}` };
  }
  const part = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
  let total = 0;
  let consumed = 0;
  const seen: string[] = [];
  for (let match = part.exec(magnitude); match; match = part.exec(magnitude)) {
    const unit = match[2] ?? "";
    const previous = seen.at(-1);
    if (previous !== undefined && UNITS.indexOf(unit) <= UNITS.indexOf(previous)) {
      const slip = seen.includes(unit) ? `${unit} is given twice` : `${unit} comes after ${previous}`;
      return { problem: `${slip}; give each unit once, largest first (e.g. 1h30m)` };
    }
    seen.push(unit);
    total += Number(match[1]) * (UNIT_MS[unit] ?? Number.NaN);
    consumed = part.lastIndex;
  }
  if (magnitude === "" || consumed !== magnitude.length) {
    // `30d`, `5min`: a number with a unit, only not one read here; "use a number with a unit" would not say so.
    const otherUnit = NUMBERS_WITH_WORDS.test(magnitude);
    return { problem: `${otherUnit ? `a unit other than ${UNIT_LIST}; ` : "use a number with a unit, "}e.g. 30s, 5m, 1h, 1m30s` };
  }
  return { ms: Math.round(total) };
}

/**
 * Reads a duration such as `500ms`, `30s`, `5m`, `1h` or `1m30s` into milliseconds, or says what is wrong with its
 * form: the one wording of a duration's problem for the options (which quote the value before it) and the settings
 * (which never echo a value). Only `echo` tells them apart: with it, a number without a unit is written back with
 * units ("write e.g. 300s or 300m"). A bare `0` is one (zero in any unit), and a leading minus gives a negative
 * duration, with a unit or without (`-1` is negative in any unit: read so, in milliseconds): both are durations that
 * are too short rather than no durations, so the range check (durationRangeProblem) names the minimum instead of the
 * format. Likewise a sum too large for a number comes back as
 * Infinity (-Infinity with the minus), for the range check to report as too long. Each unit comes once, largest
 * first: `1h1h` and `30s1h` are refused.
 *
 * @example
 * readDuration("1m30s", { echo: false }); // { ms: 90000 }
 * readDuration("300", { echo: false }); // { problem: "no unit; put s (seconds) or m (minutes) after the number" }
 */
export function readDuration(text: string, { echo }: { readonly echo: boolean }): DurationReading {
  const trimmed = text.trim();
  const negative = trimmed.startsWith("-");
  const magnitude = negative ? trimmed.slice(1) : trimmed;
  // A negative number without a unit is negative in whichever unit was meant: too short, as -5s is, not unitless.
  if (negative && BARE_NUMBER.test(magnitude)) return { ms: -Number(magnitude) };
  const reading = readMagnitude(magnitude, echo);
  return negative && "ms" in reading ? { ms: -reading.ms } : reading;
}

/**
 * {@link readDuration} for a value the message may quote: its milliseconds, or a {@link UsageError} naming it.
 *
 * @example
 * parseDuration("5m"); // 300000
 * parseDuration("-5s"); // -5000
 * parseDuration("1h1h"); // throws 'invalid duration "1h1h": h is given twice; ...'
 */
export function parseDuration(text: string): number {
  const reading = readDuration(text, { echo: true });
  if ("problem" in reading) throw new UsageError(`invalid duration "${text}": ${reading.problem}`);
  return reading.ms;
}

/**
 * `ms` as a user would write it, in the form {@link readDuration} reads: each unit once, largest first, none rounded.
 *
 * @example
 * formatDuration(3_600_000); // "1h"
 * formatDuration(90_000); // "1m30s"
 * formatDuration(1_500); // "1s500ms"
 */
export function formatDuration(ms: number): string {
  let rest = ms;
  let text = "";
  for (const unit of UNITS) {
    const size = UNIT_MS[unit] ?? 1;
    const count = unit === "ms" ? rest : Math.floor(rest / size);
    if (count > 0) text += `${count}${unit}`;
    rest -= count * size;
  }
  return text === "" ? "0s" : text;
}

/**
 * What is wrong with a duration of `ms` for a setting whose minimum is `minMs`, or undefined when it is in range.
 * Worded without the value, so a flag or a setting name can prefix it.
 *
 * @example
 * durationRangeProblem(0, 1_000); // "must be at least 1s"
 * durationRangeProblem(2_160_000_000, 1_000); // "must be at most 2147483647 ms (about 24.8 days)"
 */
export function durationRangeProblem(ms: number, minMs: number): string | undefined {
  if (ms < minMs) return minMs === 0 ? "must not be negative" : `must be at least ${formatDuration(minMs)}`;
  if (ms > MAX_DURATION_MS) return `must be at most ${MAX_DURATION_MS} ms (about 24.8 days)`;
  return undefined;
}
