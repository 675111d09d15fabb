/**
 * What a tenant's zod issues say where zod's own words leave the fix to guess: a misspelt key names the field it was
 * most likely meant to be, and a missing field is called required rather than "received undefined".
 */
import * as z from "zod";
import { nearest } from "../shared/nearest.js";

/**
 * Per-parse error map of a tenant entry (`safeParse(raw, { error: tenantIssueMessage })`). A schema's own message
 * still wins; undefined leaves zod's.
 */
export const tenantIssueMessage: z.core.$ZodErrorMap = (issue) => {
  // JSON has no undefined: an undefined input is a field the entry leaves out.
  if (issue.code === "invalid_type" && issue.input === undefined) return "is required";
  if (issue.code === "unrecognized_keys") return unrecognizedKeysMessage(issue);
  return undefined;
};

/** zod's message, then the field each key most likely meant, among those the object does not set already. */
function unrecognizedKeysMessage(issue: z.core.$ZodRawIssue<z.core.$ZodIssueUnrecognizedKeys>): string {
  const given = typeof issue.input === "object" && issue.input !== null ? Object.keys(issue.input) : [];
  const shape = issue.inst instanceof z.ZodObject ? Object.keys(issue.inst.shape) : [];
  const unset = shape.filter((key) => !given.includes(key));
  const meant = issue.keys.flatMap((key) => {
    const field = nearest(key, unset);
    return field === undefined ? [] : [issue.keys.length === 1 ? `"${field}"` : `"${field}" for "${key}"`];
  });
  const listed = issue.keys.map((key) => JSON.stringify(key)).join(", ");
  const message = `Unrecognized key${issue.keys.length === 1 ? "" : "s"}: ${listed}`;
  return meant.length === 0 ? message : `${message} (did you mean ${meant.join(", ")}?)`;
}
