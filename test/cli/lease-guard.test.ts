import { describe, expect, it } from "vitest";
import type { EventPublisher, LockHandle, Quarantine, SnapshotStore } from "../../shared/bridge/ports.js";
import type { ProviderPort } from "../../shared/bridge/provider.js";
import { EXIT } from "../../shared/cli/errors.js";
import { CycleLeaseGuard, CycleLeaseLostError, CycleLeaseUnreadableError } from "../../shared/cli/lease-guard.js";
import { LeaseUnreadableError } from "../../shared/local/errors.js";

describe("CycleLeaseGuard", () => {
  it("checks writes against a cycle's lease only while that cycle runs, also after one that failed", async () => {
    let publishes = 0;
    const inner: EventPublisher = {
      publish: async () => {
        publishes += 1;
        return { failed: [] };
      },
    };
    const guard = new CycleLeaseGuard("/state", 30_000);
    const publisher = guard.publisher(inner);
    // Released when its cycle ends: asked then, the lock says this process holds it no more.
    let held = true;
    const handle: LockHandle = { renew: async () => true, release: async () => void (held = false), confirm: async () => held };

    await expect(guard.during(handle, async () => {
      held = false;
      return publisher.publish([]);
    })).rejects.toBeInstanceOf(CycleLeaseLostError);
    held = true;
    await expect(guard.during(handle, () => Promise.reject(new Error("cycle failed")))).rejects.toThrow("cycle failed");
    await handle.release();

    // Outside a cycle nothing is checked: a lease released with its cycle must not refuse a later write.
    await publisher.publish([]);
    await guard.check();
    expect(publishes).toBe(1);
  });

  it("checks a write the cycle makes after it first waited, and says a lost lease stops the cycle with exit 1", async () => {
    const guard = new CycleLeaseGuard("/state", 30_000);
    const publisher = guard.publisher({ publish: async () => ({ failed: [] }) });
    const handle: LockHandle = { renew: async () => true, release: async () => undefined, confirm: async () => false };
    const error = await guard
      .during(handle, async () => {
        await new Promise((resolve) => setImmediate(resolve));
        return publisher.publish([]);
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CycleLeaseLostError);
    expect((error as CycleLeaseLostError).exitCode).toBe(EXIT.failed);
  });
});

describe("CycleLeaseGuard's adapters", () => {
  /** A stand-in for every adapter method, each recording its name when called. */
  function recorder() {
    const calls: string[] = [];
    const args: Record<string, unknown[]> = {};
    const method = (name: string) => async (...given: unknown[]) => {
      calls.push(name);
      args[name] = given;
      return undefined as never;
    };
    return { calls, args, method };
  }

  /** The guard's wrappers of adapters whose every method is recorded, their writes checked by `confirm`. */
  function guarded(confirm: LockHandle["confirm"]) {
    const { calls, args, method } = recorder();
    const guard = new CycleLeaseGuard("/state", 30_000);
    const snapshots = guard.snapshots({ getMany: method("getMany"), scan: method("scan"), putMany: method("putMany"), vacuum: method("vacuum") } as unknown as SnapshotStore);
    const provider = guard.provider({
      listTransactions: method("listTransactions"),
      listErpCards: method("listErpCards"),
      readErpCard: method("readErpCard"),
      acknowledgeTransactions: method("acknowledgeTransactions"),
    } as unknown as ProviderPort);
    const quarantine = guard.quarantine({ list: method("list"), pages: method("pages"), size: method("size"), put: method("put"), deleteMany: method("deleteMany") } as unknown as Quarantine);
    const publisher = guard.publisher({ publish: method("publish") } as unknown as EventPublisher);
    const handle: LockHandle = { renew: async () => true, release: async () => undefined, ...(confirm && { confirm }) };
    const run = (work: () => Promise<unknown>) => guard.during(handle, work);
    const options = { deadline: 1_736_942_400_000 };
    const writes: Record<string, () => Promise<unknown>> = {
      publish: () => publisher.publish([], options),
      putMany: () => snapshots.putMany([], options),
      vacuum: () => snapshots.vacuum(),
      acknowledgeTransactions: () => provider.acknowledgeTransactions([], options),
      put: () => quarantine.put({} as never),
      deleteMany: () => quarantine.deleteMany([], options),
    };
    const reads: Record<string, () => Promise<unknown>> = {
      getMany: () => snapshots.getMany([]),
      scan: () => Promise.resolve(snapshots.scan({} as never)),
      listTransactions: () => provider.listTransactions({} as never),
      listErpCards: () => provider.listErpCards({} as never),
      readErpCard: () => provider.readErpCard("card-1"),
      list: () => quarantine.list(),
      pages: () => Promise.resolve(quarantine.pages({} as never)),
      size: () => quarantine.size(),
    };
    return { calls, args, run, writes, reads, options };
  }

  it("stops every write (events, snapshots and their compaction, acknowledge, quarantine) once another process took the lease, before it reaches the adapter", async () => {
    const { calls, run, writes } = guarded(async () => false);
    for (const [name, write] of Object.entries(writes)) {
      await expect(run(write), name).rejects.toThrow(
        "the cycle lease of this state directory (/state) was lost (this process was stopped or stalled past it, and another process took it over): " +
          "the cycle stopped before its next write; nothing is lost, the next run resumes",
      );
    }
    expect(calls).toEqual([]);
  });

  it("lets every read through unchecked, and each write through once the lease is confirmed for its full length", async () => {
    const asked: number[] = [];
    const { calls, run, writes, reads } = guarded(async (ttlMs) => {
      asked.push(ttlMs);
      return true;
    });
    for (const read of Object.values(reads)) await run(read);
    expect(asked).toEqual([]);
    for (const write of Object.values(writes)) await run(write);
    expect(calls).toEqual([...Object.keys(reads), ...Object.keys(writes)]);
    expect(asked).toEqual(Object.keys(writes).map(() => 30_000));
  });

  it("hands each write on to its adapter with the caller's arguments, its options (the deadline) included", async () => {
    const { args, run, writes, options } = guarded(async () => true);
    for (const write of Object.values(writes)) await run(write);
    for (const name of ["publish", "putMany", "acknowledgeTransactions", "deleteMany"]) expect(args[name], name).toEqual([[], options]);
    expect(args["put"]).toEqual([{}]);
  });

  it("lets writes through unchecked under a lock that cannot tell whether its lease is still held (no confirm)", async () => {
    const { calls, run, writes } = guarded(undefined);
    for (const write of Object.values(writes)) await run(write);
    expect(calls).toEqual(Object.keys(writes));
  });

  it("says a lease the check could not read leaves unknown whether this process holds it (exit 1), and passes any other failure on as it is", async () => {
    const unreadable = guarded(async () => {
      throw new LeaseUnreadableError("/state/locks/cycle.lock", "EMFILE");
    });
    const error = await unreadable.run(unreadable.writes["publish"]!).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CycleLeaseUnreadableError);
    expect((error as CycleLeaseUnreadableError).exitCode).toBe(EXIT.failed);
    expect((error as Error).cause).toBeInstanceOf(LeaseUnreadableError);
    expect((error as Error).message).toBe(
      "whether this process still holds the cycle lease of this state directory (/state) is unknown: the lease file /state/locks/cycle.lock could not be read (EMFILE), " +
        "so the cycle stopped before its next write; what it did before stands, nothing is lost, the next run resumes",
    );
    const other = new Error("lock adapter broke");
    const failing = guarded(async () => {
      throw other;
    });
    await expect(failing.run(failing.writes["putMany"]!)).rejects.toBe(other);
  });
});
