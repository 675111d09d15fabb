/**
 * Memory of a long-lived local store: the record file names a quarantine (or the events file) knows are durable must
 * not grow with every record a `run --interval` loop quarantined in its weeks of uptime.
 */
import path from "node:path";
import { describe, expect, it } from "vitest";
import { FileQuarantine } from "../../shared/local/index.js";
import { DurableNames } from "../../shared/local/durable-names.js";
import { tempDirPerTest } from "../temp-dir.js";

let dir: string;
tempDirPerTest("bridge-durable-names-", (made) => (dir = made));

describe("the durable names a long-lived store remembers", () => {
  it("are forgotten when the store deletes their records (a re-drive), so a loop's quarantine put and drained holds none", async () => {
    const quarantine = new FileQuarantine(dir);
    for (let cycle = 0; cycle < 20; cycle++) {
      const ids = Array.from({ length: 10 }, (_, i) => `c${cycle}-r${i}`);
      for (const id of ids) await quarantine.put({ id, kind: "transaction", reason: "validation: x", raw: {}, at: "2025-01-15T10:00:01.000Z" });
      await quarantine.deleteMany(ids);
    }
    expect(await quarantine.size()).toBe(0);
    expect(quarantine.durableNamesKnown).toBe(0);
  });

  it("stay bounded however many distinct files were noted (records deleted by another process, a redrive beside the loop)", () => {
    const names = new DurableNames();
    for (let i = 0; i < 50_000; i++) names.note(path.join(dir, `r${i}.json`), { dev: 1, ino: i });
    expect(names.size).toBeLessThanOrEqual(4096);
  });

  it("remember the 4096 files noted last: a loop's quarantine of that many records costs no directory fsync per record found again", () => {
    const names = new DurableNames();
    const knows = (i: number) => names.knows(path.join(dir, `r${i}.json`), { dev: 1, ino: i });
    for (let i = 0; i < 5000; i++) names.note(path.join(dir, `r${i}.json`), { dev: 1, ino: i });
    expect(names.size).toBe(4096);
    expect(knows(5000 - 4096)).toBe(true);
    expect(knows(5000 - 4097)).toBe(false);
  });

  /** Names of at most two files, having noted record file `r<i>.json` (inode i) for each `i` of `order` in turn. */
  function notedInTurn(order: readonly number[]): { names: DurableNames; knows: (i: number) => boolean } {
    const names = new DurableNames(2);
    const file = (i: number) => path.join(dir, `r${i}.json`);
    for (const i of order) names.note(file(i), { dev: 1, ino: i });
    return { names, knows: (i) => names.knows(file(i), { dev: 1, ino: i }) };
  }

  it("still skip the fsync for a file known durable, and fsync again for one forgotten (never the other way round)", () => {
    const { names, knows } = notedInTurn([0, 1, 2]);
    expect(names.size).toBe(2);
    expect(knows(2)).toBe(true);
    expect(knows(0)).toBe(false);
  });

  it("forget the least recently noted first: a file noted again outlives one noted once since", () => {
    const { knows } = notedInTurn([0, 1, 0, 2]);
    expect(knows(0)).toBe(true);
    expect(knows(1)).toBe(false);
  });

  it("tell files apart by device as well as inode: a file system mounted again at the path holds other files", () => {
    const names = new DurableNames();
    const file = path.join(dir, "tokens.json");
    names.note(file, { dev: 1, ino: 7 });
    expect(names.knows(file, { dev: 2, ino: 7 })).toBe(false);
    expect(names.knows(file, { dev: 1n, ino: 7n })).toBe(true);
  });
});
