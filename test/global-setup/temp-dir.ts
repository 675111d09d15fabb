/**
 * Vitest global setup: one temp directory per test run, removed when the run ends, as every test's (and every
 * process a test starts) `os.tmpdir()`. Tests make temp dirs by the hundred, and some of their files are made by
 * libraries that leave them (CDK synthesises every `App` without an outdir into a fresh `cdk.out*` dir): without this
 * each run left tens of megabytes in /tmp. Workers and child processes inherit TMPDIR (and the umask) from this process.
 */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export default function setup(): () => void {
  // Fixtures a test makes without a mode then get a typical user's 0755/0644 whatever the developer's umask: under
  // 002 they would be group-writable, which the bridge refuses in a state directory (stateDirAccessProblem). The
  // bridge's own files carry explicit modes. Workers and child processes inherit it.
  const umaskBefore = process.umask(0o022);
  const dir = mkdtempSync(join(tmpdir(), "qashio-bridge-tests-"));
  // Open as /tmp is (sticky, anyone may create): tests that run the bridge as another user stage their paths here.
  chmodSync(dir, 0o1777);
  const before = process.env.TMPDIR;
  process.env.TMPDIR = dir;
  return () => {
    process.umask(umaskBefore);
    if (before === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = before;
    rmSync(dir, { recursive: true, force: true });
  };
}
