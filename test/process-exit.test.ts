/**
 * Entries end their process by its exit code, not by process.exit(): on Node 24 that can hang for good (nodejs/node#64274).
 * It joins V8's background threads while one of them, compiling, waits for a garbage collection only the exiting main
 * thread could run; a natural exit (exit code set, event loop empty) tears V8 down first. Seen with gdb in CI's Node 24
 * run of test/infra/app.test.ts, whose synchronous runs of the CDK app waited for ever.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..");

/** Each entry and the process.exit() calls it keeps on purpose (its comment says why). */
const ENTRIES: Readonly<Record<string, number>> = {
  // Its beforeExit listener: once Node has drained V8's background work (see there).
  "bridge.ts": 1,
  "infra/app.ts": 0,
  "sandbox/main.ts": 0,
  "shared/cli/bench-sandbox.ts": 0,
  "shared/cli/bench-baseline.ts": 0,
  // bridge.ts's and sandbox/main.ts's second Ctrl-C where a process cannot end itself by a signal (see there).
  "shared/cli/stop-at-once.ts": 1,
};

describe("process.exit() in entries", () => {
  it.each(Object.entries(ENTRIES))("%s calls it %i times", (file, kept) => {
    const code = readFileSync(join(ROOT, file), "utf8")
      .replace(/\/\*[\s\S]*?\*\//g, "")
      .replace(/\/\/.*$/gm, "");
    // `.exit(` on anything: a module may end the process it is handed.
    expect(code.match(/\.exit\(/g) ?? []).toHaveLength(kept);
  });
});
