/** A fresh temp directory for each test of a file: the set-up many file-backed tests otherwise write out. */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach } from "vitest";

/**
 * Makes a directory under the system temp dir (named `prefix` and a random suffix) before each test of the file, or of
 * the describe block, that calls this, hands it to `made`, and removes it with all it holds after the test. Called in
 * a describe block, it makes nothing for the file's other tests.
 *
 * Call it before the file's (or block's) own hooks: with vitest's default `sequence.hooks` ("stack"), beforeEach hooks
 * run in the order declared and afterEach hooks in reverse, so the own beforeEach sees the directory and the own
 * afterEach (stopping a child still writing there, say) runs before the directory goes (test/temp-dir.test.ts).
 *
 * @example
 * let dir: string;
 * tempDirPerTest("bridge-local-", (made) => (dir = made));
 */
export function tempDirPerTest(prefix: string, made: (dir: string) => void): void {
  let current: string | undefined;
  beforeEach(async () => {
    current = await mkdtemp(path.join(tmpdir(), prefix));
    made(current);
  });
  afterEach(async () => {
    if (current === undefined) return;
    await rm(current, { recursive: true, force: true });
    current = undefined;
  });
}
