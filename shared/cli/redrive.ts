/**
 * `bridge redrive`: local mode. Reads again the transactions quarantined because their event failed for good or
 * because they failed validation (they were acknowledged, so no cycle pulls them again), publishes their current
 * state once it validates, and deletes each record once its transaction is delivered (see `isRedrivable`).
 */
import { keptCount, redrivenCount, type KeptRecord, type RedriveReport } from "../bridge/index.js";
import { readLocalSettings } from "./config.js";
import { CycleIncompleteError, EXIT, RedriveIncompleteError, type CliError } from "./errors.js";
import { line, type CliIo } from "./io.js";
import { usingLocalBridge, type LocalBridgeOptions } from "./local-bridge.js";
import { runRedrive } from "./local-cycles.js";
import { openFromSettings } from "./run.js";

/** Why the re-drive keeps a record it did not get to: run it again, nothing to fix. */
const NOT_REACHED: KeptRecord["why"] = "not reached before the deadline";

/**
 * Why a re-drive keeps a record that no later re-drive of it, as it stands, can deliver, and what the person does
 * instead (docs/runbook.md, Re-driving quarantined transactions): "fix the cause and run redrive again" would send
 * them round in circles. Kept all the same: the record is the only trace of its transaction.
 */
const UNDELIVERABLE: Partial<Record<KeptRecord["why"], string>> = {
  "no transaction id or qashio_id in the record":
    "cannot be re-driven (nothing to read it again by): put the transaction's qashio_id in the record's body and run redrive again, " +
    "or have the transaction edited at the provider",
  "not found at the provider":
    "cannot be re-driven (the transaction is gone, or the record's qashio_id is not its): check with the provider, then delete the record by hand",
  "not found by its qashio_id, which no publish record confirms":
    "cannot be re-driven by that qashio_id (maybe the field that failed validation): look the transaction up at the provider by its id, named above: " +
    "gone, delete the record by hand; there, have it edited at the provider (the next cycle delivers it, and the next re-drive removes the record)",
  "its qashio_id lists only other transactions":
    "cannot be re-driven (the provider lists other transactions under the record's qashio_id, not this one): check with the provider, then delete the record by hand",
  "its qashio_id lists more transactions than a re-drive reads":
    "cannot be re-driven (the provider lists it, if at all, behind more transactions under its qashio_id than a re-drive reads): " +
    "have the transaction edited at the provider (the next cycle then delivers it), then delete the record by hand",
  "the provider refuses to read it by its qashio_id": "cannot be re-driven while it does (the log has the status): raise it with the provider",
};

/**
 * The records kept for a cause (to fix, or that no re-drive can deliver) that the report names, how many it kept for a
 * cause in all (of which `undeliverable`), and how many more were only not reached.
 */
function keptRecords(report: RedriveReport): {
  readonly held: readonly KeptRecord[];
  readonly forCause: number;
  readonly undeliverable: number;
  readonly notReached: number;
} {
  const held = report.kept.filter((k) => k.why !== NOT_REACHED);
  const notReached = report.keptByWhy[NOT_REACHED] ?? 0;
  let undeliverable = 0;
  for (const [why, n] of Object.entries(report.keptByWhy) as [KeptRecord["why"], number][]) if (UNDELIVERABLE[why] !== undefined) undeliverable += n;
  return { held, forCause: keptCount(report) - notReached, undeliverable, notReached };
}

/** How a re-drive ended that left records not reached: `interrupted` when its stop signal aborted (Ctrl-C, SIGTERM). */
export interface RedriveStop {
  readonly interrupted?: boolean;
}

/**
 * One line for a person: what was re-driven and what was kept.
 *
 * @example
 * formatRedriveSummary(report); // "re-drive: 2 of 3 quarantine records delivered and removed · 1 kept"
 */
export function formatRedriveSummary(report: RedriveReport, { interrupted = false }: RedriveStop = {}): string {
  if (report.considered === 0 && report.notScanned === undefined) return "re-drive: no quarantine records to re-drive";
  const { notReached } = keptRecords(report);
  const why = interrupted ? "stopped as asked" : "stopped at the time budget, BRIDGE_CYCLE_BUDGET";
  const left = [...(notReached > 0 ? [`${notReached} not reached`] : []), ...(report.notScanned ? ["the rest of the quarantine not looked at"] : [])];
  const stopped = left.length > 0 ? ` (${left.join(", ")}: ${why})` : "";
  return `re-drive: ${redrivenCount(report)} of ${report.considered} quarantine records delivered and removed · ${keptCount(report)} kept${stopped}`;
}

