import { mkdir, readdir, readFile, rename, rm, stat, utimes, writeFile } from "node:fs/promises";
import path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { envelopeLine, JsonlEventPublisher, toEventBridgeEnvelope, TORN_REGION_BYTES } from "../../shared/local/index.js";
import { sampleEvent } from "../bridge/contract/index.js";
import { tempDirPerTest } from "../temp-dir.js";

let dir: string;
tempDirPerTest("bridge-jsonl-tail-", (made) => (dir = made));
let file: string;
beforeEach(() => {
  file = path.join(dir, "events.jsonl");
});

const lineOf = (n: number) => envelopeLine(toEventBridgeEnvelope(sampleEvent(n), { account: "1", region: "r", id: `env-${n}` }));

/** The lines of the events file (`of`, by default the test's), each parsed (a line that does not parse fails the test), as their events' `detail.id`. */
async function detailIds(of = file): Promise<string[]> {
  return (await readFile(of, "utf8"))
    .split("\n")
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as { detail: { id: string } }).detail.id);
}

describe("JsonlEventPublisher and a last line of its own without its newline", () => {
  it("keeps one whose brackets close and only JSON whitespace follows: a whole event", async () => {
    await writeFile(file, `${lineOf(1)}\n${lineOf(2)} \t\r`);
    const warnings: unknown[] = [];
    await new JsonlEventPublisher({ file, logger: { warn: (message) => warnings.push(message) } }).publish([sampleEvent(3)]);
    expect(await detailIds()).toEqual([1, 2, 3].map((n) => sampleEvent(n).detail.id));
    expect(warnings).toEqual([]);
  });

  it.each([
    ["the torn opening of another line", `{"version":"0","id":"en`],
    ["stray text", " x"],
  ])("cuts one whose brackets close before %s: it does not parse, so it is a torn line of its own", async (_what, after) => {
    const torn = `${lineOf(2)}${after}`;
    await writeFile(file, `${lineOf(1)}\n${torn}`);
    const warnings: { message: string; attributes?: unknown }[] = [];
    await new JsonlEventPublisher({ file, logger: { warn: (message, attributes) => warnings.push({ message, attributes }) } }).publish([
      sampleEvent(2),
    ]);
    expect(await detailIds()).toEqual([1, 2].map((n) => sampleEvent(n).detail.id));
    expect(warnings).toEqual([{ message: expect.stringMatching(/torn/), attributes: { file, bytes: Buffer.byteLength(torn) } }]);
  });
});

describe("JsonlEventPublisher and a last line without its newline that is not its own", () => {
  it.each([
    ["a JSON object of another's", `{"note":"kept by ha`],
    ["an envelope of another's whose id is no string", `{"version":"0","id":7,"detail":{"id":"hand`],
    ["one whose opening differs from its own in the id's quote alone", `{"version":"0","id":'env-2`],
  ])("keeps %s byte for byte, cut short as it is, and starts a new line after it", async (_what, foreign) => {
    await writeFile(file, `${lineOf(1)}\n${foreign}`);
    const warnings: unknown[] = [];
    await new JsonlEventPublisher({ file, logger: { warn: (message) => warnings.push(message) } }).publish([sampleEvent(2)]);
    const lines = (await readFile(file, "utf8")).split("\n");
    expect(lines).toEqual([lineOf(1), foreign, expect.stringContaining(sampleEvent(2).detail.id), ""]);
    expect(warnings).toEqual([]);
  });
});

