/**
 * Structural diff of two provider objects as a list of JSON Pointer changes.
 * Arrays whose elements all carry a unique `id` (line_items, segments, receipts, sync_errors, ...)
 * are matched by that id, so a reordered or inserted element does not show as many changes.
 */
import { isJsonObject } from "../json-object.js";

/** One changed leaf (or whole added/removed member) between two versions of an object. */
export interface Change {
  /** RFC 6901 JSON Pointer; an element of an id-matched array is addressed by its `id`, not its index. */
  readonly path: string;
  /** Value before; `null` when the member did not exist. */
  readonly before: unknown;
  /** Value after; `null` when the member no longer exists. */
  readonly after: unknown;
}

/** Escapes one JSON Pointer reference token (RFC 6901 §3). */
export function escapePointerToken(token: string): string {
  return token.includes("~") || token.includes("/") ? token.replace(/~/g, "~0").replace(/\//g, "~1") : token;
}


/** A member's own value: `record[key]` alone would find inherited members such as `constructor` or `toString`. */
function own(record: Readonly<Record<string, unknown>>, key: string): unknown {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

/** Element ids of an array when every element is an object with a unique string/number `id`; else undefined. */
function elementIds(array: readonly unknown[]): string[] | undefined {
  const ids: string[] = [];
  const seen = new Set<string>();
  for (const element of array) {
    if (!isJsonObject(element)) return undefined;
    const id = own(element, "id");
    if (typeof id !== "string" && typeof id !== "number") return undefined;
    const key = String(id);
    if (seen.has(key)) return undefined;
    seen.add(key);
    ids.push(key);
  }
  return ids;
}

/**
 * Deep equality of JSON values; an absent member equals `null` (providers omit and null fields interchangeably).
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === undefined || a === null) return b === undefined || b === null;
  if (typeof a !== "object" || typeof b !== "object" || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  for (const key of Object.keys(ra)) if (!jsonEqual(ra[key], own(rb, key))) return false;
  for (const key of Object.keys(rb)) if (!Object.hasOwn(ra, key) && !jsonEqual(undefined, rb[key])) return false;
  return true;
}

function orNull(value: unknown): unknown {
  return value === undefined ? null : value;
}

function diffInto(path: string, before: unknown, after: unknown, out: Change[]): void {
  if (before === after) return;
  if (isJsonObject(before) && isJsonObject(after)) {
    const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
    for (const key of [...keys].sort()) diffInto(`${path}/${escapePointerToken(key)}`, own(before, key), own(after, key), out);
    return;
  }
  if (Array.isArray(before) && Array.isArray(after)) {
    const beforeIds = elementIds(before);
    const afterIds = beforeIds && elementIds(after);
    if (beforeIds && afterIds && (before.length > 0 || after.length > 0)) {
      const beforeById = new Map<string, unknown>();
      beforeIds.forEach((id, i) => beforeById.set(id, before[i]));
      const afterSet = new Set(afterIds);
      afterIds.forEach((id, i) => diffInto(`${path}/${escapePointerToken(id)}`, beforeById.get(id), after[i], out));
      beforeIds.forEach((id, i) => {
        if (!afterSet.has(id)) out.push({ path: `${path}/${escapePointerToken(id)}`, before: before[i], after: null });
      });
      return;
    }
  }
  if (!jsonEqual(before, after)) out.push({ path, before: orNull(before), after: orNull(after) });
}

/**
 * Lists what changed from `before` to `after`, members in sorted key order, as JSON Pointer paths. Inside an array
 * matched by id, elements in their order in `after`, then those removed in their order in `before`.
 *
 * @example
 * ```ts
 * diffObjects(
 *   { memo: "a", line_items: [{ id: "L1", amount: 5 }] },
 *   { memo: "b", line_items: [{ id: "L1", amount: 7 }] },
 * );
 * // [{ path: "/line_items/L1/amount", before: 5, after: 7 }, { path: "/memo", before: "a", after: "b" }]
 * ```
 */
export function diffObjects(before: Readonly<Record<string, unknown>>, after: Readonly<Record<string, unknown>>): Change[] {
  const out: Change[] = [];
  diffInto("", before, after, out);
  return out;
}
