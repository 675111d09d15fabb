import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { build, type BuildOptions, type Metafile } from "esbuild";
import { describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");
const entries = readdirSync(path.join(root, "functions"))
  .filter((name) => name.endsWith(".ts"))
  .map((name) => path.join(root, "functions", name));

/** A module that runs as a script when it is the process's entry (e.g. a generator that writes docs files). */
const MAIN_GUARD = /process\.argv\[1\]/;

/** The inputs and outputs of the functions bundled as NodejsFunction does (infra/constructs/bridge-function.ts), with `options` on top. */
async function bundleFunctions(options: BuildOptions): Promise<Metafile> {
  const result = await build({
    entryPoints: entries,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node24",
    write: false,
    outdir: "out",
    metafile: true,
    logLevel: "silent",
    ...options,
  });
  if (result.metafile === undefined) throw new Error("esbuild gave no metafile");
  return result.metafile;
}

describe("Lambda bundles", () => {
  it("take in no module that runs as a script: in a bundle, its guard compares the bundle's own URL", async () => {
    // Dependencies aside: our own modules.
    const metafile = await bundleFunctions({ packages: "external" });
    const ours = Object.keys(metafile.inputs).filter((input) => !input.includes("node_modules"));
    expect(ours.length).toBeGreaterThan(entries.length);
    const scripts = ours.filter((input) => MAIN_GUARD.test(readFileSync(path.resolve(root, input), "utf8")));
    expect(scripts).toEqual([]);
  });

  it("take in zod's English messages only: `import * as z` lets esbuild drop the locales (`import { z }` kept all 60-odd)", async () => {
    // Dependencies bundled, as NodejsFunction does: `import { z } from "zod"` binds zod's namespace object as a value,
    // which keeps every export (locales, JSON Schema conversion) in each bundle, ~350 KB of its 1.1 MB parsed at cold start.
    const metafile = await bundleFunctions({ mainFields: ["module", "main"] });
    for (const [output, { entryPoint, inputs }] of Object.entries(metafile.outputs)) {
      if (entryPoint === undefined) continue;
      const zod = Object.keys(inputs).filter((input) => /node_modules\/zod\//.test(input));
      expect(zod.length, output).toBeGreaterThan(0);
      const locales = zod.filter((input) => input.includes("/locales/")).map((input) => path.basename(input));
      expect(locales, output).toEqual(["en.js"]);
      expect(zod.filter((input) => input.endsWith("/from-json-schema.js")), output).toEqual([]);
    }
  });
});
