/**
 * Who may read the state directory: its user only. Its snapshots and quarantine records carry cardholder data (in
 * clear under BRIDGE_PII_MODE=full; a quarantined item's body raw), and a directory its group or others may enter
 * exposes every file in it whose own mode allows (a restored copy: 0644 files in a 0755 directory). One chmod of the
 * directory covers them all, whatever the files' modes. Who may write it is path-checks.ts's (refused, not changed).
 */
import { ExposedPathError, restrictToOwner } from "../local/index.js";
import { ConfigError } from "./errors.js";
import { octal, shellWord } from "./path-checks.js";

/**
 * Makes the state directory 0700 (see restrictToOwner) when a command opens it, and tells `warn` which directory had
 * which mode: the operator decides whether another user may have copied what it held.
 *
 * @throws ConfigError (exit 2, BRIDGE_STATE_DIR) when this user cannot: its cardholder data would stay readable to others.
 * @example
 * restrictStateDir(settings.stateDir, (text) => logger.warn(text));
 */
export function restrictStateDir(dir: string, warn: (text: string) => void): void {
  let before: number | undefined;
  try {
    before = restrictToOwner(dir, { directory: true });
  } catch (error) {
    if (!(error instanceof ExposedPathError)) throw error;
    throw new ConfigError(
      [
        {
          setting: "BRIDGE_STATE_DIR",
          problem:
            `${dir} may be entered and read by its group or others (mode ${octal(error.mode)}), and this user cannot change that (${error.code}; it is owned ` +
            `by uid ${error.owner}): its snapshots and quarantined items carry cardholder data; run \`chmod 700 ${shellWord(dir)}\` as its owner, or use a ` +
            "state directory on a file system that keeps modes",
        },
      ],
      { cause: error },
    );
  }
  if (before !== undefined) {
    warn(
      `${dir} could be entered and read by its group or others (mode ${octal(before)}): made it private to its owner (${octal(before & 0o700)}), as the bridge ` +
        "creates it; its snapshots and quarantined items carry cardholder data, which other local users may have copied meanwhile",
    );
  }
}
