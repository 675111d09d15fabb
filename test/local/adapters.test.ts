import { chmod, mkdir, readdir, readFile, rm, stat, symlink, utimes, writeFile } from "node:fs/promises";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import {
  CorruptStateError,
  FileLock,
  FileQuarantine,
  FileSnapshotStore,
  FileTokenStore,
  JsonlEventPublisher,
  LocalStateError,
  TORN_REGION_BYTES,
  TokenFileUnwritableError,
  createLocalAdapters,
  envelopeIds,
  envelopeLine,
  toEventBridgeEnvelope,
  writeFileAtomic,
} from "../../shared/local/index.js";
import { sampleEvent } from "../bridge/contract/index.js";
import { contentHash } from "../../shared/bridge/hash.js";
import { entrySize, MAX_ENTRY_BYTES } from "../../shared/aws/event-size.js";
import { FakeClock } from "../bridge/fakes.js";
import { tempDirPerTest } from "../temp-dir.js";

let dir: string;
tempDirPerTest("bridge-local-", (made) => (dir = made));

describe("writeFileAtomic", () => {
  it("replaces the file whole and leaves no temp file behind", async () => {
    const file = path.join(dir, "state.json");
    await writeFileAtomic(file, "old");
    await writeFileAtomic(file, "new");
    expect(await readFile(file, "utf8")).toBe("new");
    expect(await readdir(dir)).toEqual(["state.json"]);
  });

  it("keeps the old file whole and leaves no temp file behind when the write fails part-way", async () => {
    const file = path.join(dir, "state.json");
    await writeFileAtomic(file, "old");
    // The second chunk is not a buffer: the write throws after the first chunk landed in the temp file.
    await expect(writeFileAtomic(file, [Buffer.from("new"), null as unknown as Uint8Array])).rejects.toThrow(TypeError);
    expect(await readFile(file, "utf8")).toBe("old");
    expect(await readdir(dir)).toEqual(["state.json"]);
  });

  it("writes text as UTF-8 and bytes as they are (a quarantined body may hold any character)", async () => {
    const text = path.join(dir, "record.json");
    await writeFileAtomic(text, '{"merchant":"Café 🚀"}\n');
    expect(await readFile(text)).toEqual(Buffer.from('{"merchant":"Café 🚀"}\n', "utf8"));
    const bytes = path.join(dir, "bytes.bin");
    await writeFileAtomic(bytes, Uint8Array.of(0x00, 0xff, 0x0a, 0xc3));
    expect(await readFile(bytes)).toEqual(Buffer.from([0x00, 0xff, 0x0a, 0xc3]));
  });

  it("resolves to the identity of the file it wrote, exact (a 64-bit inode number is not rounded to a double)", async () => {
    const file = path.join(dir, "state.json");
    const identity = await writeFileAtomic(file, "new");
    const { dev, ino } = await stat(file, { bigint: true });
    expect(identity).toEqual({ dev, ino });
  });

  it("leaves no temp file behind when the rename fails", async () => {
    const target = path.join(dir, "state.json");
    await mkdir(target);
    await expect(writeFileAtomic(target, "new")).rejects.toMatchObject({ code: expect.stringMatching(/^E/) });
    expect(await readdir(dir)).toEqual(["state.json"]);
  });
});

