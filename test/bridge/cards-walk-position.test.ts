/**
 * Where a card walk stands in a list that shifts under it: a provider serving fewer cards a page than asked.
 */
import { describe, expect, it } from "vitest";
import { pollCards } from "../../shared/bridge/cards.js";
import { makeRig, type TestRig } from "./fakes.js";

/** Makes the rig's card list serve at most `most` cards a page whatever is asked, saying so in `pagination.page_size`. */
function clampPages(rig: TestRig, most: number): void {
  const list = rig.provider.listErpCards.bind(rig.provider);
  rig.provider.listErpCards = (query) => list({ ...query, page_size: Math.min(query.page_size, most) });
}

describe("card walk position", () => {
  it("does not skip the cards removals pulled up before a resumed walk when the provider serves fewer cards a page than asked", async () => {
    const rig = makeRig();
    clampPages(rig, 2);
    for (let i = 0; i < 10; i++) rig.provider.addCard();
    await pollCards(rig.deps, { pageSize: 4 });
    // Two pages of two cards walked: the first card not reached is the fifth.
    expect((await pollCards(rig.deps, { pageSize: 4, maxPages: 2 })).outcome).toBe("page_limit");
    const firstNotReached = rig.provider.cards[4]!["id"] as string;
    rig.provider.changeCard(firstNotReached, { status: "Suspended" });
    rig.provider.cards.splice(0, 3);
    expect((await pollCards(rig.deps, { pageSize: 4 })).outcome).toBe("complete");
    expect(rig.publisher.events.map((e) => [e.detailType, e.detail.subject.id])).toEqual([["card.suspended", firstNotReached]]);
  });
});
