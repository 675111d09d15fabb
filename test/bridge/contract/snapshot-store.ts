/**
 * Contract every SnapshotStore adapter must pass (memory fake, file store, DynamoDB).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Snapshot, SnapshotKey, SnapshotPage, SnapshotStore } from "../../../shared/bridge/ports.js";

/**
 * What a factory hands the suite; `reopen` (optional) builds a fresh instance over the same backing data,
 * `neighbour` (optional) the store of another tenant over that same backing data, and `foreign` (optional) a store
 * over other backing data (another directory, another table).
 */
export interface SnapshotStoreFixture {
  readonly store: SnapshotStore;
  readonly reopen?: () => Promise<SnapshotStore>;
  readonly neighbour?: () => Promise<SnapshotStore>;
  readonly foreign?: () => Promise<SnapshotStore>;
  readonly cleanup: () => Promise<void>;
}

/** Every page of a walk from `cursor` to its end (bounded, so a walk that never ends fails instead of hanging). */
async function walk(store: SnapshotStore, limit: number, cursor?: string, onPage?: (page: SnapshotPage) => Promise<void>): Promise<SnapshotPage[]> {
  const pages: SnapshotPage[] = [];
  let next = cursor;
  do {
    const page = await store.scan({ limit, ...(next === undefined ? {} : { cursor: next }) });
    pages.push(page);
    await onPage?.(page);
    next = page.cursor;
    if (pages.length > 1_000) throw new Error("the walk does not end");
  } while (next !== undefined);
  return pages;
}

const keysOf = (pages: readonly SnapshotPage[]): SnapshotKey[] => pages.flatMap((p) => p.snapshots.map((s) => s.key));

function snapshot(key: SnapshotKey, object: Record<string, unknown>, hash = `h-${key}-${JSON.stringify(object).length}`): Snapshot {
  return { key, hash, object, updatedAt: "2025-01-15T10:00:00.000Z" };
}

/**
 * Registers the SnapshotStore contract for one adapter.
 *
 * @example
 * ```ts
 * describeSnapshotStoreContract("FileSnapshotStore", async () => { const dir = await mkdtemp(…); return { store: new FileSnapshotStore(dir), cleanup: () => rm(dir, { recursive: true }) }; });
 * ```
 */
