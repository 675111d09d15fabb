/**
 * Property test of the card walk while cards are issued under it and leave it: bursts of new cards before each list
 * call push the cards not yet reached by more than the walk remembers (RecentIds: its last few pages), cards removed
 * from the list pull later ones up (onto a page walked already, or above a cut walk's cursor), cards change status and
 * limits mid-walk, and walks are cut by their deadline (a container frozen mid-page included) or by crashes, then
 * resumed from their cursor.
 */
import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import { pollCards, walkCursorKey } from "../../shared/bridge/cards.js";
import { CycleAbortedError } from "../../shared/bridge/errors.js";
import { RECENT_BATCHES, RecentIds } from "../../shared/bridge/recent-ids.js";
import type { BridgeEvent, Snapshot } from "../../shared/bridge/ports.js";
import { CrashPoint, crashingPorts, SimulatedCrash } from "./faults.js";
import { makeRig } from "./fakes.js";
import { canonical, expectOrderingRuleHolds } from "./invariants.js";

/** A card change made before list call `call` of a walk: always a new nickname, so no change undoes an earlier one. */
interface CardChange {
  readonly call: number;
  readonly pick: number;
  readonly status: string;
  readonly limit: number | null;
}

/**
 * Cards that leave the list before list call `call` of a walk: `count` in a row from the card at `pick` (modulo the
 * list). The spec says nothing of how a card leaves it; the engine must not skip the cards that pulls up.
 */
interface CardRemoval {
  readonly call: number;
  readonly pick: number;
  readonly count: number;
}

interface Walk {
  readonly pageSize: number;
  /** Cards issued before each list call of the walk, in turn (none once used up, so the walk can end). */
  readonly bursts: readonly number[];
  readonly changes: readonly CardChange[];
  readonly removals: readonly CardRemoval[];
  readonly readFrom: number;
  readonly stop:
    | null
    | { readonly kind: "crash"; readonly at: number; readonly after: boolean }
    /** The deadline falls after `calls` list calls; `freeze`: the container is frozen past its grace there (at that list call, or after a publish). */
    | { readonly kind: "deadline"; readonly calls: number; readonly freeze: "none" | "list" | "publish" };
}

const changeArb: fc.Arbitrary<CardChange> = fc.record({
  call: fc.nat({ max: 10 }),
  pick: fc.nat(),
  status: fc.constantFrom("Active", "Suspended", "Inactive"),
  limit: fc.option(fc.constantFrom(100, 200, 300), { nil: null }),
});

const removalArb: fc.Arbitrary<CardRemoval> = fc.record({ call: fc.nat({ max: 10 }), pick: fc.nat(), count: fc.integer({ min: 1, max: 3 }) });

const walkArb: fc.Arbitrary<Walk> = fc.record({
  pageSize: fc.integer({ min: 1, max: 3 }),
  bursts: fc.array(fc.integer({ min: 0, max: 10 }), { maxLength: 12 }),
  changes: fc.array(changeArb, { maxLength: 4 }),
  removals: fc.array(removalArb, { maxLength: 3 }),
  readFrom: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
  stop: fc.oneof(
    fc.constant(null),
    fc.record({ kind: fc.constant("crash" as const), at: fc.nat({ max: 10 }), after: fc.boolean() }),
    fc.record({ kind: fc.constant("deadline" as const), calls: fc.integer({ min: 1, max: 10 }), freeze: fc.constantFrom("none" as const, "list" as const, "publish" as const) }),
  ),
});

/** What one change of a card is to consumers: the same change re-sent must keep its id, and two must not share one. */
function changeOf(event: BridgeEvent): string {
  const { subject, type, data } = event.detail;
  return canonical([subject.id, subject.sequence, type, data.object, data.changes ?? null]);
}

