import { describe, expect, it, vi } from "vitest";
import { cardEventType, pollCards, walkCursorKey } from "../../shared/bridge/cards.js";
import { SINGLE_READ_CONCURRENCY } from "../../shared/bridge/provider.js";
import { MIN_PAGE_SIZE } from "../../shared/bridge/deps.js";
import { parseEventDetail } from "../../shared/bridge/events/schemas.js";
import { CycleAbortedError, ReauthorizationNeededError } from "../../shared/bridge/errors.js";
import { NotFoundError, ReauthorizationRequiredError, TokenUnavailableError } from "../../shared/qashio/errors.js";
import { schemaValidator } from "../../shared/bridge/validate.js";
import { ErpCardSchema } from "../../shared/qashio/schemas/erp-card.js";
import { contentHash } from "../../shared/bridge/hash.js";
import { applyPii, type PiiPolicy } from "../../shared/bridge/pii.js";
import { RECENT_BATCHES, RecentIds } from "../../shared/bridge/recent-ids.js";
import { makeRig } from "./fakes.js";
import { pageShapes } from "./page-shapes.js";
import { clientOverFake } from "./provider-client.js";

/** The number of ids every RecentIds holds after each `add` while `work` runs (the walk's memory of cards taken). */
async function rememberedSizes(work: () => Promise<void>): Promise<number[]> {
  const sizes: number[] = [];
  const add = RecentIds.prototype.add;
  const spy = vi.spyOn(RecentIds.prototype, "add").mockImplementation(function (this: RecentIds, ...args) {
    add.apply(this, args);
    sizes.push(this.size);
  });
  try {
    await work();
  } finally {
    spy.mockRestore();
  }
  return sizes;
}

