import type { Clock } from "../bridge/ports.js";

/** Backoff of the adapters' own retry loops (on top of the SDK's per-request retries; for timeouts, see isRetryableAwsError). */
export interface BackoffOptions {
  /** Attempts including the first. @default 8 */
  readonly maxAttempts: number;
  /** Ceiling of the delay before the second attempt (the delay is half to all of it), doubled each time. @default 50 */
  readonly baseDelayMs: number;
  /** Cap of one delay. @default 5000 */
  readonly maxDelayMs: number;
  /** Random source in [0, 1) for the jitter (equal jitter, see backoffDelay); tests pin it. @default Math.random */
  readonly random: () => number;
}

export const DEFAULT_BACKOFF: BackoffOptions = {
  maxAttempts: 8,
  baseDelayMs: 50,
  maxDelayMs: 5_000,
  random: Math.random,
};

/**
 * Delay before attempt `attempt + 1` (attempt is 1-based): exponential with "equal jitter", so it is never zero and
 * never above the cap.
 *
 * @example
 * await clock.sleep(backoffDelay(2, DEFAULT_BACKOFF)); // between 50 and 100 ms
 */
export function backoffDelay(attempt: number, options: BackoffOptions): number {
  const ceiling = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** (attempt - 1));
  return Math.round(ceiling / 2 + (options.random() * ceiling) / 2);
}

/** Error names AWS uses for throttling and transient service faults. */
const RETRYABLE_NAMES = new Set([
  "ThrottlingException",
  "Throttling",
  "TooManyRequestsException",
  "ProvisionedThroughputExceededException",
  "RequestLimitExceeded",
  "InternalServerError",
  "InternalServiceError",
  "InternalFailure",
  "InternalServiceErrorException",
  "ServiceUnavailable",
  "ServiceUnavailableException",
]);

/**
 * Timeouts and dropped or refused connections. The SDK's standard retry has already made its attempts on these (the
 * node handler names a timeout or a reset `TimeoutError`, with no `$retryable`; a refused connection stays a plain
 * `Error` with its system code, which the SDK retries as well), and each attempt may have waited a whole request
 * timeout: an adapter loop on top would multiply a silent endpoint's wait by its own attempts. Like a throttled call,
 * such a failure passes by itself, and a refused connection sent nothing.
 */
const TIMEOUT_NAMES = new Set(["TimeoutError", "RequestTimeout", "RequestTimeoutException", "ECONNRESET", "ECONNREFUSED", "EPIPE", "ETIMEDOUT"]);

/**
 * True for throttling and transient service faults worth another whole call (SDK v3 errors carry `name` and
 * `$retryable`). A timeout is not, as the SDK has already retried it, unless the SDK made one attempt only (its retry
 * quota, which timeouts drain, was empty: a single reset keep-alive socket would then fail the call): the adapter's
 * first call, `attempt` 1, is then worth one more.
 */
export function isRetryableAwsError(error: unknown, attempt = 1): boolean {
  if (typeof error !== "object" || error === null) return false;
  const candidate = error as { $retryable?: unknown; $metadata?: { httpStatusCode?: number; attempts?: number } };
  if (isAwsTimeout(error)) return attempt === 1 && candidate.$metadata?.attempts === 1;
  if (candidate.$retryable !== undefined || hasName(error, RETRYABLE_NAMES)) return true;
  const status = candidate.$metadata?.httpStatusCode;
  return status === 429 || (status !== undefined && status >= 500);
}

/** True for a timeout or dropped connection the SDK gave up on after its own attempts (see TIMEOUT_NAMES). */
export function isAwsTimeout(error: unknown): boolean {
  return hasName(error, TIMEOUT_NAMES);
}

function hasName(error: unknown, names: ReadonlySet<string>): boolean {
  if (typeof error !== "object" || error === null) return false;
  const { name, code } = error as { name?: unknown; code?: unknown };
  return (typeof name === "string" && names.has(name)) || (typeof code === "string" && names.has(code));
}

/**
 * Whether a wait of `delayMs` from now would end past `deadline` (epoch ms; none: never): the retry after it must
 * not start, so the caller's cycle ends in its time.
 *
 * @example
 * if (waitPasses(deadline, backoffDelay(attempt, backoff), clock)) return failForNow();
 */
export function waitPasses(deadline: number | undefined, delayMs: number, clock: Clock): boolean {
  return deadline !== undefined && clock.now() + delayMs > deadline;
}

/**
 * Runs `operation` until it succeeds, retrying only retryable AWS errors with backoff; the last error is rethrown.
 *
 * @example
 * const value = await withRetries(() => client.send(command), { clock, backoff: DEFAULT_BACKOFF });
 */
export async function withRetries<T>(
  operation: (attempt: number) => Promise<T>,
  options: {
    readonly clock: Clock;
    readonly backoff: BackoffOptions;
    readonly onRetry?: (error: unknown, attempt: number) => void;
    /** Whether a failed attempt is worth another. @default isRetryableAwsError */
    readonly retryable?: (error: unknown, attempt: number) => boolean;
    /** Epoch ms after which no retry starts: a failure whose backoff would pass it is thrown instead. */
    readonly deadline?: number;
  },
): Promise<T> {
  const retryable = options.retryable ?? isRetryableAwsError;
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await operation(attempt);
    } catch (error) {
      if (attempt >= options.backoff.maxAttempts || !retryable(error, attempt)) throw error;
      const delay = backoffDelay(attempt, options.backoff);
      if (waitPasses(options.deadline, delay, options.clock)) throw error;
      options.onRetry?.(error, attempt);
      await options.clock.sleep(delay);
    }
  }
}

/** Splits `items` into chunks of at most `size`. */
export function chunk<T>(items: readonly T[], size: number): T[][] {
  const chunks: T[][] = [];
  for (let i = 0; i < items.length; i += size) chunks.push(items.slice(i, i + size));
  return chunks;
}
