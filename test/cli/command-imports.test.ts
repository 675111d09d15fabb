import path from "node:path";
import { build, type Metafile } from "esbuild";
import { beforeAll, describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");

/**
 * The import graph of bridge.ts as esbuild sees it (type-only imports gone, as under tsx), packages left as imports:
 * every input with what it imports and how (`import-statement` at load, `dynamic-import` when the code runs).
 */
async function bridgeGraph(): Promise<Metafile> {
  const result = await build({
    entryPoints: [path.join(root, "bridge.ts")],
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

/** What loading `from` loads with it: our files and the packages (by name), static imports only. */
function loadedWith(metafile: Metafile, from: readonly string[]): { files: string[]; packages: string[] } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const queue = [...from];
  for (let file = queue.pop(); file !== undefined; file = queue.pop()) {
    if (files.has(file)) continue;
    const input = metafile.inputs[file];
    if (input === undefined) throw new Error(`${file} is not in bridge.ts's graph`);
    files.add(file);
    for (const imported of input.imports) {
      if (imported.kind !== "import-statement") continue;
      if (imported.external === true) {
        if (!imported.path.startsWith("node:")) packages.add(/^(@[^/]+\/)?[^/]+/.exec(imported.path)?.[0] ?? imported.path);
      } else queue.push(imported.path);
    }
  }
  return { files: [...files].sort(), packages: [...packages].sort() };
}

/** Files of the AWS mode, the sandbox (but its limits, a constant), the demo and the benchmark. */
const FOREIGN = /^(shared\/aws\/|sandbox\/(?!limits\.ts$)|shared\/cli\/(demo|bench|bench-sandbox|secret-onboarding)\.ts$)/;

describe("modules each command of bridge.ts loads", () => {
  let metafile: Metafile;
  beforeAll(async () => {
    metafile = await bridgeGraph();
  });

  it("help (and every command before it is chosen) loads no package and none of the commands", () => {
    const { files, packages } = loadedWith(metafile, ["bridge.ts"]);
    expect(packages).toEqual([]);
    expect(files.filter((file) => FOREIGN.test(file) || file.startsWith("shared/qashio/schemas/"))).toEqual([]);
    // version too: it reads package.json when it runs, and only then.
    for (const command of ["run", "redrive", "conform-pii", "authorize-command", "demo", "bench", "version"]) expect(files).not.toContain(`shared/cli/${command}.ts`);
  });

  it("the local commands load zod only: no AWS SDK, Powertools, middy, hono, CDK, sandbox, demo or benchmark", () => {
    // `authorize --secret-id` imports the AWS side when it runs; a local sign-in must not pay for it (about 0.2 s).
    for (const command of ["run", "redrive", "conform-pii", "authorize-command"]) {
      const { files, packages } = loadedWith(metafile, ["bridge.ts", `shared/cli/${command}.ts`]);
      expect(packages, command).toEqual(["zod"]);
      expect(files.filter((file) => FOREIGN.test(file)), command).toEqual([]);
    }
  });
});
