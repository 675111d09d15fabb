import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { TestModule } from "vitest/node";
import RunningTestsReporter from "./running-tests-reporter.js";

const moduleAt = (moduleId: string) => ({ moduleId }) as TestModule;

describe("RunningTestsReporter (what .ci/run's watchdog prints when a run hangs)", () => {
  it("keeps the files started and not yet ended, relative to the root", () => {
    const file = join(mkdtempSync(join(tmpdir(), "running-tests-")), "running");
    const reporter = new RunningTestsReporter({ file, root: "/repo" });
    reporter.onTestModuleStart(moduleAt("/repo/test/a.test.ts"));
    reporter.onTestModuleStart(moduleAt("/repo/test/cli/b.test.ts"));
    expect(readFileSync(file, "utf8")).toBe("test/a.test.ts\ntest/cli/b.test.ts\n");
    reporter.onTestModuleEnd(moduleAt("/repo/test/a.test.ts"));
    expect(readFileSync(file, "utf8")).toBe("test/cli/b.test.ts\n");
    reporter.onTestModuleEnd(moduleAt("/repo/test/cli/b.test.ts"));
    expect(readFileSync(file, "utf8")).toBe("");
  });
});
