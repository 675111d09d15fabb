/**
 * One segment file, written and read back: a header or line this version cannot trust (cut short, another version,
 * another key) is refused naming the file, never taken for an empty segment or another snapshot.
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { beforeEach, describe, expect, it, vi } from "vitest";
import type { Snapshot, SnapshotKey } from "../../shared/bridge/ports.js";
import { ScratchBuffer } from "../../shared/local/atomic.js";
import type * as keyIndex from "../../shared/local/key-index.js";
import { encodeHeader, encodeSegment, readEntries, readSegmentHeader } from "../../shared/local/snapshot-segment.js";
import { snapshotOf } from "./snapshot-fixtures.js";
import { tempDirPerTest } from "../temp-dir.js";

/** Two keys taken as sharing one fingerprint: a real 64-bit collision is too rare to find. */
const colliding = new Set(["card:twin-1", "card:twin-2"]);
vi.mock("../../shared/local/key-index.js", async (importOriginal) => {
  const real = await importOriginal<typeof keyIndex>();
  const sameFingerprint = (wanted: string, found: string) => real.sameFingerprint(wanted, found) || (colliding.has(wanted) && colliding.has(found));
  return { ...real, sameFingerprint };
});

let dir: string;
let file: string;
tempDirPerTest("bridge-snapshot-segment-", (made) => (dir = made));
beforeEach(() => {
  file = path.join(dir, "seg-000000000001-deadbeef.log");
});

const line = '{"key":"card:a","hash":"h","object":{},"updatedAt":"2025-01-01T00:00:00.000Z"}';

/** Writes `file` as a segment whose header lists `text` (its whole length) for card:a, with `body` as its body. */
async function writeSegmentOf(text: string, body = `${text}\n`): Promise<{ key: string; offset: number; length: number }> {
  const header = encodeHeader([["card:a", 0, text.length]]);
  await writeFile(file, Buffer.concat([header, Buffer.from(body)]));
  return { key: "card:a", offset: header.length, length: text.length };
}

/** The CorruptStateError naming the segment file, with `message`. */
const corrupt = (message: string) => expect.objectContaining({ name: "CorruptStateError", message, file });

describe("readSegmentHeader", () => {
  it("reads back a header of many reads (over 64 KiB, as a compaction batch of small snapshots writes), then a small one", async () => {
    // 3000 entries of about 60 bytes: the header buffer grows twice, and keeps what each earlier read put in it.
    const snapshots = Array.from({ length: 3000 }, (_, i) => snapshotOf(`transaction:${String(i).padStart(36, "0")}`, 1, 8));
    const { entries, body } = encodeSegment(snapshots, new ScratchBuffer());
    const header = encodeHeader(entries);
    expect(header.length).toBeGreaterThan(128 * 1024);
    await writeFile(file, Buffer.concat([header, body]));
    expect(readSegmentHeader(file)).toEqual({ entries, bodyStart: header.length });
    const wanted = entries.map(([key, offset, length]) => ({ key, offset: header.length + offset, length }));
    expect(readEntries(file, wanted)).toEqual(snapshots);

    const at = await writeSegmentOf(line);
    expect(readSegmentHeader(file)).toEqual({ entries: [["card:a", 0, line.length]], bodyStart: at.offset });
  });

  it("reads the entries and where the body starts", async () => {
    const at = await writeSegmentOf(line);
    expect(readSegmentHeader(file)).toEqual({ entries: [["card:a", 0, line.length]], bodyStart: at.offset });
  });

  it.each([
    // A file cut short inside its header (no newline yet): not an empty segment, whose snapshots would be lost.
    ["cut short inside its header", `{"v":1,"entries":[["card:a",0,${line.length}]`],
    // A later version's format: its entries may mean something else.
    ["of another version", `{"v":2,"entries":[["card:a",0,${line.length}]]}\n${line}\n`],
    ["without entries", `{"v":1}\n${line}\n`],
    // A damaged or foreign file: its entries would send reads astray, or count the segment empty and delete it.
    ["listing an entry that is not a list", `{"v":1,"entries":[1]}\n${line}\n`],
    ["listing an entry whose key is not a string", `{"v":1,"entries":[[7,0,${line.length}]]}\n${line}\n`],
    ["listing an entry of a negative length", `{"v":1,"entries":[["card:a",0,-1]]}\n${line}\n`],
    ["listing an entry at an offset that is not a whole number", `{"v":1,"entries":[["card:a","0",${line.length}]]}\n${line}\n`],
    ["listing an entry longer than the key index holds (32 bits)", `{"v":1,"entries":[["card:a",0,${2 ** 32}]]}\n${line}\n`],
  ])("refuses a header %s, naming the file", async (_, text) => {
    await writeFile(file, text);
    expect(() => readSegmentHeader(file)).toThrow(corrupt("Snapshot segment header is unreadable"));
    // What was wrong with it (the parser's error, or the shape found) goes along as the cause.
    expect(() => readSegmentHeader(file)).toThrow(expect.objectContaining({ cause: expect.any(Error) }));
  });
});

