/**
 * The path checks on a read-only mount: EROFS from access(2) is no matter of this user's rights, and the message says
 * so. A read-only mount cannot be made in a test, so access(2) answers EROFS for paths under one directory. Likewise
 * for a path this user may not read (root reads anything), access(2) answers EACCES for the paths a test denies.
 */
import { execFileSync } from "node:child_process";
import type * as nodeFs from "node:fs";
import { chmod, chown, mkdir, mkdtemp, readdir, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { eventsFileProblem, stateDirProblem } from "../../shared/cli/path-checks.js";
import { tempDirPerTest } from "../temp-dir.js";

const readOnly = vi.hoisted(() => ({
  under: undefined as string | undefined,
  unreadable: new Set<string>(),
  unenterable: new Set<string>(),
  immutable: new Set<string>(),
  /** Directories on a file system without hard links (vfat, exfat), where link(2) answers EPERM for any file. */
  noHardLinks: new Set<string>(),
  /** Files whose open for writing answers EROFS: a read-only bind mount of the file alone. */
  readOnlyMounted: new Set<string>(),
}));

vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof nodeFs>();
  const accessSync = ((path: nodeFs.PathLike, mode?: number) => {
    if (readOnly.under !== undefined && String(path).startsWith(readOnly.under) && (mode ?? 0) & fs.constants.W_OK) {
      throw Object.assign(new Error(`EROFS: read-only file system, access '${String(path)}'`), { code: "EROFS" });
    }
    if (readOnly.unreadable.has(String(path)) && (mode ?? 0) & fs.constants.R_OK) {
      throw Object.assign(new Error(`EACCES: permission denied, access '${String(path)}'`), { code: "EACCES" });
    }
    if (readOnly.unenterable.has(String(path)) && (mode ?? 0) & fs.constants.X_OK) {
      throw Object.assign(new Error(`EACCES: permission denied, access '${String(path)}'`), { code: "EACCES" });
    }
    // An immutable directory (chattr +i): access(2) answers EPERM for writing, whoever asks.
    if (readOnly.immutable.has(String(path)) && (mode ?? 0) & fs.constants.W_OK) {
      throw Object.assign(new Error(`EPERM: operation not permitted, access '${String(path)}'`), { code: "EPERM" });
    }
    fs.accessSync(path, mode);
  }) as typeof fs.accessSync;
  const linkSync = ((existing: nodeFs.PathLike, path: nodeFs.PathLike) => {
    if ([...readOnly.noHardLinks].some((dir) => String(existing).startsWith(dir))) {
      throw Object.assign(new Error(`EPERM: operation not permitted, link '${String(existing)}' -> '${String(path)}'`), { code: "EPERM" });
    }
    fs.linkSync(existing, path);
  }) as typeof fs.linkSync;
  const openSync = ((path: nodeFs.PathLike, flags: nodeFs.OpenMode = "r", mode?: nodeFs.Mode) => {
    if (readOnly.readOnlyMounted.has(String(path)) && typeof flags === "number" && (flags & (fs.constants.O_WRONLY | fs.constants.O_RDWR)) !== 0) {
      throw Object.assign(new Error(`EROFS: read-only file system, open '${String(path)}'`), { code: "EROFS" });
    }
    return fs.openSync(path, flags, mode);
  }) as typeof fs.openSync;
  return { ...fs, default: { ...fs, accessSync, linkSync, openSync }, accessSync, linkSync, openSync };
});

let dir: string;
tempDirPerTest("read-only-", (made) => (dir = made));
beforeEach(() => {
  readOnly.under = dir;
});
afterEach(() => {
  readOnly.under = undefined;
  readOnly.unreadable.clear();
  readOnly.unenterable.clear();
  readOnly.immutable.clear();
  readOnly.noHardLinks.clear();
  readOnly.readOnlyMounted.clear();
});

