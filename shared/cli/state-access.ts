/**
 * Who may read the state directory: its user only. Its snapshots and quarantine records carry cardholder data (in
 * clear under BRIDGE_PII_MODE=full; a quarantined item's body raw), and a directory its group or others may enter
 * exposes every file in it whose own mode allows (a restored copy: 0644 files in a 0755 directory). One chmod of the
 * directory covers them all, whatever the files' modes. Who may write it is path-checks.ts's (refused, not changed).
 */
import { ExposedPathError, restrictToOwner } from "../local/index.js";
import { ConfigError } from "./errors.js";
import { looseAccessProblem, modeCheckingUid, octal, shellWord, type OwnerAndMode } from "./access-advice.js";

/** What {@link restrictOrRefuse} says of one path of the state directory, each text naming the path. */
export interface ExposureWording {
  /** The BRIDGE_STATE_DIR problem when this user cannot narrow the path's mode (`error` has the mode, owner and code). */
  readonly refused: (error: ExposedPathError) => string;
  /** The warning once the path was narrowed from mode `before`. */
  readonly narrowed: (before: number) => string;
}

/**
 * Runs `restrict` (restrictToOwner on a path of the state directory, or a wrapper of it) when a command opens the
 * directory, and tells `warn` which mode the path had: only the operator can judge what other users may have read.
 *
 * @throws ConfigError (exit 2, BRIDGE_STATE_DIR) when this user cannot narrow it: what it holds would stay readable to others.
 * @example
 * restrictOrRefuse(() => restrictToOwner(dir, { directory: true }), wording, (text) => logger.warn(text));
 */
export function restrictOrRefuse(restrict: () => number | undefined, wording: ExposureWording, warn: (text: string) => void): void {
  let before: number | undefined;
  try {
    before = restrict();
  } catch (error) {
    if (!(error instanceof ExposedPathError)) throw error;
    throw new ConfigError([{ setting: "BRIDGE_STATE_DIR", problem: wording.refused(error) }], { cause: error });
  }
  if (before !== undefined) warn(wording.narrowed(before));
}

/**
 * Makes the state directory 0700 (see restrictToOwner) when a command opens it, and tells `warn` which directory had
 * which mode: the operator decides whether another user may have copied what it held.
 *
 * @throws ConfigError (exit 2, BRIDGE_STATE_DIR) when this user cannot: its cardholder data would stay readable to others.
 * @example
 * restrictStateDir(settings.stateDir, (text) => logger.warn(text));
 */
export function restrictStateDir(dir: string, warn: (text: string) => void): void {
  restrictOrRefuse(
    () => restrictToOwner(dir, { directory: true }),
    {
      refused: (error) =>
        `${dir} may be entered and read by its group or others (mode ${octal(error.mode)}), and this user cannot change that (${error.code}; it is owned ` +
        `by uid ${error.owner}): its snapshots and quarantined items carry cardholder data; run \`chmod 700 ${shellWord(dir)}\` as its owner, or use a ` +
        "state directory on a file system that keeps modes",
      narrowed: (before) =>
        `${dir} could be entered and read by its group or others (mode ${octal(before)}): made it private to its owner (${octal(before & 0o700)}), as the bridge ` +
        "creates it; its snapshots and quarantined items carry cardholder data, which other local users may have copied meanwhile",
    },
    warn,
  );
}

/**
 * Checks the state directory's mode and owner again before each cycle, from the stats the cycle's identity check took
 * (no system call while they are as the start left them): a loop runs for weeks, and a restore or a configuration
 * tool may open the directory meanwhile. One others may now write, or another user now owns, stops the command as at
 * its start (a stat of each entry per cycle is not needed: none is reachable by others while the directory is private
 * and this user's); one others may now read is made private again, with a warning (see {@link restrictStateDir}).
 *
 * @throws ConfigError (exit 2, BRIDGE_STATE_DIR) for one others may write or another user owns, or that cannot be narrowed.
 * @example
 * recheckStateDirAccess(dir, statSync(dir), (text) => logger.warn(text));
 */
export function recheckStateDirAccess(dir: string, stats: OwnerAndMode, warn: (text: string) => void): void {
  const uid = modeCheckingUid();
  if (uid === undefined) return;
  if ((stats.mode & 0o077) === 0 && stats.uid === uid) return;
  const problem = looseAccessProblem(dir, stats, uid, true);
  if (problem !== undefined) {
    throw new ConfigError([{ setting: "BRIDGE_STATE_DIR", problem: `${problem}; nothing was done in this cycle` }], {
      heading: "The state directory's permissions changed while the bridge ran",
    });
  }
  restrictStateDir(dir, warn);
}
