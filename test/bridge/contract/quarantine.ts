/**
 * Contract every Quarantine adapter must pass.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Quarantine, QuarantineRecord } from "../../../shared/bridge/ports.js";

/** What a factory hands the suite. */
export interface QuarantineFixture {
  readonly quarantine: Quarantine;
  readonly reopen?: () => Promise<Quarantine>;
  readonly cleanup: () => Promise<void>;
}

function record(id: string, at = "2025-01-15T10:00:00.000Z"): QuarantineRecord {
  return {
    id,
    kind: "transaction",
    entityId: `txn-${id}`,
    reason: "validation: id: missing",
    raw: { qashio_id: "CT1", nested: { amount: 1.5, list: [1, "two", null] } },
    at,
  };
}

/**
 * Registers the Quarantine contract for one adapter.
 *
 * @example
 * ```ts
 * describeQuarantineContract("FileQuarantine", async () => ({ quarantine: new FileQuarantine(dir), cleanup }));
 * ```
 */
export function describeQuarantineContract(name: string, factory: () => Promise<QuarantineFixture>): void {
  describe(`Quarantine contract: ${name}`, () => {
    let fixture: QuarantineFixture;
    beforeEach(async () => {
      fixture = await factory();
    });
    afterEach(async () => {
      await fixture.cleanup();
    });

    it("lists nothing before anything is quarantined", async () => {
      expect(await fixture.quarantine.list()).toEqual([]);
    });

    it("keeps the reason and the raw body of a record", async () => {
      await fixture.quarantine.put(record("q1"));
      expect(await fixture.quarantine.list()).toEqual([record("q1")]);
    });

    it("keeps one record when the same id is put twice, with the first `at`, and says which put was new", async () => {
      expect(await fixture.quarantine.put(record("q2"))).toBe(true);
      expect(await fixture.quarantine.put({ ...record("q2"), at: "2025-01-16T09:00:00.000Z" })).toBe(false);
      expect(await fixture.quarantine.put(record("q3", "2025-01-15T10:00:01.000Z"))).toBe(true);
      const held = await fixture.quarantine.list();
      expect(held.map((r) => r.id).sort()).toEqual(["q2", "q3"]);
      expect(held.find((r) => r.id === "q2")?.at).toBe(record("q2").at);
    });

    it("keeps the first entity id of a record found again under another one", async () => {
      expect(await fixture.quarantine.put(record("q6"))).toBe(true);
      expect(await fixture.quarantine.put({ ...record("q6", "2025-01-16T09:00:00.000Z"), entityId: "txn-other" })).toBe(false);
      expect((await fixture.quarantine.list()).find((r) => r.id === "q6")?.entityId).toBe(record("q6").entityId);
    });

    it("gives a record found again the reason and body it was found with last (a PII mode switch masks them), keeping `at`", async () => {
      const cleartext = { ...record("q5"), raw: { id: "CA1", cardholder: { name: "Ann Example", email: "ann@example.test" } } };
      expect(await fixture.quarantine.put(cleartext)).toBe(true);
      const masked = {
        ...record("q5", "2025-02-01T00:00:00.000Z"),
        reason: "validation: status: missing or not a string",
        raw: { id: "CA1", cardholder: { name: "[redacted]", email: "[redacted]" } },
      };
      expect(await fixture.quarantine.put(masked)).toBe(false);
      for (const quarantine of [fixture.quarantine, (await fixture.reopen?.()) ?? fixture.quarantine]) {
        expect(await quarantine.list()).toEqual([{ ...masked, at: record("q5").at }]);
      }
      // A body of another size (compressed or not, on stores that compress) and no body at all replace it whole too.
      const large = { ...masked, raw: { id: "CA1", note: "x".repeat(20_000) } };
      expect(await fixture.quarantine.put(large)).toBe(false);
      expect((await fixture.quarantine.list())[0]?.raw).toEqual(large.raw);
      const { raw: _none, ...bodiless } = masked;
      expect(await fixture.quarantine.put(bodiless as QuarantineRecord)).toBe(false);
      expect((await fixture.quarantine.list())[0]?.raw).toBeUndefined();
      expect(await fixture.quarantine.size()).toBe(1);
    });

    it("keeps a record without an entity id", async () => {
      const { entityId: _omit, ...withoutEntity } = record("q4");
      await fixture.quarantine.put(withoutEntity);
      const [stored] = await fixture.quarantine.list();
      expect(stored?.entityId).toBeUndefined();
      expect(stored?.reason).toBe("validation: id: missing");
    });

    it("counts zero records before anything is quarantined", async () => {
      expect(await fixture.quarantine.size()).toBe(0);
    });

    it("counts each distinct record once, however often it is put", async () => {
      await fixture.quarantine.put(record("s1"));
      await fixture.quarantine.put(record("s1"));
      await fixture.quarantine.put(record("s2", "2025-01-15T10:00:01.000Z"));
      expect(await fixture.quarantine.size()).toBe(2);
    });

    it("deletes the records named and keeps the others", async () => {
      for (let i = 0; i < 4; i += 1) await fixture.quarantine.put(record(`d${i}`, `2025-01-15T10:00:0${i}.000Z`));
      await fixture.quarantine.deleteMany(["d0", "d2"]);
      expect((await fixture.quarantine.list()).map((r) => r.id).sort()).toEqual(["d1", "d3"]);
      expect(await fixture.quarantine.size()).toBe(2);
    });

    it("deletes more records than one call of a batching store takes (DynamoDB: 25), ids of any form among them", async () => {
      const ids = Array.from({ length: 60 }, (_, i) => `m${String(i).padStart(2, "0")}`);
      for (const id of [...ids, "../x/y", "keep"]) await fixture.quarantine.put(record(id));
      await fixture.quarantine.deleteMany([...ids, "../x/y"]);
      expect((await fixture.quarantine.list()).map((r) => r.id)).toEqual(["keep"]);
    });

    it("treats an empty list, an absent record and an id given twice as done", async () => {
      await fixture.quarantine.deleteMany([]);
      await fixture.quarantine.deleteMany(["never-put"]);
      await fixture.quarantine.put(record("d3"));
      await fixture.quarantine.put(record("d4", "2025-01-15T10:00:01.000Z"));
      // A batching store must not send one key twice in a call (DynamoDB refuses the whole call).
      await fixture.quarantine.deleteMany(["d3", "never-put", "d3"]);
      expect((await fixture.quarantine.list()).map((r) => r.id)).toEqual(["d4"]);
      await fixture.quarantine.deleteMany(["d3"]);
      expect(await fixture.quarantine.size()).toBe(1);
    });

    it("hands every record once, page by page, each page within the limit", async () => {
      for (let i = 0; i < 7; i += 1) await fixture.quarantine.put(record(`p${i}`, `2025-01-15T10:00:0${i}.000Z`));
      const pages: (readonly QuarantineRecord[])[] = [];
      for await (const page of fixture.quarantine.pages({ limit: 3 })) pages.push(page);
      expect(pages.every((page) => page.length >= 1 && page.length <= 3)).toBe(true);
      const walked = pages.flat();
      expect(walked.map((r) => r.id).sort()).toEqual(["p0", "p1", "p2", "p3", "p4", "p5", "p6"]);
      expect(walked.find((r) => r.id === "p3")).toEqual(record("p3", "2025-01-15T10:00:03.000Z"));
    });

    it("goes on after a record a walk handed out, in the same order, with no record before it", async () => {
      for (let i = 0; i < 7; i += 1) await fixture.quarantine.put(record(`a${i}`, `2025-01-15T10:00:0${i}.000Z`));
      const walk = async (after?: string) => {
        const ids: string[] = [];
        for await (const page of fixture.quarantine.pages(after === undefined ? { limit: 2 } : { limit: 2, after })) ids.push(...page.map((r) => r.id));
        return ids;
      };
      const all = await walk();
      expect(await walk(all[2])).toEqual(all.slice(3));
      expect(await walk(all.at(-1))).toEqual([]);
    });

    it("goes on after a record in the order of ids, whatever order the records were put in", async () => {
      const ids = ["r3", "r0", "r5", "r1", "r6", "r2", "r4"];
      for (const [i, id] of ids.entries()) await fixture.quarantine.put(record(id, `2025-01-15T10:00:0${i}.000Z`));
      const walk = async (after?: string) => {
        const walked: string[] = [];
        for await (const page of fixture.quarantine.pages(after === undefined ? { limit: 2 } : { limit: 2, after })) walked.push(...page.map((r) => r.id));
        return walked;
      };
      const all = await walk();
      expect([...all].sort()).toEqual([...ids].sort());
      for (const [i, id] of all.entries()) expect(await walk(id)).toEqual(all.slice(i + 1));
    });

    it("goes on after an id no record holds (where a re-drive starts its walk), in the order of JavaScript's < over ids", async () => {
      // Record ids are UUIDs (quarantineId); the re-drive compares them with < to stop its walk where it started.
      const ids = ["0f3a9c1e-5b2d-8a4f-9e1c-3d5b7a9c1e2f", "7c1e2f3a-9b8d-8c7e-a6f5-4e3d2c1b0a9f", "7c1e2f3a-9b8d-8c7e-b000-000000000000", "e4d5c6b7-a8f9-8e0d-8c1b-2a3f4e5d6c7b"];
      for (const id of ids) await fixture.quarantine.put(record(id));
      const walk = async (after: string) => {
        const walked: string[] = [];
        for await (const page of fixture.quarantine.pages({ limit: 2, after })) walked.push(...page.map((r) => r.id));
        return walked;
      };
      expect(await walk("7c1e2f3a-9b8d-8c7e-a6f5-4e3d2c1b0a9e")).toEqual(ids.slice(1));
      expect(await walk("7c1e2f3a-9b8d-8c7e-a6f5-4e3d2c1b0aa0")).toEqual(ids.slice(2));
      expect(await walk("00000000-0000-8000-8000-000000000000")).toEqual(ids);
      expect(await walk("ffffffff-ffff-8fff-bfff-ffffffffffff")).toEqual([]);
    });

    it("walks, from the start or after any id, the ids greater by JavaScript's < in ascending < order (what the re-drive's wrap-around relies on)", async () => {
      // UUID-shaped as record ids are, put out of order; digits before letters, ids sharing long prefixes, and ids
      // that differ only past a hyphen, where an order other than <'s (a locale's, numeric) would part from it.
      const ids = [
        "f0000000-0000-8000-8000-000000000000",
        "0a000000-0000-8000-8000-000000000000",
        "09ffffff-ffff-8fff-bfff-ffffffffffff",
        "7c1e2f3a-9b8d-8c7e-a6f5-4e3d2c1b0a9f",
        "7c1e2f3a-9b8d-8c7e-a6f5-4e3d2c1b0aa0",
        "7c1e2f3a-9b8d-8c7e-a6f5-4e3d2c1b0a90",
        "7c1e2f3a-9b8d-8c7f-0000-000000000000",
        "a0000000-0000-8000-8000-000000000000",
        "00000000-0000-8000-8000-000000000001",
        "7c1e2f3b-0000-8000-8000-000000000000",
      ];
      for (const id of ids) await fixture.quarantine.put(record(id));
      const ascending = [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      const walk = async (after?: string) => {
        const walked: string[] = [];
        for await (const page of fixture.quarantine.pages(after === undefined ? { limit: 3 } : { limit: 3, after })) walked.push(...page.map((r) => r.id));
        return walked;
      };
      expect(await walk()).toEqual(ascending);
      const points = [...ids, "00000000-0000-8000-8000-000000000000", "7c1e2f3a-9b8d-8c7e-a6f5-4e3d2c1b0a9e", "7c1e2f3a-ffff-8fff-bfff-ffffffffffff", "ffffffff-ffff-8fff-bfff-ffffffffffff"];
      for (const after of points) expect(await walk(after)).toEqual(ascending.filter((id) => id > after));
    });

    it("hands no page before anything is quarantined", async () => {
      for await (const page of fixture.quarantine.pages({ limit: 3 })) expect.unreachable(`a page of ${page.length}`);
    });

    it("keeps deleted records gone across a new instance", async (ctx) => {
      if (!fixture.reopen) return ctx.skip();
      await fixture.quarantine.put(record("d4"));
      await fixture.quarantine.put(record("d5"));
      await fixture.quarantine.deleteMany(["d4", "d5"]);
      expect(await (await fixture.reopen()).list()).toEqual([]);
    });

    it("keeps records durable across a new instance", async (ctx) => {
      if (!fixture.reopen) return ctx.skip();
      await fixture.quarantine.put(record("q5"));
      expect((await (await fixture.reopen()).list()).map((r) => r.id)).toEqual(["q5"]);
    });
  });
}
