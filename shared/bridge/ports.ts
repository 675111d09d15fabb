/**
 * Ports of the sync engine: plain interfaces the engine depends on.
 * Local adapters live in shared/local, AWS adapters in shared/aws; both pass
 * the same contract suite (test/bridge/contract/).
 */
import type { TokenStore } from "../qashio/auth/token-store.js";

/** What kind of provider entity a snapshot, event subject or quarantine record is about. */
export type EntityKind = "transaction" | "card";

/**
 * Key of one snapshot within a tenant: `${kind}:${id}` for an entity; the engine also keeps a few records of its own
 * under its kinds' prefixes (a transaction's `qashio_id` alias, the card walk's cursor, the id of the last conform
 * pass that stopped with a cursor).
 */
export type SnapshotKey = `${EntityKind}:${string}`;

/**
 * Last state of one entity the bridge took in: published (or, a card first seen without `card.created`, recorded
 * silently), written before the transaction is acknowledged.
 */
export interface Snapshot {
  readonly key: SnapshotKey;
  /** Content hash (hex sha-256) of `object`, the normalised provider object. */
  readonly hash: string;
  /** What the diff needs: the normalised provider object as last published (members `undefined` count as absent). */
  readonly object: Record<string, unknown>;
  /**
   * ISO 8601 time the snapshot was written, always later than the version it replaced: it names the version, and
   * event ids depend on it (docs/events.md), so adapters must store it verbatim.
   */
  readonly updatedAt: string;
  /**
   * `subject.sequence` of the last event published about the subject (0 when none was: a silent first sighting).
   * Absent in snapshots written before sequences existed, which counts as 0. Adapters must store it verbatim.
   */
  readonly sequence?: number;
}

/** Where to read in {@link SnapshotStore.scan}. */
export interface SnapshotScanOptions {
  /** Cursor of the previous page: the page starts after it. Without one, the walk starts at the beginning. */
  readonly cursor?: string;
  /** Most snapshots in the page (a whole number, at least 1). */
  readonly limit: number;
}

/** One page of a walk over a tenant's snapshots. */
export interface SnapshotPage {
  readonly snapshots: readonly Snapshot[];
  /** Where the next page starts; absent once the walk has reached the end of the store. */
  readonly cursor?: string;
}

/**
 * Options of a store call held to the caller's time budget ({@link SnapshotStore.getMany}, {@link SnapshotStore.putMany},
 * {@link Quarantine.deleteMany}).
 */
export interface StoreCallOptions {
  /**
   * Epoch ms (the cycle's deadline plus its grace) after which an adapter that retries sends nothing again: a retry
   * whose backoff ends past it rejects instead (shared/bridge/errors.ts). A write with `WriteDeadlineExceededError`, as
   * a late resend (the container frozen meanwhile, thawed after a later cycle wrote) would put an older page's
   * snapshots over newer ones; a read with `ReadDeadlineExceededError`, as retrying on under a throttled table would
   * run the cycle past its invocation's timeout. The first send is the caller's to hold back. An adapter whose calls
   * do not retry may ignore it.
   */
  readonly deadline?: number;
}

/** Snapshots of one tenant (the tenant is bound when the store is built). */
export interface SnapshotStore {
  /**
   * Reads many snapshots; missing keys are simply absent from the map. With `options.deadline`, rejects with
   * `ReadDeadlineExceededError` rather than send again past it.
   */
  getMany(keys: readonly SnapshotKey[], options?: StoreCallOptions): Promise<Map<SnapshotKey, Snapshot>>;
  /**
   * Writes (creates or replaces) many snapshots; resolves only when all are durable. With `options.deadline`, rejects
   * with `WriteDeadlineExceededError` rather than send again past it (some may then be durable, others not).
   */
  putMany(snapshots: readonly Snapshot[], options?: StoreCallOptions): Promise<void>;
  /**
   * Reads one page of the tenant's snapshots (every key: aliases and cursors too), in the store's own order: at most
   * `limit` of them, after `options.cursor`, so a walk holds one page in memory whatever the size of the store. A page
   * may hold fewer, even none, before the end; only a page without a cursor ends the walk. A snapshot stored for the
   * whole walk comes at least once; one rewritten during the walk may come again, in its new version. A cursor stays
   * valid for a new instance over the same storage.
   *
   * @throws SnapshotCursorError for a cursor this store did not issue.
   */
  scan(options: SnapshotScanOptions): Promise<SnapshotPage>;
  /**
   * Removes whatever the store still keeps of snapshot versions `putMany` replaced, so an overwritten value (e.g.
   * cleartext masked by `conformSnapshots`) is gone from its storage as well; resolves once that is durable. A store
   * whose writes replace in place (DynamoDB) has nothing to do.
   */
  vacuum(): Promise<void>;
}

