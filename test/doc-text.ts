/** What a doc says, for tests that hold its numbers and quotes to the code: any doc text, line breaks read as spaces. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { withoutFencedCode } from "./markdown-anchor.js";

/** Numbers the docs spell out. */
const WORDS: Readonly<Record<string, number>> = { one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, eight: 8, "three quarters": 0.75, half: 0.5 };

/** A doc of the repository (a path under its root), as written. */
const rawDoc = (path: string): string => readFileSync(join(import.meta.dirname, "..", path), "utf8");

/**
 * A doc of the repository (a path under its root), line breaks and runs of blanks read as one space.
 *
 * @example
 * docText("docs/runbook.md"); // "# Runbook ..."
 */
export function docText(path: string): string {
  return rawDoc(path).replace(/\s+/g, " ");
}

/**
 * The `## <title>` section of a doc read by {@link docText}, its `###` subsections included, up to the next section;
 * fails when there is none.
 *
 * @example
 * docSection(docText("README.md"), "Events"); // "## Events Each event ..."
 */
export function docSection(text: string, title: string): string {
  const start = text.indexOf(` ## ${title} `);
  expect(start, `section ${title}`).toBeGreaterThanOrEqual(0);
  const end = text.indexOf(" ## ", start + 1);
  return text.slice(start, end < 0 ? undefined : end);
}

/**
 * The top-level bullet of the doc at `path` (under the repository's root), in its `## <section>` when one is named,
 * that starts with `start`, up to the next bullet or heading, line breaks read as spaces; fails when there is none.
 *
 * @example
 * docBullet("docs/upgrading.md", "The transactions take at most", "Local mode"); // "- The transactions take at most ..."
 */
export function docBullet(path: string, start: string, section?: string): string {
  let text = rawDoc(path);
  if (section !== undefined) {
    const at = text.indexOf(`\n## ${section}\n`);
    expect(at, `section ${section}`).toBeGreaterThanOrEqual(0);
    const end = text.indexOf("\n## ", at + 1);
    text = text.slice(at, end < 0 ? undefined : end);
  }
  const found = text
    .split(/\n(?=- |#)/)
    .find((item) => item.startsWith(`- ${start}`));
  expect(found, start).toBeDefined();
  return (found ?? "").replace(/\s+/g, " ");
}

/**
 * Whether `part` names a part of the doc at `path` that a citation "(docs/x.md, Part)" may name: a heading (fenced code
 * left out), a bold lead (`- **Name.**`) or an italic lead (`- *Name.*`), whole or up to its " (", "." or ":".
 *
 * @example
 * namesDocPart("docs/runbook.md", "SyncLag"); // true: "## SyncLag" is a heading of the runbook
 */
export function namesDocPart(path: string, part: string): boolean {
  const text = withoutFencedCode(rawDoc(path));
  const parts = [...text.matchAll(/^#+ (.+)$|^\s*- \*\*(.+?)\*\*|^\s*- \*(.+?)\*/gm)].map((m) => (m[1] ?? m[2] ?? m[3] ?? "").replace(/\.$/, ""));
  return parts.some((name) => name === part || name.startsWith(`${part} (`) || name.startsWith(`${part}.`) || name.startsWith(`${part}:`));
}

/**
 * The part of `text` from `from` up to the next `to` after it (exclusive); fails when either is missing.
 *
 * @example
 * textBetween(docText("README.md"), "## Local mode", "### Onboarding an AWS tenant"); // "## Local mode ..."
 */
export function textBetween(text: string, from: string, to: string): string {
  const start = text.indexOf(from);
  const end = text.indexOf(to, start + from.length);
  expect(start, from).toBeGreaterThanOrEqual(0);
  expect(end, to).toBeGreaterThan(start);
  return text.slice(start, end);
}

/** The groups of every match of `pattern` in `text`, as written; fails when it matches nowhere. */
export function textsSaid(text: string, pattern: RegExp): string[][] {
  const found = [...text.matchAll(new RegExp(pattern, "g"))].map((m) => m.slice(1).map((group) => group ?? ""));
  expect(found, String(pattern)).not.toEqual([]);
  return found;
}

/** The groups of every match of `pattern` in `text`, as numbers (commas dropped, words read); fails when it matches nowhere. */
export function numbersSaid(text: string, pattern: RegExp): number[][] {
  return textsSaid(text, pattern).map((groups) => groups.map((n) => WORDS[n] ?? Number(n.replace(/,/g, ""))));
}

/** The groups of the first match of `pattern` in `text`, as written; fails when it matches nowhere. */
export const firstTextsSaid = (text: string, pattern: RegExp): string[] => textsSaid(text, pattern)[0] ?? [];

/** The groups of the first match of `pattern` in `text`, as numbers; fails when it matches nowhere. */
export const firstNumbersSaid = (text: string, pattern: RegExp): number[] => numbersSaid(text, pattern)[0] ?? [];

/** The backquoted names in `text`, in order. */
export const quotedNames = (text: string): string[] => [...text.matchAll(/`([^`]+)`/g)].map((match) => match[1] ?? "");

/** `text` as a regular expression's source that matches it literally. */
export const literalPattern = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * A doc's quote of a message as a pattern over the message: each match of `gap` in the quote (an ellipsis, a
 * placeholder; a pattern without capturing groups) stands for what the code fills in there, matched by `fill` (by
 * default any text, shortest first); the rest is matched literally.
 *
 * @example
 * quotePattern("Version <id> has no stage", /<\w+>/).test("Version v1 has no stage"); // true
 */
export function quotePattern(quote: string, gap: RegExp, fill = "[^]*?"): RegExp {
  return new RegExp(quote.split(gap).map(literalPattern).join(fill));
}
