/**
 * Where each key's current snapshot line is, over the FileSnapshotStore's segments: the off-heap {@link KeyIndex} from
 * key to place, the segments it points into, and their live and superseded (dead) bytes, which compaction chooses by.
 * It follows the segments the store writes and loads, and deletes a segment's file once none of its lines is current.
 */
import path from "node:path";
import type { SnapshotKey } from "../bridge/ports.js";
import { unlinkQuietly } from "./atomic.js";
import { CorruptStateError } from "./errors.js";
import { KeyIndex } from "./key-index.js";
import type { HeaderEntry } from "./snapshot-segment.js";

export interface Segment {
  /** In-memory id the key index refers to (file sequence numbers may repeat after a race without the lock). */
  readonly id: number;
  readonly name: string;
  readonly seq: number;
  /** Bytes of the lines of this segment still current in the index, newlines included; 0 when none is. */
  liveBytes: number;
  /** Bytes of all its lines. The header is left out: a header entry is shorter than the line it lists. */
  bodyBytes: number;
}

/** The index of the segments in `dir` (the snapshots directory); empty until the store adds the segments it finds. */
export class SnapshotIndex {
  private index = new KeyIndex();
  /** Segments by in-memory id. */
  private readonly segments = new Map<number, Segment>();
  /** Sums of the segments' `bodyBytes` and `liveBytes`: their difference is the dead bytes compaction can free. */
  private bodyBytes = 0;
  private liveBytes = 0;
  private nextId = 1;

  constructor(private readonly dir: string) {}

  /** Number of keys with a current snapshot. */
  get size(): number {
    return this.index.size;
  }

  /** Bytes the key index takes (off the JS heap). */
  get bytes(): number {
    return this.index.bytes;
  }

  /** Bytes of current lines, newlines included. */
  get live(): number {
    return this.liveBytes;
  }

  /** Bytes of superseded lines still on disk: what compaction can free. */
  get dead(): number {
    return this.bodyBytes - this.liveBytes;
  }

  /** Number of segments held. */
  get count(): number {
    return this.segments.size;
  }

  /** The segments held, in no particular order. */
  all(): IterableIterator<Segment> {
    return this.segments.values();
  }

  /** Forgets every segment and key (not the files): the store then loads its directory again. */
  clear(): void {
    this.index = new KeyIndex();
    this.segments.clear();
    this.bodyBytes = 0;
    this.liveBytes = 0;
  }

  /** Where the current lines of `keys` are, by segment id; a key without a snapshot is left out. */
  locate(keys: readonly SnapshotKey[]): Map<number, { key: SnapshotKey; offset: number; length: number }[]> {
    const bySegment = new Map<number, { key: SnapshotKey; offset: number; length: number }[]>();
    for (const key of keys) {
      const location = this.index.get(key);
      if (!location) continue;
      let list = bySegment.get(location.segment);
      if (!list) bySegment.set(location.segment, (list = []));
      list.push({ key, offset: location.offset, length: location.length });
    }
    return bySegment;
  }

  /**
   * The segment of in-memory id `id`, as {@link locate} names it.
   * @throws CorruptStateError when the index holds no such segment.
   */
  segment(id: number): Segment {
    const segment = this.segments.get(id);
    if (!segment) throw new CorruptStateError("Snapshot index names a segment that is gone", { file: this.dir });
    return segment;
  }

  /**
   * Where `key`'s current entry is, when it is the one a header of `segment` lists at `offset` (from the body start);
   * undefined for a superseded entry, or a fingerprint collision's other key.
   */
  liveAt(segment: Segment, header: { bodyStart: number }, key: string, offset: number) {
    const at = this.index.get(key);
    return at?.segment === segment.id && at.offset === header.bodyStart + offset ? at : undefined;
  }

  newSegment(name: string, seq: number): Segment {
    return { id: this.nextId++, name, seq, liveBytes: 0, bodyBytes: 0 };
  }

  fileOf(segment: Segment): string {
    return path.join(this.dir, segment.name);
  }

  /**
   * Points the index at the entries of a segment just made durable, whose body starts at `bodyStart`, and deletes the
   * segments that leaves without a current entry.
   */
  placeSegment(segment: Segment, entries: readonly HeaderEntry[], bodyStart: number): void {
    this.segments.set(segment.id, segment);
    const emptied: Segment[] = [];
    for (const [key, offset, length] of entries) {
      const previous = this.place(segment, key, bodyStart + offset, length);
      if (previous?.liveBytes === 0) emptied.push(previous);
    }
    // The new segment is durable, so the ones it wholly supersedes can go.
    for (const old of emptied) this.drop(old);
  }

  /**
   * Points the index at the entries of a segment found on disk, whose body starts at `bodyStart`; segments are added
   * in the order they were written, and those this leaves without a current entry are kept for the caller to drop.
   */
  addFound(segment: Segment, entries: readonly HeaderEntry[], bodyStart: number): void {
    this.segments.set(segment.id, segment);
    for (const [key, offset, length] of entries) this.place(segment, key, bodyStart + offset, length);
  }

  /** Points `key` at a line of `segment`; returns the segment whose entry that supersedes, if any. */
  private place(segment: Segment, key: string, offset: number, length: number): Segment | undefined {
    segment.liveBytes += length + 1;
    segment.bodyBytes += length + 1;
    this.liveBytes += length + 1;
    this.bodyBytes += length + 1;
    const replaced = this.index.set(key, { segment: segment.id, offset, length });
    const previous = replaced && this.segments.get(replaced.segment);
    if (!replaced || !previous) return undefined;
    previous.liveBytes -= replaced.length + 1;
    this.liveBytes -= replaced.length + 1;
    return previous;
  }

  /** Forgets a segment without a current entry and deletes its file. */
  drop(segment: Segment): void {
    this.segments.delete(segment.id);
    this.bodyBytes -= segment.bodyBytes;
    unlinkQuietly(this.fileOf(segment));
  }
}
