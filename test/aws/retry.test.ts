import { describe, expect, it } from "vitest";
import { DEFAULT_BACKOFF, backoffDelay, chunk, isAwsTimeout, isRetryableAwsError, waitPasses, withRetries } from "../../shared/aws/retry.js";
import { FakeClock } from "./support/clock.js";

describe("backoffDelay", () => {
  const backoff = (random: number) => ({ ...DEFAULT_BACKOFF, random: () => random });

  it("doubles from the base with equal jitter: never zero, never above the step", () => {
    // Attempt 3's step is 50 * 2^2 = 200 ms: half of it fixed, the other half jittered.
    expect(backoffDelay(3, backoff(0))).toBe(100);
    expect(backoffDelay(3, backoff(0.999))).toBeLessThanOrEqual(200);
    expect(backoffDelay(3, backoff(0.999))).toBeGreaterThan(190);
  });

  it("caps a delay at maxDelayMs however many attempts were made", () => {
    expect(backoffDelay(30, backoff(0.999))).toBeLessThanOrEqual(DEFAULT_BACKOFF.maxDelayMs);
    expect(backoffDelay(30, backoff(0))).toBe(DEFAULT_BACKOFF.maxDelayMs / 2);
  });
});

describe("isRetryableAwsError", () => {
  const failure = (name: string, httpStatusCode: number, extra: object = {}) => Object.assign(new Error(name), { name, $metadata: { httpStatusCode }, ...extra });

  it("retries throttling and server faults by status, and what the SDK marks retryable, whatever the name", () => {
    expect(isRetryableAwsError(failure("SlowDown", 429))).toBe(true);
    expect(isRetryableAwsError(failure("SomeServerFault", 500))).toBe(true);
    expect(isRetryableAwsError(failure("SomeServerFault", 503))).toBe(true);
    expect(isRetryableAwsError(failure("Whatever", 400, { $retryable: {} }))).toBe(true);
  });

  it("does not retry a client error nor something that is not an AWS error", () => {
    expect(isRetryableAwsError(failure("ValidationException", 400))).toBe(false);
    expect(isRetryableAwsError(failure("AccessDeniedException", 403))).toBe(false);
    expect(isRetryableAwsError("ThrottlingException")).toBe(false);
    expect(isRetryableAwsError(null)).toBe(false);
  });

  it("knows an error by its code when Node names it only Error (a dropped connection, a throttle)", () => {
    const reset = Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET", $metadata: { attempts: 1 } });
    expect(isAwsTimeout(reset)).toBe(true);
    expect(isRetryableAwsError(reset)).toBe(true);
    expect(isRetryableAwsError(Object.assign(new Error("slow down"), { code: "ThrottlingException" }))).toBe(true);
  });
});

describe("waitPasses", () => {
  it("lets a wait that ends exactly at the deadline start, and none that ends after it", () => {
    const clock = new FakeClock();
    expect(waitPasses(clock.now() + 100, 100, clock)).toBe(false);
    expect(waitPasses(clock.now() + 100, 101, clock)).toBe(true);
    expect(waitPasses(undefined, Number.MAX_SAFE_INTEGER, clock)).toBe(false);
  });
});

describe("chunk", () => {
  it("splits into chunks of at most the size, with no empty chunk", () => {
    expect(chunk([1, 2, 3, 4], 2)).toEqual([[1, 2], [3, 4]]);
    expect(chunk([1, 2, 3], 2)).toEqual([[1, 2], [3]]);
    expect(chunk([], 2)).toEqual([]);
  });
});

describe("the AWS error names retried", () => {
  // A 400 with no `$retryable`: the name alone makes it retryable (or a timeout), as the SDK may throw it.
  const named = (name: string) => Object.assign(new Error(name), { name, $metadata: { httpStatusCode: 400, attempts: 3 } });

  it.each([
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
  ])("retries %s by its name alone", (name) => {
    expect(isRetryableAwsError(named(name))).toBe(true);
  });

  // The SDK's own list of connection failures it retries (NODEJS_TIMEOUT_ERROR_CODES) besides its TimeoutError.
  it.each(["TimeoutError", "RequestTimeout", "RequestTimeoutException", "ECONNRESET", "ECONNREFUSED", "EPIPE", "ETIMEDOUT"])("knows %s as a timeout", (name) => {
    expect(isAwsTimeout(named(name))).toBe(true);
  });
});

