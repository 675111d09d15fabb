/**
 * Access advice that hand mutation found unpinned: no way in is made up for a path gone since it was refused; a fix
 * pastes into a shell as the very path; the chmod is offered by the user permission checks use.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { deniedAccessOf, ownersChmod, shellWord, withDeniedAccess } from "../../shared/cli/access-advice.js";
import { tempDirPerTest } from "../temp-dir.js";

let dir: string;
tempDirPerTest("access-advice-mutants-", (made) => (dir = made));

describe("the way in to a path refused EACCES", () => {
  it("is not guessed for a path gone since the refusal: the problem is left as it was", () => {
    const gone = join(dir, "events.jsonl");
    expect(deniedAccessOf(gone, "read and write")).toBeUndefined();
    const problem = `is not readable and writable by this user (EACCES): ${gone}`;
    expect(withDeniedAccess(problem, gone, "EACCES", "read and write")).toBe(problem);
  });
});

describe("a path in a fix to paste into a shell", () => {
  it.runIf(process.platform !== "win32")("is read back by sh as the very path: every single quote escaped, no $ expanded, no * globbed", () => {
    // mutants: escaping only the first quote, and leaving $ or * bare, went unseen; the pasted chmod then named another path.
    for (const path of ["/home/o'brien/it's state", "/srv/$HOME/state", "/*", "/srv/my state"]) {
      const echoed = spawnSync("sh", ["-c", `printf %s ${shellWord(path)}`], { encoding: "utf8", env: { HOME: "/elsewhere", PATH: process.env["PATH"] ?? "" } });
      expect(echoed.stdout, path).toBe(path);
    }
  });
});

describe("the chmod a path's owner is offered", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it.runIf(typeof process.geteuid === "function")("goes to the effective user, whose rights permission checks use, not the real one", () => {
    // mutant: ownership judged by the real uid went unseen; where the effective uid differs (setuid), the owner got no chmod.
    const euid = (process.getuid?.() ?? 0) + 4242;
    vi.spyOn(process, "geteuid").mockReturnValue(euid);
    expect(ownersChmod("/srv/state", { mode: 0o040500, uid: euid }, "rwx")).toBe("run `chmod u+rwx /srv/state`");
    expect(ownersChmod("/srv/state", { mode: 0o040500, uid: process.getuid?.() ?? 0 }, "rwx")).toBeUndefined();
  });
});
