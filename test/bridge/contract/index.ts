/** Port contract suite: run it against every adapter (memory fakes, local files, AWS). */
export { describeSnapshotStoreContract } from "./snapshot-store.js";
export type { SnapshotStoreFixture } from "./snapshot-store.js";
export { describeQuarantineContract } from "./quarantine.js";
export type { QuarantineFixture } from "./quarantine.js";
export { describeLockContract } from "./lock.js";
export type { LockFixture } from "./lock.js";
export { describeTokenStoreContract } from "./token-store.js";
export type { TokenStoreFixture } from "./token-store.js";
export { describeEventPublisherContract, sampleEvent } from "./event-publisher.js";
export type { EventPublisherFixture, DeliveredEvent } from "./event-publisher.js";
