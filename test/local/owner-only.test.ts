/**
 * restrictToOwner: a state path restored or made by hand with the umask's modes (0644, 0755) is narrowed to its owner,
 * never through a symbolic link in a file's place, and refused (ExposedPathError) when the mode cannot be changed.
 */
import type * as nodeFs from "node:fs";
import { chmod, mkdir, stat, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { ExposedPathError, restrictToOwner } from "../../shared/local/index.js";
import { tempDirPerTest } from "../temp-dir.js";

/**
 * How fchmod answers: as the system does, refused with an errno code (or with an error that has none), or ignored (a
 * vfat mount with `quiet`).
 */
const chmodFault = vi.hoisted(() => ({ mode: "none" as "none" | "ignored" | { code?: string } }));

/** Descriptors opened through node:fs and not closed yet. */
const openFds = vi.hoisted(() => new Set<number>());

vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof nodeFs>();
  const fchmodSync = ((fd: number, mode: nodeFs.Mode) => {
    const fault = chmodFault.mode;
    if (fault === "ignored") return;
    if (fault !== "none") throw Object.assign(new Error(`${fault.code ?? "no code"}: fchmod failed`), fault.code === undefined ? {} : { code: fault.code });
    fs.fchmodSync(fd, mode);
  }) as typeof fs.fchmodSync;
  const openSync = ((...args: Parameters<typeof fs.openSync>) => {
    const fd = fs.openSync(...args);
    openFds.add(fd);
    return fd;
  }) as typeof fs.openSync;
  const closeSync = ((fd: number) => {
    fs.closeSync(fd);
    openFds.delete(fd);
  }) as typeof fs.closeSync;
  const wrapped = { fchmodSync, openSync, closeSync };
  return { ...fs, default: { ...fs, ...wrapped }, ...wrapped };
});

let dir: string;
tempDirPerTest("bridge-owner-only-", (made) => (dir = made));
beforeEach(() => {
  chmodFault.mode = "none";
});

async function modeOf(file: string): Promise<number> {
  return (await stat(file)).mode & 0o7777;
}

/** A file of `mode`, whatever the umask. */
async function fileWithMode(name: string, mode: number): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, '{"refreshToken":"rt"}');
  await chmod(file, mode);
  return file;
}

