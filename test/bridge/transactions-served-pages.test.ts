/**
 * The transaction cycle against a provider whose pages are not the size asked (spec §8.3 shows no maximum page size):
 * whatever it serves a page, one cycle drains what is listed, each transaction published once and acknowledged.
 */
import { describe, expect, it } from "vitest";
import { DEFAULT_PAGE_SIZE } from "../../shared/bridge/deps.js";
import { pollTransactions } from "../../shared/bridge/transactions.js";
import type { ProviderPage, TransactionListQuery } from "../../shared/bridge/provider.js";
import { makeRig, type TestRig } from "./fakes.js";
import { pageShapes } from "./page-shapes.js";

/** Asked for by the cycles below; the provider serves at most {@link CAP} a page. */
const ASKED = 10;
const CAP = 4;

/** Makes the rig's transaction list answer through `shape`, which gets the query and the list's own answer to it. */
function shapeList(rig: TestRig, shape: (query: TransactionListQuery, list: (q: TransactionListQuery) => Promise<ProviderPage>) => Promise<ProviderPage>): void {
  const list = rig.provider.listTransactions.bind(rig.provider);
  rig.provider.listTransactions = (query) => shape(query, list);
}

/** Runs one cycle over `count` new transactions and checks it drained them: complete, each published and acknowledged once. */
async function expectOneCycleDrains(rig: TestRig, count: number, readAhead: boolean): Promise<void> {
  for (let i = 0; i < count; i++) rig.provider.addTransaction();
  const report = await pollTransactions(rig.deps, { pageSize: ASKED, readAhead, maxPages: 100 });
  const label = `${count} transactions, readAhead ${readAhead}`;
  expect(report.outcome, label).toBe("complete");
  expect(rig.provider.pending().map((t) => t.id), label).toEqual([]);
  expect(rig.publisher.events, label).toHaveLength(count);
  const acknowledged = rig.provider.calls.flatMap((c) => (c.op === "acknowledgeTransactions" ? c.ids : []));
  expect(new Set(acknowledged).size, label).toBe(count);
  expect(report.acknowledged, label).toBe(count);
}

describe("transaction cycle against a provider serving fewer transactions a page than asked", () => {
  it("drains the list when the provider says nothing of it, counting its pagination in the size asked (has_next false with more listed)", async () => {
    for (const count of [ASKED - 1, 37]) {
      for (const readAhead of [false, true]) {
        const rig = makeRig();
        shapeList(rig, async (query, list) => pageShapes.countedInSizeAsked(query, await list({ ...query, page_size: Math.min(query.page_size, CAP) })));
        await expectOneCycleDrains(rig, count, readAhead);
      }
    }
  });

  it("drains the list when the provider says so in pagination.page_size", async () => {
    for (const count of [ASKED - 1, 37]) {
      for (const readAhead of [false, true]) {
        const rig = makeRig();
        shapeList(rig, (query, list) => list({ ...query, page_size: Math.min(query.page_size, CAP) }));
        await expectOneCycleDrains(rig, count, readAhead);
      }
    }
  });

  it("drains the list when its answers carry no pagination block (optional in the provider port)", async () => {
    for (const count of [ASKED - 1, 37]) {
      for (const readAhead of [false, true]) {
        const rig = makeRig();
        shapeList(rig, async (query, list) => pageShapes.withoutPagination(query, await list({ ...query, page_size: Math.min(query.page_size, CAP) })));
        await expectOneCycleDrains(rig, count, readAhead);
      }
    }
  });
});

describe("transaction cycles asking 100 a page of a provider serving 50, stopped by their deadline", () => {
  /** Each list call takes this long on the rig's clock, so a cycle's deadline falls mid-walk. */
  const LIST_MS = 1000;
  /** Half the bridge's own page size: what the provider serves. */
  const HALF = DEFAULT_PAGE_SIZE / 2;

  it("publishes and acknowledges every transaction over later cycles, with transactions arriving at the top before every list call and some the provider keeps listing despite their acknowledge", async () => {
    for (const [name, shape] of Object.entries(pageShapes)) {
      // Five at least: the not_synced pass pauses at its share of the budget, and within it a cycle confirms a page it
      // acknowledged and still lists by reading it again and, without has_next, reads the empty page that ends the
      // list (with fewer, every cycle ends `deadline`, all delivered).
      for (const lists of [5, 8]) {
        const rig = makeRig();
        for (let i = 0; i < 5 * HALF + 7; i++) rig.provider.addTransaction();
        // Every 40th stays listed whatever is acknowledged (its acknowledge answers as if taken).
        const kept = new Set(rig.provider.transactions.filter((_, i) => i % 40 === 0).map((t) => t.id));
        const acknowledge = rig.provider.acknowledgeTransactions.bind(rig.provider);
        rig.provider.acknowledgeTransactions = (ids) => acknowledge(ids.filter((id) => !kept.has(id))).then(() => ({ acknowledged: ids.length }));
        let arrivals = HALF;
        shapeList(rig, async (query, list) => {
          rig.clock.advance(LIST_MS);
          // Into the list read (the `outdated` pass after it shows none: one arriving then is the next cycle's).
          if (query.client_sync_status === "not_synced" && arrivals-- > 0) rig.provider.addTransaction();
          return shape(query, await list({ ...query, page_size: Math.min(query.page_size, HALF) }));
        });
        const outcomes: string[] = [];
        for (let cycle = 0; cycle < 120 && outcomes.at(-1) !== "complete"; cycle++) {
          outcomes.push((await pollTransactions(rig.deps, { deadline: rig.clock.now() + lists * LIST_MS - LIST_MS / 2 })).outcome);
        }
        const label = `${name}, ${lists} list calls a cycle`;
        const published = new Set(rig.publisher.events.map((e) => e.detail.subject.id));
        expect(outcomes.at(-1), label).toBe("complete");
        expect(outcomes, label).toContain("deadline");
        expect(rig.provider.pending().map((t) => t.id).toSorted(), label).toEqual([...kept].toSorted());
        expect(rig.provider.transactions.filter((t) => !published.has(t.id)).map((t) => t.id), label).toEqual([]);
      }
    }
  });
});