describe("path checks on a read-only file system", () => {
  it("say the state directory is on a read-only file system, not that this user may not write it", async () => {
    const state = join(dir, "state");
    await mkdir(state);
    expect(stateDirProblem(state)).toBe(`is on a read-only file system (EROFS): ${state}`);
  });

  it("say the same of an events file there, existing or not", async () => {
    const events = join(dir, "events.jsonl");
    expect(eventsFileProblem(events)).toBe(`is on a read-only file system (EROFS): ${dir}`);
    await writeFile(events, "");
    expect(eventsFileProblem(events)).toBe(`is on a read-only file system (EROFS): ${events}`);
  });

  it("say the same of the directory an events file's link points into, not made yet", async () => {
    const elsewhere = await mkdtemp(join(tmpdir(), "writable-"));
    try {
      await mkdir(join(dir, "out"));
      const link = join(elsewhere, "events.jsonl");
      await symlink(join(dir, "out", "events.jsonl"), link);
      expect(eventsFileProblem(link)).toBe(`is on a read-only file system (EROFS): ${join(dir, "out")}`);
    } finally {
      await rm(elsewhere, { recursive: true, force: true });
    }
  });

  it("take a link on a read-only mount to an events file not made yet in a writable directory: the first append creates the target, as an existing file's directory need not be writable", async () => {
    const elsewhere = await mkdtemp(join(tmpdir(), "writable-"));
    try {
      const link = join(dir, "events.jsonl");
      await symlink(join(elsewhere, "events.jsonl"), link);
      expect(eventsFileProblem(link)).toBeUndefined();
      // The check's creation probe went beside the target, where the append creates it, and left nothing.
      expect(await readdir(elsewhere)).toEqual([]);
    } finally {
      await rm(elsewhere, { recursive: true, force: true });
    }
  });

  it("say so of a directory in the state directory on a read-only mount: the bridge writes into each", async () => {
    const state = join(dir, "state");
    const snapshots = join(state, "snapshots");
    await mkdir(snapshots, { recursive: true });
    readOnly.under = snapshots;
    expect(stateDirProblem(state)).toBe(`is on a read-only file system (EROFS): ${snapshots}`);
  });
});

