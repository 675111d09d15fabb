/**
 * A real FileLock holder in another process, for tests of what a crashed holder leaves behind: it takes a lease, says
 * so, and keeps running until killed.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/**
 * Starts a process that takes the lease `name` for `ttlMs` in the state directory `stateDir` with the lock
 * `lockExpression` builds (over `FileLock` and the state directory, `process.argv[2]`; `preamble` may define what it
 * uses), and resolves once it holds it. Throws when it was refused. The caller kills it (see {@link killed}).
 *
 * @example
 * const holder = await startLockHolder(stateDir, "cycle", 60_000);
 */
export async function startLockHolder(
  stateDir: string,
  name: string,
  ttlMs: number,
  options: { readonly script?: string; readonly lockExpression?: string; readonly preamble?: string } = {},
): Promise<ChildProcess> {
  const { script = "holder.mts", lockExpression = "new FileLock(process.argv[2])", preamble = "" } = options;
  // Beside the state: FileLock only reads its locks/ directory.
  const child = path.join(stateDir, script);
  const fileLock = pathToFileURL(fileURLToPath(new URL("../../../shared/local/file-lock.ts", import.meta.url))).href;
  await writeFile(
    child,
    `import { FileLock } from ${JSON.stringify(fileLock)};
${preamble}
const handle = await ${lockExpression}.tryAcquire(${JSON.stringify(name)}, ${ttlMs});
process.stdout.write(handle ? "held\\n" : "refused\\n");
setInterval(() => undefined, 1000);
`,
  );
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;
  const holder = spawn(process.execPath, ["--import", tsx, child, stateDir], { stdio: ["ignore", "pipe", "inherit"] });
  const said = await new Promise<string>((resolve) => holder.stdout!.once("data", (chunk: Buffer) => resolve(chunk.toString().trim())));
  if (said !== "held") {
    holder.kill("SIGKILL");
    throw new Error(`the lock holder said "${said}"`);
  }
  return holder;
}

/** Kills `child` with SIGKILL (nothing it holds is released) and resolves once it has exited. */
export async function killed(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
}
