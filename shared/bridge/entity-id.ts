/**
 * The one check on the id a record the bridge could not take names, before it becomes a quarantine record's
 * `entityId` and reaches log lines and the re-drive's output: whatever a broken record carries in `id` is the
 * provider's, unchecked, and may be anything (an email, a name), while `id` is no personal field and escapes the PII
 * mode.
 */
import type { EntityKind } from "./ports.js";
import { isAcknowledgeableId } from "./transaction-ids.js";

/**
 * A card id as the bridge names it: `CA` (spec §2.1), then letters, digits, `_` or `-` only, 256 characters at most
 * (MAX_REFERENCE_LENGTH). Stricter than the card schema, which takes any characters after `CA` but blanks and control
 * characters: the spec leaves them open, and an email or a name after `CA` is no id to log (docs/spec-gaps.md).
 */
const CARD_ID = /^CA[A-Za-z0-9_-]{1,254}$/;

/**
 * `id` when it has the provider's id form for `kind` (a transaction's: a UUID, spec §2.1; a card's: {@link CARD_ID}),
 * else none: such a record is quarantined without an entity id, found again by its quarantine id (a hash of its body),
 * and re-driven only when it has one (a transaction's UUID, which is what the re-drive reads it by).
 *
 * @example
 * ```ts
 * wellFormedEntityId("transaction", "00000000-0000-4000-8000-000000000001"); // the same
 * wellFormedEntityId("card", "ann@example.com"); // undefined
 * ```
 */
export function wellFormedEntityId(kind: EntityKind, id: unknown): string | undefined {
  if (typeof id !== "string") return undefined;
  const wellFormed = kind === "transaction" ? isAcknowledgeableId(id) : CARD_ID.test(id);
  return wellFormed ? id : undefined;
}
