/**
 * docs/events.md's Subscribing rules, and a matcher of EventBridge event patterns for them: what the engine's tests
 * (test/bridge/events.test.ts) and the end-to-end contract (test/cli/events-contract.e2e.test.ts) hold events to.
 */
import { readFile } from "node:fs/promises";

/**
 * Whether an EventBridge event pattern matches `event`, for the pattern forms docs/events.md suggests, as EventBridge
 * documents them: each leaf a list of values or filters (one must match the event's value, or an element of it when it
 * is an array): an exact value, `numeric` (JSON numbers only), `prefix` (text, also with `equals-ignore-case`); each
 * object a pattern of the event's member, or of any element of it when it is an array (EventBridge matches inside
 * arrays of objects); `$or` a list of patterns of which one must match. Any other form (anything-but, wildcard, ...) is
 * refused, so a doc that starts using one must extend this first.
 */
export function matchesPattern(pattern: Record<string, unknown>, event: Record<string, unknown>): boolean {
  return Object.entries(pattern).every(([key, rule]) => {
    if (key === "$or") return (rule as Record<string, unknown>[]).some((alternative) => matchesPattern(alternative, event));
    const value = event[key];
    if (Array.isArray(rule)) {
      const values = Array.isArray(value) ? (value as unknown[]) : [value];
      return values.some((v) => rule.some((allowed) => matchesLeaf(allowed, v, key)));
    }
    if (typeof rule !== "object" || rule === null) throw new Error(`${key}: a pattern leaf must be a list of values`);
    const members = Array.isArray(value) ? (value as unknown[]) : [value];
    return members.some((m) => typeof m === "object" && m !== null && !Array.isArray(m) && matchesPattern(rule as Record<string, unknown>, m as Record<string, unknown>));
  });
}

/** Whether one value of a pattern leaf (see {@link matchesPattern}) matches one value of the event. */
function matchesLeaf(allowed: unknown, value: unknown, key: string): boolean {
  if (typeof allowed !== "object" || allowed === null) return allowed === value;
  const [[filter, argument] = [], ...more] = Object.entries(allowed);
  if (more.length === 0 && filter === "numeric" && Array.isArray(argument)) {
    if (typeof value !== "number") return false;
    const holds: Record<string, (a: number, b: number) => boolean> = { "<": (a, b) => a < b, "<=": (a, b) => a <= b, "=": (a, b) => a === b, ">=": (a, b) => a >= b, ">": (a, b) => a > b };
    for (let i = 0; i < argument.length; i += 2) {
      const test = holds[argument[i] as string];
      if (!test || typeof argument[i + 1] !== "number") throw new Error(`${key}: unsupported numeric filter ${JSON.stringify(argument)}`);
      if (!test(value, argument[i + 1] as number)) return false;
    }
    return true;
  }
  if (more.length === 0 && filter === "prefix") {
    if (typeof value !== "string") return false;
    if (typeof argument === "string") return value.startsWith(argument);
    const ignoringCase = (argument as Record<string, unknown> | null)?.["equals-ignore-case"];
    if (typeof ignoringCase === "string" && Object.keys(argument as object).length === 1) return value.toLowerCase().startsWith(ignoringCase.toLowerCase());
  }
  throw new Error(`unsupported pattern form at ${key}: ${JSON.stringify(allowed)}`);
}

/** The rule patterns of docs/events.md's Subscribing section, in the order it gives them. */
export async function subscriptionPatterns(): Promise<Record<string, unknown>[]> {
  const catalog = await readFile(new URL("../docs/events.md", import.meta.url), "utf8");
  const start = catalog.indexOf("## Subscribing");
  const section = catalog.slice(start, catalog.indexOf("\n## ", start + 1));
  return [...section.matchAll(/```text\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1]!) as Record<string, unknown>);
}
