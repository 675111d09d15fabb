/**
 * How the sandbox's entries (main.ts, and the bench's child shared/cli/bench-sandbox.ts) close their server on the way
 * out: a failure is said, not thrown, as nothing awaits the close (an unhandled rejection would crash the process with
 * a stack trace).
 */

/** Closes `server`; a failure is printed after `name` and fails the process (exit code 1), which ends all the same. */
export function closeServer(server: { close(): Promise<void> }, name: string): void {
  server.close().catch((error: unknown) => {
    console.error(`${name}: error while stopping: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  });
}