describe("JsonlEventPublisher sweeping its recovery files' temp files", () => {
  it("leaves old temp files of other names that only start as its recovery names do (<file>.cut-<byte>[.<n>] only)", async () => {
    // Temp files another program's atomic writes left for files named so in a directory shared with the events file.
    const others = [
      "events.jsonl.cut-notes.4242.0a1b2c3d.tmp",
      "events.jsonl.cut-12.x.4242.0a1b2c3d.tmp",
      "events.jsonl.cut-.4242.0a1b2c3d.tmp",
      // Digits where a recovery name has them, but more parts than one, or a letter before them.
      "events.jsonl.cut-12.3.4.4242.0a1b2c3d.tmp",
      "events.jsonl.cut-v12.4242.0a1b2c3d.tmp",
    ];
    const own = "events.jsonl.cut-12.3.4242.0a1b2c3d.new.tmp";
    const hourAgo = new Date(Date.now() - 3_600_000);
    for (const name of [...others, own]) {
      await writeFile(path.join(dir, name), "leftover");
      await utimes(path.join(dir, name), hourAgo, hourAgo);
    }
    await new JsonlEventPublisher({ file }).publish([sampleEvent(1)]);
    expect((await readdir(dir)).sort()).toEqual([...others, "events.jsonl"].sort());
  });
});

