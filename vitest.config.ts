import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    restoreMocks: true,
    // DynamoDB Local (in memory, free port) for test/aws and test/functions; see test/global-setup.
    globalSetup: ["test/global-setup/dynamodb-local.ts"],
  },
});
