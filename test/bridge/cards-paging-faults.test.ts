/**
 * The card walk against a provider answering another page than the one asked for while saying more follow (a provider
 * ignoring `page`, or skipping one): the walk stops at that page, naming the fault, with its cursor there, instead of
 * walking page 1 again (its card details read anew each time) up to the page bound, or ending `complete` over cards it
 * never saw; once the provider pages, the next walks reach every card.
 */
import { describe, expect, it } from "vitest";
import { pollCards, type CardCycleMode } from "../../shared/bridge/cards.js";
import type { CardListQuery, ProviderPage } from "../../shared/bridge/provider.js";
import { makeRig, type TestRig } from "./fakes.js";
import { repeatingFirstPage, withoutHasNext } from "./page-shapes.js";

const CARDS = 250;

/** How a provider answers a card list query, given the list's true answer to a page. */
type Answer = (query: CardListQuery, list: (page: number) => Promise<ProviderPage>) => Promise<ProviderPage>;

/**
 * A rig whose `cards` cards (default {@link CARDS}) an earlier walk recorded, all suspended since, its card list
 * answering as `answer` tells (given the query and the list's true answer to a page); returns the list's true answer too.
 */
async function suspendedUnder(cardDetails: boolean, answer: Answer, cards = CARDS): Promise<{ rig: TestRig; list: TestRig["provider"]["listErpCards"] }> {
  const rig = makeRig({}, { cardDetails });
  for (let i = 0; i < cards; i++) rig.provider.addCard();
  expect((await pollCards(rig.deps)).outcome).toBe("complete");
  for (const card of rig.provider.cards) rig.provider.changeCard(card["id"] as string, { status: "Suspended" });
  const list = rig.provider.listErpCards.bind(rig.provider);
  // A walk that starts afresh on every page answered wrongly would list forever on resolved promises, starving the
  // test's timeout: failed here instead, far past any page bound below.
  let lists = 0;
  rig.provider.listErpCards = (query) => {
    if (++lists > 200) throw new Error("card list called past any page bound: the walk loops");
    return answer(query, (page) => list({ ...query, page }));
  };
  rig.provider.calls.length = 0;
  return { rig, list };
}

/** Runs walks of `mode` against the paging provider until one completes; checks every suspension was published once. */
async function expectEverySuspensionOnce(rig: TestRig, list: TestRig["provider"]["listErpCards"], mode: CardCycleMode, label: string): Promise<void> {
  rig.provider.listErpCards = list;
  let outcome;
  for (let cycle = 0; cycle < 5 && outcome !== "complete"; cycle++) outcome = (await pollCards(rig.deps, { mode })).outcome;
  expect(outcome, label).toBe("complete");
  const suspended = rig.publisher.ofType("card.suspended").map((e) => e.detail.subject.id);
  expect(suspended.toSorted(), label).toEqual(rig.provider.cards.map((c) => c["id"] as string).toSorted());
}

/**
 * Runs walks of either mode, card details on and off, whose list answers as `answerer` makes it (one per rig): the walk
 * stops at page 2 naming the fault as `logged` says, page 1's cards read once, and the next walks reach every card.
 */
async function expectStopsAtPage2(answerer: () => Answer, logged: Record<string, number>): Promise<void> {
  for (const mode of ["full", "suspended-only"] as const) {
    for (const cardDetails of [false, true]) {
      const label = `${mode}, details ${cardDetails}`;
      const { rig, list } = await suspendedUnder(cardDetails, answerer());
      const report = await pollCards(rig.deps, { mode, maxPages: 50 });
      expect(report.outcome, label).toBe("page_limit");
      // Page 1, then page 2 answered with page 1's cards: not the page bound's worth of list calls.
      expect(rig.provider.count("listErpCards"), label).toBe(2);
      expect(rig.provider.count("readErpCard"), label).toBe(cardDetails ? 100 : 0);
      expect(rig.logger.lines.filter((l) => l.message.includes("another page than asked")).map((l) => l.attributes), label).toContainEqual(
        expect.objectContaining({ list: `${mode} cards`, asked: 2, ...logged }),
      );
      await expectEverySuspensionOnce(rig, list, mode, label);
    }
  }
}

/**
 * Runs walks of either mode whose list of `cards` cards answers each page asked with the one after it, told as `tell`
 * makes it: the walk stops (page_limit) before publishing a card, not complete over the page it never saw; the next
 * walks reach every card.
 */
