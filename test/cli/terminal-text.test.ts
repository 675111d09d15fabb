import { describe, expect, it } from "vitest";
import { printable } from "../../shared/cli/terminal-text.js";

describe("printable", () => {
  it("shows a carriage return and a line feed as \\r and \\n, so a forged log line stays visible on the line it came in", () => {
    expect(printable("CA1\rerror forged\nline")).toBe(String.raw`CA1\rerror forged\nline`);
  });

  it("escapes the line and paragraph separators, which editors, log viewers and JSON-aware tools take for line breaks", () => {
    const forged = "CT1\u2028error cycle 7 failed\u2029done";
    expect(printable(forged)).toBe(String.raw`CT1\u2028error cycle 7 failed\u2029done`);
  });

  it("escapes every bidirectional control, not only the embeddings and overrides: marks and isolates reorder what is shown too", () => {
    // U+2067 (right-to-left isolate) shows `gnp.exe` as `exe.png` as U+202E does; U+061C, U+200E and U+200F move text as well.
    const spoofed = "\u2067gnp.exe\u2069 \u2066a\u2068b\u061cc\u200ed\u200fe";
    expect(printable(spoofed)).toBe(String.raw`\u2067gnp.exe\u2069 \u2066a\u2068b\u061cc\u200ed\u200fe`);
  });
});

describe("printable: the ends of the control ranges", () => {
  it("escapes each embedding and override, U+202A to U+202E: the last, RLO, is the one that shows `gnp.exe` as `exe.png`", () => {
    expect(printable("a\u202ab\u202bc\u202cd\u202de\u202ef")).toBe(String.raw`a\u202ab\u202bc\u202cd\u202de\u202ef`);
  });

  it("escapes NUL, a tab, DEL and the first and last C1 controls, and leaves the printable characters next to them as they are", () => {
    expect(printable("\u0000a\tb\u001fc d~\u007fe\u0080f\u009f\u00a0g")).toBe(String.raw`\u0000a\tb\u001fc d~\u007fe\u0080f\u009f` + "\u00a0g");
  });
});
