/**
 * The OAuth token provider around the single-use rotating refresh token: rotation saved before use, JWT expiry, single
 * flight, optional cross-process lock, and tokens a failed save left held saved again before anything else.
 */
import { IncompleteTokenSetError, TokenUnavailableError } from "../errors.js";
import { leaseTimeClock } from "../../clock.js";
import { DEFAULT_TIMEOUT_MS, systemClock, type Clock } from "../http.js";
import { errorLabel } from "../../error-label.js";
import { isRejectedGrant, reauthorizationRequired, reloadAfterRefusal } from "./grant-refusal.js";
import { exchangeCode, refresh } from "./oauth.js";
import type { OAuthTokenProviderOptions, TokenEvent } from "./oauth-token-provider-options.js";
import { DEFAULT_LOCK_TTL_MS, RefreshLeases, RefreshNotStartedError, refreshDeadline, type RefreshLockHandle } from "./refresh-lease.js";
import { RefusedTokens } from "./refused-tokens.js";
import { RefreshSkew, storedTokensOf } from "./token-expiry.js";
import { refusedFile, type StoredTokens } from "./token-store.js";
import type { TokenSet } from "../schemas/index.js";
import type { TokenProvider, TokenRequestOptions } from "./token-provider.js";

/**
 * Tokens whose save failed. `replaced` is the refresh token they replaced (spent by the refresh; undefined for a code
 * exchange, which replaces nothing spent). `handle` is the refresh lease they were issued under, kept rather than
 * released and renewed until this process saves again, drops them or closes (see `releaseUnlessKept`): other processes
 * wait instead of taking it and presenting the spent token. It narrows the window, it does not close it: a lease whose
 * renewals stop (the process dies, or is frozen between Lambda invocations) runs out, and the next refresh then
 * presents the spent token, which revokes the family. `issuedUnder` is the lease they were issued under, never changed:
 * while a re-save still holds that one (renewed without a break, see {@link resaveLease}), no other writer of the store
 * has taken the lease since, so none stored a newer token set.
 */
interface Unsaved {
  readonly tokens: StoredTokens;
  readonly replaced: string | undefined;
  readonly handle: RefreshLockHandle | undefined;
  readonly issuedUnder: RefreshLockHandle | undefined;
}

/**
 * OAuth token provider for one tenant.
 *
 * - Access tokens are reused until `refreshSkewMs` (at most half their lifetime) before they expire (no known expiry: until a 401);
 *   past that, while they outlast the call, when no refresh fits before its deadline (`requestTimeoutMs`); the store
 *   is then read again first, for an access token another process stored.
 * - Concurrent callers in one process share one refresh (single flight).
 * - With a `lock`, refreshes are serialised across processes; the store is re-loaded under the lock and the
 *   refresh skipped when another process already rotated.
 * - The rotated refresh token is saved to the store before the new access token is handed out.
 * - A refresh answered 401 re-loads the store: a changed refresh token means another process rotated (use it);
 *   otherwise the family is revoked and `ReauthorizationRequiredError` is thrown.
 * - A refresh answered `invalid_client` is thrown as is (see {@link isInvalidClient}): the client credentials are
 *   wrong, the refresh token was not judged, so the family is not reported revoked.
 *
 * @example
 * ```ts
 * const tokenProvider = new OAuthTokenProvider({ baseUrl, clientId, clientSecret, store, lock });
 * const client = new QashioClient({ baseUrl, tokenProvider });
 * ```
 */
export class OAuthTokenProvider implements TokenProvider {
  private readonly options: OAuthTokenProviderOptions;
  private readonly clock: Clock;
  /** The refresh lease: taken for a refresh or a re-save, kept for unsaved tokens. */
  private readonly leases: RefreshLeases;
  private readonly skew: RefreshSkew;
  private current?: StoredTokens;
  /** Tokens the provider issued but the store failed to save: re-saved (see `loaded`) before anything else. */
  private unsaved?: Unsaved;
  private inflight?: Promise<StoredTokens>;
  private resaving?: Promise<void>;
  /** What the last {@link saveHeldTokens} failed with, if it did. */
  private heldSaveFailure?: unknown;
  /**
   * An early refresh the store turned down (see {@link postponedRefresh}): this access token is used, without asking
   * the store again, until it expires.
   */
  private postponed?: { readonly accessToken: string; readonly until: number };
  /** The access tokens lately answered 401 (see {@link RefusedTokens}). */
  private readonly refused = new RefusedTokens();
  /** Set by {@link close}: no refresh starts any more. */
  private closed = false;
  /** Windows {@link openRefreshWindow} opened and not yet closed (see `refreshOnlyInWindows`). */
  private openWindows = 0;

