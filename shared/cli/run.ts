/**
 * `bridge run [--once] [--interval <duration>] [--new-pii-salt]`: local mode. Reads the settings, then runs one cycle
 * (transactions, then cards) or loops every interval until SIGINT/SIGTERM, which stops the cycle after its page in hand.
 */
import type { RunArgs } from "./args.js";
import { readLocalSettings, settingNameWarnings, type Env } from "./config.js";
import { formatDuration } from "./duration.js";
import { loadEnv } from "./env-file.js";
import { streamLogger } from "./console-ports.js";
import { CycleIncompleteError, EXIT, retriedNextCycle } from "./errors.js";
import { line, pause, type CliIo } from "./io.js";
import { openLocalBridge, usingLocalBridge, type LocalBridge, type LocalBridgeOptions } from "./local-bridge.js";
import { runCycle, type CycleResult } from "./local-cycles.js";
import { COLOURS, NO_COLOURS, formatCycleSummary, mergeCounts, shouldColour, type Palette } from "./printer.js";

/** Whether a cycle stopped because the event sink took none of its events for now. */
function publisherUnavailable(result: CycleResult): boolean {
  return result.transactions.outcome === "publisher_unavailable" || result.cards.outcome === "publisher_unavailable";
}

/** Summary line of a cycle, from the engine's reports; `resumable: false` when no later run has this state. */
export function summaryOf(cycle: number, result: CycleResult, palette: Palette, { resumable = true } = {}): string {
  const { transactions: t, cards: c } = result;
  return formatCycleSummary(
    {
      cycle,
      published: mergeCounts(t.published, c.published),
      acknowledged: t.acknowledged,
      acknowledgeRefused: t.acknowledgeRefused,
      quarantined: t.quarantined + c.quarantined,
      durationMs: result.durationMs,
      partial: !result.complete,
      backlog: t.backlog,
      interrupted: result.interrupted,
      publisherUnavailable: publisherUnavailable(result),
      resumable,
    },
    palette,
  );
}

/** Seams of `run` for tests: bridge options, and the wait between cycles (so no test really waits). */
export interface RunSeams extends Partial<LocalBridgeOptions> {
  readonly pause?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/**
 * Reads the environment and .env, warning on stderr of each variable that names no setting, and `read`s the
 * settings of it.
 *
 * @throws ConfigError (exit 2) for bad settings.
 * @example
 * const { env, settings } = await settingsFrom(io, readLocalSettings);
 */
export async function settingsFrom<T>(io: CliIo, read: (env: Env, cwd: string) => T): Promise<{ env: Env; settings: T }> {
  const env = await loadEnv(io.env, io.cwd, undefined, { signal: io.signal });
  for (const warning of settingNameWarnings(env)) line(io.stderr, `warning: ${warning}`);
  return { env, settings: read(env, io.cwd) };
}

/**
 * Reads the settings (environment and .env; with `read`, readLocalSettings unless given) and opens the local bridge,
 * telling stderr where it reads and writes.
 *
 * @throws ConfigError (exit 2) for bad settings.
 * @example
 * const bridge = await openFromSettings(io);
 */
export async function openFromSettings(io: CliIo, overrides: Partial<LocalBridgeOptions> = {}, read: typeof readLocalSettings = readLocalSettings): Promise<LocalBridge> {
  const { env, settings } = await settingsFrom(io, read);
  const logger = overrides.logger ?? streamLogger(io.stderr, settings.logLevel);
  const bridge = await openLocalBridge(settings, { env, logger, ...overrides });
  line(io.stderr, `bridge: tenant ${settings.tenant}, provider ${bridge.baseUrl}, state ${settings.stateDir}, events -> ${settings.eventsFile}`);
  return bridge;
}

/**
 * Runs local mode with the given arguments; returns the exit code.
 *
 * @example
 * process.exitCode = await runCommand({ once: true, intervalMs: 60_000 }, io);
 */
export async function runCommand(args: RunArgs, io: CliIo, seams: RunSeams = {}): Promise<number> {
  const { pause: wait = pause, ...overrides } = seams;
  const bridge = await openFromSettings(io, { ...overrides, newPiiSalt: args.newPiiSalt === true });
  const palette = shouldColour(io.stdout, io.env) ? COLOURS : NO_COLOURS;
  return usingLocalBridge(bridge, async () => {
    if (!args.once) return loop(bridge, args.intervalMs, io, palette, wait);
    const result = await runCycle(bridge, { signal: io.signal });
    line(io.stdout, summaryOf(1, result, palette));
    if (!result.complete) {
      throw new CycleIncompleteError(
        result.interrupted
          ? "the cycle stopped after the page in hand, as asked (Ctrl-C, SIGTERM or SIGHUP); run again to resume"
          : publisherUnavailable(result)
            ? "the cycle stopped because the event publisher took no events for now; run again to re-send them"
            : "the cycle stopped at its time budget (BRIDGE_CYCLE_BUDGET) or its page bound; run again to resume",
      );
    }
    return EXIT.ok;
  });
}

async function loop(
  bridge: LocalBridge,
  intervalMs: number,
  io: CliIo,
  palette: Palette,
  wait: NonNullable<RunSeams["pause"]>,
): Promise<number> {
  const logger = bridge.transactions.logger;
  line(io.stderr, `bridge: polling every ${formatDuration(intervalMs)}; Ctrl-C stops after the page in hand`);
  let cycle = 0;
  while (!io.signal.aborted) {
    cycle += 1;
    const started = bridge.clock.now();
    try {
      line(io.stdout, summaryOf(cycle, await runCycle(bridge, { signal: io.signal }), palette));
    } catch (error) {
      if (!retriedNextCycle(error)) throw error;
      logger.error(`cycle ${cycle} failed; retrying at the next interval`, { error: error.message });
    }
    // At most the interval: a wall clock stepped back during the cycle (NTP, a person) would otherwise add the step
    // to the wait, and an hour back stalled polling for an hour.
    await wait(Math.min(intervalMs, Math.max(0, started + intervalMs - bridge.clock.now())), io.signal);
  }
  line(io.stderr, `bridge: stopped after ${cycle} cycle${cycle === 1 ? "" : "s"}`);
  return EXIT.ok;
}
