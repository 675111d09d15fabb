import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { docText, namesDocPart } from "./doc-text.js";
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

/** One part a citation names: quoted, or words from a capital or a backtick on. */
const CITED_PART = String.raw`(?:"[^"]+"|[A-Z\x60][\w\x60 -]*?)`;
/** A citation "docs/x.md, Part[, Part]", up to what ends it: a bracket (of a link too), a semicolon, a full stop or the sentence going on. */
const CITATION = new RegExp(String.raw`(docs/[\w-]+\.md), (${CITED_PART}(?:, ${CITED_PART})*)(?=[);.\]]| \(|, (?:has|says|which)\b)`, "y");

// Docs cite each other by a section's title or a lead ("see docs/events.md, PII modes"), which no link checker reads:
// a renamed heading leaves the citation pointing nowhere.
describe("the citations between docs", () => {
  it.each(DOCUMENTS)("%s cites only headings and leads that exist", (doc) => {
    const text = docText(doc);
    for (const { index } of text.matchAll(/docs\/[\w-]+\.md, (?=["\x60A-Z])/g)) {
      CITATION.lastIndex = index;
      const [citation = "", cited = "", parts = ""] = CITATION.exec(text) ?? [];
      expect(citation, `a citation this test cannot read at "${text.slice(index, index + 80)}"`).not.toBe("");
      for (const part of (parts.match(/"[^"]+"|[^,]+/g) ?? []).map((p) => p.trim().replace(/^"|"$/g, ""))) {
        expect(namesDocPart(cited, part), `${doc}: ${cited}, ${part}`).toBe(true);
      }
    }
  });

  it.each(["docs/runbook.md", "docs/events.md", "docs/spec-gaps.md", "docs/local-mode.md", "docs/upgrading.md"])("finds the citations it guards in %s", (doc) => {
    expect(docText(doc).match(/docs\/[\w-]+\.md, (?=["\x60A-Z])/g)?.length ?? 0).toBeGreaterThan(3);
  });
});
