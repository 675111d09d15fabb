/** FileSnapshotStore walks and vacuum: segments rewritten or compacted under a walk, and no replaced byte left on disk. */
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { Snapshot, SnapshotKey, SnapshotPage } from "../../shared/bridge/ports.js";
import { FileSnapshotStore } from "../../shared/local/snapshot-store.js";
import { snapshotOf } from "./snapshot-fixtures.js";
import { tempDirPerTest } from "../temp-dir.js";

let dir: string;
tempDirPerTest("bridge-scan-", (made) => (dir = made));

async function segmentNames(): Promise<string[]> {
  return (await readdir(path.join(dir, "snapshots"))).filter((name) => name.endsWith(".log"));
}

/** Everything under the store's directory, as text (segments are JSON lines). */
async function diskText(): Promise<string> {
  const folder = path.join(dir, "snapshots");
  const names = await readdir(folder).catch(() => []);
  const texts = await Promise.all(names.map((name) => readFile(path.join(folder, name), "utf8")));
  return texts.join("\n");
}

async function walkAll(store: FileSnapshotStore, limit: number, onPage?: (page: SnapshotPage) => Promise<void>): Promise<Snapshot[]> {
  const seen: Snapshot[] = [];
  let cursor: string | undefined;
  for (let pages = 0; ; pages++) {
    if (pages > 1_000) throw new Error("the walk does not end");
    const page = await store.scan({ limit, ...(cursor === undefined ? {} : { cursor }) });
    seen.push(...page.snapshots);
    await onPage?.(page);
    cursor = page.cursor;
    if (cursor === undefined) return seen;
  }
}

const person = (key: SnapshotKey, name: string): Snapshot => ({
  key,
  hash: `h-${key}`,
  object: { id: key, card_holder_name: name },
  updatedAt: "2025-01-15T10:00:00.000Z",
});

