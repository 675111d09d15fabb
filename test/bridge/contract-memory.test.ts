/** The in-memory fakes honour the same port contracts as the real adapters. */
import { describeEventPublisherContract, describeLockContract, describeQuarantineContract, describeSnapshotStoreContract, describeTokenStoreContract } from "./contract/index.js";
import { MemoryLock, MemoryQuarantine, MemorySnapshotStore, MemoryTokenStore, RecordingPublisher } from "./fakes.js";

const noop = async (): Promise<void> => undefined;

describeSnapshotStoreContract("MemorySnapshotStore", async () => ({ store: new MemorySnapshotStore(), foreign: async () => new MemorySnapshotStore(), cleanup: noop }));
describeQuarantineContract("MemoryQuarantine", async () => ({ quarantine: new MemoryQuarantine(), cleanup: noop }));
describeLockContract("MemoryLock", async (clock) => {
  const lock = new MemoryLock(clock);
  return { lock, peer: new MemoryLock(clock, lock.leases), cleanup: noop };
});
describeTokenStoreContract("MemoryTokenStore", async () => ({ store: new MemoryTokenStore(), cleanup: noop }));
describeEventPublisherContract("RecordingPublisher", async () => {
  const publisher = new RecordingPublisher();
  return {
    publisher,
    delivered: async () => publisher.events.map((e) => ({ source: e.source, detailType: e.detailType, detail: e.detail })),
    cleanup: noop,
  };
});
