/**
 * Calendar periods shared by spend limits (`spend_limit_period`) and top-ups (`velocity_period`, §4.9): UTC windows
 * (the spec names no time zone), a week from Monday.
 */

/** A calendar window: its start and the next window's start (epoch ms). */
export interface CalendarWindow {
  readonly start: number;
  readonly next: number;
}

/** The `period` window holding `nowMs` (`DAILY`, `WEEKLY`, `MONTHLY`, `QUARTERLY`, `YEARLY`); undefined for any other period. */
export function calendarWindow(period: string, nowMs: number): CalendarWindow | undefined {
  const now = new Date(nowMs);
  const [year, month, day] = [now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()];
  switch (period) {
    case "DAILY":
      return { start: Date.UTC(year, month, day), next: Date.UTC(year, month, day + 1) };
    case "WEEKLY": {
      const monday = day - ((now.getUTCDay() + 6) % 7);
      return { start: Date.UTC(year, month, monday), next: Date.UTC(year, month, monday + 7) };
    }
    case "MONTHLY":
      return { start: Date.UTC(year, month, 1), next: Date.UTC(year, month + 1, 1) };
    case "QUARTERLY":
      return { start: Date.UTC(year, month - (month % 3), 1), next: Date.UTC(year, month - (month % 3) + 3, 1) };
    case "YEARLY":
      return { start: Date.UTC(year, 0, 1), next: Date.UTC(year + 1, 0, 1) };
    default:
      return undefined;
  }
}

/** Milliseconds in a day. */
const DAY_MS = 86_400_000;

/**
 * The ordinal of the `period` window holding `nowMs`, counted in windows from the epoch (undefined for any other
 * period, as {@link calendarWindow}): the windows from one instant to another are told by subtraction, not walked.
 */
export function windowIndex(period: string, nowMs: number): number | undefined {
  const now = new Date(nowMs);
  const [year, month] = [now.getUTCFullYear(), now.getUTCMonth()];
  switch (period) {
    case "DAILY":
      return Math.floor(nowMs / DAY_MS);
    case "WEEKLY":
      // 1970-01-01 was a Thursday: three days on from the Monday that starts its week.
      return Math.floor((Math.floor(nowMs / DAY_MS) + 3) / 7);
    case "MONTHLY":
      return year * 12 + month;
    case "QUARTERLY":
      return year * 4 + Math.floor(month / 3);
    case "YEARLY":
      return year;
    default:
      return undefined;
  }
}
