import { describe, expect, it } from "vitest";
import { looseAccessProblem } from "../../shared/cli/access-advice.js";

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
