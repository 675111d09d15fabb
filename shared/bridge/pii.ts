/**
 * Personal data (cardholders, approvers, other employees: {@link PERSONAL_FIELDS}), handled per tenant setting before
 * anything is diffed, stored or published.
 */
import { BridgeConfigurationError } from "./errors.js";
import { isJsonObject } from "../json-object.js";
import { canonicalJson, hasLoneSurrogate, hmacSha256Hex } from "./hash.js";
import { cutToDepth, nestedDeeperThan } from "./validate.js";

/** How personal fields leave the provider: as is, replaced by a marker, or as a salted hash. */
export const PII_MODES = ["full", "redact", "hash"] as const;
export type PiiMode = (typeof PII_MODES)[number];

/**
 * Shortest salt of `hash` mode the settings take (local `BRIDGE_PII_SALT`, the secret's `pii_salt`): a short salt makes
 * the pseudonyms brute-forceable from one known email. The stack generates 48 characters, onboarding 43.
 */
export const PII_SALT_MIN_LENGTH = 16;

/**
 * What is wrong with a `hash` salt setting, as the end of "<setting> …" (never the salt), or undefined when it is
 * usable: too short, or holding a lone UTF-16 surrogate (JSON's `"\ud800"`), which the HMAC key's UTF-8 turns into
 * U+FFFD, so that salts differing only there would hash alike and a salt's pseudonyms depend on how it was encoded.
 *
 * @example
 * piiSaltProblem("short"); // "must be at least 16 characters"
 */
export function piiSaltProblem(salt: string): string | undefined {
  if (salt.length < PII_SALT_MIN_LENGTH) return `must be at least ${PII_SALT_MIN_LENGTH} characters`;
  return saltTextProblem(salt);
}

/**
 * The part of {@link piiSaltProblem} every policy is held to, the settings' or a library caller's
 * ({@link assertPiiPolicy}): the length minimum is the settings' alone.
 */
function saltTextProblem(salt: string): string | undefined {
  if (hasLoneSurrogate(salt)) return "must be well-formed text: it holds a lone UTF-16 surrogate (\\ud800-\\udfff), which hashes as U+FFFD";
  return undefined;
}

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

/**
 * The personal fields of the provider's objects, as paths: `a` is a top-level member, `a.b` member `b` of the object
 * `a`, `a[].b` member `b` of each object in the array `a`. The value a path names is masked whole, whatever its type
 * (an address object becomes one marker or one hash). In every object inside a record, at any depth (a parent of a
 * nested path such as `approved_by` or `cardholder`, and any other: `line_items[]`, `erp_supplier`, ...), the whole
 * table applies too ({@link PERSONAL_RULE}): a cardholder's `user_email` or a line item's `employee_id` is masked as
 * the record's own would be, as a quarantined body masks it. Taken from the provider spec
 * (`../shared/spec/provider-api.md`, sections cited below); what is left out on purpose (provider user ids, card names,
 * free text) is listed in docs/events.md, "PII modes", and a test holds that list and this table equal.
 */
export const PERSONAL_FIELDS: readonly string[] = Object.freeze([
  // §2.2 "Card and holder": the cardholder's name and email (rule 4) and employee id (§4.3: "cardholder's employee
  // identifier"; an HR key, so next to a hashed name it would undo the pseudonym).
  "card_holder_name",
  "card_holder_email",
  "employee_id",
  // §2.2 nested shapes, approved_by { user_external_id, name }: the approver, an employee. Their employee id too, when
  // sent: a quarantined body masks it (the record's rule inside a member masked), so events must not carry it in clear.
  // And their email, when sent: it names the employee as the name does (cardholders' and managers' emails are shown).
  "approved_by.name",
  "approved_by.employee_id",
  "approved_by.email",
  // §2.3 cardholder { name, email, employee_id }.
  "cardholder.name",
  "cardholder.email",
  "cardholder.employee_id",
  // §2.4, the operational card: the cardholder (user_*, user_profile), postal addresses and the step-up delegate's
  // profile. The spec shows no members for the last three, so they are masked whole.
  "user_name",
  "user_email",
  "user_profile.first_name",
  "user_profile.last_name",
  "user_profile.fullname",
  "user_profile.user_name",
  "user_profile.email",
  "user_profile.user_email",
  "user_profile.employee_id",
  "shipping_address",
  "return_address",
  "shipping_details.shipping_address",
  "shipping_details.return_address",
  "step_up_auth_delegated_user_profile",
  // §2.5 pool account: created_by { user_id, name }, account_managers[] { user_id, name, email }. The creator's email
  // too, when sent, as the managers' beside it.
  "created_by.name",
  "created_by.email",
  "account_managers[].name",
  "account_managers[].email",
  // §2.4 shows a person's first and last name and full name only in user_profile, and §2.3-§2.5 an email only in a
  // cardholder, a profile or a manager; sent anywhere else (a top-level `first_name`, a `cardholder.last_name`, a line
  // item's `email`: the schemas keep members the spec does not show), they still name a person, so they are masked in
  // every object. Not a bare `name`: outside the objects of people above it names a segment, a company or a file.
  "first_name",
  "last_name",
  "fullname",
  "email",
]);

