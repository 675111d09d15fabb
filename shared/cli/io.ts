/**
 * What a command gets from the process: environment, working directory, output streams and a stop signal.
 * Tests pass their own so commands run in-process without touching the real process.
 */
import type { Env } from "./config.js";
import type { OutputStream } from "./printer.js";

export interface CliIo {
  /** The process environment (merged with .env by the commands that read settings). */
  readonly env: Env;
  readonly cwd: string;
  readonly stdout: OutputStream;
  readonly stderr: OutputStream;
  /** Aborted on SIGINT / SIGTERM: commands stop cleanly between cycles. */
  readonly signal: AbortSignal;
}

/** Writes one line. */
export function line(stream: OutputStream, text = ""): void {
  stream.write(`${text}\n`);
}

/**
 * Resolves after `ms`, or at once when `signal` is aborted (never rejects).
 *
 * @example
 * await pause(30_000, io.signal); // returns early on Ctrl-C
 */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
