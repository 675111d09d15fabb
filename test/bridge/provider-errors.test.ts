import { describe, expect, it } from "vitest";
import { statusClass } from "../../shared/bridge/provider-errors.js";
import { statusClassOf } from "../../shared/qashio/errors.js";

const failure = (name: string, status?: number) => Object.assign(new Error(`${name} ${status ?? ""}`), { name, ...(status === undefined ? {} : { status }) });

describe("statusClass (the engine's ProviderErrors dimension)", () => {
  it.each([
    [failure("ServerError", 503), "5xx"],
    [failure("RateLimitedError", 429), "4xx"],
    [failure("InvalidResponseError", 302), "other"],
    [failure("InvalidResponseError", 200), "other"],
    [failure("TimeoutError"), "timeout"],
    [failure("NetworkError"), "network"],
    [failure("DeadlineExceededError"), "other"],
  ])("classes %s as %s, as the client's retries are classed, so one metric dimension has one set of values", (error, expected) => {
    expect(statusClass(error)).toBe(expected);
    expect(statusClassOf(error)).toBe(expected);
  });
});
