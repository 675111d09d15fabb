/**
 * The entries of a state directory, one name each, so the adapters that create them and the checks that come before
 * any run (shared/cli/config.ts) agree, and the one way its directories are listed.
 */
import { readdirSync } from "node:fs";
import { LocalStateError } from "./errors.js";

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

/**
 * The names in `dir`, one of the state directory's directories (`what` names it in an error: "Snapshot"), or none
 * while it does not exist yet. Any other failure (a file in its place, access denied) is a LocalStateError naming it,
 * so the CLI gives its advice on state files instead of a raw system error.
 */
export function namesInStateDir(dir: string, what: string): string[] {
  try {
    return readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw new LocalStateError(`${what} directory cannot be read`, { file: dir }, { cause: err });
  }
}
