/**
 * FileSnapshotStore against a model (a Map of each key's last write) over random sequences of putMany, getMany, walks
 * interleaved with writes, vacuum and fresh instances on the same directory, with tuning small enough that compaction
 * and merges happen all the time. A second run folds keys into fingerprint collisions (the KeyIndex module wrapped so
 * `x~1` and `x~2` share a slot, as two keys of one 64-bit fingerprint would).
 */
import type * as fs from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import path from "node:path";
import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Snapshot, SnapshotKey } from "../../shared/bridge/ports.js";
import type * as keyIndex from "../../shared/local/key-index.js";
import { FileSnapshotStore, type FileSnapshotStoreOptions } from "../../shared/local/snapshot-store.js";
import { tempDirPerTest } from "../temp-dir.js";

/**
 * fsync made a no-op: it makes a write survive power loss, which the model does not look at (snapshot-compaction-crash
 * and snapshot-vacuum-durability do). Every other file operation is real.
 */
vi.mock("node:fs", async (importOriginal) => ({ ...(await importOriginal<typeof fs>()), fsyncSync: () => undefined }));

/** Whether the wrapped KeyIndex folds `<key>~<n>` into `<key>` (a forced fingerprint collision), and that fold. */
const collisions = vi.hoisted(() => {
  const state = { on: false, fold: (key: string): string => (state.on ? key.replace(/~\d+$/, "") : key) };
  return state;
});
const fold = (key: string): string => collisions.fold(key);

vi.mock("../../shared/local/key-index.js", async (importOriginal) => {
  const actual = await importOriginal<typeof keyIndex>();
  class FoldingKeyIndex extends actual.KeyIndex {
    override get(key: string) {
      return super.get(collisions.fold(key));
    }
    override set(key: string, location: keyIndex.KeyLocation) {
      return super.set(collisions.fold(key), location);
    }
  }
  const sameFingerprint = (a: string, b: string) => actual.sameFingerprint(collisions.fold(a), collisions.fold(b));
  return { ...actual, KeyIndex: FoldingKeyIndex, sameFingerprint };
});

let dir: string;
tempDirPerTest("bridge-model-", (made) => (dir = made));
afterEach(() => {
  collisions.on = false;
});

/** Tiny thresholds: compaction is due after a few kilobytes of dead data, batches split segments, small ones merge. */
const TUNING: FileSnapshotStoreOptions = { compactMinDeadBytes: 2048, compactBatchBytes: 4096, mergeBelowBytes: 1024, mergeFanIn: 2 };

/** Key ids: plain, unicode (lone surrogates, separators, quotes, newlines), and a few long enough to span a header read. */
const keyId = fc.oneof(
  { arbitrary: fc.constantFrom("a", "b", "c", "d", "e", "f"), weight: 6 },
  { arbitrary: fc.string({ unit: "binary", maxLength: 12 }), weight: 3 },
  { arbitrary: fc.constantFrom("\n", '"', "\\", "\u2028", "\ud800", "\udc00x", "🚀", "é"), weight: 1 },
  { arbitrary: fc.integer({ min: 1, max: 3 }).map((n) => "k".repeat(n * 40_000)), weight: 1 },
);
const keyOf = (id: string, variant: number): SnapshotKey => `${variant % 2 === 0 ? "card" : "transaction"}:${id}~${variant}`;
const keyArb = fc.tuple(keyId, fc.integer({ min: 0, max: 3 })).map(([id, variant]) => keyOf(id, variant));

const itemArb = fc.record({
  key: keyArb,
  size: fc.oneof(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 200, max: 3000 }), fc.constant(9000)),
  sequence: fc.option(fc.nat(), { nil: undefined }),
  extra: fc.jsonValue({ maxDepth: 2 }),
});

type ItemOf = typeof itemArb extends fc.Arbitrary<infer T> ? T : never;

/** What may happen between two pages of a walk. */
type Between =
  | { kind: "put"; items: ItemOf[] }
  | { kind: "bulk"; count: number }
  | { kind: "get"; keys: SnapshotKey[] }
  | { kind: "vacuum" }
  | { kind: "reopen" };

type Op =
  | Between
  /** One page of one of two walks left open across the other steps. */
  | { kind: "step"; walk: number; limit: number }
  /** A whole walk with `between[i]` after its page i, so writes, vacuum and reopening land in the middle of it. */
  | { kind: "walk"; limit: number; between: Between[] };

