/**
 * What a command gets from the process: environment, working directory, output streams and a stop signal.
 * Tests pass their own so commands run in-process without touching the real process.
 */
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Env } from "./config.js";
import { CliError, EXIT } from "./errors.js";
import type { OutputStream } from "./printer.js";

export interface CliIo {
  /** The process environment (merged with .env by the commands that read settings). */
  readonly env: Env;
  readonly cwd: string;
  readonly stdout: OutputStream;
  readonly stderr: OutputStream;
  /** Aborted on SIGINT / SIGTERM / SIGHUP: commands stop cleanly between cycles. */
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

/**
 * Makes a fresh directory `<tmpdir>/<prefix>XXXXXX` for `what` (the demo, the bench). Where the machine keeps temp files
 * is a setting of the person's environment, so a TMPDIR that is missing or not writable is exit 2, not an unexpected
 * error.
 *
 * @throws CliError (exit 2) naming TMPDIR and the directory it points to.
 * @example
 * const dir = await makeTempDir("qashio-bridge-demo-", "the demo");
 */
export async function makeTempDir(prefix: string, what: string): Promise<string> {
  try {
    return await mkdtemp(join(tmpdir(), prefix));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).name;
    throw new CliError(`TMPDIR: ${what}'s temp directory cannot be made in ${tmpdir()} (${code}); point TMPDIR to a directory this user can write`, EXIT.usage, {
      cause: error,
    });
  }
}
