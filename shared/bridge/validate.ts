/**
 * Per-item validation of raw provider records. The default checks the minimum the engine relies on;
 * callers plug in the provider schemas (see {@link schemaValidator}).
 */

/**
 * Deepest nesting of objects and arrays a provider record may have. The spec's records nest a few levels; a record far
 * deeper (kilobytes of `[[[[`, which JSON.parse takes) would overflow the recursive hashing and diffing and stop every
 * cycle at its page, so it is quarantined instead, its body cut at this depth.
 */
export const MAX_RECORD_DEPTH = 32;

/** Stands in, in a quarantined body, for what lay deeper than {@link MAX_RECORD_DEPTH}. */
export const CUT_DEPTH_MARKER = `[nested deeper than ${MAX_RECORD_DEPTH} levels]`;

/** Whether `value` holds objects or arrays `levels` or more below itself (about 1.3 us for a 3.6 KB transaction). */
export function nestedDeeperThan(value: unknown, levels = MAX_RECORD_DEPTH): boolean {
  if (typeof value !== "object" || value === null) return false;
  if (levels === 0) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const member: unknown = value[i];
      if (typeof member === "object" && member !== null && nestedDeeperThan(member, levels - 1)) return true;
    }
    return false;
  }
  // for...in, not Object.values: on objects JSON.parse has just made it is the cheaper of the two (no array per object).
  // It also visits inherited enumerable members, so containers are checked to be own ones.
  for (const key in value) {
    const member: unknown = (value as Record<string, unknown>)[key];
    if (typeof member === "object" && member !== null && Object.hasOwn(value, key) && nestedDeeperThan(member, levels - 1)) return true;
  }
  return false;
}

/**
 * A copy of `value` with each object or array `levels` or more below it replaced by {@link CUT_DEPTH_MARKER}: what a
 * quarantine can store of a record nested too deep ({@link nestedDeeperThan} is false for it). Own `__proto__` members
 * stay members.
 */
export function cutToDepth(value: unknown, levels = MAX_RECORD_DEPTH): unknown {
  if (typeof value !== "object" || value === null) return value;
  if (levels === 0) return CUT_DEPTH_MARKER;
  if (Array.isArray(value)) return value.map((member) => cutToDepth(member, levels - 1));
  return Object.fromEntries(Object.entries(value).map(([key, member]) => [key, cutToDepth(member, levels - 1)]));
}

/** Outcome of validating one raw record. */
export type ValidationResult =
  | { readonly success: true; readonly data: Record<string, unknown> }
  | { readonly success: false; readonly reason: string };

/** Validates one raw record; must not throw and must not put input values (PII) in `reason`. */
export type ItemValidator = (raw: unknown) => ValidationResult;

/** Validators per entity kind. */
export interface Validators {
  readonly transaction: ItemValidator;
  readonly card: ItemValidator;
}

/** Anything with a zod-like `safeParse`. */
export interface SafeParseSchema {
  safeParse(input: unknown):
    | { success: true; data: unknown }
    | { success: false; error: { issues: readonly { path: readonly PropertyKey[]; message: string }[] } };
}

/** Accepts a plain object whose `id` is a non-empty string: the least the engine needs to diff and acknowledge. */
export const requireObjectWithId: ItemValidator = (raw) => {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return { success: false, reason: "not an object" };
  const id = (raw as Record<string, unknown>)["id"];
  if (typeof id !== "string" || id === "") return { success: false, reason: "id: missing or not a non-empty string" };
  return { success: true, data: raw as Record<string, unknown> };
};

/**
 * The engine's card check: `base` (the plugged validator, else {@link requireObjectWithId}), then a string
 * `status`. Every card event carries one (docs/events/card.*.json) and spec §2.3 types it as a string, so a card
 * without one is quarantined rather than published against the schema, whatever the plugged validator allows.
 *
 * @example
 * ```ts
 * cardValidator()({ id: "CA1", status: null }); // { success: false, reason: "status: missing or not a string" }
 * ```
 */
export function cardValidator(base: ItemValidator = requireObjectWithId): ItemValidator {
  return (raw) => {
    const result = base(raw);
    if (!result.success || typeof result.data["status"] === "string") return result;
    return { success: false, reason: "status: missing or not a string" };
  };
}

/**
 * Wraps a zod schema as an {@link ItemValidator}: issues become `path: message` lines (no input values),
 * and the parsed value must still be an object with a string id.
 *
 * @example
 * ```ts
 * const validators = { transaction: schemaValidator(TransactionSchema), card: schemaValidator(ErpCardSchema) };
 * ```
 */
export function schemaValidator(schema: SafeParseSchema): ItemValidator {
  return (raw) => {
    let result: ReturnType<SafeParseSchema["safeParse"]>;
    try {
      result = schema.safeParse(raw);
    } catch (err) {
      return { success: false, reason: `validator threw: ${err instanceof Error ? err.name : "error"}` };
    }
    if (!result.success) {
      const reason = result.error.issues
        .slice(0, 10)
        .map((issue) => `${issue.path.map(String).join(".") || "(root)"}: ${issue.message}`)
        .join("; ");
      return { success: false, reason: reason || "invalid" };
    }
    return requireObjectWithId(result.data);
  };
}

/**
 * Whether a stored snapshot's `sequence` can be used: absent (a snapshot from before sequences), or a whole number of
 * at least 0. Adapters report anything else as a corrupt snapshot, so no event carries a broken `subject.sequence`.
 *
 * @example
 * ```ts
 * if (!isSnapshotSequence(item.sequence)) throw new CorruptItemError(...);
 * ```
 */
export function isSnapshotSequence(value: unknown): boolean {
  return value === undefined || (Number.isSafeInteger(value) && (value as number) >= 0);
}
