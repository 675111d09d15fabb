import { describe, expect, it } from "vitest";
import {
  causedByClientRefusal,
  concernsEveryCall,
  deadlineExceeded,
  errorContext,
  errorFields,
  isPageSizeRejection,
  isReauthorizationRequired,
  isTokenFailure,
  mapSingleReads,
  refusedForReference,
  retryDeferred,
  statusClass,
  StepFailure,
} from "../../shared/bridge/provider-errors.js";
import { ReauthorizationRequiredError, statusClassOf, TokenUnavailableError } from "../../shared/qashio/errors.js";

const failure = (name: string, status?: number) => Object.assign(new Error(`${name} ${status ?? ""}`), { name, ...(status === undefined ? {} : { status }) });

describe("statusClass (the engine's ProviderErrors dimension)", () => {
  it.each([
    [failure("ServerError", 503), "5xx"],
    [failure("RateLimitedError", 429), "4xx"],
    [failure("BadRequestError", 400), "4xx"],
    [failure("ServerError", 500), "5xx"],
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

describe("errorContext, deadlineExceeded and retryDeferred: the client's errors seen by name and shape", () => {
  it("logs a status and request id only when they have the client's types, and a thrown non-Error as its text", () => {
    const foreign = Object.assign(new Error("x"), { status: "500", requestId: 42 });
    expect(errorContext(foreign)).toEqual({ name: "Error", message: "x", status: undefined, requestId: undefined });
    expect(errorContext(Object.assign(new Error("y"), { status: 503, requestId: "req-1" }))).toMatchObject({ status: 503, requestId: "req-1" });
    expect(errorContext("socket hang up")).toEqual({ name: "Error", message: "socket hang up" });
  });

  it("takes an error of the client's name for the client's only with the fields the engine reads (a same-named error of another library is not)", () => {
    const named = (name: string, fields: object) => Object.assign(new Error(name), { name }, fields);
    expect(deadlineExceeded(named("DeadlineExceededError", {}))).toBeUndefined();
    const late = named("DeadlineExceededError", { deadline: 1_000 });
    expect(deadlineExceeded(new StepFailure("list", { cause: late }))).toBe(late);
    expect(retryDeferred(named("RetryDeferredError", { delayMs: 5 }))).toBeUndefined();
    expect(retryDeferred(named("RetryDeferredError", { attempt: 2 }))).toBeUndefined();
    const deferred = named("RetryDeferredError", { delayMs: 5, attempt: 2 });
    expect(retryDeferred(deferred)).toBe(deferred);
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

  it("is false for a refusal that was no 401: one with no answer (a family the store marks revoked, as the rotation throws) or a 403", () => {
    const markedRevoked = new ReauthorizationRequiredError("The provider revoked the bridge's token family for the current secret version");
    expect(causedByClientRefusal(new StepFailure("list transactions", { cause: markedRevoked }))).toBe(false);
    expect(causedByClientRefusal(new ReauthorizationRequiredError("refused", { status: 403 }))).toBe(false);
  });
});

describe("isReauthorizationRequired", () => {
  it("knows the client's refusal by its class's name, through the step a cycle wraps it in, and no other 401", () => {
    expect(isReauthorizationRequired(new StepFailure("list transactions", { cause: new ReauthorizationRequiredError("refused", { status: 400 }) }))).toBe(true);
    expect(isReauthorizationRequired(new StepFailure("list transactions", { cause: failure("UnauthorizedError", 401) }))).toBe(false);
  });
});

describe("isTokenFailure", () => {
  it("knows the client's TokenUnavailableError (no tokens stored, the lock held elsewhere), which names no path, through a step", () => {
    const noTokens = new TokenUnavailableError("no tokens stored for this tenant: authorize the integration first");
    expect(isTokenFailure(new StepFailure("list transactions", { cause: noTokens }))).toBe(true);
    expect(isTokenFailure(new StepFailure("list transactions", { cause: failure("ServerError", 503) }))).toBe(false);
  });
});

describe("isPageSizeRejection", () => {
  const refusal = (status: number, name: string, errors: unknown[]) => Object.assign(new Error("refused"), { name, status, errors });

  it("is true for a 400, or the client's InvalidRequestError, naming the page_size field, also through a step", () => {
    expect(isPageSizeRejection(refusal(400, "ApiError", [{ field: "memo" }, { field: "page_size", code: "OUT_OF_RANGE" }]))).toBe(true);
    expect(isPageSizeRejection(new StepFailure("list cards", { cause: refusal(422, "InvalidRequestError", [{ field: "page_size" }]) }))).toBe(true);
  });

  it("is false for another status, another field, or page_size named only as a code", () => {
    expect(isPageSizeRejection(refusal(422, "ApiError", [{ field: "page_size" }]))).toBe(false);
    expect(isPageSizeRejection(refusal(400, "ApiError", [{ field: "limit", code: "page_size" }, null]))).toBe(false);
  });
});

describe("errorFields", () => {
  it("names each entry's field (or (request)) and code, at most ten, then how many more", () => {
    const errors = [{ field: null, code: "A" }, ...Array.from({ length: 11 }, (_, i) => ({ field: `f${i}`, code: "B" }))];
    expect(errorFields(Object.assign(new Error("x"), { errors }))).toBe(
      `(request) A, ${Array.from({ length: 9 }, (_, i) => `f${i} B`).join(", ")} and 2 more`,
    );
    expect(errorFields(Object.assign(new Error("x"), { errors: [{ code: "C" }] }))).toBe("(request) C");
    expect(errorFields(new Error("x"))).toBeUndefined();
  });

  it("never quotes free text a provider put in a field or code, which may hold the refused value (a secret)", () => {
    const errors = [{ field: "client_secret=s3cr3t", code: "Bearer abc.def" }];
    expect(errorFields(Object.assign(new Error("x"), { errors }))).toBe("? ?");
  });
});

describe("concernsEveryCall and refusedForReference", () => {
  it("takes 401, 403 and 429 for failures of every call, other 4xx but 408 for a refusal of that reference", () => {
    for (const status of [401, 403, 429]) {
      expect(concernsEveryCall(failure("ApiError", status)), String(status)).toBe(true);
      expect(refusedForReference(failure("ApiError", status)), String(status)).toBe(false);
    }
    for (const status of [400, 404, 422, 499]) {
      expect(concernsEveryCall(failure("ApiError", status)), String(status)).toBe(false);
      expect(refusedForReference(new StepFailure("read card", { cause: failure("ApiError", status) })), String(status)).toBe(true);
    }
    for (const status of [408, 500, 399]) expect(refusedForReference(failure("ApiError", status)), String(status)).toBe(false);
    expect(refusedForReference(failure("NetworkError"))).toBe(false);
  });

  it("takes a token endpoint's 4xx, a revoked family with no answer, and TokenUnavailableError for failures of every call, not of a reference", () => {
    const tokenEndpoint400 = Object.assign(failure("BadRequestError", 400), { path: "/oauth2/token" });
    const revoked = new ReauthorizationRequiredError("refused", { status: 400 });
    for (const err of [tokenEndpoint400, revoked, Object.assign(failure("TokenUnavailableError"), { status: 404 })]) {
      const stepped = new StepFailure("read card", { cause: err });
      expect(isTokenFailure(stepped), err.name).toBe(true);
      expect(concernsEveryCall(stepped), err.name).toBe(true);
      expect(refusedForReference(stepped), err.name).toBe(false);
    }
    expect(isTokenFailure(new ReauthorizationRequiredError("The provider revoked the bridge's token family"))).toBe(true);
  });
});

describe("mapSingleReads", () => {
  it("throws a token failure among the failed reads rather than the first failure: the cycle then stops for the token", async () => {
    const token = failure("TokenUnavailableError");
    const run = mapSingleReads([0, 1], async (item) => {
      if (item === 0) throw failure("ServerError", 503);
      await new Promise((resolve) => setTimeout(resolve, 5));
      throw token;
    });
    await expect(run).rejects.toBe(token);
  });

  it("throws the first failure when none is a token failure, and passes each read its index, answers in order", async () => {
    const first = failure("ServerError", 503);
    const run = mapSingleReads([0, 1], async (item) => {
      if (item === 0) throw first;
      await new Promise((resolve) => setTimeout(resolve, 5));
      throw failure("ServerError", 502);
    });
    await expect(run).rejects.toBe(first);
    await expect(mapSingleReads(["a", "b", "c"], async (item, index) => `${item}${index}`)).resolves.toEqual(["a0", "b1", "c2"]);
  });
});
