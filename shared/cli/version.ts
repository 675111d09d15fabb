/**
 * `bridge version` (or `--version`): the package's name and version, from package.json. Read here, when asked, and
 * imported lazily: no other command reads the file or pays for it at start-up.
 */
import { readFile } from "node:fs/promises";
import { EXIT } from "./errors.js";
import { line, type CliIo } from "./io.js";

/** The package's manifest, from this file's place in it (shared/cli/), not from the working directory. */
const PACKAGE_JSON = new URL("../../package.json", import.meta.url);

/**
 * Prints `<name> <version>` and returns exit 0.
 *
 * @example
 * process.exitCode = await versionCommand(io); // prints "qashio-bridge 0.1.0"
 */
export async function versionCommand(io: CliIo): Promise<number> {
  const { name, version } = JSON.parse(await readFile(PACKAGE_JSON, "utf8")) as { name: string; version: string };
  line(io.stdout, `${name} ${version}`);
  return EXIT.ok;
}
