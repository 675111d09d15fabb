/**
 * The page size a provider numbers its list pages in, as one walk's answers show it (spec §8.3 shows no maximum
 * `page_size`, and a provider may serve fewer or more than asked, saying so or not). The card walk and the transaction
 * cycle (the look at the list's end, a re-drive's reads by qashio_id) weigh their answers with it.
 */
import { countsPagesIn, servedPageSize, type ProviderPage } from "./provider.js";

/** How a {@link ServedPageSize} reads its answers. */
export interface ServedPageSizeOptions {
  /**
   * A page short of the size served that is not the last, its `page_size` not counting the list in a smaller size,
   * lowers the size to what it holds once, whatever fuller pages came before (a maximum lowered under the walk, not
   * said); later such pages left items out. The card walk's rule: it asks the size it learned from then on, so a page
   * a card was left out of costs a re-read of cards walked at most, and a lowering not followed skipped suspensions.
   * Without it such a page never lowers a size a fuller page showed (the transaction cycle's rule: its look at the
   * list's end and a re-drive's reads number their pages in that size without asking it, and a lowering taken there
   * from an item left out aimed the look past the end or skipped the page holding the record's row).
   */
  readonly lowersOnce?: boolean;
  /** The size a walk resumed from an earlier cycle was served, asked again (counts as the lowering taken). */
  readonly known?: number;
}

/**
 * What the answers to list calls asking one size showed of the size served. A page holding some items shows the
 * provider serves at least as many a page; one short of the size asked shows it serves no more only when the list goes
 * on past it (as the caller reads the answer: its `has_next` or count, see `listsMore`) or its `page_size` says so. A
 * page short for another reason (an item the provider left out, which nothing in §8 rules out) therefore never lowers
 * a size a fuller page showed, unless {@link ServedPageSizeOptions.lowersOnce} and no lowering was taken yet: taken for
 * the size served every time, each such page shrank it, numbering the pages after it in fewer items than they hold, so
 * a walk counting in it skipped or met again a page (the card walk ended `complete` with cards never walked, the look
 * at the transaction list's end read past it, a re-drive skipped the page holding the record's row). A `page_size`
 * whose `total_pages` counts the list in it always sets the size: a maximum lowered under a walk that says so.
 */
export class ServedPageSize {
  private readonly lowersOnce: boolean;
  /** The size asked the answers weighed were asked at; answers at another size asked are no evidence for it. */
  private asked: number | undefined;
  /** The most items a page held or its `page_size` said it served (or the size a `total_pages` counted the list in). */
  private most = 0;
  /** A page short of the size asked showed the provider serves no more than {@link most}. */
  private short = false;

  constructor({ lowersOnce = false, known }: ServedPageSizeOptions = {}) {
    this.lowersOnce = lowersOnce;
    if (known !== undefined) this.asked = this.most = known;
    this.short = known !== undefined;
  }

  /**
   * The items a page holds when `asked` is asked: the size served the answers at that size showed (or at the size
   * served, asked since), else `asked`. A new size asked (a `page_size` the provider refused, halved) starts over.
   */
  in(asked: number): number {
    return this.startsOver(asked) ? asked : this.served(asked);
  }

  /**
   * Weighs an answer holding `held` items (rejected ones included) to a list call asking `asked`; `goesOn`: the walk
   * reads it as not the last page. Returns {@link in} after it.
   */
  weigh(answer: ProviderPage, held: number, asked: number, goesOn: boolean): number {
    if (this.startsOver(asked)) {
      this.most = 0;
      this.short = false;
    }
    this.asked = asked;
    const stated = servedPageSize(answer, asked);
    const showsFewer = stated !== undefined || (held > 0 && held < asked && goesOn);
    if (stated !== undefined && countsPagesIn(answer, stated)) {
      this.most = stated;
      this.short = true;
    } else if (this.lowersOnce && showsFewer && !this.short) {
      this.most = Math.max(held, stated ?? 0);
      this.short = true;
    } else {
      this.most = Math.max(this.most, held, stated ?? 0);
      this.short ||= showsFewer;
    }
    return this.served(asked);
  }

  /** True when no answer was weighed at `asked`, nor at a size whose answers showed `asked` served. */
  private startsOver(asked: number): boolean {
    return this.asked === undefined || (asked !== this.asked && asked !== this.served(this.asked));
  }

  private served(asked: number): number {
    return this.short || this.most >= asked ? this.most : asked;
  }
}
