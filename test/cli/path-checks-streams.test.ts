/**
 * The events file's check against this command's own output: an events file that is the file standard output or
 * standard error was redirected to is refused, by device and inode. A test's own streams are the runner's, so fstat
 * answers for fds 1 and 2 the stats of the files a test names.
 */
import type * as nodeFs from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { eventsFileProblem } from "../../shared/cli/path-checks.js";
import { tempDirPerTest } from "../temp-dir.js";

const streams = vi.hoisted(() => ({ files: new Map<number, string>() }));

vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof nodeFs>();
  const fstatSync = ((fd: number, ...rest: unknown[]) => {
    const file = streams.files.get(fd);
    return file === undefined ? (fs.fstatSync as (fd: number, ...rest: unknown[]) => nodeFs.Stats)(fd, ...rest) : fs.statSync(file);
  }) as typeof fs.fstatSync;
  return { ...fs, default: { ...fs, fstatSync }, fstatSync };
});

let dir: string;
tempDirPerTest("streams-", (made) => (dir = made));
afterEach(() => {
  streams.files.clear();
});

describe("an events file that is this command's own output", () => {
  it.each([
    [1, "standard output"],
    [2, "standard error"],
  ] as const)("is refused when fd %i (%s) was redirected to it, naming the stream", async (fd, stream) => {
    const events = join(dir, "events.jsonl");
    await writeFile(events, "");
    streams.files.set(fd, events);
    expect(eventsFileProblem(events)).toBe(
      `is this command's own ${stream} (${events}): its lines would go in among the events, or over them where the ` +
        "output was not opened to append; name the file itself and send the output elsewhere",
    );
  });

  it("is taken when the output goes to another file beside it, on the same device", async () => {
    const events = join(dir, "events.jsonl");
    const log = join(dir, "bridge.log");
    await writeFile(events, "");
    await writeFile(log, "");
    streams.files.set(1, log);
    streams.files.set(2, log);
    expect(eventsFileProblem(events)).toBeUndefined();
  });
});
