/**
 * Totals of transactions kept by key and UTC day of their `transaction_time`, as transactions come, change and go: a
 * window's figure sums its days instead of walking the store's transactions. Amounts are whole cents, so adding and
 * taking back stays exact. The spend ledger (per card) and the company's net spend (summary) both keep theirs here.
 */

const DAY_MS = 86_400_000;

/** What transactions on one key and day add up to: an amount in cents and how many count. */
export interface DayUse {
  cents: number;
  count: number;
}

/** What one transaction adds to its key's day, kept so that a change or a recount takes exactly that back. */
interface Entry extends DayUse {
  readonly key: string;
  readonly day: number;
}

export class DayTotals {
  private readonly byKey = new Map<string, Map<number, DayUse>>();
  private readonly entries = new Map<string, Entry>();

  /**
   * Counts `use` for transaction `id` on `key`'s day of `timeIso`, in place of what it counted before; a time that
   * reads as no date counts nothing.
   */
  set(id: string, key: string, timeIso: string, use: DayUse): void {
    this.remove(id);
    const day = Math.floor(Date.parse(timeIso) / DAY_MS);
    if (!Number.isFinite(day)) return;
    const entry: Entry = { key, day, cents: use.cents, count: use.count };
    this.entries.set(id, entry);
    this.move(entry, 1);
  }

  /** Takes back what transaction `id` counted. */
  remove(id: string): void {
    const entry = this.entries.get(id);
    if (entry === undefined) return;
    this.entries.delete(id);
    this.move(entry, -1);
  }

  /** Lets go of transaction `id`: what it counted stays counted, and can no longer be taken back. */
  keep(id: string): void {
    this.entries.delete(id);
  }

  /** What `key` counted on the days from `startMs` (-Infinity: from the first) to before `endMs`. */
  sum(key: string, startMs: number, endMs = Infinity): DayUse {
    let cents = 0;
    let count = 0;
    for (const [day, use] of this.byKey.get(key) ?? []) {
      if (day * DAY_MS < startMs || day * DAY_MS >= endMs) continue;
      cents += use.cents;
      count += use.count;
    }
    return { cents, count };
  }

  private move(entry: Entry, sign: 1 | -1): void {
    let days = this.byKey.get(entry.key);
    if (days === undefined) this.byKey.set(entry.key, (days = new Map()));
    const use = days.get(entry.day) ?? { cents: 0, count: 0 };
    use.cents += sign * entry.cents;
    use.count += sign * entry.count;
    if (use.count === 0 && use.cents === 0) days.delete(entry.day);
    else days.set(entry.day, use);
  }
}
