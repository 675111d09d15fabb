/** Snapshots and assertions shared by the FileSnapshotStore compaction tests. */
import { expect } from "vitest";
import type { Snapshot, SnapshotKey } from "../../shared/bridge/ports.js";
import type { FileSnapshotStore } from "../../shared/local/snapshot-store.js";

/** A snapshot of about `size` bytes of multi-byte text (so byte and character counts differ), versioned in hash and time. */
export function snapshotOf(key: SnapshotKey, version: number, size: number): Snapshot {
  return {
    key,
    hash: `h${version}`,
    object: { version, pad: "é🚀x".repeat(size >> 2) },
    updatedAt: new Date(Date.UTC(2025, 0, 1, 0, 0, version)).toISOString(),
  };
}

/** The store returns exactly the model's snapshot for every key of the model. */
export async function expectReadsModel(store: FileSnapshotStore, model: ReadonlyMap<SnapshotKey, Snapshot>): Promise<void> {
  const found = await store.getMany([...model.keys()]);
  expect(found.size).toBe(model.size);
  for (const [key, s] of model) expect(found.get(key)).toEqual(s);
}
