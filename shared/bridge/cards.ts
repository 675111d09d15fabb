/**
 * The card cycle: walk the ERP card list (or only its suspended slice), diff each card against its snapshot,
 * publish card events, then write snapshots. Cards have no acknowledge: the snapshot is the only cursor.
 */
import { contentHash } from "./hash.js";
import { diffObjects, type Change } from "./diff.js";
import { CycleRun, parseTime, versionTime } from "./cycle.js";
import { DEFAULT_MAX_PAGES, DEFAULT_PAGE_SIZE, type CardCycleDeps, type CycleOptions } from "./deps.js";
import type { EventType } from "./events/schemas.js";
import type { BridgeEvent, QuarantineRecord, Snapshot, SnapshotKey } from "./ports.js";
import type { CycleReport } from "./report.js";
import { pageEntries, type PageEntry } from "./provider.js";

/** `full` walks every card; `suspended-only` walks the `status=suspended` list (cheap, catches suspensions only). */
export type CardCycleMode = "full" | "suspended-only";

/** Options of {@link pollCards}. */
export interface CardCycleOptions extends CycleOptions {
  /** @default "full" */
  readonly mode?: CardCycleMode;
}

/** Snapshot key of a card. */
export function cardKey(id: string): SnapshotKey {
  return `card:${id}`;
}

/** A status compared without case: the spec shows both `Active` (§2.3) and `active` (§4.4, §2.5). */
function statusKey(status: unknown): unknown {
  return typeof status === "string" ? status.toLowerCase() : status;
}

/** True when two statuses differ in more than letter case. */
export function isStatusMove(beforeStatus: unknown, afterStatus: unknown): boolean {
  return statusKey(beforeStatus) !== statusKey(afterStatus);
}

/** Event type of a card change: status moves win over other changes; a case-only difference is no move. */
export function cardEventType(beforeStatus: unknown, afterStatus: unknown): EventType {
  if (!isStatusMove(beforeStatus, afterStatus)) return "card.updated";
  return statusKey(afterStatus) === "suspended" ? "card.suspended" : "card.status_changed";
}

/**
 * When a card change happened, from the card's own timestamps, so an event re-sent after a crash keeps its time:
 * `updated_at` / `modified_date` if the provider sends one; for `card.created` the card's `created_at`
 * (else `issued_at`); otherwise the latest `*_at` member that changed (e.g. `terminated_at`, `activated_at`).
 * Undefined when the card carries none (e.g. a suspension): the caller then uses the detection time.
 */
export function cardChangedAt(object: Readonly<Record<string, unknown>>, changes?: readonly Change[]): number | undefined {
  const stamped = parseTime(object["updated_at"]) ?? parseTime(object["modified_date"]);
  if (stamped !== undefined) return stamped;
  if (!changes) return parseTime(object["created_at"]) ?? parseTime(object["issued_at"]);
  let latest: number | undefined;
  for (const change of changes) {
    if (!/^\/[^/]+_at$/.test(change.path)) continue;
    const at = parseTime(change.after);
    if (at !== undefined && (latest === undefined || at > latest)) latest = at;
  }
  return latest;
}

class CardRun extends CycleRun {
  private readonly seen = new Set<string>();

  constructor(
    override readonly deps: CardCycleDeps,
    private readonly options: CardCycleOptions,
  ) {
    super(deps, "cards");
  }

  async run(): Promise<CycleReport> {
    const mode = this.options.mode ?? "full";
    const pageSize = this.options.pageSize ?? DEFAULT_PAGE_SIZE;
    const maxPages = this.options.maxPages ?? DEFAULT_MAX_PAGES;
    for (let page = 1; ; page++) {
      if (this.pastDeadline(this.options.deadline)) {
        this.report.outcome = "deadline";
        break;
      }
      if (page > maxPages) {
        this.report.outcome = "page_limit";
        break;
      }
      const result = await this.provider(`list ${mode} cards`, () =>
        this.deps.provider.listErpCards(
          mode === "suspended-only" ? { status: "suspended", page, page_size: pageSize } : { page, page_size: pageSize },
        ),
      );
      const entries = pageEntries(result);
      this.report.pulled += entries.length;
      if (entries.length > 0) this.deps.metrics.add("CardsPulled", entries.length, "Count");
      await this.processPage(entries);
      const hasNext = result.pagination?.has_next ?? entries.length >= pageSize;
      if (entries.length === 0 || !hasNext) break;
    }
    return this.finish();
  }

