/**
 * File-backed SnapshotStore built for large backlogs: each `putMany` writes one immutable segment file
 * (temp + fsync + rename), so a page of snapshots costs one fsync, not one per item. A segment's first line
 * is its index (key, offset, length); opening the store reads only those lines into a compact off-heap
 * key index ({@link SnapshotIndex} over `key-index.ts`: 32-64 bytes per key, no JS objects per key) while snapshot bodies stay on disk.
 * Segments whose every entry was superseded are deleted. Once superseded (dead) bytes outweigh live ones, a `putMany`
 * also compacts: it copies the live entries of the sparsest segments, byte for byte, into a new segment, which empties
 * them so they are deleted the same way. Small segments (a page with a few new snapshots, what a bridge polling every
 * minute mostly writes) are merged the same way once a few have gathered, so the file count follows the live data,
 * not the number of cycles. `scan` walks live entries segment by segment in file order (an entry rewritten
 * or compacted moves to a newer segment, so a walk meets it again rather than missing it); `vacuum` compacts every
 * segment holding a superseded entry, so no replaced version stays on disk.
 */
import path from "node:path";
import type { Snapshot, SnapshotKey, SnapshotPage, SnapshotScanOptions, SnapshotStore } from "../bridge/ports.js";
import { SnapshotCursorError } from "../bridge/errors.js";
import { ScratchBuffer, TEMP_SUFFIX, fsyncDirSync, makeDirDurable, unlinkQuietly, writeFileAtomic } from "./atomic.js";
import { STATE_DIRS, namesInStateDir } from "./layout.js";
import { Compaction, type CompactionTuning } from "./snapshot-compaction.js";
import { formatCursor, parseCursor, type ParsedCursor } from "./snapshot-cursor.js";
import { SnapshotIndex, type Segment } from "./snapshot-index.js";
import {
  SEGMENT_PATTERN,
  copyLines,
  encodeHeader,
  encodeSegment,
  readEntries,
  readSegmentHeader,
  segmentName,
  segmentOrder,
  type HeaderEntry,
} from "./snapshot-segment.js";
import { STORE_ID_FILE, makeStoreId, readStoreId } from "./snapshot-store-id.js";

/**
 * Whether `name`, an entry of `snapshots/`, is one the store writes: its id file or a segment (named so by every
 * version). The settings check tells the bridge's snapshots from a directory of another's of the same name by it.
 */
export function isSnapshotStoreEntry(name: string): boolean {
  return name === STORE_ID_FILE || SEGMENT_PATTERN.test(name);
}

/** Tuning of a {@link FileSnapshotStore}; the defaults suit the bridge, tests shrink them. */
export interface FileSnapshotStoreOptions extends CompactionTuning {
  /**
   * Awaited before each compaction batch (in putMany or vacuum) reads anything; a throw stops the call with that error,
   * the store as it was. The CLI checks its cycle lease here: a batch copies what this instance last knew, so one run
   * after another process took the lease (this one stopped past it) would store older snapshots over its newer ones.
   */
  readonly beforeCompaction?: () => Promise<void>;
}

/**
 * Yields to the event loop's timers. The store's file I/O is synchronous, so a pass made of store calls alone (a PII
 * conform walk, a vacuum) would otherwise run as one stretch of microtasks, and the timer that renews the cycle lease
 * it holds (whileHolding) would not fire until it ended: the lease would run out under a live holder.
 */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Snapshots of one tenant in `<stateDir>/snapshots/`. One writer per state directory at a time
 * (the CLI holds a FileLock for the cycle); readers in the same process see writes immediately, and a process that
 * outlives another's writes (a `run --interval` beside a `run --once`) sees them after {@link reload}.
 * Compaction runs inside `putMany`, after its own segment is durable, and costs nothing while it is not due.
 *
 * @example
 * ```ts
 * const store = new FileSnapshotStore(".state", { compactMinDeadBytes: 16 * 1024 * 1024 });
 * await store.putMany([{ key: "transaction:7f…", hash, object, updatedAt: new Date().toISOString() }]);
 * ```
 */
export class FileSnapshotStore implements SnapshotStore {
  readonly dir: string;
  private readonly index: SnapshotIndex;
  private readonly compaction: Compaction;
  private readonly beforeCompaction?: () => Promise<void>;
  private nextSeq = 1;
  /** The store's id (STORE_ID_FILE), once read or made. */
  private storeId?: string;
  private dirReady = false;
  private readonly scratch = new ScratchBuffer();
  private loading?: Promise<void>;
  /** Writes (putMany, vacuum) run one at a time so the index follows segment order. */
  private writes: Promise<unknown> = Promise.resolve();

  constructor(stateDir: string, options: FileSnapshotStoreOptions = {}) {
    this.dir = path.join(stateDir, STATE_DIRS.snapshots);
    this.index = new SnapshotIndex(this.dir);
    this.compaction = new Compaction(this.index, options);
    this.beforeCompaction = options.beforeCompaction;
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
    return this.readMany(keys);
  }

