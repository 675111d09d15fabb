/** Provider timestamps at the edges of RFC 3339 / ISO 8601, as `parseTime` and `changeTime` read them. */
import { describe, expect, it } from "vitest";
import { changeTime, parseTime } from "../../shared/bridge/versions.js";

describe("parseTime", () => {
  it("reads the forms of one instant alike: offsets, -00:00, +14:00, lowercase t and z, long fractions", () => {
    const at = Date.parse("2025-01-15T08:30:00.123Z");
    for (const form of [
      "2025-01-15T08:30:00.123Z",
      "2025-01-15t08:30:00.123z",
      "2025-01-15T08:30:00.123-00:00",
      "2025-01-15T22:30:00.123+14:00",
      "2025-01-15T08:30:00.123456789Z",
      "2025-01-15 08:30:00.123",
    ]) {
      expect(parseTime(form), form).toBe(at);
    }
    expect(parseTime("2025-01-15T24:00:00Z")).toBe(Date.parse("2025-01-16T00:00:00Z"));
  });

  it("reads a leap second (23:59:60, valid RFC 3339) as the last millisecond of its minute, not as no time", () => {
    expect(parseTime("2016-12-31T23:59:60Z")).toBe(Date.parse("2016-12-31T23:59:59.999Z"));
    expect(parseTime("2016-12-31T23:59:60.5Z")).toBe(Date.parse("2016-12-31T23:59:59.999Z"));
    expect(parseTime("2017-01-01T05:29:60+05:30")).toBe(Date.parse("2016-12-31T23:59:59.999Z"));
    expect(parseTime("2016-12-31 23:59:60")).toBe(Date.parse("2016-12-31T23:59:59.999Z"));
    expect(changeTime("2016-12-31T23:59:60Z")).toBe(Date.parse("2016-12-31T23:59:59.999Z"));
    // Not a second of any minute.
    expect(parseTime("2016-12-31T23:59:61Z")).toBeUndefined();
  });

  it("takes a day its month does not have (30 February, 31 April) for no time, not for a day of the next month", () => {
    for (const value of ["2025-02-29T10:00:00Z", "2025-02-30", "2025-04-31T00:00:00Z", "2100-02-29T00:00:00+01:00", "2025-06-31 12:00:00"]) {
      expect(parseTime(value), value).toBeUndefined();
    }
    expect(parseTime("2024-02-29T10:00:00Z")).toBe(Date.UTC(2024, 1, 29, 10));
    expect(parseTime("2000-02-29")).toBe(Date.UTC(2000, 1, 29));
    expect(parseTime("2025-12-31T23:59:59Z")).toBe(Date.UTC(2025, 11, 31, 23, 59, 59));
    expect(parseTime("2025-01-31T00:00:00+14:00")).toBe(Date.UTC(2025, 0, 30, 10));
  });
});

describe("parseTime and changeTime bounds", () => {
  it("takes no time outside years 0000-9999, also where an offset moves a time written inside them across the edge", () => {
    expect(parseTime("0000-01-01T00:00:00Z")).toBe(Date.parse("0000-01-01T00:00:00Z"));
    expect(parseTime("9999-12-31T23:59:59.999Z")).toBe(Date.parse("9999-12-31T23:59:59.999Z"));
    expect(parseTime("9999-12-31T23:30:00-01:00")).toBeUndefined();
    expect(parseTime("0000-01-01T00:30:00+01:00")).toBeUndefined();
  });

  it("takes provider times from 2000 up to the start of year 9999 as change times, earlier and later ones for placeholders", () => {
    expect(changeTime("2000-01-01T00:00:00.000Z")).toBe(Date.UTC(2000, 0, 1));
    expect(changeTime("1999-12-31T23:59:59.999Z")).toBeUndefined();
    expect(changeTime("9998-12-31T23:59:59.999Z")).toBe(Date.UTC(9999, 0, 1) - 1);
    expect(changeTime("9999-01-01T00:00:00.000Z")).toBeUndefined();
  });
});
