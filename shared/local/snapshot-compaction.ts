/**
 * When the FileSnapshotStore compacts, and what a compaction batch copies: the sparsest segments once dead bytes
 * outweigh live ones and the floor, else a size tier of small segments once it holds too many. The store runs the
 * batches (in putMany and vacuum) and writes what they copy.
 */
import type { Segment, SnapshotIndex } from "./snapshot-index.js";
import { readSegmentHeader, segmentOrder, type HeaderEntry } from "./snapshot-segment.js";

/**
 * Compaction copies out of a segment only while less than half of it is live, so it copies fewer bytes than it frees;
 * each byte a putMany writes dies once, so compaction rewrites less than putMany writes (amortised, under one rewrite
 * per byte). While dead bytes outweigh live ones, some segment is under half live: a due compaction always has work,
 * and the store stays within about twice its live bytes plus the floor.
 */
const COMPACT_LIVE_RATIO = 0.5;
/** The floor: a few MB, so a small store is not rewritten (one fsync each time) to free a few kilobytes. */
const DEFAULT_COMPACT_MIN_DEAD_BYTES = 4 * 1024 * 1024;
/** About what a page of 100 snapshots already takes in the reusable write buffer, so compaction does not grow it. */
const DEFAULT_COMPACT_BATCH_BYTES = 1024 * 1024;
/**
 * Segments with fewer live bytes than this count as small: about a third of a full page of 100 transactions, so the
 * segments a backlog drain writes are never merged (no copying on the bridge's busiest path).
 */
const DEFAULT_MERGE_BELOW_BYTES = 128 * 1024;
/**
 * Small segments of one size tier tolerated before they are merged. Tiers are powers of it below the threshold
 * ([threshold/8, threshold), [threshold/64, threshold/8), ...): merging more than this many segments of a tier makes
 * one of a higher tier, so a byte is copied once per tier it climbs (three times for a page of a few hundred bytes),
 * never again with each new small segment.
 */
const DEFAULT_MERGE_FAN_IN = 8;

/** Tuning of a store's compaction (part of FileSnapshotStoreOptions); the defaults suit the bridge, tests shrink them. */
export interface CompactionTuning {
  /**
   * Dead (superseded) bytes tolerated whatever the live data; beyond it, compaction is due once dead bytes also
   * outweigh live ones.
   * @default 4 MiB
   */
  readonly compactMinDeadBytes?: number;
  /**
   * Live bytes one compaction batch copies, and so holds in memory, at most (a larger single entry goes alone).
   * A putMany runs batches until it has copied as many bytes as it wrote, or this many if it wrote less.
   * @default 1 MiB
   */
  readonly compactBatchBytes?: number;
  /**
   * Live bytes under which a segment counts as small (see {@link mergeFanIn}); at most half of `compactBatchBytes`.
   * @default 128 KiB
   */
  readonly mergeBelowBytes?: number;
  /**
   * Small segments of one size tier tolerated (see DEFAULT_MERGE_FAN_IN); one more and a putMany merges that tier's,
   * oldest first (a compaction batch at a time, within the same byte budget as compaction). Without it, a store written
   * a few snapshots at a time kept a file per write.
   * @default 8
   */
  readonly mergeFanIn?: number;
}

/** The compaction of one store's segments, over its index, with its tuning. */
export class Compaction {
  readonly compactBatchBytes: number;
  private readonly compactMinDeadBytes: number;
  private readonly mergeBelowBytes: number;
  private readonly mergeFanIn: number;

  constructor(
    private readonly index: SnapshotIndex,
    options: CompactionTuning,
  ) {
    this.compactMinDeadBytes = options.compactMinDeadBytes ?? DEFAULT_COMPACT_MIN_DEAD_BYTES;
    this.compactBatchBytes = options.compactBatchBytes ?? DEFAULT_COMPACT_BATCH_BYTES;
    // A merge fills a batch to over half its size before it stops, so at most half a batch counts as small: a merged
    // segment is then never small itself, unless it took every small one.
    this.mergeBelowBytes = Math.min(options.mergeBelowBytes ?? DEFAULT_MERGE_BELOW_BYTES, this.compactBatchBytes / 2);
    this.mergeFanIn = Math.max(2, options.mergeFanIn ?? DEFAULT_MERGE_FAN_IN);
  }

  /**
   * The segments a putMany's next compaction batch copies from: the sparsest while compaction is due, else a tier of
   * small segments to merge; none while neither is.
   */
  nextSources(): Segment[] {
    return this.compactionDue() ? this.sparseSegments(COMPACT_LIVE_RATIO) : this.segmentsToMerge();
  }

  /** Segments less than `liveRatio` live, sparsest first: what compaction copies from. */
  sparseSegments(liveRatio: number): Segment[] {
    return [...this.index.all()]
      .filter((s) => s.liveBytes < s.bodyBytes * liveRatio)
      .sort((a, b) => a.liveBytes / a.bodyBytes - b.liveBytes / b.bodyBytes);
  }

  /**
   * The small segments of the tiniest size tier holding more than `mergeFanIn`, oldest first; none while no tier does.
   * Tier t holds live sizes in [threshold / fanIn^(t+1), threshold / fanIn^t).
   */
  private segmentsToMerge(): Segment[] {
    const tiers = new Map<number, Segment[]>();
    for (const segment of this.index.all()) {
      if (segment.liveBytes >= this.mergeBelowBytes) continue;
      const tier = this.tierOf(segment.liveBytes);
      const members = tiers.get(tier);
      if (members) members.push(segment);
      else tiers.set(tier, [segment]);
    }
    let dueTier = -1;
    for (const [tier, members] of tiers) if (members.length > this.mergeFanIn && tier > dueTier) dueTier = tier;
    return dueTier < 0 ? [] : (tiers.get(dueTier) as Segment[]).sort(segmentOrder);
  }

  /**
   * The size tier of a small segment of `liveBytes` live. Bounds divided down, not a logarithm: the quotient of two
   * logarithms put a segment exactly on a tier's lower bound (threshold / fanIn, say) in the tier below.
   */
  private tierOf(liveBytes: number): number {
    let tier = 0;
    for (let bound = this.mergeBelowBytes / this.mergeFanIn; liveBytes < bound; bound /= this.mergeFanIn) tier += 1;
    return tier;
  }

  /** Whether dead bytes outweigh live ones and the floor (see COMPACT_LIVE_RATIO): a comparison, free while not due. */
  private compactionDue(): boolean {
    const dead = this.index.dead;
    return dead > this.index.live && dead > this.compactMinDeadBytes;
  }

  /**
   * The live entries of segments `from`, in that order, one batch at most (a larger single entry goes alone), with
   * their offsets in their segment files; and the bytes they take, newlines included.
   */
  pick(from: readonly Segment[]): { picked: { segment: Segment; live: HeaderEntry[] }[]; bytes: number } {
    const picked: { segment: Segment; live: HeaderEntry[] }[] = [];
    let bytes = 0;
    let full = false;
    for (const segment of from) {
      const live: HeaderEntry[] = [];
      const header = readSegmentHeader(this.index.fileOf(segment));
      for (const [key, offset, length] of header.entries) {
        const at = this.index.liveAt(segment, header, key, offset);
        if (at === undefined) continue;
        if (bytes > 0 && bytes + length + 1 > this.compactBatchBytes) {
          full = true;
          break;
        }
        live.push([key, at.offset, length]);
        bytes += length + 1;
      }
      if (live.length > 0) picked.push({ segment, live });
      if (full) break;
    }
    return { picked, bytes };
  }
}
