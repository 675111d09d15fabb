/**
 * Command-line entry of qashio-bridge: `npm run bridge -- <command>`, `npm start`, `npm run bench`.
 * See shared/cli/ for the commands; `npm run bridge -- help` for usage.
 */
import { main, stopNotice } from "./shared/cli/main.js";

const controller = new AbortController();
const notice = stopNotice(process.argv[2]);
let stops = 0;
/** Set once `main` has returned: the process exits as soon as its output is flushed. */
let finished = false;
const stop = () => {
  if (finished) return;
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
process.on("SIGINT", stop);
process.on("SIGTERM", stop);

const code = await main(process.argv.slice(2), {
  env: process.env,
  cwd: process.cwd(),
  stdout: process.stdout,
  stderr: process.stderr,
  signal: controller.signal,
});
// The work is done and stored. Exit once the output is flushed (writes to pipes are asynchronous on macOS), rather
// than when the event loop has wound down (idle keep-alive sockets, Node 24's teardown): a SIGTERM in that window
// would end the process as killed by the signal (status 143) after a run that succeeded.
finished = true;
await Promise.all([process.stdout, process.stderr].map((stream) => new Promise<void>((resolve) => stream.write("", () => resolve()))));
process.exit(code);
