/**
 * How the bridge entry (bridge.ts) ends on a second Ctrl-C, SIGTERM or SIGHUP: now, mid-cycle.
 */
import { EXIT } from "./errors.js";

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
 * Windows has no signal to end a process with: there process.kill() of itself terminates it with exit code 1, a failed
 * cycle's code. It exits 130 there, the hang accepted (docs/spec-gaps.md, "Exiting").
 */
export function stopAtOnce(proc: EndingProcess = process): void {
  proc.stderr.write("stopped at once\n");
  if (proc.platform === "win32") {
    proc.exit(EXIT.interrupted);
    return;
  }
  proc.removeAllListeners("SIGINT");
  proc.kill(proc.pid, "SIGINT");
}
