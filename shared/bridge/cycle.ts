/**
 * Machinery shared by the transaction and card cycles: provider calls with error accounting,
 * event building, publishing with per-event failures, quarantine records, and the end-of-cycle report.
 */
import { CycleAbortedError, PUBLISH_STEP, ReauthorizationNeededError, storeDeadlineExceeded } from "./errors.js";
import { eventId } from "./hash.js";
import { diffObjects, type Change } from "./diff.js";
import { DEFAULT_DEADLINE_GRACE_MS, DEFAULT_PAGE_SIZE, DEFAULT_SOURCE, MIN_PAGE_SIZE, type BridgeDeps, type CycleOptions } from "./deps.js";
import { SCHEMA_VERSION, type EventType } from "./events/schemas.js";
import type { BridgeEvent, EntityKind, PublishFailure, QuarantineRecord, Snapshot, StoreCallOptions } from "./ports.js";
import { emptyReport, type CycleReport } from "./report.js";
import { cardValidator, requireObjectWithId, type Validators } from "./validate.js";
import { applyPii, applyPiiToBody, assertPiiPolicy, conformPii } from "./pii.js";
import type { ProviderCallOptions, ProviderPage } from "./provider.js";
import { causedByClientRefusal, deadlineExceeded, errorContext, errorFields, isPageSizeRejection, isReauthorizationRequired, statusClass, StepFailure } from "./provider-errors.js";
import { lastModified, nextSequence, parseTime, untilLaterSecond } from "./versions.js";
import { quarantineId, quarantineReason } from "./quarantine-id.js";
import { wellFormedEntityId } from "./entity-id.js";

/** What kind of run a CycleRun is, as its log line, its metrics and a CycleAbortedError's message need it. */
export interface RunKind {
  /** What runs, e.g. "re-drive". @default "<kind> cycle" */
  readonly what?: string;
  /** How an abort's message ends: what an operator may rely on next. */
  readonly next: string;
  /** How it ends instead when the failure needs a person (a 403), so the next run would fail the same way. @default next */
  readonly nextUntilFixed?: string;
  /**
   * Whether the run lists the provider's backlog, so that pulling nothing and completing means no lag (a 0 point).
   * A run that reads chosen items only (the re-drive) knows no lag when it pulled nothing. @default true
   */
  readonly listsBacklog?: boolean;
}

/** A scheduled cycle's: the next one picks up where it stopped. */
const CYCLE_RUN: RunKind = {
  next: "work done so far is durable and the next cycle resumes",
  nextUntilFixed: "work done so far is durable, and each cycle stops the same way until then",
};

/** How a 403 begins an abort's ending: waiting does not help, a person must act (API access, or a scope not granted). */
const FORBIDDEN =
  "the provider refuses this access (the company's API access is off, or the grant lacks a scope): turn it on or re-authorize with the scope";

/** A provider call the client would not send (or send again) because it could not finish by the cycle's deadline. */
class OutOfTime extends StepFailure {
  override name = "OutOfTime";
}

/** Batches in a row with every event deferred after which a walk stops (see {@link CycleRun.publisherUnavailable}). */
export const PUBLISHER_UNAVAILABLE_BATCHES = 2;
/** ...holding together at least this many events: two full PutEvents calls' worth (10 entries each). */
export const PUBLISHER_UNAVAILABLE_EVENTS = 20;

/** One run of a cycle: holds the report and the deps, and owns error conversion. */
export class CycleRun {
  readonly report: CycleReport;
  readonly source: string;
  readonly validators: Validators;
  /** `page_size` of list calls; lowered for the rest of the cycle when the provider rejects it. */
  protected pageSize: number;
  /** What every provider call must end by: the deadline plus its grace. */
  private readonly call: ProviderCallOptions;
  private readonly startedAt: number;
  private oldestLagMs = 0;
  /** Events offered to the publisher in this run whose snapshots are not stored (see {@link leaveSecond}). */
  private offeredWithoutSnapshot = 0;
  /** Change times (epoch ms) of items pulled whose change is not yet published or acknowledged, by subject id. */
  private readonly unpublished = new Map<string, number>();
  /** Batches in a row whose every event the publisher did not take for now, and their events (see {@link publisherUnavailable}). */
  private deferredBatches = 0;
  private deferredEvents = 0;
  /**
   * What this run learned of the token family, for the TokenFamilyRevoked gauge ({@link finish}): `alive` once a
   * provider call was answered (its token was accepted), `revoked` when it fails for want of re-authorization.
   */
  private tokenFamily: "alive" | "revoked" | undefined;

