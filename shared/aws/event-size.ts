/**
 * Size of a PutEvents entry as EventBridge counts it, and the reduction of an oversized event.
 *
 * Size rules (AWS "Calculating PutEvents event entry size"): `Time` counts 14 bytes when set; `Source`, `DetailType`,
 * `Detail` and each `Resources` entry count their UTF-8 bytes. A request's entries together must be less than 256 KB.
 *
 * Reduction rules for an event whose entry exceeds the limit (never dropped silently):
 * 1. Arrays inside `detail.data` (the object, each change's `before`/`after`), largest first, keep the
 *    longest prefix that makes the entry fit (possibly none), each trim recorded in `detail.data.object._truncated`
 *    as `{ path, total, kept }` with `path` a JSON Pointer into `detail`. (The marker lives in the object because the
 *    engine emits only the declared members of `detail` and `data`; the provider object is open.) An array no prefix
 *    of which fits is left whole when its trim's record would take more bytes than the elements cut (a short array):
 *    cut, it would leave the arrays after it, and the changes, less room.
 * 2. If it still does not fit, the `detail.data.changes` list itself is trimmed the same way, down to its first
 *    change (the event schemas require at least one); trims recorded for the changes dropped are dropped with them.
 *    The `/status` change, when there is one, is moved first in a reduced event, so it is the change kept: a card
 *    status event promises it (docs/events.md).
 * 3. If it still does not fit (e.g. one huge string), the event is returned as failed with reason `oversized` so the
 *    engine quarantines it.
 * Consumers seeing `_truncated` re-read the full object from the provider: a transaction by `subject.qashio_id`, a card by
 * `subject.id`.
 */
import type { BridgeEventDetail } from "../bridge/ports.js";
import { escapePointerToken } from "../bridge/diff.js";
import { TRUNCATION_MARKER } from "../bridge/events/truncation-marker.js";

/** EventBridge's per-request (and so per-entry) limit: "less than 256 KB", so one byte under it. */
export const MAX_ENTRY_BYTES = 256 * 1024 - 1;
/** Bytes EventBridge counts for a set `Time`. */
const TIME_BYTES = 14;

/** The fields of a PutEvents entry that count towards its size. */
export interface SizedEntry {
  readonly Source?: string;
  readonly DetailType?: string;
  readonly Detail?: string;
  readonly Time?: Date;
  readonly Resources?: readonly string[];
}

/**
 * Bytes EventBridge counts for one PutEvents entry.
 *
 * @example
 * entrySize({ Source: "qashio.bridge", DetailType: "card.suspended", Detail: "{}", Time: new Date() }); // 42
 */
export function entrySize(entry: SizedEntry): number {
  let size = entry.Time !== undefined ? TIME_BYTES : 0;
  size += Buffer.byteLength(entry.Source ?? "");
  size += Buffer.byteLength(entry.DetailType ?? "");
  if (entry.Detail !== undefined) size += Buffer.byteLength(entry.Detail);
  for (const resource of entry.Resources ?? []) size += Buffer.byteLength(resource);
  return size;
}

/** One array cut to fit: where (JSON Pointer into `detail`), how long it was, how many elements were kept. */
export interface Truncation {
  readonly path: string;
  readonly total: number;
  readonly kept: number;
}

/** Key of the reduction marker inside `detail.data.object` (the engine's name for it). */
export { TRUNCATION_MARKER };

/** A detail as sent, possibly reduced (then `data.object._truncated` lists the trims). */
export type ReducedDetail = BridgeEventDetail;

/** The trims recorded in a reduced detail (empty when it was sent whole). */
export function truncationsOf(detail: BridgeEventDetail): readonly Truncation[] {
  const marker = detail.data.object[TRUNCATION_MARKER];
  return Array.isArray(marker) ? (marker as Truncation[]) : [];
}

/** Changes a trimmed `changes` list keeps at least: the event schemas require `minItems: 1`. */
const MIN_CHANGES_KEPT = 1;

interface ArrayRef {
  readonly path: string;
  readonly holder: Record<string, unknown> | unknown[];
  readonly key: string | number;
  readonly array: unknown[];
  readonly bytes: number;
  /** Fewest elements the event's schema allows. @default 0 */
  readonly minKept?: number;
}

/** UTF-8 bytes of `value`'s JSON text. */
const jsonBytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value));

