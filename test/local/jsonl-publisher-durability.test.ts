/**
 * JsonlEventPublisher's durability, seen through node:fs: a publish resolves only after the events file was fsynced
 * following its write, so the engine never writes a batch's snapshots (nor acknowledges it) over events a power loss
 * could still take back; and a recovery file's name is durable before the cut it saves. Nothing else shows a missing
 * fsync: the files read the same either way until the power goes.
 */
import type * as nodeFs from "node:fs";
import { existsSync } from "node:fs";
import { mkdir, readFile, rename, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { JsonlEventPublisher } from "../../shared/local/index.js";
import { pollTransactions } from "../../shared/bridge/transactions.js";
import { sampleEvent } from "../bridge/contract/index.js";
import { makeRig } from "../bridge/fakes.js";
import { tempDirPerTest } from "../temp-dir.js";

/**
 * Writes, truncations and fsyncs in order, each naming the file its descriptor was opened on; and links that took
 * effect, each naming the name it gave.
 */
const journal = vi.hoisted(() => ({ events: [] as string[], opened: new Map<number, string>(), lstats: [] as string[] }));

vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof nodeFs>();
  const name = (fd: number) => journal.opened.get(fd) ?? "?";
  const openSync = ((file: nodeFs.PathLike, ...rest: unknown[]) => {
    const fd = (fs.openSync as (file: nodeFs.PathLike, ...rest: unknown[]) => number)(file, ...rest);
    journal.opened.set(fd, String(file));
    return fd;
  }) as typeof fs.openSync;
  const writeSync = ((fd: number, ...rest: unknown[]) => {
    journal.events.push(`write ${name(fd)}`);
    return (fs.writeSync as (fd: number, ...rest: unknown[]) => number)(fd, ...rest);
  }) as typeof fs.writeSync;
  const ftruncateSync = ((fd: number, len?: number) => {
    journal.events.push(`truncate ${name(fd)}`);
    fs.ftruncateSync(fd, len);
  }) as typeof fs.ftruncateSync;
  const fsyncSync = ((fd: number) => {
    journal.events.push(`fsync ${name(fd)}`);
    fs.fsyncSync(fd);
  }) as typeof fs.fsyncSync;
  const linkSync = ((from: nodeFs.PathLike, to: nodeFs.PathLike) => {
    fs.linkSync(from, to);
    journal.events.push(`link ${String(to)}`);
  }) as typeof fs.linkSync;
  // Kept apart from the events: what an append costs besides its writes and fsyncs.
  const lstatSync = ((file: nodeFs.PathLike, ...rest: unknown[]) => {
    journal.lstats.push(String(file));
    return (fs.lstatSync as (file: nodeFs.PathLike, ...rest: unknown[]) => nodeFs.Stats)(file, ...rest);
  }) as typeof fs.lstatSync;
  const mocked = { openSync, writeSync, ftruncateSync, fsyncSync, linkSync, lstatSync };
  return { ...fs, default: { ...fs, ...mocked }, ...mocked };
});

let dir: string;
tempDirPerTest("bridge-jsonl-durable-", (made) => (dir = made));
let file: string;
beforeEach(() => {
  file = path.join(dir, "events.jsonl");
  journal.events.length = 0;
  journal.lstats.length = 0;
});

/** The journal's entries about the events file (and markers), with its path shortened. */
function eventsFileJournal(): string[] {
  return journal.events.filter((e) => e.endsWith(file) || !e.includes(dir)).map((e) => e.replace(file, "<events>"));
}

