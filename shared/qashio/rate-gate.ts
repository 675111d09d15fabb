/**
 * The client-wide rate gate after a provider's 429: the wait it asks for holds every request of the client, a wait
 * longer than a retry would wait refuses them unsent, and a slow start follows the wait. The request loop (http.ts)
 * takes a turn here before each attempt and frees it after.
 */
import { RateLimitedError, type QashioError } from "./errors.js";
import { attemptFits, outOfTime, throwIfStopped, type TimedRequest } from "./out-of-time.js";
import type { Clock } from "../clock.js";

/**
 * Quiet after a throttling wait that ends the throttle: no 429 for this long after the wait's end (or for as long as
 * the wait, when longer). The spec shows no rate window (§8.3): a minute is the widest that rate limits commonly count
 * over, and a wait a window's limit asks for is at most that window.
 */
const THROTTLE_QUIET_MS = 60_000;
/**
 * Longest refusal a 429's Retry-After starts (see `RateGate.refusedUntil`): a wait of days, or past any date, is more
 * likely a provider's mistake than its limit, and must not silence a tenant until its process is replaced; an hour on,
 * one request finds out.
 */
const MAX_REFUSAL_MS = 3_600_000;

/** Why a request waiting for its turn after a 429 ends unsent once no whole attempt fits before its deadline. */
const HELD_BACK_PAST_DEADLINE = "the requests held back after the provider's rate limit leave no whole attempt before its deadline";

/** A request held by the client's throttling wait or its slow start (see `RateGate.waitForTurn`). */
interface TurnWaiter {
  /** The request's attempt number: the one that spent the most attempts gets the first turn. */
  readonly attempt: number;
  /** The latest throttling instant it has waited out. */
  waited: number;
  /** Set with a slot reserved for it (`inFlight` counts it). */
  granted: boolean;
  /** Ends its current sleep: a turn, a stop or a new throttling wait. */
  interrupt?: AbortController;
}

/**
 * The turns of one client's requests. A request takes a turn before each attempt ({@link takeTurnAtOnce}, else
 * {@link waitForTurn}) and frees it when the attempt is over ({@link endTurn}); a 429 holds or refuses the client
 * ({@link throttle}, {@link refuse}).
 */
export class RateGate {
  /**
   * Epoch ms before which no request of this client is sent: the end of the wait the last 429 asked for. The provider
   * throttles the token, so the company, not the one request (spec §7 leaves it open, see docs/spec-gaps.md).
   */
  private notBefore = Number.NEGATIVE_INFINITY;
  /** How long the 429 that set {@link notBefore} asked to wait: no wait for it is longer (see {@link waitForTurn}). */
  private notBeforeWaitMs = 0;
  /**
   * Epoch ms before which every request of this client ends at once, unsent, with `RateLimitedError`: the end of a
   * 429's wait longer than a retry would wait (`maxRetryAfterMs`). Nothing is sent to the provider before it; then the
   * slow start begins as after any other 429 ({@link notBefore} is the same instant).
   */
  private refusedUntil = Number.NEGATIVE_INFINITY;
  /** Whether the provider asked for longer than {@link refusedUntil} ({@link MAX_REFUSAL_MS}), for the error's text. */
  private refusalCapped = false;
  /**
   * Slow start after a throttling wait: how many requests of this client may be in flight. A 429 sets it to 1 (one
   * probe when the wait ends); it doubles each time as many answers other than a 429 came to requests sent since as it
   * allows (a round), until it is more than the requests in flight and waiting and the client is unlimited again.
   * Without it every request that waited went at the wait's end, and a provider taking fewer per window answered the
   * burst 429 again, spending the reads' attempts.
   */
  private inFlightLimit = Number.POSITIVE_INFINITY;
  /** Answers other than a 429 in the slow start's current round (see {@link inFlightLimit}). */
  private answeredInRound = 0;
  /** Requests of this client between taking their turn and their answer (see {@link inFlightLimit}). */
  private inFlight = 0;
  /** Counts the 429s that restarted the slow start: an answer to a request sent before the latest one does not grow it. */
  private slowStarts = 0;
  /**
   * Epoch ms from which the throttle is over (see {@link THROTTLE_QUIET_MS}): a request that then finds the client idle
   * lifts {@link inFlightLimit}, so a slow start left behind by work that ended (a warm Lambda container, `run
   * --interval`) does not hold the next batch.
   */
  private throttleOverAt = Number.NEGATIVE_INFINITY;
  /** Requests held by {@link notBefore} or {@link inFlightLimit}, in arrival order. */
  private readonly turnWaiters: TurnWaiter[] = [];

  /** `timeoutMs` is an attempt's timeout: a waiting request's last start is that long before its deadline. */
  constructor(
    private readonly clock: Clock,
    private readonly timeoutMs: number,
  ) {}

  /** The slow start a turn taken now belongs to, for {@link endTurn} and {@link throttledSince}. */
  get round(): number {
    return this.slowStarts;
  }

