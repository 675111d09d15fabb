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
/**
 * Longest window the cycle alarms take. CloudWatch rejects period x evaluation periods over one day for periods under
 * an hour, over seven days for longer ones (PutMetricAlarm); a day suits both, and the heartbeat's hours stay within.
 */
const MAX_ALARM_WINDOW_MINUTES = 24 * 60;
/** Period of a heartbeat over a schedule whose cycle window holds one period: an hour. */
const HEARTBEAT_HOUR_MINUTES = 60;
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

/**
 * The window of a heartbeat alarm, whose beat (one data point per tick) missing counts as breaching: every evaluated
 * period must lack a beat. Up to a 12-hour schedule, {@link cycleAlarmWindow}'s periods, all of them. Beyond, that
 * window is a single period as long as the schedule; CloudWatch slides it each minute, so it lost the last tick's
 * beat before the next one's landed whenever ticks (or their data points) came over a schedule apart, and went to
 * ALARM. There, one-hour periods covering the schedule plus an hour: the alarm fires 1 to 2 hours after a missed tick.
 *
 * @example
 * ```ts
 * heartbeatAlarmWindow(5);    // 5-minute periods, 3 of 3
 * heartbeatAlarmWindow(1440); // 60-minute periods, 25 of 25
 * ```
 */
export function heartbeatAlarmWindow(everyMinutes: number): AlarmWindow {
  const cycles = cycleAlarmWindow(everyMinutes);
  if (cycles.evaluationPeriods > 1) return { ...cycles, datapointsToAlarm: cycles.evaluationPeriods };
  const hours = Math.ceil(everyMinutes / HEARTBEAT_HOUR_MINUTES) + 1;
  return { period: Duration.minutes(HEARTBEAT_HOUR_MINUTES), evaluationPeriods: hours, datapointsToAlarm: hours };
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
