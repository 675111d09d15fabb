/**
 * Vitest reporter that keeps, in the file named by QASHIO_RUNNING_TESTS, the test files running now, one per line.
 * CI's watchdog (.ci/run) prints it when a run hangs: a worker blocked in a synchronous call never reports again, so
 * the default reporter, which prints a file when it ends, cannot name the one that hung. (Test cases are not listed:
 * a worker reports them in batches, so the one that blocks it is seldom among them.)
 */
import { writeFileSync } from "node:fs";
import { relative } from "node:path";
import type { Reporter, TestModule } from "vitest/node";

export default class RunningTestsReporter implements Reporter {
  private readonly running = new Set<string>();
  private readonly file: string | undefined;
  private readonly root: string;

  /** Vitest passes the reporter's options (none in vitest.config.ts); tests pass a file and root of their own. */
  constructor(options: { readonly file?: string; readonly root?: string } = {}) {
    this.file = options.file ?? process.env.QASHIO_RUNNING_TESTS;
    this.root = options.root ?? process.cwd();
  }

  onTestModuleStart(testModule: TestModule): void {
    this.running.add(relative(this.root, testModule.moduleId));
    this.write();
  }

  onTestModuleEnd(testModule: TestModule): void {
    this.running.delete(relative(this.root, testModule.moduleId));
    this.write();
  }

  private write(): void {
    if (this.file === undefined) return;
    writeFileSync(this.file, [...this.running].map((name) => `${name}\n`).join(""));
  }
}
