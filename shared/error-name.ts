/**
 * What a failed call (token store, secret write, lease or lock) is named by in a log line or an error message: its
 * name only, never its message, which could quote the tokens it failed to write.
 */
export function errorName(error: unknown): string {
  return error instanceof Error ? error.name : "unknown error";
}
