/**
 * EventPublisher that appends one JSON line per event to a file, in the shape an EventBridge rule target
 * receives, so local consumers see what they would see in AWS; but whole, whatever its size: a file has no entry limit,
 * so an event AWS would trim or quarantine past 256 KB (../aws/event-size.ts) is written untrimmed (docs/events.md).
 */
import { randomUUID } from "node:crypto";
import { closeSync, constants, fstatSync, fsyncSync, ftruncateSync, openSync, readSync } from "node:fs";
import path from "node:path";
import type { BridgeEvent, BridgeEventDetail, EventPublisher, Logger, PublishFailure } from "../bridge/ports.js";
import { jsonString as quote } from "../bridge/hash.js";
import { detailJsonParts } from "../bridge/events/json.js";
import { createFileOnceSync, fileKindOf, makeDirDurable, ScratchBuffer, staleTempSweep, writeAll } from "./atomic.js";
import { DurableNames } from "./durable-names.js";

/** An event as an EventBridge rule target receives it. */
export interface EventBridgeEnvelope {
  readonly version: "0";
  readonly id: string;
  readonly "detail-type": string;
  readonly source: string;
  readonly account: string;
  readonly time: string;
  readonly region: string;
  readonly resources: readonly string[];
  readonly detail: BridgeEventDetail;
}

/** Options of {@link JsonlEventPublisher}. */
export interface JsonlEventPublisherOptions {
  /** Target file; created (with its directory) when missing, readable by its owner only (0600, directories 0700). */
  readonly file: string;
  /** `account` of the envelope. @default "000000000000" */
  readonly account?: string;
  /** `region` of the envelope. @default "local" */
  readonly region?: string;
  /** Envelope id per delivery, like EventBridge's own (deduplicate on `detail.id`). @default {@link envelopeIds}() */
  readonly newId?: () => string;
  /** Told when a line torn by an interrupted write is cut off the file (see {@link JsonlEventPublisher}). */
  readonly logger?: Pick<Logger, "warn">;
}

/**
 * A source of envelope ids: UUIDs (version 4 shape) that start from a random one (`first`) and count up in their last
 * 48 bits, so each delivery gets its own id, as EventBridge gives it, for a fraction of a fresh random UUID's cost per
 * event.
 *
 * @example
 * ```ts
 * const next = envelopeIds();
 * next(); // "3b1f0c2e-9a4d-4c1e-8f2a-5d6e7f80a1b3"
 * next(); // "3b1f0c2e-9a4d-4c1e-8f2a-5d6e7f80a1b4"
 * ```
 */
export function envelopeIds(first: string = randomUUID()): () => string {
  const prefix = first.slice(0, 24);
  let counter = Number.parseInt(first.slice(24), 16);
  return () => {
    counter = (counter + 1) % 2 ** 48;
    return prefix + counter.toString(16).padStart(12, "0");
  };
}

/**
 * Wraps a bridge event in the EventBridge target envelope.
 *
 * @example
 * ```ts
 * JSON.stringify(toEventBridgeEnvelope(event, { account: "123456789012", region: "eu-west-1", id: randomUUID() }));
 * ```
 */
export function toEventBridgeEnvelope(event: BridgeEvent, context: { account: string; region: string; id: string }): EventBridgeEnvelope {
  return {
    version: "0",
    id: context.id,
    "detail-type": event.detailType,
    source: event.source,
    account: context.account,
    time: event.time,
    region: context.region,
    resources: [],
    detail: event.detail,
  };
}

/**
 * Serialises an envelope as one JSON line, reusing the object text the engine computed for hashing.
 * Same members and order as `JSON.stringify(envelope)`; only `detail.data` members are ordered object-first.
 */
export function envelopeLine(envelope: EventBridgeEnvelope): string {
  const [before, object, after] = envelopeParts(envelope);
  return before + object + after;
}

/**
 * {@link envelopeLine} as the text before the object, the object's text, and the text after it. Written member by
 * member from the envelope's fixed shape: once per event, so no object copies to split off `detail` and `data`.
 */
