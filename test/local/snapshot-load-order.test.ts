/**
 * FileSnapshotStore loading: a key in more than one segment reads from the one written last (the highest sequence
 * number), whatever order the directory lists them in. readdir's order is the file system's (hash order on ext4), so
 * it is made the reverse of the write order here, where a store that trusted it would read the older snapshot. And
 * only files named as the store names its segments are read: another file in the directory is none of the store's.
 */
import type * as fs from "node:fs";
import { copyFile, readdir } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it, vi } from "vitest";
import type { Snapshot, SnapshotKey } from "../../shared/bridge/ports.js";
import { FileSnapshotStore } from "../../shared/local/snapshot-store.js";
import { expectReadsModel, snapshotOf as snap } from "./snapshot-fixtures.js";
import { tempDirPerTest } from "../temp-dir.js";

vi.mock("node:fs", async (importOriginal) => {
  const real = await importOriginal<typeof fs>();
  const readdirSync = ((dir: fs.PathLike) => (real.readdirSync(dir) as string[]).sort().reverse()) as typeof fs.readdirSync;
  return { ...real, readdirSync };
});

let dir: string;
tempDirPerTest("bridge-load-order-", (made) => (dir = made));

describe("FileSnapshotStore load order", () => {
  it("reads each key's last write on opening though the directory lists newer segments first", async () => {
    const writer = new FileSnapshotStore(dir, { mergeBelowBytes: 0 });
    // Each segment keeps a live snapshot of its own, so none is wholly superseded (and deleted): card:a is in all three.
    for (let version = 1; version <= 3; version++) await writer.putMany([snap("card:a", version, 100), snap(`card:only-${version}`, 1, 100)]);
    const model = new Map<SnapshotKey, Snapshot>([
      ["card:a", snap("card:a", 3, 100)],
      ["card:only-1", snap("card:only-1", 1, 100)],
      ["card:only-2", snap("card:only-2", 1, 100)],
      ["card:only-3", snap("card:only-3", 1, 100)],
    ]);
    await expectReadsModel(new FileSnapshotStore(dir), model);
  });
});

describe("FileSnapshotStore segment names", () => {
  it.each([
    // An operator's copy, a sequence not of 12 digits, a tag not of 8 hex digits: none is a segment the store wrote.
    "seg-000000000009-deadbeef.log.bak",
    "seg-9-deadbeef.log",
    "seg-000000000009-beef.log",
  ])("neither reads nor deletes %s, a segment-like file the store did not write", async (stray) => {
    // The stray file is a whole segment holding a newer card:a, under a higher sequence: read, it would win.
    const elsewhere = path.join(dir, "elsewhere");
    await new FileSnapshotStore(elsewhere).putMany([snap("card:a", 2, 100)]);
    const [segment] = await readdir(path.join(elsewhere, "snapshots"));
    const store = new FileSnapshotStore(dir);
    await store.putMany([snap("card:a", 1, 100)]);
    await copyFile(path.join(elsewhere, "snapshots", segment as string), path.join(store.dir, stray));

    const reopened = new FileSnapshotStore(dir);
    await expectReadsModel(reopened, new Map([["card:a", snap("card:a", 1, 100)]]));
    await reopened.putMany([snap("card:a", 3, 100)]);
    await reopened.vacuum();
    expect(await readdir(store.dir)).toContain(stray);
  });
});
