import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { headingAnchors, withoutFencedCode } from "./markdown-anchor.js";

const ROOT = join(import.meta.dirname, "..");
const DOCUMENTS = ["README.md", ...readdirSync(join(ROOT, "docs")).filter((name) => name.endsWith(".md")).map((name) => `docs/${name}`)];

/** The relative links of a markdown document (`[text](target)`, outside fenced code), each as written. */
function relativeLinks(markdown: string): string[] {
  return [...withoutFencedCode(markdown).matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] as string).filter((target) => !/^[a-z]+:/i.test(target));
}

// Sections moved between README and docs/ (local mode, upgrade notes): a link left pointing where a text used to be
// sends the reader nowhere, and GitHub shows no error for it.
describe("the links between README and docs/", () => {
  it.each(DOCUMENTS)("%s links only to files and headings that exist", (doc) => {
    const links = relativeLinks(readFileSync(join(ROOT, doc), "utf8"));
    const broken = links.filter((link) => {
      const [path = "", fragment] = link.split("#");
      const target = path === "" ? join(ROOT, doc) : join(ROOT, dirname(doc), path);
      if (!existsSync(target)) return true;
      if (fragment === undefined || !target.endsWith(".md")) return false;
      return !headingAnchors(readFileSync(target, "utf8")).has(fragment);
    });
    expect(broken, `broken links in ${doc} (targets relative to ${relative(ROOT, dirname(join(ROOT, doc))) || "."})`).toEqual([]);
  });

  it("finds the links this guards: README's into docs/local-mode.md and docs/upgrading.md, and theirs back", () => {
    const readme = relativeLinks(readFileSync(join(ROOT, "README.md"), "utf8"));
    expect(readme).toEqual(expect.arrayContaining(["docs/local-mode.md#exit-codes", "docs/local-mode.md#signing-in-authorize", "docs/upgrading.md#local-mode"]));
    expect(relativeLinks(readFileSync(join(ROOT, "docs/local-mode.md"), "utf8"))).toContain("upgrading.md#local-mode");
  });
});