  constructor(options: OAuthTokenProviderOptions) {
    const lockTtlMs = options.lockTtlMs ?? DEFAULT_LOCK_TTL_MS;
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    // A refresh attempt must fit whole in the lease's first half (see refreshDeadline), else none would ever start.
    if (options.lock && refreshDeadline(0, lockTtlMs) < timeoutMs) {
      throw new RangeError(`lockTtlMs (${lockTtlMs} ms) must be at least twice the request timeout (${timeoutMs} ms)`);
    }
    this.options = options;
    this.clock = options.clock ?? systemClock;
    this.leases = new RefreshLeases(options, lockTtlMs, this.clock);
    this.skew = new RefreshSkew(options.refreshSkewMs);
  }

  /**
   * @throws DeadlineExceededError with `refreshWithinCallDeadline`, when a refresh is needed that could not end by
   *   `options.deadline` and neither the stored nor the known access token may still be sent (see refreshForCall;
   *   nothing is sent).
   */
  async getAccessToken(options: TokenRequestOptions = {}): Promise<string> {
    const tokens = await this.loaded();
    if (this.isFresh(tokens)) return tokens.accessToken as string;
    return this.accessTokenOf(await this.refreshForCall(undefined, options));
  }

  /** @throws DeadlineExceededError as {@link getAccessToken}. */
  async refreshAfterUnauthorized(rejected: string, options: TokenRequestOptions = {}): Promise<string> {
    this.refused.add(rejected);
    const tokens = await this.loaded();
    // Another caller already replaced the rejected token.
    if (tokens.accessToken !== rejected && this.isFresh(tokens)) return tokens.accessToken as string;
    return this.accessTokenOf(await this.refreshForCall(rejected, options));
  }

  /** True while tokens the provider issued are held in memory because the store failed to save them (see `Unsaved`). */
  get holdsUnsavedTokens(): boolean {
    return this.unsaved !== undefined;
  }

  /**
   * Tries once to save tokens a failed save left held, as the next call would (only while the store still holds the
   * refresh token they replaced); for a process about to exit, which would otherwise lose them with the refresh token
   * they replaced already spent. A refresh still in flight (one a command left running, such as a read-ahead's) ends
   * first: its save may fail too. Never throws: resolves true once none are held (saved, dropped for a newer stored
   * set, or none were), false when they still are.
   *
   * @example
   * if (!(await provider.saveHeldTokens())) console.error("the new refresh token could not be saved: re-authorize");
   */
  async saveHeldTokens(): Promise<boolean> {
    await this.inflight?.catch(() => undefined);
    this.heldSaveFailure = undefined;
    await this.saveUnsaved().catch((error: unknown) => (this.heldSaveFailure = error));
    return this.unsaved === undefined;
  }

  /**
   * Why the last {@link saveHeldTokens} could not save the tokens still held (the lease kept for them could not be
   * renewed, the store failed again), for the message saying they are lost; undefined once none are held.
   */
  get heldTokensFailure(): unknown {
    return this.unsaved === undefined ? undefined : this.heldSaveFailure;
  }

