/**
 * File-backed SnapshotStore built for large backlogs: each `putMany` writes one immutable segment file
 * (temp + fsync + rename), so a page of snapshots costs one fsync, not one per item. A segment's first line
 * is its index (key, offset, length); opening the store reads only those lines into a compact off-heap
 * {@link KeyIndex} (32-64 bytes per key, no JS objects per key) while snapshot bodies stay on disk.
 * Segments whose every entry was superseded are deleted.
 */
import { randomBytes } from "node:crypto";
import { closeSync, mkdirSync, openSync, readSync, unlinkSync } from "node:fs";
import { open, readdir, unlink } from "node:fs/promises";
import path from "node:path";
import type { Snapshot, SnapshotKey, SnapshotStore } from "../bridge/ports.js";
import { jsonOf, jsonString } from "../bridge/hash.js";
import { ScratchBuffer, TEMP_SUFFIX, writeFileAtomic } from "./atomic.js";
import { CorruptStateError } from "./errors.js";
import { KeyIndex } from "./key-index.js";

const SEGMENT_PATTERN = /^seg-(\d{12})-[0-9a-f]{8}\.log$/;

interface Segment {
  /** In-memory id the key index refers to (file sequence numbers may repeat after a race without the lock). */
  readonly id: number;
  readonly name: string;
  readonly seq: number;
  /** Entries of this segment still current in the index. */
  live: number;
}

/** Reads the first line of a segment (its index) without reading the body. */
async function readHeader(file: string): Promise<{ entries: [string, number, number][]; bodyStart: number }> {
  const handle = await open(file, "r");
  try {
    let buffer = Buffer.alloc(64 * 1024);
    let filled = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, filled);
      filled += bytesRead;
      const newline = buffer.subarray(0, filled).indexOf(0x0a);
      if (newline >= 0) {
        const header = JSON.parse(buffer.subarray(0, newline).toString("utf8")) as { v: number; entries: [string, number, number][] };
        if (header.v !== 1 || !Array.isArray(header.entries)) throw new Error("unknown segment header");
        return { entries: header.entries, bodyStart: newline + 1 };
      }
      if (bytesRead === 0) throw new Error("segment header without newline");
      if (filled === buffer.length) {
        const bigger = Buffer.alloc(buffer.length * 2);
        buffer.copy(bigger);
        buffer = bigger;
      }
    }
  } finally {
    await handle.close();
  }
}

/**
 * Snapshots of one tenant in `<stateDir>/snapshots/`. One writer per state directory at a time
 * (the CLI holds a FileLock for the cycle); readers in the same process see writes immediately.
 *
 * @example
 * ```ts
 * const store = new FileSnapshotStore(".state");
 * await store.putMany([{ key: "transaction:7f…", hash, object, updatedAt: new Date().toISOString() }]);
 * ```
 */
export class FileSnapshotStore implements SnapshotStore {
  readonly dir: string;
  private readonly index = new KeyIndex();
  /** Segments by in-memory id. */
  private readonly segments = new Map<number, Segment>();
  private nextId = 1;
  private nextSeq = 1;
  private dirReady = false;
  private readonly scratch = new ScratchBuffer();
  private loading?: Promise<void>;
  /** putMany calls run one at a time so the index follows segment order. */
  private writes: Promise<unknown> = Promise.resolve();

  constructor(stateDir: string) {
    this.dir = path.join(stateDir, "snapshots");
  }

  /** Number of snapshots currently stored. */
  async size(): Promise<number> {
    await this.load();
    return this.index.size;
  }

  /** Bytes the in-memory key index takes (32-64 bytes per key, off the JS heap). */
  async indexBytes(): Promise<number> {
    await this.load();
    return this.index.bytes;
  }

  async getMany(keys: readonly SnapshotKey[]): Promise<Map<SnapshotKey, Snapshot>> {
    await this.load();
    const out = new Map<SnapshotKey, Snapshot>();
    const bySegment = new Map<number, { key: SnapshotKey; offset: number; length: number }[]>();
    for (const key of keys) {
      const location = this.index.get(key);
      if (!location) continue;
      let list = bySegment.get(location.segment);
      if (!list) bySegment.set(location.segment, (list = []));
      list.push({ key, offset: location.offset, length: location.length });
    }
    for (const [id, wanted] of bySegment) {
      const segment = this.segments.get(id);
      if (!segment) throw new CorruptStateError("Snapshot index names a segment that is gone", { file: this.dir });
      const file = path.join(this.dir, segment.name);
      // Synchronous reads, as in writeFileAtomic (see atomic.ts): a thread-pool round trip per entry costs more.
      const fd = openSync(file, "r");
      try {
        for (const { key, offset, length } of wanted) {
          const buffer = Buffer.allocUnsafe(length);
          const read = readSync(fd, buffer, 0, length, offset);
          let snapshot: Snapshot;
          try {
            snapshot = JSON.parse(buffer.toString("utf8", 0, read)) as Snapshot;
          } catch (err) {
            throw new CorruptStateError("Snapshot segment entry is not valid JSON", { file }, { cause: err });
          }
          // A fingerprint collision points at another key's entry: that key has no snapshot here.
          if (snapshot.key === key) out.set(key, snapshot);
        }
      } finally {
        closeSync(fd);
      }
    }
    return out;
  }