  /**
   * Ends a request inside a 429's wait longer than a retry would wait ({@link refusedUntil}) at once, unsent, with the
   * wait left: sent, it would only meet a 429 of its own. `last` is its latest failed attempt, if any.
   */
  throwIfRefused(request: TimedRequest, last: QashioError | undefined): void {
    const leftMs = this.refusedUntil - this.clock.now();
    if (leftMs <= 0) return;
    const { method, path } = request;
    throw new RateLimitedError(
      `${method} ${path} was not sent: the provider asked for no request before ${new Date(this.refusedUntil).toISOString()} (a 429's Retry-After${this.refusalCapped ? ", capped at an hour" : ""}), ${Math.ceil(leftMs / 1000)} s from now`,
      { status: 429, method, path, retryAfterMs: leftMs },
      last ? { cause: last } : undefined,
    );
  }

  /**
   * Takes the turn at once when nothing holds the request (no waiter, no limit reached, no wait past `waitedFor`, the
   * end of the latest throttling wait it has waited out), without an await or an allocation; else the request waits
   * for it ({@link waitForTurn}). An idle client past its throttle is unlimited again first.
   */
  takeTurnAtOnce(waitedFor: number): boolean {
    this.endThrottleIfOver();
    if (this.turnWaiters.length === 0 && this.inFlight < this.inFlightLimit && this.waitedOut(waitedFor)) {
      this.inFlight += 1;
      return true;
    }
    return false;
  }

  /**
   * Whether a 429 came since the turn taken in slow start `sentIn` after waiting out `waitedFor`: that turn is then
   * handed back ({@link endTurn}) and a new one waited for.
   */
  throttledSince(sentIn: number, waitedFor: number): boolean {
    return sentIn !== this.slowStarts || !this.waitedOut(waitedFor);
  }

  /** Whether {@link notBefore} is past, or the instant was waited for already (a test clock may not move). */
  private waitedOut(waited: number): boolean {
    return this.notBefore <= waited || this.clock.now() >= this.notBefore;
  }

  /**
   * Waits for the request's turn and reserves it: until {@link notBefore}, so a request does not spend an attempt on a
   * 429 another one already met, then for room under {@link inFlightLimit}, where the request that spent the most
   * attempts goes first (it is the nearest to failing). Returns the instant waited for. A wait that would leave no
   * whole attempt before the deadline, or a stop request, ends the request as out of time, unsent.
   */
  async waitForTurn(request: TimedRequest, last: QashioError | undefined, waitedFor: number, attempt: number): Promise<number> {
    const what = last === undefined ? "sent" : "retried";
    const waiter: TurnWaiter = { attempt, waited: waitedFor, granted: false };
    const onStop = (): void => waiter.interrupt?.abort();
    request.stop?.addEventListener("abort", onStop, { once: true });
    this.turnWaiters.push(waiter);
    // Slept for once: a clock that does not move while sleeping (tests) cannot make the wait for a turn spin.
    let lastStartSlept = false;
    try {
      for (;;) {
        // Before the turn too: a stop or a refusal that came with it still ends the request unsent.
        throwIfStopped(request, last);
        this.throwIfRefused(request, last);
        if (waiter.granted && this.waitedOut(waiter.waited)) return waiter.waited;
        if (waiter.granted) {
          // A 429 answered between the turn and this: hand the turn back and wait that out first.
          waiter.granted = false;
          this.inFlight -= 1;
          this.turnWaiters.push(waiter);
          this.admitWaiters();
          continue;
        }
        const interrupt = new AbortController();
        waiter.interrupt = interrupt;
        const until = this.notBefore;
        // The wait runs in real time (timers): a wall clock stepped back (NTP, a person) since the 429 must not add the
        // step to it, an hour's step an hour's hang.
        const waitMs = Math.min(until - this.clock.now(), this.notBeforeWaitMs);
        if (until > waiter.waited && waitMs > 0) {
          if (!this.attemptFits(request, waitMs)) throw outOfTime(request, what, last, "the provider's rate limit leaves no whole attempt before its deadline");
          await this.clock.sleep(waitMs, interrupt.signal);
          // Each instant is waited for once, so such a clock cannot hold a request here either. Not interrupted, so
          // no 429 moved the wait meanwhile: the next pass finds it over and admits the waiters below.
          if (!interrupt.signal.aborted) waiter.waited = Math.max(waiter.waited, until);
          continue;
        }
        // The wait is over. The clock may have ended it since the waiters were last admitted, with room free (the
        // request came a moment before the wait's end): admitted now, or it would wait for room nothing hands it.
        // The one admission a pass needs, before any await: a request that comes or that slept to the wait's end gets
        // here, and while the wait is not over no waiter is newly due (waitedOut holds only for those past it already).
        this.admitWaiters();
        if (waiter.granted) continue;
        // Else room comes when a request in flight ends, at the latest within its timeout.
        if (!this.attemptFits(request, 0)) throw outOfTime(request, what, last, HELD_BACK_PAST_DEADLINE);
        if (request.deadline !== undefined && !lastStartSlept) {
          const lastStart = request.deadline - this.timeoutMs;
          const from = this.clock.now();
          await this.clock.sleep(lastStart - from, interrupt.signal);
          if (!interrupt.signal.aborted) {
            // Reached also when the clock moved but not quite that far: a Node timer may end a millisecond or more early.
            if (this.clock.now() > from || this.clock.now() >= lastStart) throw outOfTime(request, what, last, HELD_BACK_PAST_DEADLINE);
            lastStartSlept = true;
          }
        } else {
          await new Promise((resolve) => interrupt.signal.addEventListener("abort", resolve, { once: true }));
        }
      }
    } catch (error) {
      // A turn reserved but not taken is handed on.
      if (waiter.granted) this.endTurn(this.slowStarts, false);
      throw error;
    } finally {
      const at = this.turnWaiters.indexOf(waiter);
      if (at >= 0) this.turnWaiters.splice(at, 1);
      request.stop?.removeEventListener("abort", onStop);
    }
  }