  /**
   * Hands the tokens a failed save left held, with the refresh lease they keep, to `successor`: a provider of the same
   * tenant built to replace this one (a runtime rebuilt for changed client credentials), not used yet. It saves them
   * before its first use of the store, and in its {@link saveHeldTokens}, as this one would have, under the same rule
   * (only while the store still holds the refresh token they replaced). Dropped with this provider instead, they would
   * be lost with the refresh token they replaced already spent, and the successor would present that spent token,
   * which revokes the family. Closes this provider first (no refresh starts in it any more) and waits for a refresh or
   * re-save still under way; from then on a call left behind in this provider re-saves nothing (it holds none).
   *
   * @throws RangeError when `successor` has loaded or received tokens already (its own would be overwritten).
   *
   * @example
   * await old.tokenProvider.handOverHeldTokens(rebuilt.tokenProvider);
   */
  async handOverHeldTokens(successor: OAuthTokenProvider): Promise<void> {
    if (successor === this) return;
    this.close();
    // A call left behind (a retry waking up) may start a re-save while an earlier one is awaited: waited for too.
    while (this.inflight !== undefined || this.resaving !== undefined) {
      await this.inflight?.catch(() => undefined);
      await this.resaving?.catch(() => undefined);
    }
    const unsaved = this.unsaved;
    if (unsaved === undefined) return;
    if (successor.unsaved !== undefined || successor.current !== undefined) {
      throw new RangeError("the successor has loaded or issued tokens already: hand held tokens over before its first use");
    }
    // Given up in the same step as read: a re-save this provider started later (while the renewal below ends) would
    // write them under the lease the successor keeps, and could land after the successor saved and rotated them,
    // storing the spent refresh token again.
    this.unsaved = undefined;
    await this.leases.stopKeeping();
    successor.unsaved = unsaved;
    if (unsaved.handle !== undefined) successor.leases.keepHeld(unsaved.handle);
  }

  /**
   * Starts no refresh from now on: a call that would need one fails with `TokenUnavailableError`, nothing sent; a fresh
   * access token is still handed out, and a refresh already in flight goes on ({@link saveHeldTokens} waits for it).
   * For a process done with the provider: a refresh that a leftover call (such as an abandoned read-ahead) started
   * after the last `saveHeldTokens`, and whose save then failed, would lose the new refresh token unnoticed at exit.
   *
   * @example
   * provider.close();
   * if (!(await provider.saveHeldTokens())) console.error("the new refresh token could not be saved: re-authorize");
   */
  close(): void {
    this.closed = true;
    // A lease kept for unsaved tokens is no longer renewed: a closing process's timer must not keep it alive for good.
    void this.leases.stopKeeping();
  }

  /**
   * With `refreshOnlyInWindows`, lets refreshes start until the returned function is called (more than once is the
   * same as once); windows may overlap, refreshes start while any is open. A refresh already in flight when the last
   * window closes goes on ({@link saveHeldTokens} waits for it); a call needing a new one then fails with
   * `TokenUnavailableError`, nothing sent. Without the option, refreshes start regardless.
   *
   * @example
   * const closeWindow = provider.openRefreshWindow();
   * try { await work(); } finally { closeWindow(); await provider.saveHeldTokens(); }
   */
  openRefreshWindow(): () => void {
    this.openWindows += 1;
    let open = true;
    return () => {
      if (!open) return;
      open = false;
      this.openWindows -= 1;
    };
  }

  /** Whether a refresh may start now (see {@link close} and `refreshOnlyInWindows`). */
  private refreshesAllowed(): boolean {
    return !this.closed && (this.options.refreshOnlyInWindows !== true || this.openWindows > 0);
  }

  /**
   * Completes the authorization-code flow: exchanges `code` and saves the token set, under the refresh lease (when
   * there is a lock): a refresh of another process that read the old token before this save would otherwise store
   * the old family's rotation over the new one. Tokens that cannot be saved now (the lease stayed held, or the store
   * failed) are kept and saved again before use, as rotated ones are.
   *
   * @example
   * ```ts
   * await provider.authorizeWithCode(query.code, "https://app.example/callback");
   * ```
   */
  async authorizeWithCode(code: string, redirectUri: string): Promise<void> {
    const set = await exchangeCode(this.options, { code, redirectUri });
    const now = this.clock.now();
    const tokens = this.skew.received(storedTokensOf(set, now), now);
    // A re-save of earlier tokens under way finishes first: it may hold the kept lease and would otherwise write the
    // old family over this one. This save then takes its place until done: a call that would re-save the held tokens
    // meanwhile waits for it instead (a re-save started now could land after this save), and fails with it as with a
    // re-save it joined.
    while (this.resaving !== undefined) await this.resaving.catch(() => undefined);
    await (this.resaving = this.saveAuthorized(tokens).finally(() => (this.resaving = undefined)));
  }

