/**
 * Behaviours of the tenant stack that hand mutation of infra/tenant-stack.ts found no test watching: each test here
 * fails on one such change (named in its comment) and passes on the stack as it is.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { exampleStacks, REPO_ROOT } from "./helpers.js";

describe("tenant stack settings the runbook and the alarms rely on", () => {
  it("gives the rotation function the 10-minute timeout the runbook tells an operator to set back (--timeout 600)", () => {
    // mutant: Duration.minutes(5), still over MIN_ROTATION_TIMEOUT_MS
    const runbook = readFileSync(join(REPO_ROOT, "docs", "runbook.md"), "utf8");
    expect(runbook).toContain("the stack sets 10 minutes");
    expect(runbook).toContain("--function-name <RotateTokenFunction name> --timeout 600");
    const { acme } = exampleStacks();
    acme.template.hasResourceProperties("AWS::Lambda::Function", { Description: `qashio-bridge acme-sandbox: Secrets Manager rotation, refreshes the provider token under the lease`, Timeout: 600 });
  });
});
