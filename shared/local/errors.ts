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

/** A state file exists but cannot be parsed (not a torn temp file: those are ignored). */
export class CorruptStateError extends LocalStateError {
  override name = "CorruptStateError";
}
