import { describe, expect, it } from "vitest";
import { runbookQueryFilter } from "../runbook-section.js";
import { pollCards } from "../../shared/bridge/cards.js";
import { makeRig, type TestRig } from "../bridge/fakes.js";

describe("the runbook's Logs Insights queries find what the alarm counts", () => {
  const limits = (amount: number) => ({ enabled: true, amount, frequency: "MONTHLY", limit_currency: "AED", number_of_purchases: null });

  async function walked(count: number): Promise<TestRig> {
    const rig = makeRig({}, { cardDetails: true });
    for (let i = 0; i < count; i++) rig.provider.addCard({ purchase_limits: limits(500) });
    await pollCards(rig.deps, { pageSize: 10 });
    rig.logger.lines.length = 0;
    return rig;
  }

  it("CardDetailsUnread: the query lists the line saying a walk stopped reading details, which accounts for most of the count", async () => {
    // The detail endpoint down: the first reads of a page fail, and the walk takes every later card as listed.
    const rig = await walked(25);
    rig.provider.beforeCall = (call) => {
      if (call.op === "readErpCard") throw Object.assign(new Error("500"), { name: "ProviderError", status: 500 });
    };
    await pollCards(rig.deps, { pageSize: 10 });
    expect(rig.metrics.sum("CardDetailsUnread")).toBe(25);
    const lines = rig.logger.aboveDebug();
    expect(lines.some((line) => line.message.startsWith("card detail reads of a page all failed"))).toBe(true);
    const filter = runbookQueryFilter("CardDetailsUnread");
    expect(lines.filter((line) => !filter.test(line.message))).toEqual([]);
  });

  it("CardDetailsUnread: the query lists a card the provider lists but does not find when read", async () => {
    const rig = await walked(2);
    const gone = rig.provider.cards[0]!["id"] as string;
    rig.provider.beforeCall = (call) => {
      if (call.op === "readErpCard" && call.id === gone) throw Object.assign(new Error("404"), { name: "NotFoundError", status: 404 });
    };
    await pollCards(rig.deps, { pageSize: 10 });
    const lines = rig.logger.aboveDebug();
    expect(lines).not.toEqual([]);
    const filter = runbookQueryFilter("CardDetailsUnread");
    expect(lines.filter((line) => !filter.test(line.message))).toEqual([]);
  });
});
