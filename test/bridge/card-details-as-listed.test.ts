/** A card taken as listed (its detail read failed): what of its configuration the list shows, and what its snapshot keeps. */
import { describe, expect, it } from "vitest";
import { pollCards } from "../../shared/bridge/cards.js";
import { makeRig } from "./fakes.js";

const limits = (amount: number) => ({ enabled: true, amount, frequency: "MONTHLY", limit_currency: "AED", number_of_purchases: null });

describe("card taken as listed", () => {
  it("publishes a limit change its list answer shows though its detail read fails: the snapshot's configuration fills in only what the list leaves out", async () => {
    const rig = makeRig({}, { cardDetails: true });
    const id = rig.provider.addCard({ purchase_limits: limits(500), atm_configuration: { enabled: true } })["id"] as string;
    await pollCards(rig.deps);
    // A provider whose list shows the purchase limits too (the list schema is loose; spec §2.3 shows them on single reads).
    const list = rig.provider.listErpCards.bind(rig.provider);
    rig.provider.listErpCards = async (query) => {
      const page = await list(query);
      const withLimits = (raw: unknown) => ({ ...(raw as Record<string, unknown>), purchase_limits: rig.provider.cards.find((c) => c["id"] === (raw as Record<string, unknown>)["id"])?.["purchase_limits"] });
      return { ...page, data: page.data.map(withLimits) };
    };
    rig.provider.changeCard(id, { purchase_limits: limits(900) });
    rig.provider.beforeCall = (call) => {
      if (call.op === "readErpCard") throw Object.assign(new Error("503"), { name: "ProviderError", status: 503 });
    };
    expect((await pollCards(rig.deps)).outcome).toBe("complete");
    expect(rig.publisher.events.map((e) => [e.detailType, e.detail.subject.id, e.detail.data.changes])).toEqual([
      ["card.updated", id, [{ path: "/purchase_limits/amount", before: 500, after: 900 }]],
    ]);
    const stored = rig.snapshots.data.get(`card:${id}`)?.object;
    expect(stored?.["purchase_limits"]).toEqual(limits(900));
    // What the list leaves out is kept as last read.
    expect(stored?.["atm_configuration"]).toEqual({ enabled: true });
  });
});