function envelopeParts(envelope: EventBridgeEnvelope): [string, string, string] {
  const [detailBefore, object, detailAfter] = detailJsonParts(envelope.detail);
  const before =
    `{"version":${quote(envelope.version)},"id":${quote(envelope.id)},"detail-type":${quote(envelope["detail-type"])},` +
    `"source":${quote(envelope.source)},"account":${quote(envelope.account)},"time":${quote(envelope.time)},` +
    `"region":${quote(envelope.region)},"resources":${JSON.stringify(envelope.resources)},"detail":${detailBefore}`;
  return [before, object, `${detailAfter}}`];
}

/**
 * How the file is opened: `a+` (created when missing, every write at the end) and non-blocking, so a FIFO put in the
 * file's place opens at once and is refused (see write) instead of a write that blocks the whole process until a
 * reader drains it. No effect on a regular file; 0 where the platform has no such flag.
 */
const OPEN_FLAGS = constants.O_RDWR | constants.O_APPEND | constants.O_CREAT | (constants.O_NONBLOCK ?? 0);

/** How every line this publisher writes starts: a torn line that starts so (up to a NUL) is one of its own. */
const LINE_START = Buffer.from('{"version":"0","id":"', "utf8");
/** Bytes read per step from the tail: looking back for the last complete line, saving a cut (see saveCut). */
const TAIL_CHUNK_BYTES = 64 * 1024;
/**
 * The most bytes written between two fsyncs (a larger batch is fsynced every so many), so the most a power loss can
 * leave unsynced at the end of the file: the region checked for NUL bytes (see cutPowerLossTear).
 */
export const TORN_REGION_BYTES = 1024 * 1024;
/** Recovery files of cuts at one byte kept side by side at most (see saveCut): past them, a cut waits for a hand. */
const RECOVERY_NAMES = 100;

/**
 * Whether a name is one of `file`'s recovery names (`<file>.cut-<byte>`, `<file>.cut-<byte>.<n>`: see saveCut), so the
 * sweep of the events file's directory, which may hold anything, removes the temp files of those only.
 */
function recoveryNamesOf(file: string): (name: string) => boolean {
  const prefix = `${path.basename(file)}.cut-`;
  return (name) => name.startsWith(prefix) && /^\d+(?:\.\d+)?$/.test(name.slice(prefix.length));
}

/** Reads up to `length` bytes of `fd` at `position` into `buffer`, fewer only where the file ends; returns how many. */
function readAt(fd: number, buffer: Buffer, length: number, position: number): number {
  let done = 0;
  while (done < length) {
    const read = readSync(fd, buffer, done, length - done, position + done);
    if (read === 0) break;
    done += read;
  }
  return done;
}

/**
 * The bytes of `fd` from `start` to `end`, a piece at a time in `chunk` (refilled for each, so valid until the next is
 * taken): a cut of any length in bounded memory. Throws when the file ends before `end`.
 */
function* pieces(fd: number, start: number, end: number, chunk: Buffer): Generator<Buffer> {
  for (let at = start; at < end; ) {
    const read = readAt(fd, chunk, Math.min(chunk.length, end - at), at);
    if (read === 0) throw new Error("the file shrank while being read");
    yield chunk.subarray(0, read);
    at += read;
  }
}

/**
 * Whether `file` is a regular file holding exactly the bytes of `fd` from `start` to `end`, compared a piece at a time
 * (see pieces). Opened non-blocking: a FIFO put at the name is not waited on, only found not to hold them.
 */
