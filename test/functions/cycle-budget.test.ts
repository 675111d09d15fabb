import { Tracer } from "@aws-lambda-powertools/tracer";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ACCESS_TOKEN_TTL_SECONDS } from "../../sandbox/index.js";
import { CYCLE_SAFETY_MARGIN_MS, MIN_CONFORM_TIMEOUT_MS, MIN_CYCLE_BUDGET_MS, MIN_POLLER_TIMEOUT_MS, loadConfig } from "../../shared/aws/config.js";
import { runCycle } from "../../shared/aws/cycle.js";
import { createRotationHandler } from "../../shared/aws/handlers.js";
import type { RotationEvent } from "../../shared/aws/rotation.js";
import { FunctionTimeoutTooShortError, LambdaConfigurationError } from "../../shared/aws/errors.js";
import { TOKEN_LEASE_TTL_MS, createTenantRuntime, type TenantRuntime } from "../../shared/aws/runtime.js";
import { DEFAULT_DEADLINE_GRACE_MS } from "../../shared/bridge/deps.js";
import type { Logger } from "../../shared/bridge/ports.js";
import { createHarness, lambdaContext, type Harness } from "./support/harness.js";

const silent: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
/** The shortest budget whose cycle can start a token refresh at all: the refresh's whole lease must end by the calls' deadline. */
const REFRESH_FITS_MS = TOKEN_LEASE_TTL_MS - DEFAULT_DEADLINE_GRACE_MS;

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => h.close());

/** Syncs the backlog with a default poller, lets the access token expire, then adds transactions to pull. */
async function expiredTokenWithBacklog(): Promise<number> {
  expect((await h.poller("transactions")()).outcome).toBe("complete");
  h.sandbox.control.advanceClock(ACCESS_TOKEN_TTL_SECONDS + 1);
  const company = h.sandbox.control.company(h.companyId);
  if (company === undefined) throw new Error("no company");
  h.sandbox.control.state.createTransactions(company, { count: 3 });
  return h.pendingAtProvider();
}

/** A runtime of the harness's tenant as a poller container builds it, its cycles run with a deadline of our choosing. */
function runtime(): Promise<TenantRuntime> {
  return createTenantRuntime({ config: loadConfig(h.env), clients: h.clients()(), logger: silent, metrics: { add: () => undefined }, clock: h.clock, fetch: h.fetch });
}

