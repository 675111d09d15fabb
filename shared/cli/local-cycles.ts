/**
 * Local mode's runs under the tenant's cycle lease ({@link withCycleLock}): one cycle = transactions, then cards
 * ({@link runCycle}), the quarantine's re-drive ({@link runRedrive}) and conform-pii's pass over the state directory
 * ({@link runConformPii}), each ending in the CLI's errors (engine-errors.ts). What they run with is local-bridge.ts's.
 */
import {
  ConformCursorError,
  CycleAbortedError,
  SnapshotCursorError,
  causeMatching,
  conformSnapshots,
  emptyReport,
  isTokenFailure,
  pollCards,
  pollTransactions,
  redriveQuarantined,
  reportQuarantineSize,
  totalPublished,
  type ConformReport,
  type CycleReport,
  type RedriveReport,
} from "../bridge/index.js";
import { withCycleLock } from "./cycle-lease.js";
import { cliErrorOf, stateErrorOf } from "./engine-errors.js";
import { type CliError, CycleFailedError, UsageError } from "./errors.js";
import { CycleLeaseLostError } from "./lease-guard.js";
import type { LocalBridge, LocalState } from "./local-bridge.js";

/** What one cycle did. */
export interface CycleResult {
  readonly transactions: CycleReport;
  readonly cards: CycleReport;
  /** Total events published by both halves. */
  readonly events: number;
  /**
   * False when a half stopped at the budget or page bound, as asked, or because the publisher took none of its events
   * for now (it resumes next cycle).
   */
  readonly complete: boolean;
  /** True when it stopped early because its signal aborted (Ctrl-C, SIGTERM). */
  readonly interrupted: boolean;
  readonly durationMs: number;
  /** Records held in the quarantine after the cycle (also the `QuarantineSize` gauge). */
  readonly quarantineSize: number;
}

/** Sets the `QuarantineSize` gauge after a cycle (see `reportQuarantineSize`); returns the size, undefined if uncounted. */
async function measureQuarantine(bridge: LocalBridge): Promise<number | undefined> {
  // The whole error, unlike the Lambda log: the console logger prints it for the person running the bridge.
  return reportQuarantineSize(bridge.transactions, (error) => bridge.transactions.logger.warn("counting the quarantine failed", { error }));
}

/**
 * Share of a local cycle's budget the transactions may take before the cards walk: the cards always get the rest (and
 * whatever the transactions leave), so a transaction backlog that outlasts every cycle cannot hold card events back.
 * On AWS each kind has its own function and schedule.
 */
export const TRANSACTIONS_BUDGET_SHARE = 0.75;

/**
 * Runs one cycle (transactions, then cards) under the tenant's cycle lock, within `budgetMs` (default
 * BRIDGE_CYCLE_BUDGET; the transactions within {@link TRANSACTIONS_BUDGET_SHARE} of it); once `signal` aborts
 * (Ctrl-C) no new page starts and the cycle ends as at its budget (`complete` false). The cards are walked even when
 * the transactions failed for a provider reason; the first failure is thrown after.
 *
 * @throws AuthorizeAgainError (exit 3) when the token family is revoked; CycleFailedError (exit 1) otherwise.
 * @example
 * const { events, complete } = await runCycle(bridge, { budgetMs: 300_000, signal: io.signal });
 */
export async function runCycle(bridge: LocalBridge, options: { readonly budgetMs?: number; readonly signal?: AbortSignal } = {}): Promise<CycleResult> {
  const { budgetMs = bridge.settings.cycleBudgetMs, signal } = options;
  const started = bridge.clock.now();
  const stop = signal ? { signal } : {};
  return withCycleLock(bridge, async () => {
    let transactions = emptyReport("transactions");
    let cards = emptyReport("cards");
    /** The first failure: it ends the run (exit 1 or 3) once the cards walk had its turn, where it may. */
    let failure: unknown;
    /** The cards walk's own failure after the transactions': named beside it, or its cause would show nowhere. */
    let cardsFailure: unknown;
    try {
      await bridge.supersedeConformPassOnce();
      transactions = await pollTransactions(bridge.transactions, { deadline: started + Math.floor(budgetMs * TRANSACTIONS_BUDGET_SHARE), ...stop });
    } catch (error) {
      failure = error;
    }
    // As on AWS, where each kind has its own function: transactions the provider will not list now (a 403 for want of
    // a scope, an outage of that endpoint) do not hold back card suspensions. Not after a token failure (the cards
    // would need the same token; isTokenFailure covers the token endpoint refusing the client credentials too); the
    // engine logged the aborted cycle already. Nor once the cycle lease was lost: another process runs the cycles now.
    const leaseLost = causeMatching(failure, (e): e is CycleLeaseLostError => e instanceof CycleLeaseLostError) !== undefined;
    if (failure === undefined || (failure instanceof CycleAbortedError && !isTokenFailure(failure) && !leaseLost)) {
      try {
        cards = await pollCards(bridge.cards, { deadline: started + budgetMs, ...stop });
      } catch (error) {
        // A token failure or refused credentials outranks the transactions' failure: it ends the run (exit 3 for a
        // revoked family) rather than reading as an outage the next cycle resumes from.
        if (failure === undefined || isTokenFailure(error)) failure = error;
        else cardsFailure = error;
      }
    }
    if (failure !== undefined) {
      await measureQuarantine(bridge);
      throw await bothFailures(await cliErrorOf(failure, bridge), cardsFailure === undefined ? undefined : await cliErrorOf(cardsFailure, bridge));
    }
    const quarantineSize = (await measureQuarantine(bridge)) ?? 0;
    const complete = transactions.outcome === "complete" && cards.outcome === "complete";
    return {
      transactions,
      cards,
      events: totalPublished(transactions) + totalPublished(cards),
      complete,
      interrupted: !complete && signal?.aborted === true,
      // Never below 0 (a wall clock stepped back during the cycle), as the engines' own reports.
      durationMs: Math.max(0, bridge.clock.now() - started),
      quarantineSize,
    };
  });
}