/**
 * How {@link PERSONAL_FIELDS} applies beyond its paths: part of conform-pii's fingerprint of what this version masks,
 * so change it with the rule (a cursor of a version that masked less inside the parents must be refused).
 */
export const PERSONAL_RULE = "in every object at any depth the record's rule, inside each parent of a nested path its members listed too";

/**
 * Personal members of one parent member: of the object itself, or of each object in the array (`each`). `members` are
 * those the record's rule, which applies inside the parent too, does not already mask.
 */
interface NestedFields {
  readonly parent: string;
  readonly each: boolean;
  readonly members: readonly string[];
}

/** {@link PERSONAL_FIELDS} compiled once: top-level members, then the parents of nested ones. */
const { top: TOP_LEVEL_FIELDS, nested: NESTED_FIELDS } = compile(PERSONAL_FIELDS);

/** The rule of a member masked whole, in {@link RULES}. */
const WHOLE = "whole";

/** What the record's rule does with a member, by its name: mask it whole, or apply a parent's members inside it. */
const RULES: ReadonlyMap<string, typeof WHOLE | NestedFields> = new Map<string, typeof WHOLE | NestedFields>([
  ...TOP_LEVEL_FIELDS.map((field) => [field, WHOLE] as const),
  ...NESTED_FIELDS.map((entry) => [entry.parent, entry] as const),
]);

/** The members of an object that is no parent: the record's rule alone. */
const NO_MEMBERS: readonly string[] = Object.freeze([]);

function compile(paths: readonly string[]): { top: readonly string[]; nested: readonly NestedFields[] } {
  const top: string[] = [];
  const nested = new Map<string, { parent: string; each: boolean; members: string[] }>();
  for (const path of paths) {
    const match = /^([a-z_]+)(?:(\[\])?\.([a-z_]+))?$/.exec(path);
    if (!match) throw new Error(`PII path "${path}" is not "a", "a.b" or "a[].b"`);
    const [, parent = "", each, member] = match;
    if (member === undefined) {
      top.push(parent);
      continue;
    }
    const entry = nested.get(parent) ?? { parent, each: each !== undefined, members: [] };
    if (entry.each !== (each !== undefined)) throw new Error(`PII path "${path}": "${parent}" is both an object and an array`);
    entry.members.push(member);
    nested.set(parent, entry);
  }
  for (const field of top) if (nested.has(field)) throw new Error(`PII path "${field}" is masked whole and per member`);
  const ruled = new Set([...top, ...nested.keys()]);
  return { top, nested: [...nested.values()].map((entry) => ({ ...entry, members: entry.members.filter((member) => !ruled.has(member)) })) };
}

/** Checks a policy once, up front, so a cycle never starts with an unusable setting. */
export function assertPiiPolicy(policy: PiiPolicy): void {
  if (!(PII_MODES as readonly string[]).includes(policy.mode)) {
    throw new BridgeConfigurationError(`Unknown PII mode "${String(policy.mode)}"; use full, redact or hash`);
  }
  if (policy.mode !== "hash") return;
  if (typeof policy.salt !== "string" || policy.salt === "") throw new BridgeConfigurationError("PII mode hash needs a per-tenant salt");
  const problem = saltTextProblem(policy.salt);
  if (problem !== undefined) throw new BridgeConfigurationError(`The salt of PII mode hash ${problem}`);
}

