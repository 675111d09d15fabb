/**
 * DurableNames at the edges of what it finds: a file gone since it was opened, a link that leads nowhere, a directory
 * that cannot be fsynced. A name is known durable only once its directory's fsync succeeded.
 */
import { mkdtemp, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DurableNames } from "../../shared/local/durable-names.js";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "bridge-durable-names-edges-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const identity = { dev: 1, ino: 7 };

describe("DurableNames.makeDurable at the edges", () => {
  it("takes a file moved away since it was opened (a rotation) as made durable by its directory's fsync, without an error", () => {
    const names = new DurableNames();
    const file = path.join(dir, "events.jsonl");
    expect(() => names.makeDurable(file, identity)).not.toThrow();
    expect(names.knows(file, identity)).toBe(true);
  });

  it("does not know a name durable whose directory could not be fsynced: the next find fsyncs it again", () => {
    const names = new DurableNames();
    const file = path.join(dir, "gone", "events.jsonl");
    expect(() => names.makeDurable(file, identity)).toThrow(expect.objectContaining({ code: "ENOENT" }));
    expect(names.knows(file, identity)).toBe(false);
  });

  it("throws for a link whose target cannot be found out (a loop), and does not know its name durable", async () => {
    const names = new DurableNames();
    const file = path.join(dir, "events.jsonl");
    await symlink(path.join(dir, "other.jsonl"), file);
    await symlink(file, path.join(dir, "other.jsonl"));
    expect(() => names.makeDurable(file, identity)).toThrow(expect.objectContaining({ code: "ELOOP" }));
    expect(names.knows(file, identity)).toBe(false);
  });

});
