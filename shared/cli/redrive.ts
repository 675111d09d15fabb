/**
 * `bridge redrive`: local mode. Reads again the transactions quarantined because their event failed for good or
 * because they failed validation (they were acknowledged, so no cycle pulls them again), publishes their current
 * state once it validates, and deletes each record once its transaction is delivered (see `isRedrivable`).
 */
import type { RedriveReport } from "../bridge/index.js";
import { EXIT, RedriveIncompleteError } from "./errors.js";
import { line, type CliIo } from "./io.js";
import { runRedrive, usingLocalBridge, type LocalBridgeOptions } from "./local-bridge.js";
import { openFromSettings } from "./run.js";

/**
 * One line for a person: what was re-driven and what was kept.
 *
 * @example
 * formatRedriveSummary(report); // "re-drive: 2 of 3 quarantine records delivered and removed · 1 kept"
 */
export function formatRedriveSummary(report: RedriveReport): string {
  if (report.considered === 0) return "re-drive: no quarantine records to re-drive";
  return `re-drive: ${report.redriven.length} of ${report.considered} quarantine records delivered and removed · ${report.kept.length} kept`;
}

/**
 * Runs the re-drive with the local settings; returns the exit code (1 when records were kept).
 *
 * @throws RedriveIncompleteError (exit 1) when some records stay: their event failed again, their transaction still
 * fails validation, or it is gone.
 * @example
 * process.exitCode = await redriveCommand(io);
 */
export async function redriveCommand(io: CliIo, seams: Partial<LocalBridgeOptions> = {}): Promise<number> {
  const bridge = await openFromSettings(io, seams);
  const report = await usingLocalBridge(bridge, () => runRedrive(bridge));
  line(io.stdout, formatRedriveSummary(report));
  for (const { record, why } of report.kept) line(io.stdout, `  kept ${record.id} (transaction ${record.entityId ?? "unknown"}): ${why}`);
  if (report.kept.length > 0) {
    throw new RedriveIncompleteError(
      `${report.kept.length} quarantine record${report.kept.length === 1 ? "" : "s"} kept; fix the cause (see the log) and run redrive again`,
      report.kept.length,
    );
  }
  return EXIT.ok;
}
