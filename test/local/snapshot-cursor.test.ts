/** The FileSnapshotStore's scan cursor: what a scan hands out parses back to its parts, and nothing else parses. */
import { describe, expect, it } from "vitest";
import { formatCursor, parseCursor } from "../../shared/local/snapshot-cursor.js";

const storeId = "0123456789abcdef";
const cursor = formatCursor(storeId, "seg-000000000042-deadbeef.log", 17);

describe("snapshot scan cursor", () => {
  it("parses back to the store, segment and header position it was made of", () => {
    expect(cursor).toBe(`${storeId}.000000000042-deadbeef:17`);
    expect(parseCursor(cursor)).toEqual({ storeId, seq: 42, name: "seg-000000000042-deadbeef.log", position: 17 });
  });

  it.each([
    ["text before it", `x${cursor}`],
    ["text after it", `${cursor}x`],
    ["a longer store id", `ab${cursor}`],
    ["a position of ten digits", `${storeId}.000000000042-deadbeef:1234567890`],
  ])("refuses a cursor with %s", (_, text) => {
    expect(() => parseCursor(text)).toThrow(expect.objectContaining({ name: "SnapshotCursorError" }));
  });
});
