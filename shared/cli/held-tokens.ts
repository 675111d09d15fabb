/**
 * New tokens a failed save left held in memory, settled once the local bridge is done (LocalBridge.settleTokens,
 * usingLocalBridge): a few tries to save them, and what became of them said once, as a warning or at the end of the
 * failure that ends the command. The token provider holding them is local-bridge.ts's.
 */
import type { Clock, Logger } from "../bridge/index.js";
import type { OAuthTokenProvider, TokenEvent } from "../qashio/auth/token-provider.js";
import { TokensLostError, type SignInAgain } from "./errors.js";

type HeldTokensEvent = Extract<TokenEvent, "held_tokens_saved" | "held_tokens_dropped">;

/**
 * What became of new tokens a failed save left held, once a re-save settled them (a loss is TokensLostError): said at
 * the level of the failure that reported them held, since that message promised to say whether they were saved; at
 * the end of that failure's message where it ends the command (see usingLocalBridge). `file` is the token file,
 * undefined when the command removes it (see LocalBridgeOptions.tokenFileKept).
 */
const HELD_TOKENS_OUTCOME: Readonly<Record<HeldTokensEvent, (file: string | undefined) => string>> = {
  held_tokens_saved: (file) =>
    file === undefined
      ? "the new tokens held unsaved since a failed save are saved now: nothing to do"
      : `the new tokens held unsaved since a failed save are saved to ${file} now: the token family lives on, nothing to do`,
  held_tokens_dropped: (file) =>
    `the new tokens held unsaved since a failed save were not saved: ${file ?? "the token file"} holds newer ones (stored meanwhile by another process or \`authorize\`), used instead`,
};

/** The token events {@link HeldTokens} words itself, naming the file: the provider's `quietEvents`. */
export const HELD_TOKENS_EVENTS = Object.keys(HELD_TOKENS_OUTCOME) as HeldTokensEvent[];

function isHeldTokensEvent(event: TokenEvent): event is HeldTokensEvent {
  return Object.hasOwn(HELD_TOKENS_OUTCOME, event);
}

/** Tries {@link HeldTokens.settle} gives held tokens before it calls them lost, and the pause between two. */
const HELD_TOKEN_SAVE_TRIES = 3;
const HELD_TOKEN_SAVE_PAUSE_MS = 500;

export interface HeldTokensOptions {
  /** The token file, named by a loss (TokensLostError). */
  readonly file: string;
  /** False when the command removes the token file as it ends: what became of held tokens then names none. */
  readonly fileKept: boolean;
  readonly signInAgain: SignInAgain;
  readonly clock: Clock;
  readonly logger: Logger;
}

/** What becomes of the tokens one local bridge's token provider holds unsaved after a failed save. */
export class HeldTokens {
  private readonly options: HeldTokensOptions;
  /** Says what became of held tokens: a warning, or the end of the failure that ends the command (see settle). */
  private said: (outcome: string) => void;

  constructor(options: HeldTokensOptions) {
    this.options = options;
    this.said = (outcome) => options.logger.warn(outcome);
  }

  /** The token provider's `onEvent`: says what became of held tokens when `event` is a re-save that settled them. */
  heard(event: TokenEvent): void {
    // The word a message about held tokens promised (see stoppedBeforeRefresh): at the next cycle or on the way out.
    if (isHeldTokensEvent(event)) this.said(HELD_TOKENS_OUTCOME[event](this.options.fileKept ? this.options.file : undefined));
  }

  /**
   * Closes `provider` and saves the tokens it holds, with a few tries; `untrack` (its spendingRefreshes entry) is
   * called once they are settled or lost. What it returns and throws: `LocalBridge.settleTokens`, which it is.
   */
  async settle(provider: Pick<OAuthTokenProvider, "close" | "saveHeldTokens" | "heldTokensFailure">, untrack: () => void, failure?: unknown): Promise<string | undefined> {
    // The bridge is done: a refresh a leftover call would start from now on could fail to save after this check.
    provider.close();
    let outcome: string | undefined;
    if (failure !== undefined) this.said = (said) => (outcome = said);
    for (let tries = 1; !(await provider.saveHeldTokens()); tries += 1) {
      if (tries === HELD_TOKEN_SAVE_TRIES) {
        untrack();
        throw new TokensLostError(this.options.file, {
          ...(failure === undefined ? {} : { cause: failure }),
          failure: provider.heldTokensFailure,
          signInAgain: this.options.signInAgain,
        });
      }
      await this.options.clock.sleep(HELD_TOKEN_SAVE_PAUSE_MS);
    }
    untrack();
    return outcome;
  }
}