/** The `detail` of one bridge event (see docs/events.md). */
export interface BridgeEventDetail {
  readonly id: string;
  readonly type: string;
  readonly schema_version: string;
  readonly tenant: string;
  readonly occurred_at: string;
  readonly subject: { readonly type: EntityKind; readonly id: string; readonly qashio_id?: string; readonly sequence: number };
  readonly data: {
    /**
     * The normalised provider object. A member the bridge leaves out of it (a volatile field) may be present with the
     * value `undefined`, which its JSON text (what publishers send) does not show.
     */
    readonly object: Record<string, unknown>;
    readonly changes?: readonly { readonly path: string; readonly before: unknown; readonly after: unknown }[];
    readonly parent?: { readonly id: string; readonly qashio_id: string };
  };
}

/** One event as published: the detail plus the routing fields an EventBridge entry needs. */
export interface BridgeEvent {
  /** EventBridge `Source`. */
  readonly source: string;
  /** EventBridge `DetailType`: equals `detail.type`. */
  readonly detailType: string;
  /**
   * ISO 8601, the EventBridge `Time`: when the bridge built the event to publish it (at least 1 ms after the snapshot
   * it diffed against, so a subject's events keep their order on a clock that stepped back). Not `detail.occurred_at` (the
   * change's own time, often days older for a backlog): an archive replays, and may expire, by this time, so a replay
   * of an outage window must find what was published in it.
   */
  readonly time: string;
  readonly detail: BridgeEventDetail;
}

/** One event the publisher did not take, after the adapter's own retries. */
export interface PublishFailure {
  readonly event: BridgeEvent;
  /** Why it failed; never contains a secret. */
  readonly reason: string;
  /**
   * True when the failure is transient (throttling, a service fault that outlasted the adapter's retries): the engine
   * then leaves the item unacknowledged, with no snapshot and no quarantine record, so the next cycle re-sends the same
   * event id. Absent or false: failed for good; the engine quarantines the item and acknowledges it.
   */
  readonly retryable?: boolean;
}

/** Options of one {@link EventPublisher.publish} call. */
export interface PublishOptions {
  /**
   * Epoch ms the call should end by (the cycle's deadline plus its grace): an adapter that retries makes no retry that
   * would wait past it, and returns what is left as failed for now (`retryable`), so the cycle ends in its time.
   */
  readonly deadline?: number;
}

/** Publishes events. Per-event failures are returned, not thrown; a throw means nothing is known to be published. */
export interface EventPublisher {
  publish(events: readonly BridgeEvent[], options?: PublishOptions): Promise<{ readonly failed: readonly PublishFailure[] }>;
}

/** A provider record the bridge could not process, kept durably with why. */
export interface QuarantineRecord {
  /** Deterministic id: the same bad input gives the same id (idempotent put), whatever the PII mode. */
  readonly id: string;
  readonly kind: EntityKind;
  /** Provider id of the entity when known. */
  readonly entityId?: string;
  readonly reason: string;
  /**
   * The provider body as received, its personal fields in the tenant's PII form when it was last found; as `list`
   * hands back one a store could not keep whole, a {@link CutQuarantineBody}.
   */
  readonly raw: unknown;
  /** ISO 8601. */
  readonly at: string;
}

/**
 * A quarantined body too large for the store to keep whole even compressed (DynamoDB's item limit), as its `list`
 * hands it back: the byte length of the body's JSON text, the head of that text (cut short, so not JSON: its personal
 * values cannot be found by path), and the body's `qashio_id`, kept whole for the re-drive, when it had one.
 */
export interface CutQuarantineBody {
  readonly _truncated: { readonly bytes: number };
  readonly head: string;
  readonly qashio_id?: string;
}

/** Options of {@link Quarantine.pages}. */
export interface QuarantinePagesOptions {
  /** Most records in a page (a whole number, at least 1). */
  readonly limit: number;
  /**
   * The id of a record an earlier walk handed out: this walk goes on after it, with the records whose id sorts after
   * it (a walk stopped at a deadline resumes there rather than read again every record before it).
   */
  readonly after?: string;
}

export interface Quarantine {
  /**
   * Resolves only once the record is durable: true when it is new, false when a record with its id is already held.
   * A held record keeps its first `at` and takes this one's `reason` and `raw`: the same input found again, with its
   * personal fields in the tenant's current PII form, so a record found again after a mode switch holds no cleartext
   * of the earlier mode.
   */
  put(record: QuarantineRecord): Promise<boolean>;
  /** Every record held, all at once: for a small quarantine or a test; a walk over a quarantine of any size uses `pages`. */
  list(): Promise<QuarantineRecord[]>;
  /**
   * Every record held, at most `limit` at a time, in the store's order of their ids (the same for every walk; `after` starts after one), so a reader
   * that lets each page go before the next holds one page in memory whatever the size of the quarantine (a rule that
   * refused good provider data may have quarantined a whole backlog, bodies included). A record held and left alone
   * for the whole walk comes once; one put or deleted during the walk (its own page's included) may or may not come.
   *
   * That order must be ascending JavaScript string order (`<`, UTF-16 code units) over the ids the engine gives
   * (`quarantineId`: UUIDs in lowercase hex), and `after` any string, held or not, must start at the first id greater
   * by `<`: the re-drive starts its walk after a random id and, come round to the beginning, stops at the first id
   * greater by `<` than where it started, so another order would walk some records twice and others never. UTF-8
   * byte order (DynamoDB's sort keys) and the order of the file adapter's URI-encoded names agree with it on these
   * ids; the contract suite checks it (test/bridge/contract/quarantine.ts).
   */
  pages(options: QuarantinePagesOptions): AsyncIterable<readonly QuarantineRecord[]>;
  /**
   * Removes the records of `ids` once their cases are settled (e.g. a batch of re-driven transactions), in as few
   * calls as the store allows; resolves once all are durably gone. An absent id, or one given twice, is a no-op. On a
   * failure some may be gone and the others not. With `options.deadline`, rejects with `WriteDeadlineExceededError`
   * rather than send again past it (a late delete could remove a record a later run put again under its id); a store
   * that deletes in several calls names in its `doneIds` the ids it deleted before it stopped.
   */
  deleteMany(ids: readonly string[], options?: StoreCallOptions): Promise<void>;
  /** How many records are held now (a gauge for "quarantine not empty"; cheaper than `list`). */
  size(): Promise<number>;
}

