/**
 * The transaction walk's read-ahead against a provider that answers it with another page than asked: the answer is
 * dropped, the warning names the list and the page asked, and the rest of that pass reads pages plainly (page 1 shows
 * the next batch once the last is acknowledged), so nothing is lost, and nothing taken twice, while the read-ahead
 * costs no further list calls. The next pass reads ahead again.
 */
import { describe, expect, it } from "vitest";
import { pollTransactions } from "../../shared/bridge/transactions.js";
import type { PullStatus } from "../../shared/bridge/provider.js";
import { makeRig, type TestRig } from "./fakes.js";

/** Listed under the 100 a page the cycle asks: a read-ahead of page 2 while page 1 is processed, then two more pages. */
const LISTED = 250;

const READ_AHEAD_DROPPED = "provider answered another page than asked to a page read ahead; reading pages plainly";

/**
 * Makes the rig's list answer page 1, as the list holds it then and naming it page 1 (more following), whatever page
 * is asked: a provider ignoring `page`. Returns the pages asked, per status, in order.
 */
function ignoringPage(rig: TestRig): Map<PullStatus, number[]> {
  const asked = new Map<PullStatus, number[]>();
  const list = rig.provider.listTransactions.bind(rig.provider);
  rig.provider.listTransactions = (query) => {
    const status = query.client_sync_status as PullStatus;
    asked.set(status, [...(asked.get(status) ?? []), query.page]);
    return list({ ...query, page: 1 });
  };
  return asked;
}

function warnings(rig: TestRig): unknown[] {
  return rig.logger.lines.filter((l) => l.message === READ_AHEAD_DROPPED).map((l) => l.attributes);
}

/** Each transaction published once, under one event id, and acknowledged once; none left listed. */
function expectDeliveredOnce(rig: TestRig, count: number): void {
  const subjects = rig.publisher.events.map((e) => e.detail.subject.id);
  expect(new Set(subjects).size).toBe(count);
  expect(subjects).toHaveLength(count);
  expect(new Set(rig.publisher.ids).size).toBe(count);
  const acknowledged = rig.provider.calls.flatMap((c) => (c.op === "acknowledgeTransactions" ? c.ids : []));
  expect(new Set(acknowledged).size).toBe(count);
  expect(acknowledged).toHaveLength(count);
  expect(rig.provider.pending()).toEqual([]);
}

describe("transaction walk: a page read ahead answered with another page than asked", () => {
  it("is dropped once with a warning naming the list and the page asked, and the rest of the pass reads page 1 plainly", async () => {
    const rig = makeRig();
    for (let i = 0; i < LISTED; i++) rig.provider.addTransaction();
    const asked = ignoringPage(rig);

    const report = await pollTransactions(rig.deps);

    expect(report.outcome).toBe("complete");
    expect(warnings(rig)).toEqual([{ list: "not_synced", asked: 2 }]);
    // One read ahead (page 2, answered as page 1), then plain reads of page 1 only: 100, 100, 50 new transactions.
    expect(asked.get("not_synced")).toEqual([1, 2, 1, 1]);
    expect(asked.get("outdated")).toEqual([1]);
    // The dropped answer is neither pulled nor handled: each transaction counts once.
    expect(report).toMatchObject({ pulled: LISTED, handled: LISTED, acknowledged: LISTED });
    expectDeliveredOnce(rig, LISTED);
  });

  it("turns the read-ahead off for that pass only: the outdated pass reads ahead again, and drops its answer the same way", async () => {
    const rig = makeRig();
    const changed = Array.from({ length: LISTED }, () => rig.provider.addTransaction());
    expect((await pollTransactions(rig.deps)).outcome).toBe("complete");
    for (const txn of changed) rig.provider.changeTransaction(txn.id, { memo: "changed after its acknowledge" });
    for (let i = 0; i < LISTED; i++) rig.provider.addTransaction();
    rig.publisher.events.length = 0;
    rig.provider.calls.length = 0;
    const asked = ignoringPage(rig);

    const report = await pollTransactions(rig.deps);

    expect(report.outcome).toBe("complete");
    expect(warnings(rig)).toEqual([
      { list: "not_synced", asked: 2 },
      { list: "outdated", asked: 2 },
    ]);
    expect(asked.get("not_synced")).toEqual([1, 2, 1, 1]);
    expect(asked.get("outdated")).toEqual([1, 2, 1, 1]);
    expect(report.published).toEqual({ "transaction.created": LISTED, "transaction.changed": LISTED });
    expectDeliveredOnce(rig, 2 * LISTED);
  });
});