function holdsSameBytes(file: string, fd: number, start: number, end: number): boolean {
  const other = openSync(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  try {
    const stats = fstatSync(other);
    if (!stats.isFile() || stats.size !== end - start) return false;
    const theirs = Buffer.allocUnsafe(Math.min(end - start, TAIL_CHUNK_BYTES));
    let at = 0;
    for (const ours of pieces(fd, start, end, Buffer.allocUnsafe(theirs.length))) {
      if (readAt(other, theirs, ours.length, at) !== ours.length || !theirs.subarray(0, ours.length).equals(ours)) return false;
      at += ours.length;
    }
    return true;
  } finally {
    closeSync(other);
  }
}

/** Where the file's last complete line ends: just past the last newline before `size`, or 0 when there is none. */
function endOfLastLine(fd: number, size: number): number {
  const chunk = Buffer.allocUnsafe(Math.min(size, TAIL_CHUNK_BYTES));
  for (let end = size; end > 0; ) {
    const start = Math.max(0, end - chunk.length);
    const read = readSync(fd, chunk, 0, end - start, start);
    const at = chunk.subarray(0, read).lastIndexOf(0x0a);
    if (at >= 0) return start + at + 1;
    end = start;
  }
  return 0;
}

/**
 * Whether the bytes from `from` on are a line of this publisher that a crash cut short: they start as its lines do, up
 * to a NUL if one comes first (what a power loss can leave of data not yet synced, from any byte of a line on: a block
 * boundary may fall inside its opening). Anything else (a file that held something else before it was named
 * BRIDGE_EVENTS_FILE) is not the publisher's to cut.
 */
function isOwnTornLine(fd: number, from: number, size: number): boolean {
  const head = Buffer.alloc(Math.min(size - from, LINE_START.length));
  readSync(fd, head, 0, head.length, from);
  const nul = head.indexOf(0);
  const written = nul < 0 ? head : head.subarray(0, nul);
  return written.equals(LINE_START.subarray(0, written.length));
}

/**
 * Where the first line of the publisher's holding a NUL byte in `region` (the file's bytes from `from` to its end,
 * `size`) starts (see isOwnTornLine), or undefined when there is none. A line of another's holding one (a file that
 * held binary data before it was named BRIDGE_EVENTS_FILE) is never cut, and the search goes on past its end: a tear
 * of the publisher's after it would otherwise stay, the re-sent events after its NULs.
 */
function ownTearStart(fd: number, region: Buffer, from: number, size: number): number | undefined {
  for (let nul = region.indexOf(0); nul >= 0; ) {
    const newline = region.lastIndexOf(0x0a, nul);
    // Only the first line may start before the region: looked for back in the file then.
    const start = newline >= 0 ? from + newline + 1 : endOfLastLine(fd, from + nul);
    if (isOwnTornLine(fd, start, size)) return start;
    const end = region.indexOf(0x0a, nul);
    if (end < 0) return undefined;
    nul = region.indexOf(0, end + 1);
  }
  return undefined;
}

/**
 * Whether the bytes from `from` on are a whole event that lacks only its newline (an editor or a shell rewrite dropped
 * it): kept and closed off, since an event that was acknowledged is never written again. Judged a piece at a time (see
 * pieces), as an event's line has no size bound (local mode writes events untrimmed): whole when its brackets, counted
 * outside strings, close at its end (nothing but JSON whitespace after) and it holds no NUL byte. For every line the
 * publisher writes (JSON), and every cut of one (a prefix, NULs a power loss left after it), that is what parsing it
 * decides: a prefix of a JSON object never closes it. A tail that closes but does not parse (not the publisher's) is
 * kept, not cut.
 */
function isWholeEvent(fd: number, from: number, size: number): boolean {
  let depth = 0;
  let inString = false;
  let escaped = false;
  let closed = false;
  for (const piece of pieces(fd, from, size, Buffer.allocUnsafe(Math.min(size - from, TAIL_CHUNK_BYTES)))) {
    for (let i = 0; i < piece.length; i += 1) {
      const byte = piece[i] as number;
      if (byte === 0x00) return false;
      if (closed) {
        if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0d) return false;
      } else if (inString) {
        if (escaped) escaped = false;
        else if (byte === 0x5c) escaped = true; // backslash
        else if (byte === 0x22) inString = false; // quote
      } else if (byte === 0x22) inString = true;
      else if (byte === 0x7b || byte === 0x5b) depth += 1; // { [
      else if (byte === 0x7d || byte === 0x5d) closed = --depth <= 0; // } ]
    }
  }
  return closed;
}

