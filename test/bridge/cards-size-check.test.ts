/**
 * The card walk's check of a smaller page size a page states (see `CardRun.renumberedIn`) against a provider that
 * numbers its pages in a size of its own whatever is asked: asked again in the stated size, the page answers its
 * first cards, but fewer or more of them than the page held. Not the same cards, so the walk keeps the size it pages
 * in. Taken for the same, a resumed walk would follow the stated size and ask the page holding its offset in it: page 5
 * of STATED for offset 12, which this provider answers with its own page 5, and the walk ends complete with page 4's
 * suspensions never published.
 */
import { describe, expect, it } from "vitest";
import { pollCards } from "../../shared/bridge/cards.js";
import type { ProviderPage } from "../../shared/bridge/provider.js";
import { makeRig } from "./fakes.js";
import { statedSizeShapes } from "./page-shapes.js";

/** The size the provider numbers its pages in and serves; the walk asks twice as many. */
const NUMBERED = 6;
/** The size page 3 states, holding that many of its cards. */
const STATED = 3;
const CARDS = 5 * NUMBERED;

/** The check's answer, from page 3 whole (NUMBERED cards). */
const checks: Record<string, (whole: ProviderPage) => ProviderPage> = {
  "fewer rows (a prefix of the page)": (whole) => ({ ...whole, data: whole.data.slice(0, STATED - 1) }),
  "more rows (the page's, then the cards it left out)": (whole) => whole,
};

describe("card walk's check of a smaller page size stated, answered with the page's first cards but not as many", () => {
  it("keeps the size the provider pages in, and a resumed walk reaches the page after the one checked", async () => {
    for (const [name, check] of Object.entries(checks)) {
      const rig = makeRig();
      for (let i = 0; i < CARDS; i++) rig.provider.addCard();
      expect((await pollCards(rig.deps)).outcome, name).toBe("complete");
      for (const card of rig.provider.cards) rig.provider.changeCard(card["id"] as string, { status: "Suspended" });
      const list = rig.provider.listErpCards.bind(rig.provider);
      rig.provider.listErpCards = (query) => list({ ...query, page_size: NUMBERED });
      // Two pages of NUMBERED: the walk learns the size, and its cursor stands at page 3.
      expect((await pollCards(rig.deps, { pageSize: 2 * NUMBERED, maxPages: 2 })).outcome, name).toBe("page_limit");
      const asked: [number, number][] = [];
      rig.provider.listErpCards = async (query) => {
        asked.push([query.page, query.page_size]);
        const whole = await list({ ...query, page_size: NUMBERED });
        if (query.page !== 3) return whole;
        if (query.page_size === STATED) return check(whole);
        // Page 3 holds its first STATED cards and says that size, with more listed.
        return statedSizeShapes.withoutTotalPages(query, { data: whole.data.slice(0, STATED), pagination: { ...whole.pagination, page_size: STATED } });
      };
      rig.publisher.events.length = 0;
      expect((await pollCards(rig.deps, { pageSize: 2 * NUMBERED })).outcome, name).toBe("complete");
      // Page 3 and its check, then the pages after it in the size the provider numbers them in.
      expect(asked, name).toEqual([
        [3, NUMBERED],
        [3, STATED],
        [4, NUMBERED],
        [5, NUMBERED],
      ]);
      expect(rig.logger.lines.filter((l) => l.message.includes("serves fewer cards a page again")), name).toEqual([]);
      // Every card from page 3 on the provider listed, page 4's included; page 3's last cards it left out.
      const listed = rig.provider.cards.map((card) => card["id"] as string);
      const reached = [...listed.slice(2 * NUMBERED, 2 * NUMBERED + STATED), ...listed.slice(3 * NUMBERED)];
      expect(rig.publisher.ofType("card.suspended").map((e) => e.detail.subject.id).toSorted(), name).toEqual(reached.toSorted());
    }
  });
});