  /**
   * Saves the code flow's `tokens` under the refresh lease. A lease this process still keeps for rotated tokens it
   * failed to save is renewed, not waited for: the new family replaces those tokens.
   */
  private async saveAuthorized(tokens: StoredTokens): Promise<void> {
    const kept = this.unsaved?.handle;
    let handle: RefreshLockHandle | undefined;
    try {
      handle = await this.resaveLease(kept);
    } catch (error) {
      this.unsaved = { tokens, replaced: undefined, handle: kept, issuedUnder: undefined };
      throw error;
    }
    try {
      await this.leases.keepingAlive(handle, () => this.persist(tokens, { replaced: undefined, handle, issuedUnder: handle }));
    } finally {
      // Kept with unsaved tokens (see `Unsaved`), released once they are saved again or dropped.
      await this.releaseUnlessKept(handle);
    }
  }

  /**
   * Releases `handle` once the work done under it is over, unless tokens a failed save left keep it (see `Unsaved`): it
   * is then renewed until they are saved or dropped, or the provider closes, so no other process takes it and presents
   * the spent refresh token while this one lives (a loop idle between cycles). A frozen process (a Lambda container
   * between invocations) renews nothing: its lease runs out as before.
   */
  private async releaseUnlessKept(handle: RefreshLockHandle | undefined): Promise<void> {
    if (handle === undefined) return;
    if (this.unsaved?.handle !== handle) return this.leases.release(handle);
    if (!this.closed) this.leases.keepHeld(handle);
  }

  /** Tells `onEvent` of `event`, and logs `warning` unless the caller words that event itself (`quietEvents`). */
  private report(event: TokenEvent, warning: string): void {
    if (this.options.quietEvents?.includes(event) !== true) this.options.logger?.warn(warning);
    this.options.onEvent?.(event);
  }

  private accessTokenOf(tokens: StoredTokens): string {
    if (!tokens.accessToken) throw new TokenUnavailableError("the token endpoint returned no access token");
    return tokens.accessToken;
  }

  /** Whether `accessToken` may be sent at all: present, neither the rejected one nor one lately refused (401). */
  private usable(accessToken: string | undefined, rejected: string | undefined): accessToken is string {
    return accessToken !== undefined && accessToken !== "" && accessToken !== rejected && !this.refused.has(accessToken);
  }

  private isFresh(tokens: StoredTokens, rejected?: string): boolean {
    if (!this.usable(tokens.accessToken, rejected)) return false;
    if (tokens.accessTokenExpiresAt === undefined) return true;
    const now = this.clock.now();
    if (this.postponed?.accessToken === tokens.accessToken && this.postponed.until > now) return true;
    return tokens.accessTokenExpiresAt - this.skew.of(tokens.accessToken) > now;
  }

  private async loaded(): Promise<StoredTokens> {
    await this.saveUnsaved();
    if (this.current) return this.current;
    const stored = await this.options.store.load();
    if (!stored) throw new TokenUnavailableError("no tokens stored for this tenant: authorize the integration first");
    this.current = stored;
    return stored;
  }

  /** Saves unsaved tokens again, if any, before anything else uses the store or the lease they keep. */
  private async saveUnsaved(): Promise<void> {
    // Shared by concurrent callers: a second re-save would find its own tokens stored and drop them as foreign.
    if (this.unsaved) await (this.resaving ??= this.saveAgain(this.unsaved).finally(() => (this.resaving = undefined)));
  }