export function describeSnapshotStoreContract(name: string, factory: () => Promise<SnapshotStoreFixture>): void {
  describe(`SnapshotStore contract: ${name}`, () => {
    let fixture: SnapshotStoreFixture;
    beforeEach(async () => {
      fixture = await factory();
    });
    afterEach(async () => {
      await fixture.cleanup();
    });

    it("returns an empty map for keys it never stored", async () => {
      const found = await fixture.store.getMany(["transaction:missing", "card:CA404"]);
      expect(found.size).toBe(0);
    });

    it("returns exactly what was put, nested objects, unicode and numbers included", async () => {
      const object = {
        id: "7f3c",
        amount: 12.5,
        zero: 0,
        flag: false,
        nothing: null,
        name: "Zoë 🚀 \"quoted\" \n newline",
        line_items: [{ id: "L1", amount: -3, segments: [{ id: "S1", label: "Project" }] }],
      };
      await fixture.store.putMany([snapshot("transaction:7f3c", object, "abc123")]);
      const found = await fixture.store.getMany(["transaction:7f3c"]);
      expect(found.get("transaction:7f3c")).toEqual({ key: "transaction:7f3c", hash: "abc123", object, updatedAt: "2025-01-15T10:00:00.000Z" });
    });

    it("keeps a snapshot's sequence verbatim, and leaves it absent when it was absent", async () => {
      await fixture.store.putMany([
        { ...snapshot("card:CA7", { status: "Active" }, "h7"), sequence: 0 },
        { ...snapshot("transaction:t7", { memo: "x" }, "h8"), sequence: 41 },
        snapshot("transaction:t8", { memo: "y" }, "h9"),
      ]);
      const found = await fixture.store.getMany(["card:CA7", "transaction:t7", "transaction:t8"]);
      expect(found.get("card:CA7")?.sequence).toBe(0);
      expect(found.get("transaction:t7")?.sequence).toBe(41);
      expect(found.get("transaction:t8")).not.toHaveProperty("sequence");
      const scanned = (await walk(fixture.store, 10)).flatMap((p) => p.snapshots);
      expect(scanned.find((s) => s.key === "transaction:t7")?.sequence).toBe(41);
      if (fixture.reopen) expect((await (await fixture.reopen()).getMany(["transaction:t7"])).get("transaction:t7")?.sequence).toBe(41);
    });

    it("replaces a snapshot written earlier", async () => {
      await fixture.store.putMany([snapshot("card:CA1", { status: "Active" }, "h1")]);
      await fixture.store.putMany([snapshot("card:CA1", { status: "Suspended" }, "h2")]);
      const found = await fixture.store.getMany(["card:CA1"]);
      expect(found.get("card:CA1")?.hash).toBe("h2");
      expect(found.get("card:CA1")?.object).toEqual({ status: "Suspended" });
    });

    it("keeps the last of duplicate keys in one putMany", async () => {
      await fixture.store.putMany([snapshot("card:CA2", { n: 1 }, "first"), snapshot("card:CA2", { n: 2 }, "second")]);
      expect((await fixture.store.getMany(["card:CA2"])).get("card:CA2")?.hash).toBe("second");
    });

    it("returns only the requested keys, across batches larger than one backend request", async () => {
      const many = Array.from({ length: 230 }, (_, i) => snapshot(`transaction:t${i}`, { i }, `h${i}`));
      await fixture.store.putMany(many);
      const wanted: SnapshotKey[] = ["transaction:t0", "transaction:t117", "transaction:t229", "transaction:nope"];
      const found = await fixture.store.getMany(wanted);
      expect([...found.keys()].sort()).toEqual(["transaction:t0", "transaction:t117", "transaction:t229"]);
      const all = await fixture.store.getMany(many.map((s) => s.key));
      expect(all.size).toBe(230);
      expect(all.get("transaction:t150")?.object).toEqual({ i: 150 });
    });

    it("takes a deadline still ahead on reads and writes (StoreCallOptions), with the same result as without one", async () => {
      const deadline = Date.now() + 60 * 60_000;
      const many = Array.from({ length: 230 }, (_, i) => snapshot(`transaction:d${i}`, { i }, `h${i}`));
      await fixture.store.putMany(many, { deadline });
      const found = await fixture.store.getMany([...many.map((s) => s.key), "transaction:nope"], { deadline });
      expect(found.size).toBe(230);
      expect(found.get("transaction:d150")).toEqual(many[150]);
    });

    it("reads a key asked for more than once in one getMany (a batching store must send it once: DynamoDB refuses the call)", async () => {
      await fixture.store.putMany([snapshot("card:CA1", { status: "Active" }, "h1"), snapshot("card:CA2", { status: "Active" }, "h2")]);
      const found = await fixture.store.getMany(["card:CA1", "card:CA2", "card:CA1", "card:CA404", "card:CA404"]);
      expect([...found.keys()].sort()).toEqual(["card:CA1", "card:CA2"]);
      expect(found.get("card:CA1")?.hash).toBe("h1");
    });

    it("treats keys with colons and slashes as opaque", async () => {
      const key: SnapshotKey = "transaction:qashio_id:CT/00:1";
      await fixture.store.putMany([snapshot(key, { id: "x" }, "h")]);
      expect((await fixture.store.getMany([key])).get(key)?.object).toEqual({ id: "x" });
      expect((await fixture.store.getMany(["transaction:qashio_id:CT"])).size).toBe(0);
    });

    it("accepts an empty putMany and an empty getMany", async () => {
      await fixture.store.putMany([]);
      expect((await fixture.store.getMany([])).size).toBe(0);
    });

    it("keeps snapshots durable across a new instance", async (ctx) => {
      if (!fixture.reopen) return ctx.skip();
      await fixture.store.putMany([snapshot("card:CA9", { status: "Active" }, "h1")]);
      await fixture.store.putMany([snapshot("card:CA9", { status: "Inactive" }, "h2"), snapshot("card:CA8", { status: "Active" }, "h3")]);
      const again = await fixture.reopen();
      const found = await again.getMany(["card:CA9", "card:CA8"]);
      expect(found.get("card:CA9")?.object).toEqual({ status: "Inactive" });
      expect(found.get("card:CA8")?.hash).toBe("h3");
    });

    it("walks an empty store in one page without a cursor", async () => {
      expect(await fixture.store.scan({ limit: 10 })).toEqual({ snapshots: [] });
    });

    it("walks every snapshot once, as last written, in pages of at most the limit, the last one without a cursor", async () => {
      const written = Array.from({ length: 230 }, (_, i) => snapshot(i % 3 === 0 ? `card:CA${i}` : `transaction:t${i}`, { i }, `h${i}`));
      await fixture.store.putMany(written);
      await fixture.store.putMany([snapshot("transaction:t1", { i: 1, again: true }, "h1b")]);
      const pages = await walk(fixture.store, 40);
      expect(pages.every((p) => p.snapshots.length <= 40)).toBe(true);
      expect(pages.slice(0, -1).every((p) => p.cursor !== undefined)).toBe(true);
      const seen = pages.flatMap((p) => p.snapshots);
      expect(seen.map((s) => s.key).sort()).toEqual(written.map((s) => s.key).sort());
      const t1 = seen.find((s) => s.key === "transaction:t1");
      expect(t1).toEqual({ key: "transaction:t1", hash: "h1b", object: { i: 1, again: true }, updatedAt: "2025-01-15T10:00:00.000Z" });
      expect(seen.find((s) => s.key === "card:CA9")).toEqual(snapshot("card:CA9", { i: 9 }, "h9"));
    });

    it("meets every snapshot at least once while the walk rewrites each one it reads, and the walk ends", async () => {
      const written = Array.from({ length: 120 }, (_, i) => snapshot(`transaction:t${i}`, { i, name: "Ann" }, `h${i}`));
      await fixture.store.putMany(written);
      const rewritten = new Set<SnapshotKey>();
      const pages = await walk(fixture.store, 25, undefined, async (page) => {
        const fresh = page.snapshots.filter((s) => !rewritten.has(s.key));
        for (const s of fresh) rewritten.add(s.key);
        await fixture.store.putMany(fresh.map((s) => ({ ...s, object: { ...s.object, name: "[redacted]" } })));
      });
      expect(new Set(keysOf(pages))).toEqual(new Set(written.map((s) => s.key)));
      const after = await fixture.store.getMany(written.map((s) => s.key));
      expect([...after.values()].every((s) => s.object["name"] === "[redacted]" && s.hash === `h${String(s.object["i"])}`)).toBe(true);
    });

    it("goes on from a page's cursor, on a new instance too", async () => {
      const written = Array.from({ length: 60 }, (_, i) => snapshot(`transaction:t${i}`, { i }));
      await fixture.store.putMany(written);
      const first = await fixture.store.scan({ limit: 20 });
      expect(first.snapshots).toHaveLength(20);
      expect(first.cursor).toEqual(expect.any(String));
      const rest = await walk((await fixture.reopen?.()) ?? fixture.store, 15, first.cursor);
      expect([...keysOf([first]), ...keysOf(rest)].sort()).toEqual(written.map((s) => s.key).sort());
    });

    it("refuses a cursor it did not issue", async () => {
      await fixture.store.putMany([snapshot("card:CA1", { status: "Active" })]);
      await expect(fixture.store.scan({ limit: 10, cursor: "not a cursor" })).rejects.toMatchObject({ name: "SnapshotCursorError" });
    });

    it("refuses a well-formed cursor another store issued: another tenant's, or one over other backing data", async (ctx) => {
      const others = [fixture.neighbour, fixture.foreign].filter((make) => make !== undefined);
      if (others.length === 0) return ctx.skip();
      await fixture.store.putMany(Array.from({ length: 30 }, (_, i) => snapshot(`transaction:t${i}`, { name: "Ann", i })));
      // This store hands out a cursor first, so it has an id (FileSnapshotStore) the foreign cursor is checked against.
      expect((await fixture.store.scan({ limit: 5 })).cursor).toEqual(expect.any(String));
      for (const make of others) {
        const other = await make();
        await other.putMany(Array.from({ length: 30 }, (_, i) => snapshot(`card:CA${i}`, { i })));
        const { cursor } = await other.scan({ limit: 5 });
        expect(cursor).toEqual(expect.any(String));
        await expect(fixture.store.scan({ limit: 10, cursor })).rejects.toMatchObject({ name: "SnapshotCursorError" });
      }
      // Its own cursors still work.
      expect(keysOf(await walk(fixture.store, 7))).toHaveLength(30);
    });

    it("walks only its own tenant's snapshots", async (ctx) => {
      if (!fixture.neighbour) return ctx.skip();
      const neighbour = await fixture.neighbour();
      await neighbour.putMany(Array.from({ length: 30 }, (_, i) => snapshot(`transaction:n${i}`, { i })));
      await fixture.store.putMany([snapshot("card:CA1", { status: "Active" }), snapshot("transaction:mine", { i: 1 })]);
      expect(keysOf(await walk(fixture.store, 7)).sort()).toEqual(["card:CA1", "transaction:mine"]);
    });

    it("reads every snapshot as last written after a vacuum, on a new instance too", async () => {
      await fixture.store.putMany(Array.from({ length: 50 }, (_, i) => snapshot(`transaction:t${i}`, { i, v: 1 }, `a${i}`)));
      await fixture.store.putMany(Array.from({ length: 25 }, (_, i) => snapshot(`transaction:t${i * 2}`, { i: i * 2, v: 2 }, `b${i * 2}`)));
      await fixture.store.vacuum();
      await fixture.store.vacuum();
      const expected = (i: number) => (i % 2 === 0 ? { i, v: 2 } : { i, v: 1 });
      for (const store of [fixture.store, (await fixture.reopen?.()) ?? fixture.store]) {
        const all = (await walk(store, 100)).flatMap((p) => p.snapshots);
        expect(all).toHaveLength(50);
        for (const s of all) expect(s.object).toEqual(expected(Number(s.object["i"])));
      }
    });
  });
}
