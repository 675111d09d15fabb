/** The card walk cursor as stored and read back: what a resumed walk starts from. */
import { describe, expect, it } from "vitest";
import { WalkCursorStore, walkCursorKey, type CardCycleMode, type WalkCursor, type WalkCursorPorts } from "../../shared/bridge/card-cursor.js";
import { contentHash } from "../../shared/bridge/hash.js";
import type { Snapshot, SnapshotKey } from "../../shared/bridge/ports.js";

/** A cursor store of `mode` over an in-memory table, on a clock standing at `now`. */
function memoryCursors(now: number, mode: CardCycleMode = "full"): { store: WalkCursorStore; data: Map<SnapshotKey, Snapshot> } {
  const data = new Map<SnapshotKey, Snapshot>();
  const ports: WalkCursorPorts = {
    clock: { now: () => now },
    readSnapshots: async (_step, keys) => new Map(keys.flatMap((key) => (data.has(key) ? [[key, data.get(key) as Snapshot] as const] : []))),
    writeSnapshots: async (_step, snapshots) => {
      for (const snapshot of snapshots) data.set(snapshot.key, snapshot);
    },
  };
  return { store: new WalkCursorStore(ports, mode), data };
}

/** `cursor` written over what the store holds, then read back (without the snapshot it was read from). */
async function roundTrip(store: WalkCursorStore, cursor: WalkCursor): Promise<WalkCursor> {
  await store.write(await store.read(), cursor);
  const { snapshot: _snapshot, ...read } = await store.read();
  return read;
}

describe("card walk cursor", () => {
  it("reads back every member at its least value: the second card, an empty list, pages of one, an unsure start at the first card", async () => {
    const { store } = memoryCursors(Date.parse("2025-01-15T10:00:00.000Z"));
    // An unsure start at offset 0 dropped would leave a resumed walk moving from its offset counted in the larger size,
    // past cards it never walked.
    const cursor: WalkCursor = { offset: 1, total: 0, servedSize: 1, unsure: { offset: 0, total: 0, size: 1 } };
    expect(await roundTrip(store, cursor)).toEqual(cursor);
  });

  it("stamps a cursor later than the one it replaces, on a clock that stepped back (a snapshot's time names its version)", async () => {
    const { store, data } = memoryCursors(Date.parse("2025-01-15T10:00:00.000Z"));
    const key = walkCursorKey("full");
    data.set(key, { key, hash: "stored", object: { next_offset: 20 }, updatedAt: "2025-01-15T11:00:00.000Z" });
    await store.write(await store.read(), { offset: 40 });
    expect(data.get(key)?.object).toEqual({ next_offset: 40 });
    expect(data.get(key)?.updatedAt).toBe("2025-01-15T11:00:00.001Z");
  });

  it("writes nothing when the cursor stores as the one read", async () => {
    const { store, data } = memoryCursors(Date.parse("2025-01-15T10:00:00.000Z"));
    const key = walkCursorKey("full");
    const stored: Snapshot = { key, hash: "stored", object: { next_offset: 20, total_records: 30 }, updatedAt: "2025-01-15T09:00:00.000Z" };
    data.set(key, stored);
    await store.write(await store.read(), { offset: 20, total: 30 });
    expect(data.get(key)).toBe(stored);
  });

  it("resumes from the cursor stored under `card:~walk-cursor:<mode>`, the key walks before this release wrote it under", async () => {
    // A key renamed would leave every tenant's walk cut short starting afresh after a deploy, and the old cursor behind.
    const { store, data } = memoryCursors(Date.parse("2025-01-15T10:00:00.000Z"), "suspended-only");
    const key = "card:~walk-cursor:suspended-only";
    data.set(key, { key, hash: "stored", object: { next_offset: 40, total_records: 90 }, updatedAt: "2025-01-15T09:00:00.000Z" });
    const { snapshot: _snapshot, ...read } = await store.read();
    expect(read).toEqual({ offset: 40, total: 90 });
  });

  it("keeps nothing but the offset of a cursor at 0, written or read: a walk starting afresh carries nothing of the last", async () => {
    const { store, data } = memoryCursors(Date.parse("2025-01-15T10:00:00.000Z"));
    const key = walkCursorKey("full");
    data.set(key, { key, hash: "stored", object: { next_offset: 20 }, updatedAt: "2025-01-15T09:00:00.000Z" });
    await store.write(await store.read(), { offset: 0, total: 5, servedSize: 10, unsure: { offset: 0, total: 5, size: 10 } });
    expect(data.get(key)?.object).toEqual({ next_offset: 0 });
    const stale = { next_offset: 0, total_records: 5, page_size: 10, unsure: { next_offset: 0, total_records: 5, page_size: 10 } };
    data.set(key, { key, hash: "stored", object: stale, updatedAt: "2025-01-15T09:00:00.000Z" });
    const { snapshot: _snapshot, ...read } = await store.read();
    expect(read).toEqual({ offset: 0 });
  });

  it("drops a stored page size of 0, the walk's or its unsure start's: a resumed walk asks no pages of no cards", async () => {
    const { store, data } = memoryCursors(Date.parse("2025-01-15T10:00:00.000Z"));
    const key = walkCursorKey("full");
    const object = { next_offset: 20, total_records: 90, page_size: 0, unsure: { next_offset: 10, page_size: 0 } };
    data.set(key, { key, hash: "stored", object, updatedAt: "2025-01-15T09:00:00.000Z" });
    const { snapshot: _snapshot, ...read } = await store.read();
    expect(read).toEqual({ offset: 20, total: 90 });
  });

  it("drops a stored member that is no whole count (a fraction, past a safe integer): a resumed walk asks no page between two", async () => {
    const { store, data } = memoryCursors(Date.parse("2025-01-15T10:00:00.000Z"));
    const key = walkCursorKey("full");
    const object = { next_offset: 20, total_records: 90.5, page_size: 2.5, unsure: { next_offset: 10, page_size: 2 ** 53 } };
    data.set(key, { key, hash: "stored", object, updatedAt: "2025-01-15T09:00:00.000Z" });
    const { snapshot: _snapshot, ...read } = await store.read();
    expect(read).toEqual({ offset: 20 });
    data.set(key, { key, hash: "stored", object: { next_offset: 20.5, total_records: 90 }, updatedAt: "2025-01-15T09:00:00.000Z" });
    const { snapshot: _again, ...fraction } = await store.read();
    expect(fraction).toEqual({ offset: 0 });
  });

  it("stores the cursor under the content hash of the object it stores, as every snapshot is (ports.ts)", async () => {
    const { store, data } = memoryCursors(Date.parse("2025-01-15T10:00:00.000Z"));
    await store.write(await store.read(), { offset: 40, total: 90, servedSize: 10 });
    const written = data.get(walkCursorKey("full"));
    expect(written?.object).toEqual({ next_offset: 40, total_records: 90, page_size: 10 });
    expect(written?.hash).toBe(contentHash({ next_offset: 40, total_records: 90, page_size: 10 }));
  });
});

