/**
 * Integers EventBridge refuses: PutEvents takes a JSON integer only within int64 (AWS PutEvents API reference), and
 * whether it then fails the entry or the whole call is not documented. A whole call refused would fail the cycle and
 * meet the same transaction again next cycle, so such an event is caught before sending.
 *
 * What counts is the `Detail` text as sent: JavaScript writes an integer below 1e21 in magnitude as digits (1e20 as
 * `100000000000000000000`) and one from 1e21 up in exponent form (`1e+21`). An exponent form is a JSON number but
 * not an integer literal (JSON parsers read it as a floating-point number, as they read `1.5e-7`), and the int64
 * constraint names integers only, so it is sent as it is; refusing it would quarantine values EventBridge is not
 * documented to refuse.
 */
import type { BridgeEventDetail } from "../bridge/ports.js";
import { escapePointerToken } from "../bridge/diff.js";

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
/** Below it a number's text has at most 18 digits, so lies within int64. */
const EIGHTEEN_DIGITS = 1e18;

/** Digits a literal outside int64 has at least: int64's bounds have 19. */
const LONG_RUN = 19;

const isDigit = (code: number): boolean => code >= 48 && code <= 57;

/**
 * Whether compact JSON `text` holds a run of 19 digits or more right after `:`, `,` or `[` (a minus sign between
 * allowed): where every number token of that length starts. A string value can hold one too
 * (`"ref:1234567890123456789"`), hence the walk to decide. Such a run covers one index in every 19, so only those are
 * read, and the run around a digit found there: some 3x faster than a regular expression over the text.
 */
function hasLongNumberToken(text: string): boolean {
  const end = text.length;
  for (let at = LONG_RUN - 1; at < end; at += LONG_RUN) {
    if (!isDigit(text.charCodeAt(at))) continue;
    let first = at;
    while (first > 0 && isDigit(text.charCodeAt(first - 1))) first--;
    let last = at + 1;
    while (last < end && isDigit(text.charCodeAt(last))) last++;
    if (last - first >= LONG_RUN) {
      const before = text.charAt(text.charAt(first - 1) === "-" ? first - 2 : first - 1);
      if (before === ":" || before === "," || before === "[") return true;
    }
    // A run of 19 after `last` (a non-digit) holds `last + 19`, the next index read: no digit is read twice.
    at = last;
  }
  return false;
}

/** An integer `Detail` writes as digits beyond int64. */
export interface OutOfRangeInteger {
  /** JSON Pointer into `detail`. */
  readonly path: string;
  /** The literal as written in `Detail`. */
  readonly text: string;
}

const outsideInt64 = (value: bigint): boolean => value < INT64_MIN || value > INT64_MAX;

/**
 * The JSON text of `value` when it is an integer literal outside int64, else `undefined`. Judged by the text, not the
 * double: JavaScript writes the shortest digits that read back as the same double, so -(2**63) goes out as
 * `-9223372036854776000`, below int64's minimum as written, while 2**63 - 1024 goes out as `9223372036854775000`.
 */
function outOfRangeLiteral(value: unknown): string | undefined {
  if (typeof value !== "number" || !Number.isFinite(value) || Math.abs(value) < EIGHTEEN_DIGITS) return undefined;
  const text = String(value);
  // Exponent form (1e+21 and up): not an integer literal, see the module comment. Past 2**53 a double has no fraction.
  return !text.includes("e") && outsideInt64(BigInt(text)) ? text : undefined;
}

/** An integer literal outside int64 under `value` (the first met), with its path. */
function findIn(value: unknown, path: string): OutOfRangeInteger | undefined {
  if (typeof value !== "object" || value === null) {
    const text = outOfRangeLiteral(value);
    return text === undefined ? undefined : { path, text };
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findIn(value[i], `${path}/${i}`);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  for (const [key, member] of Object.entries(value)) {
    const found = findIn(member, `${path}/${escapePointerToken(key)}`);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * An integer `detailText` (the JSON text of `detail`) writes outside int64, with its path, or `undefined` when none.
 * Cheap for the usual event: a scan of the text, the object walked only when the scan finds a long number token.
 *
 * @example
 * const found = outOfRangeIntegerIn(entry.Detail, detail); // { path: "/data/object/amount", text: "100000000000000000000" }
 */
export function outOfRangeIntegerIn(detailText: string, detail: BridgeEventDetail): OutOfRangeInteger | undefined {
  return hasLongNumberToken(detailText) ? findIn(detail, "") : undefined;
}
