import { PutEventsCommand, type EventBridgeClient, type PutEventsRequestEntry } from "@aws-sdk/client-eventbridge";
import type { BridgeEvent, Clock, EventPublisher, Logger, PublishFailure, PublishOptions } from "../bridge/ports.js";
import { detailJson } from "../bridge/events/json.js";
import { systemClock } from "./clock.js";
import { PublishError } from "./errors.js";
import { errorLabel } from "../error-label.js";
import { outOfRangeIntegerIn } from "./event-integers.js";
import { MAX_ENTRY_BYTES, entrySize, reduceDetail, truncationsOf, type ReducedDetail } from "./event-size.js";
import { mapLimit } from "../bridge/map-limit.js";
import { DEFAULT_BACKOFF, backoffDelay, isAwsTimeout, isRetryableAwsError, waitPasses, withRetries, type BackoffOptions } from "./retry.js";

/** PutEvents accepts at most 10 entries per call. */
export const MAX_ENTRIES_PER_CALL = 10;
/** PutEvents calls of one publish in flight at once, unless configured otherwise. */
export const DEFAULT_PUBLISH_CONCURRENCY = 4;
/**
 * Per-entry codes saying the bridge may not publish here at all (IAM, the bus's resource policy, its KMS key, the
 * account named, a bus that is not there): true of every event until someone fixes the setup, and no fault of the event. Quarantined, a whole
 * backlog would be acknowledged into the quarantine and need a re-drive; failed for now at once, it stays at the
 * provider and goes out by itself once the setup is fixed (EventsFailed and SyncLag alarm meanwhile).
 */
const SETUP_ENTRY_ERROR = /AccessDenied|NotAuthorized|KMS|InvalidAccountId|NotFound/i;
/** Stands for an entry a failing answer left blank: retried as for an unknown code. */
const UNANSWERED_ENTRY = { ErrorCode: "NoEventId", ErrorMessage: "answered with neither an event id nor an error code" } as const;
/** Per-entry error codes that another attempt cannot fix (RedactionFailure: listed as not retryable by AWS). */
const PERMANENT_ENTRY_ERROR = /Malformed|Invalid|Validation|RedactionFailure/i;

export interface EventBridgePublisherOptions {
  readonly client: EventBridgeClient;
  /** Name or ARN of the bus. */
  readonly eventBusName: string;
  /** @default systemClock */
  readonly clock?: Clock;
  /** Retry of failed entries and throttled calls. @default DEFAULT_BACKOFF */
  readonly backoff?: Partial<BackoffOptions>;
  /** Byte limit of one call (and so of one entry). @default MAX_ENTRY_BYTES (256 KB) */
  readonly maxRequestBytes?: number;
  /** PutEvents calls in flight at once. @default DEFAULT_PUBLISH_CONCURRENCY */
  readonly concurrency?: number;
  readonly logger?: Logger;
}

/** One publish's calls: what stops them, so no call starts after it. */
interface PublishState {
  /**
   * Why: a call failed as a whole, past its retries for a passing fault (more calls would only add to the bus's
   * throttling), or refused in a batch's first round (the publish raises, whatever the other calls deliver).
   */
  stopped?: string;
}

/**
 * A call's failure past its retries that passes by itself (throttling, a 5xx, a timeout, a refused connection), rather
 * than a refusal of the setup (IAM, the bus, its key), a malformed request, or an answer the publisher cannot read (no
 * AWS cause).
 */
function isPassingFailure(error: PublishError): boolean {
  const { cause } = error;
  const name = (cause as { name?: unknown } | undefined)?.name;
  if (typeof name === "string" && (SETUP_ENTRY_ERROR.test(name) || PERMANENT_ENTRY_ERROR.test(name))) return false;
  return isAwsTimeout(cause) || isRetryableAwsError(cause);
}

interface Pending {
  readonly event: BridgeEvent;
  readonly entry: PutEventsRequestEntry;
  readonly size: number;
}

/**
 * Publishes bridge events to EventBridge: entries sized before sending with EventBridge's rules, packed into calls of
 * at most 10 entries and 256 KB, oversized events reduced by the rules in `event-size.ts`. When a call answers
 * `FailedEntryCount > 0` only the failed entries are retried, with backoff. Entries with a permanent error code, that
 * cannot be reduced, or that would send an integer outside int64 (unsent, see `event-integers.ts`), are returned in
 * `failed` for the engine to quarantine; entries whose retryable code outlasts the retries are returned with
 * `retryable: true`, which the engine leaves pending for the next cycle. A call failing as a whole (throttled, 5xx, timed
 * out, its connection refused) is retried, then fails its pending entries for now, as their own codes outlasting the
 * retries would, and no call of the publish starts after it (those batches fail for now unsent, and the calls in flight
 * neither retry as a whole nor re-send their failed entries): the other batches' deliveries stand, and the engine stops
 * the cycle when the bus takes none of two batches. A batch queued behind the calls in flight starts none past
 * `deadline`: its entries fail for now unsent. A call refused by the setup (access denied, no bus, its key), or one
 * whose answer cannot be read, raises `PublishError` when it is a batch's first: the engine then acknowledges nothing
 * and the cycle fails, loudly.
 *
 * @example
 * const publisher = new EventBridgePublisher({ client: new EventBridgeClient({}), eventBusName: "bridge" });
 * const { failed } = await publisher.publish(events);
 */
