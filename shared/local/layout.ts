/**
 * The entries of a state directory, one name each, so the adapters that create them and the checks that come before
 * any run (shared/cli/config.ts) agree.
 */

/** Files directly in the state directory. */
export const STATE_FILES = {
  /** The token set (FileTokenStore). */
  tokens: "tokens.json",
  /** Who the directory belongs to (bindStateDir). */
  binding: "binding.json",
} as const;

/** Directories directly in the state directory. */
export const STATE_DIRS = {
  /** Snapshot segments and the key index (FileSnapshotStore). */
  snapshots: "snapshots",
  /** One record per quarantined item (FileQuarantine). */
  quarantine: "quarantine",
  /** Lease files (FileLock). */
  locks: "locks",
} as const;
