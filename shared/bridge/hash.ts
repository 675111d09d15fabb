/**
 * Canonical JSON, content hashes and deterministic event ids.
 * {@link contentHash} sorts keys (order-independent); {@link recordHash} hashes a provider record in the key order it
 * came with, which is cheaper and stable for one provider (see docs/spec-gaps.md, Bridge engine).
 */
import * as crypto from "node:crypto";
import { createHash, createHmac } from "node:crypto";

/** Characters JSON.stringify escapes in a string (quotes, backslash, controls, lone surrogates). */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/**
 * JSON text of a string, as `JSON.stringify(text)` gives it; several times cheaper for the short ids, keys and
 * timestamps that need no escaping (a regex test instead of the generic serialiser).
 *
 * @example
 * ```ts
 * jsonString('say "hi"'); // '"say \\"hi\\""'
 * ```
 */
export function jsonString(text: string): string {
  return NEEDS_ESCAPE.test(text) ? JSON.stringify(text) : `"${text}"`;
}

/** `"key":` prefixes: provider objects repeat the same few hundred keys on every item. */
const memberPrefixes = new Map<string, string>();
const MEMBER_PREFIX_LIMIT = 10_000;

function memberPrefix(key: string): string {
  let prefix = memberPrefixes.get(key);
  if (prefix === undefined) {
    prefix = jsonString(key) + ":";
    if (memberPrefixes.size >= MEMBER_PREFIX_LIMIT) memberPrefixes.clear();
    memberPrefixes.set(key, prefix);
  }
  return prefix;
}

/**
 * Serialises `value` as JSON with object keys sorted, so equal data always gives equal text.
 * `undefined` object members are dropped (as JSON.stringify does); non-finite numbers become `null`.
 * Hot path (once per pulled item), hence hand-rolled rather than a generic replacer.
 *
 * @example
 * ```ts
 * canonicalJson({ b: 1, a: [true, null] }); // '{"a":[true,null],"b":1}'
 * ```
 */
export function canonicalJson(value: unknown): string {
  switch (typeof value) {
    case "string":
      return jsonString(value);
    case "number":
      return Number.isFinite(value) ? String(value) : "null";
    case "boolean":
      return value ? "true" : "false";
    case "bigint":
      return String(value);
    case "object": {
      if (value === null) return "null";
      if (Array.isArray(value)) {
        let out = "[";
        for (let i = 0; i < value.length; i++) {
          if (i > 0) out += ",";
          out += canonicalJson(value[i]);
        }
        return out + "]";
      }
      const record = value as Record<string, unknown>;
      const keys = Object.keys(record).sort();
      let out = "{";
      let first = true;
      for (const key of keys) {
        const member = record[key];
        if (member === undefined || typeof member === "function" || typeof member === "symbol") continue;
        if (!first) out += ",";
        first = false;
        out += memberPrefix(key) + canonicalJson(member);
      }
      return out + "}";
    }
    default:
      return "null";
  }
}

/**
 * JSON text of objects hashed by {@link contentHash} (canonical, sorted keys) or {@link recordHash} (the object's own
 * key order), so adapters can write it instead of serialising again. A hashed object is never changed afterwards.
 */
const serialised = new WeakMap<object, string>();

/**
 * JSON text of `value`: the text it was hashed as (sorted keys by contentHash, its own order by recordHash), else
 * `JSON.stringify`.
 * Adapters use it to serialise snapshot and event objects once per item instead of three times.
 *
 * @example
 * ```ts
 * const line = `{"object":${jsonOf(snapshot.object)}}`;
 * ```
 */
export function jsonOf(value: unknown): string {
  if (typeof value === "object" && value !== null) {
    const cached = serialised.get(value);
    if (cached !== undefined) return cached;
  }
  return JSON.stringify(value) ?? "null";
}

/**
 * Drops the text {@link jsonOf} keeps for `value`, once every adapter that writes it has; `jsonOf` then serialises it
 * again. Kept, the texts of a page lived as long as its objects, and young-generation GCs copied them.
 *
 * @example
 * ```ts
 * await snapshots.putMany(writes);
 * for (const item of items) releaseJson(item.object);
 * ```
 */
export function releaseJson(value: object): void {
  serialised.delete(value);
}

/** One-shot `crypto.hash` where the runtime has it (Node >= 20.12): cheaper than a Hash object per call. */
const oneShotHash = (crypto as { hash?: (algorithm: string, data: string, encoding: "hex") => string }).hash;

/** Hex sha-256 of a string. */
export function sha256Hex(text: string): string {
  return oneShotHash ? oneShotHash("sha256", text, "hex") : createHash("sha256").update(text).digest("hex");
}

