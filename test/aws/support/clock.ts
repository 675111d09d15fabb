import type { Clock } from "../../../shared/bridge/ports.js";

/** A clock that only moves when told to; `sleep` advances it instantly and records the delay. */
export class FakeClock implements Clock {
  readonly sleeps: number[] = [];
  constructor(private time = Date.parse("2026-03-01T12:00:00Z")) {}
  now(): number {
    return this.time;
  }
  async sleep(ms: number): Promise<void> {
    this.sleeps.push(ms);
    this.time += ms;
  }
  advance(ms: number): void {
    this.time += ms;
  }
}
