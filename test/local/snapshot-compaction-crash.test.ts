/**
 * FileSnapshotStore compaction under crashes. The store's renames and unlinks go through a wrapped `node:fs` that,
 * while a test listens, first copies the snapshot directory: each copy is what a crash right before that step leaves.
 */
import { cpSync, mkdtempSync } from "node:fs";
import type * as NodeFs from "node:fs";
import { rm } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Snapshot, SnapshotKey } from "../../shared/bridge/ports.js";
import { FileSnapshotStore } from "../../shared/local/snapshot-store.js";
import type { FileSnapshotStoreOptions } from "../../shared/local/snapshot-store.js";
import { expectReadsModel, snapshotOf } from "./snapshot-fixtures.js";
import { tempDirPerTest } from "../temp-dir.js";

type Step = "rename" | "unlink" | "open";
const fsSteps = vi.hoisted(() => ({ listener: undefined as ((step: Step, file: string, flags?: unknown) => void) | undefined, bytesRead: 0 }));

vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof NodeFs>();
  return {
    ...fs,
    renameSync: (...args: Parameters<typeof fs.renameSync>) => {
      fsSteps.listener?.("rename", String(args[1]));
      fs.renameSync(...args);
    },
    unlinkSync: (...args: Parameters<typeof fs.unlinkSync>) => {
      fsSteps.listener?.("unlink", String(args[0]));
      fs.unlinkSync(...args);
    },
    openSync: (...args: Parameters<typeof fs.openSync>) => {
      fsSteps.listener?.("open", String(args[0]), args[1]);
      return fs.openSync(...args);
    },
    readSync: (...args: unknown[]) => {
      const bytes = (fs.readSync as (...a: unknown[]) => number)(...args);
      fsSteps.bytesRead += bytes;
      return bytes;
    },
  };
});

const options: FileSnapshotStoreOptions = { compactMinDeadBytes: 8 * 1024, compactBatchBytes: 4 * 1024 };

let dir: string;
tempDirPerTest("bridge-compaction-crash-", (made) => (dir = made));
afterEach(() => {
  fsSteps.listener = undefined;
});

function snap(key: SnapshotKey, version: number): Snapshot {
  return snapshotOf(key, version, 400 + (version % 7) * 50);
}

/** Page `call`: one key written once and three hot keys rewritten, so segments keep a live entry and compaction is due. */
function page(call: number): Snapshot[] {
  return [snap(`transaction:cold-${call}`, call), ...[0, 1, 2].map((i) => snap(`transaction:hot-${(call + i) % 5}`, call))];
}

/** Page `call` of brand-new keys only: nothing dies, so every copy is a merge of small segments. */
function newKeysPage(call: number): Snapshot[] {
  return [snap(`transaction:new-${call}-a`, call), snap(`transaction:new-${call}-b`, call)];
}

