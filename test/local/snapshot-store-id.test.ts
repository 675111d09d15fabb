/** The snapshot store's id file: which contents are an id, what a missing or unreadable one is, and how one is made. */
import { mkdirSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { CorruptStateError } from "../../shared/local/errors.js";
import { makeSnapshotStoreId, snapshotStoreIdOf } from "../../shared/local/snapshot-store-id.js";
import { tempDirPerTest } from "../temp-dir.js";

let dir: string;
tempDirPerTest("store-id-", (made) => (dir = made));

/** Writes `text` as the id file of the state directory `dir`. */
function writeIdFile(text: string): string {
  mkdirSync(path.join(dir, "snapshots"), { recursive: true });
  const file = path.join(dir, "snapshots", "store-id");
  writeFileSync(file, text);
  return file;
}

describe("snapshotStoreIdOf", () => {
  it("is undefined for a state directory without an id, or whose snapshots path is not a directory", () => {
    expect(snapshotStoreIdOf(dir)).toBeUndefined();
    writeFileSync(path.join(dir, "snapshots"), "not a directory");
    expect(snapshotStoreIdOf(dir)).toBeUndefined();
  });

  it("reads an id written back by hand with or without a line end, CRLF included", () => {
    for (const text of ["0123456789abcdef", "0123456789abcdef\n", "0123456789abcdef\r\n"]) {
      writeIdFile(text);
      expect(snapshotStoreIdOf(dir)).toBe("0123456789abcdef");
    }
  });

  it.each(["0123456789abcde\n", "0123456789abcdef0\n", "0123456789ABCDEF\n", "id 0123456789abcdef\n", "01234567\n"])(
    "refuses %j as no id, naming the file and how to mend it",
    (text) => {
      const file = writeIdFile(text);
      expect(() => snapshotStoreIdOf(dir)).toThrow(CorruptStateError);
      expect(() => snapshotStoreIdOf(dir)).toThrow(expect.objectContaining({ file, message: expect.stringMatching(/not 16 hex digits .*binding\.json records/) }));
    },
  );

  it("refuses an id file it cannot read, naming the file and how to mend it, with the system's error as the cause", () => {
    const file = path.join(dir, "snapshots", "store-id");
    mkdirSync(file, { recursive: true });
    let error: unknown;
    try {
      snapshotStoreIdOf(dir);
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(CorruptStateError);
    expect(error).toMatchObject({ file, message: expect.stringMatching(/cannot be read .*binding\.json records/), cause: expect.objectContaining({ code: "EISDIR" }) });
  });
});

describe("makeSnapshotStoreId", () => {
  it("makes an owner-only id file of 16 hex digits once, and keeps it", async () => {
    const id = await makeSnapshotStoreId(dir);
    expect(id).toMatch(/^[0-9a-f]{16}$/);
    expect(statSync(path.join(dir, "snapshots", "store-id")).mode & 0o777).toBe(0o600);
    expect(await makeSnapshotStoreId(dir)).toBe(id);
    expect(snapshotStoreIdOf(dir)).toBe(id);
  });
});
