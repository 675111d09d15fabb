/**
 * A quarantine record file that is there but cannot be read is never taken for one deleted meanwhile: listed as gone,
 * its item would drop out of every re-drive for good; put over, its first `at` would be lost.
 */
import { mkdir, readlink, symlink } from "node:fs/promises";
import path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { FileQuarantine } from "../../shared/local/index.js";
import { tempDirPerTest } from "../temp-dir.js";

let dir: string;
tempDirPerTest("bridge-quarantine-", (made) => (dir = made));
let file: string;
beforeEach(async () => {
  await mkdir(path.join(dir, "quarantine"));
  // A link to itself: opening it fails with ELOOP, an error other than a missing file (as EACCES or EIO would).
  file = path.join(dir, "quarantine", "r1.json");
  await symlink("r1.json", file);
});

describe("FileQuarantine with a record file it cannot read", () => {
  it("fails the listing, naming the file, rather than passing the record over as deleted", async () => {
    await expect(new FileQuarantine(dir).list()).rejects.toMatchObject({ name: "LocalStateError", message: "Quarantine record cannot be read", file });
  });

  it("fails a put of that id, leaving the file as it was, rather than writing a new record over it", async () => {
    const put = new FileQuarantine(dir).put({ id: "r1", kind: "card", reason: "validation: x", raw: {}, at: "2025-01-15T10:00:01.000Z" });
    await expect(put).rejects.toMatchObject({ name: "LocalStateError", file });
    expect(await readlink(file)).toBe("r1.json");
  });
});
