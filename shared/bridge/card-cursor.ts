/**
 * The card walk cursor: where a card walk cut short stopped, stored as a snapshot of one reserved key per mode, so
 * the next walk of that mode resumes there. Used by the card cycle (see cards.ts) through the ports the run gives it.
 */
import { contentHash } from "./hash.js";
import { versionTime } from "./versions.js";
import { CARD_KEY_PREFIX } from "./card-keys.js";
import type { Clock, Snapshot, SnapshotKey } from "./ports.js";

/** `full` walks every card; `suspended-only` walks the `status=suspended` list (cheap, catches suspensions only). */
export type CardCycleMode = "full" | "suspended-only";

/**
 * Reserved snapshot key of the card walk cursor of one mode. Card ids start with `CA` (the client's schema rejects
 * others, docs/spec-gaps.md), so the key cannot meet a card's.
 */
export function walkCursorKey(mode: CardCycleMode): SnapshotKey {
  return `${CARD_KEY_PREFIX}~walk-cursor:${mode}`;
}

/**
 * Where a card walk stood (offset, the list's total then) before the first page whose check of a smaller `size` did not
 * follow it: see `WalkPosition.unsure` in card-walk-position.ts.
 */
export interface UnsureStart {
  readonly offset: number;
  readonly total?: number;
  readonly size: number;
}

/**
 * Where a card walk stopped (the `card:~walk-cursor:<mode>` snapshot's `next_offset`, `total_records`, `page_size`,
 * and `unsure`: `{ next_offset, total_records?, page_size }`): see `WalkCursorStore.read`.
 */
export interface WalkCursor {
  readonly offset: number;
  readonly total?: number;
  readonly servedSize?: number;
  readonly unsure?: UnsureStart;
}

/** A walk cursor as read, with the snapshot it was read from (none when no walk of the mode stored one). */
export interface StoredCursor extends WalkCursor {
  readonly snapshot?: Snapshot;
}

/** What the cursor store needs of the run it serves: its clock, and its store calls (held to its calls' deadline). */
export interface WalkCursorPorts {
  readonly clock: Pick<Clock, "now">;
  readSnapshots(step: string, keys: readonly SnapshotKey[]): Promise<Map<SnapshotKey, Snapshot>>;
  writeSnapshots(step: string, snapshots: readonly Snapshot[]): Promise<void>;
}

/** Reads and writes the walk cursor of one mode. */
export class WalkCursorStore {
  private readonly key: SnapshotKey;

  constructor(
    private readonly ports: WalkCursorPorts,
    mode: CardCycleMode,
  ) {
    this.key = walkCursorKey(mode);
  }

  /**
   * Where the last walk in this mode stopped: the offset of the first card it did not reach (0: start afresh), the
   * list's `total_records` at that point when the provider gave it, and the cards a page the provider served when
   * fewer than asked (its pages, and so the offset, were counted in that size), and the walk's `unsure` start when it
   * stopped with one.
   */
  async read(): Promise<StoredCursor> {
    const snapshot = (await this.ports.readSnapshots("read card walk cursor", [this.key])).get(this.key);
    return { ...parseCursor(snapshot?.object), snapshot };
  }

  /** Stores `next` in place of `stored` (as `read` gave it); no write when the two store alike. */
  async write(stored: StoredCursor, next: WalkCursor): Promise<void> {
    const object = cursorObject(next);
    if (contentHash(object) === contentHash(cursorObject(stored))) return;
    const updatedAt = versionTime(this.ports.clock.now(), stored.snapshot);
    const cursor: Snapshot = { key: this.key, hash: contentHash(object), object, updatedAt };
    await this.ports.writeSnapshots("write card walk cursor", [cursor]);
  }
}

/** A stored cursor member that is a count (an offset, a total, a size): a safe integer of at least `least`. */
function countAt(value: unknown, least: number): number | undefined {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= least ? value : undefined;
}

/** The stored form of a walk cursor (see {@link WalkCursor}): a cursor at 0 keeps nothing else. */
function cursorObject(cursor: WalkCursor): Record<string, unknown> {
  if (cursor.offset === 0) return { next_offset: 0 };
  const { total, servedSize, unsure } = cursor;
  return {
    next_offset: cursor.offset,
    ...(total === undefined ? {} : { total_records: total }),
    ...(servedSize === undefined ? {} : { page_size: servedSize }),
    ...(unsure === undefined ? {} : { unsure: { next_offset: unsure.offset, ...(unsure.total === undefined ? {} : { total_records: unsure.total }), page_size: unsure.size } }),
  };
}

/**
 * The walk cursor a stored object holds (see {@link cursorObject}); members missing or malformed are left out, so a
 * cursor stored before a member was added loads as one without it.
 */
function parseCursor(object: Readonly<Record<string, unknown>> | undefined): WalkCursor {
  const offset = countAt(object?.["next_offset"], 1) ?? 0;
  if (offset === 0) return { offset };
  const total = countAt(object?.["total_records"], 0);
  const servedSize = countAt(object?.["page_size"], 1);
  const stored = object?.["unsure"];
  const unsureOf = typeof stored === "object" && stored !== null ? (stored as Record<string, unknown>) : {};
  const unsureOffset = countAt(unsureOf["next_offset"], 0);
  const unsureSize = countAt(unsureOf["page_size"], 1);
  const unsureTotal = countAt(unsureOf["total_records"], 0);
  return {
    offset,
    ...(total === undefined ? {} : { total }),
    ...(servedSize === undefined ? {} : { servedSize }),
    ...(unsureOffset === undefined || unsureSize === undefined
      ? {}
      : { unsure: { offset: unsureOffset, size: unsureSize, ...(unsureTotal === undefined ? {} : { total: unsureTotal }) } }),
  };
}
