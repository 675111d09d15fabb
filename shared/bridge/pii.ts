/**
 * Personal data of cardholders, handled per tenant setting before anything is diffed, stored or published.
 */
import { BridgeConfigurationError } from "./errors.js";
import { hmacSha256Hex } from "./hash.js";

/** How cardholder name and email leave the provider: as is, replaced by a marker, or as a salted hash. */
export type PiiMode = "full" | "redact" | "hash";

/** A tenant's PII setting. */
export interface PiiPolicy {
  readonly mode: PiiMode;
  /** Per-tenant secret salt; required for `hash`. */
  readonly salt?: string;
}

/** Value that replaces a personal field under `redact`. */
export const REDACTED = "[redacted]";

/** Prefix of a hashed personal field under `hash`, so a consumer can tell a hash from a name. */
export const HASH_PREFIX = "hmac-sha256:";

/** Top-level personal fields (transaction list/detail and the operational card view). */
const TOP_LEVEL_FIELDS = ["card_holder_name", "card_holder_email", "user_name", "user_email"] as const;
/** Personal fields nested under an object member (the accounting card view's `cardholder`). */
const NESTED_FIELDS: Readonly<Record<string, readonly string[]>> = { cardholder: ["name", "email"] };

/** Checks a policy once, up front, so a cycle never starts with an unusable setting. */
export function assertPiiPolicy(policy: PiiPolicy): void {
  if (!["full", "redact", "hash"].includes(policy.mode)) {
    throw new BridgeConfigurationError(`Unknown PII mode "${String(policy.mode)}"; use full, redact or hash`);
  }
  if (policy.mode === "hash" && !policy.salt) {
    throw new BridgeConfigurationError("PII mode hash needs a per-tenant salt");
  }
}

function transform(field: string, value: unknown, policy: PiiPolicy): unknown {
  if (typeof value !== "string" || value === "") return value;
  if (policy.mode === "redact") return REDACTED;
  // Emails are case-insensitive: hash the normalised form so one person always maps to one hash.
  const text = field.endsWith("email") ? value.trim().toLowerCase() : value.trim();
  return HASH_PREFIX + hmacSha256Hex(policy.salt ?? "", text);
}

/**
 * Returns `object` with cardholder name and email handled per `policy` (a shallow copy when anything changes;
 * the input is never mutated). Non-string values (null, absent) are left as they are.
 *
 * @example
 * ```ts
 * applyPii({ card_holder_name: "Ann" }, { mode: "redact" }); // { card_holder_name: "[redacted]" }
 * ```
 */
export function applyPii<T extends Record<string, unknown>>(object: T, policy: PiiPolicy): T {
  if (policy.mode === "full") return object;
  let out: Record<string, unknown> | undefined;
  for (const field of TOP_LEVEL_FIELDS) {
    if (!(field in object)) continue;
    const next = transform(field, object[field], policy);
    if (next !== object[field]) (out ??= { ...object })[field] = next;
  }
  for (const [parent, fields] of Object.entries(NESTED_FIELDS)) {
    const nested = object[parent];
    if (typeof nested !== "object" || nested === null || Array.isArray(nested)) continue;
    const record = nested as Record<string, unknown>;
    let copy: Record<string, unknown> | undefined;
    for (const field of fields) {
      if (!(field in record)) continue;
      const next = transform(field, record[field], policy);
      if (next !== record[field]) (copy ??= { ...record })[field] = next;
    }
    if (copy) (out ??= { ...object })[parent] = copy;
  }
  return (out ?? object) as T;
}
