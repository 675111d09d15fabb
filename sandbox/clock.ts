/**
 * Latest sandbox time. A year short of 9999-12-31, so every time derived from the clock (token and
 * code expiries, stamps) keeps a four-digit ISO year and stays a valid `Date`.
 */
export const LATEST_SANDBOX_TIME_MS = Date.UTC(9999, 0, 1);

/**
 * Sandbox time. Tests move it with `advance`; nothing in the sandbox reads the wall clock
 * unless `realTime` is on (the standalone server), where it also follows real time: the time
 * elapsed on the monotonic clock, so a step of the host's wall clock (NTP) never moves it back.
 */
export class SandboxClock {
  private offsetMs = 0;
  private lastStampMs = 0;
  private readonly startMs: number;
  private readonly realStartMs: number;

  constructor(
    startTime: number,
    private readonly realTime = false,
  ) {
    this.startMs = startTime;
    this.realStartMs = performance.now();
  }

  /** Current sandbox time in epoch milliseconds. */
  nowMs(): number {
    const real = this.realTime ? Math.floor(performance.now() - this.realStartMs) : 0;
    return this.startMs + this.offsetMs + real;
  }

  /** Current sandbox time in epoch seconds (JWT claims). */
  nowSeconds(): number {
    return Math.floor(this.nowMs() / 1000);
  }

  /** Current sandbox time as ISO 8601. */
  nowIso(): string {
    return new Date(this.nowMs()).toISOString();
  }

  /**
   * A write timestamp strictly later than every earlier one, so `updated_at` always moves
   * even when the clock is frozen.
   */
  stampIso(): string {
    const stamp = Math.max(this.nowMs(), this.lastStampMs + 1);
    this.lastStampMs = stamp;
    return new Date(stamp).toISOString();
  }

  /**
   * Moves sandbox time forward by `seconds`, unless that passes {@link LATEST_SANDBOX_TIME_MS}: false then, the clock
   * unchanged. One reading decides: a clock following real time moves between two, and a move a check allowed could
   * then be refused.
   */
  tryAdvance(seconds: number): boolean {
    if (!(Number.isFinite(seconds) && seconds >= 0 && this.nowMs() + seconds * 1000 <= LATEST_SANDBOX_TIME_MS)) return false;
    // Whole milliseconds, as every other source of sandbox time: `advance_seconds: 0.0005` would leave a fraction.
    this.offsetMs += Math.round(seconds * 1000);
    return true;
  }

  /** {@link tryAdvance}, a refused move thrown as a RangeError. */
  advance(seconds: number): void {
    if (!this.tryAdvance(seconds)) throw new RangeError("the clock cannot move by that many seconds");
  }
}