/** A held lease. */
export interface LockHandle {
  /**
   * Extends the lease by `ttlMs` from now, one that ran out while no other owner took it too (nobody can have held it
   * meanwhile, so it is still this owner's: taken again, atomically, as `confirm` does); false when it was lost (another
   * owner took it since) or released; rejects when the lock cannot tell now (a lease it could not read), having
   * extended nothing. May stop early, rejecting, once `signal` aborts (the holder no longer needs the renewal).
   */
  renew(ttlMs: number, signal?: AbortSignal): Promise<boolean>;
  /**
   * Releases the lease if still held by this owner; never throws for a lost lease, but rejects when the lock cannot
   * tell whether it is held now (a lease it could not read), releasing nothing: the lease then runs out by itself.
   */
  release(): Promise<void>;
  /**
   * Whether this owner still holds the lease, where the lock can tell: true while it does; a lease that ran out while
   * no other owner took it is taken again for `ttlMs` (atomically: nobody can have written meanwhile); false once
   * another owner took it; rejects when the lock cannot tell now (a lease it could not read). For a holder that may
   * have stalled past its lease (a stopped process) to check before a write another owner's work must not meet.
   */
  confirm?(ttlMs: number): Promise<boolean>;
  /**
   * True when the lease was taken, before it expired, from a holder that exited without releasing it (a crash, as a
   * file lock can tell): what that holder did last may be only moments old.
   */
  readonly tookOver?: boolean;
}

/** Named, expiring, cross-process mutual exclusion (file lock locally, DynamoDB lease on AWS). */
export interface Lock {
  /** Tries once; undefined when another owner holds an unexpired lease on `name`. */
  tryAcquire(name: string, ttlMs: number): Promise<LockHandle | undefined>;
  /**
   * Who holds `name` now, in words for a person (such as "pid 4242 on this machine"), where the lock can tell; undefined
   * when nobody does, or it cannot tell. For a refusal to name what to wait for.
   */
  holderOf?(name: string): Promise<string | undefined>;
}

/** Time source (shared/clock.ts); tests inject a fake so nothing really sleeps. */
export type { Clock } from "../clock.js";

/** Metric names the engine and handlers emit (CloudWatch names; dashboards and alarms use them). */
export type MetricName =
  | "TransactionsPulled"
  | "CardsPulled"
  /** 1 per card cycle of mode `full` started: the card fast path's heartbeat, which its own ticks cannot keep alive. */
  | "FullCardWalks"
  /** 1 per card cycle of mode `suspended-only` started: the heartbeat of the fast path's own schedule. */
  | "FastPathCardWalks"
  /** Cards a full walk took as listed because their single read failed (the CardDetailsUnread alarm). */
  | "CardDetailsUnread"
  /** The same for a `suspended-only` (fast path) cycle: graphed, not alarmed, as its ticks are many per full walk. */
  | "FastPathCardDetailsUnread"
  | "EventsPublished"
  | "EventsFailed"
  | "Acknowledged"
  | "AcknowledgeRefused"
  | "Quarantined"
  | "QuarantineSize"
  | "ProviderErrors"
  | "TokenRefreshes"
  | "TokenFamilyRevoked"
  | "TokenSecretWriteFailed"
  | "TokenHeldInTable"
  | "SyncLagSeconds"
  | "TransactionsBacklog"
  | "CycleDurationMs"
  | "CycleErrors";

export type MetricUnit = "Count" | "Seconds" | "Milliseconds";

export interface Metrics {
  /** Adds a data point; `dimensions` are extra to the tenant dimension every adapter adds. */
  add(name: MetricName, value: number, unit?: MetricUnit, dimensions?: Readonly<Record<string, string>>): void;
}

export interface Logger {
  debug(message: string, attributes?: Readonly<Record<string, unknown>>): void;
  info(message: string, attributes?: Readonly<Record<string, unknown>>): void;
  warn(message: string, attributes?: Readonly<Record<string, unknown>>): void;
  error(message: string, attributes?: Readonly<Record<string, unknown>>): void;
}

export type { TokenStore };