describe("FileSnapshotStore scan", () => {
  it("meets every snapshot while compaction moves entries out of the segments ahead of the walk", async () => {
    const store = new FileSnapshotStore(dir, { compactMinDeadBytes: 0, compactBatchBytes: 4 * 1024 });
    const keys = Array.from({ length: 60 }, (_, i): SnapshotKey => `transaction:t${i}`);
    for (let i = 0; i < keys.length; i += 10) await store.putMany(keys.slice(i, i + 10).map((key) => snapshotOf(key, 1, 200)));
    const hot = keys.filter((_, i) => i % 7 === 3);
    const withCard: string[] = [];
    let version = 1;
    const seen = await walkAll(store, 6, async () => {
      // Each page adds a card and rewrites the same hot keys: the segments written so turn sparse once the hot keys
      // move on, and compaction moves their cards to a newer segment. A walk meets rewritten entries again, so it ends
      // only once the writes stop (as a re-masking pass's do).
      if (version > 12) return;
      version += 1;
      await store.putMany([snapshotOf(`card:CA${version}`, version, 200), ...hot.map((key) => snapshotOf(key, version, 200))]);
      withCard.push((await segmentNames()).sort().at(-1) ?? "");
    });
    // No card is written twice: a segment that held one is gone only because compaction moved it.
    expect(withCard.filter((name) => !existsSync(path.join(dir, "snapshots", name))).length).toBeGreaterThan(0);
    const cards = Array.from({ length: 12 }, (_, i): SnapshotKey => `card:CA${i + 2}`);
    expect(new Set(seen.map((s) => s.key))).toEqual(new Set([...keys, ...cards]));
  });

  it("goes on from a cursor whose segment was emptied since, into the segments that took its entries", async () => {
    const store = new FileSnapshotStore(dir);
    const keys = Array.from({ length: 40 }, (_, i): SnapshotKey => `card:CA${i}`);
    await store.putMany(keys.map((key) => snapshotOf(key, 1, 50)));
    const first = await store.scan({ limit: 10 });
    await store.putMany(keys.map((key) => snapshotOf(key, 2, 50)));
    const rest: Snapshot[] = [];
    for (let cursor = first.cursor; cursor !== undefined; ) {
      const page = await new FileSnapshotStore(dir).scan({ limit: 10, cursor });
      rest.push(...page.snapshots);
      cursor = page.cursor;
    }
    expect(new Set(rest.map((s) => s.key))).toEqual(new Set(keys));
    expect(rest.every((s) => s.hash === "h2")).toBe(true);
  });

  it("refuses a cursor of its own id naming a segment it never wrote, and one of the store its directory held before", async () => {
    const store = new FileSnapshotStore(dir);
    await store.putMany(Array.from({ length: 20 }, (_, i) => snapshotOf(`card:CA${i}`, 1, 50)));
    const { cursor } = await store.scan({ limit: 5 });
    expect(cursor).toMatch(/^[0-9a-f]{16}\.000000000001-[0-9a-f]{8}:4$/);
    const beyond = (cursor as string).replace(/\.\d{12}-/, ".000000000002-");
    await expect(new FileSnapshotStore(dir).scan({ limit: 10, cursor: beyond })).rejects.toMatchObject({ name: "SnapshotCursorError" });
    // A cursor of the form before stores had an id, past every segment: once walked nothing and reported the end.
    await expect(new FileSnapshotStore(dir).scan({ limit: 10, cursor: "000000000099-abcdef01:3" })).rejects.toMatchObject({ name: "SnapshotCursorError" });
    expect((await new FileSnapshotStore(dir).scan({ limit: 10, cursor })).snapshots).toHaveLength(10);

    await rm(path.join(dir, "snapshots"), { recursive: true });
    const replaced = new FileSnapshotStore(dir);
    await replaced.putMany(Array.from({ length: 20 }, (_, i) => snapshotOf(`card:CA${i}`, 2, 50)));
    await expect(replaced.scan({ limit: 10, cursor })).rejects.toMatchObject({ name: "SnapshotCursorError" });
  });

  it("keeps reading and writing with a damaged store id file, and names the file when a cursor needs the id", async () => {
    const store = new FileSnapshotStore(dir);
    await store.putMany(Array.from({ length: 6 }, (_, i) => snapshotOf(`card:CA${i}`, 1, 50)));
    const { cursor } = await store.scan({ limit: 2 });
    const idFile = path.join(dir, "snapshots", "store-id");
    await writeFile(idFile, "not an id\n");
    const reopened = new FileSnapshotStore(dir);
    expect((await reopened.getMany(["card:CA1"])).get("card:CA1")).toEqual(snapshotOf("card:CA1", 1, 50));
    await reopened.putMany([snapshotOf("card:CA9", 1, 50)]);
    expect((await reopened.scan({ limit: 100 })).snapshots).toHaveLength(7);
    await expect(reopened.scan({ limit: 2, cursor })).rejects.toMatchObject({ name: "CorruptStateError", file: idFile, message: expect.stringMatching(/deleting the file/) });
  });

  it("meets every snapshot of two segments of one sequence number (two writers without the lock)", async () => {
    const one = new FileSnapshotStore(dir);
    const two = new FileSnapshotStore(dir);
    // Both load the empty directory first, so each numbers its segment 1: the walk orders them by name.
    await one.size();
    await two.size();
    await one.putMany(Array.from({ length: 5 }, (_, i) => snapshotOf(`card:one-${i}`, 1, 50)));
    await two.putMany(Array.from({ length: 5 }, (_, i) => snapshotOf(`card:two-${i}`, 1, 50)));
    expect((await segmentNames()).map((name) => name.slice(0, 16))).toEqual(["seg-000000000001", "seg-000000000001"]);
    const seen = await walkAll(new FileSnapshotStore(dir), 3);
    expect(seen.map((s) => s.key).sort()).toEqual([...Array.from({ length: 5 }, (_, i) => `card:one-${i}`), ...Array.from({ length: 5 }, (_, i) => `card:two-${i}`)].sort());
  });

  it.each(["", "seg-000000000001-abcdef01.log:0", "000000000001-ABCDEF01:0", "000000000001-abcdef01:-1", "000000000001-abcdef01"])(
    "refuses the cursor %j",
    async (cursor) => {
      await expect(new FileSnapshotStore(dir).scan({ limit: 10, cursor })).rejects.toMatchObject({ name: "SnapshotCursorError" });
    },
  );
});

