/**
 * Typed errors of the local (file-backed) adapters. Messages name files, never their contents.
 */

/** Base class of every local adapter error. */
export class LocalStateError extends Error {
  override name = "LocalStateError";
  /** The file or directory involved. */
  readonly file?: string;

  constructor(message: string, context: { file?: string } = {}, options?: ErrorOptions) {
    super(message, options);
    this.file = context.file;
  }
}

/**
 * The token file's directory cannot take a token set now (full, read-only, gone): a refresh would spend the refresh
 * token and then fail to save its successor, so it is not started. `file` is the token file; `code` the system's.
 */
export class TokenFileUnwritableError extends LocalStateError {
  override name = "TokenFileUnwritableError";
  readonly code: string;

  constructor(file: string, code: string, options?: ErrorOptions) {
    super(`the token file's directory cannot take a new token set now (${code}); the refresh token was not spent`, { file }, options);
    this.code = code;
  }
}

/** A state file exists but cannot be parsed (not a torn temp file: those are ignored). */
export class CorruptStateError extends LocalStateError {
  override name = "CorruptStateError";
}