const betweenArb: fc.Arbitrary<Between> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant("put" as const), items: fc.array(itemArb, { minLength: 1, maxLength: 10 }) }), weight: 6 },
  // Enough new keys at once that the key index outgrows its first table (1024 slots, at most 3/4 full).
  { arbitrary: fc.record({ kind: fc.constant("bulk" as const), count: fc.integer({ min: 400, max: 1200 }) }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant("get" as const), keys: fc.array(keyArb, { maxLength: 6 }) }), weight: 2 },
  { arbitrary: fc.constant({ kind: "vacuum" as const }), weight: 1 },
  { arbitrary: fc.constant({ kind: "reopen" as const }), weight: 1 },
);
const limitArb = fc.oneof({ arbitrary: fc.integer({ min: 1, max: 5 }), weight: 4 }, { arbitrary: fc.integer({ min: 20, max: 400 }), weight: 1 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: betweenArb, weight: 10 },
  { arbitrary: fc.record({ kind: fc.constant("step" as const), walk: fc.integer({ min: 0, max: 1 }), limit: limitArb }), weight: 5 },
  {
    arbitrary: fc.record({ kind: fc.constant("walk" as const), limit: fc.integer({ min: 1, max: 4 }), between: fc.array(betweenArb, { maxLength: 6 }) }),
    weight: 2,
  },
);

/** JSON's view of a snapshot (what any JSON store gives back: -0 as 0, no undefined members). */
const asStored = (s: Snapshot): Snapshot => JSON.parse(JSON.stringify(s)) as Snapshot;

/** One walk in progress and what the model requires of it. */
interface Walk {
  cursor?: string;
  /** Keys stored from the walk's start until now: each must come at least once. */
  required: Set<SnapshotKey>;
  /** Versions (stored JSON) each key had at some time since the walk started: whatever the walk returns is one. */
  allowed: Map<SnapshotKey, Set<string>>;
  seen: Set<SnapshotKey>;
  /**
   * Whether an entry may have moved since the walk started (a write, or vacuum: either copies entries into a newer
   * segment, where the walk meets them again); without one, every key comes exactly once.
   */
  moved: boolean;
  counts: Map<SnapshotKey, number>;
}

/** Runs `steps` on a directory of its own (a run a timeout leaves going cannot write into the next one's). */
async function runModel(steps: readonly Op[]): Promise<void> {
  const runDir = await mkdtemp(path.join(dir, "run-"));
  try {
    await runSteps(runDir, steps);
  } finally {
    await rm(runDir, { recursive: true, force: true });
  }
}