  constructor(
    readonly deps: BridgeDeps,
    kind: CycleReport["kind"],
    private readonly cycle: CycleOptions,
  ) {
    assertPiiPolicy(deps.pii);
    this.pageSize = cycle.pageSize ?? DEFAULT_PAGE_SIZE;
    this.call = {
      ...(cycle.deadline === undefined ? {} : { deadline: cycle.deadline + (cycle.deadlineGraceMs ?? DEFAULT_DEADLINE_GRACE_MS) }),
      ...(cycle.signal === undefined ? {} : { stop: cycle.signal }),
    };
    this.report = emptyReport(kind);
    this.source = deps.source ?? DEFAULT_SOURCE;
    this.validators = {
      transaction: deps.validators?.transaction ?? requireObjectWithId,
      card: cardValidator(deps.validators?.card),
    };
    this.startedAt = deps.clock.now();
  }

  /**
   * Runs a provider call with the cycle's call deadline, counting it and recording a failure by status class; a
   * failure the caller handles as a normal answer (`expected`) is not a provider error. A call the client stops for
   * want of time throws {@link OutOfTime} (see {@link outOfTime}); only the failed attempt before it, if any, counts.
   */
  async provider<T>(step: string, fn: (call: ProviderCallOptions) => Promise<T>, expected?: (err: unknown) => boolean): Promise<T> {
    this.report.providerCalls += 1;
    try {
      const answer = await fn(this.call);
      this.tokenFamily ??= "alive";
      return answer;
    } catch (err) {
      const late = deadlineExceeded(err);
      // An earlier deadline is not the cycle's (a token refresh held to its lease): that one is a failure. Once asked
      // to stop, a call that stopped retrying ends the cycle like its deadline.
      if (late && (this.cycle.signal?.aborted === true || (this.cycle.deadline !== undefined && late.deadline >= this.cycle.deadline))) {
        if (late.cause !== undefined) this.deps.metrics.add("ProviderErrors", 1, "Count", { status_class: statusClass(late.cause) });
        // A provider that kept failing until the deadline before anything was pulled is an outage, not a slow cycle:
        // ended `deadline`, it would fail no invocation and send no SyncLagSeconds point, so no alarm would see it (a
        // short schedule's budget cannot wait out a Retry-After or the client's attempts that a longer one would).
        if (late.cause !== undefined && this.report.pulled === 0 && this.cycle.signal?.aborted !== true) {
          throw new StepFailure(step, { cause: late.cause });
        }
        const last = late.cause === undefined ? undefined : errorContext(late.cause);
        // Named after its cause: a deadline warning on a Ctrl-C would send an operator to raise the time budget. The
        // signal is a person's Ctrl-C locally, the invocation's end (middy's early timeout) on AWS.
        const why =
          this.cycle.signal?.aborted === true
            ? "the cycle was asked to stop (Ctrl-C, or the Lambda invocation ending)"
            : "it cannot finish before the cycle deadline";
        this.deps.logger.warn(`provider call not sent or retried: ${why}; stopping`, { step, lastError: last?.name, status: last?.status });
        throw new OutOfTime(step, { cause: err });
      }
      if (!isReauthorizationRequired(err) && expected?.(err) !== true) {
        this.deps.metrics.add("ProviderErrors", 1, "Count", { status_class: statusClass(err) });
      }
      throw new StepFailure(step, { cause: err });
    }
  }

