/**
 * The transaction cycle against a provider that misbehaves at paging: an answer naming another page than the one asked
 * for while saying more follow (a provider ignoring `page`, or skipping one). The walk re-reads page 1 as acknowledged
 * items leave it, so such a provider still drains what page 1 shows; past it, the walk stops at once, naming the fault,
 * instead of reading page 1 again up to the page bound, or reporting a list complete whose pages it never saw. And
 * one that keeps listing acknowledged items: the walk moves past them, and counts them when it weighs the list's end.
 */
import { describe, expect, it } from "vitest";
import { pollTransactions } from "../../shared/bridge/transactions.js";
import type { ProviderPage, TransactionListQuery } from "../../shared/bridge/provider.js";
import { makeRig, type TestRig } from "./fakes.js";
import { repeatingFirstPage, withoutHasNext } from "./page-shapes.js";

/** Listed under the 100 a page the cycle asks; the newest {@link KEPT} stay listed whatever is acknowledged. */
const LISTED = 250;
const KEPT = 150;

/**
 * A rig listing `listed` (default {@link LISTED}) new transactions, the newest `kept` of which the provider keeps listing
 * despite their acknowledge.
 */
function rigKeeping(kept: number, listed = LISTED): { rig: TestRig; keptIds: Set<string>; list: TestRig["provider"]["listTransactions"] } {
  const rig = makeRig();
  for (let i = 0; i < listed; i++) rig.provider.addTransaction();
  const keptIds = new Set(rig.provider.transactions.slice(0, kept).map((t) => t.id));
  const acknowledge = rig.provider.acknowledgeTransactions.bind(rig.provider);
  rig.provider.acknowledgeTransactions = (ids) => acknowledge(ids.filter((id) => !keptIds.has(id))).then(() => ({ acknowledged: ids.length }));
  return { rig, keptIds, list: rig.provider.listTransactions.bind(rig.provider) };
}

/** How a provider answers a list query, given the list's true answer to a page. */
type Answer = (query: TransactionListQuery, list: (page: number) => Promise<ProviderPage>) => Promise<ProviderPage>;

/** Answers every list call as `answer` tells. */
function answerAs(rig: TestRig, list: TestRig["provider"]["listTransactions"], answer: Answer): void {
  rig.provider.listTransactions = (query) => answer(query, (page) => list({ ...query, page }));
}

function acknowledgedIds(rig: TestRig): string[] {
  return rig.provider.calls.flatMap((c) => (c.op === "acknowledgeTransactions" ? c.ids : []));
}

/**
 * Runs a cycle over {@link LISTED} transactions, the newest {@link KEPT} staying listed, whose list answers as `answerer`
 * makes it (one per cycle run), with and without read-ahead: the pass stops past page 1 naming the fault as `logged`
 * says, at a few list calls and no acknowledge twice; the next cycle, the provider paging, delivers the rest.
 */
async function expectStopsPastPage1(answerer: () => Answer, logged: Record<string, number>): Promise<void> {
  for (const readAhead of [false, true]) {
    const { rig, keptIds, list } = rigKeeping(KEPT);
    answerAs(rig, list, answerer());
    const report = await pollTransactions(rig.deps, { readAhead });
    const label = `readAhead ${readAhead}`;
    expect(report.outcome, label).toBe("page_limit");
    // Page 1 read again until it holds nothing new, one page past it: not the 10,000 the page bound allows per list.
    expect(rig.provider.count("listTransactions"), label).toBeLessThanOrEqual(8);
    expect(rig.logger.lines.filter((l) => l.message.includes("another page than asked")).map((l) => l.attributes), label).toContainEqual(
      expect.objectContaining({ list: "not_synced", asked: 2, ...logged }),
    );
    // Each transaction acknowledged once at most: no storm of acknowledges of page 1 read again.
    expect(new Set(acknowledgedIds(rig)).size, label).toBe(acknowledgedIds(rig).length);

    rig.provider.listTransactions = list;
    expect((await pollTransactions(rig.deps, { readAhead })).outcome, label).toBe("complete");
    expect(new Set(rig.publisher.events.map((e) => e.detail.subject.id)).size, label).toBe(LISTED);
    expect(rig.publisher.events, label).toHaveLength(LISTED);
    expect(rig.provider.pending().map((t) => t.id).toSorted(), label).toEqual([...keptIds].toSorted());
  }
}

/**
 * Runs a cycle, with and without read-ahead, whose list of `listed` transactions answers each page asked with the one
 * after it, told as `tell` makes it: the pass stops (page_limit), not complete over the page it never saw; the next
 * cycle, the provider paging, delivers every transaction.
 */