/** What {@link piiSaltFingerprint} keys its HMAC over: a fixed label, so the fingerprint holds nothing personal. */
const SALT_FINGERPRINT_LABEL = "qashio-bridge pii salt fingerprint v1";

/**
 * A short fingerprint of a `hash` mode salt, to tell whether two salts are one without keeping the salt: 16 hex digits
 * of HMAC-SHA256 keyed by the salt over a fixed label. It names no person, so it tests no guess of one; testing a
 * guessed salt against it costs what testing it against any pseudonym and a known name already costs.
 *
 * @example
 * piiSaltFingerprint("0123456789abcdef"); // 16 lower-case hex digits, the same for the same salt
 */
export function piiSaltFingerprint(salt: string): string {
  return hmacSha256Hex(salt, SALT_FINGERPRINT_LABEL).slice(0, 16);
}

/**
 * What a store's recorded salt fingerprint calls for, given the fingerprint of the salt a caller is about to hash with:
 * - `same`: nothing to do (or the caller does not hash: `given` undefined, so a recorded one stays for a return to `hash`);
 * - `record`: the store records none yet (a first hashed run, or a store from before fingerprints: no refusal on
 *   upgrade), or the caller switches salts on purpose (`newSalt`);
 * - `differs`: refuse while the store holds snapshots, whose pseudonyms are of the recorded salt; record otherwise.
 * Local mode (binding.json) and AWS (the table's salt item) both decide by it.
 *
 * @example
 * if (piiSaltVerdict(recorded, piiSaltFingerprint(salt)) === "differs" && (await holdsSnapshots())) throw refusal;
 */
export function piiSaltVerdict(recorded: string | undefined, given: string | undefined, options: { readonly newSalt?: boolean } = {}): "same" | "record" | "differs" {
  if (given === undefined || given === recorded) return "same";
  return recorded === undefined || options.newSalt === true ? "record" : "differs";
}

/** Hashes per policy: the same few cardholders recur on every page, and an HMAC costs more than a lookup. */
const hashCache = new WeakMap<PiiPolicy, Map<string, string>>();
const HASH_CACHE_LIMIT = 10_000;

/** True for a value some policy already masked: the redact marker or a hash in the exact form `transform` writes. */
function isMasked(value: unknown): boolean {
  return value === REDACTED || (typeof value === "string" && HASHED.test(value));
}

/** A character outside ASCII: only text holding one can be in another Unicode form than NFC (a cheap test first). */
const NON_ASCII = /[\u0080-\uffff]/;

/**
 * The text a personal value is hashed as, one text per person. Unicode text is taken in NFC: a name typed with
 * combining marks (NFD, e + U+0301, as macOS and some HR exports write it) and the precomposed one are one name, and
 * NFC leaves NFC text (and ASCII) as it is, so pseudonyms already published stay. A value that is not a string (an
 * address object, or a record bound for quarantine with `{"full": "Ann"}` for a name) is no less personal: it is
 * hashed as its canonical JSON text, keys sorted at every level, since the provider may send one address with its
 * keys in another order (an object whose keys come sorted gives the text it always gave). Strings are trimmed;
 * emails are case-insensitive, so lower-cased.
 */
function hashInput(field: string, value: unknown): string {
  const raw = typeof value === "string" ? value : canonicalJson(value);
  const text = NON_ASCII.test(raw) ? raw.normalize("NFC") : raw;
  if (typeof value !== "string") return text;
  return field.endsWith("email") ? text.trim().toLowerCase() : text.trim();
}

/** `keepMasked`: leave values already masked as they are (a hash of a hash, or of the marker, would be a new pseudonym). */
function transform(field: string, value: unknown, policy: PiiPolicy, keepMasked: boolean): unknown {
  if (value === null || value === undefined || value === "") return value;
  if (policy.mode === "redact") return REDACTED;
  if (keepMasked && isMasked(value)) return value;
  const text = hashInput(field, value);
  let cache = hashCache.get(policy);
  if (!cache) {
    // applyPii and the body functions are public: a policy no cycle checked must not hash with an empty key (a
    // pseudonym anyone can recompute) nor take an unknown mode for `hash`.
    assertPiiPolicy(policy);
    hashCache.set(policy, (cache = new Map()));
  }
  let hashed = cache.get(text);
  if (hashed === undefined) {
    hashed = HASH_PREFIX + hmacSha256Hex(policy.salt as string, text);
    if (cache.size >= HASH_CACHE_LIMIT) cache.clear();
    cache.set(text, hashed);
  }
  return hashed;
}