  /**
   * How an item compares with its snapshot `before`: `"new"` without one, `"same"` when the hashes match, else its
   * changes that `relevant` keeps. The snapshot is diffed in the current PII form: it may predate a PII mode switch, and
   * its cleartext must never reach an event. No changes means the same data in another form (null vs absent, PII of an
   * earlier mode): the caller rewrites the snapshot without an event. `"same"` and no changes count as unchanged.
   */
  changesSince(
    before: Snapshot | undefined,
    hash: string,
    object: Readonly<Record<string, unknown>>,
    relevant?: (change: Change, before: Snapshot) => boolean,
  ): Change[] | "new" | "same" {
    if (before === undefined) return "new";
    if (before.hash === hash) {
      this.report.unchanged += 1;
      return "same";
    }
    const all = diffObjects(conformPii(before.object, this.deps.pii), object);
    const changes = relevant === undefined ? all : all.filter((change) => relevant(change, before));
    if (changes.length === 0) this.report.unchanged += 1;
    return changes;
  }

  /** True when `err` is a provider call stopped by the cycle's deadline: the cycle ends with outcome `deadline`. */
  outOfTime(err: unknown): boolean {
    return err instanceof OutOfTime;
  }

  /**
   * Lists one page through {@link provider}, halving the page size while the provider rejects it (its maximum is not
   * specified), down to MIN_PAGE_SIZE. `list` is called with the size to ask for.
   */
  async listPage(
    step: string,
    list: (pageSize: number, call: ProviderCallOptions) => Promise<ProviderPage>,
    expected?: (err: unknown) => boolean,
  ): Promise<ProviderPage> {
    for (;;) {
      const size = this.pageSize;
      const smaller = (err: unknown): boolean => size > MIN_PAGE_SIZE && isPageSizeRejection(err);
      try {
        return await this.provider(step, (call) => list(size, call), (err) => smaller(err) || expected?.(err) === true);
      } catch (err) {
        if (!smaller(err)) throw err;
        this.pageSize = Math.min(this.pageSize, Math.max(MIN_PAGE_SIZE, Math.floor(size / 2)));
        this.deps.logger.warn("provider rejected page_size; retrying smaller", { from: size, to: this.pageSize });
      }
    }
  }

  /**
   * A {@link port} call that writes (publish, store, quarantine): none starts past the calls' deadline (the cycle's,
   * plus its grace), as no provider call does. A Lambda container frozen mid-page and thawed after its cycle lease
   * lapsed would otherwise publish and store that page over what a later cycle stored (an older snapshot, a change
   * diffed against it). Throws {@link OutOfTime} (outcome `deadline`); what was published before is re-sent with the
   * same ids, its items being still listed. `fn` gets the calls' deadline to hand the port, whose retries stop there
   * (`StoreCallOptions`, `PublishOptions`): a port that rejects with WriteDeadlineExceededError ends the cycle the
   * same way, nothing of the page being acknowledged.
   */
  async write<T>(step: string, fn: (options: StoreCallOptions) => Promise<T>): Promise<T> {
    const { deadline } = this.call;
    if (deadline !== undefined && this.deps.clock.now() >= deadline) throw new OutOfTime(step, {});
    return this.held(step, fn);
  }

  /**
   * A {@link port} call that reads the snapshot store, its retries held to the calls' deadline (`StoreCallOptions`): a
   * read that rejects with ReadDeadlineExceededError (a throttled table) ends the cycle with outcome `deadline`
   * ({@link OutOfTime}) rather than retry on past the invocation's timeout. A batch reads its snapshots before it
   * publishes, stores a snapshot or acknowledges anything, so such a stop loses nothing: the next cycle lists its
   * items again.
   */
  async read<T>(step: string, fn: (options: StoreCallOptions) => Promise<T>): Promise<T> {
    return this.held(step, fn);
  }

