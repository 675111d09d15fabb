/**
 * Path checks that hand mutation found unpinned: a fix quoted for the shell it is pasted into, a symbolic link followed
 * to its last target, the outermost closed directory named, and no way in offered where permissions are not the cause.
 * Root reads and enters anything, so access(2) answers the codes a test gives for the paths and modes it names.
 */
import type * as nodeFs from "node:fs";
import { existsSync } from "node:fs";
import { mkdir, readdir, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { eventsFileProblem, stateDirProblem } from "../../shared/cli/path-checks.js";
import { tempDirPerTest } from "../temp-dir.js";

const refusals = vi.hoisted(() => ({ answers: [] as { path: string; mode: number; code: string }[] }));

vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof nodeFs>();
  const accessSync = ((path: nodeFs.PathLike, mode?: number) => {
    const answer = refusals.answers.find((refusal) => refusal.path === String(path) && ((mode ?? 0) & refusal.mode) !== 0);
    if (answer !== undefined) throw Object.assign(new Error(`${answer.code}: access '${String(path)}'`), { code: answer.code });
    fs.accessSync(path, mode);
  }) as typeof fs.accessSync;
  return { ...fs, default: { ...fs, accessSync }, accessSync };
});

/** access(2) answers `code` for `path` when asked any of the `mode` bits. */
function refuse(path: string, mode: number, code: string): void {
  refusals.answers.push({ path, mode, code });
}

const R_OK = 4;
const W_OK = 2;
const X_OK = 1;

let dir: string;
tempDirPerTest("path-checks-mutants-", (made) => (dir = made));
afterEach(() => {
  refusals.answers.length = 0;
});

describe("the fix a path check names", () => {
  it("quotes a path a shell would split in the chattr that clears an immutable events file's flag (EPERM)", async () => {
    const events = join(dir, "my events.jsonl");
    await writeFile(events, "");
    refuse(events, W_OK, "EPERM");
    const word = `'${events}'`;
    expect(eventsFileProblem(events)).toBe(
      `is immutable (EPERM: no user may write it): ${events}; clear its flag with \`sudo chattr -i ${word}\` (\`lsattr -d ${word}\` shows it), or use another path`,
    );
  });

  it("quotes a path a shell would split in the chmod that opens this user's own state directory", async () => {
    const state = join(dir, "my state");
    await mkdir(state, { mode: 0o700 });
    refuse(state, X_OK, "EACCES");
    expect(stateDirProblem(state)).toBe(`is not writable by this user (EACCES): ${state}: this user may not enter ${state} (mode 0700); run \`chmod u+rwx '${state}'\``);
  });

  it("names the outermost directory this user may not enter, not a deeper one: opening that alone would not let it in", async () => {
    const outer = join(dir, "outer");
    const inner = join(outer, "inner");
    await mkdir(inner, { recursive: true, mode: 0o700 });
    const events = join(inner, "events.jsonl");
    await writeFile(events, "");
    refuse(events, R_OK, "EACCES");
    refuse(outer, X_OK, "EACCES");
    refuse(inner, X_OK, "EACCES");
    expect(eventsFileProblem(events)).toBe(
      `is not readable and writable by this user (EACCES): ${events}: this user may not enter ${outer} (mode 0700); run \`chmod u+rwx ${outer}\``,
    );
  });

  it("offers no way in for a refusal that is no matter of permissions (EIO from a network mount): a chmod would not help", async () => {
    const events = join(dir, "events.jsonl");
    await writeFile(events, "", { mode: 0o600 });
    refuse(events, R_OK | W_OK, "EIO");
    expect(eventsFileProblem(events)).toBe(`is not readable and writable by this user (EIO): ${events}`);
  });
});

describe("an events file that is a symbolic link to a file not made yet", () => {
  it("is followed through a chain of links to its last target: a directory missing there fails every append", async () => {
    const target = join(dir, "gone", "events.jsonl");
    const hop = join(dir, "hop.jsonl");
    const link = join(dir, "events.jsonl");
    await symlink(target, hop);
    await symlink(hop, link);
    expect(eventsFileProblem(link)).toBe(
      `is a symbolic link to ${target}, whose directory ${join(dir, "gone")} does not exist ` +
        "(the bridge makes the directories of the setting's own path only): create it, or set the file's own path",
    );
  });

  it.runIf(existsSync("/proc/self"))("is probed where the append creates it: a target the filesystem refuses (/proc) is named, though the link's directory takes files", async () => {
    const target = "/proc/qashio-bridge-events.jsonl";
    const link = join(dir, "events.jsonl");
    await symlink(target, link);
    expect(eventsFileProblem(link)).toBe(`cannot be created (ENOENT): ${target}`);
    expect(await readdir(dir)).toEqual(["events.jsonl"]);
  });
});