  /** Gives the room under {@link inFlightLimit} to the waiters past the wait, the most attempts spent first. */
  private admitWaiters(): void {
    while (this.inFlight < this.inFlightLimit) {
      let next: TurnWaiter | undefined;
      for (const waiter of this.turnWaiters) {
        if (this.waitedOut(waiter.waited) && (next === undefined || waiter.attempt > next.attempt)) next = waiter;
      }
      if (next === undefined) return;
      this.turnWaiters.splice(this.turnWaiters.indexOf(next), 1);
      next.granted = true;
      this.inFlight += 1;
      next.interrupt?.abort();
    }
  }

  /**
   * Lifts the slow start's limit once the throttle is plainly over: past {@link throttleOverAt} and the client idle.
   * A request in flight or waiting means a slow start under way, whose rounds still measure the provider: it goes on.
   */
  private endThrottleIfOver(): void {
    if (this.inFlightLimit === Number.POSITIVE_INFINITY || this.inFlight > 0 || this.turnWaiters.length > 0) return;
    if (this.clock.now() < this.throttleOverAt) return;
    this.inFlightLimit = Number.POSITIVE_INFINITY;
    this.answeredInRound = 0;
  }

  /** A 429 moved {@link notBefore}: one request at a time again, and the waiters wait that out. */
  private restartSlowStart(): void {
    this.inFlightLimit = 1;
    this.answeredInRound = 0;
    this.slowStarts += 1;
    for (const waiter of this.turnWaiters) waiter.interrupt?.abort();
  }

  /**
   * Frees the turn a request took in slow start `sentIn` ({@link round}). `answered`: an answer other than a 429 came.
   * Answers other than a 429 to requests sent since the latest slow start count towards its round (doubling per answer
   * overshot: the first answers of a round opened the gate before its 429 came); a failure without an answer
   * (network, timeout) only frees the turn, so the next waiter probes.
   */
  endTurn(sentIn: number, answered: boolean): void {
    this.inFlight -= 1;
    if (this.turnWaiters.length === 0 && this.inFlightLimit === Number.POSITIVE_INFINITY) return;
    if (sentIn === this.slowStarts && answered && ++this.answeredInRound >= this.inFlightLimit) {
      const doubled = this.inFlightLimit * 2;
      this.inFlightLimit = doubled > this.inFlight + this.turnWaiters.length ? Number.POSITIVE_INFINITY : doubled;
      this.answeredInRound = 0;
    }
    this.admitWaiters();
  }

  /**
   * A 429 asked for `askedMs`, longer than a retry would wait: every request of the client is refused until it has
   * passed ({@link refusedUntil}; an hour at most, {@link MAX_REFUSAL_MS}), then the slow start begins as after any
   * other 429.
   */
  refuse(askedMs: number): void {
    const waitMs = Math.min(askedMs, MAX_REFUSAL_MS);
    const until = this.clock.now() + waitMs;
    if (until >= this.refusedUntil) {
      this.refusedUntil = until;
      this.refusalCapped = askedMs > waitMs;
    }
    this.throttle(waitMs);
  }

  /** A 429 asked for `waitMs`: every request of the client waits it out, then the slow start begins again. */
  throttle(waitMs: number): void {
    const until = this.clock.now() + waitMs;
    if (until >= this.notBefore) {
      this.notBefore = until;
      this.notBeforeWaitMs = waitMs;
    }
    this.throttleOverAt = Math.max(this.throttleOverAt, this.notBefore + Math.max(THROTTLE_QUIET_MS, waitMs));
    this.restartSlowStart();
  }

  private attemptFits(request: TimedRequest, delayMs: number): boolean {
    return attemptFits(this.clock, this.timeoutMs, request, delayMs);
  }
}
