import { execFileSync, spawnSync } from "node:child_process";
import type * as nodeFs from "node:fs";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { envelopeLine, JsonlEventPublisher, toEventBridgeEnvelope, TORN_REGION_BYTES } from "../../shared/local/index.js";
import type { BridgeEvent } from "../../shared/bridge/ports.js";
import { pollTransactions } from "../../shared/bridge/transactions.js";
import { sampleEvent } from "../bridge/contract/index.js";
import { makeRig } from "../bridge/fakes.js";
import { tempDirPerTest } from "../temp-dir.js";

/**
 * Faults the next write (half the buffer lands, then ENOSPC) and, optionally, the truncation that cleans up after it;
 * records the most bytes left unsynced, and the most read or written in one call (what a buffer had to hold).
 */
const faults = vi.hoisted(() => ({
  tearNextWrite: false,
  failTruncate: false,
  failOpenOf: undefined as RegExp | undefined,
  /** Cuts the file read to this length just before a read at this position, as a copytruncate rotation would. */
  shrinkAt: undefined as { position: number; to: number } | undefined,
  /** fsync does nothing: for a test of hundreds of appends that checks what they write, not its durability. */
  skipSync: false,
  unsynced: 0,
  mostUnsynced: 0,
  mostInOneCall: 0,
  /** Truncations and fsyncs in order, to tell a cut back that was made durable from one left to the page cache. */
  syncs: [] as string[],
}));

vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof nodeFs>();
  const writeSync = ((fd: number, buffer: Uint8Array, offset?: number, length?: number) => {
    if (faults.tearNextWrite && length !== undefined) {
      faults.tearNextWrite = false;
      fs.writeSync(fd, buffer, offset, Math.floor(length / 2));
      throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
    }
    const written = fs.writeSync(fd, buffer, offset, length);
    faults.mostInOneCall = Math.max(faults.mostInOneCall, written);
    faults.unsynced += written;
    faults.mostUnsynced = Math.max(faults.mostUnsynced, faults.unsynced);
    return written;
  }) as typeof fs.writeSync;
  const fsyncSync = ((fd: number) => {
    faults.syncs.push("fsync");
    faults.unsynced = 0;
    if (!faults.skipSync) fs.fsyncSync(fd);
  }) as typeof fs.fsyncSync;
  const ftruncateSync = ((fd: number, len?: number) => {
    if (faults.failTruncate) throw Object.assign(new Error("EIO: i/o error, ftruncate"), { code: "EIO" });
    fs.ftruncateSync(fd, len);
    faults.syncs.push("truncate");
  }) as typeof fs.ftruncateSync;
  /** Fails opening a path that faults.failOpenOf matches, as a directory the bridge may not write in does. */
  const openSync = ((file: nodeFs.PathLike, ...rest: unknown[]) => {
    if (faults.failOpenOf?.test(String(file)) === true) throw Object.assign(new Error(`EACCES: permission denied, open '${String(file)}'`), { code: "EACCES" });
    return (fs.openSync as (...args: unknown[]) => number)(file, ...rest);
  }) as typeof fs.openSync;
  const readSync = ((...args: Parameters<typeof fs.readSync>) => {
    // The positional form, readSync(fd, buffer, offset, length, position), is the one the publisher calls.
    if (faults.shrinkAt !== undefined && (args as unknown[])[4] === faults.shrinkAt.position) {
      fs.ftruncateSync(args[0], faults.shrinkAt.to);
      faults.shrinkAt = undefined;
    }
    const read = fs.readSync(...args);
    faults.mostInOneCall = Math.max(faults.mostInOneCall, read);
    return read;
  }) as typeof fs.readSync;
  const readFileSync = ((...args: Parameters<typeof fs.readFileSync>) => {
    const content = fs.readFileSync(...args);
    faults.mostInOneCall = Math.max(faults.mostInOneCall, content.length);
    return content;
  }) as typeof fs.readFileSync;
  const mocked = { writeSync, ftruncateSync, fsyncSync, openSync, readSync, readFileSync };
  return { ...fs, default: { ...fs, ...mocked }, ...mocked };
});

