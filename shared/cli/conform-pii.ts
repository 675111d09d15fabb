/**
 * `bridge conform-pii [--cursor <cursor>]`: local mode. Rewrites every snapshot of the state directory that still
 * holds a personal field (PERSONAL_FIELDS, see docs/events.md) in another form than BRIDGE_PII_MODE's, so no cleartext
 * (or older pseudonym) stays behind for items the provider never lists again: after BRIDGE_PII_MODE is switched away
 * from `full` or from `hash` to `redact`, and after an upgrade that masks more fields.
 */
import type { ConformReport } from "../bridge/index.js";
import type { ConformPiiArgs } from "./args.js";
import { readStateSettings } from "./config.js";
import { streamLogger } from "./console-ports.js";
import { ConformIncompleteError, EXIT } from "./errors.js";
import { line, type CliIo } from "./io.js";
import { openLocalState, type LocalBridgeOptions } from "./local-bridge.js";
import { runConformPii } from "./local-cycles.js";
import { settingsFrom } from "./run.js";

/**
 * One line for a person: what the pass read and rewrote.
 *
 * @example
 * formatConformSummary(report); // "conform-pii: 64 stored entries read (snapshots, their qashio_id aliases and the bridge's own cursors), 37 rewritten to PII mode redact"
 */
export function formatConformSummary(report: ConformReport, { interrupted = false }: { readonly interrupted?: boolean } = {}): string {
  if (report.outcome === "full_mode") return "conform-pii: PII mode is full; snapshots keep personal fields as sent, nothing to re-mask";
  // The store's walk counts every entry, and each transaction has an alias beside its snapshot: say so, or the count
  // reads as twice the snapshots.
  const read = `${report.scanned} stored entr${report.scanned === 1 ? "y" : "ies"} read (snapshots, their qashio_id aliases and the bridge's own cursors)`;
  // A pass that stopped in its quarantine walk has rewritten records too: "0 rewritten so far" alone would hide them.
  const quarantine = report.quarantineRewritten > 0 ? `, and ${report.quarantineRewritten} quarantine record${report.quarantineRewritten === 1 ? "" : "s"}` : "";
  const counts = `${read}, ${report.rewritten} rewritten to PII mode ${report.mode}${quarantine}`;
  if (report.outcome === "deadline") return `conform-pii: stopped ${interrupted ? "as asked" : "at the time budget"}: ${counts} so far`;
  return `conform-pii: ${counts}`;
}

/**
 * Runs the re-masking pass with the settings of the state directory alone (see readStateSettings): it makes no
 * provider call, so a directory whose token is gone (a revoked family, a restored copy, an offboarded tenant) can
 * still be masked. Returns the exit code.
 *
 * @throws ConformIncompleteError (exit 4) when the pass stopped at BRIDGE_CYCLE_BUDGET, or after the page in hand as
 *   asked (Ctrl-C, SIGTERM or SIGHUP): its message says how to go on.
 * @example
 * process.exitCode = await conformPiiCommand({}, io);
 */
export async function conformPiiCommand(args: ConformPiiArgs, io: CliIo, seams: Partial<Pick<LocalBridgeOptions, "logger" | "clock">> = {}): Promise<number> {
  const { settings } = await settingsFrom(io, readStateSettings);
  const state = await openLocalState(settings, { ...seams, logger: seams.logger ?? streamLogger(io.stderr, settings.logLevel) });
  line(io.stderr, `bridge: tenant ${settings.tenant}, state ${settings.stateDir}`);
  const report = await runConformPii(state, args.cursor, { signal: io.signal });
  const interrupted = io.signal.aborted;
  line(io.stdout, formatConformSummary(report, { interrupted }));
  if (report.outcome === "deadline") {
    const goOn =
      report.cursor === undefined
        ? "run `npm run bridge -- conform-pii` again"
        : // The cursor records the mode: under another one it is refused (the snapshots before it are in the old form).
          `go on with \`npm run bridge -- conform-pii --cursor '${report.cursor}'\` under the same BRIDGE_PII_MODE (or run it without --cursor to start over)`;
    const why = interrupted ? "after the page in hand, as asked (Ctrl-C, SIGTERM or SIGHUP)" : "at its time budget (BRIDGE_CYCLE_BUDGET)";
    throw new ConformIncompleteError(`conform-pii stopped ${why}; ${goOn}`, report.cursor);
  }
  return EXIT.ok;
}