describe("FileSnapshotStore", () => {
  const snap = (key: `card:${string}`, n: number) => ({ key, hash: `h${n}`, object: { n }, updatedAt: "2025-01-15T10:00:00.000Z" });

  it("writes one segment file per putMany, however many snapshots it holds", async () => {
    const store = new FileSnapshotStore(dir);
    await store.putMany(Array.from({ length: 100 }, (_, i) => snap(`card:C${i}`, i)));
    expect(await readdir(path.join(dir, "snapshots"))).toHaveLength(1);
    expect(await store.size()).toBe(100);
  });

  it("deletes a segment once every entry in it was superseded", async () => {
    const store = new FileSnapshotStore(dir);
    await store.putMany([snap("card:A", 1), snap("card:B", 1)]);
    await store.putMany([snap("card:A", 2)]);
    expect(await readdir(path.join(dir, "snapshots"))).toHaveLength(2);
    await store.putMany([snap("card:B", 2)]);
    expect(await readdir(path.join(dir, "snapshots"))).toHaveLength(2);
    const reopened = new FileSnapshotStore(dir);
    const found = await reopened.getMany(["card:A", "card:B"]);
    expect([found.get("card:A")?.hash, found.get("card:B")?.hash]).toEqual(["h2", "h2"]);
  });

  it("fails its reads where the snapshot directory cannot be read, naming it, rather than take every item for new", async () => {
    // A state directory restored with a file at snapshots/: an empty store would publish the whole backlog again.
    await writeFile(path.join(dir, "snapshots"), "");
    const error = await new FileSnapshotStore(dir).getMany(["card:A"]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LocalStateError);
    expect(error).toMatchObject({ message: "Snapshot directory cannot be read", file: path.join(dir, "snapshots"), cause: { code: "ENOTDIR" } });
  });

  it("ignores and removes a temp file left by a crash mid-write", async () => {
    const store = new FileSnapshotStore(dir);
    await store.putMany([snap("card:A", 1)]);
    const torn = path.join(dir, "snapshots", "seg-000000000002-deadbeef.log.123.abcd1234.tmp");
    await writeFile(torn, '{"v":1,"entries":[["card:A",0,');
    const reopened = new FileSnapshotStore(dir);
    expect((await reopened.getMany(["card:A"])).get("card:A")?.hash).toBe("h1");
    expect((await readdir(path.join(dir, "snapshots"))).some((n) => n.endsWith(".tmp"))).toBe(false);
  });

  it("neither reads nor deletes a file whose name only begins as a segment's (an operator's copy of one)", async () => {
    const store = new FileSnapshotStore(dir);
    await store.putMany([snap("card:A", 1)]);
    const folder = path.join(dir, "snapshots");
    const [name] = await readdir(folder);
    const copy = `${name as string}.bak`;
    await writeFile(path.join(folder, copy), await readFile(path.join(folder, name as string)));
    // Supersedes the copied segment: loaded as one, the copy would be wholly superseded too, and deleted.
    await store.putMany([snap("card:A", 2)]);
    expect((await new FileSnapshotStore(dir).getMany(["card:A"])).get("card:A")?.hash).toBe("h2");
    expect(await readdir(folder)).toContain(copy);
  });

  it("reports a segment with a broken header as corrupt instead of guessing", async () => {
    await mkdir(path.join(dir, "snapshots"), { recursive: true });
    await writeFile(path.join(dir, "snapshots", "seg-000000000001-deadbeef.log"), "not json\n");
    await expect(new FileSnapshotStore(dir).getMany(["card:A"])).rejects.toBeInstanceOf(CorruptStateError);
  });

  it.each([
    ["of an unknown version", '{"v":2,"entries":[]}\n'],
    // Cut short inside its first line: the read must end, not wait for a newline that never comes.
    ["without the newline that ends it", '{"v":1,"entries":[["card:A",0,'],
    ["without a list of entries", '{"v":1,"entries":{}}\n'],
    // Counted as holding no live bytes, it was deleted on load while the index still pointed into it.
    ["listing an entry of a negative length", '{"v":1,"entries":[["card:A",0,-1]]}\n'],
  ])("reports a segment with a header %s as corrupt, naming the file, and keeps it", async (_name, text) => {
    await mkdir(path.join(dir, "snapshots"), { recursive: true });
    const segment = path.join(dir, "snapshots", "seg-000000000001-deadbeef.log");
    await writeFile(segment, text);
    await expect(new FileSnapshotStore(dir).getMany(["card:A"])).rejects.toMatchObject({ name: "CorruptStateError", message: "Snapshot segment header is unreadable", file: segment });
    expect(await readdir(path.join(dir, "snapshots"))).toEqual([path.basename(segment)]);
  });

  it("reports a torn header as corrupt after a whole one it is the start of, not completed by what that one left in the read buffer", async () => {
    // Headers are read into one reused buffer: the torn header's own bytes end where its file does.
    await mkdir(path.join(dir, "snapshots"), { recursive: true });
    await writeFile(path.join(dir, "snapshots", "seg-000000000001-deadbeef.log"), '{"v":1,"entries":[]}\n');
    const torn = path.join(dir, "snapshots", "seg-000000000002-deadbeef.log");
    await writeFile(torn, '{"v":1,"entr');
    await expect(new FileSnapshotStore(dir).getMany(["card:A"])).rejects.toMatchObject({ name: "CorruptStateError", message: "Snapshot segment header is unreadable", file: torn });
  });

  it("reports a segment shorter than its header says as corrupt, naming the problem", async () => {
    const store = new FileSnapshotStore(dir);
    await store.putMany([snap("card:A", 1), snap("card:B", 1)]);
    const [name] = await readdir(path.join(dir, "snapshots"));
    const segment = path.join(dir, "snapshots", name as string);
    // A copy cut short: the last line ends before the length its header gives it.
    const bytes = await readFile(segment);
    await writeFile(segment, bytes.subarray(0, bytes.length - 10));
    await expect(new FileSnapshotStore(dir).getMany(["card:B"])).rejects.toMatchObject({ name: "CorruptStateError", message: "Snapshot segment is shorter than its header says", file: segment });
  });

  it("opens a segment whose header is larger than the first read of it", async () => {
    const store = new FileSnapshotStore(dir);
    // 5000 header entries: well over the 64 KiB read first.
    await store.putMany(Array.from({ length: 5000 }, (_, i) => snap(`card:C${i}`, i)));
    const found = await new FileSnapshotStore(dir).getMany(["card:C0", "card:C4999"]);
    expect([found.get("card:C0"), found.get("card:C4999")]).toEqual([snap("card:C0", 0), snap("card:C4999", 4999)]);
    expect(await new FileSnapshotStore(dir).size()).toBe(5000);
  });

  it("writes a page larger than the first write buffer whole, multi-byte text included", async () => {
    // 1.6 M UTF-16 units, 3.6 MB of UTF-8 ("€" takes three bytes for one unit): room is counted in bytes, not characters.
    const big = { key: "card:A" as const, hash: "h", object: { pad: "é🚀€".repeat(400_000) }, updatedAt: "2025-01-15T10:00:00.000Z" };
    await new FileSnapshotStore(dir).putMany([big, snap("card:B", 1)]);
    const found = await new FileSnapshotStore(dir).getMany(["card:A", "card:B"]);
    expect(found.get("card:A")).toEqual(big);
    expect(found.get("card:B")).toEqual(snap("card:B", 1));
  });

  it("writes a page larger than the buffer an earlier page of the same store took whole", async () => {
    const store = new FileSnapshotStore(dir);
    await store.putMany([snap("card:A", 1)]);
    // 3 MB: past the 2 MiB the first page's buffer took, so it must grow for this one.
    const big = { key: "card:B" as const, hash: "h", object: { pad: "x".repeat(3_000_000) }, updatedAt: "2025-01-15T10:00:00.000Z" };
    await store.putMany([big]);
    expect((await new FileSnapshotStore(dir).getMany(["card:B"])).get("card:B")).toEqual(big);
  });

  it("writes a key put twice in one putMany once, its last version: the replaced one is not kept on disk", async () => {
    // A snapshot holds card holders' names: a replaced version left in a segment outlives what vacuum promises.
    await new FileSnapshotStore(dir).putMany([snap("card:A", 1), snap("card:A", 2)]);
    const [name] = await readdir(path.join(dir, "snapshots"));
    const text = await readFile(path.join(dir, "snapshots", name as string), "utf8");
    expect(text).not.toContain('"h1"');
    expect(JSON.parse(text.slice(0, text.indexOf("\n"))).entries).toHaveLength(1);
    expect((await new FileSnapshotStore(dir).getMany(["card:A"])).get("card:A")?.hash).toBe("h2");
  });

  it("reads two segments of one sequence number (writers racing without the lock) in name order, as every process does", async () => {
    await mkdir(path.join(dir, "snapshots"), { recursive: true });
    for (const [tag, n] of [["aaaaaaaa", 1], ["bbbbbbbb", 2]] as const) {
      const line = JSON.stringify(snap("card:A", n));
      const header = JSON.stringify({ v: 1, entries: [["card:A", 0, Buffer.byteLength(line)]] });
      await writeFile(path.join(dir, "snapshots", `seg-000000000001-${tag}.log`), `${header}\n${line}\n`);
    }
    expect((await new FileSnapshotStore(dir).getMany(["card:A"])).get("card:A")?.hash).toBe("h2");
  });

  it("neither reads nor deletes a file named as a segment but with a sequence number of other than 12 digits", async () => {
    const folder = path.join(dir, "snapshots");
    await mkdir(folder, { recursive: true });
    await writeFile(path.join(folder, "seg-1-deadbeef.log"), "not a segment\n");
    const store = new FileSnapshotStore(dir);
    await store.putMany([snap("card:A", 1)]);
    expect((await new FileSnapshotStore(dir).getMany(["card:A"])).get("card:A")?.hash).toBe("h1");
    expect(await readdir(folder)).toContain("seg-1-deadbeef.log");
  });

  it("writes nothing for an empty putMany: no segment, no directory", async () => {
    const store = new FileSnapshotStore(dir);
    await store.putMany([]);
    expect(await readdir(dir)).toEqual([]);
    await store.putMany([snap("card:A", 1)]);
    await store.putMany([]);
    expect(await readdir(path.join(dir, "snapshots"))).toHaveLength(1);
  });

  it("keeps the snapshot directory and its segments to their owner (snapshots hold card holders' names)", async () => {
    await new FileSnapshotStore(dir).putMany([snap("card:A", 1)]);
    const folder = path.join(dir, "snapshots");
    expect((await stat(folder)).mode & 0o777).toBe(0o700);
    const names = await readdir(folder);
    expect(names).toHaveLength(1);
    for (const name of names) expect((await stat(path.join(folder, name))).mode & 0o777).toBe(0o600);
  });

  it("reads a key's last write and deletes the superseded segments a crash before their deletes left behind", async () => {
    const store = new FileSnapshotStore(dir);
    const folder = path.join(dir, "snapshots");
    const written = new Map<string, Buffer>();
    for (let n = 1; n <= 30; n++) {
      await store.putMany([snap("card:A", n)]);
      for (const name of await readdir(folder)) written.set(name, await readFile(path.join(folder, name)));
    }
    // Each putMany deleted the segment before it: all back, they are what crashes before those deletes leave.
    for (const [name, bytes] of written) await writeFile(path.join(folder, name), bytes);
    expect(await readdir(folder)).toHaveLength(30);
    expect((await new FileSnapshotStore(dir).getMany(["card:A"])).get("card:A")?.hash).toBe("h30");
    expect(await readdir(folder)).toHaveLength(1);
  });

  it("walks a key that its segment's header lists twice once, as the later line", async () => {
    // As two keys of one fingerprint share one slot of the index: only the entry the index holds is live.
    await mkdir(path.join(dir, "snapshots"), { recursive: true });
    const [first, second] = [JSON.stringify(snap("card:A", 1)), JSON.stringify(snap("card:A", 2))];
    const header = JSON.stringify({ v: 1, entries: [["card:A", 0, first.length], ["card:A", first.length + 1, second.length]] });
    await writeFile(path.join(dir, "snapshots", "seg-000000000001-deadbeef.log"), `${header}\n${first}\n${second}\n`);
    const store = new FileSnapshotStore(dir);
    expect((await store.getMany(["card:A"])).get("card:A")).toEqual(snap("card:A", 2));
    expect((await store.scan({ limit: 10 })).snapshots).toEqual([snap("card:A", 2)]);
  });

  const entry = { key: "card:A", hash: "h", object: { status: "Active" }, updatedAt: "2025-01-15T10:00:00.000Z" };
  it.each([
    ["another key than its header names", { ...entry, key: "card:B" }, "Snapshot segment entry does not hold the key its header names"],
    ["no key at all", { ...entry, key: null }, "Snapshot segment entry does not hold the key its header names"],
    ["no key field", { ...entry, key: undefined }, "Snapshot segment entry does not hold the key its header names"],
    ['a sequence of "2"', { ...entry, sequence: "2" }, "Snapshot segment entry has a sequence that is not a whole number of at least 0"],
    ["a sequence of -1", { ...entry, sequence: -1 }, "Snapshot segment entry has a sequence that is not a whole number of at least 0"],
    ["a sequence of 1.5", { ...entry, sequence: 1.5 }, "Snapshot segment entry has a sequence that is not a whole number of at least 0"],
  ])("reports a line holding %s as corrupt, in getMany and scan alike", async (_name, stored, message) => {
    await mkdir(path.join(dir, "snapshots"), { recursive: true });
    const line = JSON.stringify(stored);
    const header = JSON.stringify({ v: 1, entries: [["card:A", 0, Buffer.byteLength(line)]] });
    const segment = path.join(dir, "snapshots", "seg-000000000001-deadbeef.log");
    await writeFile(segment, `${header}\n${line}\n`);
    const corrupt = { name: "CorruptStateError", message, file: segment };
    await expect(new FileSnapshotStore(dir).getMany(["card:A"])).rejects.toMatchObject(corrupt);
    await expect(new FileSnapshotStore(dir).scan({ limit: 10 })).rejects.toMatchObject(corrupt);
  });

  it("reports a line that is not JSON without the parser's message, which quotes the personal data around the fault", async () => {
    await mkdir(path.join(dir, "snapshots"), { recursive: true });
    const line = '{"key":"card:A","hash":"h","object":{"card_holder_name":Leakwell},"updatedAt":"2025-01-15T10:00:00.000Z"}';
    const header = JSON.stringify({ v: 1, entries: [["card:A", 0, Buffer.byteLength(line)]] });
    const segment = path.join(dir, "snapshots", "seg-000000000001-deadbeef.log");
    await writeFile(segment, `${header}\n${line}\n`);
    const error = await new FileSnapshotStore(dir).getMany(["card:A"]).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "CorruptStateError", message: "Snapshot segment entry is not valid JSON", file: segment });
    expect(inspect(error)).not.toContain("Leakwell");
  });

  it("serialises concurrent writes so the newest write of a key wins after reopening", async () => {
    const store = new FileSnapshotStore(dir);
    await Promise.all([store.putMany([snap("card:A", 1)]), store.putMany([snap("card:A", 2)]), store.putMany([snap("card:A", 3)])]);
    expect((await store.getMany(["card:A"])).get("card:A")?.hash).toBe("h3");
    expect((await new FileSnapshotStore(dir).getMany(["card:A"])).get("card:A")?.hash).toBe("h3");
  });
});

