import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { deniedAccessOf, looseAccessProblem, shellWord, uncheckedProblem } from "../../shared/cli/access-advice.js";

describe("looseAccessProblem", () => {
  const dirStats = (mode: number, uid: number) => ({ mode: 0o040000 | mode, uid });
  const replaced = "another local user could replace the tokens, binding or snapshots there, so the bridge will not use it";

  it("accepts what this user owns and alone may write, and what root owns (root may replace anything anyway)", () => {
    expect(looseAccessProblem("/s", dirStats(0o700, 1000), 1000, true)).toBeUndefined();
    expect(looseAccessProblem("/s", dirStats(0o755, 1000), 1000, true)).toBeUndefined();
    expect(looseAccessProblem("/s", dirStats(0o755, 0), 1000, true)).toBeUndefined();
    expect(looseAccessProblem("/s/tokens.json", { mode: 0o100644, uid: 0 }, 1000, false)).toBeUndefined();
  });

  it("names an owner other than this user, with the uids and the fix", () => {
    expect(looseAccessProblem("/s", dirStats(0o700, 1001), 1000, true)).toBe(
      `is owned by uid 1001, not by you (uid 1000): /s; ${replaced}: run \`sudo chown -R 1000 /s\` (or use a state directory of your own)`,
    );
    // Root too is refused a directory another user owns: that user could swap the tokens root's run then uses.
    expect(looseAccessProblem("/s", dirStats(0o700, 1000), 0, true)).toMatch(/^is owned by uid 1000, not by you \(uid 0\)/);
  });

  it("names both faults at once, and quotes a path a shell would split", () => {
    expect(looseAccessProblem("/my state", dirStats(0o1777, 1001), 1000, true)).toBe(
      "is owned by uid 1001, not by you (uid 1000) and is writable by its group and others (mode 1777; the sticky bit still lets them create files in it): " +
        `/my state; ${replaced}: run \`sudo chown -R 1000 '/my state' && chmod 700 '/my state'\` (or use a state directory of your own)`,
    );
    // A sticky bit says nothing of a file: it names the mode only.
    expect(looseAccessProblem("/s/tokens.json", { mode: 0o101620, uid: 1000 }, 1000, false)).toBe(
      "is writable by its group (mode 1620): /s/tokens.json; another local user could rewrite it, so the bridge will not use it: run `chmod 600 /s/tokens.json`",
    );
  });
});

describe("deniedAccessOf and its words", () => {
  it.runIf(process.geteuid?.() === 0)("names a directory's special bits, the need of all of rwx and a recursive chown when another user owns it", () => {
    const dir = mkdtempSync(join(tmpdir(), "access-advice-"));
    try {
      // Root enters every directory: the path's own mode and owner are what is left to name.
      const shared = join(dir, "shared");
      mkdirSync(shared);
      chmodSync(shared, 0o1750);
      chownSync(shared, 1001, 1001);
      expect(deniedAccessOf(shared, "read")).toBe(
        `this user may not read and write ${shared} (mode 1750, owned by uid 1001); run as its owner, or give it to this user (\`sudo chown -R 0 ${shared}\`)`,
      );
      const file = join(dir, "events.jsonl");
      writeFileSync(file, "");
      chmodSync(file, 0o200);
      chownSync(file, 1001, 1001);
      expect(deniedAccessOf(file, "read and write")).toBe(
        `this user may not read and write ${file} (mode 0200, owned by uid 1001); run as its owner, or give it to this user (\`sudo chown 0 ${file}\`)`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("names an error without a code as an error, and adds nothing for a code other than EACCES", () => {
    expect(uncheckedProblem("/s", new Error("odd"))).toBe("cannot be checked by this user (error): /s");
    expect(uncheckedProblem("/s", Object.assign(new Error("io"), { code: "EIO" }))).toBe("cannot be checked by this user (EIO): /s");
  });

  // A fault of the path itself, which no user could check either: "by this user" sent the person after permissions.
  it("says what a link loop or a name too long means, as a fault of the path, not of this user's rights", () => {
    expect(uncheckedProblem("/s", Object.assign(new Error("loop"), { code: "ELOOP" }))).toBe("cannot be checked (ELOOP: a symbolic link on the way leads back to itself, or too many links are chained): /s");
    expect(uncheckedProblem("/s", Object.assign(new Error("long"), { code: "ENAMETOOLONG" }))).toBe(
      "cannot be checked (ENAMETOOLONG: the path, or a name in it, is longer than the file system takes): /s",
    );
  });

  it("quotes a path with a single quote as one shell word, closing, escaping and reopening the quote", () => {
    expect(shellWord("/home/o'brien/state")).toBe("'/home/o'\\''brien/state'");
  });
});
