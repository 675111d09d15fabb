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
 * token and then fail to save its successor, so it is not started. `file` is the token file (the token provider's
 * warning of a postponed refresh names it: a `RefusalNamingFile`); `code` the system's.
 */
export class TokenFileUnwritableError extends LocalStateError {
  override name = "TokenFileUnwritableError";
  readonly code: string;

  constructor(file: string, code: string, options?: ErrorOptions) {
    super(`the token file's directory cannot take a new token set now (${code}); the refresh token was not spent`, { file }, options);
    this.code = code;
  }
}

/**
 * The file system of directory `file` makes no hard links (vfat, exFAT, a FUSE or SMB mount without them), though it
 * takes writes: a lease, the snapshot store's id and an events file's recovery file are created by linking a complete
 * temp file into place (see createFileOnce), the one way to create a file both whole and exclusively. Not a full or
 * read-only disk: trying again cannot mend it. `code` is the system's answer to the link.
 */
export class HardLinksUnsupportedError extends LocalStateError {
  override name = "HardLinksUnsupportedError";
  readonly code: string;

  constructor(dir: string, code: string, options?: ErrorOptions) {
    super(
      `the file system of ${dir} makes no hard links (${code}), the one way the bridge has to create a file whole and exclusively (a lease, the snapshot store's id, an events file's recovery file)`,
      { file: dir },
      options,
    );
    this.code = code;
  }
}

/** Read errors of a lease file that say this user may not read it (another user's run wrote it, 0600). */
const DENIED_CODES: ReadonlySet<string> = new Set(["EACCES", "EPERM"]);

/**
 * What a lease read failed on: a lease file, or the listing of the locks directory, which tells which generation file
 * holds the lease. Either way the holder is unknown.
 */
export type LeaseSource = "file" | "listing";

/** How each {@link LeaseSource} is named, and the verb for reading it: one wording for the error and the CLI alike. */
const SOURCE_WORDS: Readonly<Record<LeaseSource, { readonly what: string; readonly read: string }>> = {
  file: { what: "the lease file", read: "read" },
  listing: { what: "the locks directory", read: "listed" },
};

/**
 * A lease file (or the locks directory's listing, `source`) that could not be read, so whether another process holds
 * the lease, maybe refreshing the token family right now, is unknown: it is not taken over, since two holders would
 * present the same refresh token, which revokes the family. `code` is the system's; `denied` says this user may not
 * read it (EACCES, EPERM), which stays so until a person acts, while any other code (EMFILE, ESTALE, EIO, ...) is a
 * failure of the read now, worth trying again.
 */
export class LeaseUnreadableError extends LocalStateError {
  override name = "LeaseUnreadableError";
  readonly code: string;
  readonly denied: boolean;
  readonly source: LeaseSource;
  /**
   * What failed, naming the path, for a message around it: "the lease file <file> could not be read", "the locks
   * directory <dir> could not be listed".
   */
  readonly failure: string;

  /** @param file - the lease file, or the locks directory for a failed listing (`options.source`). */
  constructor(file: string, code: string, options: ErrorOptions & { readonly source?: LeaseSource } = {}) {
    const { source = "file", ...errorOptions } = options;
    const { what, read } = SOURCE_WORDS[source];
    const denied = DENIED_CODES.has(code);
    super(
      denied
        ? `${what} cannot be ${read} (${code}), so whether another process holds the lease is unknown: make it readable by this user`
        : `${what} could not be ${read} now (${code}), so whether another process holds the lease is unknown`,
      { file },
      errorOptions,
    );
    this.code = code;
    this.denied = denied;
    this.source = source;
    this.failure = `${what} ${file} could not be ${read}`;
  }
}

/** A state file exists but cannot be parsed (not a torn temp file: those are ignored). */
export class CorruptStateError extends LocalStateError {
  override name = "CorruptStateError";
}

/**
 * A path of the state directory is readable by its group or others and this user cannot take that away (another user
 * owns it, such as root after a restore under sudo; a file system whose modes are fixed). `mode` is the path's
 * permission bits, `owner` its uid; `code` the system's answer to the chmod.
 */
export class ExposedPathError extends LocalStateError {
  override name = "ExposedPathError";
  readonly mode: number;
  readonly owner: number;
  readonly code: string;

  constructor(file: string, details: { mode: number; owner: number; code: string }, options?: ErrorOptions) {
    super(`the path is readable by its group or others and cannot be made private by this user (${details.code})`, { file }, options);
    this.mode = details.mode;
    this.owner = details.owner;
    this.code = details.code;
  }
}