async function runSteps(stateDir: string, steps: readonly Op[]): Promise<void> {
  let store = new FileSnapshotStore(stateDir, TUNING);
  /** Last write of every key. */
  const model = new Map<SnapshotKey, Snapshot>();
  /** Per fold group (one fingerprint), the key whose entry the index holds: the others read as missing. */
  const holder = new Map<string, SnapshotKey>();
  const visible = (key: SnapshotKey): Snapshot | undefined => (holder.get(fold(key)) === key ? model.get(key) : undefined);
  const expectedOf = (keys: readonly SnapshotKey[]) => new Map(keys.flatMap((key) => (visible(key) ? [[key, visible(key)] as const] : [])));
  /** Two walks the steps leave open, and a third for whole walks. */
  const walks: (Walk | undefined)[] = [undefined, undefined, undefined];
  let version = 0;

  const put = async (items: readonly ItemOf[]): Promise<void> => {
    const batch = items.map(
      ({ key, size, sequence, extra }): Snapshot => ({
        key,
        hash: `h${++version}`,
        object: { version, pad: "é🚀x\u2028".repeat(size >> 2), extra },
        updatedAt: new Date(Date.UTC(2025, 0, 1) + version * 1000).toISOString(),
        ...(sequence === undefined ? {} : { sequence }),
      }),
    );
    await store.putMany(batch);
    // The store keeps the last write of a key within one call, placed where its key first came.
    const unique = new Map<SnapshotKey, Snapshot>();
    for (const s of batch) unique.set(s.key, s);
    for (const s of unique.values()) {
      const displaced = holder.get(fold(s.key));
      model.set(s.key, asStored(s));
      holder.set(fold(s.key), s.key);
      for (const walk of walks) {
        if (!walk) continue;
        walk.moved = true;
        // A key whose slot another key took is no longer stored: the walk need not meet it.
        if (displaced !== undefined && displaced !== s.key) walk.required.delete(displaced);
        let versions = walk.allowed.get(s.key);
        if (!versions) walk.allowed.set(s.key, (versions = new Set()));
        versions.add(JSON.stringify(model.get(s.key)));
      }
    }
  };

  /** One page of walk `slot` (started when none is open); true when it was the walk's last. */
  const step = async (slot: number, limit: number): Promise<boolean> => {
    let walk = walks[slot];
    if (!walk) {
      const live = [...holder.values()];
      walk = {
        required: new Set(live),
        allowed: new Map(live.map((key) => [key, new Set([JSON.stringify(model.get(key))])])),
        seen: new Set(),
        moved: false,
        counts: new Map(),
      };
      walks[slot] = walk;
    }
    const page = await store.scan({ limit, ...(walk.cursor === undefined ? {} : { cursor: walk.cursor }) });
    expect(page.snapshots.length).toBeLessThanOrEqual(limit);
    for (const s of page.snapshots) {
      // Never another key's snapshot, nor a version replaced before the walk started.
      expect(walk.allowed.get(s.key)?.has(JSON.stringify(s)), `${s.key.slice(0, 40)} in a version the walk may return`).toBe(true);
      walk.seen.add(s.key);
      walk.counts.set(s.key, (walk.counts.get(s.key) ?? 0) + 1);
    }
    if (page.cursor !== undefined) {
      walk.cursor = page.cursor;
      return false;
    }
    const missed = [...walk.required].filter((key) => !walk.seen.has(key));
    expect(missed.map((key) => key.slice(0, 40))).toEqual([]);
    if (!walk.moved) {
      expect([...walk.counts.values()].every((n) => n === 1)).toBe(true);
      expect(walk.counts.size).toBe(holder.size);
    }
    walks[slot] = undefined;
    return true;
  };

  const apply = async (op: Op): Promise<void> => {
    switch (op.kind) {
      case "put":
        return put(op.items);
      case "bulk":
        return put(Array.from({ length: op.count }, (_, i) => ({ key: keyOf(`bulk${version}-${i}`, i), size: 0, sequence: i, extra: null })));
      case "get":
        expect(await store.getMany(op.keys)).toEqual(expectedOf(op.keys));
        return;
      case "vacuum":
        await store.vacuum();
        for (const walk of walks) if (walk) walk.moved = true;
        return;
      case "reopen":
        // A fresh instance, as a new process would make: open walks go on from their cursors.
        store = new FileSnapshotStore(stateDir, TUNING);
        return;
      case "step":
        await step(op.walk, op.limit);
        return;
      case "walk":
        // Pages of at least a thirtieth of the store as it is now (a bulk write between pages grows it): a walk of
        // single entries over thousands of keys reads a large header per page, and only its first pages have writes
        // between them.
        for (let page = 0; !(await step(2, Math.max(op.limit, Math.ceil(holder.size / 30)))); page++) {
          if (page > 1_000) throw new Error("the walk does not end");
          const next = op.between[page];
          if (next) await apply(next);
        }
    }
  };

  for (const op of steps) await apply(op);
  // Everything the model holds, read back by the last instance and by a fresh one.
  for (const reader of [store, new FileSnapshotStore(stateDir, TUNING)]) {
    expect(await reader.getMany([...model.keys()])).toEqual(expectedOf([...model.keys()]));
    expect(await reader.size()).toBe(holder.size);
  }
}

// Forty runs of up to fifty file operations each: 5-15 s alone, past the default 30 s on a loaded machine (a full
// suite beside other work), so a guard of its own rather than a fail that says nothing about the store.
describe("FileSnapshotStore against a model", { timeout: 120_000 }, () => {
  it("reads every key's last write, walks every stored key at least once under writes, across vacuum and reopening", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 10, maxLength: 50 }), async (steps) => runModel(steps)),
      { numRuns: 40 },
    );
  });

  it("never returns another key's snapshot when keys share a fingerprint: the one written last holds the slot", async () => {
    collisions.on = true;
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 10, maxLength: 50 }), async (steps) => runModel(steps)),
      { numRuns: 40 },
    );
  });
});
