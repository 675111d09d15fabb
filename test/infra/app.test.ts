import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "./helpers.js";

/** Runs infra/app.ts as `cdk synth` does: context in CDK_CONTEXT_JSON, output in CDK_OUTDIR. */
function runApp(context: Record<string, unknown>) {
  const outdir = mkdtempSync(join(tmpdir(), "cdk-out-"));
  return spawnSync(process.execPath, ["--import", "tsx", join(REPO_ROOT, "infra", "app.ts")], {
    cwd: REPO_ROOT,
    encoding: "utf8",
    env: { ...process.env, CDK_CONTEXT_JSON: JSON.stringify(context), CDK_OUTDIR: outdir },
  });
}

describe("infra/app.ts", () => {
  it("fails synth on a bad tenant config with one line naming the tenant and the field", () => {
    const dir = mkdtempSync(join(tmpdir(), "tenants-"));
    const file = join(dir, "tenants.json");
    writeFileSync(
      file,
      JSON.stringify({
        tenants: [{ id: "initech", environment: "sandbox", alarms: { email: "ops@initech.test" }, schedules: { transactionsEveryMinutes: -5 } }],
      }),
    );
    const result = runApp({ tenantsFile: file });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(
      'qashio-bridge synth failed: tenant "initech": field schedules.transactionsEveryMinutes: Too small',
    );
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it("fails synth when the event catalog is missing", () => {
    const result = runApp({ eventsDir: join(tmpdir(), "no-such-catalog") });
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/qashio-bridge synth failed: event catalog .*no-such-catalog is missing/);
  });
});