describe("readEntries", () => {
  it.each([
    ["another key", line.replace('"card:a"', '"card:b"')],
    ["no key", line.replace('"key":"card:a",', "")],
    ["a key that is not text", line.replace('"card:a"', "7")],
  ])("refuses a line holding %s where the header names card:a, naming the file", async (_, text) => {
    const at = await writeSegmentOf(text);
    expect(() => readEntries(file, [at])).toThrow(corrupt("Snapshot segment entry does not hold the key its header names"));
  });

  it("reads no snapshot for a key whose line holds another key of its fingerprint (a collision), never the other key's", async () => {
    const at = await writeSegmentOf(line.replace('"card:a"', '"card:twin-2"'));
    expect(readEntries(file, [{ ...at, key: "card:twin-1" }])).toEqual([]);
  });

  it("refuses a line that is not JSON without quoting it: no cause carries the stored object's text", async () => {
    const at = await writeSegmentOf(line.replace("{}", '{"card_holder_name":"Ann Holder"'));
    let thrown: unknown;
    try {
      readEntries(file, [at]);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toEqual(corrupt("Snapshot segment entry is not valid JSON"));
    expect((thrown as Error).cause).toBeUndefined();
  });

  it("refuses a line whose sequence is not a whole number of at least 0, naming the file", async () => {
    const at = await writeSegmentOf(line.replace(/}$/, ',"sequence":-1}'));
    expect(() => readEntries(file, [at])).toThrow(corrupt("Snapshot segment entry has a sequence that is not a whole number of at least 0"));
  });

  it("refuses a segment shorter than its header says (a body cut short), naming the file", async () => {
    const at = await writeSegmentOf(line, line.slice(0, -5));
    expect(() => readEntries(file, [at])).toThrow(corrupt("Snapshot segment is shorter than its header says"));
  });
});

describe("encodeSegment", () => {
  /** The snapshots of the lines `entries` lists in `body`. */
  const linesOf = (entries: [string, number, number][], body: Buffer): unknown[] =>
    entries.map(([, offset, length]) => JSON.parse(body.subarray(offset, offset + length).toString("utf8")));
  const snapshot = (key: SnapshotKey, hash: string, object: Record<string, unknown>): Snapshot => ({ key, hash, object, updatedAt: "2025-01-01T00:00:00.000Z" });

  it("writes one line for a key given twice in one call, the last one: the replaced version never reaches the disk", () => {
    const { entries, body } = encodeSegment(
      [snapshot("card:a", "h1", { name: "Old Holder" }), snapshot("card:b", "h", {}), snapshot("card:a", "h2", { name: "[redacted]" })],
      new ScratchBuffer(),
    );
    expect(linesOf(entries, body)).toEqual([snapshot("card:a", "h2", { name: "[redacted]" }), snapshot("card:b", "h", {})]);
    expect(body.toString("utf8")).not.toContain("Old Holder");
  });

  it("encodes whole a snapshot of more bytes than characters, past the scratch buffer's first size", () => {
    // Three bytes a character, 3 MB in all: a bound counting characters as bytes would cut the line short.
    const big = snapshot("card:big", "h", { text: "€".repeat(1_000_000) });
    const { entries, body } = encodeSegment([big], new ScratchBuffer());
    expect(linesOf(entries, body)).toEqual([big]);
    expect(body.length).toBe((entries[0]?.[2] ?? 0) + 1);
  });
});
