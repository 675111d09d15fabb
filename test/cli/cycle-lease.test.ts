import { describe, expect, it } from "vitest";
import type { LockHandle } from "../../shared/bridge/ports.js";
import { withCycleLock } from "../../shared/cli/cycle-lease.js";
import { CliError, EXIT } from "../../shared/cli/errors.js";
import { runCycle } from "../../shared/cli/local-cycles.js";
import { harnessPerTest, openHarnessBridge, warningRecorder } from "./helpers.js";

const startHarness = harnessPerTest();

/** A clock whose waits pass at once, moving its time on by what they waited. */
function steppingClock(): { waits: number[]; clock: { now(): number; sleep(ms: number): Promise<void> } } {
  let now = Date.now();
  const waits: number[] = [];
  return {
    waits,
    clock: {
      now: () => now,
      sleep: async (ms) => {
        waits.push(ms);
        now += ms;
      },
    },
  };
}

/** Resolves once `done` holds, a turn of the event loop at a time (the keep-alive renews between them). */
async function until(done: () => boolean): Promise<void> {
  for (let turn = 0; !done(); turn += 1) {
    // Bounded, so a keep-alive that never renews fails here rather than at the test's timeout.
    if (turn === 10_000) throw new Error("the keep-alive never got there");
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe("cycle lease keep-alive", () => {
  it("renews the cycle lease for its full 30 s every 10 s while a cycle runs, so a long cycle never lets it lapse", async () => {
    const harness = await startHarness();
    const { bridge: opened } = await openHarnessBridge(harness);
    const { waits, clock } = steppingClock();
    const renewals: number[] = [];
    const handle: LockHandle = {
      renew: async (ttlMs) => {
        renewals.push(ttlMs);
        return true;
      },
      release: async () => undefined,
    };
    const bridge = { ...opened, clock, lock: { tryAcquire: async () => handle } };

    expect(await withCycleLock(bridge, () => until(() => renewals.length >= 2).then(() => "done"))).toBe("done");
    expect(renewals.slice(0, 2)).toEqual([30_000, 30_000]);
    expect(waits.slice(0, 2)).toEqual([10_000, 10_000]);
  });

  it("warns the person running the bridge when a renewal finds the cycle lease lost or fails, by the failure's name only", async () => {
    const harness = await startHarness();
    const { logger, warnings } = warningRecorder();
    const { bridge: opened } = await openHarnessBridge(harness, { logger });
    const { clock } = steppingClock();
    let renewals = 0;
    const handle: LockHandle = {
      renew: async () => {
        if ((renewals += 1) === 1) return false;
        throw new RangeError("renewal broke, secret-looking detail");
      },
      release: async () => undefined,
    };
    const bridge = { ...opened, clock, lock: { tryAcquire: async () => handle } };

    expect(await withCycleLock(bridge, () => until(() => warnings.length >= 2).then(() => "done"))).toBe("done");
    expect(warnings.slice(0, 2)).toEqual([
      ["the cycle lease was lost; another process may start a cycle", undefined],
      ["renewing the cycle lease failed", { error: "RangeError" }],
    ]);
  });
});

describe("cycle lease refusal", () => {
  it("still says another process runs a cycle (exit 1) when the lock cannot name the holder", async () => {
    const harness = await startHarness();
    const { bridge: opened } = await openHarnessBridge(harness);
    const lock = { tryAcquire: async () => undefined, holderOf: () => Promise.reject(new Error("EACCES: permission denied, open")) };

    const error = await runCycle({ ...opened, lock }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CliError);
    expect((error as CliError).exitCode).toBe(EXIT.failed);
    expect((error as Error).message).toMatch(new RegExp(`^another bridge process is running a cycle, re-drive or conform-pii on this state directory \\(`));
  });
});

describe("cycle lease an earlier cycle could not release", () => {
  it("renews it for the full 30 s at the next cycle, and forgets it once that renewal found it lost", async () => {
    const harness = await startHarness();
    const { bridge: opened } = await openHarnessBridge(harness);
    const keptRenewals: number[] = [];
    const kept: LockHandle = {
      renew: async (ttlMs) => {
        keptRenewals.push(ttlMs);
        return false;
      },
      release: async () => {
        throw Object.assign(new Error("ENOSPC: no space left on device"), { code: "ENOSPC" });
      },
    };
    const fresh = (): LockHandle => ({ renew: async () => true, release: async () => undefined });
    const handles = [kept, fresh(), fresh()];
    const bridge = { ...opened, lock: { tryAcquire: async () => handles.shift() } };

    for (const cycle of ["first", "second", "third"]) expect(await withCycleLock(bridge, async () => cycle)).toBe(cycle);
    expect(handles).toEqual([]);
    expect(keptRenewals).toEqual([30_000]);
  });
});

describe("cycle lease a release refused", () => {
  // A lock adapter's own error type (named, so not a plain Error) still carries the file system's code: the warning
  // names the code the person can act on (a full or read-only disk), not the adapter's class.
  it("warns by the system error code of a named error the release threw, not by its name", async () => {
    const harness = await startHarness();
    const { logger, warnings } = warningRecorder();
    const { bridge: opened } = await openHarnessBridge(harness, { logger });
    class LeaseReleaseError extends Error {
      override readonly name = "LeaseReleaseError";
      readonly code = "EROFS";
    }
    const handle: LockHandle = {
      renew: async () => true,
      release: async () => {
        throw new LeaseReleaseError("read-only file system");
      },
    };
    expect(await withCycleLock({ ...opened, lock: { tryAcquire: async () => handle } }, async () => "done")).toBe("done");
    expect(warnings).toEqual([["releasing the cycle lease failed; the next cycle of this process takes it again, another process once it runs out", { error: "EROFS" }]]);
  });
});

describe("cycle lease binding of a PII salt", () => {
  it("opens under another PII mode beside a salt other than the recorded one, and keeps the recorded fingerprint for a return to hash", async () => {
    const harness = await startHarness();
    const hashed = { ...harness.env, BRIDGE_PII_MODE: "hash", BRIDGE_PII_SALT: "the-owner's-salt-0123456789" };
    const redacting = { ...hashed, BRIDGE_PII_MODE: "redact", BRIDGE_PII_SALT: "a-leftover-salt-0123456789" };
    const cycleUnder = async (env: Record<string, string>) => runCycle((await openHarnessBridge({ ...harness, env })).bridge);

    expect((await cycleUnder(hashed)).complete).toBe(true);
    expect((await cycleUnder(redacting)).complete).toBe(true);
    expect((await cycleUnder(hashed)).complete).toBe(true);
  });
});
