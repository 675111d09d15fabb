/**
 * Contract every SnapshotStore adapter must pass (memory fake, file store, DynamoDB).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Snapshot, SnapshotKey, SnapshotStore } from "../../../shared/bridge/ports.js";

/** What a factory hands the suite; `reopen` (optional) builds a fresh instance over the same backing data. */
export interface SnapshotStoreFixture {
  readonly store: SnapshotStore;
  readonly reopen?: () => Promise<SnapshotStore>;
  readonly cleanup: () => Promise<void>;
}

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
  });
}
