/**
 * The member of `data.object` that lists an oversized event's trims (shared/aws/event-size.ts; docs/events.md,
 * "Oversized events and failed publishes"). The name is the bridge's: a provider member so named is left out of what
 * the bridge diffs, stores and publishes, since published it would break the event schemas' `_truncated` (an array of
 * trims) or tell consumers a whole event is partial.
 */

/** Key of the trim marker inside `detail.data.object`. */
export const TRUNCATION_MARKER = "_truncated";

/**
 * `object` without a member named {@link TRUNCATION_MARKER}: itself when it has none, else a shallow copy in which that
 * member is `undefined` (JSON text, hashes and diffs take it for absent; deleting it would slow the copy's serialising).
 *
 * @example
 * ```ts
 * withoutTruncationMarker({ id: "t1", _truncated: true }); // { id: "t1", _truncated: undefined }
 * ```
 */
export function withoutTruncationMarker<T extends Record<string, unknown>>(object: T): T {
  return Object.hasOwn(object, TRUNCATION_MARKER) ? { ...object, [TRUNCATION_MARKER]: undefined } : object;
}
