import type { Clock } from "../bridge/ports.js";

/** Wall clock with real timers; tests inject a fake `Clock` instead. */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};