describe("path checks of paths this user may not read", () => {
  beforeEach(() => {
    readOnly.under = undefined;
  });

  it("name a state directory this user may write but not enter, and the way in (README: the message names the fix)", async () => {
    const state = join(dir, "state");
    await mkdir(state, { mode: 0o700 });
    readOnly.unenterable.add(state);
    expect(stateDirProblem(state)).toBe(`is not writable by this user (EACCES): ${state}: this user may not enter ${state} (mode 0700); run \`chmod u+rwx ${state}\``);
  });

  /** What the checks say of an immutable `path` of the bridge's own: no mode lets anyone write it, so no chmod. */
  function immutableMessage(path: string): string {
    return `is immutable (EPERM: no user may write it): ${path}; clear its flag with \`sudo chattr -i ${path}\` (\`lsattr -d ${path}\` shows it), or use another path`;
  }

  it("name an immutable state directory (EPERM) and a fix that opens it, not a chmod", async () => {
    const state = join(dir, "state");
    await mkdir(state, { mode: 0o700 });
    readOnly.immutable.add(state);
    expect(stateDirProblem(state)).toBe(immutableMessage(state));
  });

  // Read, and replaced by a rename, which an immutable file refuses (EPERM) as writing it is: a token refresh's save
  // would fail after the provider rotated the refresh token, signing the integration out (exit 3) at the first refresh.
  it.each(["tokens.json", "binding.json"])("name an immutable state file, %s (EPERM), alike: no rename replaces it", async (name) => {
    const state = join(dir, "state");
    await mkdir(state, { mode: 0o700 });
    const file = join(state, name);
    await writeFile(file, "{}", { mode: 0o600 });
    readOnly.immutable.add(file);
    expect(stateDirProblem(state)).toBe(immutableMessage(file));
  });

  // Append-only (chattr +a): access(2) lets this user write it, but the save's rename may not replace it (EPERM), so
  // the first refresh's save would fail after the provider rotated the refresh token (exit 3). Real flags: root only.
  it.runIf(process.geteuid?.() === 0).each(["tokens.json", "binding.json"])(
    "name an append-only state file, %s (chattr +a), and the chattr that clears it, leaving no probe behind",
    async (name) => {
      const state = join(dir, "state");
      await mkdir(state, { mode: 0o700 });
      const file = join(state, name);
      await writeFile(file, "{}", { mode: 0o600 });
      execFileSync("chattr", ["+a", file]);
      try {
        expect(stateDirProblem(state)).toBe(
          `is append-only (EPERM: no rename may replace it): ${file}; clear its flag with \`sudo chattr -a ${file}\` (\`lsattr -d ${file}\` shows it)`,
        );
        expect(await readdir(state)).toEqual([name]);
      } finally {
        execFileSync("chattr", ["-a", file]);
      }
      expect(stateDirProblem(state)).toBeUndefined();
      expect(await readdir(state)).toEqual([name]);
    },
  );

  // link(2) answers EPERM on a file system without hard links (vfat, exfat) too, where no chattr flag exists: the
  // files are replaced by a rename there as anywhere, and `sudo chattr -a` would only fail (ENOTTY).
  it.each(["tokens.json", "binding.json"])("do not call %s append-only on a file system without hard links (link(2) EPERM)", async (name) => {
    const state = join(dir, "state");
    await mkdir(state, { mode: 0o700 });
    await writeFile(join(state, name), "{}", { mode: 0o600 });
    readOnly.noHardLinks.add(state);
    expect(stateDirProblem(state)).toBeUndefined();
  });

  // Only EPERM says append-only: another refusal of the open (EROFS here) is no flag `sudo chattr -a` clears.
  it("do not call a state file append-only when its open for writing is refused otherwise (EROFS: a read-only bind mount)", async () => {
    const state = join(dir, "state");
    await mkdir(state, { mode: 0o700 });
    const tokens = join(state, "tokens.json");
    await writeFile(tokens, "{}", { mode: 0o600 });
    readOnly.readOnlyMounted.add(tokens);
    expect(stateDirProblem(state) ?? "").not.toContain("append-only");
  });

  // The append-only check opens each state file: every descriptor is closed again (a loop checks at every start).
  it.runIf(process.platform === "linux")("leave no descriptor open after checking the state files", async () => {
    const state = join(dir, "state");
    await mkdir(state, { mode: 0o700 });
    await writeFile(join(state, "tokens.json"), "{}", { mode: 0o600 });
    await writeFile(join(state, "binding.json"), "{}", { mode: 0o600 });
    const before = (await readdir("/proc/self/fd")).length;
    expect(stateDirProblem(state)).toBeUndefined();
    expect((await readdir("/proc/self/fd")).length).toBe(before);
  });

  it("name an immutable existing events file (EPERM) alike", async () => {
    const events = join(dir, "events.jsonl");
    await writeFile(events, "");
    readOnly.immutable.add(events);
    expect(eventsFileProblem(events)).toBe(immutableMessage(events));
  });

  it("name a state directory entry of this user's own left unreadable, with no guess at a run as another user (it would own it)", async () => {
    const state = join(dir, "state");
    await mkdir(state);
    const tokens = join(state, "tokens.json");
    await writeFile(tokens, "{}");
    await chmod(tokens, 0o200);
    readOnly.unreadable.add(tokens);
    expect(stateDirProblem(state)).toBe(unreadableMessage(tokens, "0200"));
  });

  /**
   * What the cycle's own read errors say of `file` (unreadableProblem): the file is this user's own (the test made it),
   * so no guess at a run as another user, its mode alone and the chmod that lets this user read it.
   */
  function unreadableMessage(file: string, mode: string): string {
    return (
      `cannot be read by this user (EACCES): ${file}: ` +
      `this user may not read ${file} (mode ${mode}); run \`chmod u+r ${file}\``
    );
  }

  /** A state directory holding `<sub>/<name>`, which this user cannot read. */
  async function unreadableStateFile(sub: string, name: string): Promise<{ state: string; file: string }> {
    const state = join(dir, "state");
    await mkdir(join(state, sub), { recursive: true });
    const file = join(state, sub, name);
    await writeFile(file, "{}");
    await chmod(file, 0o200);
    readOnly.unreadable.add(file);
    return { state, file };
  }

  it.each([
    ["a snapshot segment", "snapshots", "seg-000000000001-0123abcd.log"],
    ["a quarantine record", "quarantine", "transaction%3Atx-1.json"],
  ])("name %s left unreadable, before any provider call, not as a corrupt file once a cycle reads it", async (_what, sub, name) => {
    const { state, file } = await unreadableStateFile(sub, name);
    expect(stateDirProblem(state)).toBe(unreadableMessage(file, "0200"));
  });

  it.each(["snapshots", "quarantine", "locks"])("name a %s directory this user may not read and write with its mode and the chmod that gives it all a directory needs", async (sub) => {
    const state = join(dir, "state");
    const denied = join(state, sub);
    await mkdir(denied, { recursive: true });
    await chmod(denied, 0o500);
    readOnly.unreadable.add(denied);
    expect(stateDirProblem(state)).toBe(
      `is not readable and writable by this user (EACCES): ${denied}: ` +
        `this user may not read and write ${denied} (mode 0500); run \`chmod u+rwx ${denied}\``,
    );
  });

  it.each([
    ["a lease (one that cannot be read counts as expired)", "locks", "cycle.lock"],
    ["a temporary file of an interrupted write (never read, swept)", "snapshots", "seg-000000000001-0123abcd.log.4242.tmp"],
  ])("leave alone %s left unreadable: no cycle reads it", async (_what, sub, name) => {
    const { state } = await unreadableStateFile(sub, name);
    expect(stateDirProblem(state)).toBeUndefined();
  });

  /**
   * What the check says of a new events file's directory `shut` refused EACCES: the setting to change, and for an
   * `own` directory (shut by its own mode) the chmod that opens it, as the state directory's message words it.
   */
  function unwritableDirMessage(shut: string, own: boolean): string {
    const chmod = own ? `run \`chmod u+rwx ${shut}\`, or ` : "";
    return `cannot be created: this user may not write its directory ${shut} (EACCES); ${chmod}point BRIDGE_EVENTS_FILE into a directory this user may write`;
  }

  /** Where a new events file goes: in `shut` itself, or through a symbolic link beside it whose target lies in `shut`. */
  const placings = {
    "a new events file": async (shut: string) => join(shut, "events.jsonl"),
    "an events file's link to a file not made yet": async (shut: string) => {
      const link = join(dir, "events.jsonl");
      await symlink(join(shut, "events.jsonl"), link);
      return link;
    },
  };

  describe.each(Object.entries(placings))("for %s", (_what, place) => {
    it("name the directory it cannot be created in, this user's own (EACCES), the chmod and what to set instead", async () => {
      const shut = join(dir, "shared-logs");
      await mkdir(shut);
      readOnly.unenterable.add(shut);
      expect(eventsFileProblem(await place(shut))).toBe(unwritableDirMessage(shut, true));
    });

    // EPERM: an immutable directory (chattr +i), which no user may write and no chmod opens: named so, as an immutable
    // state directory or events file is, not as this user's rights.
    it("name the immutable directory it cannot be created in (EPERM), the chattr that clears it and what to set instead", async () => {
      const shut = join(dir, "shared-logs");
      await mkdir(shut);
      readOnly.immutable.add(shut);
      expect(eventsFileProblem(await place(shut))).toBe(
        `cannot be created: its directory ${shut} is immutable (EPERM: no user may write it); clear its flag with ` +
          `\`sudo chattr -i ${shut}\` (\`lsattr -d ${shut}\` shows it), or point BRIDGE_EVENTS_FILE into a directory this user may write`,
      );
    });

    it.runIf(process.geteuid?.() === 0)("name no chmod for another user's directory (EACCES): its rights are its owner's to give (staged as root, who may chown)", async () => {
      const shut = join(dir, "shared-logs");
      await mkdir(shut);
      await chown(shut, 4242, 4242);
      readOnly.unenterable.add(shut);
      expect(eventsFileProblem(await place(shut))).toBe(unwritableDirMessage(shut, false));
    });
  });

  it("name an events file this user may write but not read (the publisher reads its last byte)", async () => {
    const events = join(dir, "events.jsonl");
    await writeFile(events, "");
    await chmod(events, 0o200);
    readOnly.unreadable.add(events);
    expect(eventsFileProblem(events)).toBe(
      `is not readable and writable by this user (EACCES): ${events}: this user may not read and write ${events} (mode 0200); run \`chmod u+rw ${events}\``,
    );
  });
});
