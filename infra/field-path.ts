/**
 * How a field of the tenants file is named in messages: `tenants[0].webhooks[1].url`, or `(root)` for the whole.
 */
import type * as z from "zod";

/** The field a zod issue is about: for a misspelt key, the key itself, not the object holding it. */
export function issueField(issue: z.core.$ZodIssue): string {
  return issue.code === "unrecognized_keys" ? formatPath([...issue.path, issue.keys[0] ?? ""]) : formatPath(issue.path);
}

/** A path as messages name it: keys joined by ".", indexes in brackets; `(root)` when empty. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const part of path) {
    out += typeof part === "number" ? `[${part}]` : `${out ? "." : ""}${String(part)}`;
  }
  return out || "(root)";
}