export class EventBridgePublisher implements EventPublisher {
  readonly #client: EventBridgeClient;
  readonly #bus: string;
  readonly #clock: Clock;
  readonly #backoff: BackoffOptions;
  readonly #maxBytes: number;
  readonly #concurrency: number;
  readonly #logger: Logger | undefined;

  constructor(options: EventBridgePublisherOptions) {
    this.#client = options.client;
    this.#bus = options.eventBusName;
    this.#clock = options.clock ?? systemClock;
    this.#backoff = { ...DEFAULT_BACKOFF, ...options.backoff };
    this.#maxBytes = options.maxRequestBytes ?? MAX_ENTRY_BYTES;
    this.#concurrency = options.concurrency ?? DEFAULT_PUBLISH_CONCURRENCY;
    this.#logger = options.logger;
  }

  async publish(events: readonly BridgeEvent[], options: PublishOptions = {}): Promise<{ readonly failed: readonly PublishFailure[] }> {
    const failed: PublishFailure[] = [];
    const pending: Pending[] = [];
    for (const event of events) {
      const prepared = this.#prepare(event);
      if ("reason" in prepared) failed.push(prepared);
      else pending.push(prepared);
    }
    const state: PublishState = {};
    // A batch past the first `concurrency` waits for a call to end: it is `later`, as a store's later batch is.
    const results = await mapLimit(this.#pack(pending), this.#concurrency, (batch, index) =>
      this.#sendWithRetries(batch, options.deadline, state, index >= this.#concurrency),
    );
    for (const batchFailures of results) failed.push(...batchFailures);
    return { failed };
  }