let dir: string;
tempDirPerTest("bridge-jsonl-", (made) => (dir = made));
let file: string;
beforeEach(() => {
  file = path.join(dir, "events.jsonl");
  faults.tearNextWrite = false;
  faults.failTruncate = false;
  faults.failOpenOf = undefined;
  faults.shrinkAt = undefined;
  faults.skipSync = false;
  faults.unsynced = 0;
  faults.mostUnsynced = 0;
  faults.mostInOneCall = 0;
  faults.syncs.length = 0;
});

/** Detail ids of the file's lines; throws on a line that does not parse. */
async function detailIds(): Promise<string[]> {
  const lines = (await readFile(file, "utf8")).split("\n").filter(Boolean);
  return lines.map((line) => (JSON.parse(line) as { detail: { id: string } }).detail.id);
}

describe("JsonlEventPublisher after a write that fails part-way", () => {
  it("rejects the publish and cuts the half-written line off, so the re-sent events land on lines of their own", async () => {
    const publisher = new JsonlEventPublisher({ file });
    await publisher.publish([sampleEvent(1)]);
    faults.tearNextWrite = true;
    await expect(publisher.publish([sampleEvent(2), sampleEvent(3)])).rejects.toThrow(/ENOSPC/);
    expect(await detailIds()).toEqual([sampleEvent(1).detail.id]);
    await publisher.publish([sampleEvent(2), sampleEvent(3)]);
    expect(await detailIds()).toEqual([1, 2, 3].map((n) => sampleEvent(n).detail.id));
  });

  it("fsyncs the cut back before the publish rejects, so a power loss cannot bring back lines of events it refused", async () => {
    const publisher = new JsonlEventPublisher({ file });
    await publisher.publish([sampleEvent(1)]);
    faults.syncs.length = 0;
    faults.tearNextWrite = true;
    await expect(publisher.publish([sampleEvent(2), sampleEvent(3)])).rejects.toThrow(/ENOSPC/);
    // Unsynced, the cut could be lost with the power and the whole lines written before the fault kept: events the
    // engine was told were not published, which a consumer would see, perhaps in a version never re-sent.
    expect(faults.syncs).toEqual(["truncate", "fsync"]);
  });

  /** A publisher whose second publish tore its line and could not cut it back off the file; its warnings recorded. */
  async function tornAndNotCutBack(warnings: unknown[] = []): Promise<JsonlEventPublisher> {
    const publisher = new JsonlEventPublisher({ file, logger: { warn: (message) => warnings.push(message) } });
    await publisher.publish([sampleEvent(1)]);
    faults.tearNextWrite = true;
    faults.failTruncate = true;
    await expect(publisher.publish([sampleEvent(2)])).rejects.toThrow(/ENOSPC/);
    return publisher;
  }

  it("cuts the torn line off before the next append when it could not be cut back at once", async () => {
    const publisher = await tornAndNotCutBack();
    expect((await readFile(file, "utf8")).endsWith("\n")).toBe(false);
    faults.failTruncate = false;
    await publisher.publish([sampleEvent(2)]);
    expect(await detailIds()).toEqual([1, 2].map((n) => sampleEvent(n).detail.id));
  });

  it("cuts a failed write back to where the torn line it cut off began, not to the length the file had", async () => {
    const publisher = await tornAndNotCutBack();
    faults.failTruncate = false;
    faults.tearNextWrite = true;
    await expect(publisher.publish([sampleEvent(2)])).rejects.toThrow(/ENOSPC/);
    // Cut back to the old length, the file would grow NUL bytes where the torn line was.
    expect(await readFile(file, "utf8")).not.toContain("\0");
    expect(await detailIds()).toEqual([sampleEvent(1).detail.id]);
    await publisher.publish([sampleEvent(2)]);
    expect(await detailIds()).toEqual([1, 2].map((n) => sampleEvent(n).detail.id));
  });

  it("starts a new line after the torn one when the file cannot be cut back at all, and says it cut nothing", async () => {
    const warnings: unknown[] = [];
    const publisher = await tornAndNotCutBack(warnings);
    await publisher.publish([sampleEvent(2)]);
    const lines = (await readFile(file, "utf8")).split("\n").filter(Boolean);
    expect(lines).toHaveLength(3);
    expect(() => JSON.parse(lines[1] as string) as unknown).toThrow();
    expect((JSON.parse(lines[2] as string) as { detail: { id: string } }).detail.id).toBe(sampleEvent(2).detail.id);
    // The torn line stays: a warning that it was cut off would send the operator looking for a cut that never was.
    expect(warnings).toEqual([]);
  });

  it("loses no change when the engine re-sends in the same process after the failed cycle", async () => {
    const rig = makeRig({}, { publisher: new JsonlEventPublisher({ file }) });
    const first = rig.provider.addTransaction();
    await pollTransactions(rig.deps);
    const second = rig.provider.addTransaction();
    faults.tearNextWrite = true;
    await expect(pollTransactions(rig.deps)).rejects.toThrow(/publish events failed/);
    await pollTransactions(rig.deps);
    const lines = (await readFile(file, "utf8")).split("\n").filter(Boolean);
    const subjects = lines.map((line) => (JSON.parse(line) as { detail: { subject: { id: string } } }).detail.subject.id);
    expect(subjects).toEqual([first.id, second.id]);
    expect(rig.provider.pending()).toEqual([]);
  });
});

