/**
 * Where a card walk stands in a list that shifts under it: a provider serving fewer cards a page than asked, and cards
 * removed between two pages of one walk.
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

  it("does not skip the cards pulled onto a page already walked by cards removed between two pages of one walk", async () => {
    const rig = makeRig();
    for (let i = 0; i < 10; i++) rig.provider.addCard();
    await pollCards(rig.deps, { pageSize: 2 });
    const pulledUp = rig.provider.cards[3]!["id"] as string;
    let lists = 0;
    rig.provider.beforeCall = (call) => {
      if (call.op !== "listErpCards" || ++lists !== 2) return;
      // After page 1 (cards 0 and 1): card 3 suspended, and the two cards of page 1 removed, which pulls cards 2 and 3 onto page 1.
      rig.provider.changeCard(pulledUp, { status: "Suspended" });
      rig.provider.cards.splice(0, 2);
    };
    expect((await pollCards(rig.deps, { pageSize: 2 })).outcome).toBe("complete");
    expect(rig.publisher.events.map((e) => [e.detailType, e.detail.subject.id])).toEqual([["card.suspended", pulledUp]]);
  });

  it("completes on a last page that lists the page before's cards again, shifted there by cards issued above and removed below: no paging fault", async () => {
    const rig = makeRig();
    for (let i = 0; i < 4; i++) rig.provider.addCard();
    await pollCards(rig.deps, { pageSize: 2 });
    rig.provider.calls.length = 0;
    let lists = 0;
    rig.provider.beforeCall = (call) => {
      if (call.op !== "listErpCards" || ++lists !== 2) return;
      // After page 1: two cards issued at the top and the two at the bottom removed, the total unchanged.
      rig.provider.addCard();
      rig.provider.addCard();
      rig.provider.cards.splice(4);
    };
    expect((await pollCards(rig.deps, { pageSize: 2 })).outcome).toBe("complete");
    expect(rig.provider.calls.map((c) => (c.op === "listErpCards" ? c.query.page : undefined))).toEqual([1, 2]);
    expect(rig.logger.lines.filter((l) => l.message.includes("another page than asked"))).toEqual([]);
  });
});
