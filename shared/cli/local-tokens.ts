/**
 * The token store of local mode: `<state>/tokens.json`, seeded from QASHIO_REFRESH_TOKEN without ever writing the
 * seed. The seed stands in while the file holds no token; only a token set the provider returned is saved. So a
 * rejected seed leaves nothing behind (a corrected variable is read on the next run), and once a refresh succeeded
 * the variable is ignored, so a spent seed is never sent again (a replay would revoke the family).
 */
import type { StoredTokens, TokenStore } from "../qashio/auth/token-store.js";
import { CorruptStateError, type FileTokenStore } from "../local/index.js";
import { AUTHORIZE_AGAIN, TokenFileError, type SignInAgain } from "./errors.js";
import { octal, shellWord } from "./access-advice.js";
import { restrictOrRefuse } from "./state-access.js";
import { spendingRefreshes } from "./token-spending.js";

/**
 * Makes the token file readable by its owner only (see FileTokenStore.restrictAccess) when a command opens the state
 * directory, and tells `warn` which file had which mode (never its content): another local user may have read the
 * refresh token meanwhile, which only its owner can judge.
 *
 * @throws ConfigError (exit 2, BRIDGE_STATE_DIR) when this user cannot: the tokens would stay readable to others.
 * @example
 * restrictTokenFile(files, (text) => logger.warn(text));
 */
export function restrictTokenFile(files: FileTokenStore, warn: (text: string) => void): void {
  const file = shellWord(files.file);
  restrictOrRefuse(
    () => files.restrictAccess(),
    {
      refused: (error) =>
        `${files.file} is readable by its group or others (mode ${octal(error.mode)}), and this user cannot change that (${error.code}: it is ` +
        `owned by uid ${error.owner}): it holds the refresh token; run \`sudo chmod 600 ${file} && sudo chown ${process.geteuid?.() ?? error.owner} ${file}\``,
      narrowed: (before) =>
        `${files.file} was readable by its group or others (mode ${octal(before)}): made it readable by its owner only (${octal(before & 0o600)}), as the ` +
        "bridge creates it; if another user could read it, authorize again",
    },
    warn,
  );
}

export class LocalTokenStore implements TokenStore {
  /**
   * Whether this store found tokens in the file or saved some there. From then on the seed never stands in for a
   * missing file: it was spent by then (the file's tokens came from it, or from `authorize`, which replaces it), and
   * sending it again would revoke the family whose live tokens the file held (a state directory removed under a
   * running loop).
   */
  private heldTokens = false;

  /**
   * @param files - the state directory's token file (the local adapters' `tokens`).
   * @param seed - QASHIO_REFRESH_TOKEN, used only while the file holds no token.
   * @param signInAgain - what signs in again once the file cannot be used (the demo's differs).
   */
  constructor(
    private readonly files: FileTokenStore,
    private readonly seed?: string,
    private readonly signInAgain: SignInAgain = AUTHORIZE_AGAIN,
  ) {}

  /** Absolute path of the token file. */
  get file(): string {
    return this.files.file;
  }

  async load(): Promise<StoredTokens | undefined> {
    const stored = await this.stored();
    if (stored !== undefined) {
      this.heldTokens = true;
      return stored;
    }
    if (this.heldTokens) {
      // Not "still good" while this process holds tokens a failed save left: they replaced the one the file held.
      const replaced = spendingRefreshes.unsavedFiles.includes(this.files.file);
      throw new TokenFileError(
        this.files.file,
        `removed while this process was running: ${
          replaced
            ? "the refresh token it held is spent, replaced by new tokens this process could not save: a copy of it is of no use, and they " +
              "were not written in its place since the token refresh lease kept for them was lost meanwhile (another process may have stored newer ones)"
            : "put it back if you have a copy, the tokens it held are still good"
        }; nothing was sent to the provider, and QASHIO_REFRESH_TOKEN, spent by then, is not sent again`,
        { signInAgain: this.signInAgain },
      );
    }
    return this.seed === undefined ? undefined : { refreshToken: this.seed };
  }

  async save(tokens: StoredTokens): Promise<void> {
    await this.files.save(tokens);
    this.heldTokens = true;
  }

  beforeRefresh(): Promise<void> {
    return this.files.beforeRefresh();
  }

  /**
   * What to tell a person who set QASHIO_REFRESH_TOKEN while the file holds tokens (or a corrupt file): the variable
   * is not read then, and the way to start from it is not obvious. Empty without a seed.
   */
  get seedIgnoredHint(): string {
    return this.seed === undefined
      ? ""
      : `; QASHIO_REFRESH_TOKEN is not read while ${this.files.file} exists: to start from it instead, move that file aside`;
  }

  /** True while the seed stands in for a stored token (nothing was ever saved). */
  async usesSeed(): Promise<boolean> {
    return this.seed !== undefined && !this.heldTokens && (await this.isEmpty());
  }

  /**
   * True while the token file is missing, the seed aside (see TokenStore.isEmpty): only a person removes it, so tokens
   * this process holds unsaved, under the lease they were issued under, are the family's only live ones and are
   * written back rather than lost.
   */
  async isEmpty(): Promise<boolean> {
    return (await this.stored()) === undefined;
  }

  private async stored(): Promise<StoredTokens | undefined> {
    try {
      return await this.files.load();
    } catch (error) {
      if (error instanceof CorruptStateError) throw new TokenFileError(this.files.file, error.message, { hint: this.seedIgnoredHint, cause: error, signInAgain: this.signInAgain });
      throw error;
    }
  }
}
