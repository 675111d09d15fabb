/** GitHub's anchors for markdown headings, as links into README and docs/ must name them, and the text they are read from. */

/**
 * The fragment GitHub gives a heading: lower case, punctuation but `-` and `_` dropped, spaces as `-`.
 *
 * @example
 * headingAnchor("Signing in: `authorize`"); // "signing-in-authorize"
 */
export function headingAnchor(title: string): string {
  return title
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, "")
    .replace(/ /g, "-");
}

/** A markdown text without its fenced code blocks, whose `#` lines and `](` are code, not headings or links. */
export function withoutFencedCode(markdown: string): string {
  return markdown.replace(/^```[^]*?^```/gm, "");
}

/** Every heading's anchor in a markdown text (`#` to `######`, fenced code left out), a repeated one suffixed `-1`, `-2`, ... as GitHub does. */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const [, title] of withoutFencedCode(markdown).matchAll(/^#{1,6} (.+)$/gm)) {
    const anchor = headingAnchor(title as string);
    const count = seen.get(anchor) ?? 0;
    anchors.add(count === 0 ? anchor : `${anchor}-${count}`);
    seen.set(anchor, count + 1);
  }
  return anchors;
}
