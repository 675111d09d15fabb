/**
 * What a tenant's zod issues say where zod's own words leave the fix to guess: a misspelt key or a mistyped option
 * names what it was most likely meant to be, and a missing field is called required rather than "received undefined".
 */
import * as z from "zod";
import { didYouMean, nearest } from "../shared/nearest.js";

/** zod's English message of an issue, which a hint is appended to. */
const english = z.locales.en().localeError;
function zodMessage(issue: z.core.$ZodRawIssue): string {
  const message = english(issue);
  return typeof message === "string" ? message : (message?.message ?? "Invalid input");
}

/**
 * Per-parse error map of a tenant entry (`safeParse(raw, { error: tenantIssueMessage })`). A schema's own message
 * still wins (zod ranks it first), so one of its own that is to say "is required" returns undefined for an absent
 * value (webhook-schema.ts's https URL); undefined here leaves zod's.
 */
export const tenantIssueMessage: z.core.$ZodErrorMap = (issue) => {
  // JSON has no undefined: an undefined input is a field the entry leaves out.
  if (issue.code === "invalid_type" && issue.input === undefined) return "is required";
  if (issue.code === "unrecognized_keys") return withHint(issue, unrecognizedKeysHint(issue));
  if (issue.code === "invalid_value") return withHint(issue, meantOption(issue.input, issue.values));
  // A discriminated union's issue holds the whole object: the mistyped option is its discriminator's value.
  if (issue.code === "invalid_union" && issue.discriminator !== undefined && Array.isArray(issue.options) && typeof issue.input === "object") {
    const given = (issue.input as Record<string, unknown> | null)?.[issue.discriminator];
    if (given === undefined) return `is required: expected one of ${z.core.util.joinValues(issue.options)}`;
    return withHint(issue, meantOption(given, issue.options));
  }
  return undefined;
};

/** The option a mistyped one was most likely meant to be, if the value given is a string. */
export function meantOption(given: unknown, options: readonly unknown[]): string[] {
  if (typeof given !== "string") return [];
  // Options are short words: two edits would take "mask" for "hash", where "redact" was meant.
  const strings = options.filter((value) => typeof value === "string");
  const option = nearest(given, strings, Math.min(2, Math.floor(given.length / 3)));
  return option === undefined ? [] : [`"${option}"`];
}

function withHint(issue: z.core.$ZodRawIssue, meant: readonly string[]): string {
  return `${zodMessage(issue)}${didYouMean(meant)}`;
}

function unrecognizedKeysHint(issue: z.core.$ZodRawIssue<z.core.$ZodIssueUnrecognizedKeys>): string[] {
  return meantFields(issue.keys, issue.input, issue.inst instanceof z.ZodObject ? Object.keys(issue.inst.shape) : []);
}

/** The field each unknown key of `input` most likely meant, among `fields` the object does not set already. */
export function meantFields(keys: readonly string[], input: unknown, fields: readonly string[]): string[] {
  const given = typeof input === "object" && input !== null ? Object.keys(input) : [];
  const unset = fields.filter((key) => !given.includes(key));
  return keys.flatMap((key) => {
    const field = nearest(key, unset);
    return field === undefined ? [] : [keys.length === 1 ? `"${field}"` : `"${field}" for "${key}"`];
  });
}
