import { describe, expect, it } from "vitest";
import { causedByClientRefusal, statusClass, StepFailure } from "../../shared/bridge/provider-errors.js";
import { ReauthorizationRequiredError, statusClassOf } from "../../shared/qashio/errors.js";

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

describe("causedByClientRefusal", () => {
  const refused = (errors: { field: null; code: string; message: string }[]) => new ReauthorizationRequiredError("refused", { status: 401, errors });

  it("finds, through the step a cycle wraps it in, a token endpoint 401 naming no invalid_grant: the client credentials may be at fault", () => {
    expect(causedByClientRefusal(new StepFailure("list transactions", { cause: refused([]) }))).toBe(true);
  });

  it("is false for a refusal naming invalid_grant, and for a failure that is no refusal at all", () => {
    expect(causedByClientRefusal(new StepFailure("list transactions", { cause: refused([{ field: null, code: "invalid_grant", message: "" }]) }))).toBe(false);
    expect(causedByClientRefusal(failure("ServerError", 503))).toBe(false);
  });
});
