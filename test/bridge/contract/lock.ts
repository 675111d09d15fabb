/**
 * Contract every Lock adapter must pass. Time is driven by the fake clock handed to the factory,
 * so adapters must take their notion of "now" from an injected clock.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Lock } from "../../../shared/bridge/ports.js";
import { FakeClock } from "../fakes.js";

/** What a factory hands the suite: two instances (as two processes would hold) over one backing store. */
export interface LockFixture {
  readonly lock: Lock;
  readonly peer: Lock;
  readonly cleanup: () => Promise<void>;
}

/**
 * Registers the Lock contract for one adapter.
 *
 * @example
 * ```ts
 * describeLockContract("FileLock", async (clock) => ({ lock: new FileLock(dir, { clock }), peer: new FileLock(dir, { clock }), cleanup }));
 * ```
 */
export function describeLockContract(name: string, factory: (clock: FakeClock) => Promise<LockFixture>): void {
  describe(`Lock contract: ${name}`, () => {
    let clock: FakeClock;
    let fixture: LockFixture;
    beforeEach(async () => {
      clock = new FakeClock();
      fixture = await factory(clock);
    });
    afterEach(async () => {
      await fixture.cleanup();
    });

    it("grants a free lock and refuses it to another owner while the lease runs", async () => {
      const held = await fixture.lock.tryAcquire("refresh", 10_000);
      expect(held).toBeDefined();
      expect(await fixture.peer.tryAcquire("refresh", 10_000)).toBeUndefined();
      expect(await fixture.lock.tryAcquire("refresh", 10_000)).toBeUndefined();
    });

    it("lets another owner in after release", async () => {
      const held = await fixture.lock.tryAcquire("refresh", 10_000);
      await held!.release();
      expect(await fixture.peer.tryAcquire("refresh", 10_000)).toBeDefined();
    });

    it("lets no renew after release take the lease again (a keep-alive's renew landing late): it answers false and the lock stays free", async () => {
      const held = await fixture.lock.tryAcquire("refresh", 10_000);
      await held!.release();
      expect(await held!.renew(10_000)).toBe(false);
      expect(await fixture.peer.tryAcquire("refresh", 10_000)).toBeDefined();
    });

    it("releases a lease that ran out while nobody took it (its holder stalled past it): a renew after answers false and the lock stays free", async () => {
      const held = await fixture.lock.tryAcquire("refresh", 10_000);
      clock.advance(15_000);
      await held!.release();
      expect(await held!.renew(10_000)).toBe(false);
      expect(await fixture.peer.tryAcquire("refresh", 10_000)).toBeDefined();
    });

    it("hands an expired lease to another owner; the old holder then fails to renew and cannot release it", async () => {
      const old = await fixture.lock.tryAcquire("refresh", 10_000);
      clock.advance(10_001);
      const taken = await fixture.peer.tryAcquire("refresh", 10_000);
      expect(taken).toBeDefined();
      expect(await old!.renew(10_000)).toBe(false);
      await old!.release();
      expect(await fixture.lock.tryAcquire("refresh", 10_000)).toBeUndefined();
    });

    it.each([
      ["before it ran out", 9_000],
      ["once it ran out while nobody took it (its holder stalled past it)", 15_000],
    ])("extends a lease on renew %s, by its ttl from now: another owner is refused until then", async (_when, renewedAt) => {
      // Lost means taken: a lease nobody took is still its holder's (nobody can have held it meanwhile).
      const held = await fixture.lock.tryAcquire("refresh", 10_000);
      clock.advance(renewedAt);
      expect(await held!.renew(10_000)).toBe(true);
      clock.advance(9_000);
      expect(await fixture.peer.tryAcquire("refresh", 10_000)).toBeUndefined();
      clock.advance(2_000);
      expect(await fixture.peer.tryAcquire("refresh", 10_000)).toBeDefined();
    });

    it("does not renew a lease that ran out and was taken by another owner: false, extending nothing, and the other keeps it", async () => {
      const old = await fixture.lock.tryAcquire("refresh", 10_000);
      clock.advance(10_001);
      const taken = await fixture.peer.tryAcquire("refresh", 10_000);
      expect(await old!.renew(60_000)).toBe(false);
      expect(await taken!.renew(10_000)).toBe(true);
      expect(await fixture.lock.tryAcquire("refresh", 10_000)).toBeUndefined();
      // The old holder's renewal extended nothing: the lease runs out with the taker's last renewal.
      clock.advance(10_001);
      expect(await fixture.lock.tryAcquire("refresh", 10_000)).toBeDefined();
    });

    it("keeps different names independent", async () => {
      expect(await fixture.lock.tryAcquire("a", 10_000)).toBeDefined();
      expect(await fixture.peer.tryAcquire("b", 10_000)).toBeDefined();
    });

    it("grants a contested lock to exactly one of many simultaneous callers", async () => {
      const attempts = await Promise.all(
        Array.from({ length: 8 }, (_, i) => (i % 2 ? fixture.peer : fixture.lock).tryAcquire("contested", 10_000)),
      );
      expect(attempts.filter(Boolean)).toHaveLength(1);
    });

    it("grants an expired, contested lock to exactly one of many simultaneous callers", async () => {
      await fixture.lock.tryAcquire("stale", 1_000);
      clock.advance(5_000);
      const attempts = await Promise.all(
        Array.from({ length: 8 }, (_, i) => (i % 2 ? fixture.peer : fixture.lock).tryAcquire("stale", 10_000)),
      );
      expect(attempts.filter(Boolean)).toHaveLength(1);
    });

    it("grants an expired lease to exactly one of eight staggered, jittered contenders, round after round", async () => {
      // Stagger and jitter by event-loop turns (no timers): contenders arrive at different steps of a take-over.
      let seed = 7;
      const jitter = async (i: number): Promise<void> => {
        seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
        for (let turns = (seed % 4) + i * 2; turns > 0; turns--) await new Promise<void>((resolve) => setImmediate(resolve));
      };
      const holders: number[] = [];
      for (let round = 0; round < 50; round++) {
        const name = `jitter-${round % 5}`;
        // A released lease, then an expired one: contenders race to take the latter over.
        await (await fixture.lock.tryAcquire(name, 1_000))?.release();
        expect(await fixture.peer.tryAcquire(name, 1_000)).toBeDefined();
        clock.advance(5_000);
        const attempts = await Promise.all(
          Array.from({ length: 8 }, async (_, i) => {
            await jitter(i);
            return (i % 2 ? fixture.peer : fixture.lock).tryAcquire(name, 10_000);
          }),
        );
        holders.push(attempts.filter(Boolean).length);
        clock.advance(20_000);
      }
      expect(holders.filter((n) => n !== 1)).toEqual([]);
    });
  });
}