/**
 * What a finished re-drive tells the person: the lines naming each record kept for a cause (records merely not
 * reached are counted, not listed: a large quarantine cut short by the budget would print hundreds of lines that ask
 * nothing of anyone; those kept for a cause past the report's KEPT_RECORDS_NAMED counted in one line), those no
 * re-drive can deliver marked with what to do instead, and the error to end with: exit 1 while some record is kept for
 * a cause, else exit 4 while some were not reached or the walk of the quarantine stopped before its end (run it
 * again), else none.
 */
export function redriveOutcome(report: RedriveReport, { interrupted = false }: RedriveStop = {}): { readonly lines: readonly string[]; readonly error?: CliError } {
  const { held, forCause, undeliverable, notReached } = keptRecords(report);
  const lines: string[] = held.map(({ record, why }) => {
    const instead = UNDELIVERABLE[why];
    return `  kept ${record.id} (transaction ${record.entityId ?? "unknown"}): ${why}${instead === undefined ? "" : `: ${instead}`}`;
  });
  const plural = (n: number) => `${n} quarantine record${n === 1 ? "" : "s"}`;
  // Named up to KEPT_RECORDS_NAMED: a backlog kept for a cause would print a line per record.
  if (forCause > held.length) lines.push(`  … and ${forCause - held.length} more kept for a cause (the log counts them by why)`);
  const notScanned = report.notScanned === undefined ? [] : ["the rest of the quarantine not looked at yet"];
  if (forCause > 0) {
    const toFix = forCause - undeliverable;
    const parts = [
      ...(toFix > 0 ? [`${plural(toFix)} kept; fix the cause (see the log) and run redrive again`] : []),
      ...(undeliverable > 0 ? [`${plural(undeliverable)} kept that no re-drive can deliver (marked above; docs/runbook.md, Re-driving quarantined transactions)`] : []),
      ...(notReached > 0 ? [`${plural(notReached)} not reached yet`] : []),
      ...notScanned,
    ];
    return { lines, error: new RedriveIncompleteError(parts.join("; "), keptCount(report)) };
  }
  if (notReached > 0 || report.notScanned !== undefined) {
    const left = [...(notReached > 0 ? [`${plural(notReached)} not reached`] : []), ...notScanned].join(" and ");
    const message = interrupted
      ? "the re-drive stopped after the batch in hand, as asked (Ctrl-C, SIGTERM or SIGHUP): run redrive again to go on"
      : `the re-drive stopped at its time budget (BRIDGE_CYCLE_BUDGET) with ${left}: run redrive again to go on`;
    return { lines, error: new CycleIncompleteError(message) };
  }
  return { lines };
}

/**
 * Runs the re-drive with the local settings; returns the exit code.
 *
 * @throws RedriveIncompleteError (exit 1) when some records stay for a cause: their event failed again, their
 * transaction still fails validation, or, beyond any re-drive, it is gone, the provider refuses its read, or the record
 * has no qashio_id; CycleIncompleteError (exit 4) when it only ran out of time, or stopped after the batch in hand as
 * asked (Ctrl-C, SIGTERM or SIGHUP).
 * @example
 * process.exitCode = await redriveCommand(io);
 */
export async function redriveCommand(io: CliIo, seams: Partial<LocalBridgeOptions> = {}): Promise<number> {
  const bridge = await openFromSettings(io, seams, (env, cwd) => readLocalSettings(env, cwd, { holds: "no quarantine to re-drive", walksCards: false }));
  const report = await usingLocalBridge(bridge, () => runRedrive(bridge, { signal: io.signal }));
  const stop = { interrupted: io.signal.aborted };
  line(io.stdout, formatRedriveSummary(report, stop));
  const { lines, error } = redriveOutcome(report, stop);
  for (const text of lines) line(io.stdout, text);
  if (error !== undefined) throw error;
  return EXIT.ok;
}