  /**
   * Builds the entry, reducing the detail when it is over the limit; an entry whose detail as sent holds an integer
   * outside int64 fails for good instead (see `event-integers.ts`).
   */
  #prepare(event: BridgeEvent): Pending | PublishFailure {
    const toEntry = (detail: ReducedDetail): PutEventsRequestEntry => ({
      EventBusName: this.#bus,
      Source: event.source,
      DetailType: event.detailType,
      Time: new Date(event.time),
      // The object's text as the engine made it to hash it: not serialised again (a reduced detail's copy is).
      Detail: detailJson(detail),
    });
    let detail: ReducedDetail = event.detail;
    let entry = toEntry(detail);
    let size = entrySize(entry);
    if (size > this.#maxBytes) {
      const reduced = reduceDetail(event.detail, toEntry, this.#maxBytes);
      if (reduced === undefined) {
        return { event, reason: `oversized: entry is ${size} bytes and trimming arrays cannot bring it under ${this.#maxBytes}` };
      }
      this.#logger?.warn("Event reduced to fit EventBridge's entry limit", {
        eventId: event.detail.id,
        type: event.detailType,
        bytes: size,
        truncated: truncationsOf(reduced),
      });
      detail = reduced;
      entry = toEntry(reduced);
      size = entrySize(entry);
    }
    // Sent, it could fail the whole call rather than its entry, and so the cycle, every cycle.
    const outside = outOfRangeIntegerIn(entry.Detail ?? "", detail);
    if (outside !== undefined) {
      return { event, reason: `integer out of range: ${outside.path} is ${outside.text}, EventBridge takes integers within int64` };
    }
    return { event, entry, size };
  }

  /** Greedy packing in input order: a new call starts at 10 entries or when the next entry would pass the byte limit. */
  #pack(pending: readonly Pending[]): Pending[][] {
    const batches: Pending[][] = [];
    let current: Pending[] = [];
    let bytes = 0;
    for (const item of pending) {
      if (current.length === MAX_ENTRIES_PER_CALL || (current.length > 0 && bytes + item.size > this.#maxBytes)) {
        batches.push(current);
        current = [];
        bytes = 0;
      }
      current.push(item);
      bytes += item.size;
    }
    if (current.length > 0) batches.push(current);
    return batches;
  }

  /**
   * Sends `batch`, retrying its failed entries with backoff; returns the entries that failed for good, and those still
   * failing after the last attempt, whose next attempt would wait past `deadline`, or that another call's failure as a
   * whole (`state`) keeps from being re-sent, as failed for now. A `later`
   * batch (queued behind the calls in flight) sends nothing once `deadline` has passed: its entries fail for now.
   */
  async #sendWithRetries(batch: readonly Pending[], deadline: number | undefined, state: PublishState, later: boolean): Promise<PublishFailure[]> {
    const failures: PublishFailure[] = [];
    let pending = batch;
    let lastReason = new Map<Pending, string>();
    // Their last code, or their call's failure, was one worth retrying (throttling, InternalFailure, unknown, a 5xx): a
    // later cycle may get through, so the engine keeps the items pending instead of quarantining and acknowledging them.
    const failForNow = (why: string) => {
      for (const item of pending) {
        const last = lastReason.get(item);
        failures.push({ event: item.event, reason: last === undefined ? why : `${last} (${why})`, retryable: true });
      }
    };
    // Not sent into a bus that just failed a call past its retries: more calls would only add to its throttling.
    if (state.stopped !== undefined) {
      failForNow(`not sent: an earlier call failed as a whole (${state.stopped})`);
      return failures;
    }
    // Started past the deadline, its call could run the cycle past its invocation's timeout, or, from a container
    // thawed after its lease lapsed, put an older state on the bus after a later cycle's.
    if (later && deadline !== undefined && this.#clock.now() >= deadline) {
      failForNow("not sent: the calls' deadline passed before its call could start");
      return failures;
    }
    for (let attempt = 1; pending.length > 0; attempt += 1) {
      if (attempt > 1) {
        const delay = backoffDelay(attempt - 1, this.#backoff);
        if (waitPasses(deadline, delay, this.#clock)) {
          failForNow(`after ${attempt - 1} attempts: the cycle's deadline comes before the next`);
          break;
        }
        await this.#clock.sleep(delay);
        // Another call of the publish failed as a whole meanwhile (see PublishState): re-sending would only add to the
        // bus's throttling, or be in vain for a publish that raises.
        if (state.stopped !== undefined) {
          failForNow(`not sent again: an earlier call failed as a whole (${state.stopped})`);
          break;
        }
      }
      let entries;
      try {
        entries = await this.#send(pending, attempt, deadline, state);
      } catch (error) {
        if (!(error instanceof PublishError)) throw error;
        // Throttling or a fault that passes: raising would have the engine acknowledge none of the page (the other
        // batches' deliveries, this batch's entries answered in earlier rounds) and re-send it all every cycle while it
        // lasts, so only the entries still pending fail for now. In round 1 anything else (the setup refusing, an
        // unreadable answer) fails the publish as a whole, loudly; later rounds leave even that to the next round 1.
        const passing = isPassingFailure(error);
        if (passing || attempt === 1) state.stopped ??= error.message;
        if (!passing && attempt === 1) throw error;
        failForNow(error.message);
        break;
      }
      const retry: Pending[] = [];
      const reasons = new Map<Pending, string>();
      entries.forEach((result, index) => {
        const item = pending[index];
        if (item === undefined || result.ErrorCode === undefined) return;
        const reason = `${result.ErrorCode}: ${result.ErrorMessage ?? "no message"}`;
        if (SETUP_ENTRY_ERROR.test(result.ErrorCode)) failures.push({ event: item.event, reason, retryable: true });
        else if (PERMANENT_ENTRY_ERROR.test(result.ErrorCode)) failures.push({ event: item.event, reason });
        else {
          retry.push(item);
          reasons.set(item, reason);
        }
      });
      pending = retry;
      lastReason = reasons;
      if (pending.length > 0 && attempt >= this.#backoff.maxAttempts) {
        failForNow(`after ${attempt} attempts`);
        break;
      }
    }
    return failures;
  }

  /**
   * One PutEvents call, retried as a whole while it throws a retryable error, the retry can start by `deadline`, and no
   * other call of the publish has failed as a whole (`state`, see PublishState).
   */
  async #send(pending: readonly Pending[], entryAttempt: number, deadline: number | undefined, state: PublishState) {
    let attempts = 0;
    try {
      return await withRetries(
        async (attempt) => {
          attempts = attempt;
          const response = await this.#client.send(new PutEventsCommand({ Entries: pending.map((item) => item.entry) }));
          const entries = response.Entries ?? [];
          if ((response.FailedEntryCount ?? 0) > 0 && entries.length !== pending.length) {
            throw new PublishError("PutEvents answered a different number of entries than sent", attempt, response.$metadata.requestId);
          }
          // In an answer with failures, an entry with neither an event id nor an error code is not known delivered.
          return (response.FailedEntryCount ?? 0) > 0 ? entries.map((entry) => (entry.EventId === undefined && entry.ErrorCode === undefined ? UNANSWERED_ENTRY : entry)) : entries;
        },
        {
          clock: this.#clock,
          backoff: this.#backoff,
          retryable: (error, attempt) => state.stopped === undefined && !(error instanceof PublishError) && isRetryableAwsError(error, attempt),
          ...(deadline === undefined ? {} : { deadline }),
          onRetry: (error, attempt) => this.#logger?.warn("PutEvents call throttled or failed, retrying", { attempt, error: errorLabel(error) }),
        },
      );
    } catch (error) {
      if (error instanceof PublishError) throw error;
      const requestId = (error as { $metadata?: { requestId?: string } }).$metadata?.requestId;
      throw new PublishError(`PutEvents failed after ${attempts} attempts (entry round ${entryAttempt}): ${errorLabel(error)}`, attempts, requestId, {
        cause: error,
      });
    }
  }
}
