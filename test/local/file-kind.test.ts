/**
 * fileKindOf: what the refusal of a path that is not a regular file calls it (the settings check, the events file).
 * Stats are made up, as a block device or a socket cannot be counted on in a test's file system.
 */
import type { Stats } from "node:fs";
import { describe, expect, it } from "vitest";
import { fileKindOf } from "../../shared/local/atomic.js";

type Kind = "isDirectory" | "isCharacterDevice" | "isBlockDevice" | "isFIFO" | "isSocket" | "isSymbolicLink";

/** Stats of a file of `kind`: its own test answers true, every other one false. */
function statsOf(kind: Kind): Stats {
  const tests = ["isFile", "isDirectory", "isCharacterDevice", "isBlockDevice", "isFIFO", "isSocket", "isSymbolicLink"];
  return Object.fromEntries(tests.map((test) => [test, () => test === kind])) as unknown as Stats;
}

describe("fileKindOf", () => {
  it.each([
    ["isDirectory", "a directory"],
    ["isCharacterDevice", "a character device (such as /dev/null or a terminal)"],
    ["isBlockDevice", "a block device"],
    ["isFIFO", "a pipe"],
    ["isSocket", "a socket"],
    // What lstat says of a link: none of the kinds above.
    ["isSymbolicLink", "not a regular file"],
  ] as const)("names a path whose stats say %s as %s", (kind, words) => {
    expect(fileKindOf(statsOf(kind))).toBe(words);
  });
});