describe("JsonlEventPublisher after a power loss tore a line", () => {
  it("saves the cut under the last free recovery name, .100, when the 99 before it hold other bytes", async () => {
    const good = `${lineOf(1)}\n`;
    const torn = Buffer.concat([Buffer.from(lineOf(2).slice(0, 40)), Buffer.alloc(512), Buffer.from(`${lineOf(2).slice(60)}\n`)]);
    await writeFile(file, Buffer.concat([Buffer.from(good), torn]));
    const first = `${file}.cut-${Buffer.byteLength(good)}`;
    const taken = Array.from({ length: 99 }, (_, i) => (i === 0 ? first : `${first}.${i + 1}`));
    for (const name of taken) await writeFile(name, "an earlier cut\n");
    await new JsonlEventPublisher({ file }).publish([sampleEvent(2)]);
    expect(await detailIds()).toEqual([1, 2].map((n) => sampleEvent(n).detail.id));
    expect((await readFile(`${first}.100`)).equals(torn)).toBe(true);
    for (const name of taken) expect(await readFile(name, "utf8")).toBe("an earlier cut\n");
  });

  it("takes a directory at a recovery name for one holding other bytes also when its size is the cut's length", async (context) => {
    const good = `${lineOf(1)}\n`;
    const first = `${file}.cut-${Buffer.byteLength(good)}`;
    await mkdir(first);
    // A directory's size is the file system's (4096 on ext4): a tear of that length is compared by its kind, not read.
    const size = (await stat(first)).size;
    if (size < 2) context.skip();
    const torn = Buffer.concat([Buffer.from(lineOf(2).slice(0, 1)), Buffer.alloc(size - 1)]);
    await writeFile(file, Buffer.concat([Buffer.from(good), torn]));
    await new JsonlEventPublisher({ file }).publish([sampleEvent(2)]);
    expect(await readdir(first)).toEqual([]);
    expect((await readFile(`${first}.2`)).equals(torn)).toBe(true);
    expect(await detailIds()).toEqual([1, 2].map((n) => sampleEvent(n).detail.id));
  });

  it("cuts a tear as far back as the most it writes between two fsyncs, not only a nearer one", async () => {
    const good = `${lineOf(1)}\n`;
    const after: string[] = [];
    for (let n = 10, bytes = 0; bytes < 0.75 * TORN_REGION_BYTES; n += 1) {
      after.push(`${lineOf(n)}\n`);
      bytes += Buffer.byteLength(after.at(-1) as string);
    }
    const torn = Buffer.concat([Buffer.from(lineOf(2).slice(0, 40)), Buffer.alloc(512), Buffer.from(`${lineOf(2).slice(60)}\n${after.join("")}`)]);
    expect(torn.length).toBeLessThan(TORN_REGION_BYTES);
    await writeFile(file, Buffer.concat([Buffer.from(good), torn]));
    await new JsonlEventPublisher({ file }).publish([sampleEvent(2)]);
    expect(await detailIds()).toEqual([1, 2].map((n) => sampleEvent(n).detail.id));
    expect((await readFile(`${file}.cut-${Buffer.byteLength(good)}`)).equals(torn)).toBe(true);
  });

  it("looks for a tear in a file put at its path after its last append, though as long as the file it left", async () => {
    const publisher = new JsonlEventPublisher({ file });
    await publisher.publish([sampleEvent(1)]);
    const left = await readFile(file);
    // A rotation moved the file away; another process's append to the new file, of the same length, a power loss tore.
    await rename(file, `${file}.1`);
    const torn = Buffer.concat([Buffer.from(lineOf(2).slice(0, 40)), Buffer.alloc(left.length - 41), Buffer.from("\n")]);
    await writeFile(file, torn);
    await publisher.publish([sampleEvent(2)]);
    expect(await detailIds()).toEqual([sampleEvent(2).detail.id]);
    expect((await readFile(`${file}.cut-0`)).equals(torn)).toBe(true);
  });

  it("counts the lines it cut from where the torn line starts, also when that is just before the region it checks", async () => {
    const good = `${lineOf(1)}\n`;
    const after: string[] = [];
    for (let n = 10, bytes = 0; bytes < TORN_REGION_BYTES - 4096; n += 1) {
      after.push(`${lineOf(n)}\n`);
      bytes += Buffer.byteLength(after.at(-1) as string);
    }
    // The torn line starts 100 bytes before the last TORN_REGION_BYTES, its NUL block inside them.
    const rest = Buffer.from(`\n${after.join("")}`);
    const opening = Buffer.from(lineOf(2).slice(0, 40));
    const padding = Buffer.alloc(TORN_REGION_BYTES + 100 - opening.length - 512 - rest.length, "x");
    const torn = Buffer.concat([opening, padding, Buffer.alloc(512), rest]);
    expect(torn.length).toBe(TORN_REGION_BYTES + 100);
    await writeFile(file, Buffer.concat([Buffer.from(good), torn]));
    const warnings: { message: string; attributes?: unknown }[] = [];
    await new JsonlEventPublisher({ file, logger: { warn: (message, attributes) => warnings.push({ message, attributes }) } }).publish([sampleEvent(2)]);
    expect(await detailIds()).toEqual([1, 2].map((n) => sampleEvent(n).detail.id));
    const recovery = `${file}.cut-${Buffer.byteLength(good)}`;
    expect(warnings).toEqual([{ message: expect.stringMatching(/power loss/), attributes: { file, bytes: torn.length, lines: 1 + after.length, recovery } }]);
  });

  it("counts the last line, cut short without its newline, among the lines it says it cut", async () => {
    const good = `${lineOf(1)}\n${lineOf(2)}\n`;
    const torn = Buffer.concat([
      Buffer.from(lineOf(3).slice(0, 40)),
      Buffer.alloc(4096),
      Buffer.from(`${lineOf(3).slice(60)}\n${lineOf(4)}\n${lineOf(5).slice(0, 30)}`),
    ]);
    await writeFile(file, Buffer.concat([Buffer.from(good), torn]));
    const warnings: { message: string; attributes?: unknown }[] = [];
    await new JsonlEventPublisher({ file, logger: { warn: (message, attributes) => warnings.push({ message, attributes }) } }).publish(
      [3, 4, 5].map((n) => sampleEvent(n)),
    );
    expect(await detailIds()).toEqual([1, 2, 3, 4, 5].map((n) => sampleEvent(n).detail.id));
    const recovery = `${file}.cut-${Buffer.byteLength(good)}`;
    expect(warnings).toEqual([{ message: expect.stringMatching(/power loss/), attributes: { file, bytes: torn.length, lines: 3, recovery } }]);
  });
});

describe("JsonlEventPublisher when its directory goes away while it runs", () => {
  it("makes the directory again (owner-only) with the file, as at its first append, rather than fail every cycle until a restart", async () => {
    const nested = path.join(dir, "out", "events");
    const events = path.join(nested, "events.jsonl");
    const publisher = new JsonlEventPublisher({ file: events });
    await publisher.publish([sampleEvent(1)]);
    await rm(path.join(dir, "out"), { recursive: true });
    await publisher.publish([sampleEvent(2)]);
    expect(await detailIds(events)).toEqual([sampleEvent(2).detail.id]);
    expect((await stat(nested)).mode & 0o777).toBe(0o700);
  });
});
