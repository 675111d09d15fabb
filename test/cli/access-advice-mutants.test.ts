/**
 * Access advice that hand mutation found unpinned: no way in is made up for a path gone since it was refused.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { deniedAccessOf, withDeniedAccess } from "../../shared/cli/access-advice.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "access-advice-mutants-"));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe("the way in to a path refused EACCES", () => {
  it("is not guessed for a path gone since the refusal: the problem is left as it was", () => {
    const gone = join(dir, "events.jsonl");
    expect(deniedAccessOf(gone, "read and write")).toBeUndefined();
    const problem = `is not readable and writable by this user (EACCES): ${gone}`;
    expect(withDeniedAccess(problem, gone, "EACCES", "read and write")).toBe(problem);
  });
});
