/**
 * Where a card walk stands in a list that shifts under it: the offset of the first card not reached, the list's total
 * it was taken at, where the walk stood before a page whose check of a smaller size did not follow it, and the page it
 * last read. Used by the card cycle (see cards.ts), which builds one per walk from its cursor.
 */
import { endsList, listedTotal, type ProviderPage, type WalkedPage } from "./provider.js";
import type { CardCycleMode, UnsureStart, WalkCursor } from "./card-cursor.js";

/** Where a card walk stood before a page: the offset of the first card not reached, and the list's total then. */
export type WalkStart = Pick<UnsureStart, "offset" | "total">;

/** Where a card walk stands between its pages (see `CardRun.walkPages` in cards.ts). */
export class WalkPosition {
  /** The first card not reached. */
  offset: number;
  /**
   * The list's size when the offset was taken: the list is newest first, so cards issued since sit above the offset
   * and push the first card not reached down by as many (cards removed pull it up). Applied at every page, as each
   * tells the new total: between two cycles and between two pages of one walk alike. Full walks only: the suspended
   * list also gains and loses cards below the offset (suspensions, reactivations), so its total says nothing about
   * where the first card not reached went.
   */
  total: number | undefined;
  /**
   * Where the walk stood (offset, total) before the first page whose check of a smaller size it stated did not follow
   * it (see `CardRun.renumberedIn` in cards.ts: it could not tell, or answered other cards, as a shift between the two
   * calls makes it), and that size; cleared once a page holds more cards than it (no maximum lowered to it), or a check
   * follows a size.
   * Should the provider have lowered its maximum there, the offset counted since in the size asked ran ahead of the
   * cards walked: a check that then follows the size moves the walk from here, not from that offset. A walk that
   * stops between the two keeps it in its cursor, and the next one goes on from the cursor's offset and moves from
   * here once a check follows: not resumed from, as a page whose check never follows would hold a walk of one page a
   * cycle there for good.
   */
  unsure: UnsureStart | undefined;
  /** The page the walk last read as asked: a provider answering its cards again for the next one repeats it. */
  walked: WalkedPage | undefined;

  /** Resumes a walk of `mode` where `cursor` says an earlier one stopped (offset 0: from the first card). */
  constructor(
    cursor: WalkCursor,
    private readonly mode: CardCycleMode,
  ) {
    // The offset survives a change of page size.
    this.offset = cursor.offset;
    this.total = cursor.offset > 0 ? cursor.total : undefined;
    this.unsure = cursor.unsure;
    this.walked = undefined;
  }

  /** Starts the walk afresh at the list's first card. */
  restart(): void {
    this.offset = 0;
    this.total = undefined;
    this.unsure = undefined;
  }

  /**
   * Records, unless it already holds one, where the walk stood before a page (`result`) whose check of a smaller `size`
   * did not follow it (see {@link unsure}).
   */
  doubt(size: number, result: ProviderPage): void {
    // With no total yet (a walk resumed from a cursor without one, or started afresh), the page's own stands in for the
    // list's at the offset, as it does for the offset after the page: left without one, a check that follows later
    // could not move the walk up for cards removed above in between, and the cards they pulled past it were skipped.
    this.unsure ??= { offset: this.offset, total: this.total ?? listedTotal(result), size };
  }

  /**
   * Takes where the walk stood before a page of `count` cards, as far as it can tell: once a check follows a size
   * (`followed`), before the first page whose check did not (see {@link unsure}), as the offset counted since may
   * have run ahead of the cards walked. Clears `unsure` once a check follows or a page holds more cards than its
   * size.
   */
  takePageStart(followed: number | undefined, count: number): WalkStart {
    const from = followed !== undefined && this.unsure !== undefined ? this.unsure : { offset: this.offset, total: this.total };
    if (followed !== undefined || count > (this.unsure?.size ?? Infinity)) this.unsure = undefined;
    return from;
  }

  /** Puts the walk back where it stood before a page it could not walk (`from`, see {@link takePageStart}). */
  backTo(from: WalkStart): void {
    this.offset = from.offset;
    this.total = from.total;
  }

  /**
   * Moves the walk past a page walked (`result`, asked as `page` in pages of `pageSize`, holding `count` cards; `from`,
   * where the walk stood before it): true when the list ends there.
   */
  advance(result: ProviderPage, page: number, pageSize: number, from: WalkStart, count: number): boolean {
    const pageStart = (page - 1) * pageSize;
    const { offset: reached, total: takenAt } = from;
    this.offset = page * pageSize;
    this.total = listedTotal(result);
    if (this.mode === "full" && takenAt !== undefined && this.total !== undefined) {
      // Where the first card not reached sits now: never past it (cards issued since are above it, and a removal
      // moves it up by at most one), so no card is skipped; cards between are ones walked before.
      const resumeAt = Math.max(0, reached + this.total - takenAt);
      if (resumeAt < pageStart) {
        // Cards removed since pulled it onto an earlier page: read on from there (cards met twice are skipped).
        this.offset = resumeAt;
        return false;
      }
      this.offset = Math.max(this.offset, resumeAt);
    }
    return endsList(result, count, pageStart);
  }
}
