/**
 * "Did you mean" hints for mistyped names: setting names, commands, options.
 */

/**
 * The candidate `name` most likely meant, or undefined: the same but for case, else one that starts with it (at least
 * 3 characters: `auth` for `authorize`), else the closest within `maxDistance` edits (the first of equally close
 * ones) when `name` has at least 4 characters, so a short unrelated word (`rm`, `up`) gets no odd suggestion.
 *
 * @example
 * nearest("BRIDGE_PII_MOD", ["BRIDGE_PII_MODE", "BRIDGE_TENANT"]); // "BRIDGE_PII_MODE"
 */
export function nearest(name: string, candidates: readonly string[], maxDistance = 2): string | undefined {
  const lower = name.toLowerCase();
  const sameButCase = candidates.find((candidate) => candidate.toLowerCase() === lower);
  if (sameButCase !== undefined) return sameButCase;
  if (name.replace(/^-+/, "").length >= 3) {
    const longer = candidates.find((candidate) => candidate.toLowerCase().startsWith(lower));
    if (longer !== undefined) return longer;
  }
  if (name.replace(/^-+/, "").length < 4) return undefined;
  let best: string | undefined;
  let bestDistance = maxDistance + 1;
  for (const candidate of candidates) {
    const distance = editDistance(candidate.toLowerCase(), lower);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/**
 * The hint a message appends for what was likely meant: " (did you mean X?)", several joined by commas, or nothing
 * when no guess is near enough. The one wording of every "did you mean" that follows a message.
 *
 * @example
 * didYouMean(nearest("--intervl", ["--interval"])); // " (did you mean --interval?)"
 * didYouMean(undefined); // ""
 */
export function didYouMean(meant: string | readonly string[] | undefined): string {
  const guesses = (typeof meant === "string" ? [meant] : (meant ?? [])).filter((guess) => guess !== "");
  return guesses.length === 0 ? "" : ` (did you mean ${guesses.join(", ")}?)`;
}

/** Levenshtein distance; names are short. */
function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min((row[j] ?? 0) + 1, (next[j - 1] ?? 0) + 1, (row[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length] ?? 0;
}
