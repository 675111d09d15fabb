/**
 * Times and versions of what the bridge stores and publishes: provider timestamps read the same on every host, with
 * placeholders left out; snapshot versions that move forward when the clock does not; `subject.sequence`; and the wait
 * into a later second before a run hands over. So event ids, `occurred_at`, SyncLagSeconds and the order consumers
 * see do not depend on the machine the bridge runs on or on its clock.
 */
import type { Snapshot } from "./ports.js";

/** 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z: the times whose ISO form has a four-digit year. */
const FOUR_DIGIT_YEARS_MS = { first: -62_167_219_200_000, last: 253_402_300_799_999 } as const;

/** An ISO date-time without an offset (`2025-01-15T08:30:00`, or with a space for the `T`): date and time apart. */
const DATE_TIME_WITHOUT_OFFSET = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)$/;

/** An ISO date, or date-time with an offset (`Z`, `+04:00`, `+0400`, `+04`): forms read the same in every zone. */
const ISO_DATE_OR_ZONED_TIME = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}(?::?\d{2})?))?$/i;

/**
 * An offset of whole hours written without its minutes (`08:30:00+04`, ISO 8601; PostgreSQL's timestamptz text), which
 * Date.parse refuses: given its `:00` before the parse.
 */
const HOURS_ONLY_OFFSET = /(:\d{2}(?:\.\d+)?[+-]\d{2})$/;

/**
 * A leap second's `:60` (and its fraction) after the hour and minute: read as the last millisecond of that minute, as
 * epoch time has no room for it (so it stays before the next minute, after every earlier time).
 */
const LEAP_SECOND = /([T ]\d{2}:\d{2}):60(?:\.\d+)?/i;

/**
 * Milliseconds of an ISO time, or undefined when absent, not ISO 8601, or outside years 0000-9999. Date.parse also
 * reads loose forms (`"99999"` is the year 99999), whose ISO form (`+099999-…`) is no RFC 3339 date-time: such a
 * provider timestamp must not become `occurred_at`, which the event schemas declare a date-time (docs/events/*.json).
 * A day its month lacks (`2025-02-30`) is no time. An offset of hours only (`+04`) is read as `+04:00`. A leap second
 * (`23:59:60`) reads as the last millisecond of its minute. A date-time without an offset is read as UTC, and other
 * forms (`2025/01/15 08:30`, `Jan 15 2025`) not at
 * all: Date.parse reads those in the host's time zone, which would move `occurred_at` and the lag with the machine the
 * bridge runs on (the spec names no zone for its ISO 8601 timestamps), and a re-sent event's detail with them.
 */
export function parseTime(value: unknown): number | undefined {
  if (typeof value !== "string" || value === "") return undefined;
  const local = DATE_TIME_WITHOUT_OFFSET.exec(value);
  if (!local && !ISO_DATE_OR_ZONED_TIME.test(value)) return undefined;
  // Date.parse moves a day the month lacks into the next month (30 February is 2 March): no such date is a time.
  const day = Number(value.slice(8, 10));
  if (day > 28 && day > daysInMonth(Number(value.slice(0, 4)), Number(value.slice(5, 7)))) return undefined;
  const text = local ? `${local[1]}T${local[2]}Z` : value.replace(HOURS_ONLY_OFFSET, "$1:00");
  // Date.parse refuses a leap second (RFC 3339 allows `23:59:60`), which then counted as no time at all.
  const ms = Date.parse(text.includes(":60") ? text.replace(LEAP_SECOND, "$1:59.999") : text);
  return ms >= FOUR_DIGIT_YEARS_MS.first && ms <= FOUR_DIGIT_YEARS_MS.last ? ms : undefined;
}

/** Days of `month` (1-12) in `year` of the proleptic Gregorian calendar, as ISO 8601 counts them. */
function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** Provider times before 2000 or in year 9999 are placeholders (0001-01-01, 1900-01-01, the Unix epoch, 9999-12-31). */
const PLAUSIBLE_CHANGE_MS = { first: Date.UTC(2000, 0, 1), end: Date.UTC(9999, 0, 1) } as const;

/**
 * Milliseconds of a provider timestamp that says when something changed, or undefined when {@link parseTime} gives
 * none or it is a placeholder: an unset date sent as `0001-01-01` made `occurred_at` year 1 and SyncLagSeconds about
 * 64 billion, paging on-call for a lag that was not there; the caller falls back as for an absent timestamp.
 */
export function changeTime(value: unknown): number | undefined {
  const ms = parseTime(value);
  return ms !== undefined && ms >= PLAUSIBLE_CHANGE_MS.first && ms < PLAUSIBLE_CHANGE_MS.end ? ms : undefined;
}

/** When a provider object last changed: its `updated_at`, else its `modified_date` (undefined when neither is usable). */
export function lastModified(object: Readonly<Record<string, unknown>>): number | undefined {
  return changeTime(object["updated_at"]) ?? changeTime(object["modified_date"]);
}

/**
 * `updatedAt` of a new snapshot version: now, yet always later than the version it replaces, so it tells the
 * versions of one subject apart (event ids depend on it) even when the clock stalls or steps back.
 *
 * @example
 * ```ts
 * const snapshot = { key, hash, object, updatedAt: versionTime(clock.now(), before) };
 * ```
 */
export function versionTime(nowMs: number, before: Snapshot | undefined, nowIso?: string): string {
  const previous = parseTime(before?.updatedAt);
  if (previous !== undefined && previous >= nowMs) return new Date(previous + 1).toISOString();
  // A page stamps many snapshots at one time: its caller formats that time once.
  return nowIso ?? new Date(nowMs).toISOString();
}

/**
 * `subject.sequence` of the next event about a subject: one more than its snapshot's. Deterministic, as event ids are:
 * a re-send after a crash meets the same snapshot, so it carries the same sequence.
 *
 * @example
 * ```ts
 * const snapshot = { key, hash, object, updatedAt, sequence: nextSequence(before) }; // after publishing its event
 * ```
 */
export function nextSequence(before: Snapshot | undefined): number {
  return storedSequence(before) + 1;
}

/**
 * `subject.sequence` a snapshot records: 0 for none, or one written before sequences existed. A rewrite without an
 * event keeps it.
 */
export function storedSequence(before: Snapshot | undefined): number {
  return before?.sequence ?? 0;
}

/**
 * How far into the next second {@link CycleRun.leaveSecond} waits: half a second for a `Time` rounded rather than cut
 * to whole seconds, plus 100 ms for the next run's host clock running a little behind (NTP keeps hosts far closer).
 */
const NEXT_SECOND_MARGIN_MS = 600;

/**
 * How long to wait from `nowMs` to be {@link NEXT_SECOND_MARGIN_MS} into the clock's next whole second: after it, an
 * event is timed in a later second than any published before the wait, even where EventBridge keeps whole seconds.
 *
 * @example
 * await clock.sleep(untilLaterSecond(clock.now())); // 1350 ms at 250 ms past a second
 */
export function untilLaterSecond(nowMs: number): number {
  return 1000 - (((nowMs % 1000) + 1000) % 1000) + NEXT_SECOND_MARGIN_MS;
}
