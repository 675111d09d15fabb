/** SnapshotIndex: the live and dead bytes compaction decides by, over segments placed and dropped. */
import { existsSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { SnapshotIndex, type Segment } from "../../shared/local/snapshot-index.js";
import { tempDirPerTest } from "../temp-dir.js";

let dir: string;
tempDirPerTest("bridge-snapshot-index-", (made) => (dir = made));

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

  it("counts a line its own segment supersedes as dead, written or found, and drops the segment once a later one supersedes the rest", () => {
    // A segment lists one slot twice when two keys of one fingerprint are written together, or a header names a key twice.
    const index = new SnapshotIndex(dir);
    const names = ["seg-000000000001-deadbeef.log", "seg-000000000002-deadbeef.log"];
    for (const name of names) writeFileSync(path.join(dir, name), "");
    const [written, found] = names.map((name, i) => index.newSegment(name, i + 1)) as [Segment, Segment];
    index.placeSegment(written, [["card:a", 0, 10], ["card:a", 11, 20]], 50);
    expect([index.size, index.live, index.dead, written.liveBytes, written.bodyBytes]).toEqual([1, 21, 11, 21, 32]);
    index.addFound(found, [["card:b", 0, 4], ["card:b", 5, 6]], 50);
    expect([index.size, index.live, index.dead, found.liveBytes, found.bodyBytes]).toEqual([2, 28, 16, 7, 12]);
    const later = index.newSegment("seg-000000000003-deadbeef.log", 3);
    index.placeSegment(later, [["card:a", 0, 3]], 50);
    expect([index.count, index.live, index.dead, existsSync(index.fileOf(written))]).toEqual([2, 11, 5, false]);
  });

  it("locates the keys with a snapshot, also after keys without one", () => {
    const index = new SnapshotIndex(dir);
    const segment = index.newSegment("seg-000000000001-deadbeef.log", 1);
    index.placeSegment(segment, [["card:a", 0, 10]], 50);
    expect(index.locate(["card:missing", "card:a"])).toEqual(new Map([[segment.id, [{ key: "card:a", offset: 50, length: 10 }]]]));
  });

  it("keeps a segment found wholly superseded for the caller to drop, and counts its bytes dead once, dropped", () => {
    // What a crash between a compaction's rename and its deletes leaves: an old segment whose lines a newer one holds.
    const index = new SnapshotIndex(dir);
    const names = ["seg-000000000001-deadbeef.log", "seg-000000000002-deadbeef.log"];
    for (const name of names) writeFileSync(path.join(dir, name), "");
    const [old, compacted] = names.map((name, i) => index.newSegment(name, i + 1)) as [Segment, Segment];
    index.addFound(old, [["card:a", 0, 10]], 50);
    index.addFound(compacted, [["card:a", 0, 10]], 50);
    expect([index.count, index.live, index.dead, existsSync(index.fileOf(old))]).toEqual([2, 11, 11, true]);
    index.drop(old);
    expect([index.count, index.live, index.dead, existsSync(index.fileOf(old))]).toEqual([1, 11, 0, false]);
  });

  it("counts from nothing again once cleared: a reload finds the same segments and the same live and dead bytes", () => {
    // What reload does when another process wrote: forget everything, then add the segments found on disk again.
    const index = new SnapshotIndex(dir);
    const names = ["seg-000000000001-deadbeef.log", "seg-000000000002-deadbeef.log"];
    const load = () => {
      const [older, newer] = names.map((name, i) => index.newSegment(name, i + 1)) as [Segment, Segment];
      index.addFound(older, [["card:a", 0, 10], ["card:b", 11, 20]], 50);
      index.addFound(newer, [["card:a", 0, 5]], 50);
      return [index.count, index.size, index.live, index.dead];
    };
    const first = load();
    index.clear();
    expect([index.count, index.size, index.live, index.dead]).toEqual([0, 0, 0, 0]);
    const again = load();
    expect(first).toEqual([2, 2, 27, 11]);
    expect(again).toEqual(first);
  });

  it("locates the keys of one segment together, each where its own line is", () => {
    const index = new SnapshotIndex(dir);
    const [first, second] = [1, 2].map((seq) => index.newSegment(`seg-00000000000${seq}-deadbeef.log`, seq)) as [Segment, Segment];
    index.placeSegment(first, [["card:a", 0, 10], ["card:b", 11, 20]], 50);
    index.placeSegment(second, [["card:c", 0, 5]], 40);
    expect(index.locate(["card:a", "card:c", "card:b"])).toEqual(
      new Map([
        [first.id, [{ key: "card:a", offset: 50, length: 10 }, { key: "card:b", offset: 61, length: 20 }]],
        [second.id, [{ key: "card:c", offset: 40, length: 5 }]],
      ]),
    );
    expect([index.size, index.count]).toEqual([3, 2]);
  });

  it("tells a key's current entry from the one a segment's header lists at another place or in another segment", () => {
    const index = new SnapshotIndex(dir);
    const [old, current] = [1, 2].map((seq) => index.newSegment(`seg-00000000000${seq}-deadbeef.log`, seq)) as [Segment, Segment];
    // Found on disk, so the superseded segment stays held: a walk still meets its header's entry for card:a.
    index.addFound(old, [["card:a", 0, 10], ["card:b", 11, 20]], 50);
    index.addFound(current, [["card:a", 0, 5]], 50);
    expect(index.liveAt(current, { bodyStart: 50 }, "card:a", 0)).toEqual({ segment: current.id, offset: 50, length: 5 });
    expect(index.liveAt(old, { bodyStart: 50 }, "card:a", 0)).toBeUndefined();
    // The offset a header lists counts from its own body's start.
    expect(index.liveAt(old, { bodyStart: 50 }, "card:b", 11)).toEqual({ segment: old.id, offset: 61, length: 20 });
    expect(index.liveAt(old, { bodyStart: 50 }, "card:b", 61)).toBeUndefined();
  });

  it("holds two segments of one sequence number apart, as a race without the lock leaves them", () => {
    const index = new SnapshotIndex(dir);
    const [first, second] = ["aaaaaaaa", "bbbbbbbb"].map((tag) => index.newSegment(`seg-000000000001-${tag}.log`, 1)) as [Segment, Segment];
    index.addFound(first, [["card:a", 0, 10]], 50);
    index.addFound(second, [["card:b", 0, 5]], 40);
    expect([index.count, index.segment(first.id), index.segment(second.id)]).toEqual([2, first, second]);
    expect(index.locate(["card:a", "card:b"])).toEqual(
      new Map([
        [first.id, [{ key: "card:a", offset: 50, length: 10 }]],
        [second.id, [{ key: "card:b", offset: 40, length: 5 }]],
      ]),
    );
  });

  it("throws CorruptStateError naming the snapshots directory for a segment id it does not hold", () => {
    const index = new SnapshotIndex(dir);
    const segment = index.newSegment("seg-000000000001-deadbeef.log", 1);
    index.placeSegment(segment, [["card:a", 0, 10]], 50);
    expect(index.segment(segment.id)).toBe(segment);
    expect(() => index.segment(segment.id + 1)).toThrow(expect.objectContaining({ name: "CorruptStateError", message: "Snapshot index names a segment that is gone", file: dir }));
  });
});
