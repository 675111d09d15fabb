/** state-access.ts by itself: what it makes of the state directory's mode, and of a failure that is not about it. */
import { chmodSync, statSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { recheckStateDirAccess, restrictOrRefuse, restrictStateDir } from "../../shared/cli/state-access.js";
import { tempDirPerTest } from "../temp-dir.js";

let dir: string;
tempDirPerTest("bridge-state-access-", (made) => (dir = made));

const modeOf = (path: string) => statSync(path).mode & 0o7777;

describe("restrictOrRefuse", () => {
  it("throws a failure other than an exposed path as it is, not as a BRIDGE_STATE_DIR problem", () => {
    const failure = Object.assign(new Error("I/O error"), { code: "EIO" });
    const wording = { refused: () => "refused", narrowed: () => "narrowed" };
    expect(() =>
      restrictOrRefuse(
        () => {
          throw failure;
        },
        wording,
        () => undefined,
      ),
    ).toThrow(failure);
  });
});

describe("restrictStateDir", () => {
  it("names the mode it left, the owner's bits as they were, when the owner could not write it either", () => {
    chmodSync(dir, 0o555);
    const warnings: string[] = [];
    try {
      restrictStateDir(dir, (text) => warnings.push(text));
      expect(modeOf(dir)).toBe(0o500);
    } finally {
      chmodSync(dir, 0o700);
    }
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`${dir} could be entered and read by its group or others (mode 0555): made it private to its owner (0500)`);
  });
});

describe("recheckStateDirAccess", () => {
  it("makes a directory only others may enter private again, with a warning: not only its group's access counts", () => {
    chmodSync(dir, 0o705);
    const warnings: string[] = [];
    recheckStateDirAccess(dir, statSync(dir), (text) => warnings.push(text));
    expect(modeOf(dir)).toBe(0o700);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`${dir} could be entered and read by its group or others (mode 0705)`);
  });
});
