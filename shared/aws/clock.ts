/** The AWS adapters' default clock: the shared system clock (tests inject a fake `Clock` instead). */
export { systemClock } from "../clock.js";
