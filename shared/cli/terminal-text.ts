/**
 * Text bound for a terminal or a log line, made inert: what the CLI prints can hold provider values (an id, a merchant
 * name, an OAuth scope), and the provider is untrusted input.
 */

/**
 * Characters a terminal acts on instead of showing: C0 controls (CR and LF forge a log line; ESC starts the sequences
 * that move the cursor, clear the screen, set the window title or write the clipboard), DEL, C1 controls (U+009B is a
 * one-character CSI on some terminals) and the bidirectional controls that reorder what is shown (U+202E turns
 * `gnp.exe` into `exe.png`), with the line and paragraph separators.
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const SHORT_ESCAPES: Readonly<Record<string, string>> = { "\t": "\\t", "\n": "\\n", "\r": "\\r" };

/**
 * `text` with every character of {@link UNPRINTABLE} written as its escape (`\n`, `\r`, `\t`, else `\uXXXX`), so it
 * stays on its line and shows as text.
 *
 * @example
 * ```ts
 * printable("CA1\nerror forged"); // "CA1\\nerror forged"
 * printable("\u001b[2J"); // "\\u001b[2J"
 * ```
 */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (c) => SHORT_ESCAPES[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