describe("JsonlEventPublisher and a power loss", () => {
  it("writes no more than the region the next process checks between two fsyncs, however large the batch", async () => {
    const event = sampleEvent(1);
    const big = { ...event, detail: { ...event.detail, data: { object: { ...event.detail.data.object, memo: "m".repeat(3 * TORN_REGION_BYTES) } } } };
    await new JsonlEventPublisher({ file }).publish([big, sampleEvent(2)]);
    expect(faults.mostUnsynced).toBeGreaterThan(0);
    expect(faults.mostUnsynced).toBeLessThanOrEqual(TORN_REGION_BYTES);
    expect(await detailIds()).toEqual([1, 2].map((n) => sampleEvent(n).detail.id));
  });

  it.each([
    ["cut a torn line off", '{"version":"0","id":"en', []],
    ["closed off a last line not its own", "notes kept by hand", ["notes kept by hand"]],
  ])("reads no more than the last byte after an append that %s: its own append left the file so", async (_what, tail, kept) => {
    const publisher = new JsonlEventPublisher({ file });
    await publisher.publish(Array.from({ length: 200 }, (_, n) => sampleEvent(n)));
    await writeFile(file, tail, { flag: "a" });
    await publisher.publish([sampleEvent(200)]);
    const before = (await readFile(file)).length;
    faults.mostInOneCall = 0;
    await publisher.publish([sampleEvent(201)]);
    expect(faults.mostInOneCall).toBe((await readFile(file)).length - before);
    const lines = (await readFile(file, "utf8")).split("\n").filter(Boolean);
    expect(lines.filter((line) => !line.startsWith("{"))).toEqual(kept);
    const ids = lines.filter((line) => line.startsWith("{")).map((line) => (JSON.parse(line) as { detail: { id: string } }).detail.id);
    expect(ids).toEqual(Array.from({ length: 202 }, (_, n) => sampleEvent(n).detail.id));
  });

  it("reads no more than the last byte of a file its own last append left so: none of it can hold a tear to look for", async () => {
    const publisher = new JsonlEventPublisher({ file });
    await publisher.publish(Array.from({ length: 200 }, (_, n) => sampleEvent(n)));
    const before = (await readFile(file)).length;
    faults.mostInOneCall = 0;
    await publisher.publish([sampleEvent(200)]);
    // The most in one call is the appended line's write; the region a power loss could tear would be the whole file.
    expect(faults.mostInOneCall).toBe((await readFile(file)).length - before);
  });

  it("writes nothing when it cannot cut off the lines a power loss tore, and says how to cut them", async () => {
    await new JsonlEventPublisher({ file }).publish([sampleEvent(1)]);
    const line = await readFile(file);
    const torn = Buffer.concat([line, line.subarray(0, 30), Buffer.alloc(512), line]);
    await writeFile(file, torn);
    faults.failTruncate = true;
    await expect(new JsonlEventPublisher({ file }).publish([sampleEvent(2)])).rejects.toThrow(
      `cannot cut off the ${torn.length - line.length} bytes from byte ${line.length} on`,
    );
    expect((await readFile(file)).equals(torn)).toBe(true);
    expect(`${String(await new JsonlEventPublisher({ file }).publish([sampleEvent(2)]).catch((err: Error) => err.message))}`).toContain(`truncate -s ${line.length}`);
  });

  /** One whole line, then one a power loss tore (a NUL block) followed by a whole line: what the cut takes. */
  async function tornFile(target: string): Promise<{ readonly kept: Buffer; readonly cut: Buffer }> {
    await new JsonlEventPublisher({ file: target, newId: () => "env" }).publish([sampleEvent(1)]);
    const line = await readFile(target);
    const cut = Buffer.concat([line.subarray(0, 30), Buffer.alloc(512), line]);
    await writeFile(target, Buffer.concat([line, cut]));
    return { kept: line, cut };
  }

  it("writes nothing, and cuts nothing, when it cannot save what it would cut, and says why and what to do", async () => {
    const { kept, cut } = await tornFile(file);
    const before = await readFile(file);
    faults.failOpenOf = /\.cut-/;
    const error = await new JsonlEventPublisher({ file }).publish([sampleEvent(2)]).then(
      () => undefined,
      (err: Error) => err.message,
    );
    expect(error).toContain(`cannot save the ${cut.length} bytes from byte ${kept.length} on`);
    expect(error).toContain("EACCES");
    expect(error).toContain(`${file}.cut-${kept.length}`);
    expect(error).toContain(`truncate -s ${kept.length}`);
    // The cut's first byte, counted from 1 as tail does.
    expect(error).toContain(`tail -c +${kept.length + 1} ${file} > <a file of your own>`);
    expect((await readFile(file)).equals(before)).toBe(true);
    expect(await readdir(dir)).toEqual(["events.jsonl"]);
  });

  it("saves once and ends with the same file when a crash comes between the save and the cut", async () => {
    const { kept, cut } = await tornFile(file);
    // The truncation fails right after the save, as if the process died there; the next start saves and cuts again.
    faults.failTruncate = true;
    await expect(new JsonlEventPublisher({ file, newId: () => "env" }).publish([sampleEvent(2)])).rejects.toThrow(/cannot cut off/);
    faults.failTruncate = false;
    await new JsonlEventPublisher({ file, newId: () => "env" }).publish([sampleEvent(2)]);
    expect(await readdir(dir)).toEqual(["events.jsonl", `events.jsonl.cut-${kept.length}`]);
    expect((await readFile(`${file}.cut-${kept.length}`)).equals(cut)).toBe(true);
    // The same as a start without the crash.
    const other = path.join(dir, "other");
    await mkdir(other);
    await tornFile(path.join(other, "events.jsonl"));
    await new JsonlEventPublisher({ file: path.join(other, "events.jsonl"), newId: () => "env" }).publish([sampleEvent(2)]);
    expect((await readFile(file)).equals(await readFile(path.join(other, "events.jsonl")))).toBe(true);
    expect(await detailIds()).toEqual([1, 2].map((n) => sampleEvent(n).detail.id));
  });

  it("keeps a recovery file of that name holding other bytes, and saves under the next free name", async () => {
    // An earlier cut at the same byte: of this file (see below), or of an events file of the same name before it.
    const { kept, cut } = await tornFile(file);
    await writeFile(`${file}.cut-${kept.length}`, "an earlier cut\n");
    await writeFile(`${file}.cut-${kept.length}.2`, "another earlier cut\n");
    // A crash between the save and the cut: the next start finds its own save again, under the same name.
    faults.failTruncate = true;
    await expect(new JsonlEventPublisher({ file, newId: () => "env" }).publish([sampleEvent(2)])).rejects.toThrow(`saved in ${file}.cut-${kept.length}.3`);
    faults.failTruncate = false;
    await new JsonlEventPublisher({ file, newId: () => "env" }).publish([sampleEvent(2)]);
    expect(await readFile(`${file}.cut-${kept.length}`, "utf8")).toBe("an earlier cut\n");
    expect(await readFile(`${file}.cut-${kept.length}.2`, "utf8")).toBe("another earlier cut\n");
    expect((await readFile(`${file}.cut-${kept.length}.3`)).equals(cut)).toBe(true);
    expect((await readdir(dir)).sort()).toEqual(["events.jsonl", ...[``, `.2`, `.3`].map((n) => `events.jsonl.cut-${kept.length}${n}`)]);
    expect(await detailIds()).toEqual([1, 2].map((n) => sampleEvent(n).detail.id));
  });

  it("takes a directory at a recovery name for one holding other bytes, and saves under the next free name", async () => {
    const { kept, cut } = await tornFile(file);
    await mkdir(`${file}.cut-${kept.length}`);
    await new JsonlEventPublisher({ file, newId: () => "env" }).publish([sampleEvent(2)]);
    expect(await readdir(`${file}.cut-${kept.length}`)).toEqual([]);
    expect((await readFile(`${file}.cut-${kept.length}.2`)).equals(cut)).toBe(true);
    expect(await detailIds()).toEqual([1, 2].map((n) => sampleEvent(n).detail.id));
  });

  it("takes a FIFO at a recovery name for one holding other bytes, at once, without waiting for a writer", async () => {
    const { kept, cut } = await tornFile(file);
    execFileSync("mkfifo", [`${file}.cut-${kept.length}`]);
    expect(publishInChild(file, 3)).toBe("published");
    expect((await readFile(`${file}.cut-${kept.length}.2`)).equals(cut)).toBe(true);
    expect(await detailIds()).toEqual([1, 0, 1, 2].map((n) => sampleEvent(n).detail.id));
  });

  it("refuses to cut when every recovery name holds other bytes, and leaves all the files", async () => {
    const { kept } = await tornFile(file);
    const before = await readFile(file);
    const names = Array.from({ length: 100 }, (_, i) => `${file}.cut-${kept.length}${i === 0 ? "" : `.${i + 1}`}`);
    for (const name of names) await writeFile(name, "an earlier cut\n");
    await expect(new JsonlEventPublisher({ file }).publish([sampleEvent(2)])).rejects.toThrow(
      `${names[0]} and ${names[0]}.2 to .100 already hold other bytes (earlier cuts); move them away, or nothing was written; save them and cut them yourself (tail -c +${kept.length + 1} `,
    );
    expect((await readFile(file)).equals(before)).toBe(true);
    for (const name of names) expect(await readFile(name, "utf8")).toBe("an earlier cut\n");
    expect(await readdir(dir)).toHaveLength(101);
  });

  /**
   * `tornFile`, but the torn line is a line of the publisher's opening and then 3 MiB without a newline before its NUL
   * block (a file that held something else, with huge lines): the cut starts 3 MiB before the region it checks.
   */
  async function farTornFile(target: string): Promise<{ readonly kept: Buffer; readonly cut: Buffer }> {
    await new JsonlEventPublisher({ file: target, newId: () => "env" }).publish([sampleEvent(1)]);
    const line = await readFile(target);
    const cut = Buffer.concat([line.subarray(0, 30), Buffer.alloc(3 * TORN_REGION_BYTES, "x"), Buffer.alloc(512), line]);
    await writeFile(target, Buffer.concat([line, cut]));
    return { kept: line, cut };
  }

  it("saves a cut far longer than the region it checks, and finds it saved again, a piece at a time: never held whole", async () => {
    const { kept, cut } = await farTornFile(file);
    // A crash between the save and the cut: the next start compares the recovery file with the cut.
    faults.failTruncate = true;
    await expect(new JsonlEventPublisher({ file, newId: () => "env" }).publish([sampleEvent(2)])).rejects.toThrow(`saved in ${file}.cut-${kept.length}`);
    faults.failTruncate = false;
    await new JsonlEventPublisher({ file, newId: () => "env" }).publish([sampleEvent(2)]);
    expect(await readdir(dir)).toEqual(["events.jsonl", `events.jsonl.cut-${kept.length}`]);
    expect((await readFile(`${file}.cut-${kept.length}`)).equals(cut)).toBe(true);
    expect(await detailIds()).toEqual([1, 2].map((n) => sampleEvent(n).detail.id));
    // No read or write of the 3 MiB at once: the region checked (see write) is the most held.
    expect(faults.mostInOneCall).toBeLessThanOrEqual(TORN_REGION_BYTES);
  });

  it("writes, saves and cuts nothing when the file shrinks while it saves a cut (a copytruncate rotation), and says so", async () => {
    const { kept } = await farTornFile(file);
    const shrunk = kept.length + 64 * 1024;
    faults.shrinkAt = { position: shrunk, to: shrunk };
    await expect(new JsonlEventPublisher({ file, newId: () => "env" }).publish([sampleEvent(2)])).rejects.toThrow(
      /cannot save .*\(the file shrank while being read\): nothing was written/,
    );
    expect(faults.shrinkAt).toBeUndefined();
    expect(await readdir(dir)).toEqual(["events.jsonl"]);
    expect((await readFile(file)).length).toBe(shrunk);
  });

  it.each([
    ["its last byte", (cut: Buffer) => Buffer.concat([cut.subarray(0, -1), Buffer.from("?")])],
    ["one byte in the middle", (cut: Buffer) => Buffer.concat([cut.subarray(0, 2 * TORN_REGION_BYTES), Buffer.from("?"), cut.subarray(2 * TORN_REGION_BYTES + 1)])],
    ["lacking the last byte", (cut: Buffer) => cut.subarray(0, -1)],
    ["one byte more", (cut: Buffer) => Buffer.concat([cut, Buffer.from("\n")])],
  ])("keeps a recovery file of that name that holds a cut far longer than one read but for %s, and saves under the next name", async (_what, earlier) => {
    const { kept, cut } = await farTornFile(file);
    await writeFile(`${file}.cut-${kept.length}`, earlier(cut));
    await new JsonlEventPublisher({ file, newId: () => "env" }).publish([sampleEvent(2)]);
    expect((await readFile(`${file}.cut-${kept.length}`)).equals(earlier(cut))).toBe(true);
    expect((await readFile(`${file}.cut-${kept.length}.2`)).equals(cut)).toBe(true);
    expect(faults.mostInOneCall).toBeLessThanOrEqual(TORN_REGION_BYTES);
  });

  it("goes on after a second power loss tears the append that followed a cut, at the same byte, keeping both cuts", async () => {
    const { kept, cut } = await tornFile(file);
    await new JsonlEventPublisher({ file, newId: () => "env" }).publish([sampleEvent(2)]);
    // Power fails again while the re-sent line is unsynced: its block lands as NULs, where the first cut began.
    const resent = (await readFile(file)).subarray(kept.length);
    const again = Buffer.concat([Buffer.alloc(resent.length - 1), Buffer.from("\n")]);
    await writeFile(file, Buffer.concat([kept, again]));
    await new JsonlEventPublisher({ file, newId: () => "env" }).publish([sampleEvent(2)]);
    expect(await detailIds()).toEqual([1, 2].map((n) => sampleEvent(n).detail.id));
    expect((await readFile(`${file}.cut-${kept.length}`)).equals(cut)).toBe(true);
    expect((await readFile(`${file}.cut-${kept.length}.2`)).equals(again)).toBe(true);
  });
});

