/**
 * The segment file format of the FileSnapshotStore: a header line (`{"v":1,"entries":[[key, offset, length], ...]}`,
 * offsets from the start of the body), then one JSON line per snapshot. Segments are named
 * `seg-<sequence>-<tag>.log`, the sequence (12 digits) giving the order they were written in. Everything here reads or
 * writes one segment; which segments and entries are current is the store's.
 */
import { randomBytes } from "node:crypto";
import { closeSync, openSync, readSync } from "node:fs";
import type { Snapshot, SnapshotKey } from "../bridge/ports.js";
import { isSnapshotSequence } from "../bridge/validate.js";
import { jsonOf, jsonString } from "../bridge/hash.js";
import type { ScratchBuffer } from "./atomic.js";
import { CorruptStateError } from "./errors.js";
import { sameFingerprint } from "./key-index.js";

/** A segment file's name; the first group is its sequence number. */
export const SEGMENT_PATTERN = /^seg-(\d{12})-[0-9a-f]{8}\.log$/;

/** One header entry: key, byte offset (from the start of the body) and length of its line, newline excluded. */
export type HeaderEntry = [key: string, offset: number, length: number];

/** The name of a new segment of sequence number `seq`; the random tag keeps two writers racing without the lock apart. */
export function segmentName(seq: number): string {
  return `seg-${String(seq).padStart(12, "0")}-${randomBytes(4).toString("hex")}.log`;
}

/** The header line of a segment whose body's lines `entries` lists. */
export function encodeHeader(entries: readonly HeaderEntry[]): Buffer {
  return Buffer.from(JSON.stringify({ v: 1, entries }) + "\n", "utf8");
}

/** Bytes one read of a segment header takes at most: most headers (a page's is about 12 KB) come in the first. */
const HEADER_READ_BYTES = 64 * 1024;

/**
 * The buffer headers are read into, reused (and kept when grown): opening a store reads one header per segment, and a
 * zero-filled 64 KiB buffer each added tens of megabytes of garbage to opening a store of a thousand segments.
 */
let headerBuffer = Buffer.allocUnsafe(HEADER_READ_BYTES);

/** Whether `value` is a whole number of bytes from 0 to `most`. */
function isByteCount(value: unknown, most = Number.MAX_SAFE_INTEGER): boolean {
  return Number.isSafeInteger(value) && (value as number) >= 0 && (value as number) <= most;
}

/** The longest line a header may list: the key index keeps a line's length in 32 bits. */
const MAX_LINE_BYTES = 2 ** 32 - 1;

/**
 * Whether `entry` is a [key, offset, length] as this version writes one. Anything else (a damaged or foreign file) would
 * send reads astray, or count the segment empty and delete it on load.
 */
function isHeaderEntry(entry: unknown): entry is HeaderEntry {
  return Array.isArray(entry) && entry.length === 3 && typeof entry[0] === "string" && isByteCount(entry[1]) && isByteCount(entry[2], MAX_LINE_BYTES);
}

/**
 * Reads the first line of a segment (its index) without reading the body: a read at a time of HEADER_READ_BYTES at
 * most, whatever a larger header before grew the buffer to (reading as much would read whole bodies).
 */