describe("JsonlEventPublisher durability", () => {
  it("fsyncs the events file after its write before a publish resolves, on every append", async () => {
    const publisher = new JsonlEventPublisher({ file });
    await publisher.publish([sampleEvent(1), sampleEvent(2)]);
    expect(eventsFileJournal().at(-1)).toBe("fsync <events>");
    expect(eventsFileJournal()).toContain("write <events>");
    journal.events.length = 0;
    await publisher.publish([sampleEvent(3)]);
    expect(eventsFileJournal()).toEqual(["write <events>", "fsync <events>"]);
  });

  it("fsyncs the directory after the first append to a file it created (a first run, or after a rotation moved it away)", async () => {
    const publisher = new JsonlEventPublisher({ file });
    await publisher.publish([sampleEvent(1)]);
    const dirFsync = `fsync ${dir}`;
    // The file's own fsync does not make its name durable: without the directory's, a power loss could take the new
    // file, and the events in it, back after the engine acknowledged them.
    expect(journal.events.filter((e) => e.startsWith("write") || e.startsWith("fsync")).map((e) => e.replace(file, "<events>"))).toEqual([
      "write <events>",
      "fsync <events>",
      dirFsync,
    ]);
    journal.events.length = 0;
    await publisher.publish([sampleEvent(2)]);
    expect(journal.events).not.toContain(dirFsync);
    await rename(file, `${file}.1`);
    journal.events.length = 0;
    await publisher.publish([sampleEvent(3)]);
    expect(journal.events.at(-1)).toBe(dirFsync);
  });

  // A relative link is read from the link's directory, not from the process's working directory.
  it.each([
    ["absolute", (target: string) => target],
    ["relative", (target: string) => path.relative(dir, target)],
  ])("fsyncs the directory the file is created in when BRIDGE_EVENTS_FILE is a symbolic link (%s) to a file not made yet, not only the link's", async (_kind, linkText) => {
    // The open follows the link and creates its target there: that directory's entry is the one a power loss could take.
    const target = path.join(dir, "real", "events.jsonl");
    await mkdir(path.dirname(target));
    await symlink(linkText(target), file);
    await new JsonlEventPublisher({ file }).publish([sampleEvent(1)]);
    expect(journal.events.filter((e) => e.startsWith("fsync") && !e.endsWith(file)).map((e) => e.replaceAll(dir, "<dir>"))).toContain("fsync <dir>/real");
    expect(existsSync(target)).toBe(true);
  });

  it("costs a later append through a symbolic link no directory fsync and no look at the link: the file is known durable", async () => {
    const target = path.join(dir, "real", "events.jsonl");
    await mkdir(path.dirname(target));
    await symlink(target, file);
    const publisher = new JsonlEventPublisher({ file });
    await publisher.publish([sampleEvent(1)]);
    expect(journal.lstats).toContain(file);
    journal.events.length = 0;
    journal.lstats.length = 0;
    await publisher.publish([sampleEvent(2)]);
    expect(journal.events.filter((e) => e.startsWith("fsync") && !e.endsWith(file))).toEqual([]);
    expect(journal.lstats).not.toContain(file);
  });

  it("makes the directories it creates for the file durable before its first append resolves (BRIDGE_EVENTS_FILE in a directory not there yet)", async () => {
    const nested = path.join(dir, "out", "day", "events.jsonl");
    await new JsonlEventPublisher({ file: nested }).publish([sampleEvent(1)]);
    // Without the fsyncs of their parents, a power loss could take the new directories back, and the file with them.
    expect(journal.events.filter((e) => e.startsWith("fsync")).map((e) => e.replace(nested, "<events>").replaceAll(dir, "<dir>"))).toEqual([
      "fsync <dir>/out",
      "fsync <dir>",
      "fsync <events>",
      "fsync <dir>/out/day",
    ]);
  });

  it("fsyncs the directory on its first append to a file another process created and was killed before making durable", async () => {
    // A run killed mid-append, after its open created the file and before its directory fsync: what is left is a torn
    // line, or whole lines of events it never acknowledged. The file is not empty, yet its name may not be on disk.
    await writeFile(file, '{"version":"0","id":"3b1f');
    const publisher = new JsonlEventPublisher({ file });
    journal.events.length = 0;
    await publisher.publish([sampleEvent(1)]);
    expect(journal.events.at(-1)).toBe(`fsync ${dir}`);
    journal.events.length = 0;
    await publisher.publish([sampleEvent(2)]);
    expect(journal.events).not.toContain(`fsync ${dir}`);
  });

  it("fsyncs the directory again when the file it appends to is not the one it made durable (another process re-created it after a rotation)", async () => {
    const publisher = new JsonlEventPublisher({ file });
    await publisher.publish([sampleEvent(1)]);
    // A rotation moves the file away; a `run --once` beside this loop creates the new one, appends its events and is
    // killed before its directory fsync: the new file's name may not be on disk, though it is not empty.
    await rename(file, `${file}.1`);
    await writeFile(file, '{"version":"0","id":"3b1f');
    journal.events.length = 0;
    await publisher.publish([sampleEvent(2)]);
    // Without the directory's fsync, a power loss could take the file back, with the events this append acknowledged.
    expect(journal.events.at(-1)).toBe(`fsync ${dir}`);
    journal.events.length = 0;
    await publisher.publish([sampleEvent(3)]);
    expect(journal.events).not.toContain(`fsync ${dir}`);
  });

  it("writes and fsyncs nothing for an empty batch (a cycle that found no change)", async () => {
    await new JsonlEventPublisher({ file }).publish([]);
    expect(eventsFileJournal()).toEqual([]);
    expect(existsSync(file)).toBe(false);
  });

  it("makes the events durable before the engine writes the batch's snapshots and acknowledges it", async () => {
    const rig = makeRig({}, { publisher: new JsonlEventPublisher({ file }) });
    const putMany = rig.snapshots.putMany.bind(rig.snapshots);
    rig.snapshots.putMany = (snapshots) => (journal.events.push("snapshots.putMany"), putMany(snapshots));
    const acknowledge = rig.provider.acknowledgeTransactions.bind(rig.provider);
    rig.provider.acknowledgeTransactions = (ids) => (journal.events.push("acknowledge"), acknowledge(ids));
    rig.provider.addTransaction();
    rig.provider.addTransaction();
    await pollTransactions(rig.deps);
    const order = eventsFileJournal();
    expect(order.slice(order.lastIndexOf("write <events>"))).toEqual(["write <events>", "fsync <events>", "snapshots.putMany", "acknowledge"]);
  });
});

