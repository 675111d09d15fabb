/** A card list answer naming one card twice on a page: one card, one event. */
import { describe, expect, it } from "vitest";
import { pollCards } from "../../shared/bridge/cards.js";
import { makeRig } from "./fakes.js";

describe("card walk over a page listing a card twice", () => {
  it("publishes one suspension and stores one snapshot for a card its page lists twice", async () => {
    for (const cardDetails of [false, true]) {
      const rig = makeRig({}, { cardDetails });
      const ids = Array.from({ length: 3 }, () => rig.provider.addCard()["id"] as string);
      await pollCards(rig.deps);
      const twice = ids[1] as string;
      rig.provider.changeCard(twice, { status: "Suspended" });
      const list = rig.provider.listErpCards.bind(rig.provider);
      rig.provider.listErpCards = async (query) => {
        const page = await list(query);
        const copy = page.data.find((raw) => (raw as Record<string, unknown>)["id"] === twice);
        return copy === undefined ? page : { ...page, data: [...page.data, structuredClone(copy)] };
      };
      expect((await pollCards(rig.deps)).outcome).toBe("complete");
      expect(rig.publisher.events.map((e) => [e.detailType, e.detail.subject.id]), `details ${cardDetails}`).toEqual([["card.suspended", twice]]);
      expect(rig.snapshots.data.get(`card:${twice}`)?.sequence, `details ${cardDetails}`).toBe(1);
    }
  });
});