/**
 * Writes `names` into `where`: the `old` and `other` ones modified an hour ago, the `fresh` ones five minutes ago (under
 * the 10 minutes docs/spec-gaps.md gives: a writer stalled that long still renames its temp file). Their access times
 * say the opposite (a backup that read the directory), so a sweep that aged them by access time would get both wrong.
 */
async function leftoverTemps(where: string, names: { old: string[]; fresh: string[]; other: string[] }): Promise<void> {
  await mkdir(where, { recursive: true });
  const hourAgo = new Date(Date.now() - 3_600_000);
  const fiveMinutesAgo = new Date(Date.now() - 5 * 60_000);
  for (const name of [...names.old, ...names.fresh, ...names.other]) await writeFile(path.join(where, name), '{"refreshToken":"leftover"}');
  for (const name of [...names.old, ...names.other]) await utimes(path.join(where, name), new Date(), hourAgo);
  for (const name of names.fresh) await utimes(path.join(where, name), hourAgo, fiveMinutesAgo);
}

describe("FileTokenStore", () => {
  it("keeps the token file readable by its owner only", async () => {
    const store = new FileTokenStore(dir);
    await store.save({ refreshToken: "rt" });
    expect((await stat(store.file)).mode & 0o777).toBe(0o600);
  });

  it("creates a missing state directory readable by its owner only", async () => {
    const store = new FileTokenStore(path.join(dir, "new-state"));
    await store.save({ refreshToken: "rt" });
    expect((await stat(path.join(dir, "new-state"))).mode & 0o777).toBe(0o700);
  });

  it("fails, rather than reading as holding no tokens, when the token file is there but cannot be read", async () => {
    // Read as empty, the token file would let QASHIO_REFRESH_TOKEN stand in: a spent seed sent again revokes the family.
    const store = new FileTokenStore(dir);
    await mkdir(store.file);
    await expect(store.load()).rejects.toMatchObject({ code: "EISDIR" });
  });

  it("fails, rather than reading as holding no tokens, when the token file cannot even be opened", async () => {
    // Opening fails for another reason than a missing file (a symlink loop here; a permission denied alike).
    const store = new FileTokenStore(dir);
    await symlink(path.basename(store.file), store.file);
    await expect(store.load()).rejects.toMatchObject({ code: "ELOOP" });
  });

  it("names the file, not its content, when the file is corrupt", async () => {
    const store = new FileTokenStore(dir);
    await writeFile(store.file, "{ refresh: secret-value");
    const error = await store.load().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CorruptStateError);
    expect((error as Error).message).not.toContain("secret-value");
  });

  it.each([
    ["no refresh token", '{"accessToken":"at-1"}'],
    ["a refresh token that is not a string", '{"refreshToken":42}'],
    ["null", "null"],
  ])("reports a token file holding %s as corrupt, naming the file, rather than handing it out as tokens", async (_what, text) => {
    const store = new FileTokenStore(dir);
    await writeFile(store.file, text);
    await expect(store.load()).rejects.toMatchObject({ name: "CorruptStateError", message: "Token file holds no refresh token", file: store.file });
  });

  it("quotes no token from a corrupt file anywhere on the error, its cause chain included", async () => {
    const store = new FileTokenStore(dir);
    // A refresh token pasted in by hand, and a file whose value lost its quotes: JSON.parse's message quotes the text.
    for (const text of ["rt-SECRETSECRETSECRET\n", '{"refreshToken":rt-SECRETSECRETSECRET}']) {
      await writeFile(store.file, text);
      const error = await store.load().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CorruptStateError);
      expect(inspect(error, { depth: 10 })).not.toContain("SECRET");
    }
  });

  it("removes the old temp files of crashed writes beside its file on its first load (one may hold a refresh token), not fresh ones or other files", async () => {
    const store = new FileTokenStore(dir);
    await store.save({ refreshToken: "rt" });
    const old = ["tokens.json.4242.0a1b2c3d.tmp", "binding.json.4242.deadbeef.tmp"];
    const fresh = ["tokens.json.4343.0a1b2c3d.tmp"];
    // Names only near this module's (`<file>.<pid>.<8 hex>.tmp`): a copy of a leftover kept aside, no pid, no hex.
    const other = ["notes.tmp", "tokens.json.bak", "tokens.json.4242.0a1b2c3d.tmp.bak", "tokens.json..0a1b2c3d.tmp", "tokens.json.4242.notes.tmp"];
    await leftoverTemps(dir, { old, fresh, other });
    expect(await new FileTokenStore(dir).load()).toEqual({ refreshToken: "rt" });
    expect((await readdir(dir)).sort()).toEqual([...fresh, ...other, "tokens.json"].sort());
  });

  it("sweeps on its first load only: a later load of the same store reads the directory no more (it runs every cycle)", async () => {
    const store = new FileTokenStore(dir);
    await store.save({ refreshToken: "rt" });
    await store.load();
    const old = ["tokens.json.4242.0a1b2c3d.tmp"];
    await leftoverTemps(dir, { old, fresh: [], other: [] });
    expect(await store.load()).toEqual({ refreshToken: "rt" });
    expect((await readdir(dir)).sort()).toEqual([...old, "tokens.json"].sort());
  });
});

describe("FileTokenStore.beforeRefresh", () => {
  it("lets a refresh go ahead where a token set can be written, leaving no probe file and the stored tokens as they were", async () => {
    const store = new FileTokenStore(dir);
    await store.save({ refreshToken: "rt" });
    await store.beforeRefresh();
    expect(await readdir(dir)).toEqual(["tokens.json"]);
    expect(await store.load()).toEqual({ refreshToken: "rt" });
  });

  it("lets a refresh go ahead where the state directory is not there yet, creating it owner-only as the save would", async () => {
    const store = new FileTokenStore(path.join(dir, "new-state"));
    await store.beforeRefresh();
    expect((await stat(path.join(dir, "new-state"))).mode & 0o777).toBe(0o700);
    expect(await readdir(path.join(dir, "new-state"))).toEqual([]);
  });

  it("refuses a refresh, naming the token file and the system's code, where the directory cannot be written", async () => {
    await writeFile(path.join(dir, "a-file"), "");
    const store = new FileTokenStore(path.join(dir, "a-file", "state"));
    const error = await store.beforeRefresh().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TokenFileUnwritableError);
    expect(error).toMatchObject({ file: store.file, code: "ENOTDIR" });
    expect((error as Error).message).toBe("the token file's directory cannot take a new token set now (ENOTDIR); the refresh token was not spent");
  });
});

