/**
 * FileSnapshotStore.vacuum resolves once the removal of replaced versions is durable (SnapshotStore.vacuum): the
 * segment files it, and the putMany calls before it, deleted must not come back after a power loss, so the snapshot
 * directory is fsynced after the last of those deletes.
 */
import type * as NodeFs from "node:fs";
import path from "node:path";
import { beforeEach, describe, expect, it, vi } from "vitest";
import type { Snapshot, SnapshotKey } from "../../shared/bridge/ports.js";
import { FileSnapshotStore } from "../../shared/local/snapshot-store.js";
import { tempDirPerTest } from "../temp-dir.js";

/** Segment deletes and directory fsyncs, in order. */
const journal = vi.hoisted(() => ({ events: [] as string[], opened: new Map<number, string>() }));

vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof NodeFs>();
  const openSync = ((file: NodeFs.PathLike, ...rest: unknown[]) => {
    const fd = (fs.openSync as (file: NodeFs.PathLike, ...rest: unknown[]) => number)(file, ...rest);
    journal.opened.set(fd, String(file));
    return fd;
  }) as typeof fs.openSync;
  const fsyncSync = ((fd: number) => {
    if (fs.fstatSync(fd).isDirectory()) journal.events.push(`fsync-dir ${journal.opened.get(fd) ?? "?"}`);
    fs.fsyncSync(fd);
  }) as typeof fs.fsyncSync;
  const unlinkSync = ((file: NodeFs.PathLike) => {
    if (String(file).endsWith(".log")) journal.events.push(`unlink ${path.dirname(String(file))}`);
    fs.unlinkSync(file);
  }) as typeof fs.unlinkSync;
  const mocked = { openSync, fsyncSync, unlinkSync };
  return { ...fs, default: { ...fs, ...mocked }, ...mocked };
});

let dir: string;
tempDirPerTest("bridge-vacuum-durability-", (made) => (dir = made));
beforeEach(() => {
  journal.events.length = 0;
});

const person = (key: SnapshotKey, name: string): Snapshot => ({ key, hash: `h-${key}-${name}`, object: { id: key, card_holder_name: name }, updatedAt: "2025-01-15T10:00:00.000Z" });

/** Whether every segment delete in the journal is followed by an fsync of the directory it was deleted from. */
function everyDeleteFsynced(): boolean {
  const last = journal.events.findLastIndex((event) => event.startsWith("unlink "));
  if (last < 0) return true;
  const folder = (journal.events[last] as string).slice("unlink ".length);
  return journal.events.slice(last + 1).includes(`fsync-dir ${folder}`);
}

describe("FileSnapshotStore.vacuum durability", () => {
  it("fsyncs the snapshot directory after the segments its compaction deleted", async () => {
    const store = new FileSnapshotStore(dir);
    // Two segments, each half replaced: vacuum copies the live halves and deletes both.
    await store.putMany([person("card:a", "Ann"), person("card:b", "Bob")]);
    await store.putMany([person("card:c", "Cid"), person("card:d", "Dan")]);
    await store.putMany([person("card:a", "[redacted]"), person("card:c", "[redacted]")]);
    journal.events.length = 0;
    await store.vacuum();
    expect(journal.events.filter((event) => event.startsWith("unlink "))).toHaveLength(2);
    expect(everyDeleteFsynced()).toBe(true);
  });

  it("fsyncs the snapshot directory after segments a putMany before it wholly replaced, though it compacts nothing", async () => {
    const store = new FileSnapshotStore(dir);
    await store.putMany([person("card:a", "Ann"), person("card:b", "Bob")]);
    journal.events.length = 0;
    await store.putMany([person("card:a", "[redacted]"), person("card:b", "[redacted]")]);
    expect(journal.events.filter((event) => event.startsWith("unlink "))).toHaveLength(1);
    await store.vacuum();
    expect(everyDeleteFsynced()).toBe(true);
  });

  it("vacuums a store that was never written without creating its directory", async () => {
    await new FileSnapshotStore(dir).vacuum();
    expect(journal.events).toEqual([]);
  });
});
