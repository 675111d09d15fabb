/** SnapshotIndex: the live and dead bytes compaction decides by, over segments placed and dropped. */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SnapshotIndex } from "../../shared/local/snapshot-index.js";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "bridge-snapshot-index-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("SnapshotIndex", () => {
  it("counts each line's bytes with its newline, superseded ones as dead until the segment holding them is dropped", () => {
    const index = new SnapshotIndex(dir);
    const place = (seq: number, entries: [string, number, number][]) => {
      const segment = index.newSegment(`seg-${String(seq).padStart(12, "0")}-deadbeef.log`, seq);
      index.placeSegment(segment, entries, 50);
      return segment;
    };
    const first = place(1, [["card:a", 0, 10], ["card:b", 11, 20]]);
    expect([index.live, index.dead]).toEqual([32, 0]);
    place(2, [["card:a", 0, 5]]);
    expect([index.live, index.dead, first.liveBytes, first.bodyBytes]).toEqual([27, 11, 21, 32]);
    // The last of the first segment's lines superseded: it is dropped, and its dead bytes go with it.
    place(3, [["card:b", 0, 7]]);
    expect([index.live, index.dead, index.count]).toEqual([14, 0, 2]);
  });

  it("locates the keys with a snapshot, also after keys without one", () => {
    const index = new SnapshotIndex(dir);
    const segment = index.newSegment("seg-000000000001-deadbeef.log", 1);
    index.placeSegment(segment, [["card:a", 0, 10]], 50);
    expect(index.locate(["card:missing", "card:a"])).toEqual(new Map([[segment.id, [{ key: "card:a", offset: 50, length: 10 }]]]));
  });
});