  private async processPage(entries: readonly PageEntry[]): Promise<void> {
    const { deps } = this;
    const quarantine: QuarantineRecord[] = [];
    const items: { id: string; object: Record<string, unknown>; hash: string }[] = [];
    for (const { raw, rejected } of entries) {
      const result = rejected === undefined ? this.validators.card(raw) : { success: false as const, reason: rejected };
      if (!result.success) {
        const rawId = (raw as Record<string, unknown> | null)?.["id"];
        quarantine.push(this.quarantineRecord("card", "validation", result.reason, raw, typeof rawId === "string" ? rawId : undefined));
        continue;
      }
      const object = this.pii(result.data);
      const id = object["id"] as string;
      // A card inserted at the top shifts the next page by one: the same card can be listed twice.
      if (this.seen.has(id)) continue;
      this.seen.add(id);
      items.push({ id, object, hash: contentHash(object) });
    }
    this.report.handled += items.length + quarantine.length;
    await this.quarantine(quarantine);
    if (items.length === 0) return;

    const snapshots = await this.port("read snapshots", () => deps.snapshots.getMany(items.map((i) => cardKey(i.id))));
    const now = deps.clock.now();
    const events: BridgeEvent[] = [];
    const pending: Snapshot[] = [];
    const silent: Snapshot[] = [];
    for (const item of items) {
      const before = snapshots.get(cardKey(item.id));
      const snapshot: Snapshot = { key: cardKey(item.id), hash: item.hash, object: item.object, updatedAt: versionTime(now, before) };
      if (before?.hash === item.hash) {
        this.report.unchanged += 1;
        continue;
      }
      if (!before) {
        if (!deps.emitCardCreated) {
          silent.push(snapshot);
          continue;
        }
        events.push(this.cardEvent("card.created", item, undefined, now));
        pending.push(snapshot);
        continue;
      }
      const moved = isStatusMove(before.object["status"], item.object["status"]);
      // A status differing only in case is not a change: no event, the snapshot takes the new spelling.
      const changes = diffObjects(before.object, item.object).filter((c) => moved || c.path !== "/status");
      if (changes.length === 0) {
        this.report.unchanged += 1;
        silent.push(snapshot);
        continue;
      }
      const type = cardEventType(before.object["status"], item.object["status"]);
      events.push(this.cardEvent(type, item, before, now, changes));
      pending.push(snapshot);
    }
    const failures = await this.publish(events, events.map(() => undefined));
    // A card whose event failed keeps its old snapshot, so the next walk detects and re-sends the change.
    const writes = [...silent, ...pending.filter((_, i) => !failures.has((events[i] as BridgeEvent).detail.id))];
    if (writes.length) await this.port("write snapshots", () => deps.snapshots.putMany(writes));
  }

  private cardEvent(
    type: EventType,
    item: { id: string; object: Record<string, unknown>; hash: string },
    before: Snapshot | undefined,
    now: number,
    changes?: ReturnType<typeof diffObjects>,
  ): BridgeEvent {
    return this.buildEvent({
      type,
      kind: "card",
      subjectId: item.id,
      object: item.object,
      before,
      afterHash: item.hash,
      occurredAt: cardChangedAt(item.object, changes) ?? now,
      changes,
    });
  }
}

/**
 * Runs one card cycle. `mode: "full"` walks every ERP card; `"suspended-only"` walks only `status=suspended`
 * (one small list call) to surface suspensions quickly between full walks. First sightings are recorded
 * silently unless `emitCardCreated` is set.
 *
 * @throws {ReauthorizationNeededError} the provider token family is revoked (never retried).
 * @throws {CycleAbortedError} a dependency failed; `error.report` holds what was done.
 * @example
 * ```ts
 * await pollCards(deps, { mode: "suspended-only", deadline: clock.now() + 10_000 });
 * ```
 */
export async function pollCards(deps: CardCycleDeps, options: CardCycleOptions = {}): Promise<CycleReport> {
  const run = new CardRun(deps, options);
  try {
    return await run.run();
  } catch (err) {
    throw run.fail(err);
  }
}