  /**
   * Saves the unsaved tokens again, but only while the store still holds the refresh token they replaced (or already
   * their own: a store that wrote the secret but failed a later step), or holds none at all ({@link TokenStore.isEmpty}:
   * a token file removed by hand) while the lease they were issued under is still held: anything else was written
   * since (e.g. a re-authorization) and must not be overwritten, so they are dropped for it. The load, the check and
   * the save run under a lease this process holds and keeps alive (see {@link resaveLease}): every writer of the store
   * takes it, so nothing is written between the check and the save. The lease is released after, unless the save
   * failed again.
   */
  private async saveAgain(unsaved: Unsaved): Promise<void> {
    const handle = await this.resaveLease(unsaved.handle);
    // The tokens are now kept under this lease: should the re-save fail before its save (a failed load), the lease
    // stays held, as after the first failed save.
    if (handle !== unsaved.handle && this.unsaved === unsaved) this.unsaved = { ...unsaved, handle };
    // A lease taken anew may follow another writer's (an `authorize` whose new family was then removed too): an empty
    // store is refilled only under the one they were issued under, renewed throughout.
    const unbroken = handle !== undefined && handle === unsaved.issuedUnder;
    const checkThenSave = async (): Promise<void> => {
      const refill = unsaved.replaced !== undefined && unbroken && (await this.options.store.isEmpty?.()) === true;
      const stored = refill ? undefined : await this.options.store.load();
      const ours = [unsaved.replaced, unsaved.tokens.refreshToken];
      if (refill || unsaved.replaced === undefined || (stored !== undefined && ours.includes(stored.refreshToken))) {
        await this.persist(unsaved.tokens, { replaced: unsaved.replaced, handle, issuedUnder: unsaved.issuedUnder });
        this.options.onEvent?.("held_tokens_saved");
      } else {
        this.unsaved = undefined;
        this.current = stored;
        this.report("held_tokens_dropped", "the token store changed after the rotated tokens failed to save; using the stored tokens instead");
      }
    };
    try {
      await this.leases.keepingAlive(handle, checkThenSave);
    } finally {
      // Kept when the save failed again (persist put it back in `unsaved`). Otherwise the tokens are saved or dropped
      // by now.
      await this.releaseUnlessKept(handle);
    }
  }

  /**
   * The lease a re-save runs under: the one kept since the failed save, renewed (also when it ran out while nobody took
   * it), or, when another owner took it since, a new one, waited for as a refresh waits. None without a lock. A renewal that fails (rather than finding the lease
   * lost) rejects: the lease may still be this process's own, and waiting for it would only time out.
   */
  private async resaveLease(kept: RefreshLockHandle | undefined): Promise<RefreshLockHandle | undefined> {
    await this.leases.stopKeeping();
    if (kept !== undefined) {
      let renewed: boolean;
      try {
        renewed = await kept.renew(this.leases.ttlMs);
      } catch (error) {
        // Still kept for the tokens until the next call: renewed again meanwhile, as before this try.
        if (!this.closed) this.leases.keepHeld(kept);
        const reason = errorLabel(error);
        // Chained (a lease's error names no token): a caller can tell why, such as a lease file it could not read.
        throw new TokenUnavailableError(`renewing the token refresh lease failed (${reason}); the unsaved tokens are saved again at the next call`, {}, { cause: error });
      }
      if (renewed) return kept;
    }
    return (await this.leases.acquire())?.handle;
  }

  private refreshShared(rejected: string | undefined, deadline: number | undefined): Promise<StoredTokens> {
    if (!this.refreshesAllowed() && this.inflight === undefined) {
      const why = this.closed ? "the token provider is closed: no token refresh starts after the command finished" : "no token refresh starts outside the work it is allowed for (an invocation that has settled)";
      return Promise.reject(new TokenUnavailableError(why));
    }
    const joined = this.inflight;
    if (joined === undefined) {
      this.inflight = this.refreshExclusive(rejected, deadline).finally(() => {
        this.inflight = undefined;
      });
      return this.inflight;
    }
    // The refresh joined runs under the deadline of the caller that started it. When that deadline stopped it before
    // anything was sent, this caller, whose own deadline may leave room, tries on its own (or joins the next one).
    return joined.catch((error: unknown) => {
      if (!(error instanceof RefreshNotStartedError) || (deadline !== undefined && deadline <= error.deadline)) throw error;
      return this.refreshShared(rejected, deadline);
    });
  }

