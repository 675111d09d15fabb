/**
 * The one rule for the log attributes whose values no log line writes, used by the CLI's logger and the Lambdas'
 * logger port: names holding `token`, `secret`, `password`, `authorization` or `salt`, and `code` itself (an OAuth
 * authorization code), in any case, at the top of a line's attributes or inside a value at any depth. A guard behind
 * the callers, which pass no such value: one that passed a token set inside an attribute would get it written whole.
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
 * `value` with every member {@link isSecretName} names set to {@link HIDDEN}, in plain objects and arrays at any depth;
 * a copy where it changes something, else `value` itself; a value met again inside itself is `"[circular]"` there. An
 * Error and any other value are left as they are (a logger writes an error by its name and message).
 *
 * @example
 * withSecretsHidden({ held: { refreshToken: "rt", expiresAt: 5 } }); // { held: { refreshToken: "[hidden]", expiresAt: 5 } }
 */
export function withSecretsHidden<T>(value: T): T {
  return hide(value, new Set()) as T;
}

/** What stands for a value met again inside itself: the original there would be written whole, its secrets too. */
const CIRCULAR = "[circular]";

function hide(value: unknown, walking: Set<object>): unknown {
  if (typeof value !== "object" || value === null || value instanceof Error) return value;
  if (walking.has(value)) return CIRCULAR;
  walking.add(value);
  try {
    if (Array.isArray(value)) {
      const members = value.map((member) => hide(member, walking));
      return members.some((member, i) => member !== value[i]) ? members : value;
    }
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto !== Object.prototype && proto !== null) return value;
    let copy: Record<string, unknown> | undefined;
    for (const [name, member] of Object.entries(value)) {
      const shown = isSecretName(name) ? HIDDEN : hide(member, walking);
      if (shown !== member) (copy ??= { ...value })[name] = shown;
    }
    return copy ?? value;
  } finally {
    walking.delete(value);
  }
}