describe("JsonlEventPublisher recovery file durability", () => {
  /**
   * Leaves the events file with one whole line, then a line a power loss tore (a NUL block) and a whole line after it;
   * returns the recovery file's name and the bytes the publisher saves there before it cuts them off.
   */
  async function tornTail(): Promise<{ readonly recovery: string; readonly cut: Buffer }> {
    await new JsonlEventPublisher({ file, newId: () => "env" }).publish([sampleEvent(1)]);
    const line = await readFile(file);
    const cut = Buffer.concat([line.subarray(0, 30), Buffer.alloc(512), line]);
    await writeFile(file, Buffer.concat([line, cut]));
    return { recovery: `${file}.cut-${line.length}`, cut };
  }

  /** The next publish's links, directory fsyncs and truncations up to the cut, with the paths shortened. */
  async function untilCut(recovery: string): Promise<string[]> {
    journal.events.length = 0;
    await new JsonlEventPublisher({ file, newId: () => "env" }).publish([sampleEvent(2)]);
    const shown = journal.events
      .filter((e) => e.startsWith("link") || e.startsWith("truncate") || e === `fsync ${dir}`)
      .map((e) => e.replace(recovery, "<recovery>").replace(file, "<events>").replace(dir, "<dir>"));
    return shown.slice(0, shown.indexOf("truncate <events>") + 1);
  }

  // The cut becomes durable with the append's fsync; a recovery name still only in the page cache then could go at a
  // power loss, with the only copy of lines an older version synced after the tear.
  it("fsyncs the directory after linking the recovery file it creates, before it cuts", async () => {
    const { recovery, cut } = await tornTail();
    expect(await untilCut(recovery)).toEqual(["link <recovery>", "fsync <dir>", "truncate <events>"]);
    expect((await readFile(recovery)).equals(cut)).toBe(true);
  });

  it("fsyncs the directory before it cuts when it finds the recovery file there already, holding the cut (a save a crash cut short, maybe before its fsync)", async () => {
    const { recovery, cut } = await tornTail();
    await writeFile(recovery, cut);
    expect(await untilCut(recovery)).toEqual(["fsync <dir>", "truncate <events>"]);
    expect((await readFile(recovery)).equals(cut)).toBe(true);
  });
});