describe("FileSnapshotStore compaction under crashes", () => {
  it.each([
    ["compaction of dead bytes", page, options],
    ["merges of small segments", newKeysPage, { ...options, mergeBelowBytes: 2 * 1024, mergeFanIn: 3 }],
  ] as const)("loads the same snapshots for every key whichever rename or delete a crash comes before (%s)", async (_, page, options) => {
    const store = new FileSnapshotStore(path.join(dir, "live"), options);
    const model = new Map<SnapshotKey, Snapshot>();
    let compactions = 0;
    let crashesWithDuplicates = 0;
    for (let call = 0; call < 40; call++) {
      const before = new Map(model);
      for (const s of page(call)) model.set(s.key, s);
      // Crash images of this call, each with the contents it must load to: the putMany's own rename is the commit
      // point; whatever compaction does afterwards must not change what the store holds.
      const images: { dir: string; step: Step; expected: Map<SnapshotKey, Snapshot> }[] = [];
      let renames = 0;
      fsSteps.listener = (step, file) => {
        if (step === "open" || !file.includes(`${path.sep}live${path.sep}`)) return;
        const image = mkdtempSync(path.join(dir, "crash-"));
        cpSync(path.join(dir, "live", "snapshots"), path.join(image, "snapshots"), { recursive: true });
        images.push({ dir: image, step, expected: renames === 0 ? before : model });
        if (step === "rename") renames += 1;
      };
      await store.putMany(page(call));
      fsSteps.listener = undefined;
      if (renames > 1) compactions += 1;
      for (const [i, image] of images.entries()) {
        if (image.step === "unlink" && images.slice(0, i).filter((s) => s.step === "rename").length > 1) crashesWithDuplicates += 1;
        const recovered = new FileSnapshotStore(image.dir, options);
        await expectReadsModel(recovered, image.expected);
        // The recovered store takes writes and compacts on from there.
        const next = snap("transaction:after-crash", call);
        await recovered.putMany([next]);
        await expectReadsModel(new FileSnapshotStore(image.dir, options), new Map([...image.expected, [next.key, next]]));
        await rm(image.dir, { recursive: true, force: true });
      }
    }
    expect(compactions).toBeGreaterThan(3);
    expect(crashesWithDuplicates).toBeGreaterThan(3);
    await expectReadsModel(new FileSnapshotStore(path.join(dir, "live"), options), model);
  });

  it("keeps every snapshot readable when writing the compacted segment fails, and compacts on the next putMany", async () => {
    const store = new FileSnapshotStore(dir, options);
    const model = new Map<SnapshotKey, Snapshot>();
    let call = 0;
    let failed: unknown;
    for (; call < 40 && failed === undefined; call++) {
      let renames = 0;
      fsSteps.listener = (step) => {
        // The second rename of a call is compaction's.
        if (step === "rename" && ++renames === 2) throw Object.assign(new Error("injected: no space left on device"), { code: "ENOSPC" });
      };
      failed = await store.putMany(page(call)).catch((err: unknown) => err);
      fsSteps.listener = undefined;
      for (const s of page(call)) model.set(s.key, s);
    }
    expect(failed).toMatchObject({ code: "ENOSPC" });
    await expectReadsModel(store, model);
    await expectReadsModel(new FileSnapshotStore(dir, options), model);
    let renames = 0;
    fsSteps.listener = (step) => {
      if (step === "rename") renames += 1;
    };
    await store.putMany(page(call));
    for (const s of page(call)) model.set(s.key, s);
    expect(renames).toBeGreaterThan(1);
    await expectReadsModel(new FileSnapshotStore(dir, options), model);
  });

  it("opens no segment to read while a putMany of brand-new keys, in pages above the merge threshold, leaves nothing to compact", async () => {
    const store = new FileSnapshotStore(dir, { ...options, mergeBelowBytes: 2 * 1024 });
    await store.putMany([snap("transaction:first", 0)]);
    const opened: string[] = [];
    fsSteps.listener = (step, file, flags) => {
      if (step === "open" && (flags === undefined || flags === "r") && file.endsWith(".log")) opened.push(file);
    };
    for (let call = 1; call <= 30; call++) await store.putMany(Array.from({ length: 10 }, (_, i) => snap(`transaction:t${call}-${i}`, call)));
    expect(opened).toEqual([]);
  });

  it("reads the headers of a store's segments, not their bodies, when it opens, also after reading a header larger than one read", async () => {
    // A segment of many small entries (qashio_id aliases a vacuum or compaction gathered) has a header over 64 KiB.
    // Headers are read into one buffer that stays grown: later header reads must not read as much, whole bodies.
    const alias = (i: number): Snapshot => ({ key: `transaction:qashio_id:CT${1_000_000_000 + i}`, hash: "h", object: { id: `t${i}` }, updatedAt: "2025-01-01T00:00:00.000Z" });
    await new FileSnapshotStore(path.join(dir, "aliases")).putMany(Array.from({ length: 3000 }, (_, i) => alias(i)));
    const pages = new FileSnapshotStore(path.join(dir, "pages"));
    for (let page = 0; page < 5; page++) await pages.putMany(Array.from({ length: 10 }, (_, i) => snapshotOf(`transaction:p${page}-${i}`, 1, 40 * 1024)));
    expect(await new FileSnapshotStore(path.join(dir, "aliases")).size()).toBe(3000);
    fsSteps.bytesRead = 0;
    expect(await new FileSnapshotStore(path.join(dir, "pages")).size()).toBe(50);
    // Each segment's body is about 700 KB; its header, a few hundred bytes, comes in the first read of 64 KiB.
    expect(fsSteps.bytesRead).toBeLessThanOrEqual(5 * 64 * 1024);
  });

  it("opens no segment when reloaded while nothing changed on disk, though the store's id file lies beside its segments", async () => {
    const store = new FileSnapshotStore(dir, options);
    await store.putMany([snap("transaction:a", 1), snap("transaction:b", 1)]);
    // A page of one of two snapshots hands out a cursor, which makes the id file.
    expect((await store.scan({ limit: 1 })).cursor).toBeDefined();
    const opened: string[] = [];
    fsSteps.listener = (step, file, flags) => {
      if (step === "open" && (flags === undefined || flags === "r") && file.endsWith(".log")) opened.push(file);
    };
    await store.reload();
    expect(opened).toEqual([]);
  });
});