describe("pollCards", () => {
  it("records a card seen for the first time silently", async () => {
    const rig = makeRig();
    const card = rig.provider.addCard();
    const report = await pollCards(rig.deps);
    expect(rig.publisher.events).toEqual([]);
    expect(rig.snapshots.data.has(`card:${card["id"] as string}`)).toBe(true);
    expect(report.outcome).toBe("complete");
  });

  it("writes no snapshot or walk cursor once past its calls' deadline (a container thawed after its lease lapsed), and the next walk re-sends the same id", async () => {
    const rig = makeRig();
    const cards = Array.from({ length: 3 }, () => rig.provider.addCard());
    await pollCards(rig.deps);
    const id = cards[0]?.["id"] as string;
    rig.provider.changeCard(id, { status: "Suspended" });
    const snapshotsBefore = structuredClone([...rig.snapshots.data.entries()]);
    const publish = rig.publisher.publish.bind(rig.publisher);
    rig.publisher.publish = async (events, options) => {
      const result = await publish(events, options);
      rig.clock.advance(10 * 60_000);
      return result;
    };
    const stale = await pollCards(rig.deps, { pageSize: 1, deadline: rig.clock.now() + 60_000 });
    expect(stale.outcome).toBe("deadline");
    expect(rig.publisher.ofType("card.suspended")).toHaveLength(1);
    expect([...rig.snapshots.data.entries()]).toEqual(snapshotsBefore);

    rig.publisher.publish = publish;
    expect((await pollCards(rig.deps)).outcome).toBe("complete");
    const suspended = rig.publisher.ofType("card.suspended");
    expect(suspended.map((e) => e.detail.id)).toEqual([suspended[0]?.detail.id, suspended[0]?.detail.id]);
    expect(rig.snapshots.data.get(`card:${id}`)?.object["status"]).toBe("Suspended");
  });

  it("emits no SyncLagSeconds, so a period with only card cycles does not read as a transaction lag of 0", async () => {
    const rig = makeRig();
    rig.provider.addCard();
    await pollCards(rig.deps);
    expect(rig.metrics.points.some((p) => p.name === "CycleDurationMs")).toBe(true);
    expect(rig.metrics.points.filter((p) => p.name === "SyncLagSeconds")).toEqual([]);
  });

  it("sends a CardsPulled point per page by the cards it listed, none for a page listing no card (a fast path with no suspended card)", async () => {
    const rig = makeRig();
    for (let i = 0; i < 3; i++) rig.provider.addCard();
    expect((await pollCards(rig.deps, { mode: "suspended-only" })).outcome).toBe("complete");
    expect(rig.metrics.points.filter((p) => p.name === "CardsPulled")).toEqual([]);
    expect((await pollCards(rig.deps, { pageSize: 2 })).outcome).toBe("complete");
    expect(rig.metrics.points.filter((p) => p.name === "CardsPulled").map((p) => p.value)).toEqual([2, 1]);
  });

  it("records a card seen for the first time silently when emitCardCreated is left out (its default)", async () => {
    const rig = makeRig();
    const card = rig.provider.addCard();
    const { emitCardCreated: _unset, ...deps } = rig.deps;
    expect((await pollCards(deps)).outcome).toBe("complete");
    expect(rig.publisher.events).toEqual([]);
    expect(rig.snapshots.data.get(`card:${card["id"] as string}`)?.sequence).toBe(0);
  });

  it("publishes card.created on first sighting when the tenant asks for it", async () => {
    const rig = makeRig({ emitCardCreated: true });
    rig.provider.addCard();
    await pollCards(rig.deps);
    expect(rig.publisher.events.map((e) => e.detailType)).toEqual(["card.created"]);
    expect(parseEventDetail(rig.publisher.events[0]!.detail).success).toBe(true);
  });

  it("numbers a card's events from its first one: 1 after a silent first sighting, 1 for card.created, then one more each", async () => {
    for (const emitCardCreated of [false, true]) {
      const rig = makeRig({ emitCardCreated });
      const card = rig.provider.addCard();
      const id = card["id"] as string;
      await pollCards(rig.deps);
      expect(rig.snapshots.data.get(`card:${id}`)?.sequence).toBe(emitCardCreated ? 1 : 0);
      rig.provider.changeCard(id, { status: "Suspended" });
      await pollCards(rig.deps);
      rig.provider.changeCard(id, { card_nickname: "Travel" });
      await pollCards(rig.deps);
      const numbered = rig.publisher.events.map((e) => [e.detailType, e.detail.subject.sequence]);
      expect(numbered).toEqual([
        ...(emitCardCreated ? [["card.created", 1]] : []),
        ["card.suspended", emitCardCreated ? 2 : 1],
        ["card.updated", emitCardCreated ? 3 : 2],
      ]);
      expect(rig.snapshots.data.get(`card:${id}`)?.sequence).toBe(emitCardCreated ? 3 : 2);
    }
  });

  // "Suspended" as the card lists write it (spec §2.3), "suspended" as §4.4 shows it.
  it.each(["Suspended", "suspended"])("publishes card.suspended with a /status change when a card becomes %s", async (status) => {
    const rig = makeRig();
    const card = rig.provider.addCard();
    await pollCards(rig.deps);
    rig.provider.changeCard(card["id"] as string, { status });
    await pollCards(rig.deps);
    expect(rig.publisher.events.map((e) => e.detailType)).toEqual(["card.suspended"]);
    const [event] = rig.publisher.events;
    // The silent first sighting published nothing: this is the card's first event.
    expect(event?.detail.subject).toEqual({ type: "card", id: card["id"], sequence: 1 });
    expect(event?.detail.data.changes).toEqual([{ path: "/status", before: "Active", after: status }]);
    expect(parseEventDetail(event!.detail).success).toBe(true);
  });

  it("publishes card.status_changed for any other status move", async () => {
    const rig = makeRig();
    const card = rig.provider.addCard({ status: "Suspended" });
    await pollCards(rig.deps);
    rig.provider.changeCard(card["id"] as string, { status: "Active" });
    await pollCards(rig.deps);
    expect(rig.publisher.events.map((e) => e.detailType)).toEqual(["card.status_changed"]);
    expect(rig.publisher.events[0]!.detail.data.changes).toContainEqual({ path: "/status", before: "Suspended", after: "Active" });
  });

  it.each([
    ["Suspended", "card.suspended"],
    ["Terminated", "card.status_changed"],
  ])("publishes one event for a status move to %s and a limit change seen in one walk: %s carrying both, no card.updated", async (status, type) => {
    const rig = makeRig();
    const card = rig.provider.addCard();
    await pollCards(rig.deps);
    rig.provider.changeCard(card["id"] as string, { status, allowed_max_balance: 0 });
    await pollCards(rig.deps);
    expect(rig.publisher.events.map((e) => [e.detailType, e.detail.data.changes])).toEqual([
      [
        type,
        [
          { path: "/allowed_max_balance", before: 1000, after: 0 },
          { path: "/status", before: "Active", after: status },
        ],
      ],
    ]);
  });

  it("publishes card.updated when limits or nickname change and nothing when nothing changed", async () => {
    const rig = makeRig();
    const card = rig.provider.addCard();
    await pollCards(rig.deps);
    await pollCards(rig.deps);
    expect(rig.publisher.events).toHaveLength(0);
    rig.provider.changeCard(card["id"] as string, { card_nickname: "Travel", allowed_max_balance: 5000 });
    await pollCards(rig.deps);
    const [event] = rig.publisher.events;
    expect(event?.detailType).toBe("card.updated");
    expect(event?.detail.data.changes).toEqual([
      { path: "/allowed_max_balance", before: 1000, after: 5000 },
      { path: "/card_nickname", before: "Card 1", after: "Travel" },
    ]);
  });

  it("walks every page, and lists a card shifted onto the next page by a new card only once", async () => {
    const rig = makeRig({ emitCardCreated: true });
    for (let i = 0; i < 5; i++) rig.provider.addCard();
    let lists = 0;
    rig.provider.beforeCall = () => {
      lists += 1;
      if (lists === 2) rig.provider.addCard();
    };
    const report = await pollCards(rig.deps, { pageSize: 2 });
    const ids = rig.publisher.events.map((e) => e.detail.subject.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toHaveLength(5);
    // The copy met again on the next page is skipped, not handled a second time as unchanged.
    expect(report).toMatchObject({ pulled: 6, handled: 5, unchanged: 0 });
    await pollCards(rig.deps, { pageSize: 2 });
    expect(rig.publisher.events).toHaveLength(6);
  });

  it.each([false, true])("publishes a move a card shows when listed again across a seam, though undone before the next walk (details %s)", async (cardDetails) => {
    const rig = makeRig({}, { cardDetails });
    for (let i = 0; i < 5; i++) rig.provider.addCard();
    await pollCards(rig.deps, { pageSize: 2 });
    const lastOfPage1 = rig.provider.cards[1]!["id"] as string;
    let lists = 0;
    rig.provider.beforeCall = (call) => {
      if (call.op !== "listErpCards" || ++lists !== 2) return;
      // Between the first two pages: the last card of page 1 is suspended, and a card issued on top shifts it onto page 2.
      rig.provider.changeCard(lastOfPage1, { status: "Suspended" });
      rig.provider.addCard();
    };
    expect((await pollCards(rig.deps, { pageSize: 2 })).outcome).toBe("complete");
    rig.provider.beforeCall = () => undefined;
    rig.provider.changeCard(lastOfPage1, { status: "Active" });
    await pollCards(rig.deps, { pageSize: 2 });
    expect(rig.publisher.events.map((e) => [e.detail.type, e.detail.subject.id])).toEqual([
      ["card.suspended", lastOfPage1],
      ["card.status_changed", lastOfPage1],
    ]);
  });

  it("publishes a move back to a version the walk took earlier: a card suspended, then reactivated, as it is shifted across two seams", async () => {
    const rig = makeRig();
    for (let i = 0; i < 7; i++) rig.provider.addCard();
    await pollCards(rig.deps, { pageSize: 2 });
    const card = rig.provider.cards[1]!["id"] as string;
    let lists = 0;
    rig.provider.beforeCall = (call) => {
      if (call.op !== "listErpCards") return;
      lists += 1;
      // Taken Active on page 1; suspended and shifted onto page 2; reactivated and shifted onto page 3.
      if (lists === 2) {
        rig.provider.changeCard(card, { status: "Suspended" });
        rig.provider.addCard();
      }
      if (lists === 3) {
        rig.provider.changeCard(card, { status: "Active" });
        rig.provider.addCard();
        rig.provider.addCard();
      }
    };
    expect((await pollCards(rig.deps, { pageSize: 2 })).outcome).toBe("complete");
    // Suspended again before the next walk: without the reactivation, consumers would see one suspension and no move.
    rig.provider.beforeCall = () => undefined;
    rig.provider.changeCard(card, { status: "Suspended" });
    await pollCards(rig.deps, { pageSize: 2 });
    expect(rig.publisher.events.map((e) => [e.detail.type, e.detail.subject.id, e.detail.data.object["status"]])).toEqual([
      ["card.suspended", card, "Suspended"],
      ["card.status_changed", card, "Active"],
      ["card.suspended", card, "Suspended"],
    ]);
  });

  it("remembers the cards of its last few pages only, not every card the walk took", async () => {
    const rig = makeRig({ emitCardCreated: true });
    for (let i = 0; i < 40; i++) rig.provider.addCard();
    const remembered = await rememberedSizes(async () => {
      expect(await pollCards(rig.deps, { pageSize: 2 })).toMatchObject({ outcome: "complete", handled: 40 });
    });
    expect(rig.publisher.events).toHaveLength(40);
    expect(remembered).toHaveLength(20);
    expect(Math.max(...remembered)).toBe(RECENT_BATCHES * 2);
  });

  it.each([
    [3, 0],
    [4, 1],
  ])("checks a card pushed %i pages on by cards issued under a walk with no count to move by again only past three pages (unchanged: %i)", async (issued, unchanged) => {
    const rig = makeRig();
    for (let i = 0; i < 3; i++) rig.provider.addCard();
    const list = rig.provider.listErpCards.bind(rig.provider);
    // No total_records: the walk cannot move past cards issued above, so it meets the first card again.
    rig.provider.listErpCards = async (query) => pageShapes.echoingSizeAskedWithoutCount(query, await list(query));
    let lists = 0;
    rig.provider.beforeCall = (call) => {
      if (call.op === "listErpCards" && ++lists === 2) for (let i = 0; i < issued; i++) rig.provider.addCard();
    };
    const report = await pollCards(rig.deps, { pageSize: 1 });
    expect(report).toMatchObject({ outcome: "complete", unchanged });
  });

  it("remembers a few pages of cards however many a walk meets again, shifted by cards issued under it", async () => {
    const rig = makeRig({ emitCardCreated: true });
    for (let i = 0; i < 30; i++) rig.provider.addCard();
    // One card issued before each list call: each page starts with the last card of the page before.
    rig.provider.beforeCall = (call) => {
      if (call.op === "listErpCards") rig.provider.addCard();
    };
    const remembered = await rememberedSizes(async () => {
      expect(await pollCards(rig.deps, { pageSize: 3 })).toMatchObject({ outcome: "complete" });
    });
    const ids = rig.publisher.events.map((e) => e.detail.subject.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(remembered.length).toBeGreaterThan(10);
    expect(Math.max(...remembered)).toBeLessThanOrEqual(RECENT_BATCHES * 3);
  });

  it("in suspended-only mode reads only the suspended list and publishes new suspensions", async () => {
    const rig = makeRig();
    const a = rig.provider.addCard();
    rig.provider.addCard();
    await pollCards(rig.deps);
    rig.provider.changeCard(a["id"] as string, { status: "Suspended" });
    await pollCards(rig.deps, { mode: "suspended-only" });
    expect(rig.publisher.events.map((e) => [e.detailType, e.detail.subject.id])).toEqual([["card.suspended", a["id"]]]);
    const last = rig.provider.calls.at(-1);
    expect(last).toEqual({ op: "listErpCards", query: { status: "suspended", page: 1, page_size: 100 } });
    await pollCards(rig.deps);
    expect(rig.publisher.events).toHaveLength(1);
  });

  it("in suspended-only mode without card details diffs a card recorded suspended too: its nickname change is published on the next tick", async () => {
    const rig = makeRig();
    const id = rig.provider.addCard({ status: "Suspended" })["id"] as string;
    await pollCards(rig.deps, { mode: "suspended-only" });
    rig.provider.changeCard(id, { card_nickname: "Fraud hold" });
    expect(await pollCards(rig.deps, { mode: "suspended-only" })).toMatchObject({ outcome: "complete", handled: 1, unchanged: 0 });
    expect(rig.publisher.events.map((e) => [e.detailType, e.detail.subject.id, e.detail.data.changes])).toEqual([
      ["card.updated", id, [expect.objectContaining({ path: "/card_nickname", after: "Fraud hold" })]],
    ]);
    expect(rig.snapshots.data.get(`card:${id}`)?.object["card_nickname"]).toBe("Fraud hold");
  });

  it("counts each full-walk cycle once in FullCardWalks, however it ends, and no suspended-only cycle (Heartbeat-PollCards of a fast-path tenant)", async () => {
    const rig = makeRig();
    for (let i = 0; i < 5; i++) rig.provider.addCard();
    const walks = () => rig.metrics.points.filter((p) => p.name === "FullCardWalks");
    // One point per cycle, however many pages it walks.
    expect((await pollCards(rig.deps, { pageSize: 2 })).outcome).toBe("complete");
    expect(walks()).toEqual([{ name: "FullCardWalks", value: 1, unit: "Count", dimensions: undefined }]);
    // The fast path's cycles walk the suspended list only: they must not keep the full walk's heartbeat alive.
    await pollCards(rig.deps, { mode: "suspended-only" });
    expect(walks()).toHaveLength(1);
    // Stopped at its deadline before any page, or failed: still a walk the schedule started (failures are Errors' job).
    expect((await pollCards(rig.deps, { deadline: rig.clock.now() - 1 })).outcome).toBe("deadline");
    rig.provider.beforeCall = () => {
      throw Object.assign(new Error("rate limited"), { name: "RateLimitedError", status: 429 });
    };
    await expect(pollCards(rig.deps)).rejects.toBeInstanceOf(CycleAbortedError);
    expect(rig.metrics.sum("FullCardWalks")).toBe(3);
  });

  it("counts each suspended-only cycle once in FastPathCardWalks, however it ends, and no full walk (Heartbeat-SuspendedCards)", async () => {
    const rig = makeRig();
    for (let i = 0; i < 5; i++) rig.provider.addCard();
    const fastWalks = () => rig.metrics.points.filter((p) => p.name === "FastPathCardWalks");
    expect((await pollCards(rig.deps, { mode: "suspended-only", pageSize: 2 })).outcome).toBe("complete");
    expect(fastWalks()).toEqual([{ name: "FastPathCardWalks", value: 1, unit: "Count", dimensions: undefined }]);
    // A full walk must not keep the fast path's heartbeat alive: it is that schedule's ticks that are watched.
    await pollCards(rig.deps);
    expect(fastWalks()).toHaveLength(1);
    expect((await pollCards(rig.deps, { mode: "suspended-only", deadline: rig.clock.now() - 1 })).outcome).toBe("deadline");
    rig.provider.beforeCall = () => {
      throw Object.assign(new Error("rate limited"), { name: "RateLimitedError", status: 429 });
    };
    await expect(pollCards(rig.deps, { mode: "suspended-only" })).rejects.toBeInstanceOf(CycleAbortedError);
    expect(rig.metrics.sum("FastPathCardWalks")).toBe(3);
  });

  it("in suspended-only mode resumes at its cursor whatever the suspended list's total did: suspensions below the cursor are no shift", async () => {
    const rig = makeRig();
    for (let i = 0; i < 12; i++) rig.provider.addCard();
    await pollCards(rig.deps);
    const ids = rig.provider.cards.map((c) => c["id"] as string);
    for (const id of ids.slice(0, 4)) rig.provider.changeCard(id, { status: "Suspended" });
    expect((await pollCards(rig.deps, { mode: "suspended-only", pageSize: 2, maxPages: 1 })).outcome).toBe("page_limit");
    // Older cards suspended since sit below the cursor and grow the list's total; none was issued above it.
    for (const id of ids.slice(6)) rig.provider.changeCard(id, { status: "Suspended" });
    for (let cycle = 0; cycle < 6; cycle++) {
      if ((await pollCards(rig.deps, { mode: "suspended-only", pageSize: 2, maxPages: 1 })).outcome === "complete") break;
    }
    const suspended = rig.publisher.ofType("card.suspended").map((e) => e.detail.subject.id);
    expect(suspended.sort()).toEqual([...ids.slice(0, 4), ...ids.slice(6)].sort());
  });

  it("gives a repeated status move or nickname flip a new event id, even on a clock that stands still", async () => {
    const rig = makeRig();
    const card = rig.provider.addCard();
    const id = card["id"] as string;
    await pollCards(rig.deps);
    for (const status of ["Suspended", "Active", "Suspended", "Active"]) {
      rig.provider.changeCard(id, { status });
      await pollCards(rig.deps);
    }
    for (const card_nickname of ["Travel", "Card 1", "Travel"]) {
      rig.provider.changeCard(id, { card_nickname });
      await pollCards(rig.deps);
    }
    expect(rig.publisher.events.map((e) => e.detailType)).toEqual([
      "card.suspended",
      "card.status_changed",
      "card.suspended",
      "card.status_changed",
      "card.updated",
      "card.updated",
      "card.updated",
    ]);
    expect(new Set(rig.publisher.ids).size).toBe(7);
  });

  it("gives a change made again a new event id after silent rewrites of its snapshot, on a clock that stands still", async () => {
    const rig = makeRig();
    const card = rig.provider.addCard();
    const id = card["id"] as string;
    await pollCards(rig.deps);
    // Published changes stamp their snapshots after their events, so past the clock; each silent rewrite (a status
    // differing in case only) must still give its snapshot a later version than the one it replaces, or the card's
    // first version comes back and a repeat of its first change gets that change's id (which consumers drop).
    const steps = [{ card_nickname: "Travel" }, { card_nickname: "Card 1" }, { status: "active" }, { status: "Active" }, { card_nickname: "Travel" }];
    for (const patch of steps) {
      rig.provider.changeCard(id, patch);
      await pollCards(rig.deps);
    }
    expect(rig.publisher.events.map((e) => [e.detailType, e.detail.subject.sequence])).toEqual([
      ["card.updated", 1],
      ["card.updated", 2],
      ["card.updated", 3],
    ]);
    expect(new Set(rig.publisher.ids).size).toBe(3);
  });

  it("re-sends a repeated suspension after a crash with its own id, not the first suspension's", async () => {
    const rig = makeRig();
    const card = rig.provider.addCard();
    const id = card["id"] as string;
    await pollCards(rig.deps);
    for (const status of ["Suspended", "Active"]) {
      rig.provider.changeCard(id, { status });
      await pollCards(rig.deps);
    }
    rig.provider.changeCard(id, { status: "Suspended" });
    const putMany = rig.snapshots.putMany.bind(rig.snapshots);
    rig.deps.snapshots.putMany = () => Promise.reject(new Error("crash after publish"));
    await expect(pollCards(rig.deps)).rejects.toBeInstanceOf(CycleAbortedError);
    rig.deps.snapshots.putMany = putMany;
    await pollCards(rig.deps);
    expect(rig.publisher.events.map((e) => e.detailType)).toEqual(["card.suspended", "card.status_changed", "card.suspended", "card.suspended"]);
    const [first, second, resent] = rig.publisher.ofType("card.suspended");
    expect(second?.detail.id).not.toBe(first?.detail.id);
    expect(resent?.detail.id).toBe(second?.detail.id);
  });

  it("keeps the old snapshot when the event fails, so the next walk re-sends the same event id", async () => {
    const rig = makeRig();
    const card = rig.provider.addCard();
    await pollCards(rig.deps);
    rig.provider.changeCard(card["id"] as string, { status: "Terminated" });
    rig.publisher.reject = () => "throttled";
    await pollCards(rig.deps);
    expect(rig.publisher.events).toHaveLength(0);
    rig.publisher.reject = () => undefined;
    await pollCards(rig.deps);
    expect(rig.publisher.events.map((e) => e.detailType)).toEqual(["card.status_changed"]);
  });

  it("writes no snapshot and no quarantine record for a card event that failed for now, and re-sends it with the same id", async () => {
    const rig = makeRig();
    const card = rig.provider.addCard();
    const id = card["id"] as string;
    await pollCards(rig.deps);
    const before = rig.snapshots.data.get(`card:${id}`);
    rig.provider.changeCard(id, { status: "Suspended" });
    rig.publisher.reject = () => ({ reason: "ThrottlingException (after 8 attempts)", retryable: true });
    const report = await pollCards(rig.deps);
    expect(report).toMatchObject({ publishFailed: 1, publishDeferred: 1, quarantined: 0 });
    expect(rig.snapshots.data.get(`card:${id}`)).toEqual(before);
    expect(rig.quarantine.records.size).toBe(0);
    rig.publisher.reject = () => undefined;
    await pollCards(rig.deps);
    expect(rig.publisher.events.map((e) => e.detail.id)).toEqual([rig.publisher.offered[0]?.detail.id]);
    expect(rig.snapshots.data.get(`card:${id}`)?.object["status"]).toBe("Suspended");
  });

  it("counts a card event the bus keeps refusing, for now or for good, in EventsFailed at every walk, with no dimension of its own", async () => {
    const rig = makeRig();
    const card = rig.provider.addCard();
    await pollCards(rig.deps);
    rig.provider.changeCard(card["id"] as string, { status: "Suspended" });
    // The EventsFailed alarm reads the plain metric (service, tenant) per period of the slower schedule: a card
    // poller that keeps deferring card.suspended must report it at every walk, under exactly those dimensions.
    for (const refusal of [{ reason: "AccessDeniedException: bus policy", retryable: true }, { reason: "ValidationException" }]) {
      rig.publisher.reject = () => refusal;
      const before = rig.metrics.points.length;
      await pollCards(rig.deps);
      await pollCards(rig.deps);
      const failed = rig.metrics.points.slice(before).filter((p) => p.name === "EventsFailed");
      expect(failed).toEqual([
        { name: "EventsFailed", value: 1, unit: "Count", dimensions: undefined },
        { name: "EventsFailed", value: 1, unit: "Count", dimensions: undefined },
      ]);
    }
    expect(rig.quarantine.records.size).toBe(0);
  });

  it("stops the walk once the publisher took none of two pages of changes in a row, and walks again from where it started next cycle", async () => {
    const rig = makeRig();
    for (let i = 0; i < 40; i++) rig.provider.addCard();
    await pollCards(rig.deps, { pageSize: 10 });
    for (const card of rig.provider.cards) rig.provider.changeCard(card["id"] as string, { status: "Suspended" });
    rig.publisher.reject = () => ({ reason: "ThrottlingException (after 3 attempts)", retryable: true });
    const pagesRead = (): unknown[] => rig.provider.calls.map((c) => (c.op === "listErpCards" ? c.query.page : undefined));
    const stopped = await pollCards(rig.deps, { pageSize: 10 });
    expect(stopped).toMatchObject({ outcome: "publisher_unavailable", publishDeferred: 20 });
    expect(pagesRead()).toEqual([1, 2, 3, 4, 1, 2]);

    rig.publisher.reject = () => undefined;
    expect((await pollCards(rig.deps, { pageSize: 10 })).outcome).toBe("complete");
    // From the first page again, not from page 3: the refused changes of pages 1 and 2 went out in this cycle.
    expect(pagesRead()).toEqual([1, 2, 3, 4, 1, 2, 1, 2, 3, 4]);
    expect(rig.publisher.events).toHaveLength(40);
    expect(new Set(rig.publisher.events.map((e) => e.detailType))).toEqual(new Set(["card.suspended"]));
  });

  it("quarantines an invalid card and goes on with the others", async () => {
    const rig = makeRig({ emitCardCreated: true });
    rig.provider.addCard();
    rig.provider.cards.unshift({ status: "Active" });
    await pollCards(rig.deps);
    expect(rig.publisher.events).toHaveLength(1);
    expect((await rig.quarantine.list())[0]).toMatchObject({ kind: "card", reason: "validation: id: missing or not a non-empty string" });
  });

  it("counts and warns about an invalid card once, not on every walk that finds it again", async () => {
    const rig = makeRig();
    rig.provider.addCard();
    rig.provider.cards.unshift({ status: "Active" });
    for (let walk = 0; walk < 3; walk += 1) expect((await pollCards(rig.deps)).quarantined).toBe(1);
    expect(rig.quarantine.records.size).toBe(1);
    // Quarantined feeds the QuarantineGrowing alarm: a record already held must not raise it again.
    expect(rig.metrics.sum("Quarantined")).toBe(1);
    expect(rig.logger.lines.filter((l) => l.level === "warn" && l.message === "record quarantined")).toHaveLength(1);
    // A walk finding the held one again and a new one counts the new one only.
    rig.provider.cards.unshift({ status: "Active", card_nickname: "Fuel" });
    expect((await pollCards(rig.deps)).quarantined).toBe(2);
    expect(rig.quarantine.records.size).toBe(2);
    expect(rig.metrics.points.filter((p) => p.name === "Quarantined").map((p) => p.value)).toEqual([1, 1]);
  });

  it("writes a quarantine record once when two invalid cards of one walk share its id (differing only in personal fields)", async () => {
    const rig = makeRig({ pii: { mode: "redact" } });
    rig.provider.addCard();
    rig.provider.cards.unshift({ status: "Active", cardholder: { name: "Ann" } }, { status: "Active", cardholder: { name: "Bob" } });
    // Puts of one id in parallel would each find it absent (the file adapter checks, then writes) and count it twice.
    const putIds: string[] = [];
    const put = rig.quarantine.put.bind(rig.quarantine);
    rig.quarantine.put = (record) => {
      putIds.push(record.id);
      return put(record);
    };
    expect((await pollCards(rig.deps)).quarantined).toBe(2);
    expect(putIds).toHaveLength(1);
    expect(rig.quarantine.records.size).toBe(1);
    expect(rig.metrics.sum("Quarantined")).toBe(1);
  });

  it.each([
    ["the default validator", undefined],
    ["a plugged client schema that allows a null status", schemaValidator(ErpCardSchema)],
  ])("quarantines a card without a string status under %s, since every card event carries one", async (_, card) => {
    const rig = makeRig({ emitCardCreated: true }, card ? { validators: { card } } : {});
    const known = rig.provider.addCard();
    const missing = rig.provider.addCard();
    await pollCards(rig.deps);
    rig.provider.changeCard(known["id"] as string, { status: null });
    delete missing["status"];
    rig.provider.addCard({ status: 7 });
    rig.provider.addCard({ status: "Active" });
    await pollCards(rig.deps);
    const events = rig.publisher.events;
    expect(events.map((e) => e.detail.type)).toEqual(["card.created", "card.created", "card.created"]);
    for (const event of events) expect(parseEventDetail(event.detail).success).toBe(true);
    const quarantined = await rig.quarantine.list();
    expect(quarantined).toHaveLength(3);
    for (const q of quarantined) expect(q.reason).toMatch(/^validation: status: /);
    expect(quarantined.filter((q) => q.entityId === known["id"] || q.entityId === missing["id"])).toHaveLength(2);
  });

  it("hashes cardholder PII in hash mode, the same way on every walk", async () => {
    const rig = makeRig({ emitCardCreated: true, pii: { mode: "hash", salt: "salt-1" } });
    rig.provider.addCard();
    await pollCards(rig.deps);
    await pollCards(rig.deps);
    const holder = rig.publisher.events[0]!.detail.data.object["cardholder"] as Record<string, string>;
    expect(holder["name"]).toMatch(/^hmac-sha256:/);
    expect(holder["employee_id"]).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
    expect(rig.publisher.events).toHaveLength(1);
  });

  it.each(["redact", "hash"] as const)(
    "after a switch from full to %s, publishes no cleartext and no event for PII that only changed form",
    async (mode) => {
      const rig = makeRig();
      const edited = rig.provider.addCard();
      const untouched = rig.provider.addCard();
      await pollCards(rig.deps);
      rig.provider.changeCard(edited["id"] as string, { card_nickname: "Travel" });
      await pollCards({ ...rig.deps, pii: { mode, salt: "salt-1" } });
      expect(rig.publisher.events).toHaveLength(1);
      expect(rig.publisher.events[0]!.detail.data.changes).toEqual([{ path: "/card_nickname", before: "Card 1", after: "Travel" }]);
      expect(JSON.stringify(rig.publisher.events)).not.toMatch(/Ann Holder|ann@example\.com/);
      expect(JSON.stringify(rig.snapshots.data.get(`card:${untouched["id"] as string}`))).not.toMatch(/Ann Holder|ann@example\.com/);
    },
  );

  const holder = { name: "Ann Holder", email: "ann@example.com", employee_id: "EMP-2001" };

  it("keeps an invalid card's one record through switches of the PII mode and salt, its body in each new form", async () => {
    const rig = makeRig();
    rig.provider.addCard({ cardholder: holder, status: null });
    const policies: PiiPolicy[] = [{ mode: "full" }, { mode: "redact" }, { mode: "hash", salt: "salt-1" }, { mode: "hash", salt: "salt-2" }, { mode: "redact" }];
    const ids = new Set<string>();
    for (const pii of policies) {
      expect((await pollCards({ ...rig.deps, pii })).quarantined).toBe(1);
      const [held, ...more] = await rig.quarantine.list();
      expect(more).toEqual([]);
      ids.add(held!.id);
      expect(held!.raw).toMatchObject({ cardholder: applyPii({ cardholder: holder }, pii)["cardholder"] as object });
    }
    expect(ids.size).toBe(1);
    // Found again, not new: Quarantined (QuarantineGrowing) counts it once, and the size stays one record.
    expect(rig.metrics.sum("Quarantined")).toBe(1);
    expect(rig.logger.lines.filter((l) => l.level === "warn" && l.message === "record quarantined")).toHaveLength(1);
    expect(JSON.stringify(await rig.quarantine.list())).not.toMatch(/Ann Holder|ann@example\.com|EMP-2001|hmac-sha256/);
  });

  it("under redact, keeps no employee id in card events, snapshots or quarantine records", async () => {
    const rig = makeRig({ emitCardCreated: true, pii: { mode: "redact" } });
    const card = rig.provider.addCard({ cardholder: holder });
    rig.provider.addCard({ cardholder: { ...holder, employee_id: "EMP-2002" }, status: null });
    await pollCards(rig.deps);
    rig.provider.changeCard(card["id"] as string, { card_nickname: "Travel" });
    await pollCards(rig.deps);
    expect(rig.publisher.events.map((e) => e.detail.type)).toEqual(["card.created", "card.updated"]);
    expect(rig.publisher.events[1]!.detail.data.object["cardholder"]).toEqual({ name: "[redacted]", email: "[redacted]", employee_id: "[redacted]" });
    const quarantined = await rig.quarantine.list();
    expect(quarantined).toHaveLength(1);
    expect(JSON.stringify([rig.publisher.events, [...rig.snapshots.data.values()], quarantined])).not.toMatch(/EMP-20|Ann Holder/);
  });

  it.each(["redact", "hash"] as const)(
    "publishes nothing for a card snapshot stored under %s before employee ids were masked",
    async (mode) => {
      const rig = makeRig({ pii: { mode, salt: "salt-1" } });
      const card = rig.provider.addCard({ cardholder: holder });
      await pollCards(rig.deps);
      // The snapshot as the previous version wrote it: name and email masked, employee id in clear.
      const key = `card:${card["id"] as string}` as const;
      const current = rig.snapshots.data.get(key)!;
      const old = { ...current.object, cardholder: { ...(current.object["cardholder"] as object), employee_id: "EMP-2001" } };
      rig.snapshots.data.set(key, { ...current, object: old, hash: contentHash(old) });
      const report = await pollCards(rig.deps);
      expect(rig.publisher.events).toEqual([]);
      expect(report.unchanged).toBe(1);
      expect(rig.snapshots.data.get(key)).toEqual({ ...current, updatedAt: expect.any(String) });
      expect(JSON.stringify(rig.snapshots.data.get(key))).not.toContain("EMP-2001");
    },
  );

  it("stops at the deadline before walking further pages", async () => {
    const rig = makeRig();
    for (let i = 0; i < 6; i++) rig.provider.addCard();
    rig.provider.beforeCall = () => rig.clock.advance(1000);
    const report = await pollCards(rig.deps, { pageSize: 2, deadline: rig.clock.now() + 1500 });
    expect(report.outcome).toBe("deadline");
    expect(rig.provider.count("listErpCards")).toBe(2);
  });

  it("resumes a walk cut off by the time budget where it stopped, so every card is checked in turn", async () => {
    const rig = makeRig();
    for (let i = 0; i < 30; i++) rig.provider.addCard();
    rig.provider.beforeCall = () => rig.clock.advance(1000);
    const onePageCycle = async (): Promise<string> => (await pollCards(rig.deps, { pageSize: 10, deadline: rig.clock.now() + 500 })).outcome;
    const pagesRead = (): unknown[] => rig.provider.calls.map((c) => (c.op === "listErpCards" ? c.query.page : undefined));
    const outcomes = [await onePageCycle(), await onePageCycle(), await onePageCycle()];
    expect(outcomes).toEqual(["deadline", "deadline", "complete"]);
    expect(pagesRead()).toEqual([1, 2, 3]);
    expect([...rig.snapshots.data.keys()].filter((k) => /^card:CA/.test(k))).toHaveLength(30);

    const onPage3 = rig.provider.cards[25]!["id"] as string;
    rig.provider.changeCard(onPage3, { status: "Suspended" });
    for (let i = 0; i < 3; i++) await onePageCycle();
    expect(pagesRead()).toEqual([1, 2, 3, 1, 2, 3]);
    expect(rig.publisher.events.map((e) => [e.detailType, e.detail.subject.id])).toEqual([["card.suspended", onPage3]]);
  });

  it("reaches the oldest cards of a resumed walk while new cards keep arriving at the top of the list", async () => {
    const rig = makeRig();
    for (let i = 0; i < 30; i++) rig.provider.addCard();
    const oldest = rig.provider.cards.at(-1)!["id"] as string;
    await pollCards(rig.deps, { pageSize: 10 });
    rig.provider.changeCard(oldest, { status: "Suspended" });
    // A budget of two pages per cycle, and two pages' worth of new cards between two cycles (bulk virtual issuance).
    for (let cycle = 0; cycle < 12; cycle++) {
      for (let i = 0; i < 20; i++) rig.provider.addCard();
      await pollCards(rig.deps, { pageSize: 10, maxPages: 2 });
    }
    expect(rig.publisher.events.map((e) => [e.detailType, e.detail.subject.id])).toEqual([["card.suspended", oldest]]);
  });

  it("does not skip the cards a resumed walk finds pulled onto an earlier page by cards removed since", async () => {
    const rig = makeRig();
    for (let i = 0; i < 30; i++) rig.provider.addCard();
    await pollCards(rig.deps, { pageSize: 10 });
    expect((await pollCards(rig.deps, { pageSize: 10, maxPages: 2 })).outcome).toBe("page_limit");
    const firstNotReached = rig.provider.cards[20]!["id"] as string;
    rig.provider.changeCard(firstNotReached, { status: "Suspended" });
    rig.provider.cards.splice(0, 5);
    expect((await pollCards(rig.deps, { pageSize: 10 })).outcome).toBe("complete");
    expect(rig.publisher.events.map((e) => [e.detailType, e.detail.subject.id])).toEqual([["card.suspended", firstNotReached]]);
  });

  it("resumes a walk stopped by the page bound, and from the same card when the page size changes", async () => {
    const rig = makeRig({ emitCardCreated: true });
    for (let i = 0; i < 12; i++) rig.provider.addCard();
    expect((await pollCards(rig.deps, { pageSize: 4, maxPages: 2 })).outcome).toBe("page_limit");
    await pollCards(rig.deps, { pageSize: 2, maxPages: 1 });
    await pollCards(rig.deps, { pageSize: 2, maxPages: 1 });
    const queries = rig.provider.calls.map((c) => (c.op === "listErpCards" ? [c.query.page, c.query.page_size] : undefined));
    expect(queries).toEqual([[1, 4], [2, 4], [5, 2], [6, 2]]);
    const created = rig.publisher.events.map((e) => e.detail.subject.id);
    expect(created).toEqual(rig.provider.cards.map((c) => c["id"]));
  });

  it.each([
    ["400", "BadRequestError", 400],
    ["404", "NotFoundError", 404],
  ])("starts afresh when the provider refuses the page a saved cursor points to with a %s (cards removed since)", async (_, name, status) => {
    const rig = makeRig({ emitCardCreated: true });
    for (let i = 0; i < 6; i++) rig.provider.addCard();
    expect((await pollCards(rig.deps, { pageSize: 2, maxPages: 2 })).outcome).toBe("page_limit");
    rig.provider.cards.splice(2);
    rig.provider.beforeCall = (call) => {
      if (call.op === "listErpCards" && (call.query.page ?? 1) > 1) {
        throw Object.assign(new Error("page out of range"), { name, status });
      }
    };
    const report = await pollCards(rig.deps, { pageSize: 2 });
    expect(report.outcome).toBe("complete");
    const pages = rig.provider.calls.map((c) => (c.op === "listErpCards" ? c.query.page : undefined));
    expect(pages).toEqual([1, 2, 3, 1]);
    expect(rig.logger.lines.some((l) => l.message.includes("starting afresh"))).toBe(true);
    // An answer the walk handles is not a provider fault on the dashboard.
    expect(rig.metrics.sum("ProviderErrors")).toBe(0);
  });

  it("gives a walk that starts afresh from a cursor past the end its whole page bound: the refused call is not one of its pages", async () => {
    const rig = makeRig();
    for (let i = 0; i < 6; i++) rig.provider.addCard();
    expect((await pollCards(rig.deps, { pageSize: 2, maxPages: 2 })).outcome).toBe("page_limit");
    rig.provider.cards.splice(2);
    rig.provider.beforeCall = (call) => {
      if (call.op === "listErpCards" && (call.query.page ?? 1) > 1) {
        throw Object.assign(new Error("page out of range"), { name: "NotFoundError", status: 404 });
      }
    };
    const calls = rig.provider.calls.length;
    expect((await pollCards(rig.deps, { pageSize: 2, maxPages: 1 })).outcome).toBe("complete");
    expect(rig.provider.calls.slice(calls).map((c) => (c.op === "listErpCards" ? c.query.page : undefined))).toEqual([3, 1]);
  });

  it("walks every page after starting afresh from a cursor past the end: the shift the cursor was taken with no longer applies", async () => {
    const rig = makeRig();
    for (let i = 0; i < 11; i++) rig.provider.addCard();
    await pollCards(rig.deps, { pageSize: 2 });
    // Stopped with one card not reached: the cursor is at 10 of 11.
    expect((await pollCards(rig.deps, { pageSize: 2, maxPages: 5 })).outcome).toBe("page_limit");
    rig.provider.cards.splice(0, 2);
    const middle = rig.provider.cards[4]!["id"] as string;
    rig.provider.changeCard(middle, { status: "Suspended" });
    let refused = false;
    rig.provider.beforeCall = (call) => {
      if (call.op !== "listErpCards" || refused) return;
      refused = true;
      throw Object.assign(new Error("page out of range"), { name: "NotFoundError", status: 404 });
    };
    const calls = rig.provider.calls.length;
    expect((await pollCards(rig.deps, { pageSize: 2 })).outcome).toBe("complete");
    const pages = rig.provider.calls.slice(calls).map((c) => (c.op === "listErpCards" ? c.query.page : undefined));
    expect(pages).toEqual([6, 1, 2, 3, 4, 5]);
    expect(rig.publisher.events.map((e) => [e.detailType, e.detail.subject.id])).toEqual([["card.suspended", middle]]);
  });

  it("reaches every card after starting afresh from a cursor past the end though more cards were issued since than the cursor's total counted", async () => {
    const rig = makeRig({ emitCardCreated: true });
    for (let i = 0; i < 11; i++) rig.provider.addCard();
    await pollCards(rig.deps, { pageSize: 2 });
    // Stopped with one card not reached: the cursor is at 10 of 11.
    expect((await pollCards(rig.deps, { pageSize: 2, maxPages: 5 })).outcome).toBe("page_limit");
    rig.provider.cards.splice(0, 2);
    const issued: unknown[] = [];
    let refused = false;
    rig.provider.beforeCall = (call) => {
      if (call.op !== "listErpCards" || refused) return;
      refused = true;
      // Cards issued while the provider refused the page past the end: 17 listed, 11 when the cursor was taken.
      for (let i = 0; i < 8; i++) issued.push(rig.provider.addCard()["id"]);
      throw Object.assign(new Error("page out of range"), { name: "NotFoundError", status: 404 });
    };
    const events = rig.publisher.events.length;
    expect((await pollCards(rig.deps, { pageSize: 2 })).outcome).toBe("complete");
    expect(rig.publisher.events.slice(events).map((e) => e.detail.subject.id).toSorted()).toEqual(issued.toSorted());
  });

  it("fails the cycle at the 'read card walk cursor' step when the store refuses the cursor's read in time: an outage is no deadline", async () => {
    const rig = makeRig();
    rig.provider.addCard();
    const down = Object.assign(new Error("table unavailable"), { name: "ResourceNotFoundException" });
    rig.snapshots.getMany = () => Promise.reject(down);
    const failure = await pollCards(rig.deps).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(CycleAbortedError);
    expect(failure).toMatchObject({ step: "read card walk cursor", cause: down });
    expect(rig.provider.count("listErpCards")).toBe(0);
  });

  it("fails the cycle at the 'write card walk cursor' step when the store refuses the cursor's write in time: an outage is no deadline", async () => {
    const rig = makeRig();
    for (let i = 0; i < 3; i++) rig.provider.addCard();
    const putMany = rig.snapshots.putMany.bind(rig.snapshots);
    const down = Object.assign(new Error("table unavailable"), { name: "ResourceNotFoundException" });
    rig.snapshots.putMany = (snapshots) => (snapshots.some((s) => s.key === walkCursorKey("full")) ? Promise.reject(down) : putMany(snapshots));
    const failure = await pollCards(rig.deps, { pageSize: 2, maxPages: 1 }).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(CycleAbortedError);
    expect(failure).toMatchObject({ step: "write card walk cursor", cause: down });
    expect(rig.snapshots.data.has(walkCursorKey("full"))).toBe(false);
  });

  it("fails a fresh walk on a refused page like any other provider error", async () => {
    const rig = makeRig();
    for (let i = 0; i < 2; i++) rig.provider.addCard();
    rig.provider.beforeCall = () => {
      throw Object.assign(new Error("bad request"), { name: "InvalidRequestError", status: 400 });
    };
    expect(await pollCards(rig.deps).catch((e: unknown) => e)).toBeInstanceOf(CycleAbortedError);
    expect(rig.provider.count("listErpCards")).toBe(1);
    expect(rig.metrics.sum("ProviderErrors", { status_class: "4xx" })).toBe(1);
  });

  it("walks on past a full page whose answer carries no pagination block (optional in the provider port)", async () => {
    const rig = makeRig();
    const cards = Array.from({ length: 5 }, () => rig.provider.addCard());
    const list = rig.provider.listErpCards.bind(rig.provider);
    rig.provider.listErpCards = async (query) => {
      const { pagination: _dropped, ...page } = await list(query);
      return page;
    };
    const report = await pollCards(rig.deps, { pageSize: 2 });
    expect(report.outcome).toBe("complete");
    expect(report.pulled).toBe(5);
    // The short page 3 may be the provider's own maximum: only the empty page 4 ends a list without has_next.
    expect(rig.provider.calls.map((c) => (c.op === "listErpCards" ? c.query.page : undefined))).toEqual([1, 2, 3, 4]);
    expect([...rig.snapshots.data.keys()].filter((k) => !k.includes("~")).sort()).toEqual(cards.map((c) => `card:${c["id"] as string}`).sort());
  });

  it("keeps the cursors of the full walk and the suspended-only walk apart", async () => {
    const rig = makeRig();
    for (let i = 0; i < 4; i++) rig.provider.addCard({ status: "Suspended" });
    await pollCards(rig.deps, { pageSize: 2, maxPages: 1 });
    await pollCards(rig.deps, { mode: "suspended-only", pageSize: 2, maxPages: 1 });
    const pages = rig.provider.calls.map((c) => (c.op === "listErpCards" ? [c.query.status ?? "all", c.query.page] : undefined));
    expect(pages).toEqual([["all", 1], ["suspended", 1]]);
  });

  it("aborts with the report when the card list fails", async () => {
    const rig = makeRig();
    rig.provider.beforeCall = () => {
      throw Object.assign(new Error("rate limited"), { name: "RateLimitedError", status: 429 });
    };
    const error = await pollCards(rig.deps).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CycleAbortedError);
    expect(rig.metrics.sum("ProviderErrors", { status_class: "4xx" })).toBe(1);
  });

  it("fails on time when a rate-limited card list cannot finish before anything is pulled, and resumes at its cursor", async () => {
    const rig = makeRig();
    for (let i = 0; i < 4; i++) rig.provider.addCard();
    let limited = false;
    const deps = {
      ...rig.deps,
      provider: clientOverFake(rig.provider, rig.clock, (call) => (limited && call.op === "listErpCards" ? { status: 429, retryAfterSeconds: 55 } : undefined)),
    };
    await pollCards(deps, { pageSize: 2, maxPages: 1 });
    limited = true;
    const deadline = rig.clock.now() + 20_000;
    // A provider failing until the deadline is an outage, not a slow walk: ended `deadline`, no alarm would see it.
    await expect(pollCards(deps, { pageSize: 2, deadline })).rejects.toThrow(/list full cards failed \(RateLimitedError 429/);
    expect(rig.clock.now()).toBeLessThanOrEqual(deadline);
    expect(rig.metrics.sum("CycleErrors")).toBe(1);
    limited = false;
    expect((await pollCards(deps, { pageSize: 2 })).outcome).toBe("complete");
    const pages = rig.provider.calls.map((c) => (c.op === "listErpCards" ? c.query.page : undefined));
    expect(pages).toEqual([1, 2]);
  });

  it("fails a resumed walk whose first page the provider refuses for its page_size at the smallest size, rather than starting afresh: a size refused is no cursor past the end", async () => {
    const rig = makeRig();
    for (let i = 0; i < 3 * MIN_PAGE_SIZE; i++) rig.provider.addCard();
    expect((await pollCards(rig.deps, { pageSize: MIN_PAGE_SIZE, maxPages: 1 })).outcome).toBe("page_limit");
    rig.provider.beforeCall = (call) => {
      if (call.op === "listErpCards" && call.query.page > 1) {
        throw Object.assign(new Error("page_size out of range"), { name: "BadRequestError", status: 400, errors: [{ field: "page_size", code: "OUT_OF_RANGE", message: "too large" }] });
      }
    };
    const calls = rig.provider.calls.length;
    expect(await pollCards(rig.deps, { pageSize: MIN_PAGE_SIZE }).catch((e: unknown) => e)).toBeInstanceOf(CycleAbortedError);
    expect(rig.logger.lines.some((l) => l.message.includes("starting afresh"))).toBe(false);
    expect(rig.provider.calls.slice(calls).map((c) => (c.op === "listErpCards" ? [c.query.page, c.query.page_size] : undefined))).toEqual([[2, MIN_PAGE_SIZE]]);
  });

  it("fails a walk on a later page the provider refuses, rather than starting afresh: only a resumed walk's first page may lie past the end", async () => {
    const rig = makeRig();
    for (let i = 0; i < 6; i++) rig.provider.addCard();
    let refused = false;
    rig.provider.beforeCall = (call) => {
      if (call.op !== "listErpCards" || call.query.page !== 2 || refused) return;
      refused = true;
      throw Object.assign(new Error("page out of range"), { name: "NotFoundError", status: 404 });
    };
    expect(await pollCards(rig.deps, { pageSize: 2 }).catch((e: unknown) => e)).toBeInstanceOf(CycleAbortedError);
    expect(rig.logger.lines.some((l) => l.message.includes("starting afresh"))).toBe(false);
    expect(rig.provider.calls.map((c) => (c.op === "listErpCards" ? c.query.page : undefined))).toEqual([1, 2]);
  });

  it("ends `deadline` when a later page's list cannot finish in time, keeping the pages walked: the next walk goes on from there", async () => {
    const rig = makeRig();
    for (let i = 0; i < 6; i++) rig.provider.addCard();
    let lists = 0;
    const deps = {
      ...rig.deps,
      provider: clientOverFake(rig.provider, rig.clock, (call) => (call.op === "listErpCards" && ++lists === 2 ? { status: 429, retryAfterSeconds: 55 } : undefined)),
    };
    const report = await pollCards(deps, { pageSize: 2, deadline: rig.clock.now() + 20_000 });
    expect(report.outcome).toBe("deadline");
    expect(rig.snapshots.data.get(walkCursorKey("full"))?.object).toEqual({ next_offset: 2, total_records: 6 });
    rig.provider.calls.length = 0;
    expect((await pollCards(deps, { pageSize: 2 })).outcome).toBe("complete");
    expect(rig.provider.calls.map((c) => (c.op === "listErpCards" ? c.query.page : undefined))).toEqual([2, 3]);
  });

  it("steps its page size down when the provider refuses it, and completes", async () => {
    const rig = makeRig({ maxPageSize: 50 });
    for (let i = 0; i < 3; i++) rig.provider.addCard();
    expect((await pollCards(rig.deps)).outcome).toBe("complete");
    const sizes = rig.provider.calls.map((c) => (c.op === "listErpCards" ? c.query.page_size : undefined));
    expect(sizes).toEqual([100, 50]);
    expect(rig.snapshots.data.size).toBe(3);
    // A size it steps down from is an answer the walk handles, not a provider fault.
    expect(rig.metrics.sum("ProviderErrors")).toBe(0);
  });

  it("takes a token endpoint's 400 on a resumed walk for what it is, not for a cursor past the end", async () => {
    const rig = makeRig({ emitCardCreated: true });
    for (let i = 0; i < 6; i++) rig.provider.addCard();
    expect((await pollCards(rig.deps, { pageSize: 2, maxPages: 2 })).outcome).toBe("page_limit");
    rig.provider.beforeCall = () => {
      throw new ReauthorizationRequiredError("refresh token rejected", { status: 400, method: "POST", path: "/oauth2/token" });
    };
    await expect(pollCards(rig.deps, { pageSize: 2 })).rejects.toBeInstanceOf(ReauthorizationNeededError);
    expect(rig.logger.lines.some((l) => l.message.includes("starting afresh"))).toBe(false);
    // The walk still resumes where it stopped.
    rig.provider.beforeCall = () => undefined;
    const before = rig.provider.calls.length;
    await pollCards(rig.deps, { pageSize: 2 });
    expect(rig.provider.calls.slice(before).map((c) => (c.op === "listErpCards" ? c.query.page : c.op))).toEqual([3]);
  });

  it("takes a refused page size on a resumed walk for what it is, not for a cursor past the end", async () => {
    const rig = makeRig({ maxPageSize: 10 });
    for (let i = 0; i < 30; i++) rig.provider.addCard();
    await pollCards(rig.deps, { pageSize: 10, maxPages: 2 });
    rig.provider.calls.length = 0;
    const report = await pollCards(rig.deps, { pageSize: 20 });
    expect(report.outcome).toBe("complete");
    const queries = rig.provider.calls.map((c) => (c.op === "listErpCards" ? [c.query.page, c.query.page_size] : undefined));
    // Offset 20 at size 20 is page 2; at size 10 it is page 3: the walk goes on where it stopped.
    expect(queries).toEqual([[2, 20], [3, 10]]);
    expect(rig.logger.lines.some((l) => l.message.includes("starting afresh"))).toBe(false);
  });

  it("treats statuses differing only in letter case as the same status", () => {
    expect(cardEventType("Active", "active")).toBe("card.updated");
    expect(cardEventType("active", "Suspended")).toBe("card.suspended");
    expect(cardEventType("SUSPENDED", "Active")).toBe("card.status_changed");
    expect(cardEventType("Active", "suspended")).toBe("card.suspended");
  });

  it("treats blanks around a status as no part of it: a padded suspension is still card.suspended", () => {
    expect(cardEventType("Active", "Suspended ")).toBe("card.suspended");
    expect(cardEventType("Active", "\tsuspended\n")).toBe("card.suspended");
    expect(cardEventType(" Active", "Active")).toBe("card.updated");
    expect(cardEventType("Suspended ", "Active")).toBe("card.status_changed");
  });

  it("publishes nothing for a status that changes only its letter case, and leaves it out of other changes", async () => {
    const rig = makeRig();
    const card = rig.provider.addCard();
    await pollCards(rig.deps);
    rig.provider.changeCard(card["id"] as string, { status: "active" });
    await pollCards(rig.deps);
    expect(rig.publisher.events).toEqual([]);
    expect(rig.snapshots.data.get(`card:${card["id"] as string}`)?.object["status"]).toBe("active");
    rig.provider.changeCard(card["id"] as string, { status: "ACTIVE", card_nickname: "Travel" });
    await pollCards(rig.deps);
    expect(rig.publisher.events.map((e) => [e.detailType, e.detail.data.changes])).toEqual([
      ["card.updated", [{ path: "/card_nickname", before: "Card 1", after: "Travel" }]],
    ]);
  });

  it("orders one card's events by their publish time, even when a later change carries an older provider time", async () => {
    const rig = makeRig();
    const card = rig.provider.addCard();
    const id = card["id"] as string;
    await pollCards(rig.deps);
    rig.provider.changeCard(id, { status: "Suspended" });
    await pollCards(rig.deps); // detected now: occurred_at is the detection time
    const suspendedAt = rig.clock.now();
    rig.clock.advance(5 * 60_000);
    rig.provider.changeCard(id, { status: "Terminated", terminated_at: new Date(suspendedAt - 30_000).toISOString() });
    await pollCards(rig.deps);
    const [suspended, terminated] = rig.publisher.events;
    expect(suspended?.detailType).toBe("card.suspended");
    expect(terminated?.detailType).toBe("card.status_changed");
    // The later state's business time is older; its publish time is not.
    expect(Date.parse(terminated!.detail.occurred_at)).toBeLessThan(Date.parse(suspended!.detail.occurred_at));
    expect(Date.parse(terminated!.time)).toBeGreaterThan(Date.parse(suspended!.time));
  });

  it("re-sends the same card event after a crash between publish and snapshot write, at the card's own time", async () => {
    const rig = makeRig({ emitCardCreated: true });
    const card = rig.provider.addCard({ created_at: "2025-01-10T08:00:00.000Z" });
    const id = card["id"] as string;
    const putMany = rig.snapshots.putMany.bind(rig.snapshots);
    const crashOnce = (): void => {
      let crashed = false;
      rig.deps.snapshots.putMany = async (snapshots) => {
        if (crashed) return putMany(snapshots);
        crashed = true;
        throw new Error("crash after publish");
      };
    };
    const walkCrashWalk = async (): Promise<void> => {
      crashOnce();
      await expect(pollCards(rig.deps)).rejects.toBeInstanceOf(CycleAbortedError);
      rig.clock.advance(60_000);
      await pollCards(rig.deps);
    };
    await walkCrashWalk();
    rig.provider.changeCard(id, { status: "Terminated", terminated_at: "2025-01-12T09:30:00.000Z" });
    await walkCrashWalk();
    const [created, resentCreated, terminated, resentTerminated] = rig.publisher.events;
    expect(resentCreated?.detail).toEqual(created?.detail);
    expect(created?.detail.occurred_at).toBe("2025-01-10T08:00:00.000Z");
    expect(resentTerminated?.detail).toEqual(terminated?.detail);
    expect(terminated?.detail.occurred_at).toBe("2025-01-12T09:30:00.000Z");
    expect(terminated?.detailType).toBe("card.status_changed");
  });

  it("times card.created at the card's created_at even when the provider also sends a later updated_at, and a change at updated_at", async () => {
    const rig = makeRig({ emitCardCreated: true });
    const card = rig.provider.addCard({ created_at: "2025-01-10T08:00:00.000Z", updated_at: "2025-03-02T10:00:00.000Z" });
    await pollCards(rig.deps);
    rig.provider.changeCard(card["id"] as string, { card_nickname: "Travel", updated_at: "2025-03-05T11:00:00.000Z" });
    await pollCards(rig.deps);
    const [created, updated] = rig.publisher.events;
    expect(created?.detailType).toBe("card.created");
    expect(created?.detail.occurred_at).toBe("2025-01-10T08:00:00.000Z");
    expect(updated?.detailType).toBe("card.updated");
    expect(updated?.detail.occurred_at).toBe("2025-03-05T11:00:00.000Z");
  });

  it("times card.created at the card's created_at before its issued_at, and at its issued_at without a usable created_at", async () => {
    const rig = makeRig({ emitCardCreated: true });
    const both = rig.provider.addCard({ issued_at: "2025-01-09T08:00:00.000Z", created_at: "2025-01-10T08:00:00.000Z" });
    const issued = rig.provider.addCard({ issued_at: "2025-01-09T08:00:00.000Z", created_at: "not a time" });
    await pollCards(rig.deps);
    const at = new Map(rig.publisher.events.map((e) => [e.detail.subject.id, e.detail.occurred_at]));
    expect(at.get(both["id"] as string)).toBe("2025-01-10T08:00:00.000Z");
    expect(at.get(issued["id"] as string)).toBe("2025-01-09T08:00:00.000Z");
  });

  it("times card.created at the card's updated_at when it carries neither created_at nor issued_at: a time of its own, the same in a re-send", async () => {
    const rig = makeRig({ emitCardCreated: true });
    rig.provider.addCard({ created_at: undefined, issued_at: undefined, updated_at: "2025-03-02T10:00:00.000Z" });
    rig.clock.ms = Date.parse("2025-04-01T00:00:00.000Z");
    await pollCards(rig.deps);
    expect(rig.publisher.events.map((e) => [e.detailType, e.detail.occurred_at])).toEqual([["card.created", "2025-03-02T10:00:00.000Z"]]);
  });

  it.each([
    {
      what: "a card change at its modified_date when the provider sends one and no updated_at",
      listed: { modified_date: "2025-01-11T07:00:00.000Z" },
      change: { status: "Suspended", modified_date: "2025-01-14T16:45:00.000Z" },
      type: "card.suspended",
      at: "2025-01-14T16:45:00.000Z",
    },
    {
      // Date.parse takes "Travel 2025" for 2025-01-01.
      what: "a nickname change at detection, even when the new nickname reads as a date (only a changed `*_at` member is a change time)",
      listed: {},
      change: { card_nickname: "Travel 2025" },
      detectedAt: "2025-01-16T12:00:00.000Z",
      type: "card.updated",
      at: "2025-01-16T12:00:00.000Z",
    },
    {
      what: "a change of several `*_at` members at the latest of them",
      listed: { activated_at: "2025-01-11T07:00:00.000Z" },
      change: { status: "Terminated", activated_at: "2025-01-12T08:00:00.000Z", terminated_at: "2025-01-14T16:45:00.000Z" },
      type: "card.status_changed",
      at: "2025-01-14T16:45:00.000Z",
    },
    {
      // Changes come in key order: the last `*_at` of them (issued_at) is the earlier time here.
      what: "a change of several `*_at` members at the latest of them, not the last in key order",
      listed: { activated_at: "2025-01-11T07:00:00.000Z", issued_at: "2025-01-10T07:00:00.000Z" },
      change: { card_nickname: "Replaced", issued_at: "2025-01-12T08:00:00.000Z", activated_at: "2025-01-14T16:45:00.000Z" },
      type: "card.updated",
      at: "2025-01-14T16:45:00.000Z",
    },
    {
      what: "a change at detection when only a nested member named `*_at` moved (not a time of the card's own)",
      listed: { segments: [{ id: "S1", updated_at: "2025-01-11T07:00:00.000Z" }] },
      change: { card_nickname: "Travel", segments: [{ id: "S1", updated_at: "2025-01-14T16:45:00.000Z" }] },
      detectedAt: "2025-01-16T12:00:00.000Z",
      type: "card.updated",
      at: "2025-01-16T12:00:00.000Z",
    },
  ])("times $what", async ({ listed, change, detectedAt, type, at }) => {
    const rig = makeRig();
    const card = rig.provider.addCard(listed);
    await pollCards(rig.deps);
    if (detectedAt !== undefined) rig.clock.ms = Date.parse(detectedAt);
    rig.provider.changeCard(card["id"] as string, change);
    await pollCards(rig.deps);
    const [changed] = rig.publisher.events;
    expect(changed?.detailType).toBe(type);
    expect(changed?.detail.occurred_at).toBe(at);
  });

  it("times a card's next event after its previous one, on a clock that ticks while a walk runs and then steps back", async () => {
    const rig = makeRig();
    // Every reading moves the clock on, as a real one does between building an event and storing its snapshot.
    rig.clock.now = () => (rig.clock.ms += 1);
    const card = rig.provider.addCard();
    const id = card["id"] as string;
    await pollCards(rig.deps);
    rig.provider.changeCard(id, { status: "Suspended" });
    await pollCards(rig.deps);
    rig.clock.ms -= 60_000;
    rig.provider.changeCard(id, { card_nickname: "Travel" });
    await pollCards(rig.deps);
    const [suspended, updated] = rig.publisher.events;
    expect([suspended?.detailType, updated?.detailType]).toEqual(["card.suspended", "card.updated"]);
    expect(Date.parse(updated!.time)).toBeGreaterThan(Date.parse(suspended!.time));
  });

  it("waits for the next second after a walk whose snapshot write failed after its publish", async () => {
    const rig = makeRig();
    rig.clock.ms = Date.parse("2025-01-15T10:00:00.250Z");
    const card = rig.provider.addCard();
    await pollCards(rig.deps);
    expect(rig.clock.now()).toBe(Date.parse("2025-01-15T10:00:00.250Z"));
    rig.provider.changeCard(card["id"] as string, { status: "Suspended" });
    rig.deps.snapshots.putMany = () => Promise.reject(new Error("snapshot write refused"));
    await expect(pollCards(rig.deps)).rejects.toBeInstanceOf(CycleAbortedError);
    expect(rig.clock.now()).toBe(Date.parse("2025-01-15T10:00:01.600Z"));
  });

  it("waits for the next second after a walk in which one card's event failed, though the page's other snapshots were stored", async () => {
    const rig = makeRig();
    rig.clock.ms = Date.parse("2025-01-15T10:00:00.250Z");
    const [failing, taken] = [rig.provider.addCard(), rig.provider.addCard()];
    await pollCards(rig.deps);
    for (const card of [failing, taken]) rig.provider.changeCard(card["id"] as string, { status: "Suspended" });
    rig.publisher.reject = (e) => (e.detail.subject.id === failing["id"] ? { reason: "ThrottlingException", retryable: true } : undefined);
    expect((await pollCards(rig.deps)).outcome).toBe("complete");
    expect(rig.publisher.events.map((e) => e.detail.subject.id)).toEqual([taken["id"]]);
    // The failed card's snapshot is not stored: the next walk may publish it again under the same sequence.
    expect(rig.clock.now()).toBe(Date.parse("2025-01-15T10:00:01.600Z"));
  });

  it("re-sends a suspension without a card timestamp with the same id and data, timed at its detection", async () => {
    const rig = makeRig();
    const card = rig.provider.addCard();
    await pollCards(rig.deps);
    rig.provider.changeCard(card["id"] as string, { status: "Suspended" });
    const putMany = rig.snapshots.putMany.bind(rig.snapshots);
    rig.deps.snapshots.putMany = () => Promise.reject(new Error("crash after publish"));
    await expect(pollCards(rig.deps)).rejects.toBeInstanceOf(CycleAbortedError);
    rig.deps.snapshots.putMany = putMany;
    rig.clock.advance(60_000);
    const detectedAgainAt = rig.clock.now();
    await pollCards(rig.deps);
    const [first, resent] = rig.publisher.events;
    expect(resent?.detail.id).toBe(first?.detail.id);
    expect(resent?.detail.data).toEqual(first?.detail.data);
    expect(Date.parse(resent!.detail.occurred_at)).toBe(detectedAgainAt);
    expect(Date.parse(resent!.detail.occurred_at)).toBeGreaterThan(Date.parse(first!.detail.occurred_at));
  });
});

describe("pollCards with card details", () => {
  const limits = (amount: number) => ({ enabled: true, amount, frequency: "MONTHLY", limit_currency: "AED", number_of_purchases: null });

  /** A rig reading card details, with `count` cards already walked (snapshots of their detail view). */
  async function walked(count: number) {
    const rig = makeRig({}, { cardDetails: true });
    for (let i = 0; i < count; i++) rig.provider.addCard({ purchase_limits: limits(500) });
    await pollCards(rig.deps, { pageSize: 10 });
    return rig;
  }

  it("masks the configuration it keeps from a snapshot of an earlier PII mode when a card's read fails: no cleartext in the event or the new snapshot", async () => {
    // A member the spec does not show, inside a configuration object: personal at any depth (docs/events.md, PII modes).
    const email = "ann.holder@example.com";
    const rig = makeRig({}, { cardDetails: true });
    const id = rig.provider.addCard({ auto_top_up_configuration: { trigger: 20, email } })["id"] as string;
    await pollCards(rig.deps);
    // The tenant leaves `full`; the card's next read fails, so the walk takes it as listed with its configuration as last read.
    const redacting = { ...rig.deps, pii: { mode: "redact" as const } };
    rig.provider.changeCard(id, { card_nickname: "Travel" });
    rig.provider.beforeCall = (call) => {
      if (call.op === "readErpCard") throw Object.assign(new Error("503"), { name: "ProviderError", status: 503 });
    };
    await pollCards(redacting);
    const [event] = rig.publisher.events;
    expect(event?.detail.data.changes).toEqual([{ path: "/card_nickname", before: "Card 1", after: "Travel" }]);
    expect(event?.detail.data.object["auto_top_up_configuration"]).toEqual({ trigger: 20, email: "[redacted]" });
    expect(JSON.stringify(rig.snapshots.data.get(`card:${id}`))).not.toContain(email);
  });

  it("reads each card's detail and publishes card.updated for a change the list does not show (a limit amount)", async () => {
    const rig = await walked(3);
    expect(rig.provider.count("readErpCard")).toBe(3);
    const id = rig.provider.cards[1]!["id"] as string;
    rig.provider.changeCard(id, { purchase_limits: limits(900) });
    await pollCards(rig.deps, { pageSize: 10 });
    expect(rig.publisher.events.map((e) => [e.detailType, e.detail.subject.id, e.detail.data.changes])).toEqual([
      ["card.updated", id, [{ path: "/purchase_limits/amount", before: 500, after: 900 }]],
    ]);
    expect(rig.snapshots.data.get(`card:${id}`)?.object["purchase_limits"]).toEqual(limits(900));
  });

  it("reads the details of the suspended list too: a suspension comes with the limit changed alongside it, and the configuration stays in the snapshot", async () => {
    const rig = await walked(2);
    const id = rig.provider.cards[0]!["id"] as string;
    rig.provider.changeCard(id, { status: "Suspended", purchase_limits: limits(0) });
    await pollCards(rig.deps, { mode: "suspended-only", pageSize: 10 });
    expect(rig.publisher.events.map((e) => [e.detailType, e.detail.subject.id, e.detail.data.changes])).toEqual([
      [
        "card.suspended",
        id,
        [
          { path: "/purchase_limits/amount", before: 500, after: 0 },
          { path: "/status", before: "Active", after: "Suspended" },
        ],
      ],
    ]);
    expect(rig.snapshots.data.get(`card:${id}`)?.object["purchase_limits"]).toEqual(limits(0));
    // The full walk after it finds nothing new: the fast path left no list view for it to take as a change.
    await pollCards(rig.deps, { pageSize: 10 });
    expect(rig.publisher.events).toHaveLength(1);
  });

  it("reads no detail of a card the fast path lists whose snapshot already records it suspended, case and blanks aside; a card newly suspended, or never seen, is read as before", async () => {
    const rig = await walked(6);
    const ids = rig.provider.cards.map((c) => c["id"] as string);
    const [blank, ...rest] = ids.slice(0, 5);
    // Recorded suspended by the full walk ("Suspended " is a suspension), listed now as "SUSPENDED": no status move.
    rig.provider.changeCard(blank!, { status: "Suspended " });
    for (const id of rest) rig.provider.changeCard(id, { status: "Suspended" });
    await pollCards(rig.deps, { pageSize: 10 });
    rig.provider.changeCard(blank!, { status: "SUSPENDED" });
    expect(rig.publisher.ofType("card.suspended")).toHaveLength(5);
    const reads = (): number => rig.provider.count("readErpCard");
    const pulled = (): number => rig.metrics.sum("CardsPulled");

    // Ticks a minute apart: the 5 suspended cards are listed every tick and read on none.
    const snapshotsBefore = structuredClone([...rig.snapshots.data.entries()]);
    // A limit changed on a suspended card is the full walk's to publish: the fast path does not diff, nor store, it.
    rig.provider.changeCard(rest[0]!, { purchase_limits: limits(0) });
    for (let tick = 0; tick < 3; tick++) {
      const [readsBefore, pulledBefore] = [reads(), pulled()];
      // Each left out is handled, found unchanged.
      expect(await pollCards(rig.deps, { mode: "suspended-only", pageSize: 10 })).toMatchObject({ outcome: "complete", handled: 5, unchanged: 5 });
      expect(reads() - readsBefore).toBe(0);
      expect(pulled() - pulledBefore).toBe(5);
    }
    expect(rig.publisher.events).toHaveLength(5);
    expect([...rig.snapshots.data.entries()]).toEqual(snapshotsBefore);
    // Not read because there was nothing to read for, not because a read failed.
    expect(rig.metrics.points.filter((p) => p.name === "FastPathCardDetailsUnread")).toEqual([]);

    // A card newly suspended is read, and published as before: its limit changed alongside comes with it.
    const fresh = ids[5]!;
    rig.provider.changeCard(fresh, { status: "Suspended", purchase_limits: limits(10) });
    // A card the bridge never saw, issued suspended: read and recorded (silently, as card.created is off).
    const unseen = rig.provider.addCard({ status: "Suspended", purchase_limits: limits(20) })["id"] as string;
    const readsBefore = reads();
    const getManyBefore = rig.snapshots.getManyCalls;
    expect(await pollCards(rig.deps, { mode: "suspended-only", pageSize: 10 })).toMatchObject({ handled: 7, unchanged: 5 });
    // The walk cursor's read, and the page's snapshots once: read before the detail reads, handed on to its diff.
    expect(rig.snapshots.getManyCalls - getManyBefore).toBe(2);
    expect(rig.provider.calls.slice(-(reads() - readsBefore)).map((c) => (c.op === "readErpCard" ? c.id : c.op)).sort()).toEqual([fresh, unseen].sort());
    expect(rig.publisher.events.slice(5).map((e) => [e.detailType, e.detail.subject.id, e.detail.data.changes])).toEqual([
      [
        "card.suspended",
        fresh,
        [
          { path: "/purchase_limits/amount", before: 500, after: 10 },
          { path: "/status", before: "Active", after: "Suspended" },
        ],
      ],
    ]);
    expect(rig.snapshots.data.get(`card:${fresh}`)?.object["purchase_limits"]).toEqual(limits(10));
    expect(rig.snapshots.data.get(`card:${unseen}`)?.object["purchase_limits"]).toEqual(limits(20));

    // The full walk reads every card and publishes the suspended card's limit change the fast path left to it.
    await pollCards(rig.deps, { pageSize: 10 });
    expect(rig.publisher.events.slice(6).map((e) => [e.detailType, e.detail.subject.id, e.detail.data.changes])).toEqual([
      ["card.updated", rest[0], [{ path: "/purchase_limits/amount", before: 500, after: 0 }]],
    ]);
  });

  it("quarantines an invalid card the fast path lists, reading no detail for it, while leaving out those recorded suspended", async () => {
    const rig = await walked(2);
    const [recorded, fresh] = rig.provider.cards.map((c) => c["id"] as string);
    rig.provider.changeCard(recorded!, { status: "Suspended" });
    await pollCards(rig.deps, { pageSize: 10 });
    rig.provider.changeCard(fresh!, { status: "Suspended" });
    rig.provider.cards.unshift({ status: "Suspended" });
    const reads = rig.provider.count("readErpCard");
    expect(await pollCards(rig.deps, { mode: "suspended-only", pageSize: 10 })).toMatchObject({ outcome: "complete", quarantined: 1 });
    expect(rig.provider.count("readErpCard") - reads).toBe(1);
    expect([...rig.quarantine.records.values()].map((r) => r.reason)).toEqual(["validation: id: missing or not a non-empty string"]);
    expect(rig.publisher.events.map((e) => [e.detailType, e.detail.subject.id])).toEqual([
      ["card.suspended", recorded],
      ["card.suspended", fresh],
    ]);
  });

  /**
   * Five cards walked, those at the list positions `recorded` suspended and recorded so by a full walk, the one at
   * `suspendedAfter` suspended after it; the fast path then walks pages of 2, and the newest card (first in the list) is
   * suspended between its first two list reads, shifting the last card of page 1 onto page 2.
   */
  async function fastPathShifted(recorded: readonly number[], suspendedAfter?: number) {
    const rig = await walked(5);
    const ids = rig.provider.cards.map((c) => c["id"] as string);
    for (const at of recorded) rig.provider.changeCard(ids[at]!, { status: "Suspended" });
    await pollCards(rig.deps, { pageSize: 10 });
    if (suspendedAfter !== undefined) rig.provider.changeCard(ids[suspendedAfter]!, { status: "Suspended" });
    const published = rig.publisher.events.length;
    let lists = 0;
    rig.provider.beforeCall = (call) => {
      if (call.op === "listErpCards" && ++lists === 2) rig.provider.changeCard(ids[0]!, { status: "Suspended" });
    };
    const report = await pollCards(rig.deps, { mode: "suspended-only", pageSize: 2 });
    return { report, ids, events: rig.publisher.events.slice(published) };
  }

  it("counts a card it leaves out as recorded suspended once, though a shift lists it again on the next page", async () => {
    const { report, events } = await fastPathShifted([1, 2, 3, 4]);
    // Listed: 1 2 | 2 3 | 4. Four cards, each found unchanged once.
    expect(report).toMatchObject({ outcome: "complete", pulled: 5, handled: 4, unchanged: 4 });
    expect(events).toEqual([]);
  });

  it("counts a card it took on one page once when a shift lists it again on the next, recorded suspended by then", async () => {
    // Listed: 1 2 | 2 3 | 4, card 2 newly suspended: read and published on page 1, left out on page 2.
    const { report, ids, events } = await fastPathShifted([1, 3, 4], 2);
    expect(events.map((e) => [e.detailType, e.detail.subject.id])).toEqual([["card.suspended", ids[2]]]);
    expect(report).toMatchObject({ outcome: "complete", pulled: 5, handled: 4, unchanged: 3 });
  });

  it.each([
    ["its copy's read fails", 2],
    ["its first read fails", 1],
  ])("counts a card a shift lists again on the next page once, in the report and in CardDetailsUnread, when %s", async (_, failingRead) => {
    const rig = await walked(5);
    const lastOfPage1 = rig.provider.cards[1]!["id"] as string;
    let lists = 0;
    let reads = 0;
    rig.provider.beforeCall = (call) => {
      // A card issued before page 2 lists the last card of page 1 again.
      if (call.op === "listErpCards" && ++lists === 2) rig.provider.addCard({ purchase_limits: limits(500) });
      if (call.op === "readErpCard" && call.id === lastOfPage1 && ++reads === failingRead) {
        throw Object.assign(new Error("503"), { name: "ProviderError", status: 503 });
      }
    };
    const report = await pollCards(rig.deps, { pageSize: 2 });
    // Listed: 0 1 | 1 2 | 3 4 of the five cards walked before, none changed.
    expect(report).toMatchObject({ outcome: "complete", pulled: 6, handled: 5, unchanged: 5 });
    expect(rig.metrics.sum("CardDetailsUnread")).toBe(failingRead === 1 ? 1 : 0);
    expect(rig.publisher.events).toEqual([]);
  });

  it("counts the fast path's unread details apart (FastPathCardDetailsUnread), not in the full walk's CardDetailsUnread, whose alarm means a walk could not read them", async () => {
    const rig = await walked(3);
    const [failing] = rig.provider.cards.map((c) => c["id"] as string);
    rig.provider.changeCard(failing!, { status: "Suspended" });
    rig.provider.beforeCall = (call) => {
      if (call.op === "readErpCard" && call.id === failing) throw Object.assign(new Error("503"), { name: "ProviderError", status: 503 });
    };
    // Fast ticks between two full walks (e.g. every minute beside an hourly walk): the first reads the newly suspended
    // card and fails; the suspension, taken as listed, is recorded, so the ticks after it do not read the card again.
    const reads = rig.provider.count("readErpCard");
    for (let tick = 0; tick < 5; tick++) expect((await pollCards(rig.deps, { mode: "suspended-only", pageSize: 10 })).outcome).toBe("complete");
    expect(rig.provider.count("readErpCard") - reads).toBe(1);
    expect(rig.publisher.events.map((e) => [e.detailType, e.detail.subject.id])).toEqual([["card.suspended", failing]]);
    expect(rig.metrics.points.filter((p) => p.name === "CardDetailsUnread")).toEqual([]);
    expect(rig.metrics.sum("FastPathCardDetailsUnread")).toBe(1);

    // The full walk reads it too, and counts it once, under the alarm's metric.
    await pollCards(rig.deps, { pageSize: 10 });
    expect(rig.metrics.sum("CardDetailsUnread")).toBe(1);
    expect(rig.metrics.sum("FastPathCardDetailsUnread")).toBe(1);
  });

  it("publishes nothing when card details are turned on or off (the snapshot takes the other view), but a limit set from null is a change", async () => {
    const rig = makeRig();
    for (let i = 0; i < 2; i++) rig.provider.addCard({ purchase_limits: limits(500) });
    await pollCards(rig.deps);
    const [first, second] = rig.provider.cards.map((c) => c["id"] as string);
    expect(rig.snapshots.data.get(`card:${first}`)?.object).not.toHaveProperty("purchase_limits");

    const on = { ...rig.deps, cardDetails: true };
    await pollCards(on);
    expect(rig.publisher.events).toEqual([]);
    expect(rig.snapshots.data.get(`card:${first}`)?.object["purchase_limits"]).toEqual(limits(500));

    rig.provider.changeCard(second!, { purchase_limits: null });
    await pollCards(on);
    rig.provider.changeCard(second!, { purchase_limits: limits(700) });
    await pollCards(on);
    expect(rig.publisher.events.map((e) => [e.detail.subject.id, e.detail.data.changes?.map((c) => [c.path, c.before])])).toEqual([
      [second, [["/purchase_limits", limits(500)]]],
      [second, [["/purchase_limits", null]]],
    ]);

    await pollCards(rig.deps);
    expect(rig.publisher.events).toHaveLength(2);
    expect(rig.snapshots.data.get(`card:${first}`)?.object).not.toHaveProperty("purchase_limits");
  });

  it("takes a card its read does not find (404) as listed, and one whose read is invalid or another card's too, quarantining that read", async () => {
    const rig = await walked(4);
    const [gone, malformed, swapped, fine] = rig.provider.cards.map((c) => c["id"] as string);
    for (const id of [gone, malformed, swapped, fine]) rig.provider.changeCard(id!, { status: "Suspended" });
    const read = rig.provider.readErpCard.bind(rig.provider);
    rig.provider.readErpCard = async (id) => {
      if (id === gone) throw Object.assign(new Error("404"), { name: "NotFoundError", status: 404 });
      if (id === malformed) return { data: [], invalid: [{ index: 0, raw: { id, status: 7 }, issues: [{ path: "status", message: "expected string" }] }] };
      if (id === swapped) return read(fine!);
      return read(id);
    };
    const report = await pollCards(rig.deps, { pageSize: 10 });
    expect(report.outcome).toBe("complete");
    // The list's view of a card not found, or read as nothing the bridge can take, is the latest there is: its
    // suspension is published, limits kept.
    expect(rig.publisher.events.map((e) => [e.detailType, e.detail.subject.id]).sort()).toEqual(
      [
        ["card.suspended", gone],
        ["card.suspended", malformed],
        ["card.suspended", swapped],
        ["card.suspended", fine],
      ].sort(),
    );
    expect(report).toMatchObject({ handled: 4, quarantined: 2 });
    expect([...rig.quarantine.records.values()].map((r) => [r.entityId, r.reason]).sort()).toEqual(
      [
        [malformed, "validation: status: expected string"],
        // Under the card whose read is broken, not the one its answer named (ops quote it to the provider).
        [swapped, "validation: id: the card read answered another card"],
      ].sort(),
    );
    for (const id of [gone, malformed, swapped]) {
      expect(rig.snapshots.data.get(`card:${id}`)?.object["status"]).toBe("Suspended");
      expect(rig.snapshots.data.get(`card:${id}`)?.object["purchase_limits"]).toEqual(limits(500));
    }
    expect(rig.metrics.sum("CardDetailsUnread")).toBe(3);
    expect(rig.metrics.sum("ProviderErrors")).toBe(0);
  });

  it("publishes the suspension the list shows of a card whose detail read fails its schema, quarantines that read, and publishes the limit once a read is valid", async () => {
    const rig = await walked(2);
    const [malformed, fine] = rig.provider.cards.map((c) => c["id"] as string);
    rig.provider.changeCard(malformed!, { status: "Suspended" });
    // The provider's single read of the card carries a configuration object the schema refuses; its list entry is fine.
    const read = rig.provider.readErpCard.bind(rig.provider);
    rig.provider.readErpCard = async (id) => {
      if (id !== malformed) return read(id);
      const raw = { ...((await read(id)).data[0] as Record<string, unknown>), purchase_limits: { ...limits(900), amount: "n/a" } };
      return { data: [], invalid: [{ index: 0, raw, issues: [{ path: "purchase_limits.amount", message: "expected number" }] }] };
    };
    const report = await pollCards(rig.deps, { pageSize: 10 });
    expect(report.outcome).toBe("complete");
    expect(rig.publisher.events.map((e) => [e.detailType, e.detail.subject.id, e.detail.data.changes?.map((c) => c.path)])).toEqual([
      ["card.suspended", malformed, ["/status"]],
    ]);
    expect([...rig.quarantine.records.values()].map((r) => [r.entityId, r.reason])).toEqual([[malformed, "validation: purchase_limits.amount: expected number"]]);
    // Its limits stay as last read, so the first valid read finds their change.
    expect(rig.snapshots.data.get(`card:${malformed}`)?.object["purchase_limits"]).toEqual(limits(500));
    expect(rig.metrics.sum("CardDetailsUnread")).toBe(1);

    rig.provider.readErpCard = read;
    rig.provider.changeCard(malformed!, { purchase_limits: limits(900) });
    await pollCards(rig.deps, { pageSize: 10 });
    expect(rig.publisher.events.slice(1).map((e) => [e.detailType, e.detail.subject.id, e.detail.data.changes])).toEqual([
      ["card.updated", malformed, [{ path: "/purchase_limits/amount", before: 500, after: 900 }]],
    ]);
    expect(rig.snapshots.data.has(`card:${fine}`)).toBe(true);
  });

  it("takes a card whose detail read keeps failing as listed: its suspension is published, its limits kept, and the walk goes on", async () => {
    const rig = await walked(3);
    const [failing, other] = rig.provider.cards.map((c) => c["id"] as string);
    rig.provider.changeCard(failing!, { status: "Suspended", purchase_limits: limits(900) });
    rig.provider.changeCard(other!, { purchase_limits: limits(700) });
    const unavailable = Object.assign(new Error("503"), { name: "ProviderError", status: 503 });
    rig.provider.beforeCall = (call) => {
      if (call.op === "readErpCard" && call.id === failing) throw unavailable;
    };
    const report = await pollCards(rig.deps, { pageSize: 10 });
    expect(report.outcome).toBe("complete");
    expect(rig.publisher.events.map((e) => [e.detailType, e.detail.subject.id, e.detail.data.changes?.map((c) => c.path)])).toEqual([
      ["card.suspended", failing, ["/status"]],
      ["card.updated", other, ["/purchase_limits/amount"]],
    ]);
    // The limits the failed read could not show stay as last read, so the next read finds their change.
    expect(rig.snapshots.data.get(`card:${failing}`)?.object["purchase_limits"]).toEqual(limits(500));
    expect(rig.logger.lines.some((l) => l.level === "warn" && l.message.startsWith("card detail read failed") && l.attributes?.["status"] === 503)).toBe(true);
    expect(rig.metrics.sum("ProviderErrors")).toBeGreaterThan(0);
    expect(rig.metrics.sum("CardDetailsUnread")).toBe(1);

    rig.provider.beforeCall = () => undefined;
    await pollCards(rig.deps, { pageSize: 10 });
    expect(rig.publisher.events.slice(2).map((e) => [e.detailType, e.detail.subject.id, e.detail.data.changes])).toEqual([
      ["card.updated", failing, [{ path: "/purchase_limits/amount", before: 500, after: 900 }]],
    ]);
  });

  it("publishes the configuration of a card first seen while its read failed once a read works: a limit change made meanwhile is not lost", async () => {
    for (const emitCardCreated of [false, true]) {
      const rig = makeRig({ emitCardCreated }, { cardDetails: true });
      const id = rig.provider.addCard({ purchase_limits: limits(500) })["id"] as string;
      // The card is new to the bridge and its first read fails (a 503 past the retries; a 404 is taken as listed too).
      rig.provider.beforeCall = (call) => {
        if (call.op === "readErpCard" && call.id === id) throw Object.assign(new Error("503"), { name: "ProviderError", status: 503 });
      };
      await pollCards(rig.deps, { pageSize: 10 });
      expect(rig.publisher.events.map((e) => e.detailType)).toEqual(emitCardCreated ? ["card.created"] : []);

      // Its spend limit changes before the next walk, whose read works.
      rig.provider.changeCard(id, { purchase_limits: limits(900) });
      rig.provider.beforeCall = () => undefined;
      await pollCards(rig.deps, { pageSize: 10 });
      const updated = rig.publisher.events.filter((e) => e.detailType === "card.updated");
      expect(updated.map((e) => [e.detail.subject.id, e.detail.data.changes])).toEqual([[id, [{ path: "/purchase_limits", before: null, after: limits(900) }]]]);
      expect(updated[0]!.detail.data.object["purchase_limits"]).toEqual(limits(900));
      expect(parseEventDetail(updated[0]!.detail).success).toBe(true);

      // Turning details off later is still a view change: nothing published.
      await pollCards({ ...rig.deps, cardDetails: false }, { pageSize: 10 });
      expect(rig.publisher.events.filter((e) => e.detailType === "card.updated")).toHaveLength(1);
    }
  });

  it("publishes the configuration of a card whose reads failed since details were turned on once a read works: a limit change made meanwhile is not lost", async () => {
    // The card was walked without details: its snapshot is of the list's view.
    const rig = makeRig();
    const id = rig.provider.addCard({ purchase_limits: limits(500) })["id"] as string;
    await pollCards(rig.deps, { pageSize: 10 });
    expect(rig.snapshots.data.get(`card:${id}`)?.object).not.toHaveProperty("purchase_limits");

    // Details are turned on, and the card's reads fail (the endpoint rate-limits the new burst of reads past the
    // client's retries): the walk takes it as listed.
    const on = { ...rig.deps, cardDetails: true };
    rig.provider.beforeCall = (call) => {
      if (call.op === "readErpCard") throw Object.assign(new Error("429"), { name: "RateLimitedError", status: 429 });
    };
    await pollCards(on, { pageSize: 10 });
    expect(rig.publisher.events).toEqual([]);

    // Its spend limit changes, details still on, before the first walk whose read works.
    rig.provider.changeCard(id, { purchase_limits: limits(900) });
    rig.provider.beforeCall = () => undefined;
    await pollCards(on, { pageSize: 10 });
    expect(rig.publisher.events.map((e) => [e.detailType, e.detail.subject.id, e.detail.data.changes])).toEqual([
      ["card.updated", id, [{ path: "/purchase_limits", before: null, after: limits(900) }]],
    ]);
    expect(parseEventDetail(rig.publisher.events[0]!.detail).success).toBe(true);

    // Turning details on with reads that work stays a view change, and so does turning them off.
    const other = rig.provider.addCard({ purchase_limits: limits(300) })["id"] as string;
    await pollCards(rig.deps, { pageSize: 10 });
    await pollCards(on, { pageSize: 10 });
    await pollCards(rig.deps, { pageSize: 10 });
    expect(rig.publisher.events).toHaveLength(1);
    expect(rig.snapshots.data.get(`card:${other}`)?.object).not.toHaveProperty("purchase_limits");
  });

  it("stops reading details for the rest of a walk once the first reads of a page all failed, and reads them again next walk", async () => {
    const rig = await walked(25);
    const reads = rig.provider.count("readErpCard");
    rig.provider.beforeCall = (call) => {
      if (call.op === "readErpCard") throw Object.assign(new Error("500"), { name: "ProviderError", status: 500 });
    };
    const last = rig.provider.cards.at(-1)!["id"] as string;
    rig.provider.changeCard(last, { status: "Suspended" });
    const report = await pollCards(rig.deps, { pageSize: 10 });
    expect(report.outcome).toBe("complete");
    // The first page's first four reads (as many as run at once), then none: the walk still sees the suspension on the
    // last page.
    expect(rig.provider.count("readErpCard") - reads).toBe(SINGLE_READ_CONCURRENCY);
    expect(rig.publisher.events.map((e) => [e.detailType, e.detail.subject.id])).toEqual([["card.suspended", last]]);
    expect(rig.snapshots.data.get(`card:${last}`)?.object["purchase_limits"]).toEqual(limits(500));
    // Every card of the walk went unread, the ones never asked for included.
    expect(rig.metrics.sum("CardDetailsUnread")).toBe(25);
    rig.provider.beforeCall = () => undefined;
    await pollCards(rig.deps, { pageSize: 10 });
    expect(rig.provider.count("readErpCard") - reads).toBe(SINGLE_READ_CONCURRENCY + 25);
    expect(rig.metrics.sum("CardDetailsUnread")).toBe(25);
  });

  // A page of one card: its one read failing is every read of the page.
  it.each([2, 1])("ends details for the rest of a walk once every read of a page smaller than the reads in flight failed (pages of %i)", async (pageSize) => {
    const rig = await walked(6);
    const reads = rig.provider.count("readErpCard");
    rig.provider.beforeCall = (call) => {
      if (call.op === "readErpCard") throw Object.assign(new Error("503"), { name: "ProviderError", status: 503 });
    };
    expect((await pollCards(rig.deps, { pageSize })).outcome).toBe("complete");
    expect(rig.provider.count("readErpCard") - reads).toBe(pageSize);
    expect(rig.metrics.sum("CardDetailsUnread")).toBe(6);
    expect(rig.logger.lines.filter((l) => l.message.startsWith("card detail reads of a page all failed"))).toHaveLength(1);
  });

  it("goes on reading details after a page whose cards all went (404): a removed card is no fault of the endpoint", async () => {
    const rig = await walked(4);
    const [first, second, , last] = rig.provider.cards.map((c) => c["id"] as string);
    rig.provider.beforeCall = (call) => {
      if (call.op === "readErpCard" && (call.id === first || call.id === second)) {
        throw Object.assign(new Error("404"), { name: "NotFoundError", status: 404 });
      }
    };
    rig.provider.changeCard(last!, { purchase_limits: limits(900) });
    expect((await pollCards(rig.deps, { pageSize: 2 })).outcome).toBe("complete");
    expect(rig.publisher.events.map((e) => [e.detailType, e.detail.subject.id, e.detail.data.changes])).toEqual([
      ["card.updated", last, [{ path: "/purchase_limits/amount", before: 500, after: 900 }]],
    ]);
  });

  it("starts a page's reads at a random card, so cards whose reads keep failing at its head do not hold back the others' limit changes", async () => {
    const rig = await walked(14);
    const ids = rig.provider.cards.map((c) => c["id"] as string);
    // The page's first four cards (as many reads as run at once) keep failing, every walk.
    const failing = new Set(ids.slice(0, SINGLE_READ_CONCURRENCY));
    rig.provider.beforeCall = (call) => {
      if (call.op === "readErpCard" && failing.has(call.id)) throw Object.assign(new Error("500"), { name: "ProviderError", status: 500 });
    };
    const changed = ids.at(-1)!;
    rig.provider.changeCard(changed, { purchase_limits: limits(800) });
    // Reads starting at the head: four failures and none answered end details for the walk; the change waits.
    await pollCards(rig.deps, { pageSize: 20, random: () => 0 });
    expect(rig.publisher.events).toEqual([]);
    // Starting elsewhere, reads answer: the change goes out although the same four cards still fail.
    await pollCards(rig.deps, { pageSize: 20, random: () => 0.5 });
    expect(rig.publisher.events.map((e) => [e.detailType, e.detail.subject.id, e.detail.data.changes])).toEqual([
      ["card.updated", changed, [{ path: "/purchase_limits/amount", before: 500, after: 800 }]],
    ]);
    // Every card but the failing ones was read (page order: see the next test).
    expect(rig.metrics.sum("CardDetailsUnread")).toBe(14 + SINGLE_READ_CONCURRENCY);
  });

  it("publishes a page's events in list order whichever card its reads start at", async () => {
    for (const start of [1, 2, 3]) {
      const rig = await walked(5);
      const ids = rig.provider.cards.map((c) => c["id"] as string);
      for (const id of ids) rig.provider.changeCard(id, { purchase_limits: limits(900) });
      const reads = rig.provider.count("readErpCard");
      await pollCards(rig.deps, { pageSize: 10, random: () => start / ids.length });
      // Read from the drawn card, wrapping round; published in the page's order all the same.
      const read = rig.provider.calls.slice(-ids.length).map((call) => (call.op === "readErpCard" ? call.id : undefined));
      expect(rig.provider.count("readErpCard") - reads).toBe(ids.length);
      expect(read).toEqual([...ids.slice(start), ...ids.slice(0, start)]);
      expect(rig.publisher.events.map((e) => e.detail.subject.id)).toEqual(ids);
    }
  });

  it("keeps a page's events in list order when its random source answers outside [0, 1)", async () => {
    for (const drawn of [-0.3, 1, 1.7, Number.NaN]) {
      const rig = await walked(5);
      const ids = rig.provider.cards.map((c) => c["id"] as string);
      for (const id of ids) rig.provider.changeCard(id, { purchase_limits: limits(900) });
      await pollCards(rig.deps, { pageSize: 10, random: () => drawn });
      expect(rig.publisher.events.map((e) => e.detail.subject.id)).toEqual(ids);
    }
  });

  it("still ends the cycle when a detail read fails for the token (a revoked family is never taken as a card fault)", async () => {
    const rig = await walked(2);
    rig.provider.beforeCall = (call) => {
      if (call.op === "readErpCard") throw Object.assign(new Error("revoked"), { name: "ReauthorizationRequiredError" });
    };
    await expect(pollCards(rig.deps, { pageSize: 10 })).rejects.toThrow();
    expect(rig.publisher.events).toEqual([]);
  });

  it("still ends the cycle when a detail read cannot get a token at all (TokenUnavailableError is no card fault either)", async () => {
    const rig = await walked(2);
    const [suspended] = rig.provider.cards.map((c) => c["id"] as string);
    rig.provider.changeCard(suspended!, { status: "Suspended" });
    rig.provider.beforeCall = (call) => {
      if (call.op === "readErpCard") throw new TokenUnavailableError('token refresh lock "acme" still held by another process after 30000 ms');
    };
    await expect(pollCards(rig.deps, { pageSize: 10 })).rejects.toThrow(CycleAbortedError);
    expect(rig.publisher.events).toEqual([]);
    expect(rig.snapshots.data.get(`card:${suspended}`)?.object["status"]).toBe("Active");
    expect(rig.logger.lines.some((l) => l.message.startsWith("card detail read failed"))).toBe(false);
  });

  it("ends the cycle with ReauthorizationNeededError when a detail read meets a revoked token family, also when another read in flight ran out of time first", async () => {
    const rig = await walked(4);
    const deadline = rig.clock.now() + 60_000;
    let reads = 0;
    rig.provider.beforeCall = async (call) => {
      if (call.op !== "readErpCard") return;
      const n = ++reads;
      // The first read cannot finish by the deadline; the second, answering a turn later, meets the revoked family.
      if (n === 1) throw Object.assign(new Error("no time left"), { name: "DeadlineExceededError", deadline });
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (n === 2) throw new ReauthorizationRequiredError("refresh token rejected", { status: 400, method: "POST", path: "/oauth2/token" });
    };
    await expect(pollCards(rig.deps, { pageSize: 10, deadline, deadlineGraceMs: 0, random: () => 0 })).rejects.toBeInstanceOf(ReauthorizationNeededError);
    expect(rig.metrics.sum("TokenFamilyRevoked")).toBe(1);
    expect(rig.publisher.events).toEqual([]);
  });

  it("ends the cycle at the detail read step when the token endpoint answers 404 to a detail read, counted as a provider error, not taken for a card gone", async () => {
    const rig = await walked(1);
    rig.provider.beforeCall = (call) => {
      // A base URL that is no OAuth server's: its token endpoint is not found.
      if (call.op === "readErpCard") throw new NotFoundError("no token endpoint", { status: 404, method: "POST", path: "/oauth2/token" });
    };
    const failure = await pollCards(rig.deps, { pageSize: 10, random: () => 0 }).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(CycleAbortedError);
    expect(failure).toMatchObject({ step: "read card detail", status: 404 });
    expect(rig.metrics.points.filter((p) => p.name === "ProviderErrors")).toEqual([{ name: "ProviderErrors", value: 1, unit: "Count", dimensions: { status_class: "4xx" } }]);
    expect(rig.logger.lines.some((l) => l.message.startsWith("card listed but not found"))).toBe(false);
  });

  it("ends a fast path cycle at the 'read snapshots' step when the page's snapshots cannot be read before its detail reads", async () => {
    const rig = await walked(2);
    const [suspended] = rig.provider.cards.map((c) => c["id"] as string);
    rig.provider.changeCard(suspended!, { status: "Suspended" });
    const getMany = rig.snapshots.getMany.bind(rig.snapshots);
    const down = Object.assign(new Error("table unavailable"), { name: "ProvisionedThroughputExceededException" });
    // The walk cursor's read answers; the page's snapshots do not.
    rig.snapshots.getMany = (keys) => (keys.includes(`card:${suspended!}`) ? Promise.reject(down) : getMany(keys));
    const failure = await pollCards(rig.deps, { mode: "suspended-only", pageSize: 10 }).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(CycleAbortedError);
    expect(failure).toMatchObject({ step: "read snapshots", cause: down });
    expect(rig.provider.count("readErpCard")).toBe(2);
  });

  it("does not hold the walk at the deadline when the detail endpoint is down and its reads take their retries: a few failed reads end details", async () => {
    const rig = await walked(40);
    const suspended = rig.provider.cards[0]!["id"] as string;
    rig.provider.changeCard(suspended, { status: "Suspended" });
    // The detail endpoint answers 503 with a Retry-After of 10 s to every read: each read fails after the client's
    // five attempts, 40 s of waits. A page of 40 such reads, four at a time, takes 400 s: more than a 5-minute poller.
    const provider = clientOverFake(rig.provider, rig.clock, (call) => (call.op === "readErpCard" ? { status: 503, retryAfterSeconds: 10 } : undefined));
    const budget = 270_000;
    const report = await pollCards({ ...rig.deps, provider }, { deadline: rig.clock.now() + budget });
    expect(report.outcome).toBe("complete");
    expect(rig.publisher.events.map((e) => [e.detailType, e.detail.subject.id])).toEqual([["card.suspended", suspended]]);
    expect(rig.snapshots.data.get(`card:${suspended}`)?.object["purchase_limits"]).toEqual(limits(500));
  });

  it("stops at the deadline among a page's detail reads without writing any of it, and walks that page next cycle", async () => {
    const rig = await walked(6);
    for (const card of rig.provider.cards) rig.provider.changeCard(card["id"] as string, { purchase_limits: limits(800) });
    const deadline = rig.clock.now() + 60_000;
    let reads = 0;
    // The third read cannot finish by the deadline: the client refuses to send it, as QashioClient does.
    rig.provider.beforeCall = (call) => {
      if (call.op === "readErpCard" && ++reads === 3) throw Object.assign(new Error("no time left"), { name: "DeadlineExceededError", deadline });
    };
    const stopped = await pollCards(rig.deps, { pageSize: 10, deadline, deadlineGraceMs: 0 });
    expect(stopped.outcome).toBe("deadline");
    expect(rig.publisher.events).toEqual([]);
    expect(rig.snapshots.data.get(`card:${rig.provider.cards[0]!["id"] as string}`)?.object["purchase_limits"]).toEqual(limits(500));
    rig.provider.beforeCall = () => undefined;
    expect((await pollCards(rig.deps, { pageSize: 10 })).outcome).toBe("complete");
    expect(rig.publisher.events).toHaveLength(6);
  });

  it("takes the cards of a cycle's first page whose reads the deadline left unstarted as listed: the page is published and stored, the walk moves on", async () => {
    const rig = await walked(14);
    for (const card of rig.provider.cards) rig.provider.changeCard(card["id"] as string, { status: "Suspended", purchase_limits: limits(800) });
    const deadline = rig.clock.now() + 1_000;
    let reads = 0;
    // The deadline passes while the first reads are in flight: no cycle would read this page whole, it would stay on it.
    rig.provider.beforeCall = (call) => {
      if (call.op === "readErpCard" && ++reads === SINGLE_READ_CONCURRENCY) rig.clock.advance(2_000);
    };
    const stopped = await pollCards(rig.deps, { pageSize: 10, deadline, random: () => 0 });
    expect(stopped.outcome).toBe("deadline");
    // The reads in flight finished; the page's other cards were not read.
    expect(reads).toBe(SINGLE_READ_CONCURRENCY);
    expect(rig.metrics.sum("CardDetailsUnread")).toBe(10 - SINGLE_READ_CONCURRENCY);
    const firstPage = rig.provider.cards.slice(0, 10).map((card) => card["id"] as string);
    expect(rig.publisher.events.map((e) => [e.detailType, e.detail.subject.id])).toEqual(firstPage.map((id) => ["card.suspended", id]));
    // Read cards carry their new limit; cards taken as listed keep the one last read, for a later walk to publish.
    const limitOf = (id: string) => (rig.snapshots.data.get(`card:${id}`)?.object["purchase_limits"] as { amount: number }).amount;
    expect(firstPage.map(limitOf)).toEqual([...Array<number>(SINGLE_READ_CONCURRENCY).fill(800), ...Array<number>(10 - SINGLE_READ_CONCURRENCY).fill(500)]);
    expect(rig.snapshots.data.get(walkCursorKey("full"))?.object).toMatchObject({ next_offset: 10 });
    rig.provider.beforeCall = () => undefined;
    expect((await pollCards(rig.deps, { pageSize: 10 })).outcome).toBe("complete");
    expect(new Set(rig.publisher.events.filter((e) => e.detailType === "card.suspended").map((e) => e.detail.subject.id))).toEqual(
      new Set(rig.provider.cards.map((card) => card["id"] as string)),
    );
  });

  it("reads a first page listed only after the deadline whole in the calls' grace, as a later page: the cycle had no time to try it", async () => {
    const rig = await walked(14);
    for (const card of rig.provider.cards) rig.provider.changeCard(card["id"] as string, { purchase_limits: limits(800) });
    const deadline = rig.clock.now() + 1_000;
    rig.provider.beforeCall = (call) => {
      if (call.op === "listErpCards") rig.clock.advance(2_000);
    };
    const stopped = await pollCards(rig.deps, { pageSize: 10, deadline, random: () => 0 });
    expect(stopped.outcome).toBe("deadline");
    expect(rig.provider.count("readErpCard")).toBe(14 + 10);
    expect(rig.metrics.sum("CardDetailsUnread")).toBe(0);
    expect(rig.publisher.events).toHaveLength(10);
  });

  it("takes no card as listed for a stop request among the first page's reads: a stop says nothing of the time a page needs", async () => {
    const rig = await walked(14);
    const stop = new AbortController();
    let reads = 0;
    rig.provider.beforeCall = (call) => {
      if (call.op === "readErpCard" && ++reads === SINGLE_READ_CONCURRENCY) stop.abort();
    };
    // The fake provider answers reads after the stop, as a client whose attempts were under way would.
    await pollCards(rig.deps, { pageSize: 10, deadline: rig.clock.now() + 60_000, signal: stop.signal, random: () => 0 });
    expect(rig.metrics.sum("CardDetailsUnread")).toBe(0);
    expect(rig.logger.lines.some((l) => l.message.startsWith("card detail reads not started"))).toBe(false);
  });

  it("reads a later page whole when the deadline passes among its reads: a walk longer than its cycle counts no card unread", async () => {
    const rig = await walked(24);
    for (const card of rig.provider.cards) rig.provider.changeCard(card["id"] as string, { purchase_limits: limits(800) });
    const deadline = rig.clock.now() + 1_000;
    let reads = 0;
    // The deadline passes as the second page's reads start: they have the calls' grace, and the next cycle would start on it.
    rig.provider.beforeCall = (call) => {
      if (call.op === "readErpCard" && ++reads === 11) rig.clock.advance(2_000);
    };
    const stopped = await pollCards(rig.deps, { pageSize: 10, deadline, random: () => 0 });
    expect(stopped.outcome).toBe("deadline");
    expect(reads).toBe(20);
    expect(rig.metrics.sum("CardDetailsUnread")).toBe(0);
    expect(rig.publisher.events).toHaveLength(20);
    expect(rig.snapshots.data.get(walkCursorKey("full"))?.object).toMatchObject({ next_offset: 20 });
  });
});

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

  it("ends `deadline` when the calls' deadline passed before the cursor write of a walk it completed, leaving the cursor as it was", async () => {
    const rig = makeRig();
    for (let i = 0; i < 4; i++) rig.provider.addCard();
    await pollCards(rig.deps, { pageSize: 2 });
    expect((await pollCards(rig.deps, { pageSize: 2, maxPages: 1 })).outcome).toBe("page_limit");
    const cursor = rig.snapshots.data.get(walkCursorKey("full"))?.object;
    expect(cursor).toEqual({ next_offset: 2, total_records: 4 });
    const putMany = rig.snapshots.putMany.bind(rig.snapshots);
    rig.snapshots.putMany = async (snapshots) => {
      await putMany(snapshots);
      // A container frozen after the last page's snapshots were stored, thawed past its lease.
      rig.clock.advance(10 * 60_000);
    };
    const id = rig.provider.cards[2]!["id"] as string;
    rig.provider.changeCard(id, { status: "Suspended" });
    expect((await pollCards(rig.deps, { pageSize: 2, deadline: rig.clock.now() + 60_000 })).outcome).toBe("deadline");
    expect(rig.publisher.events.map((e) => [e.detailType, e.detail.subject.id])).toEqual([["card.suspended", id]]);
    expect(rig.snapshots.data.get(walkCursorKey("full"))?.object).toEqual(cursor);
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