describe("JsonlEventPublisher and a last line without its newline", () => {
  /** A publisher that records its warnings. */
  const publisherOf = (warnings: unknown[]) => new JsonlEventPublisher({ file, logger: { warn: (message, attributes) => warnings.push({ message, attributes }) } });

  /**
   * An event of 3 MiB whose object's text holds escapes and brackets that do not balance, inside a string: each unit's
   * JSON text (`a\"}}\\]x`) is 9 bytes, so reads of 64 KiB end at every byte of it, between the two of an escape too.
   */
  function largeEvent(n: number): BridgeEvent {
    const event = sampleEvent(n);
    const object = { ...event.detail.data.object, memo: 'a"}}\\]x'.repeat(TORN_REGION_BYTES / 3) };
    return { ...event, detail: { ...event.detail, data: { ...event.detail.data, object } } };
  }

  /** The file holding a small event's line, then a large one's, its newline dropped: returns the large one's line. */
  async function largeLastLine(): Promise<{ readonly first: Buffer; readonly line: Buffer }> {
    await new JsonlEventPublisher({ file }).publish([sampleEvent(1), largeEvent(2)]);
    const content = await readFile(file);
    const first = content.subarray(0, content.indexOf(0x0a) + 1);
    await writeFile(file, content.subarray(0, -1));
    faults.mostInOneCall = 0;
    return { first, line: content.subarray(first.length, -1) };
  }

  it("keeps a whole event of several MiB that lacks only its newline, judged a piece at a time: never held whole", async () => {
    await largeLastLine();
    const warnings: unknown[] = [];
    await publisherOf(warnings).publish([sampleEvent(3)]);
    expect(await detailIds()).toEqual([1, 2, 3].map((n) => sampleEvent(n).detail.id));
    expect(warnings).toEqual([]);
    // The region checked for a power loss's NUL bytes (see write) is the most read at once, not the 3 MiB line.
    expect(faults.mostInOneCall).toBeLessThanOrEqual(TORN_REGION_BYTES);
  });

  it.each([
    ["after all but its closing brace", (line: Buffer) => line.subarray(0, -1)],
    ["after the backslash of an escape 2 MiB in", (line: Buffer) => line.subarray(0, line.indexOf("\\", 2 * TORN_REGION_BYTES) + 1)],
    ["after the quote that ends its memo", (line: Buffer) => line.subarray(0, line.lastIndexOf('x"') + 2)],
    // Further back than the region checked for them (see cutPowerLossTear), inside a string: a file an older version wrote.
    ["by NUL bytes 1 MiB in", (line: Buffer) => Buffer.concat([line.subarray(0, TORN_REGION_BYTES), Buffer.alloc(4096), line.subarray(TORN_REGION_BYTES + 4096)])],
  ])("cuts an event of several MiB torn %s, judged a piece at a time", async (_what, tear) => {
    const { first, line } = await largeLastLine();
    const torn = tear(line);
    await writeFile(file, Buffer.concat([first, torn]));
    const warnings: unknown[] = [];
    await publisherOf(warnings).publish([sampleEvent(3)]);
    expect(await detailIds()).toEqual([1, 3].map((n) => sampleEvent(n).detail.id));
    expect(warnings).toEqual([{ message: expect.stringMatching(/torn/), attributes: { file, bytes: torn.length } }]);
    expect(faults.mostInOneCall).toBeLessThanOrEqual(TORN_REGION_BYTES);
  });

  it("keeps a last line that starts as its own and closes its brackets but does not parse: no line of its own cut short", async () => {
    const closes = '{"version":"0","id":"x", "notes": [kept by hand]}';
    await writeFile(file, closes);
    const warnings: unknown[] = [];
    await publisherOf(warnings).publish([sampleEvent(1)]);
    expect((await readFile(file, "utf8")).split("\n")).toEqual([closes, expect.stringContaining(sampleEvent(1).detail.id), ""]);
    expect(warnings).toEqual([]);
  });

  it("cuts every line of its own cut short at any byte, and keeps it whole, as parsing it would decide", async () => {
    const event = sampleEvent(2);
    const data = {
      object: { ...event.detail.data.object, memo: 'q"\\{[ \u2028 ☕', nested: { list: [1, { b: "}]" }, null] } },
      changes: [{ path: "/memo", before: null, after: { y: "]\\" } }],
      parent: { id: "txn-0", qashio_id: "CT0" },
    };
    const line = Buffer.from(envelopeLine(toEventBridgeEnvelope({ ...event, detail: { ...event.detail, data } }, { account: "1", region: "r", id: "env" })));
    const first = Buffer.from(envelopeLine(toEventBridgeEnvelope(sampleEvent(1), { account: "1", region: "r", id: "env" })) + "\n");
    faults.skipSync = true;
    const publisher = new JsonlEventPublisher({ file });
    for (let end = 1; end <= line.length; end += 1) {
      await writeFile(file, Buffer.concat([first, line.subarray(0, end)]));
      await publisher.publish([sampleEvent(3)]);
      const kept = (await readFile(file, "utf8")).split("\n").length === 4;
      expect({ end, kept }).toEqual({ end, kept: end === line.length });
    }
  });
});

