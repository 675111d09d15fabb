/**
 * Command-line entry of qashio-bridge: `npm run bridge -- <command>`, `npm start`, `npm run bench`.
 * See shared/cli/ for the commands; `npm run bridge -- help` for usage.
 */
import { main, stopNotice } from "./shared/cli/main.js";
import { TokensLostError } from "./shared/cli/errors.js";
import { spendingRefreshes } from "./shared/cli/token-spending.js";
import { REFRESH_UNSAVED, StopSignals, stopAtOnce, type StopSignal } from "./shared/cli/stop-at-once.js";

const controller = new AbortController();
/** One soon after the first is the same stop delivered twice, no new one (as `npm run sandbox` counts them). */
const signals = new StopSignals();
/** Set once `main` has returned: the process is winding down to exit with the command's result. */
let finished = false;
const stop = (signal: StopSignal) => {
  const stops = signals.hear();
  if (stops === 0) return;
  // A first one is ignored while winding down, which lets work the command left in flight (a read-ahead's token
  // refresh after a failed cycle) save what it holds; the process exits with the command's result, not as killed.
  if (finished && stops === 1) return;
  // A second Ctrl-C means "now": skip the clean stop between cycles. Not inside a token refresh, though, nor while
  // holding tokens a failed save left in memory: the refresh token they replaced is spent, and exiting before the
  // successor is saved signs the integration out (the refresh call and the saves are bounded by their own deadlines,
  // so this wait is too).
  if (stops > 1) {
    if (!spendingRefreshes.busy) return stopAtOnce();
    // Later signals find the wait under way.
    if (stops === 2) {
      process.stderr.write(`${REFRESH_UNSAVED}: stopping once it is (a SIGKILL, kill -9, now would sign the integration out)\n`);
      void spendingRefreshes.settled().then((lost) => {
        for (const { file, failure } of lost) process.stderr.write(`error: ${new TokensLostError(file, { failure }).message}\n`);
        stopAtOnce();
      });
    }
    return;
  }
  // A page can take seconds to finish: say that the signal was heard, and what a second one would do now.
  const notice = stopNotice(process.argv[2], { refreshUnsaved: spendingRefreshes.busy, signal });
  if (notice !== undefined) process.stderr.write(`${notice}\n`);
  controller.abort();
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
// A closed terminal (SIGHUP) is a stop like SIGTERM: by default it kills the process wherever it is, mid-cycle, or with
// the demo's temp directory (tokens included) left behind. Node runs with SIGHUP's default action even under nohup.
process.on("SIGHUP", stop);
// A closed stdout or stderr (`npm start | head`, a log pipe that went away) asks for a clean stop, as a first Ctrl-C
// does, instead of an unhandled 'error' event (EPIPE) that kills the process wherever it is: mid-cycle, during a token
// refresh, or with the demo's temp directory (tokens included) left behind. Later write errors change nothing (an
// abort is once only).
const onOutputError = () => controller.abort();
process.stdout.on("error", onOutputError);
process.stderr.on("error", onOutputError);

const code = await main(process.argv.slice(2), {
  env: process.env,
  cwd: process.cwd(),
  stdout: process.stdout,
  stderr: process.stderr,
  signal: controller.signal,
});
// Listeners stay installed while the process winds down: removing them would let a late signal kill it (status 143
// after a run that succeeded). They do not keep it alive.
process.exitCode = code;
finished = true;
// Once nothing is left to run (work the command left in flight is done), exit here instead of letting Node tear the
// process down: its teardown closes the signal listeners some milliseconds before the process is gone, and a signal
// in that window ended a run that had succeeded as killed (status 143; on Node 24 every time the signal followed the
// summary at once). The one process.exit() left here (test/process-exit.test.ts; stopAtOnce keeps one on Windows): it
// can hang for good on Node 24 when a V8 background thread, compiling, waits for a garbage collection
// (nodejs/node#64274), but Node waits for V8's background work to finish before it emits 'beforeExit', so only work
// started by the few lines run from here on could.
process.once("beforeExit", () => process.exit());
