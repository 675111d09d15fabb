/**
 * What a tenant's zod issues say where zod's own words leave the fix to guess: a misspelt key or a mistyped option
 * names what it was most likely meant to be, and a missing field is called required rather than "received undefined".
 */
import * as z from "zod";
import { nearest } from "../shared/nearest.js";

/** zod's English message of an issue, which a hint is appended to. */
const english = z.locales.en().localeError;
function zodMessage(issue: z.core.$ZodRawIssue): string {
  const message = english(issue);
  return typeof message === "string" ? message : (message?.message ?? "Invalid input");
}

/**
 * Per-parse error map of a tenant entry (`safeParse(raw, { error: tenantIssueMessage })`). A schema's own message
 * still wins; undefined leaves zod's.
 */
export const tenantIssueMessage: z.core.$ZodErrorMap = (issue) => {
  // JSON has no undefined: an undefined input is a field the entry leaves out.
  if (issue.code === "invalid_type" && issue.input === undefined) return "is required";
  if (issue.code === "unrecognized_keys") return withHint(issue, unrecognizedKeysHint(issue));
  if (issue.code === "invalid_value") return withHint(issue, optionHint(issue.input, issue.values));
  // A discriminated union's issue holds the whole object: the mistyped option is its discriminator's value.
  if (issue.code === "invalid_union" && issue.discriminator !== undefined && Array.isArray(issue.options) && typeof issue.input === "object") {
    const given = (issue.input as Record<string, unknown> | null)?.[issue.discriminator];
    if (given === undefined) return `is required: expected one of ${z.core.util.joinValues(issue.options)}`;
    return withHint(issue, optionHint(given, issue.options));
  }
  return undefined;
};

/** The option a mistyped one was most likely meant to be, if the value given is a string. */
function optionHint(given: unknown, options: readonly unknown[]): string[] {
  if (typeof given !== "string") return [];
  // Options are short words: two edits would take "mask" for "hash", where "redact" was meant.
  const strings = options.filter((value) => typeof value === "string");
  const option = nearest(given, strings, Math.min(2, Math.floor(given.length / 3)));
  return option === undefined ? [] : [`"${option}"`];
}

function withHint(issue: z.core.$ZodRawIssue, meant: readonly string[]): string {
  return meant.length === 0 ? zodMessage(issue) : `${zodMessage(issue)} (did you mean ${meant.join(", ")}?)`;
}

/** The field each key most likely meant, among those the object does not set already. */
function unrecognizedKeysHint(issue: z.core.$ZodRawIssue<z.core.$ZodIssueUnrecognizedKeys>): string[] {
  const given = typeof issue.input === "object" && issue.input !== null ? Object.keys(issue.input) : [];
  const shape = issue.inst instanceof z.ZodObject ? Object.keys(issue.inst.shape) : [];
  const unset = shape.filter((key) => !given.includes(key));
  return issue.keys.flatMap((key) => {
    const field = nearest(key, unset);
    return field === undefined ? [] : [issue.keys.length === 1 ? `"${field}"` : `"${field}" for "${key}"`];
  });
}
