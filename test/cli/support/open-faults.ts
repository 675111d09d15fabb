/**
 * node:fs with an openSync that fails as a full disk (ENOSPC) or a read-only mount (EROFS) would, for the files a test
 * names: what a `vi.mock("node:fs")` factory returns. vi.mock is hoisted above imports, so a factory loads this with
 * `await import(...)`; it imports node:fs for types only, so the real module it is given is the one it wraps.
 */
import type * as nodeFs from "node:fs";
import { basename } from "node:path";

const MESSAGES = { ENOSPC: "no space left on device", EROFS: "read-only file system" } as const;

/** `fs` whose openSync throws the error `fault` names for a file's base name, and opens the file where it names none. */
export function withOpenFaults(fs: typeof nodeFs, fault: (name: string) => keyof typeof MESSAGES | undefined): typeof nodeFs & { default: typeof nodeFs } {
  const openSync = ((file: nodeFs.PathLike, flags: nodeFs.OpenMode, mode?: nodeFs.Mode) => {
    const code = fault(basename(String(file)));
    if (code !== undefined) throw Object.assign(new Error(`${code}: ${MESSAGES[code]}, open '${String(file)}'`), { code });
    return fs.openSync(file, flags, mode);
  }) as typeof fs.openSync;
  return { ...fs, default: { ...fs, openSync }, openSync };
}
