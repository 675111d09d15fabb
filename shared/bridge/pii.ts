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

/** A value as `transform` hashes it: the prefix and a lower-case hex HMAC-SHA256, nothing else. */
const HASHED = new RegExp(`^${HASH_PREFIX}[0-9a-f]{64}$`);

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

/** Hashes per policy: the same few cardholders recur on every page, and an HMAC costs more than a lookup. */
const hashCache = new WeakMap<PiiPolicy, Map<string, string>>();
const HASH_CACHE_LIMIT = 10_000;

/** True for a value some policy already masked: the redact marker or a hash in the exact form `transform` writes. */
function isMasked(value: unknown): boolean {
  return value === REDACTED || (typeof value === "string" && HASHED.test(value));
}

/** `keepMasked`: leave values already masked as they are (a hash of a hash, or of the marker, would be a new pseudonym). */
function transform(field: string, value: unknown, policy: PiiPolicy, keepMasked: boolean): unknown {
  if (value === null || value === undefined || value === "") return value;
  if (policy.mode === "redact") return REDACTED;
  if (keepMasked && isMasked(value)) return value;
  // A personal field of the wrong type (a record bound for quarantine, e.g. `{"full": "Ann"}`) is no less personal:
  // it is hashed as its JSON text. Emails are case-insensitive: hash the normalised form, one person, one hash.
  const text =
    typeof value !== "string" ? JSON.stringify(value) : field.endsWith("email") ? value.trim().toLowerCase() : value.trim();
  let cache = hashCache.get(policy);
  if (!cache) hashCache.set(policy, (cache = new Map()));
  let hashed = cache.get(text);
  if (hashed === undefined) {
    hashed = HASH_PREFIX + hmacSha256Hex(policy.salt ?? "", text);
    if (cache.size >= HASH_CACHE_LIMIT) cache.clear();
    cache.set(text, hashed);
  }
  return hashed;
}

/**
 * Handles the personal fields of `target` in place, replacing values of existing members only (member order holds);
 * nested objects are replaced by copies, never mutated.
 * Only for objects the caller owns (e.g. a fresh copy made while normalising).
 */
export function applyPiiInPlace(target: Record<string, unknown>, policy: PiiPolicy): void {
  if (policy.mode !== "full") maskInPlace(target, policy, false);
}

function maskInPlace(target: Record<string, unknown>, policy: PiiPolicy, keepMasked: boolean): void {
  for (const field of TOP_LEVEL_FIELDS) {
    if (field in target) target[field] = transform(field, target[field], policy, keepMasked);
  }
  for (const parent in NESTED_FIELDS) {
    const nested = target[parent];
    if (nested === null || nested === undefined) continue;
    if (typeof nested !== "object" || Array.isArray(nested)) {
      // Not the object the spec shows: whatever it holds may be the cardholder, so it is handled whole.
      target[parent] = transform(parent, nested, policy, keepMasked);
      continue;
    }
    const copy = { ...(nested as Record<string, unknown>) };
    for (const field of NESTED_FIELDS[parent] ?? []) {
      if (field in copy) copy[field] = transform(field, copy[field], policy, keepMasked);
    }
    target[parent] = copy;
  }
}

/**
 * Returns `object` with cardholder name and email handled per `policy` (a shallow copy; the input is never
 * mutated). Null, absent and empty values are left as they are; a value of the wrong type is handled whole.
 *
 * @example
 * ```ts
 * applyPii({ card_holder_name: "Ann" }, { mode: "redact" }); // { card_holder_name: "[redacted]" }
 * ```
 */
export function applyPii<T extends Record<string, unknown>>(object: T, policy: PiiPolicy): T {
  if (policy.mode === "full") return object;
  const copy: Record<string, unknown> = { ...object };
  applyPiiInPlace(copy, policy);
  return copy as T;
}

/**
 * Returns a stored object (a snapshot written under an earlier PII setting) with its personal fields brought to
 * `policy`, so a diff against a newly pulled object carries no cleartext in `before` and reports no change for
 * cleartext that was merely masked. Values already masked stay as they are: `"[redacted]"` cannot be hashed back into
 * a pseudonym, and an existing hash (another salt, perhaps) is not hashed again, so those still differ from the new
 * form once (see docs/events.md, PII). Under `full` the object is returned unchanged.
 *
 * @example
 * ```ts
 * conformPii({ card_holder_name: "Ann" }, { mode: "redact" }); // { card_holder_name: "[redacted]" }
 * conformPii({ card_holder_name: "[redacted]" }, { mode: "hash", salt }); // unchanged
 * ```
 */
export function conformPii(stored: Readonly<Record<string, unknown>>, policy: PiiPolicy): Record<string, unknown> {
  if (policy.mode === "full") return stored;
  const copy: Record<string, unknown> = { ...stored };
  maskInPlace(copy, policy, true);
  return copy;
}