describe("card walk with cards issued and removed under it", () => {
  it("delivers every card's final status and limits, one id per change, every state a complete walk read, no card a round of resumed walks skipped, within bounded list calls and bounded memory", async () => {
    /** RecentIds sizes after each page, and the page size of the walk they were taken in. */
    let remembered: { size: number; pageSize: number }[] = [];
    let pageSize = 1;
    const add = RecentIds.prototype.add;
    const spy = vi.spyOn(RecentIds.prototype, "add").mockImplementation(function (this: RecentIds, ...args) {
      add.apply(this, args);
      remembered.push({ size: this.size, pageSize });
    });
    let cut = 0;
    let pushed = 0;
    /** List calls that asked for an earlier page than the walk's last: removals pulled a card not reached onto it. */
    let stepsBack = 0;
    /** Card states checked as read by a complete walk, and as unchanged through a round of resumed walks. */
    let readsChecked = 0;
    let resumedRoundCards = 0;
    try {
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 0, max: 8 }), fc.boolean(), fc.array(walkArb, { minLength: 1, maxLength: 8 }), async (initial, emitCardCreated, walks) => {
          const rig = makeRig({ emitCardCreated }, { cardDetails: true });
          let version = 0;
          const issue = (): void => {
            rig.provider.addCard({ card_nickname: `v${++version}` });
          };
          const change = (c: CardChange): void => {
            const { cards } = rig.provider;
            if (cards.length === 0) return;
            const limits = c.limit === null ? {} : { purchase_limits: { enabled: true, amount: c.limit, frequency: "MONTHLY", limit_currency: "AED", number_of_purchases: null } };
            rig.provider.changeCard(cards[c.pick % cards.length]?.["id"] as string, { card_nickname: `v${++version}`, status: c.status, ...limits });
          };
          /** Removes cards from the list; returns how many went. */
          const remove = (r: CardRemoval): number => {
            const { cards } = rig.provider;
            return cards.length === 0 ? 0 : cards.splice(r.pick % cards.length, r.count).length;
          };
          for (let i = 0; i < initial; i++) issue();

          /** Every card snapshot the store was given, as `key \u0000 object`. */
          const stored = new Set<string>();
          const putMany = rig.snapshots.putMany.bind(rig.snapshots);
          rig.snapshots.putMany = async (snapshots: readonly Snapshot[]) => {
            for (const { key, object } of snapshots) stored.add(`${key}\u0000${canonical(object)}`);
            return putMany(snapshots);
          };
          /** The card states the provider's detail reads served in the walk under way, as `key \u0000 object`. */
          let served: string[] = [];
          const readErpCard = rig.provider.readErpCard.bind(rig.provider);
          rig.provider.readErpCard = async (id: string) => {
            const page = await readErpCard(id);
            for (const card of page.data) served.push(`card:${id}\u0000${canonical(card)}`);
            return page;
          };
          const statesNow = (): Map<string, string> => new Map(rig.provider.cards.map((card) => [card["id"] as string, canonical(card)]));
          /**
           * A round: the walks from one that starts at the top of the list (no cursor) to the first that completes, cut and
           * resumed from the cursor in between; `round` holds every card's state as the round began, `walks` counts them.
           */
          let round: { states: Map<string, string>; walks: number } | undefined;
          const startWalk = (): void => {
            served = [];
            const offset = rig.snapshots.data.get(walkCursorKey("full"))?.object["next_offset"];
            if (round === undefined || !(typeof offset === "number" && offset > 0)) round = { states: statesNow(), walks: 0 };
            round.walks += 1;
          };
          /**
           * After a walk: one that completed stored every state its reads served (a move it saw and skipped would be lost
           * for good once undone), and ended a round that reached every card: one that kept its state through the whole
           * round (a card the resumed walks skipped would not) has that state in its snapshot.
           */
          const endWalk = (complete: boolean): void => {
            if (!complete) return;
            expect(served.filter((state) => !stored.has(state))).toEqual([]);
            readsChecked += served.length;
            const now = statesNow();
            const { states, walks } = round ?? { states: new Map<string, string>(), walks: 0 };
            const unchanged = [...states].filter(([id, state]) => now.get(id) === state);
            expect(unchanged.filter(([id, state]) => canonical(rig.snapshots.data.get(`card:${id}`)?.object) !== state).map(([id]) => id)).toEqual([]);
            // And consumers have it: from the card's last event, or (none) from its silent first sighting.
            const unpublished = unchanged.filter(([id, state]) => {
              const last = rig.publisher.events.findLast((e) => e.detail.subject.id === id);
              return last === undefined ? emitCardCreated : canonical(last.detail.data.object) !== state;
            });
            expect(unpublished.map(([id]) => id)).toEqual([]);
            if (walks > 1) resumedRoundCards += unchanged.length;
            round = undefined;
          };
          const publish = rig.publisher.publish.bind(rig.publisher);
          let freezeAfterPublish = false;
          rig.publisher.publish = async (events, options) => {
            const result = await publish(events, options);
            if (freezeAfterPublish) rig.clock.advance(10 * 60_000);
            return result;
          };

          /** Runs one walk, checking that it ends within a bound of list calls. */
          const walk = async (w: Walk): Promise<void> => {
            rig.clock.advance(60_000);
            pageSize = w.pageSize;
            let lists = 0;
            /** The most cards the list held at a list call, and how many left it, during this walk. */
            let most = rig.provider.cards.length;
            let removed = 0;
            let lastPage = 0;
            const stop = w.stop;
            const deadline = stop?.kind === "deadline" ? rig.clock.now() + stop.calls * 1000 - 500 : undefined;
            rig.provider.beforeCall = (call) => {
              if (call.op !== "listErpCards") return;
              if (lists > 1000) throw new Error("the walk does not end");
              for (const c of w.changes) if (c.call === lists) change(c);
              for (const r of w.removals) if (r.call === lists) removed += remove(r);
              const burst = w.bursts[lists] ?? 0;
              for (let i = 0; i < burst; i++) issue();
              most = Math.max(most, rig.provider.cards.length);
              if (call.query.page < lastPage) stepsBack += 1;
              lastPage = call.query.page;
              lists += 1;
              // Each list call takes a second; a freeze outlasts the deadline's grace.
              rig.clock.advance(1000);
              if (stop?.kind === "deadline" && stop.freeze === "list" && lists === stop.calls) rig.clock.advance(10 * 60_000);
              if (stop?.kind === "deadline" && stop.freeze === "publish" && lists === stop.calls) freezeAfterPublish = true;
            };
            const crash = new CrashPoint(stop?.kind === "crash" ? stop : undefined);
            const { snapshots, publisher, quarantine } = crashingPorts(rig.deps, crash);
            startWalk();
            try {
              const report = await pollCards(
                { ...rig.deps, snapshots, publisher, quarantine },
                { pageSize: w.pageSize, random: () => w.readFrom, ...(deadline === undefined ? {} : { deadline }) },
              );
              if (report.outcome !== "complete") cut += 1;
              endWalk(report.outcome === "complete");
            } catch (error) {
              if (!(error instanceof CycleAbortedError && error.cause instanceof SimulatedCrash)) throw error;
              cut += 1;
              endWalk(false);
            } finally {
              rig.provider.beforeCall = () => undefined;
              freezeAfterPublish = false;
            }
            // No walk loops: it ends within the list's pages at its longest, plus the re-read of a resumed first page,
            // plus, for each card removed, at most a page back and the page it was walking again.
            expect(lists).toBeLessThanOrEqual(Math.ceil(most / w.pageSize) + 3 + 2 * removed);
            if (w.bursts.some((b) => b > RECENT_BATCHES * w.pageSize)) pushed += 1;
          };

          for (const w of walks) await walk(w);
          // Enough walks: until one completes, then one from the top (a resumed walk leaves cards issued above its cursor
          // to the next walk).
          const clean: Walk = { pageSize: 3, bursts: [], changes: [], removals: [], readFrom: 0, stop: null };
          pageSize = 3;
          for (let i = 0; i < 20; i++) {
            startWalk();
            const report = await pollCards(rig.deps, { pageSize: 3, random: () => 0 });
            endWalk(report.outcome === "complete");
            rig.clock.advance(60_000);
            if (report.outcome === "complete") break;
          }
          await walk(clean);

          const finals = new Map(rig.provider.cards.map((card) => [card["id"] as string, canonical(card)]));
          const events = rig.publisher.events;
          for (const [id, state] of finals) {
            // What the bridge holds of each card is its final state, and consumers have it: from its last event, or
            // (no event) from its silent first sighting.
            expect(canonical(rig.snapshots.data.get(`card:${id}`)?.object), id).toBe(state);
            const own = events.filter((e) => e.detail.subject.id === id);
            if (own.length === 0) expect(emitCardCreated, `${id} never published`).toBe(false);
            else expect(canonical(own.at(-1)?.detail.data.object), id).toBe(state);
          }
          const published = new Set(events.map((e) => e.detail.subject.id));
          expectOrderingRuleHolds(events, new Map([...finals].filter(([id]) => published.has(id))));
          // One id per change, one change per id.
          const idsByChange = new Map<string, Set<string>>();
          const changeById = new Map<string, string>();
          for (const e of events) {
            const key = changeOf(e);
            idsByChange.set(key, (idsByChange.get(key) ?? new Set<string>()).add(e.detail.id));
            expect(changeById.get(e.detail.id) ?? key, `id ${e.detail.id} shared by two changes`).toBe(key);
            changeById.set(e.detail.id, key);
          }
          expect([...idsByChange.values()].filter((ids) => ids.size > 1)).toEqual([]);
          // Memory of a walk: a few pages' ids, whatever was issued under it.
          const over = remembered.filter(({ size, pageSize: size1 }) => size > 2 * RECENT_BATCHES * size1);
          remembered = [];
          expect(over).toEqual([]);
        }),
        { numRuns: 150, seed: 20261130 },
      );
    } finally {
      spy.mockRestore();
    }
    expect(cut).toBeGreaterThan(50);
    expect(pushed).toBeGreaterThan(50);
    expect(readsChecked).toBeGreaterThan(1000);
    expect(resumedRoundCards).toBeGreaterThan(100);
    expect(stepsBack).toBeGreaterThan(20);
  });
});
