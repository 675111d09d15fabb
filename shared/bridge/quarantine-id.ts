/**
 * Quarantine record ids and reasons: the same bad input found again, by any cycle or the re-drive and under any PII
 * mode or salt, maps to the one record, and the id carries no personal value.
 */
import { contentHash, sha256Hex, uuidFromHex } from "./hash.js";
import type { EntityKind } from "./ports.js";
import { applyPiiToBody, type PiiPolicy } from "./pii.js";
import { isJsonObject } from "../json-object.js";

/** Every personal field replaced by the same marker: the form of a body a quarantine id is computed from. */
const ID_FORM: PiiPolicy = Object.freeze({ mode: "redact" });

/** A quarantine record's reason: its cause, then what went wrong (the re-drive picks its records by the cause: isRedrivable). */
export function quarantineReason(cause: "validation" | "publish", reason: string): string {
  return `${cause}: ${reason}`;
}

/**
 * A transaction's raw body without the provider's sync bookkeeping (`client_sync_status`, which flips on every
 * acknowledge): the same bad version listed `not_synced`, listed `outdated` or read back `synced` by a re-drive is one
 * quarantine record, not three.
 */
export function withoutSyncStatus(raw: unknown): unknown {
  if (!isJsonObject(raw) || !Object.hasOwn(raw, "client_sync_status")) return raw;
  const { client_sync_status: _volatile, ...rest } = raw;
  return rest;
}

/**
 * The id of a quarantine record: tenant, entity kind, cause (`validation` or `publish`) and the content hash of the raw
 * body (a transaction's {@link withoutSyncStatus}) with every personal field (PERSONAL_FIELDS) redacted, in a body of any shape (applyPiiToBody), whatever the
 * tenant's PII mode and salt. So the same bad input found again keeps its id across a mode switch (full, redact, hash)
 * or a new salt, and the id carries no personal value: a hash over the cleartext would let anyone holding the stored
 * (masked) record confirm a guessed name or email by hashing it with the rest of the record, which is what `hash`
 * mode's secret salt prevents. A bridge version that masks more fields redacts those too, so a record found again after
 * such an upgrade gets a new id once (docs/runbook.md, QuarantineNotEmpty). The reason's text is left out: the same
 * input refused by a reworded check keeps its record. Two inputs that differ in personal values only share a record
 * (their redacted forms are alike).
 *
 * @example
 * ```ts
 * quarantineId("acme", "card", "validation", { id: "CA1", cardholder: { name: "Ann" } });
 * // the same id as for { id: "CA1", cardholder: { name: "[redacted]" } } or a hashed name
 * ```
 */
export function quarantineId(tenant: string, kind: EntityKind, cause: "validation" | "publish", raw: unknown): string {
  const form = applyPiiToBody(kind === "transaction" ? withoutSyncStatus(raw) : raw, ID_FORM);
  return uuidFromHex(sha256Hex(`${tenant}\u0000${kind}\u0000${cause}\u0000${contentHash(form)}`));
}