  /**
   * The current snapshots of `keys`, read segment by segment. Synchronous and apart from getMany, as the encoding and
   * placing steps of a write are: V8 then compiles the per-key loops without an async method around them.
   */
  private readMany(keys: readonly SnapshotKey[]): Map<SnapshotKey, Snapshot> {
    const out = new Map<SnapshotKey, Snapshot>();
    for (const [id, wanted] of this.index.locate(keys)) {
      for (const snapshot of readEntries(this.index.fileOf(this.index.segment(id)), wanted)) out.set(snapshot.key, snapshot);
    }
    return out;
  }

  putMany(snapshots: readonly Snapshot[]): Promise<void> {
    return this.serialised(() => this.write(snapshots));
  }

  /** Runs `task` after every write queued before it (putMany and vacuum), so the index follows segment order. */
  private serialised(task: () => Promise<void>): Promise<void> {
    const run = this.writes.then(task);
    this.writes = run.catch(() => undefined);
    return run;
  }

  /**
   * One page of live entries, segment by segment in the order they were written, from the entry after the cursor's.
   * A segment the cursor names that is gone since was emptied into newer ones, which the walk still reaches.
   *
   * @throws SnapshotCursorError for a cursor of another store (another state directory, or this one before it was
   *   replaced: the store's id differs), of a segment this store never wrote, or of another shape.
   */
  async scan(options: SnapshotScanOptions): Promise<SnapshotPage> {
    await nextTurn();
    const cursor = options.cursor === undefined ? undefined : parseCursor(options.cursor);
    await this.load();
    const from = cursor === undefined ? undefined : this.checkCursor(cursor);
    const picked: { segment: Segment; live: { key: string; offset: number; length: number; position: number }[] }[] = [];
    let count = 0;
    let last: { segment: Segment; position: number } | undefined;
    walk: for (const segment of [...this.index.all()].sort(segmentOrder)) {
      const order = from === undefined ? 1 : segmentOrder(segment, from);
      if (order < 0) continue;
      const header = this.header(segment);
      const live: (typeof picked)[number]["live"] = [];
      picked.push({ segment, live });
      for (let position = order === 0 ? (from?.position ?? -1) + 1 : 0; position < header.entries.length; position++) {
        const [key, offset, length] = header.entries[position] as HeaderEntry;
        const at = this.index.liveAt(segment, header, key, offset);
        if (at === undefined) continue;
        live.push({ key, offset: at.offset, length, position });
        last = { segment, position };
        if (++count === options.limit) break walk;
      }
    }
    const snapshots: Snapshot[] = [];
    for (const { segment, live } of picked) if (live.length > 0) snapshots.push(...readEntries(this.index.fileOf(segment), live));
    // A full page may be the last one: the next call then finds nothing and ends the walk.
    if (count !== options.limit || last === undefined) return { snapshots };
    return { snapshots, cursor: formatCursor(await this.id(), last.segment.name, last.position) };
  }

  /**
   * Reads the index again when the segment files on disk are not the ones this instance knows: another process wrote
   * or compacted segments since this one loaded them (the index is loaded once, then follows this instance's own
   * writes only), so reads would miss its snapshots or find their segments deleted. A process that keeps the store
   * open across cycles calls this each time it takes the cycle lease, which orders it after the other writer. Costs
   * one directory listing when nothing changed; nothing before the first load.
   *
   * @example
   * ```ts
   * await withLease(async () => { await store.reload(); await pollTransactions(deps); });
   * ```
   */
  reload(): Promise<void> {
    return this.serialised(async () => {
      if (this.loading === undefined) return;
      const loaded = await this.loading.then(
        () => true,
        () => false,
      );
      if (loaded && !this.changedOnDisk()) return;
      this.index.clear();
      // The directory may have been replaced since (a restore): its id is read again when a cursor needs it.
      this.storeId = undefined;
      this.dirReady = false;
      this.loading = this.loadSegments();
      await this.loading;
    });
  }

  /** Whether the segment files on disk differ from the ones this instance knows. */
  private changedOnDisk(): boolean {
    const names = namesInStateDir(this.dir, "Snapshot").filter((name) => SEGMENT_PATTERN.test(name));
    if (names.length !== this.index.count) return true;
    const known = new Set([...this.index.all()].map((segment) => segment.name));
    return names.some((name) => !known.has(name));
  }

  /** Compacts every segment that holds a superseded entry, in batches, until each segment holds live entries only. */
  vacuum(): Promise<void> {
    return this.serialised(async () => {
      await this.load();
      while ((await this.compactBatch(this.compaction.sparseSegments(1))) > 0);
      // Segments are deleted by plain unlinks (this pass's, and those of the putMany calls before it): the directory is
      // fsynced so none of them, with the replaced versions it holds, comes back after a power loss. No segment, no
      // directory (the store was never written).
      if (this.index.count > 0) fsyncDirSync(this.dir);
    });
  }

