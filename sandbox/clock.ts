/**
 * Sandbox time. Tests move it with `advance`; nothing in the sandbox reads the wall clock
 * unless `realTime` is on (the standalone server), where it also follows real time.
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
    this.realStartMs = Date.now();
  }

  /** Current sandbox time in epoch milliseconds. */
  nowMs(): number {
    const real = this.realTime ? Date.now() - this.realStartMs : 0;
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

  /** Moves sandbox time forward. */
  advance(seconds: number): void {
    if (!Number.isFinite(seconds) || seconds < 0) throw new RangeError("advance_seconds must be a non-negative number");
    this.offsetMs += seconds * 1000;
  }
}
