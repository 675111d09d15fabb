import { realpathSync } from "node:fs";
import { pathToFileURL } from "node:url";

/**
 * Whether `argv1` (the script node was given, `process.argv[1]`) is the module at `moduleUrl` (its `import.meta.url`):
 * compared as file URLs of the real path, as the loader makes `import.meta.url`, so a checkout whose path holds `#` or
 * `%` (which a URL built from the text would read as a fragment or an escape) or is reached through a symbolic link
 * still runs the script instead of exiting 0 having done nothing.
 *
 * @example
 * if (isEntry(process.argv[1], import.meta.url)) void main();
 */
export function isEntry(argv1: string | undefined, moduleUrl: string): boolean {
  if (!argv1) return false;
  try {
    return moduleUrl === pathToFileURL(realpathSync(argv1)).href;
  } catch {
    return false;
  }
}