/**
 * Appends events to a JSON Lines file and fsyncs before resolving. Writes of one process are serialised. A failed
 * write is cut back off the file, and so is a line torn by a crash (found before the next append), so no event is
 * glued to a torn line: the torn line's events were not taken (the engine stores no snapshot before the append
 * returns), so the next cycle writes them again, whole, with the same `detail.id`. A torn tail that is not the
 * publisher's (see {@link isOwnTornLine}), a whole event without its newline, or a tail that cannot be cut, is closed
 * off with a newline instead.
 *
 * @example
 * ```ts
 * const publisher = new JsonlEventPublisher({ file: "events.jsonl" });
 * await publisher.publish(events);
 * ```
 */
export class JsonlEventPublisher implements EventPublisher {
  private queue: Promise<unknown> = Promise.resolve();
  private readonly account: string;
  private readonly region: string;
  private readonly newId: () => string;
  /**
   * The file (device and inode) whose name this publisher made durable by fsyncing its directory: any other file at the
   * path (the first one, or one a rotation left for another process to create) may not be on disk yet (see write).
   */
  private readonly durable = new DurableNames();
  private readonly scratch = new ScratchBuffer();
  /** The file (device, inode, length) as this publisher's last append left it, synced: nothing of it to check again. */
  private synced: string | undefined;
  /** Removes the temp files a process killed while saving a recovery file (see saveCut) left: once, on the first append. */
  private readonly sweep: () => Promise<void>;

  constructor(private readonly options: JsonlEventPublisherOptions) {
    this.account = options.account ?? "000000000000";
    this.region = options.region ?? "local";
    this.newId = options.newId ?? envelopeIds();
    this.sweep = staleTempSweep(path.dirname(options.file), { of: recoveryNamesOf(options.file) });
  }

