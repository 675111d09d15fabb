/**
 * How the engine reads a transaction's id members, and which ids the acknowledge takes: shared by the transaction
 * cycle, the parent lookup (parents.ts) and the re-drive (redrive.ts).
 */

/** The acknowledge body takes transaction UUIDs only; one malformed id would fail the whole call. */
const ACKNOWLEDGEABLE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * True for a transaction id the cycle acknowledges (a UUID): an invalid transaction with such an id is quarantined and
 * acknowledged, so no cycle lists it again; one without stays listed.
 *
 * @example
 * ```ts
 * isAcknowledgeableId("00000000-0000-4000-8000-000000000001"); // true
 * isAcknowledgeableId("T-1"); // false
 * ```
 */
export function isAcknowledgeableId(id: string | undefined): id is string {
  return id !== undefined && ACKNOWLEDGEABLE_ID.test(id);
}

/** An id member (`id`, `qashio_id`, `parent_id`, ...) as the engine takes it: a non-empty string, else none. */
export function optionalString(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}