  /**
   * A refresh for a call held to `options`. When the call's deadline left no room to start one, the tokens stored now
   * (another process may have rotated since: their access token needs no refresh, nor the lease, to be used) or else
   * the tokens last known, if their access token is fresh or outlasts the call (see
   * {@link TokenRequestOptions.requestTimeoutMs}): refusing it would end the cycle out of time with its last calls (the
   * acknowledge) unsent.
   */
  private async refreshForCall(rejected: string | undefined, options: TokenRequestOptions): Promise<StoredTokens> {
    try {
      return await this.refreshShared(rejected, this.refreshBound(options.deadline));
    } catch (error) {
      if (!(error instanceof RefreshNotStartedError)) throw error;
      const known = this.current;
      const stored = await this.storedWithoutLease();
      const usable = (tokens: StoredTokens | undefined): tokens is StoredTokens =>
        tokens !== undefined && (this.isFresh(tokens, rejected) || this.outlastsCall(tokens, rejected, options));
      if (usable(stored)) {
        // Unless a refresh here replaced them while the store answered: the read may predate its save.
        if (this.current === known) this.current = stored;
        return stored;
      }
      if (usable(known)) return known;
      throw error;
    }
  }

  /**
   * The stored tokens, read without the refresh lease (their access token only is used: a refresh re-loads under the
   * lease), or undefined when the read fails: the caller is out of time anyway, and says so.
   */
  private async storedWithoutLease(): Promise<StoredTokens | undefined> {
    try {
      return await this.options.store.load();
    } catch (error) {
      this.options.logger?.warn("reading the token store for a token another process stored failed", { reason: errorLabel(error) });
      return undefined;
    }
  }

  /** Whether `tokens`' access token may be sent and stays valid while a call held to `options` may run. */
  private outlastsCall(tokens: StoredTokens, rejected: string | undefined, options: TokenRequestOptions): boolean {
    const { accessTokenExpiresAt: until } = tokens;
    if (!this.usable(tokens.accessToken, rejected) || until === undefined || options.deadline === undefined) return false;
    const callEnd = options.requestTimeoutMs === undefined ? options.deadline : this.clock.now() + options.requestTimeoutMs;
    return until >= callEnd;
  }

  /** The deadline a refresh for a call held to `deadline` must end by, if refreshes are bounded at all. */
  private refreshBound(deadline: number | undefined): number | undefined {
    return this.options.refreshWithinCallDeadline === true ? deadline : undefined;
  }

  private async refreshExclusive(rejected: string | undefined, deadline: number | undefined): Promise<StoredTokens> {
    // A caller already past `loaded()` when an earlier refresh failed to save: never wait on this process's own kept
    // lease, nor refresh with the spent token the store still holds.
    await this.saveUnsaved();
    this.leases.assertFits(deadline, this.clock.now());
    const taken = await this.leases.acquire(deadline === undefined ? undefined : deadline - this.leases.ttlMs);
    const handle = taken?.handle;
    const lease = taken ? { ...taken, deadline: refreshDeadline(taken.askedAt, this.leases.ttlMs), clock: leaseTimeClock(this.clock, taken.askedAt, this.options.elapsed) } : undefined;
    try {
      // Another process may have rotated while we waited: the store is the truth.
      const stored = await this.options.store.load();
      if (!stored) throw new TokenUnavailableError("no tokens stored for this tenant: authorize the integration first");
      this.current = stored;
      if (this.isFresh(stored, rejected)) return stored;
      // Checked again before anything is spent: the wait for the lease and the load took time.
      this.leases.assertFits(deadline, taken?.askedAt ?? this.clock.now());
      return await this.rotate(stored, rejected, true, lease);
    } finally {
      // Kept with unsaved tokens (see `Unsaved`), released once they are saved again or dropped.
      await this.releaseUnlessKept(handle);
    }
  }

