/**
 * How the bridge entry (bridge.ts) ends on a second Ctrl-C, SIGTERM or SIGHUP: now, mid-cycle; `npm run sandbox`
 * (sandbox/main.ts) ends so on a second SIGINT or SIGTERM.
 */
import { EXIT } from "./errors.js";

/**
 * A signal this soon after the first is the same stop delivered twice, not a second Ctrl-C: coreutils `timeout` (and
 * other wrappers) signal the command and then its whole process group, and npm and tsx relay a terminal's Ctrl-C to
 * the command that got it too. A person's two presses are further apart.
 */
const SAME_STOP_MS = 50;

/**
 * The stop signals a process heard, counted as stops: the rule bridge.ts and `npm run sandbox` both follow, so a signal
 * is the same stop (or a second one) to each alike.
 *
 * @example
 * const signals = new StopSignals();
 * process.on("SIGINT", () => {
 *   const stops = signals.hear();
 *   if (stops > 1) stopAtOnce();
 *   else if (stops === 1) controller.abort();
 * });
 */
export class StopSignals {
  private heard = 0;
  /** When the first came (`performance.now()`). */
  private firstAt = 0;

  /** Hears a stop signal: the number of stops it makes (1 the first, 2 and on later ones), 0 when it is the first again. */
  hear(): number {
    const now = performance.now();
    if (this.heard === 1 && now - this.firstAt < SAME_STOP_MS) return 0;
    this.heard += 1;
    if (this.heard === 1) this.firstAt = now;
    return this.heard;
  }
}

/** Said while a stop waits for the save of a refresh token's successor, which a second stop does not skip. */
export const REFRESH_UNSAVED = "a new refresh token is not saved yet";

/** The signals bridge.ts counts as stops; any of them after the first is a second stop. */
export type StopSignal = "SIGINT" | "SIGTERM" | "SIGHUP";

/**
 * What a second stop does, for the first one's notice, worded for the `first` signal received: a person's Ctrl-C is
 * told of Ctrl-C, a SIGTERM or SIGHUP (a supervisor, `kill`, a closed terminal) of any stop signal. It stops at once,
 * but not while `refreshUnsaved` (a token refresh under way, or new tokens a failed save left held): it then waits for
 * their save, tried once more (bridge.ts).
 */
export function secondStopNotice(refreshUnsaved: boolean, first: StopSignal = "SIGINT"): string {
  const again = first === "SIGINT" ? "Ctrl-C again" : "a second stop signal (Ctrl-C, SIGTERM or SIGHUP)";
  return refreshUnsaved
    ? `${REFRESH_UNSAVED}: ${again} stops once it is (or one more try to save it failed), not at once: a SIGKILL (kill -9) before then would sign the integration out`
    : `${again} stops at once`;
}

/** The parts of `process` the ending uses. */
export type EndingProcess = Pick<NodeJS.Process, "platform" | "pid" | "kill" | "exit" | "removeAllListeners"> & {
  readonly stderr: { write(text: string): unknown };
};

/**
 * Ends the process now, killed by SIGINT whichever signal asked (130 in a shell): with no listener left, the signal's
 * default action ends it in the kernel. Not process.exit(130): it joins V8's background threads, and on Node 24 one of
 * them, compiling mid-cycle, can wait for a garbage collection only the exiting thread could run (nodejs/node#64274):
 * the process then hung for good (test/process-exit.test.ts).
 *
 * process.exit(130) it is, the hang accepted, where no signal can end the process: on Windows, which has none (there
 * process.kill() of itself terminates it with exit code 1, a failed cycle's), and as PID 1 of a container, whose
 * kernel drops a signal its PID namespace's init has no handler for, so the kill returns with the process running
 * (docs/spec-gaps.md, "Exiting").
 */
export function stopAtOnce(proc: EndingProcess = process): void {
  proc.stderr.write("stopped at once\n");
  if (proc.platform !== "win32") {
    proc.removeAllListeners("SIGINT");
    // A fatal signal sent to itself ends the process before the kill returns (Linux makes the whole group exit then).
    proc.kill(proc.pid, "SIGINT");
  }
  proc.exit(EXIT.interrupted);
}