/**
 * Content hash of a JSON value: hex sha-256 of its canonical JSON.
 *
 * @example
 * ```ts
 * contentHash({ a: 1, b: 2 }) === contentHash({ b: 2, a: 1 }); // true
 * ```
 */
export function contentHash(value: unknown): string {
  const text = canonicalJson(value);
  if (typeof value === "object" && value !== null) serialised.set(value, text);
  return sha256Hex(text);
}

/**
 * Content hash of a provider record as it is: hex sha-256 of `JSON.stringify(record)`, keys in the record's own order.
 * The text is kept for {@link jsonOf}, so the snapshot store and the event sink write it without serialising again.
 * The same provider output always gives the same hash; a key order change alone changes the hash but not
 * `diffObjects`, which the engine treats as "unchanged" (no event, snapshot rewritten).
 *
 * @example
 * ```ts
 * recordHash({ id: "t1", amount: 5 }); // sha-256 of '{"id":"t1","amount":5}'
 * ```
 */
export function recordHash(record: object): string {
  const text = JSON.stringify(record);
  serialised.set(record, text);
  return sha256Hex(text);
}

/** A surrogate not in a pair (JSON's `"\ud800"` parses to one): UTF-8 has no bytes for it. */
const LONE_SURROGATE = /\p{Cs}/u;

/** Whether `text` holds a lone surrogate ({@link LONE_SURROGATE}): as UTF-8, each becomes U+FFFD. */
export function hasLoneSurrogate(text: string): boolean {
  return LONE_SURROGATE.test(text);
}
/** A byte no UTF-8 text holds: it starts the input of ill-formed text, so that meets no well-formed text's bytes. */
const ILL_FORMED_MARK = Buffer.from([0xff]);

/**
 * Hex HMAC-SHA256 of `text` keyed with `key`. Well-formed text is taken as its UTF-8 bytes. Text holding a lone
 * surrogate is taken as byte 0xFF, then its JSON text (which escapes the surrogate): as UTF-8, each lone surrogate
 * became U+FFFD, so "Ann\ud800", "Ann\udbff" and "Ann\ufffd" were one pseudonym. Distinct texts, distinct inputs.
 */
export function hmacSha256Hex(key: string, text: string): string {
  const hmac = createHmac("sha256", key);
  if (hasLoneSurrogate(text)) hmac.update(ILL_FORMED_MARK).update(JSON.stringify(text));
  else hmac.update(text);
  return hmac.digest("hex");
}

/**
 * Formats the first 128 bits of a hex digest as an RFC 9562 UUIDv8 (custom, hash-based) string.
 *
 * @example
 * ```ts
 * uuidFromHex(sha256Hex("x")); // "2d711642-b726-8044-8162-7ca9fbac32f5": version nibble 8, variant 10xx
 * ```
 */
export function uuidFromHex(hex: string): string {
  const h = hex.slice(0, 32).padEnd(32, "0");
  const variant = ((parseInt(h.charAt(16), 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** What identifies one observed change: the same inputs always give the same event id. */
export interface EventIdentity {
  readonly tenant: string;
  readonly type: string;
  readonly subjectId: string;
  /** Content hash of the snapshot before the change; empty when there was none. */
  readonly beforeHash: string;
  /**
   * `updatedAt` of the snapshot before the change; empty when there was none. A later change back to an earlier
   * state (Active, Suspended, Active, Suspended) diffs against a newer version, so it is not taken for a re-send.
   */
  readonly beforeVersion: string;
  readonly afterHash: string;
}

/**
 * Deterministic event id: a UUID-shaped sha-256 of tenant, type, subject, the snapshot before (content hash and
 * version) and the content hash after. Re-publishing the same change after a crash diffs against the same snapshot,
 * so it gives the same id and consumers can deduplicate.
 *
 * @example
 * ```ts
 * eventId({ tenant: "acme", type: "transaction.created", subjectId: "7f…", beforeHash: "", beforeVersion: "", afterHash: "ab…" });
 * ```
 */
export function eventId(identity: EventIdentity): string {
  const { tenant, type, subjectId, beforeHash, beforeVersion, afterHash } = identity;
  // Appended last and only when present: ids of first sightings stay what they were before versions counted.
  const version = beforeVersion === "" ? "" : `\u0000${beforeVersion}`;
  return uuidFromHex(sha256Hex(`${tenant}\u0000${type}\u0000${subjectId}\u0000${beforeHash}\u0000${afterHash}${version}`));
}
