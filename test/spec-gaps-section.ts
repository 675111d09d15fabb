/** docs/spec-gaps.md by section, for tests that hold the numbers, names and code citations it gives to the code. */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { docSection, docText } from "./doc-text.js";

export const ROOT = join(import.meta.dirname, "..");
const SPEC_GAPS = docText("docs/spec-gaps.md");

/** Milliseconds as the seconds the doc gives. */
export const seconds = (ms: number): number => ms / 1000;

/**
 * The section under `## <title>`, up to the next section, line breaks read as spaces.
 *
 * @example
 * specGapsSection("Local mode"); // " ## Local mode Choices of the command line ..."
 */
export function specGapsSection(title: string): string {
  return docSection(SPEC_GAPS, title);
}

/**
 * The `### <from>` subsection of section `title` up to the next one, or through the `### <through>` subsection when
 * given, line breaks read as spaces.
 *
 * @example
 * specGapsPart("Sandbox", "OAuth"); // "### OAuth ..."
 */
export function specGapsPart(title: string, from: string, through: string = from): string {
  const section = specGapsSection(title);
  const heading = (name: string): number => {
    const at = section.indexOf(`### ${name} `);
    if (at < 0) throw new Error(`docs/spec-gaps.md's ${title} has no subsection ${name}`);
    return at;
  };
  const end = section.indexOf(" ### ", heading(through) + 1);
  return section.slice(heading(from), end < 0 ? undefined : end);
}

/**
 * The `path.ts` `name`, `name` citations of `section` (paths under the repository, `auth/` under shared/qashio/),
 * checked to name files that exist and hold each name cited there; returns how many it checked.
 */
export function expectCitationsHold(section: string): number {
  // A file name after a path (`cycle.ts`) ends its names: it is a citation of its own or none.
  const citations = [...section.matchAll(/`((?:shared|auth|sandbox|infra|functions|test)\/[\w/.-]+\.ts|bridge\.ts)`((?:,? (?:with )?`(?![\w.]+\.ts`)[\w.]+`)*)/g)].map((m) => ({
    path: existsSync(join(ROOT, m[1] ?? "")) ? (m[1] ?? "") : `shared/qashio/${m[1] ?? ""}`,
    names: [...(m[2] ?? "").matchAll(/`([\w.]+)`/g)].map((n) => n[1] ?? ""),
  }));
  for (const { path, names } of citations) {
    expect(existsSync(join(ROOT, path)), path).toBe(true);
    const source = readFileSync(join(ROOT, path), "utf8");
    for (const name of names) for (const part of name.split(".")) expect(new RegExp(`\\b${part}\\b`).test(source), `${name} in ${path}`).toBe(true);
  }
  return citations.length;
}
