/**
 * Typed errors of the bridge engine. None carries a secret, a token or a PII value.
 */
import type { CycleReport } from "./report.js";

/** Base class of every error the bridge engine throws. */
export class BridgeError extends Error {
  override name = "BridgeError";
}

/** The engine was given settings it cannot work with (e.g. PII mode `hash` without a salt). */
export class BridgeConfigurationError extends BridgeError {
  override name = "BridgeConfigurationError";
}

/** A snapshot store was handed a scan cursor it did not issue (mistyped, cut short, or from another store). */
export class SnapshotCursorError extends BridgeError {
  override name = "SnapshotCursorError";

  constructor(options?: ErrorOptions) {
    super("Not a cursor of this snapshot store: pass one its scan returned", options);
  }
}

/**
 * A store call held to a deadline (`StoreCallOptions.deadline`) stopped before sending again what it had not done yet,
 * as the deadline had passed. The caller is out of time, not facing a store fault; a cycle ends with outcome
 * `deadline`, acknowledges nothing of the page, and the next cycle redoes it. `cause` holds the failure that called for
 * the retry, when there was one (a throttled call); none for entries DynamoDB left unprocessed.
 */
export class StoreDeadlineExceededError extends BridgeError {
  override name = "StoreDeadlineExceededError";

  constructor(
    message: string,
    /** The deadline (epoch ms) the call was held to. */
    readonly deadline: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * A store write stopped at its deadline (a container frozen in a retry's backoff and thawed later, say): some of the
 * write may be durable, the rest is not.
 */
export class WriteDeadlineExceededError extends StoreDeadlineExceededError {
  override name = "WriteDeadlineExceededError";

  constructor(
    message: string,
    deadline: number,
    options?: ErrorOptions,
    /**
     * Ids of the entries the call had durably written before it stopped, when the store names them (the quarantine's
     * deleteMany: the records it deleted), so its caller counts what was done, not all of it as left.
     */
    readonly doneIds?: readonly string[],
  ) {
    super(message, deadline, options);
  }

  /**
   * This error naming `ids` done as well (a call of several batches adding those of the batches before it).
   *
   * @example
   * throw stopped.alsoDone(idsOfEarlierBatches);
   */
  alsoDone(ids: readonly string[]): WriteDeadlineExceededError {
    const options = this.cause === undefined ? undefined : { cause: this.cause };
    return new WriteDeadlineExceededError(this.message, this.deadline, options, [...ids, ...(this.doneIds ?? [])]);
  }
}

/**
 * A store read stopped at its deadline (a throttled table): nothing of it is returned. Retried on, it would run the
 * cycle past its invocation's timeout.
 */
export class ReadDeadlineExceededError extends StoreDeadlineExceededError {
  override name = "ReadDeadlineExceededError";
}

/** The StoreDeadlineExceededError (a read's or a write's) in `error`'s cause chain, if any (a step failure wraps a port's error). */
export function storeDeadlineExceeded(error: unknown): StoreDeadlineExceededError | undefined {
  return causeMatching(error, (e): e is StoreDeadlineExceededError => e instanceof StoreDeadlineExceededError);
}

/**
 * Why a `conformSnapshots` cursor was refused: `unversioned` (not of this version's form: one an earlier version
 * printed, which recorded no PII mode, or other text), `damaged` (cut short or edited), `tenant`, `mode` (made under
 * another PII mode), `fields` (made by a version that masks other personal fields), `superseded` (the store does not
 * hold the pass id it names: restored from a backup older than the cursor, another store, a later pass stopped or
 * completed since, or a cycle ran under another PII mode since).
 */
export type ConformCursorProblem = "unversioned" | "damaged" | "tenant" | "mode" | "fields" | "superseded";

/**
 * A `conformSnapshots` cursor that must not be taken as a place in the walk: the snapshots before it might not be in
 * the current form. Starting the pass over is always correct, only longer.
 */
export class ConformCursorError extends BridgeError {
  override name = "ConformCursorError";
  readonly problem: ConformCursorProblem;
  /** What is wrong with the cursor, for a person (no instruction: callers say how to start over in their terms). */
  readonly reason: string;

  constructor(problem: ConformCursorProblem, reason: string, options?: ErrorOptions) {
    super(`Conform cursor refused: ${reason}; start the pass over without it`, options);
    this.problem = problem;
    this.reason = reason;
  }
}

/** Context of a cycle that stopped before it finished. */
export interface CycleAbortContext {
  /** What the cycle did before it stopped; effects already made are durable. */
  readonly report: CycleReport;
  /** HTTP status of the provider failure, when there was one. */
  readonly status?: number;
  /** Provider request id of the failing call, when known. */
  readonly requestId?: string;
  /** The step that failed ({@link PUBLISH_STEP}, "write snapshots", a provider call, ...), when one did. */
  readonly step?: string;
}

/** The step of a cycle that hands events to the publisher (the event sink). */
export const PUBLISH_STEP = "publish events";

/**
 * A cycle stopped early because a dependency failed (provider, snapshot store, publisher, quarantine).
 * Everything done before the failure is durable; the next cycle resumes where this one stopped.
 */
export class CycleAbortedError extends BridgeError {
  override name = "CycleAbortedError";
  readonly report: CycleReport;
  readonly status?: number;
  readonly requestId?: string;
  readonly step?: string;

  constructor(message: string, context: CycleAbortContext, options?: ErrorOptions) {
    super(message, options);
    this.report = context.report;
    this.status = context.status;
    this.requestId = context.requestId;
    this.step = context.step;
  }
}

/**
 * The provider's refresh-token family is revoked: an operator must re-authorize the integration.
 * Retrying cannot help, so callers must stop (and alert), never loop.
 */
export class ReauthorizationNeededError extends CycleAbortedError {
  override name = "ReauthorizationNeededError";
}

/** The first error in `error`'s cause chain that `matches`, if any (the engine and the client wrap each other's errors). */
export function causeMatching<T>(error: unknown, matches: (e: unknown) => e is T): T | undefined {
  for (let e: unknown = error, depth = 0; e !== undefined && depth < 8; e = e instanceof Error ? e.cause : undefined, depth++) {
    if (matches(e)) return e;
  }
  return undefined;
}