describe("FileQuarantine", () => {
  it("lists records oldest first, neither in the order put nor in id order (ids are random UUIDs)", async () => {
    const quarantine = new FileQuarantine(dir);
    const base = { kind: "card" as const, reason: "validation: x", raw: {} };
    await quarantine.put({ ...base, id: "b", at: "2025-01-15T10:00:02.000Z" });
    await quarantine.put({ ...base, id: "a", at: "2025-01-15T10:00:01.000Z" });
    await quarantine.put({ ...base, id: "c", at: "2025-01-15T10:00:00.000Z" });
    expect((await quarantine.list()).map((r) => r.id)).toEqual(["c", "a", "b"]);
  });

  it("lists records of the same time in id order, whatever order they were put in", async () => {
    const quarantine = new FileQuarantine(dir);
    const base = { kind: "card" as const, reason: "validation: x", raw: {}, at: "2025-01-15T10:00:01.000Z" };
    // Neither the order put, its reverse, nor file name (byte) order: "B" sorts between "a" and "c".
    for (const id of ["a", "c", "B"]) await quarantine.put({ ...base, id });
    expect((await quarantine.list()).map((r) => r.id)).toEqual(["a", "B", "c"]);
  });

  it("passes over a record deleted after its name was read (a re-drive beside it) and goes on to the records after it", async () => {
    const quarantine = new FileQuarantine(dir);
    const base = { kind: "card" as const, reason: "validation: x", raw: {}, at: "2025-01-15T10:00:01.000Z" };
    for (const id of ["a", "b", "c"]) await quarantine.put({ ...base, id });
    const seen: string[] = [];
    for await (const page of quarantine.pages({ limit: 1 })) {
      seen.push(...page.map((r) => r.id));
      if (seen.length === 1) await quarantine.deleteMany(["b"]);
    }
    expect(seen).toEqual(["a", "c"]);
  });

  it("keeps an id that holds path separators inside its directory, as one record", async () => {
    const quarantine = new FileQuarantine(dir);
    const base = { kind: "card" as const, reason: "validation: x", raw: {}, at: "2025-01-15T10:00:01.000Z" };
    await quarantine.put({ ...base, id: "../r1" });
    await quarantine.put({ ...base, id: "a/b" });
    expect((await quarantine.list()).map((r) => r.id)).toEqual(["../r1", "a/b"]);
    expect(await readdir(dir)).toEqual(["quarantine"]);
    await quarantine.deleteMany(["../r1"]);
    expect((await quarantine.list()).map((r) => r.id)).toEqual(["a/b"]);
  });

  it("goes on after an id its file name encodes (a character other than a letter or digit) from the record after it in the walk", async () => {
    const quarantine = new FileQuarantine(dir);
    const base = { kind: "card" as const, reason: "validation: x", raw: {}, at: "2025-01-15T10:00:01.000Z" };
    for (const id of ["a/b", "a+", "a"]) await quarantine.put({ ...base, id });
    const walk = async (after?: string) => {
      const walked: string[] = [];
      for await (const page of quarantine.pages(after === undefined ? { limit: 2 } : { limit: 2, after })) walked.push(...page.map((r) => r.id));
      return walked;
    };
    const all = await walk();
    expect([...all].sort()).toEqual(["a", "a+", "a/b"]);
    for (const [i, id] of all.entries()) expect(await walk(id)).toEqual(all.slice(i + 1));
  });

  it("fails the listing and the count where the quarantine directory cannot be read, rather than report no record", async () => {
    // A state directory restored with a file at quarantine/: a re-drive told "none" would leave every record behind.
    await writeFile(path.join(dir, "quarantine"), "");
    const quarantine = new FileQuarantine(dir);
    for (const read of [() => quarantine.size(), () => quarantine.list()]) {
      const error = await read().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LocalStateError);
      expect(error).toMatchObject({ message: "Quarantine directory cannot be read", file: path.join(dir, "quarantine"), cause: { code: "ENOTDIR" } });
    }
  });

  it("writes each record as one line of JSON ending in a newline, a text file read by hand, also when a record found again is rewritten", async () => {
    const quarantine = new FileQuarantine(dir);
    const record = { id: "r1", kind: "card" as const, reason: "validation: x", raw: { id: "CA1" }, at: "2025-01-15T10:00:01.000Z" };
    const file = path.join(dir, "quarantine", "r1.json");
    await quarantine.put(record);
    expect(await readFile(file, "utf8")).toBe(`${JSON.stringify(record)}\n`);
    await quarantine.put({ ...record, reason: "validation: y" });
    expect(await readFile(file, "utf8")).toBe(`${JSON.stringify({ ...record, reason: "validation: y" })}\n`);
  });

  it("lists and counts record files only, not a write in progress or a file left there by hand", async () => {
    const quarantine = new FileQuarantine(dir);
    await quarantine.put({ id: "r1", kind: "card", reason: "validation: x", raw: {}, at: "2025-01-15T10:00:01.000Z" });
    for (const name of ["r2.json.4343.0a1b2c3d.tmp", "notes.txt"]) await writeFile(path.join(dir, "quarantine", name), "{}");
    expect((await quarantine.list()).map((r) => r.id)).toEqual(["r1"]);
    expect(await quarantine.size()).toBe(1);
  });

  it.each([
    ["not JSON", "{ not json", "Quarantine record is not valid JSON"],
    ["JSON without the members of a record", '{"id":"r1","reason":"validation: x"}', "Quarantine record is not a record"],
    ...(["id", "kind", "reason", "at"] as const).map((member) => {
      const whole: Record<string, unknown> = { id: "r1", kind: "card", reason: "validation: x", raw: {}, at: "2025-01-15T10:00:00.000Z" };
      const { [member]: _left, ...rest } = whole;
      return [`a record without its ${member}`, JSON.stringify(rest), "Quarantine record is not a record"] as [string, string, string];
    }),
    ["a record whose at is not a string", JSON.stringify({ id: "r1", kind: "card", reason: "validation: x", raw: {}, at: 1736935200000 }), "Quarantine record is not a record"],
    ["an array", "[]", "Quarantine record is not a record"],
    ["null", "null", "Quarantine record is not a record"],
  ])("reports a record file holding %s as corrupt, naming the file", async (_what, text, message) => {
    await mkdir(path.join(dir, "quarantine"));
    const file = path.join(dir, "quarantine", "r1.json");
    await writeFile(file, text);
    await expect(new FileQuarantine(dir).list()).rejects.toMatchObject({ name: "CorruptStateError", message, file });
  });

  it("reports a record file whose id is another file's (a copy made by hand) as corrupt: a put or delete of that id reaches the other file, never this one", async () => {
    const quarantine = new FileQuarantine(dir);
    const record = { id: "r1", kind: "card" as const, reason: "validation: x", raw: { cardholder: { name: "Ann Copy" } }, at: "2025-01-15T10:00:01.000Z" };
    await quarantine.put(record);
    const copy = path.join(dir, "quarantine", "r1-kept.json");
    await writeFile(copy, JSON.stringify(record));
    await expect(new FileQuarantine(dir).list()).rejects.toMatchObject({ name: "CorruptStateError", message: "Quarantine record's id is not its file's name", file: copy });
  });

  it("reports a record file that is not JSON without the parser's message, which quotes the raw body around the fault", async () => {
    await mkdir(path.join(dir, "quarantine"));
    await writeFile(path.join(dir, "quarantine", "r1.json"), '{"id":"r1","raw":{"card_holder_name":Leakwell}}');
    const error = await new FileQuarantine(dir).list().catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "CorruptStateError", message: "Quarantine record is not valid JSON" });
    expect(inspect(error)).not.toContain("Leakwell");
  });

  it("creates a missing state directory and its quarantine directory readable by their owner only (records hold raw bodies)", async () => {
    const quarantine = new FileQuarantine(path.join(dir, "new-state"));
    await quarantine.put({ id: "r1", kind: "card", reason: "validation: x", raw: {}, at: "2025-01-15T10:00:01.000Z" });
    expect((await stat(path.join(dir, "new-state"))).mode & 0o777).toBe(0o700);
    expect((await stat(path.join(dir, "new-state", "quarantine"))).mode & 0o777).toBe(0o700);
  });

  it("keeps each record readable by its owner only, also when a record found again is rewritten", async () => {
    const quarantine = new FileQuarantine(dir);
    const record = { id: "r1", kind: "card" as const, reason: "validation: x", raw: { id: "CA1" }, at: "2025-01-15T10:00:01.000Z" };
    const file = path.join(dir, "quarantine", "r1.json");
    expect(await quarantine.put(record)).toBe(true);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await quarantine.put({ ...record, reason: "validation: y" })).toBe(false);
    expect((await quarantine.list()).map((r) => r.reason)).toEqual(["validation: y"]);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
  });

  it.each(["put", "list"] as const)("removes the old temp files of crashed writes (raw bodies) on its first %s, not fresh ones or other files", async (first) => {
    const where = path.join(dir, "quarantine");
    const old = ["r0.json.4242.0a1b2c3d.tmp", "r9.json.4242.0a1b2c3d.new.tmp.4242.feedf00d.tmp"];
    const fresh = ["r1.json.4343.0a1b2c3d.tmp"];
    const other = ["README.tmp"];
    await leftoverTemps(where, { old, fresh, other });
    const quarantine = new FileQuarantine(dir);
    if (first === "put") await quarantine.put({ id: "r2", kind: "card", reason: "validation: x", raw: {}, at: "2025-01-15T10:00:01.000Z" });
    else expect(await quarantine.list()).toEqual([]);
    expect((await readdir(where)).sort()).toEqual([...fresh, ...other, ...(first === "put" ? ["r2.json"] : [])].sort());
  });
});