  /** Runs `fn` through {@link port} with the calls' deadline; the port stopping at it throws {@link OutOfTime}. */
  private async held<T>(step: string, fn: (options: StoreCallOptions) => Promise<T>): Promise<T> {
    try {
      return await this.port(step, () => fn(this.storeCallOptions()));
    } catch (err) {
      const late = storeDeadlineExceeded(err);
      if (late === undefined) throw err;
      this.deps.logger.warn("store call stopped retrying at the calls' deadline; stopping", { step });
      throw new OutOfTime(step, { cause: late });
    }
  }

  /** What a store call must end its retries by ({@link write}, {@link read}): the calls' deadline, when the cycle has one. */
  protected storeCallOptions(): StoreCallOptions {
    const { deadline } = this.call;
    return deadline === undefined ? {} : { deadline };
  }

  /** Runs a call to a non-provider port (store, publisher, quarantine), tagging a failure with the step. */
  async port<T>(step: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw new StepFailure(step, { cause: err });
    }
  }

  /** Notes an item pulled with a change not yet delivered: its age counts towards SyncLagSeconds until settled. */
  pending(subjectId: string, changedAtMs: number | undefined): void {
    if (changedAtMs !== undefined) this.unpublished.set(subjectId, changedAtMs);
  }

  /** Notes a raw pulled item (e.g. a page read ahead that the cycle will not process) as not yet delivered. */
  pendingRaw(raw: unknown): void {
    if (typeof raw !== "object" || raw === null) return;
    const item = raw as Record<string, unknown>;
    if (typeof item["id"] === "string") this.pending(item["id"], lastModified(item));
  }

  /** The item is done with in this cycle (published, unchanged, quarantined, acknowledged). */
  settled(subjectId: string): void {
    this.unpublished.delete(subjectId);
  }

  /** Applies the tenant's PII policy. */
  pii<T extends Record<string, unknown>>(object: T): T {
    return applyPii(object, this.deps.pii);
  }

  /**
   * Builds one event. The id depends only on tenant, type, subject, the snapshot diffed against (none for a first
   * sighting) and the new content hash: a re-send after a crash meets the same snapshot and keeps its id.
   */
  buildEvent(input: {
    type: EventType;
    kind: EntityKind;
    subjectId: string;
    qashioId?: string;
    object: Record<string, unknown>;
    before: Snapshot | undefined;
    afterHash: string;
    occurredAt: number;
    changes?: readonly Change[];
    parent?: { id: string; qashio_id: string };
  }): BridgeEvent {
    const id = eventId({
      tenant: this.deps.tenant,
      type: input.type,
      subjectId: input.subjectId,
      beforeHash: input.before?.hash ?? "",
      beforeVersion: input.before?.updatedAt ?? "",
      afterHash: input.afterHash,
    });
    const occurredAt = new Date(input.occurredAt).toISOString();
    const data: { object: Record<string, unknown>; changes?: readonly Change[]; parent?: { id: string; qashio_id: string } } = {
      object: input.object,
    };
    if (input.changes) data.changes = input.changes;
    if (input.parent) data.parent = input.parent;
    return {
      source: this.source,
      detailType: input.type,
      // Later than the snapshot diffed against, which was stored after the subject's previous event: a clock that
      // stepped back cannot give a later state an earlier time (consumers order a subject's events by time).
      time: new Date(Math.max(this.deps.clock.now(), (parseTime(input.before?.updatedAt) ?? -Infinity) + 1)).toISOString(),
      detail: {
        id,
        type: input.type,
        schema_version: SCHEMA_VERSION,
        tenant: this.deps.tenant,
        occurred_at: occurredAt,
        subject: input.qashioId
          ? { type: input.kind, id: input.subjectId, qashio_id: input.qashioId, sequence: nextSequence(input.before) }
          : { type: input.kind, id: input.subjectId, sequence: nextSequence(input.before) },
        data,
      },
    };
  }

  /**
   * Publishes events and returns the failures by event id: for good, or for now (`retryable`, which the caller leaves
   * pending). A throw from the publisher means nothing is known to be published, so it aborts the cycle (the next one
   * re-sends the same ids).
   */
  async publish(events: readonly BridgeEvent[], changedAtMs: readonly (number | undefined)[]): Promise<Map<string, PublishFailure>> {
    const failures = new Map<string, PublishFailure>();
    if (events.length === 0) return failures;
    // Counted before the call: a publisher that throws may have put some of them on the bus already.
    this.offeredWithoutSnapshot += events.length;
    const { failed } = await this.write(PUBLISH_STEP, (call) => this.deps.publisher.publish(events, call.deadline === undefined ? undefined : call));
    for (const failure of failed) failures.set(failure.event.detail.id, failure);
    const now = this.deps.clock.now();
    // One metric point per type and batch rather than per event: a page is one type or two.
    const publishedByType = new Map<string, number>();
    events.forEach((event, i) => {
      if (failures.has(event.detail.id)) return;
      const type = event.detail.type;
      publishedByType.set(type, (publishedByType.get(type) ?? 0) + 1);
      this.settled(event.detail.subject.id);
      const changedAt = changedAtMs[i];
      if (changedAt !== undefined) this.oldestLagMs = Math.max(this.oldestLagMs, now - changedAt);
    });
    for (const [type, count] of publishedByType) {
      this.report.published[type] = (this.report.published[type] ?? 0) + count;
      this.deps.metrics.add("EventsPublished", count, "Count", { type });
    }
    const deferred = [...failures.values()].filter((f) => f.retryable === true);
    const rejected = [...failures.values()].filter((f) => f.retryable !== true);
    // Every event of the batch failed for now: the bus is throttling or down (see publisherUnavailable).
    const allDeferred = deferred.length === events.length && rejected.length === 0;
    this.deferredBatches = allDeferred ? this.deferredBatches + 1 : 0;
    this.deferredEvents = allDeferred ? this.deferredEvents + events.length : 0;
    if (failures.size > 0) {
      this.report.publishFailed += failures.size;
      this.deps.metrics.add("EventsFailed", failures.size, "Count");
      this.report.publishDeferred += deferred.length;
      const reasons = (list: readonly PublishFailure[]) => [...new Set(list.map((f) => f.reason))].slice(0, 5);
      if (rejected.length > 0) this.deps.logger.warn("events rejected by the publisher", { count: rejected.length, reasons: reasons(rejected) });
      if (deferred.length > 0) {
        this.deps.logger.warn("events not taken by the publisher for now; left for the next cycle", {
          count: deferred.length,
          reasons: reasons(deferred),
        });
      }
    }
    return failures;
  }

  /**
   * A deterministic quarantine record: the same bad input for the same reason kind gives the same id, whatever the
   * tenant's PII mode or salt (see {@link quarantineId}), so a record found again after a switch is not counted as new.
   * `rawId` is the id the record names as sent; its `entityId` is that id only when well formed ({@link wellFormedEntityId}).
   */
  quarantineRecord(kind: EntityKind, cause: "validation" | "publish", reason: string, raw: unknown, rawId?: string): QuarantineRecord {
    // The raw body goes through the PII policy too: the quarantine must not hold what snapshots may not, whatever its shape.
    const body = applyPiiToBody(raw, this.deps.pii);
    const id = quarantineId(this.deps.tenant, kind, cause, raw);
    // The provider's id unchecked may be anything (an email): named, and so logged, only when it has an id's form.
    const entityId = wellFormedEntityId(kind, rawId);
    const record: QuarantineRecord = {
      id,
      kind,
      reason: quarantineReason(cause, reason),
      raw: body,
      at: new Date(this.deps.clock.now()).toISOString(),
      ...(entityId === undefined ? {} : { entityId }),
    };
    return record;
  }

  /** Writes quarantine records durably; resolves only when all are written. */
  async quarantine(records: readonly QuarantineRecord[]): Promise<void> {
    if (records.length === 0) return;
    this.report.quarantined += records.length;
    // One put per id (the last record of it): inputs that differ only in personal fields share an id, and puts of one
    // id in parallel could each find it absent and count it twice.
    const unique = [...new Map(records.map((r) => [r.id, r])).values()];
    const added = await this.write("write quarantine records", () => Promise.all(unique.map((r) => this.deps.quarantine.put(r))));
    // Only records not held before count and warn: an invalid card is quarantined again on every walk, and would
    // otherwise raise QuarantineGrowing each time.
    const fresh = added.filter(Boolean).length;
    if (fresh > 0) this.deps.metrics.add("Quarantined", fresh, "Count");
    unique.forEach((r, i) => {
      const attributes = { kind: r.kind, entityId: r.entityId, reason: r.reason, quarantineId: r.id };
      if (added[i]) this.deps.logger.warn("record quarantined", attributes);
      else this.deps.logger.debug("record quarantined again (already held)", attributes);
    });
  }

  /**
   * True once {@link PUBLISHER_UNAVAILABLE_BATCHES} batches in a row, holding {@link PUBLISHER_UNAVAILABLE_EVENTS}
   * events or more, had every event refused for now: the bus is throttling or down. The walk then stops (outcome
   * `publisher_unavailable`) rather than read the rest of the backlog, try to publish each page in vain and remember
   * every id it walked; the next cycle starts over. A few events the bus keeps refusing for reasons of their own (one
   * small batch, or a handful in a row on small pages) do not stop it, so they cannot hold up the items behind them.
   */
  publisherUnavailable(): boolean {
    return this.deferredBatches >= PUBLISHER_UNAVAILABLE_BATCHES && this.deferredEvents >= PUBLISHER_UNAVAILABLE_EVENTS;
  }

  /** Waits `ms` on the cycle's clock; a stop request (see CycleOptions.signal) ends the wait early. */
  wait(ms: number): Promise<void> {
    return this.deps.clock.sleep(ms, this.cycle.signal);
  }

  /** True when the cycle's deadline has passed, or the cycle was asked to stop (see CycleOptions.signal). */
  pastDeadline(): boolean {
    const { deadline, signal } = this.cycle;
    return signal?.aborted === true || (deadline !== undefined && this.deps.clock.now() >= deadline);
  }

  /**
   * When the snapshots written after publishing `events` are stamped: now, yet no earlier than those events' times (a
   * clock that stepped back meanwhile), since a subject's next event is timed after its snapshot's version
   * ({@link buildEvent}), so after these.
   */
  stampAfter(events: readonly BridgeEvent[]): number {
    return Math.max(this.deps.clock.now(), ...events.map((event) => Date.parse(event.time)));
  }

  /**
   * Writes a batch's snapshots, then counts the `published` events among them as covered by their snapshots, so
   * {@link leaveSecond} no longer waits for them.
   */
  async storeSnapshots(writes: readonly Snapshot[], published: number): Promise<void> {
    if (writes.length) await this.write("write snapshots", (call) => this.deps.snapshots.putMany(writes, call));
    this.offeredWithoutSnapshot = Math.max(0, this.offeredWithoutSnapshot - published);
  }

  /**
   * Waits, when this run offered events to the publisher whose snapshots it did not store (it stopped between the two,
   * or a publish failed), until {@link NEXT_SECOND_MARGIN_MS} into the clock's next whole second, before the caller
   * releases its lease. The next run of this kind may publish those subjects again, in another state, under the same
   * `subject.sequence`; EventBridge may keep only whole seconds of `time` (cut or rounded), and the wait puts that
   * next run in a later second, so consumers can order the two (docs/events.md, ordering).
   */
  private async leaveSecond(): Promise<void> {
    if (this.offeredWithoutSnapshot === 0) return;
    await this.deps.clock.sleep(untilLaterSecond(this.deps.clock.now()));
  }

  /**
   * Ends the cycle: duration, lag and token family metrics, one log line. SyncLagSeconds is the age of the oldest change not
   * delivered: still pending now (the cycle stopped or failed before delivering it), or published in this cycle
   * (measured when published, since it was pending until then). See docs/spec-gaps.md (Bridge engine).
   */
  finish(kind: RunKind = CYCLE_RUN): CycleReport {
    const { report, deps } = this;
    const now = deps.clock.now();
    report.durationMs = Math.max(0, now - this.startedAt);
    let lagMs = this.oldestLagMs;
    for (const changedAt of this.unpublished.values()) lagMs = Math.max(lagMs, now - changedAt);
    report.syncLagSeconds = Math.max(0, Math.round(lagMs / 1000));
    deps.metrics.add("CycleDurationMs", report.durationMs, "Milliseconds");
    // No point when the lag is unknown, as a 0 would clear the SyncLag alarm: cards carry no change time, and a
    // transaction run that stopped before pulling anything (a list call failed, the deadline came first), that pulled
    // nothing without listing the backlog (the re-drive), or whose lists counted transactions it never read (an empty
    // first page of a list that says some wait), saw nothing of it.
    const backlogUnread = report.pulled === 0 && Object.values(report.backlog ?? {}).some((total) => total > 0);
    const lagKnown = report.kind === "transactions" && (report.pulled > 0 || (report.outcome === "complete" && kind.listsBacklog !== false && !backlogUnread));
    if (lagKnown) deps.metrics.add("SyncLagSeconds", report.syncLagSeconds, "Seconds");
    // A gauge, no point without news: a run the provider never answered (a failed first list, the deadline first, a
    // re-drive with nothing to read) says nothing of the family, and a 0 would clear the alarm while it is revoked.
    if (this.tokenFamily !== undefined) deps.metrics.add("TokenFamilyRevoked", this.tokenFamily === "revoked" ? 1 : 0, "Count");
    const level = report.outcome === "aborted" ? "error" : report.outcome === "publisher_unavailable" ? "warn" : "info";
    deps.logger[level](`${kind.what ?? `${report.kind} cycle`} ${report.outcome}`, { ...report });
    return report;
  }

  /**
   * Runs `body` as this run: a failure becomes the error the caller sees ({@link fail}), and however it ends the run
   * leaves the second ({@link leaveSecond}) before the caller releases its lease.
   */
  async execute<T>(body: () => Promise<T>, kind: RunKind = CYCLE_RUN): Promise<T> {
    try {
      return await body();
    } catch (err) {
      throw this.fail(err, kind);
    } finally {
      await this.leaveSecond();
    }
  }

  /** Converts a failure into the error the caller sees, after recording metrics and the report. */
  private fail(err: unknown, kind: RunKind = CYCLE_RUN): Error {
    this.report.outcome = "aborted";
    const step = err instanceof StepFailure ? err.step : "cycle";
    const cause = err instanceof StepFailure ? err.cause : err;
    this.deps.metrics.add("CycleErrors", 1, "Count");
    const revoked = isReauthorizationRequired(cause);
    // Whatever the provider answered before (an access token that ran out mid-run, its refresh refused).
    if (revoked) this.tokenFamily = "revoked";
    const report = this.finish(kind);
    const ctx = errorContext(cause);
    const fields = errorFields(cause);
    if (revoked) {
      return new ReauthorizationNeededError(
        (causedByClientRefusal(cause)
          ? `The provider refused the bridge's refresh token or its client credentials for tenant "${this.deps.tenant}" ` +
            "(a 401 naming no invalid_grant, the answer to both): check the client id and secret first, else re-authorize " +
            "the integration (run the authorization flow again)"
          : `The provider revoked the bridge's token family for tenant "${this.deps.tenant}": re-authorize the integration ` +
            "(run the authorization flow again)") + "; the bridge will not retry until then",
        { report },
        { cause },
      );
    }
    return new CycleAbortedError(
      `${kind.what ?? `${report.kind} cycle`} stopped: ${step} failed (${ctx.name}${ctx.status ? ` ${ctx.status}` : ""}: ${ctx.message}` +
        `${fields ? `; errors: ${fields}` : ""}); ` +
        (ctx.status === 403 ? `${FORBIDDEN}; ${kind.nextUntilFixed ?? kind.next}` : kind.next),
      { report, status: ctx.status, requestId: ctx.requestId, ...(err instanceof StepFailure ? { step } : {}) },
      { cause },
    );
  }
}
