/**
 * "Did you mean" hints for mistyped names: setting names, commands, options.
 */

/**
 * The candidate closest to `name` within `maxDistance` edits (the first of equally close ones), or undefined.
 *
 * @example
 * nearest("BRIDGE_PII_MOD", ["BRIDGE_PII_MODE", "BRIDGE_TENANT"]); // "BRIDGE_PII_MODE"
 */
export function nearest(name: string, candidates: readonly string[], maxDistance = 2): string | undefined {
  let best: string | undefined;
  let bestDistance = maxDistance + 1;
  for (const candidate of candidates) {
    const distance = editDistance(candidate, name);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
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
