import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ACCESS_TOKEN_TTL_SECONDS } from "../../sandbox/index.js";
import { MIN_CYCLE_BUDGET_MS, loadConfig } from "../../shared/aws/config.js";
import { runCycle } from "../../shared/aws/cycle.js";
import { LambdaConfigurationError } from "../../shared/aws/errors.js";
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
});
