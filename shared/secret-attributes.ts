/**
 * The one rule for the log attributes whose values no log line writes, used by the CLI's logger and the Lambdas'
 * logger port: names holding `token`, `secret`, `password`, `authorization` or `salt`, and `code` itself (an OAuth
 * authorization code), in any case, at the top of a line's attributes or inside a value at any depth and of any kind
 * (a class instance, what a toJSON returns, a URL's query, a URL written in a string). A guard behind the callers, which pass no such value: one
 * that passed a token set inside an attribute would get it written whole.
 */

/** Attribute names whose values are never written, whatever a caller passes. */
const SECRET_NAMES = /token|secret|password|authorization|^code$|salt/i;

/** What a log line shows in place of a hidden value. */
export const HIDDEN = "[hidden]";

/** Whether an attribute or member named `name` is never written. */
export function isSecretName(name: string): boolean {
  return SECRET_NAMES.test(name);
}

/**
 * `value` as a log line writes it (JSON.stringify, as both loggers do), with every member {@link isSecretName} names
 * set to {@link HIDDEN} at any depth, whatever the object's kind: in plain objects, arrays and class instances (their own
 * enumerable members, which JSON writes), in what an object's `toJSON` returns (JSON writes that in its place), and in a
 * URL (its password, and its query's and fragment's parameters, written as its href), a URL written inside a string
 * too. A copy where it changes something (what toJSON returns, a class instance as a plain object, a URL as its href,
 * a string with such a URL rewritten), else `value` itself; a value met again
 * inside itself is `"[circular]"` there. A Map or a Set is left as it is (JSON writes neither's entries), an Error too:
 * the CLI's logger writes an error attribute by its name and message, but Powertools, and JSON inside a value, write an
 * error's own enumerable members as well, none hidden (a Node error's `code` is one of them).
 *
 * @example
 * withSecretsHidden({ held: { refreshToken: "rt", expiresAt: 5 } }); // { held: { refreshToken: "[hidden]", expiresAt: 5 } }
 * withSecretsHidden({ callback: new URL("https://app.example/cb?code=c1&state=s1") }); // { callback: "https://app.example/cb?code=[hidden]&state=s1" }
 */
export function withSecretsHidden<T>(value: T): T {
  return hide(value, new Set(), true) as T;
}

/** What stands for a value met again inside itself: the original there would be written whole, its secrets too. */
const CIRCULAR = "[circular]";

/** `callsToJSON`: whether JSON.stringify calls `value`'s toJSON (not on what a toJSON returned). */
function hide(value: unknown, walking: Set<object>, callsToJSON: boolean): unknown {
  if (typeof value === "string") return value.includes("://") ? urlsHidden(value) : value;
  if (typeof value !== "object" || value === null || value instanceof Error) return value;
  if (walking.has(value)) return CIRCULAR;
  walking.add(value);
  try {
    const written = callsToJSON ? writtenInstead(value) : value;
    if (written !== value) {
      const shown = value instanceof URL ? hrefHidden(value) : hide(written, walking, false);
      return shown === written ? value : shown;
    }
    if (Array.isArray(value)) {
      const members = value.map((member) => hide(member, walking, true));
      return members.some((member, i) => member !== value[i]) ? members : value;
    }
    let copy: Record<string, unknown> | undefined;
    for (const [name, member] of Object.entries(value)) {
      const shown = isSecretName(name) ? HIDDEN : hide(member, walking, true);
      if (shown !== member) (copy ??= { ...value })[name] = shown;
    }
    // JSON writes no function, and the copy's members are what is written: a toJSON kept in the copy would be called,
    // one of what a toJSON returned (never called) or one that returns the original by reference (its secrets whole).
    if (typeof copy?.toJSON === "function") delete copy.toJSON;
    return copy ?? value;
  } finally {
    walking.delete(value);
  }
}

/** What JSON.stringify writes in place of `value`: what its toJSON returns, else `value` itself. */
function writtenInstead(value: object): unknown {
  const { toJSON } = value as { toJSON?: unknown };
  return typeof toJSON === "function" ? (toJSON as () => unknown).call(value) : value;
}

/** What reads as an absolute URL inside text: a scheme, `://`, then up to a blank, a quote or an angle bracket. */
const URL_IN_TEXT = /[a-z][a-z\d+.-]*:\/\/[^\s"'<>`]+/gi;

/**
 * `text` with each URL in it that hides something written as {@link hrefHidden} gives it; a URL that hides nothing, or
 * does not parse, stays as it was spelt.
 */
function urlsHidden(text: string): string {
  return text.replace(URL_IN_TEXT, (written) => {
    if (!URL.canParse(written)) return written;
    const url = new URL(written);
    const shown = hrefHidden(url);
    return shown === url.href ? written : shown;
  });
}

/** `url`'s href with its password and the values of its query's and fragment's secret-looking parameters hidden. */
function hrefHidden(url: URL): string {
  const { href, password, search, hash } = url;
  const front = href.slice(0, href.length - search.length - hash.length);
  return `${password === "" ? front : front.replace(`:${password}@`, `:${HIDDEN}@`)}${parametersHidden(search)}${parametersHidden(hash)}`;
}

/** A `?a=1&b=2` query or `#a=1` fragment with the values of its secret-looking parameters hidden. */
function parametersHidden(part: string): string {
  if (part === "") return part;
  const pairs = part.slice(1).split("&").map((pair) => {
    const at = pair.indexOf("=");
    return at >= 0 && isSecretName(decodedName(pair.slice(0, at))) ? `${pair.slice(0, at)}=${HIDDEN}` : pair;
  });
  return `${part[0]}${pairs.join("&")}`;
}

/** A percent-encoded parameter name as it reads (`access%5Ftoken` is `access_token`); a malformed one as it is. */
function decodedName(name: string): string {
  try {
    return decodeURIComponent(name);
  } catch {
    return name;
  }
}
