/**
 * The card walk against a provider whose pages are not the size asked (spec §8.3 shows no maximum page size):
 * whatever it serves a page, a walk reaches every card listed, in one cycle or resumed over several.
 */
import { describe, expect, it } from "vitest";
import { pollCards, type CardCycleMode } from "../../shared/bridge/cards.js";
import type { CardListQuery, ProviderPage } from "../../shared/bridge/provider.js";
import { makeRig, type TestRig } from "./fakes.js";

/** Asked for by the walks below; the provider serves at most {@link CAP} a page. */
const ASKED = 4;
const CAP = 2;

/** How the provider below answers a list call, given the query and the list's own answer in at most CAP a page. */
type Shape = (query: CardListQuery, page: ProviderPage) => ProviderPage;

const shapes = {
  // page_size echoes the size asked, and total_pages / has_next are counted in it: only total_records is true.
  countedInSizeAsked: (query, page) => {
    const total = page.pagination?.total_records ?? 0;
    const pages = Math.ceil(total / query.page_size);
    return { ...page, pagination: { page: query.page, page_size: query.page_size, total_records: total, total_pages: pages, has_next: query.page < pages } };
  },
  // Optional in the provider port (QashioClient refuses such an answer).
  withoutPagination: (_query, { pagination: _dropped, ...page }) => page,
  // What it served, in page_size, total_pages and has_next alike.
  sayingSo: (_query, page) => page,
} satisfies Record<string, Shape>;

/** Makes the rig's card list serve at most CAP cards a page, its answer put in `shape`. */
function serveFewer(rig: TestRig, shape: Shape): void {
  const list = rig.provider.listErpCards.bind(rig.provider);
  rig.provider.listErpCards = async (query) => shape(query, await list({ ...query, page_size: Math.min(query.page_size, CAP) }));
}

/**
 * Runs walks of `mode` (at most `maxPages` list calls a cycle) until one completes, over `count` cards recorded by an
 * earlier walk and all suspended since, and checks every suspension was published, once.
 */
async function expectEveryCardWalked(shape: Shape, mode: CardCycleMode, count: number, maxPages: number): Promise<void> {
  const rig = makeRig();
  for (let i = 0; i < count; i++) rig.provider.addCard();
  expect((await pollCards(rig.deps)).outcome).toBe("complete");
  serveFewer(rig, shape);
  for (const card of rig.provider.cards) rig.provider.changeCard(card["id"] as string, { status: "Suspended" });
  const label = `${mode}, ${count} cards, maxPages ${maxPages}`;
  let outcome;
  for (let cycle = 0; cycle < 20 && outcome !== "complete"; cycle++) outcome = (await pollCards(rig.deps, { mode, pageSize: ASKED, maxPages })).outcome;
  expect(outcome, label).toBe("complete");
  const suspended = rig.publisher.ofType("card.suspended").map((e) => e.detail.subject.id);
  expect(suspended.toSorted(), label).toEqual(rig.provider.cards.map((c) => c["id"] as string).toSorted());
}

describe("card walk against a provider serving fewer cards a page than asked", () => {
  it("reaches every card when its answers carry no pagination block (optional in the provider port), in one walk or resumed", async () => {
    for (const mode of ["full", "suspended-only"] as const) {
      for (const count of [ASKED - 1, ASKED + CAP, 9]) {
        for (const maxPages of [100, 1, 2]) await expectEveryCardWalked(shapes.withoutPagination, mode, count, maxPages);
      }
    }
  });

  it("reaches every card in one walk when the provider counts its pagination in the size asked (has_next false with more listed)", async () => {
    for (const mode of ["full", "suspended-only"] as const) {
      for (const count of [ASKED - 1, ASKED + CAP, 9]) await expectEveryCardWalked(shapes.countedInSizeAsked, mode, count, 100);
    }
  });

  it("reaches every card over walks resumed in later cycles, which ask the size asked again, when the provider serves fewer and says so or shows it", async () => {
    for (const shape of [shapes.sayingSo, shapes.countedInSizeAsked]) {
      for (const mode of ["full", "suspended-only"] as const) {
        for (const count of [ASKED - 1, ASKED + CAP, 9]) {
          for (const maxPages of [1, 2]) await expectEveryCardWalked(shape, mode, count, maxPages);
        }
      }
    }
  });
});
