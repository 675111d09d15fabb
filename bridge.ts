/**
 * Command-line entry of qashio-bridge: `npm run bridge -- <command>`, `npm start`, `npm run bench`.
 * See shared/cli/ for the commands; `npm run bridge -- help` for usage.
 */
import { main, stopNotice } from "./shared/cli/main.js";

const controller = new AbortController();
const notice = stopNotice(process.argv[2]);
let stops = 0;
const stop = () => {
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

process.exitCode = await main(process.argv.slice(2), {
  env: process.env,
  cwd: process.cwd(),
  stdout: process.stdout,
  stderr: process.stderr,
  signal: controller.signal,
});
process.off("SIGINT", stop);
process.off("SIGTERM", stop);
