import { describe, expect, it } from "vitest";
import { durationRangeProblem, formatDuration, parseDuration } from "../../shared/cli/duration.js";
import { UsageError } from "../../shared/cli/errors.js";

describe("parseDuration", () => {
  it.each([
    ["500ms", 500],
    ["30s", 30_000],
    ["5m", 300_000],
    ["1h", 3_600_000],
    ["1m30s", 90_000],
    ["1.5s", 1_500],
    // Zero is zero in any unit; a minus sign makes a negative duration, which the range checks name.
    ["0", 0],
    ["0.0", 0],
    ["-5s", -5_000],
  ])("reads %s as %i ms", (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(["", "30", "5 minutes", "m5", "10x", "5m-", "-", "--5s"])("rejects %j with a usage error", (text) => {
    expect(() => parseDuration(text)).toThrow(UsageError);
  });

  it.each([
    ["1h30m", 5_400_000],
    ["1h30m15s500ms", 5_415_500],
    ["1h15s", 3_615_000],
  ])("reads %s, its units each once and largest first, as %i ms", (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  // 1h1h was read as 2h, and 30s1h as 1h30s: more likely a slip than a way to write either.
  it.each([
    ["1h1h", 'invalid duration "1h1h": h is given twice; give each unit once, largest first (e.g. 1h30m)'],
    ["5m30s5m", 'invalid duration "5m30s5m": m is given twice; give each unit once, largest first (e.g. 1h30m)'],
    ["30s1h", 'invalid duration "30s1h": h comes after s; give each unit once, largest first (e.g. 1h30m)'],
    ["500ms1s", 'invalid duration "500ms1s": s comes after ms; give each unit once, largest first (e.g. 1h30m)'],
  ])("refuses %j naming the unit given twice or out of order", (text, message) => {
    expect(() => parseDuration(text)).toThrow(UsageError);
    expect(() => parseDuration(text)).toThrow(message);
  });

  // `30d` or `5min` is a number with a unit, only not one read here: "use a number with a unit" sent the person round
  // in a circle. The units are named instead (the option quotes the value before, so no part of it is echoed here).
  it.each(["30d", "5min", "1w", "2M", "1h30x", "10x"])("refuses %j naming the units it takes", (text) => {
    expect(() => parseDuration(text)).toThrow(new UsageError(`invalid duration "${text}": a unit other than ms, s, m or h; e.g. 30s, 5m, 1h, 1m30s`));
  });

  it("keeps the general wording for text that is no number with units at all", () => {
    for (const text of ["often", "PT1M", "m5", "5 minutes"]) {
      expect(() => parseDuration(text)).toThrow(new UsageError(`invalid duration "${text}": use a number with a unit, e.g. 30s, 5m, 1h, 1m30s`));
    }
  });

  it("reads a decimal without a unit as one lacking its unit, not as a malformed duration", () => {
    expect(() => parseDuration("1.5")).toThrow(new UsageError('invalid duration "1.5": no unit; write e.g. 1.5s or 1.5m'));
  });

  it("reads a negative number without a unit as a negative duration (negative in any unit), for the range check to refuse", () => {
    for (const text of ["-1", "-5", "-0.5", " -300 "]) expect(parseDuration(text)).toBeLessThan(0);
  });

  it("rounds to whole milliseconds, which is what the timers take", () => {
    expect(parseDuration("1.5ms")).toBe(2);
    expect(parseDuration("0.0004s")).toBe(0);
  });

  it("reads a duration with blanks around it (a quoted value), and quotes the value as given when refusing it", () => {
    expect(parseDuration(" 30s ")).toBe(30_000);
    expect(() => parseDuration(" 300 ")).toThrow(new UsageError('invalid duration " 300 ": no unit; write e.g. 300s or 300m'));
  });
});

describe("durationRangeProblem", () => {
  it.each([
    [3_600_000, "must be at least 1h"],
    [120_000, "must be at least 2m"],
    [90_000, "must be at least 1m30s"],
    [1_500, "must be at least 1s500ms"],
  ])("names a minimum of %i ms as formatDuration writes it", (minMs, problem) => {
    expect(durationRangeProblem(minMs - 1, minMs)).toBe(problem);
    expect(durationRangeProblem(minMs, minMs)).toBeUndefined();
  });
});

describe("formatDuration", () => {
  it.each([
    [3_600_000, "1h"],
    [90_000, "1m30s"],
    [3_600_500, "1h500ms"],
    [1_500, "1s500ms"],
    [600_000, "10m"],
    [500, "500ms"],
    [0, "0s"],
  ])("writes %i ms as %s, each unit once and largest first, nothing rounded", (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
    expect(parseDuration(text)).toBe(ms);
  });
});