/**
 * The error of a cycle whose transactions failed, naming the cards walk's failure after it when both are failures for
 * now (exit 1); otherwise the first, whose exit code the run keeps.
 */
function bothFailures(first: CliError, cards: CliError | undefined): CliError {
  if (!(first instanceof CycleFailedError) || !(cards instanceof CycleFailedError)) return first;
  return new CycleFailedError(`${first.message}; and ${cards.message}`, { cause: first });
}

/**
 * Re-drives the tenant's quarantined transactions (see `redriveQuarantined`) under the cycle lock, within `budgetMs`;
 * once `signal` aborts (Ctrl-C, SIGTERM), it stops after the batch in hand, as at its deadline.
 *
 * @throws AuthorizeAgainError (exit 3) when the token family is revoked; CycleFailedError (exit 1) otherwise.
 * @example
 * const { redriven, kept } = await runRedrive(bridge, { signal: io.signal });
 */
export async function runRedrive(bridge: LocalBridge, options: { readonly budgetMs?: number; readonly signal?: AbortSignal } = {}): Promise<RedriveReport> {
  const { budgetMs = bridge.settings.cycleBudgetMs, signal } = options;
  const deadline = bridge.clock.now() + budgetMs;
  return withCycleLock(bridge, async () => {
    try {
      await bridge.supersedeConformPassOnce();
      return await redriveQuarantined(bridge.transactions, { deadline, ...(signal ? { signal } : {}) });
    } catch (error) {
      throw await cliErrorOf(error, bridge);
    } finally {
      await measureQuarantine(bridge);
    }
  });
}

/**
 * Re-masks the snapshots of the state directory to the current PII mode (see `conformSnapshots`) under the cycle
 * lock, which covers transactions and cards alike, within `budgetMs`; `cursor` goes on from where a pass stopped. Once
 * `signal` aborts (Ctrl-C, SIGTERM), it stops after the page in hand, as at its deadline, with a cursor to go on from.
 *
 * @throws UsageError (exit 2) when `cursor` is not one to go on from here (made under another BRIDGE_PII_MODE or
 *   tenant, damaged, of an earlier version, or not the last a pass over this state directory printed); ConfigError
 *   (exit 2) for a corrupt snapshot segment; CycleFailedError (exit 1) otherwise.
 * @example
 * const { outcome, rewritten } = await runConformPii(bridge);
 */
export async function runConformPii(
  bridge: LocalState,
  cursor?: string,
  options: { readonly budgetMs?: number; readonly signal?: AbortSignal } = {},
): Promise<ConformReport> {
  const { budgetMs = bridge.settings.cycleBudgetMs, signal } = options;
  const deadline = bridge.clock.now() + budgetMs;
  return withCycleLock(bridge, async () => {
    try {
      // `interrupt`, not the engine's `signal`: the person sees the report, and goes on with its cursor.
      return await conformSnapshots(bridge.transactions, { deadline, ...(cursor === undefined ? {} : { cursor }), ...(signal ? { interrupt: signal } : {}) });
    } catch (error) {
      if (error instanceof ConformCursorError) {
        throw new UsageError(`--cursor refused: ${error.reason}: run \`npm run bridge -- conform-pii\` without --cursor to start over`, { cause: error });
      }
      if (error instanceof SnapshotCursorError) {
        throw new UsageError("--cursor is not a cursor of this state directory's snapshots: pass the one conform-pii printed, or leave it out to start over", {
          cause: error,
        });
      }
      throw stateErrorOf(error, bridge, (e) => `conform-pii stopped: ${e.name}: ${e.message}; snapshots rewritten so far keep their new form: run conform-pii again`);
    }
  });
}
