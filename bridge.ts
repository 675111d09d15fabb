/**
 * Command-line entry of qashio-bridge: `npm run bridge -- <command>`, `npm start`, `npm run bench`.
 * See shared/cli/ for the commands; `npm run bridge -- help` for usage.
 */
import { main, stopNotice } from "./shared/cli/main.js";

const controller = new AbortController();
const notice = stopNotice(process.argv[2]);
let stops = 0;
/** Set once `main` has returned: its work is done and stored. */
let finished = false;
const stop = () => {
  // The process may still take a moment to wind down (sockets, timers): a signal now ends it at once with its
  // result, rather than as killed by the signal (status 143) after a run that succeeded.
  if (finished) process.exit();
  stops += 1;
  // A second Ctrl-C means "now": skip the clean stop between cycles.
  if (stops > 1) {
    process.stderr.write("stopped at once\n");
    process.exit(130);
  }
  // A page can take seconds to finish: say that the signal was heard.
  if (notice !== undefined) process.stderr.write(`${notice}\n`);
  controller.abort();
};
// Kept to the end: signal listeners do not keep the process alive, and removing them would let a late signal kill it.
process.on("SIGINT", stop);
process.on("SIGTERM", stop);

process.exitCode = await main(process.argv.slice(2), {
  env: process.env,
  cwd: process.cwd(),
  stdout: process.stdout,
  stderr: process.stderr,
  signal: controller.signal,
});
finished = true;
