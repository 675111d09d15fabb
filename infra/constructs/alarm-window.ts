import { Duration } from "aws-cdk-lib";

/** Periods an alarm on a scheduled cycle's signal evaluates, and how many of them must breach. */
export interface AlarmWindow {
  /** Length of one period: the schedule, so every period normally holds one cycle's data point. */
  readonly period: Duration;
  /** Periods evaluated. */
  readonly evaluationPeriods: number;
  /** Breaching periods needed to alarm. */
  readonly datapointsToAlarm: number;
}

/** Shortest period: a faster schedule is summed or maxed over five minutes. */
export const MIN_CYCLE_ALARM_PERIOD_MINUTES = 5;
/** CloudWatch rejects an alarm whose period x evaluation periods exceeds one day. */
const MAX_ALARM_WINDOW_MINUTES = 24 * 60;
/** Periods evaluated when they fit in a day; two must breach, so one failed cycle (retried by the next tick) does not alarm. */
const CYCLE_EVALUATION_PERIODS = 3;
const CYCLE_DATAPOINTS_TO_ALARM = 2;

/**
 * The window of an alarm on a signal a scheduled cycle emits once per run (SyncLagSeconds, a poller's Errors).
 * The period is the schedule (at least five minutes), so a slow schedule still puts a data point in every period;
 * 2 of 3 periods must breach, or fewer periods when three would exceed CloudWatch's one-day limit (2 of 2 up to a
 * 12-hour schedule, 1 of 1 beyond).
 *
 * @example
 * ```ts
 * cycleAlarmWindow(2);   // 5-minute periods, 2 of 3
 * cycleAlarmWindow(60);  // 60-minute periods, 2 of 3
 * cycleAlarmWindow(1440); // 1-day period, 1 of 1
 * ```
 */
export function cycleAlarmWindow(everyMinutes: number): AlarmWindow {
  const periodMinutes = Math.max(MIN_CYCLE_ALARM_PERIOD_MINUTES, Math.ceil(everyMinutes));
  const evaluationPeriods = Math.max(1, Math.min(CYCLE_EVALUATION_PERIODS, Math.floor(MAX_ALARM_WINDOW_MINUTES / periodMinutes)));
  return {
    period: Duration.minutes(periodMinutes),
    evaluationPeriods,
    datapointsToAlarm: Math.min(CYCLE_DATAPOINTS_TO_ALARM, evaluationPeriods),
  };
}

/** A window's period length in words, for alarm descriptions: "60-minute", or "one-day". */
export function describePeriodLength(window: AlarmWindow): string {
  const minutes = window.period.toMinutes();
  return minutes === MAX_ALARM_WINDOW_MINUTES ? "one-day" : `${minutes}-minute`;
}

/** The window in words, for alarm descriptions: "2 of the last 3 60-minute periods". */
export function describeAlarmWindow(window: AlarmWindow): string {
  const length = describePeriodLength(window);
  if (window.evaluationPeriods === 1) return `the last ${length} period`;
  return `${window.datapointsToAlarm} of the last ${window.evaluationPeriods} ${length} periods`;
}
