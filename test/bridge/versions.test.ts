/** Provider timestamps at the edges of RFC 3339 / ISO 8601, as `parseTime` and `changeTime` read them. */
import { describe, expect, it } from "vitest";
import type { Snapshot } from "../../shared/bridge/ports.js";
import { changeTime, lastModified, nextSequence, parseTime, storedSequence, untilLaterSecond, versionTime } from "../../shared/bridge/versions.js";

function snapshotAt(updatedAt: string, sequence?: number): Snapshot {
  return { key: "transaction:t1", hash: "h", object: { id: "t1" }, updatedAt, ...(sequence === undefined ? {} : { sequence }) };
}

describe("parseTime", () => {
  it("reads the forms of one instant alike: offsets, -00:00, +14:00, lowercase t and z, long fractions", () => {
    const at = Date.parse("2025-01-15T08:30:00.123Z");
    for (const form of [
      "2025-01-15T08:30:00.123Z",
      "2025-01-15t08:30:00.123z",
      "2025-01-15T08:30:00.123-00:00",
      "2025-01-15T22:30:00.123+14:00",
      "2025-01-15T12:30:00.123+0400",
      "2025-01-15T08:30:00.123456789Z",
      "2025-01-15 08:30:00.123",
    ]) {
      expect(parseTime(form), form).toBe(at);
    }
    expect(parseTime("2025-01-15T24:00:00Z")).toBe(Date.parse("2025-01-16T00:00:00Z"));
  });

  it("reads an offset of whole hours written without its minutes (ISO 8601 `+04`, PostgreSQL's timestamptz text) as that offset", () => {
    const at = Date.UTC(2025, 0, 15, 4, 30);
    for (const form of ["2025-01-15T08:30:00+04", "2025-01-15 08:30:00+04", "2025-01-15T08:30+04", "2025-01-15T01:30:00-03"]) {
      expect(parseTime(form), form).toBe(at);
    }
    expect(parseTime("2025-01-15 08:30:00.123456+04")).toBe(at + 123);
    // With the `T` too: Date.parse refuses this one as written (only the space form falls to its loose reading).
    expect(parseTime("2025-01-15T08:30:00.123+04")).toBe(at + 123);
    expect(changeTime("2025-01-15T08:30:00+04")).toBe(at);
    // Still no hour of any offset.
    expect(parseTime("2025-01-15T08:30:00+4")).toBeUndefined();
    expect(parseTime("2025-01-15T08:30:00+99")).toBeUndefined();
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
    for (const value of ["2025-02-29T10:00:00Z", "2025-02-30", "2025-04-31T00:00:00Z", "2100-02-29T00:00:00+01:00", "2025-06-31 12:00:00", "2025-09-31", "2025-11-31T08:00:00Z"]) {
      expect(parseTime(value), value).toBeUndefined();
    }
    expect(parseTime("2024-02-29T10:00:00Z")).toBe(Date.UTC(2024, 1, 29, 10));
    expect(parseTime("2000-02-29")).toBe(Date.UTC(2000, 1, 29));
    expect(parseTime("2025-12-31T23:59:59Z")).toBe(Date.UTC(2025, 11, 31, 23, 59, 59));
    expect(parseTime("2025-01-31T00:00:00+14:00")).toBe(Date.UTC(2025, 0, 30, 10));
  });

  it("reads a date-time without an offset as UTC, whatever the host's time zone", () => {
    const zone = process.env["TZ"];
    process.env["TZ"] = "Asia/Kolkata";
    try {
      expect(new Date(2025, 0, 15).getTimezoneOffset()).toBe(-330);
      expect(parseTime("2025-01-15T08:30:00")).toBe(Date.UTC(2025, 0, 15, 8, 30));
      expect(parseTime("2025-01-15 08:30")).toBe(Date.UTC(2025, 0, 15, 8, 30));
    } finally {
      if (zone === undefined) delete process.env["TZ"];
      else process.env["TZ"] = zone;
    }
  });

  it("takes forms Date.parse reads loosely (slashes, month names, a bare year past 9999) for no time", () => {
    for (const value of ["2025/01/15 08:30", "Jan 15 2025", "15 January 2025 08:30 GMT", "99999"]) {
      expect(Number.isNaN(Date.parse(value)), value).toBe(false);
      expect(parseTime(value), value).toBeUndefined();
    }
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

describe("lastModified", () => {
  it("takes updated_at over modified_date, and modified_date when updated_at is absent or a placeholder", () => {
    const updated = "2025-01-15T08:30:00Z";
    const modified = "2025-01-14T08:30:00Z";
    expect(lastModified({ updated_at: updated, modified_date: modified })).toBe(Date.parse(updated));
    expect(lastModified({ updated_at: "0001-01-01T00:00:00Z", modified_date: modified })).toBe(Date.parse(modified));
    expect(lastModified({ modified_date: modified })).toBe(Date.parse(modified));
    expect(lastModified({ updated_at: "1900-01-01" })).toBeUndefined();
  });
});

describe("versionTime", () => {
  const now = Date.parse("2025-01-15T08:30:00.000Z");

  it("is now when the version it replaces is older, or there is none", () => {
    expect(versionTime(now, undefined)).toBe("2025-01-15T08:30:00.000Z");
    expect(versionTime(now, snapshotAt("2025-01-15T08:29:59.999Z"))).toBe("2025-01-15T08:30:00.000Z");
  });

  it("is a millisecond after the version it replaces when the clock stalled or stepped back, so event ids tell them apart", () => {
    expect(versionTime(now, snapshotAt("2025-01-15T08:30:00.000Z"))).toBe("2025-01-15T08:30:00.001Z");
    expect(versionTime(now, snapshotAt("2025-01-15T09:00:00.000Z"))).toBe("2025-01-15T09:00:00.001Z");
  });
});

describe("sequences", () => {
  it("numbers the next event one past the snapshot's, counting a snapshot without one (or none) as 0", () => {
    expect(storedSequence(undefined)).toBe(0);
    expect(storedSequence(snapshotAt("2025-01-15T08:30:00.000Z"))).toBe(0);
    expect(storedSequence(snapshotAt("2025-01-15T08:30:00.000Z", 4))).toBe(4);
    expect(nextSequence(undefined)).toBe(1);
    expect(nextSequence(snapshotAt("2025-01-15T08:30:00.000Z", 4))).toBe(5);
  });
});

describe("untilLaterSecond", () => {
  it("waits to 600 ms into the next whole second", () => {
    expect(untilLaterSecond(1_700_000_000_250)).toBe(1350);
    expect(untilLaterSecond(1_700_000_000_000)).toBe(1600);
    expect(untilLaterSecond(1_700_000_000_999)).toBe(601);
    // A clock before 1970 (a fake's) too: `%` keeps the sign of a negative time, the wait still ends 600 ms into a second.
    expect(untilLaterSecond(-250)).toBe(850);
  });
});
