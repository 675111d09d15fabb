import { describe, expect, it } from "vitest";
import { DEFAULT_BACKOFF, backoffDelay, chunk, isAwsTimeout, isRetryableAwsError, waitPasses } from "../../shared/aws/retry.js";
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