/** Every array under `value` (not descending into arrays already collected), with where it lives. */
function collectArrays(value: unknown, path: string, out: ArrayRef[], holder: ArrayRef["holder"], key: string | number): void {
  if (Array.isArray(value)) {
    if (value.length > 0) {
      out.push({ path, holder, key, array: value, bytes: jsonBytes(value) });
    }
    // Nested arrays inside elements are trimmed along with their element; do not collect them separately.
    return;
  }
  if (typeof value === "object" && value !== null) {
    for (const [childKey, child] of Object.entries(value)) {
      collectArrays(child, `${path}/${escapePointerToken(childKey)}`, out, value as Record<string, unknown>, childKey);
    }
  }
}

/** True for a trim recorded inside an element of the array at `path` that is no longer kept (it went with it). */
function insideDropped(truncation: Truncation, path: string, kept: number): boolean {
  if (!truncation.path.startsWith(`${path}/`)) return false;
  const index = Number(truncation.path.slice(path.length + 1).split("/")[0]);
  return Number.isInteger(index) && index >= kept;
}

/**
 * Returns a copy of `detail` whose entry (built by `toEntry`) fits `limit` bytes, by the rules above, or `undefined`
 * when no trimming of arrays makes it fit.
 *
 * The entry is measured whole once before and once after; each trial in between is sized from the bytes it changes
 * (the array's prefix kept, the marker's trims), as re-serialising the whole entry per trial made an event of thousands
 * of small arrays take minutes. Should the result not measure as sized (a `toEntry` not writing compact JSON), the trials
 * are made again, each measured whole.
 */
export function reduceDetail(
  detail: BridgeEventDetail,
  toEntry: (detail: ReducedDetail) => SizedEntry,
  limit: number = MAX_ENTRY_BYTES,
): ReducedDetail | undefined {
  const whole = copyOf(detail);
  const wholeBytes = entrySize(toEntry(whole));
  if (wholeBytes <= limit) return whole;
  const sized = trimToFit(whole, wholeBytes, toEntry, limit, false);
  if (sized === undefined || entrySize(toEntry(sized)) <= limit) return sized;
  return trimToFit(copyOf(detail), wholeBytes, toEntry, limit, true);
}

// A copy through JSON, not structuredClone: the engine's changes hold the object's own members (the diff's `after`
// values), and a clone keeping those shared would cut an array at two places while the trim records one of them.
const copyOf = (detail: BridgeEventDetail) => JSON.parse(JSON.stringify(detail)) as BridgeEventDetail & { data: Record<string, unknown> };

/**
 * The trims of {@link reduceDetail}, made on `copy` (a copy of the detail, its entry `wholeBytes`): each trial sized from
 * the bytes it changes, or with `measure` by building and measuring the whole entry.
 */
