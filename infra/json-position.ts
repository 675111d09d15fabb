/**
 * Where a JSON file the app reads (the tenants file, the event catalog) stops being JSON, in the terms an editor jumps to.
 */

/**
 * A JSON.parse message with the line and column of its `at position N`: Node 20 gives the offset alone, which an editor
 * does not jump to (newer Node versions add their own line and column, replaced here so the note reads the same).
 *
 * @example
 * withLineAndColumn("Expected double-quoted property name in JSON at position 12", '{\n  "a": 1,\n}');
 * // "Expected double-quoted property name in JSON at position 12 (line 3, column 1)"
 */
export function withLineAndColumn(message: string, text: string): string {
  const offset = /at position (\d+)/.exec(message)?.[1];
  if (offset === undefined) return message;
  const before = text.slice(0, Number(offset)).split("\n");
  return `${message.replace(/ \(line \d+ column \d+\)$/, "")} (line ${before.length}, column ${(before.at(-1) ?? "").length + 1})`;
}