/**
 * Handles the personal fields of `target` in place, replacing values of existing members only (member order holds);
 * nested objects and arrays holding a personal value are replaced by copies, never mutated.
 * Only for objects the caller owns (e.g. a fresh copy made while normalising).
 */
export function applyPiiInPlace(target: Record<string, unknown>, policy: PiiPolicy): void {
  if (policy.mode !== "full") maskFields(target, NO_MEMBERS, policy, false, true);
}

/**
 * `source` with its personal fields handled: written into `source` itself (`inPlace`, for fresh objects), or into a
 * copy (same member order) made on the first change, for stored ones: `source` itself when nothing changes. A changed
 * nested object or array is a copy; what `source` holds is never mutated. The record's rule holds in every object
 * below too, at any depth ({@link PERSONAL_RULE}), and in a parent of a nested path its own `members` as well, as a
 * quarantined body is masked. Per object: one table look-up per member present, and a walk into each member holding an
 * object or array (a parent's: {@link maskParent}).
 */
function maskFields(
  source: Readonly<Record<string, unknown>>,
  members: readonly string[],
  policy: PiiPolicy,
  keepMasked: boolean,
  inPlace: boolean,
): Readonly<Record<string, unknown>> {
  let out = inPlace ? (source as Record<string, unknown>) : undefined;
  // Object.keys and Object.values, not a read per key in for...in nor per field of the table: several times cheaper
  // on objects of many shapes. No closure per object either (tsx names each one made, which costs more than the walk).
  const keys = Object.keys(source);
  const values = Object.values(source);
  for (let i = 0; i < keys.length; i++) {
    const value = values[i];
    if (value === undefined || value === null) continue;
    const key = keys[i] as string;
    const rule = RULES.get(key);
    let replacement: unknown;
    if (rule === WHOLE) replacement = transform(key, value, policy, keepMasked);
    else if (rule !== undefined) replacement = maskParent(rule, value, policy, keepMasked);
    else if (typeof value === "object") replacement = maskNested(value, policy, keepMasked);
    else continue;
    if (replacement !== value) (out ??= { ...source })[key] = replacement;
  }
  for (const member of members) {
    const value = source[member];
    const masked = transform(member, value, policy, keepMasked);
    if (masked !== value) (out ??= { ...source })[member] = masked;
  }
  return out ?? source;
}

/** A member the table does not name, holding an object or array: each plain object in it, at any depth, as a record. */
function maskNested(value: object, policy: PiiPolicy, keepMasked: boolean): unknown {
  if (Array.isArray(value)) return maskElements(value, undefined, policy, keepMasked);
  return isJsonObject(value) ? maskFields(value, NO_MEMBERS, policy, keepMasked, false) : value;
}

/** A parent of a nested path: its members and the record's rule inside it, or the whole value when of another shape. */
function maskParent(rule: NestedFields, value: unknown, policy: PiiPolicy, keepMasked: boolean): unknown {
  // Not the shape the spec shows: whatever it holds may be a person, so it is handled whole.
  if (rule.each !== Array.isArray(value) || typeof value !== "object") return transform(rule.parent, value, policy, keepMasked);
  if (!rule.each) return maskFields(value as Record<string, unknown>, rule.members, policy, keepMasked, false);
  return maskElements(value as readonly unknown[], rule, policy, keepMasked);
}

/**
 * `list` with its elements masked: `list` itself when none changes, else a copy. In a parent's array (`parent`), each
 * object with the parent's members and any other element whole; elsewhere, objects and arrays at any depth.
 */
function maskElements(list: readonly unknown[], parent: NestedFields | undefined, policy: PiiPolicy, keepMasked: boolean): readonly unknown[] {
  let copy: unknown[] | undefined;
  for (let i = 0; i < list.length; i++) {
    const element = list[i];
    let masked: unknown = element;
    if (parent !== undefined) {
      masked = isJsonObject(element) ? maskFields(element, parent.members, policy, keepMasked, false) : transform(parent.parent, element, policy, keepMasked);
    } else if (typeof element === "object" && element !== null) {
      masked = maskNested(element, policy, keepMasked);
    }
    if (masked === element) continue;
    copy ??= list.slice();
    copy[i] = masked;
  }
  return copy ?? list;
}

