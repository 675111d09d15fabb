/** What an OAuthTokenProvider is built with (its store, lease, skew, events and windows) and the events it reports. */
import type { Clock } from "../http.js";
import type { OAuthClientOptions } from "./oauth.js";
import type { RefreshLock } from "./refresh-lease.js";
import type { TokenStore } from "./token-store.js";

/**
 * What happened to the token family; lets the caller count refreshes and revocations, and say what became of tokens
 * a failed save left held (see `Unsaved`, oauth-token-provider.ts): saved by a re-save, or dropped for a newer set the
 * store holds.
 */
export type TokenEvent = "refreshed" | "rotated_elsewhere" | "reauthorization_required" | "held_tokens_saved" | "held_tokens_dropped";

export interface OAuthTokenProviderOptions extends OAuthClientOptions {
  /** Durable home of the tokens; the rotated refresh token is saved here before the new access token is used. */
  readonly store: TokenStore;
  /** Serialises refreshes across processes sharing `store`. */
  readonly lock?: RefreshLock;
  /** @default "qashio-token-refresh" */
  readonly lockName?: string;
  /**
   * Lease length, at least twice `timeoutMs`. The refresh call, retries included, must end within its first half
   * (see `refreshDeadline`, refresh-lease.ts); the rest is left for saving the rotated tokens, renewed while the save
   * runs (see `whileHolding`, lease-keep-alive.ts). @default 30_000
   */
  readonly lockTtlMs?: number;
  /**
   * The process ends for good soon after its calls' deadlines (a Lambda invocation, whose timeout follows the cycle's
   * deadline): a refresh is then started only when its whole lease ends by the deadline of the call needing it (see
   * `TokenRequestOptions.deadline`). A process that outlives its deadlines (the local bridge's budget) refreshes
   * whenever it must, else a budget shorter than the lease would never refresh. @default false
   */
  readonly refreshWithinCallDeadline?: boolean;
  /**
   * Refreshes start only inside a window `OAuthTokenProvider.openRefreshWindow` opened and not yet closed. For a
   * process frozen, perhaps for good, between units of work while it keeps one provider (a Lambda container between
   * invocations): a call a unit left behind (an abandoned read-ahead answered 401, or retrying after a 5xx) could
   * otherwise start a refresh after the unit's last `saveHeldTokens`, and a freeze between spending the refresh token
   * and storing its successor loses the family once the refresh lease lapses. @default false (refreshes start always)
   */
  readonly refreshOnlyInWindows?: boolean;
  /** How long to wait for another holder before giving up. @default 20_000 */
  readonly lockWaitMs?: number;
  /** Pause between acquisition attempts. @default 250 */
  readonly lockPollMs?: number;
  /** Refresh this long before the access token expires, at most half its lifetime. @default 60_000 */
  readonly refreshSkewMs?: number;
  readonly clock?: Clock;
  /**
   * Milliseconds on a clock that is never stepped (the process's monotonic clock): the wait for the refresh lease and
   * a refresh under it are held to their bounds on it too, since the lease runs out in real time (see `leaseTimeClock`,
   * shared/clock.ts).
   * @default performance.now with the system clock; none with another (a fake clock's time does not line up with it)
   */
  readonly elapsed?: () => number;
  readonly onEvent?: (event: TokenEvent) => void;
  /**
   * Events `onEvent`'s caller words itself (the local CLI names the token file): the provider logs no line of its own
   * for them, so one event reads as one line. @default none
   */
  readonly quietEvents?: readonly TokenEvent[];
  /**
   * Runs the part of a refresh from sending the refresh token (spent from then on) to saving its successor, so a
   * process told to stop at once (a second Ctrl-C) can wait for it: stopping inside it loses the token family.
   * @default runs it as it is
   */
  readonly spending?: <T>(work: () => Promise<T>) => Promise<T>;
}
