/** Which modules and packages our files load, as esbuild reads their imports: for tests that bound what a part may load. */
import path from "node:path";
import { build, type ImportKind, type Metafile } from "esbuild";

const root = path.resolve(import.meta.dirname, "..");

/**
 * The import graph of `entryPoints` (paths under the repository's root) as esbuild sees it (type-only imports gone, as
 * under tsx), packages left as imports: every input with what it imports and how (`import-statement` at load,
 * `dynamic-import` when the code runs).
 *
 * @example
 * const metafile = await importGraph(["bridge.ts"]);
 */
export async function importGraph(entryPoints: readonly string[]): Promise<Metafile> {
  const result = await build({
    entryPoints: entryPoints.map((entry) => path.join(root, entry)),
    absWorkingDir: root,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    write: false,
    outdir: "out",
    metafile: true,
    logLevel: "silent",
  });
  if (result.metafile === undefined) throw new Error("esbuild gave no metafile");
  return result.metafile;
}

/**
 * What loading `from` loads with it: our files and the packages (by name, `node:` ones left out), following static
 * imports only unless `kinds` names more (`dynamic-import`: what the code may load when it runs).
 */
export function loadedWith(
  metafile: Metafile,
  from: readonly string[],
  kinds: readonly ImportKind[] = ["import-statement"],
): { files: string[]; packages: string[] } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const queue = [...from];
  for (let file = queue.pop(); file !== undefined; file = queue.pop()) {
    if (files.has(file)) continue;
    const input = metafile.inputs[file];
    if (input === undefined) throw new Error(`${file} is not in the import graph`);
    files.add(file);
    for (const imported of input.imports) {
      if (!kinds.includes(imported.kind)) continue;
      if (imported.external === true) {
        if (!imported.path.startsWith("node:")) packages.add(/^(@[^/]+\/)?[^/]+/.exec(imported.path)?.[0] ?? imported.path);
      } else queue.push(imported.path);
    }
  }
  return { files: [...files].sort(), packages: [...packages].sort() };
}
