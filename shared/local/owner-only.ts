/**
 * Taking group and other access off a path of the state directory, as the bridge creates it (files 0600, directories
 * 0700): a copy restored or made by hand carries the umask's modes instead. Done through the opened descriptor, so the
 * mode changed is that of the file whose mode was read.
 */
import { closeSync, constants, fchmodSync, fstatSync, openSync } from "node:fs";
import { ExposedPathError } from "./errors.js";

/**
 * Narrows `path` to its owner's access: `mode & 0o600` for a file (never through a symbolic link), `mode & 0o700` for
 * a directory (a link to one is followed: the state directory may be one). Never on Windows, where modes say nothing.
 *
 * @returns the permission bits `path` had when they were narrowed; undefined when it was private already, or missing.
 * @throws ExposedPathError when this user may not narrow them (another user owns it), or the file system ignored it.
 * @example
 * const before = restrictToOwner(".state", { directory: true });
 */
export function restrictToOwner(path: string, { directory }: { directory: boolean }): number | undefined {
  if (process.platform === "win32") return undefined;
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | (directory ? constants.O_DIRECTORY : constants.O_NOFOLLOW));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  try {
    const { mode, uid } = fstatSync(fd);
    if ((mode & 0o077) === 0) return undefined;
    const exposed = (code: string, cause?: unknown) => new ExposedPathError(path, { mode: mode & 0o7777, owner: uid, code }, { cause });
    try {
      fchmodSync(fd, mode & (directory ? 0o700 : 0o600));
    } catch (error) {
      throw exposed((error as NodeJS.ErrnoException).code ?? "error", error);
    }
    // Some file systems keep the modes their mount options fix and answer a chmod with success (vfat with `quiet`).
    if ((fstatSync(fd).mode & 0o077) !== 0) throw exposed("mode unchanged by the file system");
    return mode & 0o7777;
  } finally {
    closeSync(fd);
  }
}
