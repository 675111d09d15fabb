import { describe, expect, it } from "vitest";
import { pollCards } from "../../shared/bridge/cards.js";
import { makeRig } from "./fakes.js";

describe("card details: a configuration object that appears between two detail reads", () => {
  it("publishes card.updated when a detail read that omitted atm_configuration later carries one (both sides are detail reads)", async () => {
    const rig = makeRig({}, { cardDetails: true });
    // The detail read omits atm_configuration (the schema takes it as nullish: absent and null alike).
    rig.provider.addCard({ purchase_limits: { enabled: true, amount: 500, frequency: "MONTHLY", limit_currency: "AED", number_of_purchases: null } });
    const id = rig.provider.cards[0]!["id"] as string;
    await pollCards(rig.deps, { pageSize: 10 });
    expect(rig.snapshots.data.get(`card:${id}`)?.object).toHaveProperty("purchase_limits");
    expect(rig.snapshots.data.get(`card:${id}`)?.object).not.toHaveProperty("atm_configuration");

    // An administrator sets ATM limits on the card: its detail read now carries the object.
    const atm = { atm_withdrawal_allowed: true, frequency: "DAILY", max_amount: 2000, number_of_withdrawals: 3, limit_per_withdrawal: 1000 };
    rig.provider.changeCard(id, { atm_configuration: atm });
    await pollCards(rig.deps, { pageSize: 10 });

    expect(rig.publisher.events.map((e) => [e.detailType, e.detail.subject.id, e.detail.data.changes?.map((c) => c.path)])).toEqual([
      ["card.updated", id, ["/atm_configuration"]],
    ]);
  });
});