describe.skipIf(process.platform === "win32")("restrictToOwner", () => {
  it.each([
    ["0644", 0o644, 0o600],
    ["0604", 0o604, 0o600],
    ["0440", 0o440, 0o400],
    ["0666", 0o666, 0o600],
    // Restored from an archive that kept an executable bit: a token file is data, made 0600 as the bridge writes it.
    ["0755", 0o755, 0o600],
    // The mode it had is told whole, set-id bits included: the narrowed mode drops them.
    ["4755", 0o4755, 0o600],
  ])("narrows a file of mode %s to its owner's access and says which mode it had", async (_mode, before, after) => {
    const file = await fileWithMode("tokens.json", before);
    expect(restrictToOwner(file, { directory: false })).toBe(before);
    expect(await modeOf(file)).toBe(after);
  });

  it.each([
    ["0755", 0o755],
    // Set-id and sticky bits go too, as with a file: the bridge makes its directories 0700.
    ["3775", 0o3775],
    // Search bits alone let others reach the files by name: a token file made readable by hand would be exposed.
    ["0711", 0o711],
    ["0701", 0o701],
  ])("narrows a directory of mode %s to its owner's access, keeping the search bit its files are reached by", async (_mode, before) => {
    const state = path.join(dir, "state");
    await mkdir(state);
    await chmod(state, before);
    expect(restrictToOwner(state, { directory: true })).toBe(before);
    expect(await modeOf(state)).toBe(0o700);
  });

  it("follows a symbolic link to a directory (the state directory may be one), narrowing the directory it names", async () => {
    const real = path.join(dir, "real-state");
    await mkdir(real);
    await chmod(real, 0o750);
    await symlink(real, path.join(dir, "state"));
    expect(restrictToOwner(path.join(dir, "state"), { directory: true })).toBe(0o750);
    expect(await modeOf(real)).toBe(0o700);
  });

  it("never narrows through a symbolic link in a file's place: refuses it, and the file it names keeps its mode", async () => {
    const elsewhere = await fileWithMode("elsewhere.json", 0o644);
    await symlink(elsewhere, path.join(dir, "tokens.json"));
    expect(() => restrictToOwner(path.join(dir, "tokens.json"), { directory: false })).toThrow(expect.objectContaining({ code: "ELOOP" }));
    expect(await modeOf(elsewhere)).toBe(0o644);
  });

  it("refuses a file where a directory is asked for (ENOTDIR), leaving its mode as it is", async () => {
    const file = await fileWithMode("state", 0o644);
    expect(() => restrictToOwner(file, { directory: true })).toThrow(expect.objectContaining({ code: "ENOTDIR" }));
    expect(await modeOf(file)).toBe(0o644);
  });

  it("leaves a private file as it is and says nothing was narrowed", async () => {
    const file = await fileWithMode("tokens.json", 0o400);
    expect(restrictToOwner(file, { directory: false })).toBeUndefined();
    expect(await modeOf(file)).toBe(0o400);
  });

  it("closes the descriptor it opened, whether it narrowed the mode, found it private, or was refused", async () => {
    const narrowed = await fileWithMode("narrowed.json", 0o644);
    const alreadyPrivate = await fileWithMode("private.json", 0o600);
    const refused = await fileWithMode("refused.json", 0o644);
    openFds.clear();
    restrictToOwner(narrowed, { directory: false });
    restrictToOwner(alreadyPrivate, { directory: false });
    restrictToOwner(dir, { directory: true });
    chmodFault.mode = { code: "EPERM" };
    expect(() => restrictToOwner(refused, { directory: false })).toThrow(ExposedPathError);
    expect([...openFds]).toEqual([]);
  });

  it("narrows nothing on Windows, where modes say nothing", async () => {
    const file = await fileWithMode("tokens.json", 0o644);
    const platform = process.platform;
    Object.defineProperty(process, "platform", { value: "win32" });
    try {
      expect(restrictToOwner(file, { directory: false })).toBeUndefined();
    } finally {
      Object.defineProperty(process, "platform", { value: platform });
    }
    expect(await modeOf(file)).toBe(0o644);
  });

  it("says nothing was narrowed for a path that is not there", () => {
    expect(restrictToOwner(path.join(dir, "missing.json"), { directory: false })).toBeUndefined();
  });

  it("refuses a file whose mode this user may not change, naming its mode, owner and the system's code", async () => {
    const file = await fileWithMode("tokens.json", 0o644);
    chmodFault.mode = { code: "EPERM" };
    const error = (() => {
      try {
        return restrictToOwner(file, { directory: false });
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ExposedPathError);
    expect(error).toMatchObject({ file, mode: 0o644, owner: process.getuid?.(), code: "EPERM", cause: expect.objectContaining({ code: "EPERM" }) });
  });

  it("refuses a file whose chmod fails with an error that names no system code, with the code \"error\"", async () => {
    const file = await fileWithMode("tokens.json", 0o644);
    chmodFault.mode = {};
    expect(() => restrictToOwner(file, { directory: false })).toThrow(expect.objectContaining({ name: "ExposedPathError", code: "error" }));
  });

  it("refuses a file whose file system answers the chmod with success but keeps the mode", async () => {
    const file = await fileWithMode("tokens.json", 0o644);
    chmodFault.mode = "ignored";
    expect(() => restrictToOwner(file, { directory: false })).toThrow(expect.objectContaining({ name: "ExposedPathError", code: "mode unchanged by the file system" }));
  });

  it("refuses a file left readable by its group alone when the file system keeps the mode", async () => {
    const file = await fileWithMode("tokens.json", 0o640);
    chmodFault.mode = "ignored";
    expect(() => restrictToOwner(file, { directory: false })).toThrow(expect.objectContaining({ name: "ExposedPathError", mode: 0o640 }));
  });
});
