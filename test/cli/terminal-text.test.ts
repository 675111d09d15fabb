import { describe, expect, it } from "vitest";
import { printable } from "../../shared/cli/terminal-text.js";

describe("printable", () => {
  it("escapes the line and paragraph separators, which editors, log viewers and JSON-aware tools take for line breaks", () => {
    const forged = "CT1\u2028error cycle 7 failed\u2029done";
    expect(printable(forged)).toBe(String.raw`CT1\u2028error cycle 7 failed\u2029done`);
  });
});
