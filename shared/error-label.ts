/**
 * What a failed call (token store, secret write, lease or lock, an AWS call) is named by in a log line or an error
 * message: its name, or for a plain `Error` (as Node names a file system or network failure) its system code, e.g.
 * `ENOSPC`, `EACCES` or `ECONNREFUSED`. Never its message, which could quote a token it failed to write or a path.
 *
 * @example
 * logger.warn("call failed, retrying", { error: errorLabel(error) }); // "ThrottlingException", "ECONNREFUSED"
 */
export function errorLabel(error: unknown): string {
  const { name, code } = (typeof error === "object" && error !== null ? error : {}) as { name?: unknown; code?: unknown };
  if (typeof code === "string" && code !== "" && (name === undefined || name === "Error")) return code;
  return typeof name === "string" ? name : "unknown error";
}