  private async rotate(
    stored: StoredTokens,
    rejected: string | undefined,
    mayAdopt: boolean,
    lease?: { handle: RefreshLockHandle; askedAt: number; deadline: number; clock: Clock },
  ): Promise<StoredTokens> {
    const { refreshToken } = stored;
    const postponed = await this.postponedRefresh(stored, rejected);
    if (postponed !== undefined) return postponed;
    const issued = { replaced: refreshToken, handle: lease?.handle, issuedUnder: lease?.handle };
    const save = (tokens: StoredTokens) => this.leases.keepingAlive(lease?.handle, () => this.persist(tokens, issued), lease?.askedAt);
    const spending = this.options.spending ?? ((work) => work());
    let tokens: StoredTokens;
    try {
      // From the request on, the refresh token may be spent: the section ends once its successor is saved.
      tokens = await spending(async () => {
        let set: TokenSet;
        try {
          // Timed on the lease's clock: its deadline passes in real time, whatever steps the wall clock takes.
          set = await refresh(lease === undefined ? this.options : { ...this.options, clock: lease.clock }, refreshToken, lease?.deadline);
        } catch (error) {
          // The sent token is spent: its successor is saved, without an access token (the next call refreshes with it).
          if (error instanceof IncompleteTokenSetError) await save({ refreshToken: error.rotatedRefreshToken() });
          throw error;
        }
        const now = this.clock.now();
        const rotated = this.skew.received(storedTokensOf(set, now), now);
        await save(rotated);
        return rotated;
      });
    } catch (error) {
      // A failed save is rethrown as it is: only the token endpoint judges a grant.
      if (!isRejectedGrant(error)) throw error;
      const reloaded = await reloadAfterRefusal(error, () => this.options.store.load(), this.options.logger);
      if (mayAdopt && reloaded && reloaded.refreshToken !== refreshToken) {
        this.current = reloaded;
        this.report("rotated_elsewhere", "refresh token was rotated by another process; using the stored tokens");
        return this.isFresh(reloaded, rejected) ? reloaded : this.rotate(reloaded, rejected, false, lease);
      }
      this.options.onEvent?.("reauthorization_required");
      throw reauthorizationRequired("the provider rejected the refresh token", error, refreshToken);
    }
    this.options.onEvent?.("refreshed");
    return tokens;
  }

  /**
   * Asks the store whether a refresh may spend the refresh token now ({@link TokenStore.beforeRefresh}: nothing is
   * spent yet, so a store that could not save the successor, such as a secret near its version quota, stops it here).
   * When it may not, but `stored`'s access token still works (not the rejected one, not expired: the refresh was only
   * early, within `refreshSkewMs`), the refresh is postponed rather than failed: that token is used until it expires,
   * without asking again, and the refresh is tried once it has. Returns the tokens to use, or undefined to refresh now.
   */
  private async postponedRefresh(stored: StoredTokens, rejected: string | undefined): Promise<StoredTokens | undefined> {
    const { accessToken, accessTokenExpiresAt: until } = stored;
    const early = this.usable(accessToken, rejected) && until !== undefined && until > this.clock.now();
    try {
      await this.options.store.beforeRefresh?.(early);
      return undefined;
    } catch (error) {
      if (!early) throw error;
      // The token expired while the store answered: the refresh is no longer early, so ask again as such.
      if (until <= this.clock.now()) return this.postponedRefresh(stored, rejected);
      this.postponed = { accessToken, until };
      const file = refusedFile(error);
      this.options.logger?.warn("token refresh postponed: the token store cannot take a new token now; the current access token is used until it expires", {
        reason: errorLabel(error),
        ...(file === undefined ? {} : { file }),
        expiresInSeconds: Math.round((until - this.clock.now()) / 1000),
      });
      return stored;
    }
  }


  /**
   * Saves before use: until the save succeeds the new tokens are kept aside (with the refresh token they replaced and
   * the leases of `held`, see `Unsaved`), never handed out.
   */
  private async persist(tokens: StoredTokens, held: Omit<Unsaved, "tokens">): Promise<void> {
    try {
      await this.options.store.save(tokens);
    } catch (error) {
      this.unsaved = { tokens, ...held };
      // Only the error's name travels: a store's message could quote the tokens it failed to write.
      const reason = errorLabel(error);
      throw new TokenUnavailableError(`rotated tokens could not be saved to the token store (${reason}); they will be saved again before use`);
    }
    this.unsaved = undefined;
    this.current = tokens;
    // Newly issued: even a token string the provider refused before is good again (a provider may issue it anew).
    if (tokens.accessToken !== undefined) this.refused.delete(tokens.accessToken);
  }
}
