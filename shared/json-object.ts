/**
 * The one test for "a JSON object" (what `JSON.parse` gives for `{...}`): used by the provider client on answer bodies,
 * by the request schemas' cross-field rules, and by the engine's diff, PII masking and re-reads.
 */

/**
 * A JSON object: not null, not an array.
 *
 * @example
 * ```ts
 * isJsonObject({ id: "t1" }); // true
 * isJsonObject([]); // false
 * ```
 */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