describe("isRetryableAwsError on a timeout", () => {
  const timeout = (attempts: number) => Object.assign(new Error("timed out"), { name: "TimeoutError", $metadata: { attempts } });

  it("retries it once only: on the adapter's first call, when the SDK made a single attempt", () => {
    expect(isRetryableAwsError(timeout(1), 1)).toBe(true);
    expect(isRetryableAwsError(timeout(1), 2)).toBe(false);
    expect(isRetryableAwsError(timeout(3), 1)).toBe(false);
  });
});

describe("withRetries", () => {
  const throttled = () => Object.assign(new Error("slow down"), { name: "ThrottlingException", $metadata: { httpStatusCode: 400 } });
  const backoff = { ...DEFAULT_BACKOFF, random: () => 0 };

  it("defaults to 8 attempts with delays doubling from 50 ms up to a 5 s cap (equal jitter: half of each fixed)", () => {
    expect(DEFAULT_BACKOFF).toMatchObject({ maxAttempts: 8, baseDelayMs: 50, maxDelayMs: 5_000 });
    expect(backoffDelay(30, backoff)).toBe(2_500);
  });

  it("makes maxAttempts attempts, numbered from 1, sleeping each backoff delay between them, then rethrows the last error", async () => {
    const clock = new FakeClock();
    const attempts: number[] = [];
    const retries: number[] = [];
    const errors = [throttled(), throttled(), throttled()];
    const error = await withRetries(
      async (attempt) => {
        attempts.push(attempt);
        throw errors[attempt - 1];
      },
      { clock, backoff: { ...backoff, maxAttempts: 3 }, onRetry: (e, attempt) => retries.push(attempt) },
    ).catch((e: unknown) => e);
    expect(error).toBe(errors[2]);
    expect(attempts).toEqual([1, 2, 3]);
    expect(retries).toEqual([1, 2]);
    expect(clock.sleeps).toEqual([backoffDelay(1, backoff), backoffDelay(2, backoff)]);
  });

  it("starts the next attempt only once the backoff's sleep has ended", async () => {
    const events: string[] = [];
    const clock = {
      now: () => 0,
      sleep: async () => {
        events.push("sleep");
        await new Promise((resolve) => setTimeout(resolve, 5));
        events.push("woke");
      },
    };
    const value = await withRetries(
      async (attempt) => {
        events.push(`attempt ${attempt}`);
        if (attempt === 1) throw throttled();
        return "ok";
      },
      { clock, backoff },
    );
    expect(value).toBe("ok");
    expect(events).toEqual(["attempt 1", "sleep", "woke", "attempt 2"]);
  });

  it("reports a retry before its backoff's sleep: an invocation ending in the sleep still logs why it waited", async () => {
    const events: string[] = [];
    const clock = { now: () => 0, sleep: async () => void events.push("sleep") };
    await withRetries(
      async (attempt) => {
        if (attempt === 1) throw throttled();
        return "ok";
      },
      { clock, backoff, onRetry: (_, attempt) => events.push(`retry ${attempt}`) },
    );
    expect(events).toEqual(["retry 1", "sleep"]);
  });

  it("asks the given retryable, with the attempt, instead of the AWS rule", async () => {
    const asked: number[] = [];
    const plain = new Error("not an AWS error");
    let calls = 0;
    const value = await withRetries(
      async () => {
        calls += 1;
        if (calls < 3) throw plain;
        return calls;
      },
      { clock: new FakeClock(), backoff, retryable: (e, attempt) => (asked.push(attempt), e === plain) },
    );
    expect(value).toBe(3);
    expect(asked).toEqual([1, 2]);
    const refused = await withRetries(() => Promise.reject(throttled()), { clock: new FakeClock(), backoff, retryable: () => false }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ name: "ThrottlingException" });
  });

  it("throws the failure instead of retrying when the backoff would end past the deadline", async () => {
    const clock = new FakeClock();
    let calls = 0;
    const error = await withRetries(
      async () => {
        calls += 1;
        throw throttled();
      },
      { clock, backoff, deadline: clock.now() + backoffDelay(1, backoff) - 1 },
    ).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "ThrottlingException" });
    expect(calls).toBe(1);
    expect(clock.sleeps).toEqual([]);
  });
});
