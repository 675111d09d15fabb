/**
 * Building blocks shared by the resource schemas: identifiers, and lenient
 * scalars that normalise the string-typed values some responses carry (§2.4).
 */
import * as z from "zod";

/** UUID-shaped id (8-4-4-4-12 hex; version bits not enforced, see docs/spec-gaps.md). */
export const UuidSchema = z.guid();

/** Transaction `id` (§2.1): a UUID. */
export const TransactionIdSchema = UuidSchema;

/**
 * Longest provider reference (`qashio_id`, card id) taken; the spec shows about a dozen characters. References become
 * storage keys (DynamoDB refuses a partition key over 2048 bytes, failing the whole batch), so a longer one is a broken
 * record: quarantined, not a tenant stuck at the page that holds it.
 */
export const MAX_REFERENCE_LENGTH = 256;

/**
 * A provider reference: `prefix`, then characters that are neither blank nor control characters, in well-formed
 * Unicode. References are keys, request paths and log values: a lone surrogate cannot be put in a URL (every read of
 * it failed, on every walk), and an ESC or a line break in a key is no reference but a broken record.
 */
function reference(prefix: "CT" | "CA") {
  return z
    .string()
    .max(MAX_REFERENCE_LENGTH)
    // In a `u` pattern a lone surrogate is a code point of category Cs; a pair is one character of its own.
    .regex(new RegExp(`^${prefix}[^\\s\\p{Cc}\\p{Cs}]+$`, "u"), `must start with ${prefix}, then no blank, control character or lone surrogate`);
}

/** Transaction `qashio_id` (§2.1): a string starting with `CT`. */
export const QashioIdSchema = reference("CT");

/** Card id (§2.1): a string starting with `CA`. */
export const CardIdSchema = reference("CA");

const NUMERIC = /^\s*-?\d+(\.\d+)?\s*$/;
const BOOLEAN_TEXT = /^(true|false)$/i;

/** Empty string sent for an absent value, read as `null`. */
const emptyAsNull = z.codec(z.literal(""), z.null(), { decode: () => null, encode: () => "" as const });

/** A number, or a numeric string normalised to a number. */
export const numberish = () =>
  z.union([
    z.number(),
    z.codec(z.string().regex(NUMERIC), z.number(), { decode: (s) => Number(s), encode: (n) => String(n) }),
  ]);

/** A boolean, or `"true"`/`"false"` (any case) normalised to a boolean. */
export const booleanish = () =>
  z.union([
    z.boolean(),
    z.codec(z.string().regex(BOOLEAN_TEXT), z.boolean(), {
      decode: (s) => s.toLowerCase() === "true",
      encode: (b) => String(b),
    }),
  ]);

/*
 * The optional field schemas below are built once and shared: the resource schemas use them for several hundred
 * fields, and a fresh instance per field (about 3 to 9 zod schemas each) made up most of the zod work of a cold start.
 * Zod schemas are immutable (every method returns a new instance), so one instance serves every field alike.
 */
// What each accepts, said in a quarantine reason in place of zod's bare "Invalid input" for a union (never the value).
const OPT_NUMBER = z.union([numberish(), emptyAsNull], { error: 'expected a number, or a decimal number as text ("12.50", "-3"), "" or null' }).nullish();
const OPT_BOOLEAN = z.union([booleanish(), emptyAsNull], { error: 'expected a boolean, or true or false as text in any letter case, "" or null' }).nullish();
const OPT_STRING = z.string().nullish();

/** Optional number: number, numeric string, `null`, `""` (→ null) or absent. */
export const optNumber = () => OPT_NUMBER;

/** Optional boolean: boolean, `"true"`/`"false"`, `null`, `""` (→ null) or absent. */
export const optBoolean = () => OPT_BOOLEAN;

/** Optional string: string, `null` or absent. */
export const optString = () => OPT_STRING;

/** A string, or a number turned into text by `decode`. */
const textOrNumber = (decode: (n: number) => string) =>
  z.union([z.string(), z.codec(z.number(), z.string(), { decode, encode: (s) => Number(s) })], { error: "expected text or a number" });

/** A string, or a number normalised to its decimal string (e.g. account numbers). */
export const stringish = () => textOrNumber((n) => String(n));

const OPT_STRINGISH = stringish().nullish();

/** Optional string that may arrive as a number. */
export const optStringish = () => OPT_STRINGISH;

/**
 * Text of a four-digit code (a card's last four, §8.2 rule 6; an ISO 18245 MCC) sent as a number: a whole number below
 * 10000 padded to its four digits, since the number `42` of a card ending `0042` (or MCC `0742`) has lost its zeros;
 * any other number its decimal text.
 */
function fourDigitText(n: number): string {
  return Number.isInteger(n) && n >= 0 && n < 10_000 ? String(n).padStart(4, "0") : String(n);
}

const FOUR_DIGIT_CODE = textOrNumber(fourDigitText);
const OPT_FOUR_DIGIT_CODE = FOUR_DIGIT_CODE.nullish();

/** A four-digit code (an MCC of a list): text as sent, or a number read as its four digits (`742` → `"0742"`). */
export const fourDigitCode = () => FOUR_DIGIT_CODE;

/** Optional four-digit code (last four, MCC): text as sent, or a number read as its four digits (`42` → `"0042"`). */
export const optFourDigitCode = () => OPT_FOUR_DIGIT_CODE;

/** Optional array of loose items, or `null`. */
export const optArray = <T extends z.ZodType>(item: T) => z.array(item).nullish();

/** ISO 8601 timestamp kept as the provider's string (format not enforced: lenient). */
export const timestamp = () => z.string();

/** Optional reference that may be sent as `null` or `""` (→ null). */
export const optRef = <T extends z.ZodType>(schema: T) => z.union([schema, emptyAsNull]).nullish();