async function expectSkippedPageStops(tell: (answer: ProviderPage) => ProviderPage, listed = LISTED): Promise<void> {
  for (const readAhead of [false, true]) {
    const { rig, list } = rigKeeping(0, listed);
    answerAs(rig, list, async (query, page) => tell(await page(query.page + 1)));
    const report = await pollTransactions(rig.deps, { readAhead });
    const label = `readAhead ${readAhead}`;
    expect(report.outcome === "complete" ? rig.provider.pending() : [], label).toEqual([]);
    expect(report.outcome, label).toBe("page_limit");

    rig.provider.listTransactions = list;
    expect((await pollTransactions(rig.deps, { readAhead })).outcome, label).toBe("complete");
    expect(rig.provider.pending(), label).toEqual([]);
    expect(rig.publisher.events, label).toHaveLength(listed);
  }
}

describe("transaction cycle against a provider answering another page than asked while saying more follow", () => {
  it("stops a walk that must go past page 1 of a provider ignoring page at once, naming the fault, and the next cycle delivers the rest once it pages", async () => {
    await expectStopsPastPage1(() => (_query, page) => page(1), { answered: 1 });
  });

  it("drains a provider ignoring page that never needs to go past page 1, dropping its read-ahead answers", async () => {
    for (const readAhead of [false, true]) {
      const { rig, list } = rigKeeping(0);
      answerAs(rig, list, (_query, page) => page(1));
      const report = await pollTransactions(rig.deps, { readAhead });
      const label = `readAhead ${readAhead}`;
      expect(report.outcome, label).toBe("complete");
      expect(rig.provider.pending(), label).toEqual([]);
      expect(rig.publisher.events, label).toHaveLength(LISTED);
      expect(new Set(acknowledgedIds(rig)).size, label).toBe(LISTED);
      expect(acknowledgedIds(rig), label).toHaveLength(LISTED);
    }
  });

  it("does not report complete a list whose page the provider skipped, answering the one after it", async () => {
    await expectSkippedPageStops((answer) => answer);
  });

  it("does not report complete a list whose page the provider skipped, saying more follow by total_pages alone (no has_next)", async () => {
    await expectSkippedPageStops(withoutHasNext);
  });

  it("does not report complete a list whose page the provider skipped to answer its last page (no list that shrank answers a page past the one asked)", async () => {
    // Two full pages: page 1 asked, page 2 answered, the last; once it is acknowledged, page 1 asked, page 2 answered, empty.
    await expectSkippedPageStops((answer) => answer, 200);
  });

  it("counts the transactions on a page answered in place of the one asked towards the lag as it stops there", async () => {
    const { rig, list } = rigKeeping(0);
    const answered: ProviderPage[] = [];
    answerAs(rig, list, async (query, page) => {
      const answer = await page(query.page + 1);
      if (query.client_sync_status === "not_synced") answered.push(answer);
      return answer;
    });
    rig.clock.ms = Math.max(...rig.provider.transactions.map((t) => Date.parse(t.updated_at))) + 3_600_000;
    const report = await pollTransactions(rig.deps, { readAhead: false });
    expect(report.outcome).toBe("page_limit");
    expect(rig.publisher.events).toEqual([]);
    // Left behind unprocessed: the oldest change on it is the oldest the cycle saw undelivered, not no lag at all.
    expect(answered).toHaveLength(1);
    const oldest = Math.min(...(answered[0]?.data ?? []).map((t) => Date.parse((t as { updated_at: string }).updated_at)));
    expect(report.syncLagSeconds).toBe(Math.round((rig.clock.ms - oldest) / 1000));
    expect(report.syncLagSeconds).toBeGreaterThan(3600);
  });

  it("stops a walk past page 1 of a provider answering page 1's transactions to every page, naming the page asked, and the next cycle delivers the rest", async () => {
    await expectStopsPastPage1(repeatingFirstPage, { repeats: 1 });
  });
});

describe("transaction walk past transactions the provider keeps listing after their acknowledge", () => {
  it("ends on a last page by the list's count, the kept ones above it counted, with no read past it", async () => {
    const { rig } = rigKeeping(100);
    const report = await pollTransactions(rig.deps, { readAhead: false });
    expect(report.outcome).toBe("complete");
    expect(rig.publisher.events).toHaveLength(LISTED);
    const pages = rig.provider.calls.flatMap((c) => (c.op === "listTransactions" && c.query.client_sync_status === "not_synced" ? [c.query.page] : []));
    // Page 1 (kept), again (nothing new: moved past, 100 above), page 2, again: its last 50 and the 100 above are
    // total_records (150), so the list ends there.
    expect(pages).toEqual([1, 1, 2, 2]);
  });
});
