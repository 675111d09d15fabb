/**
 * The one check for a provider's field name or error code before it reaches an error message or a log line, used by
 * the provider client (on the error it throws) and by the engine (on what it logs of any ProviderPort's errors).
 */

/** Longest token logged as it is. */
export const MAX_LOG_TOKEN_LENGTH = 128;

/** An identifier, dotted or indexed (`page_size`, `transaction_ids.3`, `line_items[0].amount`, `NOT_FOUND`). */
const LOG_TOKEN = /^[A-Za-z_][A-Za-z0-9_]{0,63}(?:\.[A-Za-z0-9_]{1,64}|\[\d{1,9}\])*$/;

/**
 * True when `value` is a field name or error code fit for a log line: an identifier ({@link LOG_TOKEN}) of at most
 * {@link MAX_LOG_TOKEN_LENGTH} characters, never free text (an email, a sentence, a full name with a space). A single
 * word still passes, so a provider that put a value such as a first name in `field` or `code` would get it logged;
 * the spec's fields and codes are identifiers, and that is what this allows. It says nothing about secrets: the
 * client also checks a token against the secrets of its request.
 *
 * @example
 * ```ts
 * isLogToken("transaction_ids.3"); // true
 * isLogToken("ann@example.com"); // false
 * ```
 */
export function isLogToken(value: unknown): value is string {
  return typeof value === "string" && value.length <= MAX_LOG_TOKEN_LENGTH && LOG_TOKEN.test(value);
}

/**
 * `value` when it is fit for a log line ({@link isLogToken}), else `?`.
 *
 * @example
 * ```ts
 * logToken("NOT_FOUND"); // "NOT_FOUND"
 * logToken("Khalid Fernandes"); // "?"
 * ```
 */
export function logToken(value: unknown): string {
  return isLogToken(value) ? value : "?";
}
