import { describe, expect, it } from "vitest";
import { pollCards, walkCursorKey } from "../../shared/bridge/cards.js";
import { makeRig } from "./fakes.js";

describe("card walk cursor: a cycle that stops before its first page", () => {
  it("keeps the cursor's total_records when stopped by the deadline or a stop request before listing", async () => {
    const rig = makeRig();
    for (let i = 0; i < 30; i++) rig.provider.addCard();
    await pollCards(rig.deps, { pageSize: 10 });
    await pollCards(rig.deps, { pageSize: 10, maxPages: 2 });
    expect((await pollCards(rig.deps, { pageSize: 10, deadline: rig.clock.now() })).outcome).toBe("deadline");
    expect(rig.snapshots.data.get(walkCursorKey("full"))?.object).toEqual({ next_offset: 20, total_records: 30 });
    const signal = AbortSignal.abort();
    expect((await pollCards(rig.deps, { pageSize: 10, signal })).outcome).toBe("deadline");
    expect(rig.snapshots.data.get(walkCursorKey("full"))?.object).toEqual({ next_offset: 20, total_records: 30 });
  });

  it("still finds the cards pulled up by removals on the resume after such a cycle", async () => {
    const rig = makeRig();
    for (let i = 0; i < 30; i++) rig.provider.addCard();
    await pollCards(rig.deps, { pageSize: 10 });
    expect((await pollCards(rig.deps, { pageSize: 10, maxPages: 2 })).outcome).toBe("page_limit");
    expect(rig.snapshots.data.get(walkCursorKey("full"))?.object).toEqual({ next_offset: 20, total_records: 30 });

    // A cycle with no time left (the deadline passed while it took its lease, or the invocation's abort signal fired)
    // stops before listing anything: the cursor must stand as it was.
    const stopped = await pollCards(rig.deps, { pageSize: 10, deadline: rig.clock.now() });
    expect(stopped.outcome).toBe("deadline");

    // Same as "does not skip the cards a resumed walk finds pulled onto an earlier page by cards removed since".
    const firstNotReached = rig.provider.cards[20]!["id"] as string;
    rig.provider.changeCard(firstNotReached, { status: "Suspended" });
    rig.provider.cards.splice(0, 5);
    expect((await pollCards(rig.deps, { pageSize: 10 })).outcome).toBe("complete");
    expect(rig.publisher.events.map((e) => [e.detailType, e.detail.subject.id])).toEqual([["card.suspended", firstNotReached]]);
  });
});
