/**
 * The token numbers docs/runbook.md gives an operator are the code's: how long a refresh lease keeps others off and a
 * tick waits for it, how long `authorize` waits before storing nothing, how soon a warm container sees a secret put
 * by hand, the version counts at which refreshes are postponed, and the time an invocation keeps back after its deadline. Each is a constant the code's own tests count in,
 * so only these hold them to the runbook an operator acts on.
 */
import { describe, expect, it } from "vitest";
import { CYCLE_SAFETY_MARGIN_MS, MIN_CONFORM_TIMEOUT_MS, MIN_ROTATION_TIMEOUT_MS, REFRESH_TIMEOUT_MARGIN_MS, TOKEN_LEASE_TTL_MS } from "../../shared/aws/config.js";
import { DEFAULT_SECRET_CACHE_TTL_MS, SECRET_VERSIONS_EARLY_REFRESH_LIMIT, SECRET_VERSIONS_PER_DAY_LIMIT } from "../../shared/aws/token-store.js";
import { AUTHORIZE_LEASE_WAIT_MS } from "../../shared/cli/authorize-command.js";
import { DEFAULT_LOCK_WAIT_MS } from "../../shared/qashio/auth/refresh-lease.js";
import { docText, numbersSaid } from "../doc-text.js";

/** The runbook, line breaks read as spaces. */
const RUNBOOK = docText("docs/runbook.md");

/** Every number the runbook gives where `pattern` (its one group a number) matches, in order; fails when it matches nowhere. */
const numbersAt = (pattern: RegExp): number[] => numbersSaid(RUNBOOK, pattern).map(([number = Number.NaN]) => number);

const seconds = (ms: number) => ms / 1000;

describe("the runbook's token numbers are the code's", () => {
  it("gives the refresh lease's life and a tick's wait for it as the pollers use them", () => {
    expect(numbersAt(/refresh lease holds other containers off for only (\d+) s/)).toEqual([seconds(TOKEN_LEASE_TTL_MS)]);
    expect(numbersAt(/a lease runs out (\d+) s after its holder last renewed it/)).toEqual([seconds(TOKEN_LEASE_TTL_MS)]);
    expect(numbersAt(/kept it for the whole (\d+) s the tick may wait/)).toEqual([seconds(DEFAULT_LOCK_WAIT_MS)]);
    expect(numbersAt(/still held by another process \(<holder>\) after (\d+) ms/)).toEqual([DEFAULT_LOCK_WAIT_MS]);
  });

  it("gives how long authorize --secret-id waits for the token lease before it stores nothing", () => {
    expect(numbersAt(/if the lease stays held (\d+) s it says so and stores nothing/)).toEqual([seconds(AUTHORIZE_LEASE_WAIT_MS)]);
  });

  it("gives how soon a warm container reads a secret put by hand, wherever it says so", () => {
    const minutes = numbersAt(/reads? the secret again within (\d+) minutes/);
    expect(minutes.length).toBeGreaterThanOrEqual(2);
    expect(new Set(minutes)).toEqual(new Set([DEFAULT_SECRET_CACHE_TTL_MS / 60_000]));
  });

  it("gives the secret version counts at which a refresh is postponed, and an early one", () => {
    expect(numbersAt(/The bridge refreshes at all only below (\d+) such versions/)).toEqual([SECRET_VERSIONS_PER_DAY_LIMIT]);
    expect(numbersAt(/From (\d+) on, it refreshes only tokens that have expired or that the provider refused/)).toEqual([SECRET_VERSIONS_EARLY_REFRESH_LIMIT]);
  });

  it("gives the time kept back after a cycle's deadline, and the timeouts under which a conform-pii pass or a rotation's refresh is refused", () => {
    const keptBack = [...numbersAt(/timeout less (\d+) s/), ...numbersAt(/(\d+) s kept back/), ...numbersAt(/`CYCLE_BUDGET_MS` \+ (\d+) s/)];
    expect(keptBack.length).toBeGreaterThanOrEqual(5);
    expect(new Set(keptBack)).toEqual(new Set([seconds(CYCLE_SAFETY_MARGIN_MS)]));
    expect(numbersAt(/runs down to a (\d+) s timeout/)).toEqual([seconds(MIN_CONFORM_TIMEOUT_MS)]);
    const [, mayRefuse, refuses] = /With less than (\d+) s it may refuse whenever it has to wait for a poller's refresh, with less than (\d+) s always/.exec(RUNBOOK) ?? [];
    expect(Number(mayRefuse)).toBe(seconds(MIN_ROTATION_TIMEOUT_MS));
    // Without a wait: the lease's life and the margin it must end by before the timeout.
    expect(Number(refuses)).toBe(seconds(TOKEN_LEASE_TTL_MS + REFRESH_TIMEOUT_MARGIN_MS));
  });
});
