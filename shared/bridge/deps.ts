/**
 * What the engine is built from: ports, tenant settings and defaults.
 */
import type { Clock, EventPublisher, Logger, Metrics, Quarantine, SnapshotStore } from "./ports.js";
import type { CardProviderPort, TransactionProviderPort } from "./provider.js";
import type { PiiPolicy } from "./pii.js";
import type { Validators } from "./validate.js";

/** Default EventBridge `Source` of bridge events. */
export const DEFAULT_SOURCE = "qashio.bridge";
/** Default `page_size` of list calls: the spec names no maximum (§8.3), 100 is the largest we rely on. */
export const DEFAULT_PAGE_SIZE = 100;
/** Smallest page size the engine falls back to when the provider rejects a larger one (the spec default, §8.1). */
export const MIN_PAGE_SIZE = 10;
/**
 * Default time a provider call may run past the cycle deadline, retries included. Calls start only before the
 * deadline; the grace lets a page already published and stored get its acknowledge (with the client's 10 s attempt
 * timeout, an acknowledge may start up to 5 s after the deadline). Keep it below the caller's own slack.
 */
export const DEFAULT_DEADLINE_GRACE_MS = 15_000;
/** Default bound on list calls per pull status (transactions) or per walk (cards) in one cycle. */
export const DEFAULT_MAX_PAGES = 10_000;

/** Ports and tenant settings shared by both cycles. */
export interface BridgeDeps {
  /** Tenant id: goes into every event and metric. */
  readonly tenant: string;
  readonly snapshots: SnapshotStore;
  readonly publisher: EventPublisher;
  readonly quarantine: Quarantine;
  readonly clock: Clock;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** Handling of personal fields (PERSONAL_FIELDS in ./pii.ts) for this tenant. */
  readonly pii: PiiPolicy;
  /** EventBridge `Source`. @default "qashio.bridge" */
  readonly source?: string;
  /** Per-item validators; cards must also carry a string `status` (`cardValidator`). @default `requireObjectWithId` for both kinds */
  readonly validators?: Partial<Validators>;
}

/** Dependencies of {@link pollTransactions}. */
export interface TransactionCycleDeps extends BridgeDeps {
  readonly provider: TransactionProviderPort;
}

/** Dependencies of {@link pollCards}. */
export interface CardCycleDeps extends BridgeDeps {
  readonly provider: CardProviderPort;
  /** Publish `card.created` on first sighting instead of recording the card silently. @default false */
  readonly emitCardCreated?: boolean;
  /**
   * Read each walked card's detail (`readErpCard`) and diff that, so changes the list does not show (spend limit
   * amounts and periods, top-up, ATM, country and merchant settings: spec §2.3) yield `card.updated` too. Costs one
   * provider call per card per full walk; a `suspended-only` walk reads only the cards not yet recorded suspended.
   * @default false
   */
  readonly cardDetails?: boolean;
}

/** What {@link cycleDeps} builds both cycles' deps from: the shared ports, one provider for both, the card switches. */
export interface CycleDepsParts extends BridgeDeps {
  readonly provider: TransactionProviderPort & CardProviderPort;
  readonly emitCardCreated: boolean;
  readonly cardDetails: boolean;
}

/**
 * The deps of both cycles from one set of parts, so the Lambda runtime and local mode hand the engine the same shape.
 *
 * @example
 * const { transactions, cards } = cycleDeps({ tenant, provider: client, snapshots, publisher, quarantine, clock, metrics, logger, pii, emitCardCreated: false, cardDetails: false });
 */
export function cycleDeps(parts: CycleDepsParts): { transactions: TransactionCycleDeps; cards: CardCycleDeps } {
  const { provider, emitCardCreated, cardDetails, ...common } = parts;
  return { transactions: { ...common, provider }, cards: { ...common, provider, emitCardCreated, cardDetails } };
}

/** Options common to both cycles. */
export interface CycleOptions {
  /** Epoch ms after which no new page is started; the cycle stops cleanly and resumes next time. */
  readonly deadline?: number;
  /**
   * A stop request (Ctrl-C, SIGTERM): once it aborts, no new page is started either, and the cycle stops as at its
   * deadline (outcome `deadline`; the next cycle resumes). An attempt under way finishes; a call waiting to retry
   * stops waiting and is not retried.
   */
  readonly signal?: AbortSignal;
  /**
   * How long past `deadline` a provider call under way may run, retries included (a call that cannot end by then is
   * not sent, and the cycle stops with outcome `deadline`). @default 15000 ({@link DEFAULT_DEADLINE_GRACE_MS})
   */
  readonly deadlineGraceMs?: number;
  /** `page_size` of list calls. @default 100 */
  readonly pageSize?: number;
  /** Bound on list calls per pull status / per walk. @default 10000 */
  readonly maxPages?: number;
  /**
   * Transactions: read the next page while the current batch is published, stored and acknowledged, so provider
   * latency overlaps the bridge's own work. Same number of calls plus one confirming read per drained status.
   * @default true
   */
  readonly readAhead?: boolean;
}