describe("the cycle budget and the token refresh (sandbox clock: no time passes unless advanced)", () => {
  it("refreshes an expired access token only with a budget of at least the refresh lease less the calls' grace", async () => {
    const pending = await expiredTokenWithBacklog();
    const presented = h.refreshTokensPresented.length;
    const bridge = await runtime();

    // 1 ms short: the refresh is never started, and the cycle ends `deadline` with nothing pulled, no error.
    const short = await runCycle(bridge, "transactions", { deadline: h.clock.now() + REFRESH_FITS_MS - 1 });
    expect(short).toMatchObject({ status: "completed", report: { outcome: "deadline", pulled: 0 } });
    expect(h.refreshTokensPresented.length).toBe(presented);
    expect(h.pendingAtProvider()).toBe(pending);

    // Just enough, but only for a cycle that reaches its first provider call at once: a second spent before is too long.
    const late = h.clock.now() + REFRESH_FITS_MS;
    h.sandbox.control.advanceClock(1);
    expect(await runCycle(bridge, "transactions", { deadline: late })).toMatchObject({ status: "completed", report: { outcome: "deadline", pulled: 0 } });
    expect(h.refreshTokensPresented.length).toBe(presented);

    const enough = await runCycle(bridge, "transactions", { deadline: h.clock.now() + REFRESH_FITS_MS });
    expect(enough).toMatchObject({ status: "completed", report: { outcome: "complete" } });
    expect(h.refreshTokensPresented.length).toBe(presented + 1);
    expect(h.pendingAtProvider()).toBe(0);
  });

  it("uses the token the other container refreshed, held in the store, when no refresh of its own fits before the deadline", async () => {
    expect((await h.poller("transactions")()).outcome).toBe("complete");
    // This container last used the token before it expired; the other one refreshed it since.
    const bridge = await runtime();
    expect(await runCycle(bridge, "transactions", { deadline: h.clock.now() + MIN_CYCLE_BUDGET_MS })).toMatchObject({ report: { outcome: "complete" } });
    const pending = await expiredTokenWithBacklog();
    expect(pending).toBeGreaterThan(0);
    const other = (await runtime()).tokenProvider;
    const closeWindow = other.openRefreshWindow();
    await other.getAccessToken();
    closeWindow();
    const presented = h.refreshTokensPresented.length;

    const short = await runCycle(bridge, "transactions", { deadline: h.clock.now() + REFRESH_FITS_MS - 1 });
    expect(short).toMatchObject({ status: "completed", report: { outcome: "complete" } });
    expect(h.refreshTokensPresented.length).toBe(presented);
    expect(h.pendingAtProvider()).toBe(0);
  });

  it("with the minimum budget, still refreshes once the cycle took the calls' whole grace to reach its first provider call", async () => {
    await expiredTokenWithBacklog();
    const bridge = await runtime();
    const deadline = h.clock.now() + MIN_CYCLE_BUDGET_MS;
    // The cycle lease, the token store and the PII salt check took that long (a slow table, the other poller's refresh).
    h.sandbox.control.advanceClock(DEFAULT_DEADLINE_GRACE_MS / 1000);
    expect(await runCycle(bridge, "transactions", { deadline })).toMatchObject({ status: "completed", report: { outcome: "complete" } });
    expect(h.pendingAtProvider()).toBe(0);
  });

  it("refuses a CYCLE_BUDGET_MS that could never refresh the token, instead of ending every cycle `deadline` with nothing pulled", async () => {
    const pending = await expiredTokenWithBacklog();
    const poll = h.poller("transactions", { env: { ...h.env, CYCLE_BUDGET_MS: String(REFRESH_FITS_MS - 1) } });
    const error = await poll(undefined, lambdaContext(900_000)).then(
      (result) => result,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(LambdaConfigurationError);
    expect((error as LambdaConfigurationError).issues.map((i) => i.variable)).toEqual(["CYCLE_BUDGET_MS"]);
    expect(h.pendingAtProvider()).toBe(pending);
  });

  it("runs with a CYCLE_BUDGET_MS of the minimum, refreshing the expired token", async () => {
    await expiredTokenWithBacklog();
    const poll = h.poller("transactions", { env: { ...h.env, CYCLE_BUDGET_MS: String(MIN_CYCLE_BUDGET_MS) } });
    expect(await poll(undefined, lambdaContext(900_000))).toMatchObject({ status: "completed", outcome: "complete" });
    expect(h.pendingAtProvider()).toBe(0);
  });

  it("stops an invocation's cycle at CYCLE_BUDGET_MS though its remaining time would allow more", async () => {
    const backlog = h.pendingAtProvider();
    // The first acknowledge answers after the budget: the cycle ends with its page in hand, the rest left.
    const fetch: Harness["fetch"] = async (input, init) => {
      if (String(input).endsWith("/transactions/acknowledge")) h.sandbox.control.advanceClock(MIN_CYCLE_BUDGET_MS / 1_000 + 1);
      return h.fetch(input, init);
    };
    const poll = h.poller("transactions", { env: { ...h.env, CYCLE_BUDGET_MS: String(MIN_CYCLE_BUDGET_MS) }, fetch });
    const stopped = await poll(undefined, lambdaContext(900_000));
    expect(stopped).toMatchObject({ status: "completed", outcome: "deadline" });
    expect(stopped.published).toBeLessThan(backlog);
    expect(h.pendingAtProvider()).toBeGreaterThan(0);
  });

  it("takes the cycle's deadline from the time left once its runtime is built, not from the time left at entry", async () => {
    const { context } = h.invocation(MIN_POLLER_TIMEOUT_MS);
    // Building the container's runtime takes all but 29 s of the invocation: less than the margin kept back.
    const build = h.clients();
    const slow = () => {
      h.sandbox.control.advanceClock((MIN_POLLER_TIMEOUT_MS - CYCLE_SAFETY_MARGIN_MS + 1_000) / 1_000);
      return build();
    };
    const result = await h.poller("transactions", { clients: slow })(undefined, context);
    expect(result).toMatchObject({ status: "completed", outcome: "deadline", published: 0 });
    expect(h.refreshTokensPresented).toEqual([]);
  });
});

describe("a poller whose Lambda timeout was lowered by hand (config cannot see it: only the remaining time shows it)", () => {
  /** The poller as the stack configures a one-minute schedule (CYCLE_BUDGET_MS = its 60 s timeout less the margin). */
  const stackEnv = () => ({ ...h.env, CYCLE_BUDGET_MS: String(MIN_CYCLE_BUDGET_MS) });

  it("refuses an invocation of a 40 s function, before any provider call or AWS call, naming the timeout and the fix", async () => {
    const pending = await expiredTokenWithBacklog();
    const presented = h.refreshTokensPresented.length;
    let providerCalls = 0;
    const fetch: typeof h.fetch = (input, init) => {
      providerCalls += 1;
      return h.fetch(input, init);
    };
    let awsCalls = 0;
    const clients = h.clients((dynamo) => dynamo.middlewareStack.add((next) => (args) => ((awsCalls += 1), next(args)), { step: "initialize" }));
    const poll = h.poller("transactions", { env: stackEnv(), fetch, clients });
    const secretCalls = h.secrets.calls.length;
    const published = h.published.length;
    const error = await poll(undefined, lambdaContext(40_000)).then(
      (result) => result,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(FunctionTimeoutTooShortError);
    expect((error as Error).message).toMatch(/timeout .*40 s.* at least 60 s/);
    expect((error as Error).message).toMatch(/the stack sets 60 s/);
    expect(providerCalls).toBe(0);
    expect(awsCalls).toBe(0);
    // Not even the secret's read a container's runtime starts with, nor a publish.
    expect(h.secrets.calls.slice(secretCalls)).toEqual([]);
    expect(h.published.length).toBe(published);
    expect(h.refreshTokensPresented.length).toBe(presented);
    expect(h.pendingAtProvider()).toBe(pending);
    const failed = h.output.map((line) => JSON.parse(line) as Record<string, unknown>).find((doc) => doc["message"] === "Cycle failed");
    expect(failed).toMatchObject({ error: { name: "FunctionTimeoutTooShortError" } });
  });

  it("refuses a timeout 1 s under the minimum, and runs the stack's, read a few ms after the invocation started", async () => {
    const pending = await expiredTokenWithBacklog();
    const poll = h.poller("transactions", { env: stackEnv() });
    await expect(poll(undefined, lambdaContext(MIN_POLLER_TIMEOUT_MS - 1_000))).rejects.toBeInstanceOf(FunctionTimeoutTooShortError);
    expect(h.pendingAtProvider()).toBe(pending);
    // Lambda timeouts are whole seconds: 60 s with a few ms gone before the handler started.
    expect(await poll(undefined, lambdaContext(MIN_POLLER_TIMEOUT_MS - 7))).toMatchObject({ status: "completed", outcome: "complete" });
    expect(h.pendingAtProvider()).toBe(0);
  });

  it("does not refuse a container's first invocation that lost its time to an Init phase run within it, only warm ones that still see too little", async () => {
    await expiredTokenWithBacklog();
    // A 60 s function whose Init phase overran its 10 s: Lambda ran it again within the first invocation, 25 s of it.
    const poll = h.poller("transactions", { env: stackEnv(), processUptimeMs: () => 25_000 });
    expect(await poll(undefined, lambdaContext(35_000))).toMatchObject({ status: "completed" });
    // The same container, warm: 35 s left at entry is now the timeout.
    await expect(poll(undefined, lambdaContext(35_000))).rejects.toBeInstanceOf(FunctionTimeoutTooShortError);
  });

  it("takes the time lost before a first invocation from the process's uptime (seconds) when not told otherwise", async () => {
    await expiredTokenWithBacklog();
    vi.spyOn(process, "uptime").mockReturnValue(25);
    const poll = h.poller("transactions", { env: stackEnv(), processUptimeMs: undefined });
    expect(await poll(undefined, lambdaContext(35_000))).toMatchObject({ status: "completed" });
    await expect(poll(undefined, lambdaContext(35_000))).rejects.toBeInstanceOf(FunctionTimeoutTooShortError);
  });

  it("counts the process's uptime for the container's first invocation only, whatever that invocation was (a conform-pii pass, a malformed event)", async () => {
    const afterConform = h.poller("transactions", { env: stackEnv(), processUptimeMs: () => 25_000 });
    expect(await afterConform({ action: "conform-pii" }, lambdaContext(35_000))).toMatchObject({ status: "completed", action: "conform-pii" });
    await expect(afterConform(undefined, lambdaContext(35_000))).rejects.toBeInstanceOf(FunctionTimeoutTooShortError);
    const afterMalformed = h.poller("transactions", { env: stackEnv(), processUptimeMs: () => 25_000 });
    await expect(afterMalformed({ cursor: "abc" }, lambdaContext(35_000))).rejects.toMatchObject({ name: "PollEventError", field: "cursor" });
    await expect(afterMalformed(undefined, lambdaContext(35_000))).rejects.toBeInstanceOf(FunctionTimeoutTooShortError);
  });

  it("refuses a re-drive too (it reads the provider), but not a conform-pii pass, which needs no token", async () => {
    const poll = h.poller("transactions", { env: stackEnv() });
    await expect(poll({ action: "redrive" }, lambdaContext(40_000))).rejects.toBeInstanceOf(FunctionTimeoutTooShortError);
    expect(await poll({ action: "conform-pii" }, lambdaContext(40_000))).toMatchObject({ status: "completed", action: "conform-pii" });
  });

  it("refuses a conform-pii pass whose timeout leaves it no time past the 30 s kept back, which read nothing and gave no cursor on every invoke", async () => {
    // Snapshots under full, to be masked once the mode is redact.
    expect(await h.poller("transactions", { env: { ...stackEnv(), PII_MODE: "full" } })()).toMatchObject({ outcome: "complete" });
    const poll = h.poller("transactions", { env: stackEnv() });
    const error = await poll({ action: "conform-pii" }, lambdaContext(CYCLE_SAFETY_MARGIN_MS)).then(
      (result) => result,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(FunctionTimeoutTooShortError);
    expect(error).toMatchObject({ timeoutMs: CYCLE_SAFETY_MARGIN_MS, minimumMs: MIN_CONFORM_TIMEOUT_MS, stackTimeoutMs: MIN_POLLER_TIMEOUT_MS });
    expect((error as Error).message).toMatch(/timeout is too short: 30 s or less, where a conform-pii pass needs at least 35 s/);
    expect((error as Error).message).toMatch(/reads no snapshot/);
    expect((error as Error).message).toMatch(/the stack sets 60 s/);
    // From the minimum on, the pass reads and re-masks (the stack's 60 s leaves it far more).
    const pass = await poll({ action: "conform-pii" }, lambdaContext(MIN_CONFORM_TIMEOUT_MS - 7));
    expect(pass).toMatchObject({ status: "completed", action: "conform-pii", outcome: "complete" });
    expect(pass.rewritten).toBeGreaterThan(0);
  });

  it("refuses the card poller's cycles alike; the rotation function has no such entry check (it bounds its refresh by the remaining time: rotate-token.test.ts)", async () => {
    await expect(h.poller("cards", { env: stackEnv() })(undefined, lambdaContext(40_000))).rejects.toBeInstanceOf(FunctionTimeoutTooShortError);
    const rotation = createRotationHandler({ env: h.env, clients: h.clients(), fetch: h.fetch, clock: h.clock, tracer: new Tracer({ enabled: false }) });
    // A hand-made invoke, refused for what it is (after the point a timeout check would have refused it).
    await expect(rotation({} as RotationEvent, lambdaContext(1_000))).rejects.toThrow(/Rotation event must be/);
  });
});
