/**
 * The transaction cycle against a provider whose pages are not the size asked (spec §8.3 shows no maximum page size):
 * whatever it serves a page, one cycle drains what is listed, each transaction published once and acknowledged.
 */
import { describe, expect, it } from "vitest";
import { pollTransactions } from "../../shared/bridge/transactions.js";
import type { ProviderPage, TransactionListQuery } from "../../shared/bridge/provider.js";
import { makeRig, type TestRig } from "./fakes.js";

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
        shapeList(rig, async (query, list) => {
          const page = await list({ ...query, page_size: Math.min(query.page_size, CAP) });
          const total = page.pagination?.total_records ?? 0;
          const pages = Math.ceil(total / query.page_size);
          // page_size echoes the size asked, and total_pages / has_next are counted in it: only total_records is true.
          return { ...page, pagination: { page: query.page, page_size: query.page_size, total_records: total, total_pages: pages, has_next: query.page < pages } };
        });
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
        shapeList(rig, async (query, list) => {
          const { pagination: _dropped, ...page } = await list({ ...query, page_size: Math.min(query.page_size, CAP) });
          return page;
        });
        await expectOneCycleDrains(rig, count, readAhead);
      }
    }
  });
});
