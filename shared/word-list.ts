/**
 * Words as a sentence lists them, for messages: "a", "a and b", "a, b and c" (or "a, b or c" for a choice).
 *
 * @example
 * wordList(["run", "demo", "bench"]); // "run, demo and bench"
 * wordList(["full", "redact", "hash"], "or"); // "full, redact or hash"
 */
export function wordList(words: readonly string[], conjunction: "and" | "or" = "and"): string {
  return words.length < 2 ? words.join("") : `${words.slice(0, -1).join(", ")} ${conjunction} ${words.at(-1) ?? ""}`;
}
