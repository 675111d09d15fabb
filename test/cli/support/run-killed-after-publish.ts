/**
 * `bridge run --once` in a process that kills itself (SIGKILL) once its first publish is accepted: a crash between
 * publishing and storing snapshots, which a kill from outside hits only by chance. Settings come from the environment,
 * as for bridge.ts; a run that publishes nothing exits with its result instead, for the test to see it never crashed.
 */
import { runCommand } from "../../../shared/cli/run.js";

process.exitCode = await runCommand(
  { once: true, intervalMs: 60_000 },
  { env: process.env, cwd: process.cwd(), stdout: process.stdout, stderr: process.stderr, signal: new AbortController().signal },
  {
    onPublished: (events) => {
      if (events.length > 0) process.kill(process.pid, "SIGKILL");
    },
  },
);
