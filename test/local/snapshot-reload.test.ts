/**
 * FileSnapshotStore.reload: a store kept open across cycles (run --interval) stays in step with what other processes
 * (each run --once a fresh store) wrote and compacted between its turns.
 */
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Snapshot, SnapshotKey } from "../../shared/bridge/ports.js";
import { FileSnapshotStore, type FileSnapshotStoreOptions } from "../../shared/local/snapshot-store.js";
import { expectReadsModel, snapshotOf as snap } from "./snapshot-fixtures.js";
import { tempDirPerTest } from "../temp-dir.js";

/** Small thresholds, so compaction (which deletes segments) happens within a few writes. */
const options: FileSnapshotStoreOptions = { compactMinDeadBytes: 4 * 1024, compactBatchBytes: 4 * 1024 };

let dir: string;
tempDirPerTest("bridge-reload-", (made) => (dir = made));

describe("FileSnapshotStore.reload", () => {
  it("finds the snapshots another store wrote since, and none of the segments it deleted", async () => {
    const kept = new FileSnapshotStore(dir, options);
    await kept.putMany([snap("card:a", 1, 600), snap("card:b", 1, 600)]);
    const other = new FileSnapshotStore(dir, options);
    await other.putMany([snap("card:a", 2, 600), snap("card:c", 1, 600)]);
    await other.vacuum();

    // Without a reload the kept store reads a deleted segment (and knows nothing of "c").
    await expect(kept.getMany(["card:a"])).rejects.toThrow(/ENOENT/);
    await kept.reload();
    await expectReadsModel(kept, new Map([["card:a", snap("card:a", 2, 600)], ["card:b", snap("card:b", 1, 600)], ["card:c", snap("card:c", 1, 600)]]));
  });

  it("writes after a reload supersede what the other store wrote, as a fresh store reads them", async () => {
    const kept = new FileSnapshotStore(dir, options);
    await kept.putMany([snap("card:a", 1, 100)]);
    const other = new FileSnapshotStore(dir, options);
    await other.putMany([snap("card:a", 2, 100)]);
    await other.putMany([snap("card:a", 3, 100)]);
    await kept.reload();
    await kept.putMany([snap("card:a", 4, 100)]);
    await expectReadsModel(new FileSnapshotStore(dir, options), new Map([["card:a", snap("card:a", 4, 100)]]));
  });

  it("writes a putMany called while a reload is under way after that reload: its snapshot supersedes what the other store wrote", async () => {
    const kept = new FileSnapshotStore(dir, options);
    expect(await kept.size()).toBe(0);
    const other = new FileSnapshotStore(dir, options);
    for (let version = 1; version <= 3; version++) await other.putMany([snap("card:a", version, 100)]);
    // Not awaited one by one: the write must still wait for the reload, or it goes out under a sequence number the
    // other store's newer segments outrank.
    await Promise.all([kept.reload(), kept.putMany([snap("card:a", 4, 100)])]);
    await expectReadsModel(kept, new Map([["card:a", snap("card:a", 4, 100)]]));
    await expectReadsModel(new FileSnapshotStore(dir, options), new Map([["card:a", snap("card:a", 4, 100)]]));
  });

  it("writes again after its snapshots directory was removed (a state directory restored without one)", async () => {
    const store = new FileSnapshotStore(dir);
    await store.putMany([snap("transaction:a", 1, 100)]);
    await rm(path.join(dir, "snapshots"), { recursive: true, force: true });
    await store.reload();
    await store.putMany([snap("transaction:b", 1, 100)]);
    await expectReadsModel(new FileSnapshotStore(dir), new Map([["transaction:b", snap("transaction:b", 1, 100)]]));
    expect((await new FileSnapshotStore(dir).getMany(["transaction:a"])).size).toBe(0);
    // The reloaded store itself holds nothing of the removed directory either.
    expect((await store.getMany(["transaction:a"])).size).toBe(0);
    expect(await store.size()).toBe(1);
  });

  it("loads again after a failed load once the damaged segment is gone, though the others are as it saw them", async () => {
    await new FileSnapshotStore(dir, options).putMany([snap("card:a", 1, 100)]);
    const damaged = path.join(dir, "snapshots", "seg-000000000002-deadbeef.log");
    await writeFile(damaged, "not json\n");
    const kept = new FileSnapshotStore(dir, options);
    await expect(kept.getMany(["card:a"])).rejects.toMatchObject({ name: "CorruptStateError", file: damaged });
    // The operator removes the damaged segment: the files left are the ones the failed load had read.
    await rm(damaged);
    await kept.reload();
    await expectReadsModel(kept, new Map([["card:a", snap("card:a", 1, 100)]]));
  });

  it("refuses, once reloaded, a cursor of the store its directory held before, and hands out cursors of the new one", async () => {
    const kept = new FileSnapshotStore(dir);
    await kept.putMany(Array.from({ length: 6 }, (_, i) => snap(`card:c${i}`, 1, 50)));
    const before = await kept.scan({ limit: 2 });
    // The directory is replaced (a restore): another store, with another id, writes there.
    await rm(path.join(dir, "snapshots"), { recursive: true });
    const other = new FileSnapshotStore(dir);
    await other.putMany(Array.from({ length: 6 }, (_, i) => snap(`card:c${i}`, 2, 50)));
    await other.scan({ limit: 2 });
    await kept.reload();
    await expect(kept.scan({ limit: 2, cursor: before.cursor })).rejects.toMatchObject({ name: "SnapshotCursorError" });
    const { cursor } = await kept.scan({ limit: 2 });
    expect((await new FileSnapshotStore(dir).scan({ limit: 10, ...(cursor === undefined ? {} : { cursor }) })).snapshots).toHaveLength(4);
  });

  it("counts live and dead bytes once reloaded as a fresh store does: no compaction while dead bytes are under the live ones, one once they outweigh them", async () => {
    const tuned: FileSnapshotStoreOptions = { compactMinDeadBytes: 1024, compactBatchBytes: 16 * 1024, mergeBelowBytes: 0 };
    const kept = new FileSnapshotStore(dir, tuned);
    const key = (page: number, i: number): SnapshotKey => `transaction:t${page}-${i}`;
    for (let page = 0; page < 10; page++) await kept.putMany(Array.from({ length: 10 }, (_, i) => snap(key(page, i), 1, 400)));
    const [first, second] = (await readdir(path.join(dir, "snapshots"))).filter((name) => name.endsWith(".log")).sort();
    // Six of the first segment's ten rewritten: it is sparse, but the store holds far more live bytes than dead.
    await kept.putMany(Array.from({ length: 6 }, (_, i) => snap(key(0, i), 2, 400)));
    await new FileSnapshotStore(dir, tuned).putMany([snap("transaction:other", 1, 40)]);
    await kept.reload();
    await kept.putMany([snap("transaction:after-reload", 1, 40)]);
    expect(await readdir(path.join(dir, "snapshots"))).toContain(first);
    // Nine of every ten rewritten small: dead bytes now outweigh the live ones, and compaction empties the old segments
    // (the second keeps one live entry: only compaction removes it).
    await kept.putMany(Array.from({ length: 10 }, (_, page) => Array.from({ length: 9 }, (_, i) => snap(key(page, i + 1), 3, 0))).flat());
    expect(await readdir(path.join(dir, "snapshots"))).not.toContain(second);
  });

  it("does nothing before the first load, and keeps the index when nothing changed on disk", async () => {
    const kept = new FileSnapshotStore(dir, options);
    await kept.reload();
    await kept.putMany([snap("card:a", 1, 100)]);
    await kept.reload();
    await expectReadsModel(kept, new Map([["card:a", snap("card:a", 1, 100)]]));
  });

  it("keeps a long-lived store and fresh ones, taking turns in any order, reading every key's last write", async () => {
    const turn = fc.record({
      byKept: fc.boolean(),
      writes: fc.array(fc.tuple(fc.constantFrom<SnapshotKey>("card:a", "card:b", "card:c", "card:d", "card:e"), fc.integer({ min: 50, max: 900 })), { minLength: 1, maxLength: 4 }),
      vacuum: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(turn, { minLength: 1, maxLength: 8 }), async (turns) => {
        const root = await mkdtemp(path.join(dir, "run-"));
        const kept = new FileSnapshotStore(root, options);
        const model = new Map<SnapshotKey, Snapshot>();
        let version = 0;
        for (const { byKept, writes, vacuum } of turns) {
          // Each turn holds the cycle lease: the kept store reloads, another run opens a store of its own.
          const store = byKept ? kept : new FileSnapshotStore(root, options);
          if (byKept) await kept.reload();
          const batch = writes.map(([key, size]) => snap(key, ++version, size));
          await store.putMany(batch);
          for (const s of batch) model.set(s.key, s);
          if (vacuum) await store.vacuum();
          await expectReadsModel(store, model);
        }
        await kept.reload();
        await expectReadsModel(kept, model);
        await expectReadsModel(new FileSnapshotStore(root, options), model);
      }),
      { numRuns: 40 },
    );
  });
});