  putMany(snapshots: readonly Snapshot[]): Promise<void> {
    const run = this.writes.then(() => this.writeSegment(snapshots));
    this.writes = run.catch(() => undefined);
    return run;
  }

  private async writeSegment(snapshots: readonly Snapshot[]): Promise<void> {
    if (snapshots.length === 0) return;
    await this.load();
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
      const tail = `,"updatedAt":${jsonString(s.updatedAt)}}\n`;
      keys.push(s.key);
      heads.push(head);
      objects.push(object);
      tails.push(tail);
      bound += (head.length + object.length + tail.length) * 3;
    }
    const body = this.scratch.take(bound);
    const entries: [string, number, number][] = [];
    let offset = 0;
    for (let i = 0; i < keys.length; i++) {
      const start = offset;
      offset += body.write(heads[i] as string, offset, "utf8");
      offset += body.write(objects[i] as string, offset, "utf8");
      offset += body.write(tails[i] as string, offset, "utf8");
      // The entry's length leaves out the newline.
      entries.push([keys[i] as string, start, offset - start - 1]);
    }
    const header = JSON.stringify({ v: 1, entries });
    const seq = this.nextSeq++;
    const name = `seg-${String(seq).padStart(12, "0")}-${randomBytes(4).toString("hex")}.log`;
    if (!this.dirReady) {
      mkdirSync(this.dir, { recursive: true, mode: 0o700 });
      this.dirReady = true;
    }
    const head = Buffer.from(header + "\n", "utf8");
    // Segment writes never overlap (see putMany), so the scratch buffer is free again once this resolves.
    await writeFileAtomic(path.join(this.dir, name), [head, body.subarray(0, offset)], { mode: 0o600 });

    const segment: Segment = { id: this.nextId++, name, seq, live: 0 };
    this.segments.set(segment.id, segment);
    const bodyStart = head.length;
    const emptied: Segment[] = [];
    for (const [key, entryOffset, length] of entries) {
      const previous = this.supersede(this.index.set(key, { segment: segment.id, offset: bodyStart + entryOffset, length }));
      if (previous?.live === 0) emptied.push(previous);
      segment.live += 1;
    }
    // The new segment is durable, so wholly superseded ones can go.
    for (const old of emptied) {
      this.segments.delete(old.id);
      try {
        unlinkSync(path.join(this.dir, old.name));
      } catch {
        // Already gone: the store only needs it not to be read again.
      }
    }
  }

  /** Counts one entry of segment `id` as superseded; returns that segment. */
  private supersede(id: number | undefined): Segment | undefined {
    if (id === undefined) return undefined;
    const previous = this.segments.get(id);
    if (previous) previous.live -= 1;
    return previous;
  }

  private load(): Promise<void> {
    this.loading ??= this.loadSegments();
    return this.loading;
  }

  private async loadSegments(): Promise<void> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
      throw err;
    }
    const found: Segment[] = [];
    for (const name of names) {
      if (name.endsWith(TEMP_SUFFIX)) {
        // Left by a crash before rename: never part of the store.
        await unlink(path.join(this.dir, name)).catch(() => undefined);
        continue;
      }
      const match = SEGMENT_PATTERN.exec(name);
      if (match) found.push({ id: this.nextId++, name, seq: Number(match[1]), live: 0 });
    }
    found.sort((a, b) => a.seq - b.seq || a.name.localeCompare(b.name));
    for (const segment of found) {
      const file = path.join(this.dir, segment.name);
      let header;
      try {
        header = await readHeader(file);
      } catch (err) {
        throw new CorruptStateError("Snapshot segment header is unreadable", { file }, { cause: err });
      }
      this.segments.set(segment.id, segment);
      for (const [key, offset, length] of header.entries) {
        this.supersede(this.index.set(key, { segment: segment.id, offset: header.bodyStart + offset, length }));
        segment.live += 1;
      }
      this.nextSeq = Math.max(this.nextSeq, segment.seq + 1);
    }
    for (const segment of found) {
      if (segment.live === 0) {
        this.segments.delete(segment.id);
        await unlink(path.join(this.dir, segment.name)).catch(() => undefined);
      }
    }
  }
}
