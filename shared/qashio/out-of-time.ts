/**
 * When a request is out of time, unsent: no whole attempt fits before its deadline any more, or it was asked to stop.
 * Shared by the request loop (http.ts) and the rate gate's wait for a turn (rate-gate.ts), which end a request alike.
 */
import { DeadlineExceededError, type QashioError } from "./errors.js";
import type { Clock } from "../clock.js";

/** What of a request these checks read (`HttpRequest` fits). */
export interface TimedRequest {
  readonly method: string;
  readonly path: string;
  /** Epoch ms by which the request and its retries must be over (`HttpRequest.deadline`). */
  readonly deadline?: number;
  /** A stop request (`HttpRequest.stop`). */
  readonly stop?: AbortSignal;
}

/** The error a request out of time ends with: `last` is its latest failed attempt, if any. */
export function outOfTime(
  request: TimedRequest,
  what: "sent" | "retried",
  last?: QashioError,
  why = "a whole attempt no longer fits before its deadline",
): DeadlineExceededError {
  const where = { method: request.method, path: request.path };
  const after = last ? ` (last attempt: ${last.message})` : "";
  return new DeadlineExceededError(
    `${where.method} ${where.path} was not ${what}: ${why}${after}`,
    { ...where, deadline: request.deadline ?? Number.POSITIVE_INFINITY },
    last ? { cause: last } : undefined,
  );
}

/** Ends a request asked to stop (`request.stop`) as out of time, unsent: `last` is its latest failed attempt, if any. */
export function throwIfStopped(request: TimedRequest, last: QashioError | undefined): void {
  if (request.stop?.aborted) throw outOfTime(request, last === undefined ? "sent" : "retried", last, "it was asked to stop");
}

/**
 * Whether an attempt starting `delayMs` from now ends, at its timeout `timeoutMs`, by the request's deadline (if any).
 * The clock is read only for a request with a deadline.
 */
export function attemptFits(clock: Clock, timeoutMs: number, request: TimedRequest, delayMs: number): boolean {
  return request.deadline === undefined || clock.now() + delayMs + timeoutMs <= request.deadline;
}