/** `list` with each element put through `fn`: `list` itself when `fn` changes none, else a copy. */
function mapChanged(list: readonly unknown[], fn: (element: unknown) => unknown): readonly unknown[] {
  let copy: unknown[] | undefined;
  for (let i = 0; i < list.length; i++) {
    const mapped = fn(list[i]);
    if (mapped === list[i]) continue;
    copy ??= list.slice();
    copy[i] = mapped;
  }
  return copy ?? list;
}

/**
 * Returns `object` with its personal fields ({@link PERSONAL_FIELDS}) handled per `policy` (a shallow copy; the input
 * is never mutated). Null, absent and empty values are left as they are; a value of the wrong type is handled whole.
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
 * A quarantined body under `policy`. Bad input can have any shape: the record inside an array, wrapped in another
 * object, or sent as JSON text. So, beyond the paths of a record, every plain object in the body, at any depth, is
 * handled as a record is (a wrapped record's cardholder is masked); a string holding a JSON object or array, wherever
 * it is, is handled as that body and written back as JSON text; and any other string outside every object (the body
 * itself, or an array's element) is masked whole. Under `full`, `raw` itself. Copies what it changes; `raw` is never
 * mutated. Bodies are cut to MAX_RECORD_DEPTH before they get here; so is the JSON text read here.
 *
 * @example
 * ```ts
 * applyPiiToBody([{ card_holder_name: "Ann" }], { mode: "redact" }); // [{ card_holder_name: "[redacted]" }]
 * applyPiiToBody('{"id":"t1","card_holder_name":"Ann"}', { mode: "redact" }); // '{"id":"t1","card_holder_name":"[redacted]"}'
 * applyPiiToBody("Ann Holder", { mode: "redact" }); // "[redacted]"
 * ```
 */
export function applyPiiToBody(raw: unknown, policy: PiiPolicy): unknown {
  return policy.mode === "full" ? raw : maskBody(raw, policy, true, false);
}

/**
 * A body held under an earlier PII setting (a quarantine record's), brought to `policy` as {@link applyPiiToBody}
 * masks a body, except that values already masked stay as they are (no hash of a hash), as {@link conformPii} does for
 * snapshots: run again, it changes nothing.
 *
 * @example
 * ```ts
 * conformPiiToBody({ card_holder_name: "[redacted]", cardholder: { name: "Ann" } }, { mode: "hash", salt }); // only Ann hashed
 * ```
 */
export function conformPiiToBody(raw: unknown, policy: PiiPolicy): unknown {
  return policy.mode === "full" ? raw : maskBody(raw, policy, true, true);
}

/** `object` as a record under `policy`, always a copy of its own: {@link applyPii}, or with `keepMasked` {@link conformPii}. */
function recordCopy(object: Record<string, unknown>, policy: PiiPolicy, keepMasked: boolean): Record<string, unknown> {
  return keepMasked ? { ...conformPii(object, policy) } : applyPii(object, policy);
}

/** JSON text inside JSON text unwrapped at most this often (a record encoded twice or three times). */
const TEXT_UNWRAP_LIMIT = 3;

/**
 * The JSON object or array `text` holds (as parsed, any depth; also when encoded more than once, as a JSON string of
 * it), or undefined when it holds none.
 */
function bodyInText(text: string): object | undefined {
  let current: unknown = text;
  for (let round = 0; round < TEXT_UNWRAP_LIMIT && typeof current === "string"; round += 1) {
    const first = current.trimStart()[0];
    if (first !== "{" && first !== "[" && first !== '"') return undefined;
    try {
      current = JSON.parse(current);
    } catch {
      return undefined;
    }
  }
  return typeof current === "object" && current !== null ? current : undefined;
}

/** Every key on a path of {@link PERSONAL_FIELDS}: personal members and the members that hold them. */
const PERSONAL_PATH_KEYS: readonly string[] = [...new Set(PERSONAL_FIELDS.flatMap((field) => field.replaceAll("[]", "").split(".")))];

/**
 * Whether JSON text may name a personal member: a key on a personal path, written plainly, or any `\u` escape (which
 * can spell one: `card\u005fholder_email`). Such text may give a key twice, whose first value JSON.parse drops, so it
 * is never kept as sent.
 */