  /**
   * Where a walk goes on from `cursor`, once it is known to be one of this store's: its id is this store's, and its
   * segment is one this store wrote (a sequence number below the next one; the segment itself may be gone since).
   */
  private checkCursor(cursor: ParsedCursor): { seq: number; name: string; position: number } {
    // Read here, not on load: the id matters for cursors only, so a damaged id file must not stop cycles.
    this.storeId ??= this.readId();
    if (this.storeId === undefined || cursor.storeId !== this.storeId || cursor.seq >= this.nextSeq) throw new SnapshotCursorError();
    return cursor;
  }

  /** The store's id, made (STORE_ID_FILE) when it has none yet; a race with another process keeps the first one. */
  private async id(): Promise<string> {
    this.storeId ??= await makeStoreId(this.dir);
    return this.storeId;
  }

  /** The id in STORE_ID_FILE, undefined when there is none. */
  private readId(): string | undefined {
    return readStoreId(this.dir);
  }

  private async write(snapshots: readonly Snapshot[]): Promise<void> {
    if (snapshots.length === 0) return;
    await this.load();
    const written = await this.writeSnapshots(snapshots);
    // Copying as many bytes as the call wrote keeps up with the dead bytes it made; one batch is the least worth an fsync.
    let budget = Math.max(written, this.compaction.compactBatchBytes);
    while (budget > 0) {
      const from = this.compaction.nextSources();
      if (from.length === 0) break;
      const copied = await this.compactBatch(from);
      if (copied === 0) break;
      budget -= copied;
    }
  }

  /** Writes `snapshots` as one new segment; returns the bytes of its body. */
  private async writeSnapshots(snapshots: readonly Snapshot[]): Promise<number> {
    const { entries, body } = encodeSegment(snapshots, this.scratch);
    await this.writeSegment(entries, body);
    return body.length;
  }

  /**
   * Writes one segment (a header line listing `entries`, then `body`) atomically, points the index at its entries and
   * deletes the segments that leaves without a current entry. putMany and compaction both write through here.
   */
  private async writeSegment(entries: HeaderEntry[], body: Uint8Array): Promise<void> {
    const head = encodeHeader(entries);
    const seq = this.nextSeq++;
    const name = segmentName(seq);
    if (!this.dirReady) {
      makeDirDurable(this.dir);
      this.dirReady = true;
    }
    // Segment writes never overlap (see putMany), so the scratch buffer is free again once this resolves.
    await writeFileAtomic(path.join(this.dir, name), [head, body], { mode: 0o600 });
    this.index.placeSegment(this.index.newSegment(name, seq), entries, head.length);
  }

  /**
   * Copies the live entries of segments `from`, in that order, one batch at most, into a new segment; returns the bytes
   * copied.
   * A crash before the new segment is durable leaves the old ones as they were; after it, an old segment still on disk
   * only duplicates entries the new one (higher sequence number) holds byte for byte, and loading deletes it.
   */
  private async compactBatch(from: readonly Segment[]): Promise<number> {
    await nextTurn();
    // After the yield, where a stop lands; from here to the segment's rename nothing yields.
    await this.beforeCompaction?.();
    // Pick first (keys and places only), then read: the batch's bytes are known before the buffer is taken.
    const { picked, bytes } = this.compaction.pick(from);
    const body = this.scratch.take(bytes);
    const entries: HeaderEntry[] = [];
    let filled = 0;
    for (const { segment, live } of picked) filled = copyLines(this.index.fileOf(segment), live, body, filled, entries);
    if (filled > 0) await this.writeSegment(entries, body.subarray(0, filled));
    return filled;
  }

  private header(segment: Segment): { entries: HeaderEntry[]; bodyStart: number } {
    return readSegmentHeader(this.index.fileOf(segment));
  }

  private load(): Promise<void> {
    this.loading ??= this.loadSegments();
    return this.loading;
  }

  private async loadSegments(): Promise<void> {
    const found: Segment[] = [];
    for (const name of namesInStateDir(this.dir, "Snapshot")) {
      if (name.endsWith(TEMP_SUFFIX)) {
        // Left by a crash before rename: never part of the store.
        unlinkQuietly(path.join(this.dir, name));
        continue;
      }
      const match = SEGMENT_PATTERN.exec(name);
      if (match) found.push(this.index.newSegment(name, Number(match[1])));
    }
    found.sort(segmentOrder);
    for (const segment of found) {
      const header = this.header(segment);
      this.index.addFound(segment, header.entries, header.bodyStart);
      this.nextSeq = Math.max(this.nextSeq, segment.seq + 1);
    }
    // Wholly superseded segments are what a crash between a segment write and the deletes leaves behind.
    for (const segment of found) if (segment.liveBytes === 0) this.index.drop(segment);
  }
}