async function expectSkippedPageStops(tell: (answer: ProviderPage) => ProviderPage, cards = CARDS): Promise<void> {
  for (const mode of ["full", "suspended-only"] as const) {
    const label = mode;
    const { rig, list } = await suspendedUnder(false, async (query, page) => tell(await page(query.page + 1)), cards);
    const report = await pollCards(rig.deps, { mode });
    expect(report.outcome, label).toBe("page_limit");
    expect(rig.publisher.ofType("card.suspended"), label).toEqual([]);
    await expectEverySuspensionOnce(rig, list, mode, label);
  }
}

/** A rig of 700 cards whose last walk stopped at its page bound of 6 pages: the next walk resumes at page 7, the last. */
async function resumingAtPage7(): Promise<TestRig> {
  const rig = makeRig();
  for (let i = 0; i < 700; i++) rig.provider.addCard();
  expect((await pollCards(rig.deps)).outcome).toBe("complete");
  expect((await pollCards(rig.deps, { maxPages: 6 })).outcome).toBe("page_limit");
  return rig;
}

describe("card walk against a provider answering another page than asked while saying more follow", () => {
  it("stops at page 2 of a provider ignoring page, naming the fault, its detail reads one per card walked, and the next walks reach every card", async () => {
    await expectStopsAtPage2(() => (_query, page) => page(1), { answered: 1 });
  });

  it("does not end complete over a page the provider skipped, answering the one after it", async () => {
    await expectSkippedPageStops((answer) => answer);
  });

  it("does not end complete over a page the provider skipped, saying more follow by total_pages alone (no has_next)", async () => {
    await expectSkippedPageStops(withoutHasNext);
  });

  it("does not end complete over a page the provider skipped to answer the list's last page (no list that shrank answers a page past the one asked)", async () => {
    // Two full pages: page 1 asked, page 2 answered, the last; page 2 asked, page 3 answered, empty: page 1 never seen.
    await expectSkippedPageStops((answer) => answer, 200);
  });

  it("starts afresh, as for a 400 or 404, when a resumed walk's first page is answered with page 1: a cursor past a list that shrank", async () => {
    const rig = await resumingAtPage7();
    // 450 cards removed: the cursor (offset 600, page 7) is past the 3 pages left, which the provider answers with page 1.
    rig.provider.cards.splice(0, 450);
    for (const card of rig.provider.cards) rig.provider.changeCard(card["id"] as string, { status: "Suspended" });
    const list = rig.provider.listErpCards.bind(rig.provider);
    rig.provider.listErpCards = async (query) => {
      const answer = await list(query);
      return answer.data.length === 0 ? list({ ...query, page: 1 }) : answer;
    };
    let outcome;
    for (let cycle = 0; cycle < 3 && outcome !== "complete"; cycle++) outcome = (await pollCards(rig.deps)).outcome;
    expect(outcome).toBe("complete");
    const suspended = rig.publisher.ofType("card.suspended").map((e) => e.detail.subject.id);
    expect(suspended.toSorted()).toEqual(rig.provider.cards.map((c) => c["id"] as string).toSorted());
  });

  it("stops, not starting afresh, when a resumed walk's first page is answered with a page past it: no list that shrank answers so", async () => {
    const rig = await resumingAtPage7();
    // The cursor is at page 7 (offset 600), the list's last: answered with its cards, named page 8.
    const list = rig.provider.listErpCards.bind(rig.provider);
    rig.provider.listErpCards = async (query) => {
      const answer = await list(query);
      return query.page === 7 ? { ...answer, pagination: { ...answer.pagination!, page: 8 } } : answer;
    };
    rig.logger.lines.length = 0;
    rig.provider.calls.length = 0;
    expect((await pollCards(rig.deps)).outcome).toBe("page_limit");
    expect(rig.provider.count("listErpCards")).toBe(1);
    const warnings = rig.logger.lines.filter((l) => l.level === "warn");
    expect(warnings.map((l) => [l.message, l.attributes])).toEqual([[expect.stringContaining("another page than asked"), expect.objectContaining({ asked: 7, answered: 8 })]]);
  });

  it("stops at page 2 of a provider answering page 1's cards to every page, naming the page asked, and the next walks reach every card", async () => {
    await expectStopsAtPage2(repeatingFirstPage, { repeats: 1 });
  });
});

