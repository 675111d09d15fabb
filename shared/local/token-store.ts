/**
 * File-backed TokenStore: one JSON file, owner-only permissions, atomic replace.
 */
import { closeSync, fstatSync, openSync, readFileSync } from "node:fs";
import path from "node:path";
import type { StoredTokens, TokenStore } from "../qashio/auth/token-store.js";
import { makeDirDurable, probeWrite, staleTempSweep, writeFileAtomic, type FileIdentity } from "./atomic.js";
import { DurableNames } from "./durable-names.js";
import { CorruptStateError, TokenFileUnwritableError } from "./errors.js";
import { restrictToOwner } from "./owner-only.js";
import { STATE_FILES } from "./layout.js";

/** Room a token set needs, with margin: a JWT access token and a refresh token take a few KiB. */
const TOKEN_SET_PROBE_BYTES = 16_384;

/**
 * The token set in `text`, the contents of token file `file`, as every version wrote it: a JSON object with a refresh
 * token. The settings check tells the bridge's tokens.json from another's by it (a design-token file, say).
 *
 * @throws CorruptStateError when it is not JSON, or holds no refresh token.
 */
export function tokenSetOf(text: string, file: string): StoredTokens {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // No cause: JSON.parse's message quotes the text around the fault, which may be part of a refresh token.
    throw new CorruptStateError("Token file is not valid JSON", { file });
  }
  const tokens = parsed as Partial<StoredTokens> | null;
  if (!tokens || typeof tokens.refreshToken !== "string") throw new CorruptStateError("Token file holds no refresh token", { file });
  return tokens as StoredTokens;
}

/**
 * Keeps a tenant's tokens in `<stateDir>/tokens.json` (mode 0600). `save` resolves only once the file is durable,
 * so a rotated refresh token is never lost to a crash. `load` resolves only once the file it read is durable too: another
 * process may have saved it and been killed before its directory fsync, and tokens used without a save of their own
 * would then let a power loss bring back the refresh token that save spent, whose next use revokes the family. The
 * first `load` of a store removes the stale temp files a crashed write left in its directory (see staleTempSweep): one
 * may hold a refresh token.
 *
 * @example
 * ```ts
 * const store = new FileTokenStore(".state");
 * await store.save({ refreshToken: "…" });
 * ```
 */
export class FileTokenStore implements TokenStore {
  readonly file: string;
  readonly #sweep: () => Promise<void>;
  /** The token file this store saved or made durable: loading it again costs no directory fsync. */
  readonly #durable = new DurableNames();

  constructor(stateDir: string, fileName: string = STATE_FILES.tokens) {
    this.file = path.join(stateDir, fileName);
    this.#sweep = staleTempSweep(path.dirname(this.file));
  }

  async load(): Promise<StoredTokens | undefined> {
    await this.#sweep();
    const read = this.#read();
    if (read === undefined) return undefined;
    const { text, identity } = read;
    const tokens = tokenSetOf(text, this.file);
    this.#durable.makeDurable(this.file, identity);
    return tokens;
  }

  /** The token file's text and which file it was read from (its descriptor's, not a later stat's); none when missing. */
  #read(): { text: string; identity: FileIdentity } | undefined {
    let fd: number;
    try {
      fd = openSync(this.file, "r");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw err;
    }
    try {
      const { dev, ino } = fstatSync(fd, { bigint: true });
      return { text: readFileSync(fd, "utf8"), identity: { dev, ino } };
    } finally {
      closeSync(fd);
    }
  }

  /**
   * Takes group and other access off the token file, as the bridge creates it (0600): a file written by hand or restored
   * from a backup carries the umask's mode (0644), and its refresh token stays readable by other local users until a
   * refresh replaces the file. Once, when a command opens the state directory; never on Windows, where modes say nothing.
   *
   * @returns the permission bits the file had when they were narrowed; undefined when it was private already, or missing.
   * @throws ExposedPathError when this user may not change its mode (another user owns it).
   */
  restrictAccess(): number | undefined {
    // Not through a link: the state directory check refuses one in tokens.json's place (ELOOP here if one slipped in).
    return restrictToOwner(this.file, { directory: false });
  }

  async save(tokens: StoredTokens): Promise<void> {
    makeDirDurable(path.dirname(this.file));
    this.#durable.note(this.file, await writeFileAtomic(this.file, JSON.stringify(tokens) + "\n", { mode: 0o600 }));
  }

  /**
   * Refuses a refresh (TokenFileUnwritableError) while the token file's directory cannot take a token set: full,
   * read-only or gone (see probeWrite). Spent first, the refresh token would be lost with its unsaved successor, and
   * the family with it. One small write and fsync per refresh.
   */
  async beforeRefresh(): Promise<void> {
    const dir = path.dirname(this.file);
    try {
      makeDirDurable(dir);
      probeWrite(dir, TOKEN_SET_PROBE_BYTES);
    } catch (error) {
      throw new TokenFileUnwritableError(this.file, (error as NodeJS.ErrnoException).code ?? "unknown error", { cause: error });
    }
  }
}