function readHeader(file: string): { entries: HeaderEntry[]; bodyStart: number } {
  // Synchronous, as every read here (see atomic.ts), which is also what makes sharing headerBuffer safe.
  const fd = openSync(file, "r");
  try {
    let buffer = headerBuffer;
    let filled = 0;
    for (;;) {
      const bytesRead = readSync(fd, buffer, filled, Math.min(buffer.length - filled, HEADER_READ_BYTES), filled);
      filled += bytesRead;
      const newline = buffer.subarray(0, filled).indexOf(0x0a);
      if (newline >= 0) {
        const header = JSON.parse(buffer.subarray(0, newline).toString("utf8")) as { v: number; entries: HeaderEntry[] };
        if (header.v !== 1 || !Array.isArray(header.entries) || !header.entries.every(isHeaderEntry)) throw new Error("unknown segment header");
        return { entries: header.entries, bodyStart: newline + 1 };
      }
      if (bytesRead === 0) throw new Error("segment header without newline");
      if (filled === buffer.length) {
        const bigger = Buffer.allocUnsafe(buffer.length * 2);
        buffer.copy(bigger);
        buffer = headerBuffer = bigger;
      }
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * The header of segment `file`: its entries, and where its body starts.
 * @throws CorruptStateError for a header that cannot be read, is not JSON of version 1, lists an entry that is not a
 *   [key, offset, length] of a string and two whole numbers of at least 0, or has no newline.
 */
export function readSegmentHeader(file: string): { entries: HeaderEntry[]; bodyStart: number } {
  try {
    return readHeader(file);
  } catch (err) {
    throw new CorruptStateError("Snapshot segment header is unreadable", { file }, { cause: err });
  }
}

/** Segments in the order they were written (file sequence number, then name), the order a scan walks them in. */
export function segmentOrder(a: { seq: number; name: string }, b: { seq: number; name: string }): number {
  return a.seq - b.seq || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

/** Reads bytes [from, to) of a segment into `buffer` at `at`. */
function readRange(fd: number, file: string, buffer: Buffer, at: number, from: number, to: number): void {
  if (to > from && readSync(fd, buffer, at, to - from, from) !== to - from) {
    throw new CorruptStateError("Snapshot segment is shorter than its header says", { file });
  }
}

/** Encodes `snapshots` into a segment body in `scratch`, with the header entries that list its lines. */
export function encodeSegment(snapshots: readonly Snapshot[], scratch: ScratchBuffer): { entries: HeaderEntry[]; body: Buffer } {
  // Last write of a key within one call wins, as with separate puts.
  const unique = new Map<SnapshotKey, Snapshot>();
  for (const s of snapshots) unique.set(s.key, s);
  // Each line is written as three pieces around the object text the engine already made to hash it:
  // no joined line string (a flattened copy per snapshot), no Buffer.byteLength scan, one encode.
  const keys: SnapshotKey[] = [];
  const heads: string[] = [];
  const objects: string[] = [];
  const tails: string[] = [];
  let bound = 0;
  for (const s of unique.values()) {
    const head = `{"key":${jsonString(s.key)},"hash":${jsonString(s.hash)},"object":`;
    const object = jsonOf(s.object);
    const tail = `,"updatedAt":${jsonString(s.updatedAt)}${s.sequence === undefined ? "" : `,"sequence":${s.sequence}`}}\n`;
    keys.push(s.key);
    heads.push(head);
    objects.push(object);
    tails.push(tail);
    bound += (head.length + object.length + tail.length) * 3;
  }
  const body = scratch.take(bound);
  const entries: HeaderEntry[] = [];
  let offset = 0;
  for (let i = 0; i < keys.length; i++) {
    const start = offset;
    offset += body.write(heads[i] as string, offset, "utf8");
    offset += body.write(objects[i] as string, offset, "utf8");
    offset += body.write(tails[i] as string, offset, "utf8");
    // The entry's length leaves out the newline.
    entries.push([keys[i] as string, start, offset - start - 1]);
  }
  return { entries, body: body.subarray(0, offset) };
}

/**
 * Reads the lines `wanted` names in segment `file` (each at the place the index holds for its key) and returns their
 * snapshots, in order. A line holding another key whose fingerprint is the wanted key's is a collision (see
 * KeyIndex): the wanted key has no snapshot here, and the line is skipped, so `getMany` and `scan` agree on what the
 * store holds. A line holding any other key means the segment's header and body disagree: CorruptStateError, as for a
 * line that is not JSON or is cut short.
 */
export function readEntries(file: string, wanted: readonly { key: string; offset: number; length: number }[]): Snapshot[] {
  const snapshots: Snapshot[] = [];
  // Synchronous reads, as in writeFileAtomic (see atomic.ts): a thread-pool round trip per entry costs more.
  const fd = openSync(file, "r");
  try {
    for (const { key, offset, length } of wanted) {
      const buffer = Buffer.allocUnsafe(length);
      readRange(fd, file, buffer, 0, offset, offset + length);
      let snapshot: Snapshot;
      try {
        snapshot = JSON.parse(buffer.toString("utf8")) as Snapshot;
      } catch {
        // No cause: JSON.parse's message quotes the text around the fault, a stored object's personal data.
        throw new CorruptStateError("Snapshot segment entry is not valid JSON", { file });
      }
      if (snapshot.key === key) {
        if (!isSnapshotSequence(snapshot.sequence)) {
          throw new CorruptStateError("Snapshot segment entry has a sequence that is not a whole number of at least 0", { file });
        }
        snapshots.push(snapshot);
      } else if (typeof snapshot.key !== "string" || !sameFingerprint(key, snapshot.key)) {
        throw new CorruptStateError("Snapshot segment entry does not hold the key its header names", { file });
      }
    }
  } finally {
    closeSync(fd);
  }
  return snapshots;
}

/**
 * Copies the lines `live` lists (at their offsets in segment `file`) into `body` at `filled`, newlines included, and
 * appends their header entries (offsets in `body`) to `entries`; returns where the copied lines end in `body`.
 * @throws CorruptStateError for a line that does not end where its header says, or a segment shorter than it says.
 */
export function copyLines(file: string, live: readonly HeaderEntry[], body: Buffer, filled: number, entries: HeaderEntry[]): number {
  const first = entries.length;
  const fd = openSync(file, "r");
  try {
    // Lines are copied with their newline, so neighbouring live lines are one read.
    let runFrom = 0;
    let runTo = 0;
    let runAt = filled;
    for (const [key, offset, length] of live) {
      if (offset !== runTo) {
        readRange(fd, file, body, runAt, runFrom, runTo);
        runFrom = offset;
        runTo = offset;
        runAt = filled;
      }
      runTo += length + 1;
      entries.push([key, filled, length]);
      filled += length + 1;
    }
    readRange(fd, file, body, runAt, runFrom, runTo);
  } finally {
    closeSync(fd);
  }
  for (let i = first; i < entries.length; i++) {
    const [, offset, length] = entries[i] as HeaderEntry;
    if (body[offset + length] !== 0x0a) throw new CorruptStateError("Snapshot segment entry does not end where its header says", { file });
  }
  return filled;
}
