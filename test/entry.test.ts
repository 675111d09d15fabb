import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { isEntry } from "../shared/entry.js";

describe("isEntry", () => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "entry-")));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  // A checkout whose path holds # and %, and a symbolic link to it.
  mkdirSync(join(dir, "c# 100%"));
  const script = join(dir, "c# 100%", "script.ts");
  writeFileSync(script, "");
  symlinkSync(join(dir, "c# 100%"), join(dir, "link"));
  const moduleUrl = pathToFileURL(script).href;

  it("is true for the script run, its path holding # or %, also when reached through a symbolic link", () => {
    expect(isEntry(script, moduleUrl)).toBe(true);
    expect(isEntry(join(dir, "link", "script.ts"), moduleUrl)).toBe(true);
  });

  it("is false for another script, one that does not exist, or none (a REPL)", () => {
    writeFileSync(join(dir, "other.ts"), "");
    expect(isEntry(join(dir, "other.ts"), moduleUrl)).toBe(false);
    expect(isEntry(join(dir, "missing.ts"), moduleUrl)).toBe(false);
    expect(isEntry(undefined, moduleUrl)).toBe(false);
  });
});
