/**
 * Local (embedded) adapters of the bridge ports: everything lives in one state directory.
 *
 * Layout: `snapshots/` (segment files), `quarantine/<id>.json`, `locks/<name>.lock[.<generation>]`, `tokens.json`,
 * `binding.json` (the provider, client and tenant the directory belongs to);
 * events go to a JSON Lines file in EventBridge target shape.
 *
 * @example
 * ```ts
 * import { createLocalAdapters } from "./shared/local/index.js";
 * const { snapshots, quarantine, lock, tokens } = createLocalAdapters(".state");
 * ```
 */
import type { Clock } from "../bridge/ports.js";
import { FileLock } from "./file-lock.js";
import { FileQuarantine } from "./quarantine.js";
import { FileSnapshotStore, type FileSnapshotStoreOptions } from "./snapshot-store.js";
import { FileTokenStore } from "./token-store.js";

export { writeFileAtomic, TEMP_SUFFIX } from "./atomic.js";
export { FileSnapshotStore, type FileSnapshotStoreOptions } from "./snapshot-store.js";
export { snapshotStoreIdOf } from "./snapshot-store-id.js";
export { FileTokenStore } from "./token-store.js";
export { FileQuarantine } from "./quarantine.js";
export { FileLock } from "./file-lock.js";
export { JsonlEventPublisher, toEventBridgeEnvelope, envelopeLine, envelopeIds, TORN_REGION_BYTES } from "./jsonl-publisher.js";
export type { EventBridgeEnvelope, JsonlEventPublisherOptions } from "./jsonl-publisher.js";
export { LocalStateError, CorruptStateError, ExposedPathError, HardLinksUnsupportedError, LeaseUnreadableError, TokenFileUnwritableError } from "./errors.js";
export { restrictToOwner } from "./owner-only.js";
export {
  bindStateDir,
  PiiSaltAlreadyRecordedError,
  PiiSaltMismatchError,
  SnapshotStoreMissingError,
  StateBindingMismatchError,
  StateBindingMissingError,
  type BindOptions,
  type StateBinding,
} from "./state-binding.js";
export { STATE_DIRS, STATE_FILES } from "./layout.js";

/** The file-backed adapters of one state directory. */
export interface LocalAdapters {
  readonly snapshots: FileSnapshotStore;
  readonly quarantine: FileQuarantine;
  readonly lock: FileLock;
  readonly tokens: FileTokenStore;
}

/**
 * Builds every file-backed adapter over one state directory (created lazily on first write).
 *
 * @example
 * ```ts
 * const local = createLocalAdapters(process.env.BRIDGE_STATE_DIR ?? ".state");
 * ```
 */
export function createLocalAdapters(stateDir: string, options: { clock?: Pick<Clock, "now">; snapshots?: FileSnapshotStoreOptions } = {}): LocalAdapters {
  return {
    snapshots: new FileSnapshotStore(stateDir, options.snapshots),
    quarantine: new FileQuarantine(stateDir),
    lock: new FileLock(stateDir, options),
    tokens: new FileTokenStore(stateDir),
  };
}