describe("FileSnapshotStore vacuum", () => {
  it("leaves no byte of a replaced version on disk, while segments still hold other live entries", async () => {
    const store = new FileSnapshotStore(dir);
    // Each page holds people and entries without PII (aliases): rewriting the people alone leaves every segment live.
    for (let page = 0; page < 5; page++) {
      await store.putMany([
        ...Array.from({ length: 10 }, (_, i) => person(`transaction:p${page}-${i}`, `Cleartext Holder ${page}-${i}`)),
        ...Array.from({ length: 10 }, (_, i) => ({ ...person(`transaction:qashio_id:CT${page}${i}`, ""), object: { id: `p${page}-${i}` } })),
      ]);
    }
    const people = (await walkAll(store, 100)).filter((s) => s.object["card_holder_name"]);
    await store.putMany(people.map((s) => ({ ...s, object: { ...s.object, card_holder_name: "[redacted]" } })));
    expect(await diskText()).toContain("Cleartext Holder");

    await store.vacuum();
    expect(await diskText()).not.toContain("Cleartext Holder");
    const all = await walkAll(new FileSnapshotStore(dir), 100);
    expect(all).toHaveLength(100);
    expect(all.filter((s) => s.object["card_holder_name"] === "[redacted]")).toHaveLength(50);
  });

  it("refuses to copy an entry that does not end where its segment's header says, and keeps the segment", async () => {
    // Copied on, the line would be cut short in the new segment and the old one, with the whole line, deleted.
    const folder = path.join(dir, "snapshots");
    await mkdir(folder, { recursive: true });
    const [ann, bob] = [JSON.stringify(person("card:a", "Ann")), JSON.stringify(person("card:b", "Bob"))];
    const header = JSON.stringify({ v: 1, entries: [["card:a", 0, ann.length - 1], ["card:b", ann.length + 1, bob.length]] });
    const segment = path.join(folder, "seg-000000000001-deadbeef.log");
    await writeFile(segment, `${header}\n${ann}\n${bob}\n`);
    const store = new FileSnapshotStore(dir);
    await store.putMany([person("card:b", "[redacted]")]);
    await expect(store.vacuum()).rejects.toMatchObject({ name: "CorruptStateError", message: "Snapshot segment entry does not end where its header says", file: segment });
    expect(existsSync(segment)).toBe(true);
  });

  it("gives the event loop's timers a turn at each batch: a long vacuum lets a timer (the lease renewal) fire", async () => {
    // One entry a batch (a larger single entry goes alone), no compaction or merge in putMany: only the vacuum runs batches.
    let fired = false;
    /** Whether the timer had fired, as each batch of the vacuum starts. */
    const batchesSeen: boolean[] = [];
    const store = new FileSnapshotStore(dir, { compactBatchBytes: 1, compactMinDeadBytes: 1e9, mergeFanIn: 1_000, beforeCompaction: async () => void batchesSeen.push(fired) });
    for (let i = 0; i < 3; i++) await store.putMany([snapshotOf(`card:a${i}`, 1, 50), snapshotOf(`card:b${i}`, 1, 50)]);
    await store.putMany(Array.from({ length: 3 }, (_, i) => snapshotOf(`card:a${i}`, 2, 50)));
    setTimeout(() => {
      fired = true;
    }, 0);
    // The timer is due before the vacuum starts: it fires at the latest in the loop turn after the first batch's.
    for (const due = Date.now() + 5; Date.now() < due; );
    await store.vacuum();
    // Three batches that copy, then one that finds nothing left.
    expect(batchesSeen).toHaveLength(4);
    expect(batchesSeen.slice(1)).toEqual([true, true, true]);
  });

  it("writes nothing when no segment holds a replaced entry", async () => {
    const store = new FileSnapshotStore(dir);
    await store.putMany([person("card:CA1", "Ann"), person("card:CA2", "Bob")]);
    const before = await readdir(path.join(dir, "snapshots"));
    await store.vacuum();
    expect(await readdir(path.join(dir, "snapshots"))).toEqual(before);
  });

  it("gives the event loop's timers a turn at each page: a walk of scans alone lets a timer (the lease renewal) fire", async () => {
    const store = new FileSnapshotStore(dir);
    await store.putMany(Array.from({ length: 3 }, (_, i) => snapshotOf(`card:c${i}`, 1, 50)));
    let fired = false;
    setTimeout(() => {
      fired = true;
    }, 0);
    let cursor: string | undefined;
    for (let page = 0; page < 10_000 && !fired; page++) cursor = (await store.scan({ limit: 1, ...(cursor === undefined ? {} : { cursor }) })).cursor;
    expect(fired).toBe(true);
  });
});