describe("FileLock", () => {
  const locks = () => path.join(dir, "locks");

  it("takes over a lease file it cannot read (only a foreign tool writes one), so such a file cannot block forever", async () => {
    await mkdir(locks(), { recursive: true });
    await writeFile(path.join(locks(), "refresh.lock"), "{not json");
    expect(await new FileLock(dir).tryAcquire("refresh", 10_000)).toBeDefined();
  });

  it.each([
    ["null", "null"],
    ["an expiry that is not a number", JSON.stringify({ token: "t", pid: 1, expiresAt: String(Date.now() + 3_600_000) })],
    ["no token", JSON.stringify({ pid: 1, expiresAt: Date.now() + 3_600_000 })],
  ])("takes over a lease file holding %s (not a lease), so it cannot block forever", async (_what, text) => {
    await mkdir(locks(), { recursive: true });
    await writeFile(path.join(locks(), "refresh.lock"), text);
    expect(await new FileLock(dir).tryAcquire("refresh", 10_000)).toBeDefined();
  });

  it("takes over a lease path it cannot read as a file (EISDIR), rather than reading it as gone and blocking forever", async () => {
    await mkdir(path.join(locks(), "refresh.lock"), { recursive: true });
    const handle = await new FileLock(dir).tryAcquire("refresh", 10_000);
    expect(handle).toBeDefined();
    expect(await handle!.renew(10_000)).toBe(true);
  });

  it("removes the temp files a process killed while creating a lease left behind, once they are old, and no others", async () => {
    await mkdir(locks(), { recursive: true });
    const leftover = "cycle.lock.4.22676.e3422382.new.tmp.22676.0394f1f8.tmp";
    const fresh = "cycle.lock.5.22677.aa.new.tmp";
    for (const name of [leftover, fresh, "notes.txt"]) await writeFile(path.join(locks(), name), "{}");
    const hourAgo = new Date(Date.now() - 3_600_000);
    await utimes(path.join(locks(), leftover), hourAgo, hourAgo);
    await utimes(path.join(locks(), "notes.txt"), hourAgo, hourAgo);
    const handle = await new FileLock(dir).tryAcquire("refresh", 10_000);
    expect(handle).toBeDefined();
    expect((await readdir(locks())).sort()).toEqual([fresh, "notes.txt", "refresh.lock"]);
  });

  it("is not blocked by the temp file of a contender killed while creating a generation, before the sweep finds it old", async () => {
    await mkdir(locks(), { recursive: true });
    await writeFile(path.join(locks(), "refresh.lock.1.4242.0a1b2c3d.new.tmp"), "{}");
    const handle = await new FileLock(dir).tryAcquire("refresh", 10_000);
    expect(handle).toBeDefined();
    expect(await handle!.renew(10_000)).toBe(true);
  });

  it("creates a missing state directory and its locks directory owner-only, and its lease files too", async () => {
    const state = path.join(dir, "new-state");
    const handle = await new FileLock(state).tryAcquire("refresh", 10_000);
    const lease = path.join(state, "locks", "refresh.lock");
    expect((await stat(state)).mode & 0o777).toBe(0o700);
    expect((await stat(path.join(state, "locks"))).mode & 0o777).toBe(0o700);
    expect((await stat(lease)).mode & 0o777).toBe(0o600);
    expect(await handle!.renew(10_000)).toBe(true);
    expect((await stat(lease)).mode & 0o777).toBe(0o600);
  });

  it("leaves a lease taken over as its new holder wrote it when the old holder releases late", async () => {
    const clock = new FakeClock();
    const old = await new FileLock(dir, { clock }).tryAcquire("refresh", 10_000);
    clock.advance(10_001);
    const taken = await new FileLock(dir, { clock }).tryAcquire("refresh", 10_000);
    const lease = await readFile(path.join(locks(), "refresh.lock.1"), "utf8");
    await old!.release();
    // The old holder writes nothing: not its own generation back, which the new holder removed, nor the new one.
    expect(await readdir(locks())).toEqual(["refresh.lock.1"]);
    expect(await readFile(path.join(locks(), "refresh.lock.1"), "utf8")).toBe(lease);
    expect(await taken!.renew(10_000)).toBe(true);
  });

  it("renews its lease once it expired before anyone took it by taking the next generation, exclusively as a contender would, not by writing it in place", async () => {
    // Written in place, a contender could take it over between the check and the write, and both would hold it.
    const clock = new FakeClock();
    const held = await new FileLock(dir, { clock }).tryAcquire("refresh", 10_000);
    clock.advance(10_001);
    expect(await held!.renew(10_000)).toBe(true);
    expect(await readdir(locks())).toEqual(["refresh.lock.1"]);
    expect(await new FileLock(dir, { clock }).tryAcquire("refresh", 10_000)).toBeUndefined();
  });

  it("fails to renew a lease a contender has just taken over: its generation is written, older ones not yet removed", async () => {
    const clock = new FakeClock();
    const old = await new FileLock(dir, { clock }).tryAcquire("refresh", 10_000);
    // A contender whose clock runs ahead finds the lease expired: it writes the next generation first, and deletes
    // the older ones only after that (an unlink that fails is left to the next holder).
    const next = path.join(locks(), "refresh.lock.1");
    await writeFile(next, JSON.stringify({ token: "contender", pid: 1, expiresAt: clock.now() + 20_000 }));
    expect(await old!.renew(10_000)).toBe(false);
    await old!.release();
    expect(JSON.parse(await readFile(next, "utf8"))).toMatchObject({ token: "contender" });
  });

  it("fails to renew when its generation's file holds another token's lease or no lease at all (put back by hand, a backup tool), and leaves that file as it is", async () => {
    const clock = new FakeClock();
    const handle = await new FileLock(dir, { clock }).tryAcquire("refresh", 10_000);
    const file = path.join(locks(), "refresh.lock");
    for (const text of [JSON.stringify({ token: "restored", pid: 1, expiresAt: clock.now() + 20_000 }), "not a lease"]) {
      await writeFile(file, text);
      expect(await handle!.renew(10_000)).toBe(false);
      expect(await readFile(file, "utf8")).toBe(text);
    }
  });

  it("confirms a held lease without taking a new generation, and one lapsed by taking the next and removing its own", async () => {
    let step = 0;
    const clock = { now: () => Date.now() + step };
    const handle = await new FileLock(dir, { clock, steady: false }).tryAcquire("refresh", 10_000);
    const lease = await readFile(path.join(locks(), "refresh.lock"), "utf8");
    expect(await handle!.confirm!(10_000)).toBe(true);
    expect(await readdir(locks())).toEqual(["refresh.lock"]);
    expect(await readFile(path.join(locks(), "refresh.lock"), "utf8")).toBe(lease);
    step = 20_000;
    expect(await handle!.confirm!(10_000)).toBe(true);
    expect(await readdir(locks())).toEqual(["refresh.lock.1"]);
  });

  it("refuses to confirm a lease once a contender wrote a higher generation, before it removed the older ones", async () => {
    const clock = new FakeClock();
    const old = await new FileLock(dir, { clock, steady: false }).tryAcquire("refresh", 10_000);
    // The holder's own generation still stands, unexpired and its token: only the listing shows it superseded.
    await writeFile(path.join(locks(), "refresh.lock.1"), JSON.stringify({ token: "contender", pid: 1, expiresAt: clock.now() + 20_000 }));
    expect(await old!.confirm!(10_000)).toBe(false);
  });

  it.each(["confirm", "renew"] as const)("refuses a lapsed lease taken again (by %s) when a contender created a higher generation meanwhile, and leaves that one standing", async (check) => {
    let step = 0;
    let calls = 0;
    let racing = false;
    const contender = path.join(locks(), "refresh.lock.2");
    // A contender creates generation 2 between the holder's check of the listing and its creation of generation 1.
    const clock = {
      now: () => {
        if (racing && ++calls === 2) writeFileSync(contender, JSON.stringify({ token: "contender", pid: 1, expiresAt: Date.now() + 60_000 }));
        return Date.now() + step;
      },
    };
    const handle = await new FileLock(dir, { clock, steady: false }).tryAcquire("refresh", 10_000);
    step = 20_000;
    racing = true;
    expect(await (check === "renew" ? handle!.renew(10_000) : handle!.confirm!(10_000))).toBe(false);
    racing = false;
    expect((await readdir(locks())).sort()).toEqual(["refresh.lock", "refresh.lock.2"]);
    expect(JSON.parse(await readFile(contender, "utf8"))).toMatchObject({ token: "contender" });
  });

  it("frees a lease at its expiry to the millisecond, not a millisecond later", async () => {
    const clock = new FakeClock();
    expect(await new FileLock(dir, { clock }).tryAcquire("refresh", 10_000)).toBeDefined();
    clock.advance(9_999);
    expect(await new FileLock(dir, { clock }).tryAcquire("refresh", 10_000)).toBeUndefined();
    clock.advance(1);
    expect(await new FileLock(dir, { clock }).tryAcquire("refresh", 10_000)).toBeDefined();
  });

  it("leaves a released lease free when the wall clock is then stepped back: release expires it for good, not as of now", async () => {
    const clock = new FakeClock();
    await (await new FileLock(dir, { clock }).tryAcquire("refresh", 10_000))!.release();
    clock.ms -= 60_000;
    expect(await new FileLock(dir, { clock }).tryAcquire("refresh", 10_000)).toBeDefined();
  });

  it("leaves a lease released after it lapsed (nobody took it) free when the wall clock is then stepped back", async () => {
    // Left as it was, its wall-clock expiry would lie ahead again after the step, refusing everyone for its length.
    const clock = new FakeClock();
    const stalled = await new FileLock(dir, { clock, steady: false }).tryAcquire("refresh", 10_000);
    clock.advance(15_000);
    await stalled!.release();
    clock.ms -= 60_000;
    expect(await new FileLock(dir, { clock, steady: false }).tryAcquire("refresh", 10_000)).toBeDefined();
  });

  it("keeps the highest generation on release (marked expired, not deleted), so generation numbers only grow", async () => {
    const clock = new FakeClock();
    const lock = new FileLock(dir, { clock });
    expect(await lock.tryAcquire("refresh", 10_000)).toBeDefined();
    clock.advance(10_001);
    const second = await lock.tryAcquire("refresh", 10_000);
    await second!.release();
    expect(await readdir(locks())).toEqual(["refresh.lock.1"]);
    expect(await lock.tryAcquire("refresh", 10_000)).toBeDefined();
    expect(await readdir(locks())).toEqual(["refresh.lock.2"]);
  });
});

