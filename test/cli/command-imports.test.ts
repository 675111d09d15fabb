import type { Metafile } from "esbuild";
import { beforeAll, describe, expect, it } from "vitest";
import { importGraph, loadedWith } from "../import-graph.js";

/** Files of the AWS mode, the sandbox (but its limits, a constant), the demo and the benchmark. */
const FOREIGN = /^(shared\/aws\/|sandbox\/(?!limits\.ts$)|shared\/cli\/(demo|bench|bench-sandbox|secret-onboarding)\.ts$)/;

describe("modules each command of bridge.ts loads", () => {
  let metafile: Metafile;
  beforeAll(async () => {
    metafile = await importGraph(["bridge.ts"]);
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
