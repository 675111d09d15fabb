import type { Clock } from "../bridge/ports.js";
import { realSleep } from "../qashio/http.js";

/** Wall clock with real timers; tests inject a fake `Clock` instead. */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: realSleep,
};