describe("JsonlEventPublisher", () => {
  it("gives each delivery its own UUID-shaped envelope id, by default, and other ids in another publisher", async () => {
    const file = path.join(dir, "events.jsonl");
    const first = new JsonlEventPublisher({ file });
    await first.publish([sampleEvent(1), sampleEvent(1)]);
    await first.publish([sampleEvent(1)]);
    await new JsonlEventPublisher({ file }).publish([sampleEvent(1)]);
    const ids = (await readFile(file, "utf8")).trim().split("\n").map((line) => (JSON.parse(line) as { id: string }).id);
    expect(new Set(ids).size).toBe(4);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    // One publisher counts up from a random start; another starts elsewhere.
    expect(ids[0]!.slice(0, 24)).toBe(ids[2]!.slice(0, 24));
    expect(ids[3]!.slice(0, 24)).not.toBe(ids[0]!.slice(0, 24));
  });

  it("counts envelope ids round past the largest 48-bit value", () => {
    const next = envelopeIds("3b1f0c2e-9a4d-4c1e-8f2a-fffffffffffe");
    expect([next(), next(), next()]).toEqual([
      "3b1f0c2e-9a4d-4c1e-8f2a-ffffffffffff",
      "3b1f0c2e-9a4d-4c1e-8f2a-000000000000",
      "3b1f0c2e-9a4d-4c1e-8f2a-000000000001",
    ]);
  });

  it("writes one line per event in the EventBridge rule-target shape", async () => {
    const file = path.join(dir, "events.jsonl");
    const publisher = new JsonlEventPublisher({ file, account: "123456789012", region: "eu-west-1", newId: () => "env-1" });
    await publisher.publish([sampleEvent(1)]);
    const [line] = (await readFile(file, "utf8")).trim().split("\n");
    const envelope = JSON.parse(line!) as Record<string, unknown>;
    expect(Object.keys(envelope)).toEqual(["version", "id", "detail-type", "source", "account", "time", "region", "resources", "detail"]);
    expect(envelope).toMatchObject({
      version: "0",
      id: "env-1",
      "detail-type": "transaction.created",
      source: "qashio.bridge",
      account: "123456789012",
      region: "eu-west-1",
      time: "2025-01-15T10:00:00.000Z",
      resources: [],
      detail: sampleEvent(1).detail,
    });
  });

  it("stamps the envelope's time with when the bridge published the event, not with the change's own occurred_at", async () => {
    const file = path.join(dir, "events.jsonl");
    // A backlog after an outage: the change is days older than its publish (docs/events.md, Envelope and detail).
    const event = sampleEvent(1);
    const late = { ...event, time: "2025-01-18T07:30:00.000Z", detail: { ...event.detail, occurred_at: "2025-01-15T10:00:00.000Z" } };
    await new JsonlEventPublisher({ file }).publish([late]);
    const envelope = JSON.parse(await readFile(file, "utf8")) as { time: string; detail: { occurred_at: string } };
    expect({ time: envelope.time, occurred_at: envelope.detail.occurred_at }).toEqual({ time: late.time, occurred_at: late.detail.occurred_at });
  });

  it("stamps the documented account and region on the envelope when none is given", async () => {
    const file = path.join(dir, "events.jsonl");
    await new JsonlEventPublisher({ file }).publish([sampleEvent(1)]);
    const { account, region } = JSON.parse(await readFile(file, "utf8")) as { account: string; region: string };
    expect({ account, region }).toEqual({ account: "000000000000", region: "local" });
    // Documented where consumers of the events file read its shape (README, Local mode).
    const readme = await readFile(path.join(import.meta.dirname, "../../README.md"), "utf8");
    const localMode = readme.slice(readme.indexOf("## Local mode"), readme.indexOf("\n## ", readme.indexOf("## Local mode") + 1));
    expect(localMode.replace(/\s+/g, " ")).toContain(`\`account\` \`"${account}"\` and \`region\` \`"${region}"\``);
  });

  it("writes a batch whose text takes three bytes a character, more than the scratch buffer first holds, whole", async () => {
    const file = path.join(dir, "events.jsonl");
    const event = sampleEvent(1);
    // 800,000 characters, 2.4 MB of UTF-8: the buffer must be sized by bytes, not characters, or the line is cut.
    const wide = { ...event, detail: { ...event.detail, data: { object: { ...event.detail.data.object, memo: "€".repeat(800_000) } } } };
    await new JsonlEventPublisher({ file }).publish([wide, sampleEvent(2)]);
    const details = (await readFile(file, "utf8"))
      .trimEnd()
      .split("\n")
      .map((line) => (JSON.parse(line) as { detail: unknown }).detail);
    expect(details).toEqual([wide.detail, sampleEvent(2).detail]);
  });

  it("writes an event over EventBridge's 256 KB entry limit whole, untrimmed, as the docs a local user reads say", async () => {
    const file = path.join(dir, "events.jsonl");
    const event = sampleEvent(1);
    const lineItems = Array.from({ length: 3_000 }, (_, i) => ({ id: `li_${i}`, description: "d".repeat(100) }));
    const big = { ...event, detail: { ...event.detail, data: { object: { ...event.detail.data.object, line_items: lineItems } } } };
    const entry = { Source: big.source, DetailType: big.detailType, Time: new Date(big.time), Detail: JSON.stringify(big.detail) };
    expect(entrySize(entry)).toBeGreaterThan(MAX_ENTRY_BYTES);
    expect(await new JsonlEventPublisher({ file }).publish([big])).toEqual({ failed: [] });
    expect((JSON.parse(await readFile(file, "utf8")) as { detail: unknown }).detail).toEqual(big.detail);
    // On AWS the same event is trimmed (or quarantined): the user testing locally is told so where they read about
    // the events file and about trimming.
    const readme = await readFile(path.join(import.meta.dirname, "../../README.md"), "utf8");
    const localMode = readme.slice(readme.indexOf("## Local mode"), readme.indexOf("\n## ", readme.indexOf("## Local mode") + 1)).replace(/\s+/g, " ");
    expect(localMode).toMatch(/256 KB[^.]*whole|whole[^.]*256 KB/);
    const catalog = (await readFile(path.join(import.meta.dirname, "../../docs/events.md"), "utf8")).replace(/\s+/g, " ");
    const trimming = catalog.slice(catalog.indexOf("An event over the 256 KB"), catalog.indexOf("- An event the publisher cannot take"));
    expect(trimming).toMatch(/local mode[^.]*whole/i);
  });

  it("serialises an envelope to a line that parses back to the same envelope, hashed objects included", () => {
    const event = sampleEvent(3);
    const withExtras = {
      ...event,
      detail: {
        ...event.detail,
        data: { ...event.detail.data, changes: [{ path: "/memo", before: "a\"b", after: null }], parent: { id: "p", qashio_id: "CTp" } },
      },
    };
    contentHash(withExtras.detail.data.object);
    for (const e of [event, withExtras]) {
      const envelope = toEventBridgeEnvelope(e, { account: "1", region: "r", id: "i" });
      const parsed = JSON.parse(envelopeLine(envelope)) as typeof envelope;
      expect(parsed).toEqual(envelope);
      // Member order as JSON.stringify gives it (consumers may diff lines textually).
      expect(Object.keys(parsed)).toEqual(Object.keys(envelope));
      expect(Object.keys(parsed.detail)).toEqual(Object.keys(envelope.detail));
    }
  });

  it.skipIf(process.platform === "win32")(
    "creates the file readable by its owner only (0600) and the directories it makes 0700, but leaves an existing file's mode",
    async () => {
      const file = path.join(dir, "out", "nested", "events.jsonl");
      await new JsonlEventPublisher({ file }).publish([sampleEvent(1)]);
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      expect((await stat(path.join(dir, "out"))).mode & 0o777).toBe(0o700);
      expect((await stat(path.join(dir, "out", "nested"))).mode & 0o777).toBe(0o700);

      // An operator widened it for a consumer running as another user: the bridge does not take that back.
      await chmod(file, 0o640);
      await new JsonlEventPublisher({ file }).publish([sampleEvent(2)]);
      expect((await stat(file)).mode & 0o777).toBe(0o640);
      expect((await readFile(file, "utf8")).trim().split("\n")).toHaveLength(2);
    },
  );

  describe("after a crash tore its last line", () => {
    /** The file's lines; every one must parse. */
    const detailIds = async (file: string) =>
      (await readFile(file, "utf8"))
        .split("\n")
        .filter(Boolean)
        .map((line) => (JSON.parse(line) as { detail: { id: string } }).detail.id);
    /** A publisher that records its warnings, and the file it writes. */
    const rig = async (content: string | Buffer) => {
      const file = path.join(dir, "events.jsonl");
      await writeFile(file, content);
      const warnings: { message: string; attributes?: Readonly<Record<string, unknown>> }[] = [];
      const publisher = new JsonlEventPublisher({ file, logger: { warn: (message, attributes) => warnings.push({ message, attributes }) } });
      return { file, publisher, warnings };
    };
    const lineOf = (n: number) => envelopeLine(toEventBridgeEnvelope(sampleEvent(n), { account: "1", region: "r", id: `env-${n}` })) + "\n";

    it("keeps a whole event that lacks only its newline (an editor dropped it) and closes it off", async () => {
      const { file, publisher, warnings } = await rig(lineOf(1) + lineOf(2).trimEnd());
      await publisher.publish([sampleEvent(3)]);
      expect(await detailIds(file)).toEqual([1, 2, 3].map((n) => sampleEvent(n).detail.id));
      expect(warnings).toEqual([]);
    });

    it.each([
      ["a few bytes of a line", 5],
      ["all of a line but its closing brace and newline", -2],
    ])("cuts %s off, so every line is one whole event, and says so", async (_what, cutAt) => {
      const torn = lineOf(2).slice(0, cutAt);
      const { file, publisher, warnings } = await rig(lineOf(1) + torn);
      await publisher.publish([sampleEvent(2)]);
      expect(await detailIds(file)).toEqual([sampleEvent(1).detail.id, sampleEvent(2).detail.id]);
      expect(warnings).toEqual([{ message: expect.stringMatching(/torn/), attributes: { file, bytes: Buffer.byteLength(torn) } }]);
    });

    it("cuts a torn line longer than one read back to the last whole line", async () => {
      const torn = lineOf(2).slice(0, 30) + "x".repeat(200_000);
      const { file, publisher } = await rig(lineOf(1) + torn);
      await publisher.publish([sampleEvent(3)]);
      expect(await detailIds(file)).toEqual([sampleEvent(1).detail.id, sampleEvent(3).detail.id]);
    });

    it("keeps the whole line whose newline is the first byte of the last read", async () => {
      // The torn line is one read (64 KiB) long but a byte: the newline before it opens the bytes read first.
      const torn = lineOf(3).slice(0, 30) + "x".repeat(64 * 1024 - 1 - 30);
      const { file, publisher, warnings } = await rig(lineOf(1) + lineOf(2) + torn);
      await publisher.publish([sampleEvent(3)]);
      expect(await detailIds(file)).toEqual([1, 2, 3].map((n) => sampleEvent(n).detail.id));
      expect(warnings).toEqual([expect.objectContaining({ attributes: { file, bytes: Buffer.byteLength(torn) } })]);
    });

    it("cuts the NUL bytes a power loss can leave where unsynced data was, and a torn first line", async () => {
      const zeros = await rig(Buffer.concat([Buffer.from(lineOf(1)), Buffer.alloc(4096)]));
      await zeros.publisher.publish([sampleEvent(2)]);
      expect(await detailIds(zeros.file)).toEqual([sampleEvent(1).detail.id, sampleEvent(2).detail.id]);
      await rm(zeros.file);
      const first = await rig(lineOf(1).slice(0, 100));
      await first.publisher.publish([sampleEvent(2)]);
      expect(await detailIds(first.file)).toEqual([sampleEvent(2).detail.id]);
    });

    it("checks before every append: a line another process tore between two appends of this one is cut too", async () => {
      const { file, publisher, warnings } = await rig("");
      await publisher.publish([sampleEvent(1)]);
      // A `run --once` beside this long-lived publisher (a loop) was killed mid-append.
      await writeFile(file, lineOf(2).slice(0, 60), { flag: "a" });
      await publisher.publish([sampleEvent(3)]);
      expect(await detailIds(file)).toEqual([sampleEvent(1).detail.id, sampleEvent(3).detail.id]);
      expect(warnings).toHaveLength(1);
    });

    it("looks for NUL bytes again after another writer's append, not only on its first: a tear another host's power loss left between two appends of this one is cut", async () => {
      const { file, publisher, warnings } = await rig("");
      await publisher.publish([sampleEvent(1)]);
      // A run on another host (or boot) sharing the state directory lost power mid-append while this one kept running:
      // a NUL block inside its line 2, then its line 3 whole. The last line being whole, only the NUL search sees it.
      await writeFile(file, Buffer.concat([Buffer.from(lineOf(2).slice(0, 40)), Buffer.alloc(4096), Buffer.from(lineOf(2).slice(60) + lineOf(3))]), { flag: "a" });
      await publisher.publish([sampleEvent(4)]);
      expect(await detailIds(file)).toEqual([1, 4].map((n) => sampleEvent(n).detail.id));
      expect(warnings).toEqual([expect.objectContaining({ message: expect.stringMatching(/power loss/) })]);
    });

    describe("after a power loss left NUL bytes before the last line", () => {
      /** Lines 1 and 2 whole, then line 3 whose middle a power loss left as a NUL-filled block, then whole lines 4 and 5. */
      const good = lineOf(1) + lineOf(2);
      const torn = Buffer.concat([Buffer.from(lineOf(3).slice(0, 40)), Buffer.alloc(4096), Buffer.from(lineOf(3).slice(60) + lineOf(4) + lineOf(5))]);

      it("cuts the torn line and every line after it, says how much, and the re-sent events land whole", async () => {
        const { file, publisher, warnings } = await rig(Buffer.concat([Buffer.from(good), torn]));
        // The next cycle re-sends the events of the unsynced append (3 to 5), with the same ids, and a new one.
        await publisher.publish([3, 4, 5, 6].map((n) => sampleEvent(n)));
        expect(await detailIds(file)).toEqual([1, 2, 3, 4, 5, 6].map((n) => sampleEvent(n).detail.id));
        expect((await readFile(file, "utf8")).startsWith(good)).toBe(true);
        const recovery = `${file}.cut-${Buffer.byteLength(good)}`;
        expect(warnings).toEqual([{ message: expect.stringMatching(/power loss/), attributes: { file, bytes: torn.length, lines: 3, recovery } }]);
        expect(warnings[0]?.message).toMatch(/re-sent/);
      });

      it.skipIf(process.platform === "win32")(
        "first saves what it cuts, byte for byte, to a recovery file beside the events file with its mode: lines an older version synced after the tear stay",
        async () => {
          // An older version fsynced only after a whole batch: lines 4 and 5 may have been synced after the tear, and
          // acknowledged, and are never written again.
          const { file, publisher, warnings } = await rig(Buffer.concat([Buffer.from(good), torn]));
          await chmod(file, 0o640);
          await publisher.publish([sampleEvent(6)]);
          expect(await detailIds(file)).toEqual([1, 2, 6].map((n) => sampleEvent(n).detail.id));
          const recovery = `${file}.cut-${Buffer.byteLength(good)}`;
          expect((await readFile(recovery)).equals(torn)).toBe(true);
          expect((await stat(recovery)).mode & 0o777).toBe(0o640);
          expect(await readdir(dir)).toEqual(["events.jsonl", "events.jsonl.cut-" + Buffer.byteLength(good)]);
          expect(warnings).toEqual([expect.objectContaining({ message: expect.stringContaining("replay"), attributes: expect.objectContaining({ recovery }) })]);
        },
      );

      it.each([1, 10, 20])("cuts a torn line whose NUL bytes start %i bytes in, within the opening all its lines share", async (keep) => {
        // A block boundary falls anywhere in a line: the NULs may start before its opening `{"version":"0","id":"` ends.
        const early = Buffer.concat([Buffer.from(lineOf(3).slice(0, keep)), Buffer.alloc(60), Buffer.from(lineOf(3).slice(keep + 60) + lineOf(4) + lineOf(5))]);
        const { file, publisher, warnings } = await rig(Buffer.concat([Buffer.from(good), early]));
        await publisher.publish([3, 4, 5, 6].map((n) => sampleEvent(n)));
        expect(await detailIds(file)).toEqual([1, 2, 3, 4, 5, 6].map((n) => sampleEvent(n).detail.id));
        expect(warnings).toEqual([{ message: expect.stringMatching(/power loss/), attributes: { file, bytes: early.length, lines: 3, recovery: `${file}.cut-${Buffer.byteLength(good)}` } }]);
      });

      it("keeps lines of another's holding NUL bytes byte for byte, and still finds the tear of its own after them", async () => {
        // A file that held something else before it was named BRIDGE_EVENTS_FILE, binary lines included, then lines of
        // its own whose last append a power loss tore: the first NUL in the region checked is another's.
        const foreign = Buffer.concat([Buffer.from("notes\0kept by hand\n"), Buffer.from("\u00ffbinary\0\0data\n")]);
        const before = Buffer.concat([foreign, Buffer.from(good)]);
        const { file, publisher, warnings } = await rig(Buffer.concat([before, torn]));
        await publisher.publish([3, 4, 5, 6].map((n) => sampleEvent(n)));
        const after = await readFile(file);
        expect(after.subarray(0, before.length).equals(before)).toBe(true);
        expect(
          after
            .subarray(before.length)
            .toString("utf8")
            .trimEnd()
            .split("\n")
            .map((line) => (JSON.parse(line) as { detail: { id: string } }).detail.id),
        ).toEqual([3, 4, 5, 6].map((n) => sampleEvent(n).detail.id));
        expect(warnings).toEqual([{ message: expect.stringMatching(/power loss/), attributes: { file, bytes: torn.length, lines: 3, recovery: `${file}.cut-${before.length}` } }]);
        // Without a tear of its own, such lines are left as they are; the last one, holding no newline, is closed off.
        await rm(file);
        const others = Buffer.concat([Buffer.from(good), foreign, Buffer.from("trailing\0note")]);
        const alone = await rig(others);
        await alone.publisher.publish([sampleEvent(7)]);
        expect((await readFile(alone.file)).subarray(0, others.length + 1).equals(Buffer.concat([others, Buffer.from("\n")]))).toBe(true);
        expect(alone.warnings).toEqual([]);
      });

      it("cuts them when the file ends in a torn line too", async () => {
        const { file, publisher } = await rig(Buffer.concat([Buffer.from(good), torn, Buffer.from(lineOf(6).slice(0, 30))]));
        await publisher.publish([3, 4, 5, 6].map((n) => sampleEvent(n)));
        expect(await detailIds(file)).toEqual([1, 2, 3, 4, 5, 6].map((n) => sampleEvent(n).detail.id));
      });

      it("leaves a file without NUL bytes byte for byte as it was, hand-kept lines included", async () => {
        const before = Buffer.from(good + "notes kept by hand\n" + lineOf(3));
        const { file, publisher, warnings } = await rig(before);
        await publisher.publish([sampleEvent(4)]);
        const after = await readFile(file);
        expect(after.subarray(0, before.length).equals(before)).toBe(true);
        const appended = after.subarray(before.length).toString("utf8");
        expect(appended.endsWith("\n")).toBe(true);
        expect((JSON.parse(appended) as { detail: { id: string } }).detail.id).toBe(sampleEvent(4).detail.id);
        expect(warnings).toEqual([]);
      });

      it("leaves NUL bytes further back than the last write between two fsyncs could reach (documented limit)", async () => {
        // Whole lines after the tear, more bytes than the publisher ever writes between two fsyncs: the tear was synced
        // before them, so they may have been acknowledged, and cutting it would cut them too.
        const after: string[] = [];
        for (let n = 10, bytes = 0; bytes <= TORN_REGION_BYTES; n++) {
          after.push(lineOf(n));
          bytes += Buffer.byteLength(lineOf(n));
        }
        const before = Buffer.concat([Buffer.from(good), torn, Buffer.from(after.join(""))]);
        const { file, publisher, warnings } = await rig(before);
        await publisher.publish([sampleEvent(6)]);
        expect((await readFile(file)).subarray(0, before.length).equals(before)).toBe(true);
        expect(warnings).toEqual([]);
        // Said where the tail repair is documented.
        const gaps = (await readFile(path.join(import.meta.dirname, "../../docs/spec-gaps.md"), "utf8")).replace(/\s+/g, " ");
        expect(gaps.includes(`NUL bytes further back than the last ${TORN_REGION_BYTES / 1024 / 1024} MiB are left`)).toBe(true);
      });
    });

    it("removes on its first append the old temp files of its recovery files a killed save left, and no other file of a shared directory", async () => {
      // A process killed while saving a cut (see saveCut) leaves the temp files of createFileOnce beside the events file.
      const old = ["events.jsonl.cut-120.4242.0a1b2c3d.new.tmp", "events.jsonl.cut-120.2.4242.0a1b2c3d.new.tmp.4242.deadbeef.tmp"];
      // A save under way in another process (a `run --once` beside a loop).
      const fresh = ["events.jsonl.cut-96.4343.0a1b2c3d.new.tmp"];
      // Old, but not temp files of this events file's recovery names: other programs', another events file's, its own.
      const other = [
        "tokens.json.4242.0a1b2c3d.tmp",
        "notes.tmp",
        "other.jsonl.cut-120.4242.0a1b2c3d.new.tmp",
        "events.jsonl.4242.0a1b2c3d.tmp",
        "events.jsonl.bak.cut-120.4242.0a1b2c3d.new.tmp",
        "events.jsonl.cut-120",
      ];
      await leftoverTemps(dir, { old, fresh, other });
      const { file, publisher } = await rig(lineOf(1));
      await publisher.publish([sampleEvent(2)]);
      expect((await readdir(dir)).sort()).toEqual([...fresh, ...other, path.basename(file)].sort());
      // Once per publisher: a loop's later appends do not read the directory again.
      await leftoverTemps(dir, { old, fresh: [], other: [] });
      await publisher.publish([sampleEvent(3)]);
      expect((await readdir(dir)).sort()).toEqual([...old, ...fresh, ...other, path.basename(file)].sort());
      expect(await detailIds(file)).toEqual([1, 2, 3].map((n) => sampleEvent(n).detail.id));
    });

    it("keeps a last line that is not one of its own, and starts a new line after it", async () => {
      const { file, publisher, warnings } = await rig(lineOf(1) + "notes kept by hand");
      await publisher.publish([sampleEvent(2)]);
      const lines = (await readFile(file, "utf8")).split("\n");
      expect(lines).toEqual([lineOf(1).trimEnd(), "notes kept by hand", expect.stringContaining(sampleEvent(2).detail.id), ""]);
      expect(warnings).toEqual([]);
    });
  });
});

describe("createLocalAdapters", () => {
  it("puts every adapter under the one state directory", async () => {
    const local = createLocalAdapters(dir);
    await local.snapshots.putMany([{ key: "card:A", hash: "h", object: {}, updatedAt: "2025-01-15T10:00:00.000Z" }]);
    await local.tokens.save({ refreshToken: "rt" });
    await local.quarantine.put({ id: "q", kind: "card", reason: "r", raw: {}, at: "2025-01-15T10:00:00.000Z" });
    const handle = await local.lock.tryAcquire("cycle", 1000);
    expect((await readdir(dir)).sort()).toEqual(["locks", "quarantine", "snapshots", "tokens.json"]);
    await handle?.release();
  });
});