  publish(events: readonly BridgeEvent[]): Promise<{ readonly failed: readonly PublishFailure[] }> {
    const run = this.queue.then(() => this.append(events));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async append(events: readonly BridgeEvent[]): Promise<{ readonly failed: readonly PublishFailure[] }> {
    if (events.length === 0) return { failed: [] };
    await this.sweep();
    // Two synchronous steps, so V8 compiles the per-event loop without the file handling around it.
    this.write(this.encode(events));
    return { failed: [] };
  }

  /**
   * The events' lines, encoded into the scratch buffer after a byte kept for the newline that closes a torn line that
   * is not cut off (see cutTornLine). Encoded piecewise around the engine's object text: no joined line per event, one
   * encode.
   */
  private encode(events: readonly BridgeEvent[]): Buffer {
    const parts: string[] = [];
    let bound = 1;
    for (const event of events) {
      const [before, object, after] = envelopeParts(toEventBridgeEnvelope(event, { account: this.account, region: this.region, id: this.newId() }));
      parts.push(before, object, after);
      bound += (before.length + object.length + after.length) * 3 + 1;
    }
    // Appends never overlap (see publish), so the scratch buffer is free again once this one resolves.
    const buffer = this.scratch.take(bound);
    let end = 1;
    for (let i = 0; i < parts.length; i += 3) {
      end += buffer.write(parts[i] as string, end, "utf8");
      end += buffer.write(parts[i + 1] as string, end, "utf8");
      end += buffer.write(parts[i + 2] as string, end, "utf8");
      buffer[end++] = 0x0a;
    }
    return buffer.subarray(0, end);
  }

  /**
   * Opens the file to append, creating it when missing, and its directory with it: also a directory removed while the
   * bridge runs (a cleanup of /tmp), which would otherwise fail every cycle until a restart.
   */
  private open(): number {
    try {
      return openSync(this.options.file, OPEN_FLAGS, 0o600);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      makeDirDurable(path.dirname(this.options.file));
      return openSync(this.options.file, OPEN_FLAGS, 0o600);
    }
  }

  /** Appends `lines` (from {@link encode}: its first byte is free) to the file and fsyncs it. */
  private write(lines: Buffer): void {
    let start = 1;
    // Synchronous syscalls, as in writeFileAtomic (see atomic.ts): the caller awaits durability anyway.
    // Owner-only, as all other local state: events carry cardholder data. An existing file or directory keeps the
    // mode it has, so an operator may widen it for a consumer running as another user.
    const fd = this.open();
    try {
      // The length before this append: a write that fails part-way is cut back to it (see discardFailedWrite).
      const stats = fstatSync(fd);
      // Something else put at the path while the bridge runs (a FIFO, a device): nothing there is durable or where the
      // user looks, and a FIFO without a reader would block the process (signals included). Refused, nothing written,
      // so the engine acknowledges nothing and the next cycle writes the events once the path is a file again.
      if (!stats.isFile()) throw new Error(`${this.options.file} is not a regular file (${fileKindOf(stats)}): nothing was written; put a regular file there, or remove it`);
      // A file this publisher has not left so: its tail may be an append a power loss cut short.
      const size = this.synced === `${stats.dev}:${stats.ino}:${stats.size}` ? stats.size : this.cutPowerLossTear(fd, stats.size, stats.mode & 0o777);
      // Checked before every append (one byte read): another process on the same file (a `run --once` beside a
      // loop) may have been killed mid-append since this one last wrote.
      const kept = size > 0 ? this.cutTornLine(fd, size) : size;
      if (kept === undefined) {
        lines[0] = 0x0a;
        start = 0;
      }
      try {
        // Append mode: the write lands at the end. At most TORN_REGION_BYTES unsynced at a time, so the region a power
        // loss can tear stays within what the next process's first append checks.
        for (let at = start; at < lines.length; at += TORN_REGION_BYTES) {
          writeAll(fd, lines.subarray(at, Math.min(at + TORN_REGION_BYTES, lines.length)));
          fsyncSync(fd);
        }
        // A file this publisher has not made durable: one this open created (a first run, or after a rotation or a
        // removal took the old one away), or one another process created, and was killed mid-append (it then holds a
        // torn line or unacknowledged events) before it fsynced the directory, also after a rotation while this one
        // runs. Its name is durable only once the directory is fsynced too, and the engine acknowledges the events once
        // this returns.
        this.durable.makeDurable(this.options.file, stats);
        this.synced = `${stats.dev}:${stats.ino}:${(kept ?? size) + lines.length - start}`;
      } catch (err) {
        this.discardFailedWrite(fd, kept ?? size);
        throw err;
      }
    } finally {
      closeSync(fd);
    }
  }

  /**
   * Cuts off the region a power loss tore in the last append, and the lines after it: the file system may have written
   * that append's blocks out of order, leaving a block of NULs (which no line of the publisher holds: JSON escapes
   * them) before lines that did reach the disk, so the last line is whole and cutTornLine sees nothing. Only the last
   * TORN_REGION_BYTES can be unsynced (see write), and none of it was taken (the engine stores no snapshot before the
   * append's fsync returns): the next cycle writes those events again with the same `detail.id`. Cut from the start of
   * the first line holding a NUL there that starts as the publisher's do (see ownTearStart): lines of another's are
   * left, and do not hide a tear after them. NULs further back were synced before lines that may have been taken, and
   * are left. A file an older version wrote (it fsynced only after a whole batch) may hold lines synced, and taken,
   * after such a tear, never written again: what is cut is first saved durably to a recovery file (see saveCut).
   * Returns the new length. A save or a cut that fails throws, nothing written: an append over the tear would make it
   * synced, and the lines after it taken.
   */
  private cutPowerLossTear(fd: number, size: number, mode: number): number {
    const from = Math.max(0, size - TORN_REGION_BYTES);
    const read = Buffer.allocUnsafe(size - from);
    const region = read.subarray(0, readAt(fd, read, read.length, from));
    const cut = ownTearStart(fd, region, from, size);
    if (cut === undefined) return size;
    const tail = region.subarray(Math.max(0, cut - from));
    const lines = tail.reduce((count, byte) => count + (byte === 0x0a ? 1 : 0), region[region.length - 1] === 0x0a ? 0 : 1);
    const recovery = this.saveCut(fd, cut, size, mode);
    try {
      ftruncateSync(fd, cut);
    } catch (err) {
      throw new Error(`${this.options.file}: cannot cut off the ${size - cut} bytes from byte ${cut} on, which a power loss tore (${(err as Error).message}): nothing was written; they are saved in ${recovery}; cut them yourself (truncate -s ${cut})`, { cause: err });
    }
    this.options.logger?.warn(
      "events file: cut off lines a power loss tore, and the lines after them, saved to the recovery file; those of its events that reappear in the file were re-sent, any that do not may need replaying to consumers",
      { file: this.options.file, bytes: size - cut, lines, recovery },
    );
    return cut;
  }

  /**
   * Saves the bytes from `cut` on to `<file>.cut-<cut>` beside the events file, with its permission bits (narrowed by
   * the umask), durably: written whole under a temp name and linked into place, the directory fsynced; read, written
   * and compared a piece at a time (see pieces), as `cut` may lie far before the region checked (where a line of
   * several MiB, a large event's or a foreign file's, starts). A file of that name holding other bytes (an earlier cut
   * at the same byte: a second power loss during the append that followed it, or another events file of the same
   * name), or no regular file, is kept, and the next free name of `<file>.cut-<cut>.2`, `.3`, ... taken. A crash
   * before the cut that follows repeats the save at the next start, which finds the same bytes under the same name,
   * and keeps them. Returns its name; a save that fails throws, naming what to do by hand.
   */
  private saveCut(fd: number, cut: number, size: number, mode: number): string {
    const first = `${this.options.file}.cut-${cut}`;
    const problem = `${this.options.file}: cannot save the ${size - cut} bytes from byte ${cut} on, which a power loss tore, to ${first}[.<n>] before cutting them off`;
    const manual = `nothing was written; save them and cut them yourself (tail -c +${cut + 1} ${this.options.file} > <a file of your own>; truncate -s ${cut} ${this.options.file})`;
    const chunk = Buffer.allocUnsafe(Math.min(size - cut, TAIL_CHUNK_BYTES));
    try {
      for (let n = 1; n <= RECOVERY_NAMES; n += 1) {
        const recovery = n === 1 ? first : `${first}.${n}`;
        if (createFileOnceSync(recovery, pieces(fd, cut, size, chunk), { mode }) || holdsSameBytes(recovery, fd, cut, size)) return recovery;
      }
    } catch (err) {
      throw new Error(`${problem} (${(err as Error).message}): ${manual}`, { cause: err });
    }
    throw new Error(`${problem}: ${first} and ${first}.2 to .${RECOVERY_NAMES} already hold other bytes (earlier cuts); move them away, or ${manual}`);
  }

  /**
   * Cuts a line torn by an interrupted write off the end of the file: returns the new length (`size` when the last
   * line is whole), or undefined when the torn tail stays and the append must start with the newline at byte 0.
   */
  private cutTornLine(fd: number, size: number): number | undefined {
    const last = Buffer.alloc(1);
    readSync(fd, last, 0, 1, size - 1);
    if (last[0] === 0x0a) return size;
    const kept = endOfLastLine(fd, size);
    if (isOwnTornLine(fd, kept, size) && !isWholeEvent(fd, kept, size)) {
      try {
        ftruncateSync(fd, kept);
        this.options.logger?.warn("events file: cut off a line torn by an interrupted write; its events are written again", {
          file: this.options.file,
          bytes: size - kept,
        });
        return kept;
      } catch {
        // Closed off with a newline instead (below), as a foreign tail is.
      }
    }
    return undefined;
  }

  /**
   * A throw tells the engine nothing was published, and it re-sends: the half-written line must not stay, or the
   * re-sent event would be glued onto it and never parse. Cut the file back (the file has one writer, as the
   * torn-line check already assumes); should that fail too, the next append checks the tail and cuts it then.
   */
  private discardFailedWrite(fd: number, size: number): void {
    try {
      ftruncateSync(fd, size);
      fsyncSync(fd);
    } catch {
      // The tail check of the next append cuts the torn line off then.
    }
  }
}
