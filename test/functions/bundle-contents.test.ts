import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");
const entries = readdirSync(path.join(root, "functions"))
  .filter((name) => name.endsWith(".ts"))
  .map((name) => path.join(root, "functions", name));

/** A module that runs as a script when it is the process's entry (e.g. a generator that writes docs files). */
const MAIN_GUARD = /process\.argv\[1\]/;

describe("Lambda bundles", () => {
  it("take in no module that runs as a script: in a bundle, its guard compares the bundle's own URL", async () => {
    // What NodejsFunction bundles (infra/constructs/bridge-function.ts), dependencies aside: our own modules.
    const result = await build({
      entryPoints: entries,
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node24",
      packages: "external",
      write: false,
      outdir: "out",
      metafile: true,
      logLevel: "silent",
    });
    const ours = Object.keys(result.metafile.inputs).filter((input) => !input.includes("node_modules"));
    expect(ours.length).toBeGreaterThan(entries.length);
    const scripts = ours.filter((input) => MAIN_GUARD.test(readFileSync(path.resolve(root, input), "utf8")));
    expect(scripts).toEqual([]);
  });
});