/**
 * Publishes sampleEvent(0) to sampleEvent(count - 1) to `target` in a child process, as a blocked synchronous open or
 * write would hang this test's worker too; returns what it printed: "published", or "refused: " and the error's message.
 */
function publishInChild(target: string, count: number): string {
  const script = `
    const { JsonlEventPublisher } = await import(${JSON.stringify(new URL("../../shared/local/index.ts", import.meta.url).href)});
    const { sampleEvent } = await import(${JSON.stringify(new URL("../bridge/contract/index.ts", import.meta.url).href)});
    const events = Array.from({ length: ${count} }, (_, n) => sampleEvent(n));
    await new JsonlEventPublisher({ file: ${JSON.stringify(target)}, newId: () => "env" }).publish(events).then(
      () => console.log("published"),
      (err) => console.log("refused: " + err.message),
    );
  `;
  const child = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { encoding: "utf8", timeout: 20_000 });
  expect(child.signal).toBeNull();
  expect(child.stderr).toBe("");
  return child.stdout.trim();
}

describe("JsonlEventPublisher when its path is no longer a regular file", () => {
  it("refuses a FIFO put in the file's place without writing to it, at once, instead of blocking the process", () => {
    // A FIFO nobody reads: a write larger than the pipe's buffer (64 KiB on Linux) used to block the whole process
    // (timers, lease renewal, SIGTERM and Ctrl-C handlers) until a reader came; a smaller one went into the pipe and
    // failed at the fsync. Run in a child, as a blocked synchronous write would hang this test's worker too.
    const fifo = path.join(dir, "events.jsonl");
    execFileSync("mkfifo", [fifo]);
    expect(publishInChild(fifo, 400)).toBe(`refused: ${fifo} is not a regular file (a pipe): nothing was written; put a regular file there, or remove it`);
  });
});