function namesPersonalKey(text: string): boolean {
  return text.includes("\\u") || PERSONAL_PATH_KEYS.some((key) => text.includes(`"${key}"`));
}

/**
 * `loose`: strings here are outside any object, so masked whole unless they hold JSON. `keepMasked`: values already
 * masked stay as they are (see {@link conformPiiToBody}).
 */
function maskBody(value: unknown, policy: PiiPolicy, loose: boolean, keepMasked: boolean): unknown {
  if (typeof value === "string") {
    const inText = bodyInText(value);
    if (inText === undefined) return loose ? transform("", value, policy, keepMasked) : value;
    // Text nested too deep is written back cut (what lay below the cut is not kept, so nothing personal either).
    // Other text stays as sent, byte for byte (its numbers and escapes too), when masking changed nothing and it names
    // no personal field: one that does may give a key twice, whose first value JSON.parse drops, so it is written
    // back as the masked JSON.
    if (nestedDeeperThan(inText)) return JSON.stringify(maskBody(cutToDepth(inText), policy, true, keepMasked));
    const masked = JSON.stringify(maskBody(inText, policy, true, keepMasked));
    return masked === JSON.stringify(inText) && !namesPersonalKey(value) ? value : masked;
  }
  if (Array.isArray(value)) return mapChanged(value, (element) => maskBody(element, policy, loose, keepMasked));
  if (!isJsonObject(value)) return value;
  const record = recordCopy(value, policy, keepMasked);
  maskBeyondPaths(value, record, policy, keepMasked);
  return record;
}

/**
 * Handles what a record's paths did not reach, writing into `masked` (a copy the paths made of `original`): a member
 * they left as it was goes through {@link maskBody}; one they replaced by a copy (an approver, a cardholder: the
 * paths applied the record's rule inside it already) is walked the same way, so nothing is masked twice (no hash of a
 * hash) and nothing nested in it stays in clear.
 */
function maskBeyondPaths(original: object, masked: Record<string, unknown>, policy: PiiPolicy, keepMasked: boolean): void {
  for (const [key, member] of Object.entries(original)) {
    if (member === null || (typeof member !== "object" && typeof member !== "string")) continue;
    const now = masked[key];
    if (now === member) {
      setMember(masked, key, maskBody(member, policy, false, keepMasked), member);
    } else if (typeof member === "object" && typeof now === "object" && now !== null) {
      maskBeyondPaths(member, now as Record<string, unknown>, policy, keepMasked);
    }
  }
}

/** Puts `next` in `target[key]` when it differs from `previous` (an own data member, `__proto__` included). */
function setMember(target: Record<string, unknown>, key: string, next: unknown, previous: unknown): void {
  if (next !== previous) Object.defineProperty(target, key, { value: next, enumerable: true, writable: true, configurable: true });
}

/**
 * Returns a stored object (a snapshot written under an earlier PII setting) with its personal fields brought to
 * `policy`, so a diff against a newly pulled object carries no cleartext in `before` and reports no change for
 * cleartext that was merely masked. Values already masked stay as they are: `"[redacted]"` cannot be hashed back into
 * a pseudonym, and an existing hash (another salt, perhaps) is not hashed again, so those still differ from the new
 * form once (see docs/events.md, PII). A snapshot written by an earlier version of the bridge, which masked fewer
 * fields (not `employee_id` nor `approved_by.name`), is brought to the current table the same way, so the upgrade
 * publishes no change either.
 *
 * Copy on change: an object that already conforms (always so under `full`) is returned itself, so `!==` tells a
 * caller whether it changed; otherwise the result is a copy, and so is each nested object or array on the way to a
 * changed value, while the rest is shared with `stored`. `stored` is never mutated; nor may the result be, as it can
 * be `stored` or share its members.
 *
 * @example
 * ```ts
 * conformPii({ card_holder_name: "Ann" }, { mode: "redact" }); // { card_holder_name: "[redacted]" }, a copy
 * conformPii(stored, { mode: "hash", salt }) === stored; // true when no personal field of stored needs masking
 * ```
 */
export function conformPii(stored: Readonly<Record<string, unknown>>, policy: PiiPolicy): Readonly<Record<string, unknown>> {
  if (policy.mode === "full") return stored;
  return maskFields(stored, NO_MEMBERS, policy, true, false);
}
