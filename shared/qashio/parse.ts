/**
 * Response parsing for the client: schema check with drift reporting, turned into `InvalidResponseError`
 * carrying the schema issues (paths, codes, messages) and never the body.
 */
import type * as z from "zod";
import { parseEach, parseWithDrift, type DriftReport } from "./schemas/index.js";
import { InvalidResponseError, type ResponseIssue } from "./errors.js";

/** Where a body came from, for errors and drift reports. */
export interface ParseContext {
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly requestId?: string;
  readonly onDrift?: (warning: DriftReport) => void;
}

/** One list item that failed its schema: kept raw so the caller can quarantine it. */
export interface InvalidItem {
  /** Position in the page's `data`. */
  readonly index: number;
  readonly raw: unknown;
  readonly issues: readonly ResponseIssue[];
}

const MAX_ISSUES = 20;

/** Reduces zod issues to path, code and message (zod 4 issues hold no input values unless asked to). */
export function issuesOf(error: z.ZodError): ResponseIssue[] {
  return error.issues.slice(0, MAX_ISSUES).map((issue) => ({
    path: issue.path.map(String).join(".") || "(root)",
    code: issue.code,
    message: issue.message,
  }));
}

/** Parses `body` with `schema` or throws `InvalidResponseError`. Drift goes to `context.onDrift`. */
export function parseOrThrow<S extends z.ZodType>(schema: S, body: unknown, context: ParseContext): z.output<S> {
  const result = parseWithDrift(schema, body, context.onDrift);
  if (result.success) return result.data;
  const issues = issuesOf(result.error);
  const first = issues[0];
  throw new InvalidResponseError(
    `${context.method} ${context.path} answered ${context.status} with a body that does not match its schema` +
      (first ? ` (${first.path}: ${first.message})` : ""),
    { status: context.status, requestId: context.requestId, method: context.method, path: context.path, issues },
  );
}

/** Parses each list item on its own: one bad record must not make the page unreadable. */
export function parseItems<S extends z.ZodType>(
  schema: S,
  items: readonly unknown[],
  context: ParseContext,
): { valid: z.output<S>[]; invalid: InvalidItem[] } {
  const result = parseEach(schema, items, context.onDrift);
  return {
    valid: result.valid,
    invalid: result.invalid.map(({ index, raw, error }) => ({ index, raw, issues: issuesOf(error) })),
  };
}
