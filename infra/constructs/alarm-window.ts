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
const DAY_MINUTES = 24 * 60;
const HOUR_MINUTES = 60;
/** Periods evaluated; two must breach, so one failed cycle (retried by the next tick) does not alarm. */
const CYCLE_EVALUATION_PERIODS = 3;
const CYCLE_DATAPOINTS_TO_ALARM = 2;
/** Longest silence a heartbeat's all-breaching periods of the schedule may span before it pages: a day. */
const HEARTBEAT_MAX_SILENCE_MINUTES = DAY_MINUTES;

/**
 * Longest window (period x evaluation periods) CloudWatch accepts for a period (PutMetricAlarm): one day for periods
 * under an hour, seven days otherwise.
 */
function maxAlarmWindowMinutes(periodMinutes: number): number {
  return periodMinutes < HOUR_MINUTES ? DAY_MINUTES : 7 * DAY_MINUTES;
}

/**
 * The window of an alarm on a signal a scheduled cycle emits once per run (SyncLagSeconds, a poller's Errors).
 * The period is the schedule (at least five minutes), so a slow schedule still puts a data point in every period;
 * 2 of 3 periods must breach. Three periods fit CloudWatch's limit at every allowed schedule (1 to 1440 minutes: a day
 * under an hour's period, seven days from an hour, so 3 days for a daily schedule); fewer only beyond it.
 *
 * @example
 * ```ts
 * cycleAlarmWindow(2);   // 5-minute periods, 2 of 3
 * cycleAlarmWindow(60);  // 60-minute periods, 2 of 3
 * cycleAlarmWindow(1440); // one-day periods, 2 of 3
 * ```
 */
export function cycleAlarmWindow(everyMinutes: number): AlarmWindow {
  const periodMinutes = Math.max(MIN_CYCLE_ALARM_PERIOD_MINUTES, Math.ceil(everyMinutes));
  const fitting = Math.floor(maxAlarmWindowMinutes(periodMinutes) / periodMinutes);
  const evaluationPeriods = Math.max(1, Math.min(CYCLE_EVALUATION_PERIODS, fitting));
  return {
    period: Duration.minutes(periodMinutes),
    evaluationPeriods,
    datapointsToAlarm: Math.min(CYCLE_DATAPOINTS_TO_ALARM, evaluationPeriods),
  };
}

/**
 * The window of a heartbeat alarm, whose beat (one data point per tick) missing counts as breaching: every evaluated
 * period must lack a beat, so the window is the silence before a page. {@link cycleAlarmWindow}'s periods, as many of
 * its periods as fit in a day (3 up to an 8-hour schedule, 2 up to 12 hours), all of them. Beyond 12 hours a single
 * period as long as the schedule would be left; CloudWatch slides it each minute, so it lost the last tick's beat
 * before the next one's landed whenever ticks (or their data points) came over a schedule apart, and went to ALARM.
 * There, one-hour periods covering the schedule plus an hour: the alarm fires 1 to 2 hours after a missed tick.
 *
 * @example
 * ```ts
 * heartbeatAlarmWindow(5);    // 5-minute periods, 3 of 3
 * heartbeatAlarmWindow(600);  // 600-minute periods, 2 of 2
 * heartbeatAlarmWindow(1440); // 60-minute periods, 25 of 25
 * ```
 */
export function heartbeatAlarmWindow(everyMinutes: number): AlarmWindow {
  const { period, evaluationPeriods } = cycleAlarmWindow(everyMinutes);
  const periods = Math.min(evaluationPeriods, Math.floor(HEARTBEAT_MAX_SILENCE_MINUTES / period.toMinutes()));
  if (periods > 1) return { period, evaluationPeriods: periods, datapointsToAlarm: periods };
  const hours = Math.ceil(everyMinutes / HOUR_MINUTES) + 1;
  return { period: Duration.minutes(HOUR_MINUTES), evaluationPeriods: hours, datapointsToAlarm: hours };
}

/** A window's period length in words, for alarm descriptions: "60-minute", or "one-day". */
export function describePeriodLength(window: AlarmWindow): string {
  const minutes = window.period.toMinutes();
  return minutes === DAY_MINUTES ? "one-day" : `${minutes}-minute`;
}

/** The window in words, for alarm descriptions: "2 of the last 3 60-minute periods". */
export function describeAlarmWindow(window: AlarmWindow): string {
  const length = describePeriodLength(window);
  if (window.evaluationPeriods === 1) return `the last ${length} period`;
  return `${window.datapointsToAlarm} of the last ${window.evaluationPeriods} ${length} periods`;
}