function trimToFit(
  copy: ReturnType<typeof copyOf>,
  wholeBytes: number,
  toEntry: (detail: ReducedDetail) => SizedEntry,
  limit: number,
  measure: boolean,
): ReducedDetail | undefined {
  const truncations: Truncation[] = [];
  const withMarker = (): ReducedDetail =>
    truncations.length > 0
      ? { ...copy, data: { ...copy.data, object: { ...(copy.data.object as Record<string, unknown>), [TRUNCATION_MARKER]: [...truncations] } } }
      : copy;

  const inner: ArrayRef[] = [];
  const data = copy.data;
  const object = data.object as Record<string, unknown>;
  // Not the object's own member of the marker's name (a provider field so named): the marker takes its place at the
  // first trim, so a cut of it would be a trim of a value no event shows (and the sizing below counts it replaced whole).
  for (const [key, value] of Object.entries(object)) {
    if (key !== TRUNCATION_MARKER) collectArrays(value, `/data/object/${escapePointerToken(key)}`, inner, object, key);
  }
  const changes = Array.isArray(data.changes) ? (data.changes as Record<string, unknown>[]) : [];
  // Before the paths into the changes are taken: a trimmed list keeps a prefix.
  const status = changes.findIndex((change) => change.path === "/status");
  if (status > 0) changes.unshift(...changes.splice(status, 1));
  changes.forEach((change, index) => {
    collectArrays(change.before, `/data/changes/${index}/before`, inner, change, "before");
    collectArrays(change.after, `/data/changes/${index}/after`, inner, change, "after");
  });
  inner.sort((a, b) => b.bytes - a.bytes);
  const candidates: ArrayRef[] = [...inner];
  if (changes.length > 0) {
    candidates.push({ path: "/data/changes", holder: data, key: "changes", array: changes, bytes: 0, minKept: MIN_CHANGES_KEPT });
  }

  // Bytes of the entry without the marker, and of each trim's text in it: kept up to date as arrays are cut
  // (reordering the changes moves no byte).
  let unmarked = wholeBytes;
  const trimBytes = new Map<Truncation, number>();
  let listed = 0;
  // Bytes the marker adds to the object's text, its `count` trims taking `trims` bytes with a comma each:
  // `,"_truncated":[...]` at its end, or the list in place of the value of an own member of that name.
  const ownMarker = Object.hasOwn(object, TRUNCATION_MARKER);
  const markerKey = (Object.keys(object).length > 0 ? 1 : 0) + jsonBytes(TRUNCATION_MARKER) + 1;
  const markerBytes = (count: number, trims: number): number => {
    if (count === 0) return 0;
    return 1 + trims + (ownMarker ? -jsonBytes(object[TRUNCATION_MARKER]) : markerKey);
  };

  // Paths holding another candidate (the change list, around the arrays in its changes): only their cuts drop trims.
  const holdsOthers = new Set(candidates.flatMap((ref) => ref.path.split("/").slice(1, -1).map((_, i, parts) => `/${parts.slice(0, i + 1).join("/")}`)));

  for (const ref of candidates) {
    const total = ref.array.length;
    const minKept = ref.minKept ?? 0;
    // Trims recorded inside this array (inside a change, when the list itself is cut): a cut may drop them.
    const under = `${ref.path}/`;
    const within = holdsOthers.has(ref.path) ? truncations.filter((t) => t.path === ref.path || t.path.startsWith(under)) : [];
    const dropped = (kept: number) => within.filter((t) => t.path === ref.path || insideDropped(t, ref.path, kept));
    // Bytes of the array's text keeping its first `kept` elements: brackets, elements, commas between them.
    const prefix = [0];
    for (const element of ref.array) prefix.push((prefix.at(-1) as number) + jsonBytes(element));
    const arrayBytes = (kept: number): number => 2 + (prefix[kept] as number) + Math.max(0, kept - 1);
    const shownCount = truncations.length;
    const shownBytes = listed;
    // Copied only when this array holds trims a cut may drop: copying every time made thousands of arrays quadratic.
    const shown = within.length > 0 ? [...truncations] : undefined;
    // Bytes of the list once this array keeps a prefix: the trims shown before it, less those the cut drops, plus its own.
    const listedWith = (gone: Iterable<Truncation>, own: number): number => [...gone].reduce((sum, t) => sum - (trimBytes.get(t) as number), shownBytes) + own;
    const setKept = (kept: number): void => {
      (ref.holder as Record<string | number, unknown>)[ref.key] = ref.array.slice(0, kept);
      const gone = new Set(dropped(kept));
      const trim = { path: ref.path, total, kept };
      trimBytes.set(trim, jsonBytes(trim) + 1);
      listed = listedWith(gone, trimBytes.get(trim) as number);
      // The trims shown before this array, less those the cut drops (a trial's own trim, pushed last, goes too).
      if (shown === undefined) truncations.length = shownCount;
      else truncations.splice(0, truncations.length, ...shown.filter((t) => !gone.has(t)));
      truncations.push(trim);
    };
    // Bytes of the entry keeping the first `kept` elements: with `measure` the cut is made and the entry measured whole.
    const sizeKeeping = (kept: number): number => {
      if (measure) {
        setKept(kept);
        return entrySize(toEntry(withMarker()));
      }
      const gone = dropped(kept);
      const trims = listedWith(gone, jsonBytes({ path: ref.path, total, kept }) + 1);
      return unmarked - arrayBytes(total) + arrayBytes(kept) + markerBytes(shownCount - gone.length + 1, trims);
    };
    // Undoes a trial's cut (with `measure`, trials cut): the array whole, the trims shown before it.
    const leaveWhole = (): void => {
      (ref.holder as Record<string | number, unknown>)[ref.key] = ref.array;
      if (shown === undefined) truncations.length = shownCount;
      else truncations.splice(0, truncations.length, ...shown);
      listed = shownBytes;
    };
    // Largest prefix that fits: binary search on the kept count.
    let low = minKept;
    let high = total - 1;
    let best = -1;
    while (low <= high) {
      const mid = Math.floor((low + high) / 2);
      if (sizeKeeping(mid) <= limit) {
        best = mid;
        low = mid + 1;
      } else {
        high = mid - 1;
      }
    }
    if (best < 0) {
      // No prefix fits: cut to the least all the same, making room for the arrays after it, unless its trim's record
      // takes more bytes than the elements cut (a short array), which would leave them less.
      const cutBytes = sizeKeeping(minKept);
      leaveWhole();
      if (cutBytes >= (measure ? entrySize(toEntry(withMarker())) : unmarked + markerBytes(shownCount, shownBytes))) continue;
    }
    const kept = best >= 0 ? best : minKept;
    unmarked += arrayBytes(kept) - arrayBytes(total);
    setKept(kept);
    if (best >= 0) return withMarker();
  }
  return undefined;
}
