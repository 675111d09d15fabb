import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // At least two: `vitest run` takes a worker per core but one, so one on a two-core machine, and most tests wait (on
    // child processes, timers, sockets, DynamoDB Local): a second worker there more than halves the run (measured: 631 s
    // to 253 s; a third gained 3 % more).
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // CI names the tests running now in a file, for its watchdog to print if a run hangs (.ci/run).
    reporters: process.env.QASHIO_RUNNING_TESTS === undefined ? ["default"] : ["default", "./test/running-tests-reporter.ts"],
    restoreMocks: true,
    // A temp directory per run, removed after it; DynamoDB Local (in memory, free port) for test/aws and
    // test/functions. See test/global-setup.
    globalSetup: ["test/global-setup/temp-dir.ts", "test/global-setup/dynamodb-local.ts"],
  },
});
