import { describe, expect, it } from "vitest";
import { pollTransactions } from "../../shared/bridge/transactions.js";
import type { PullStatus } from "../../shared/bridge/provider.js";
import { makeRig, refusal, type TestRig } from "./fakes.js";

/** The cycle's `TransactionsBacklog` points as `[status, value]`, each checked to be a count with no other dimension. */
function backlogPoints(rig: TestRig): [string | undefined, number][] {
  const points = rig.metrics.points.filter((p) => p.name === "TransactionsBacklog");
  for (const p of points) {
    expect(p.unit).toBe("Count");
    expect(Object.keys(p.dimensions ?? {})).toEqual(["status"]);
  }
  return points.map((p) => [p.dimensions?.["status"], p.value]);
}

/** Index of the first or last list call on `status`. */
function listCall(rig: TestRig, status: PullStatus, which: "first" | "last"): number {
  const isList = (c: (typeof rig.provider.calls)[number]) => c.op === "listTransactions" && c.query.client_sync_status === status;
  return which === "first" ? rig.provider.calls.findIndex(isList) : rig.provider.calls.findLastIndex(isList);
}

/** A rig with `outdated` transactions changed since a first cycle synced them, and `fresh` new ones on top. */
async function withBacklog(outdated: number, fresh: number): Promise<TestRig> {
  const rig = makeRig();
  const synced = Array.from({ length: outdated }, () => rig.provider.addTransaction());
  await pollTransactions(rig.deps);
  for (const t of synced) rig.provider.changeTransaction(t.id, { memo: "corrected" });
  for (let i = 0; i < fresh; i++) rig.provider.addTransaction();
  rig.metrics.points.length = 0;
  rig.provider.calls.length = 0;
  return rig;
}

describe("TransactionsBacklog", () => {
  it("sends one point per status, the total_records of the first page the cycle read, however many pages it walks", async () => {
    const rig = await withBacklog(5, 25);
    // Arrivals while the cycle runs: later reads of page 1 list other totals, which must not count.
    let arrivals = 3;
    rig.provider.beforeCall = (call) => {
      if (call.op === "acknowledgeTransactions" && arrivals-- > 0) rig.provider.addTransaction();
    };
    const report = await pollTransactions(rig.deps, { pageSize: 4 });
    expect(report.outcome).toBe("complete");
    expect(report.published).toEqual({ "transaction.created": 28, "transaction.changed": 5 });
    expect(rig.provider.calls.filter((c) => c.op === "listTransactions" && c.query.page === 1).length).toBeGreaterThan(2);
    expect(backlogPoints(rig)).toEqual([
      ["not_synced", 25],
      ["outdated", 5],
    ]);
    expect(report.backlog).toEqual({ not_synced: 25, outdated: 5 });
  });

  it("sends a point of 0 for a status with nothing listed: the backlog drained", async () => {
    const rig = makeRig();
    const report = await pollTransactions(rig.deps);
    expect(backlogPoints(rig)).toEqual([
      ["not_synced", 0],
      ["outdated", 0],
    ]);
    expect(report.backlog).toEqual({ not_synced: 0, outdated: 0 });
  });

  it("sends one not_synced point when that pass stops at its share of the budget and goes on after the outdated list", async () => {
    const rig = await withBacklog(2, 40);
    // The newest: met on the first page of every read, refused on every acknowledge (so the lists never empty).
    const stuck = rig.provider.addTransaction().id;
    rig.provider.beforeCall = (call) => {
      if (call.op !== "acknowledgeTransactions") return;
      rig.clock.advance(1000);
      // One arrival per acknowledge: the second not_synced pass's first page lists another total.
      rig.provider.addTransaction();
      if (call.ids.includes(stuck)) throw refusal(call.ids, [stuck]);
    };
    const report = await pollTransactions(rig.deps, { pageSize: 10, deadline: rig.clock.now() + 8_000 });
    // The not_synced pass read again after the outdated list: its second pass.
    expect(listCall(rig, "not_synced", "last")).toBeGreaterThan(listCall(rig, "outdated", "first"));
    expect(backlogPoints(rig)).toEqual([
      ["not_synced", 41],
      ["outdated", 2],
    ]);
    expect(report.backlog).toEqual({ not_synced: 41, outdated: 2 });
  });

  it.each([
    ["absent", undefined],
    ["negative", -1],
    ["fractional", 2.5],
    ["a string", "7"],
    ["not a number", Number.NaN],
  ])("sends no point, nor guesses from the page, when the first page's total_records is %s (later pages' do not count)", async (_, total) => {
    const rig = await withBacklog(2, 3);
    const list = rig.provider.listTransactions.bind(rig.provider);
    const answered = new Set<string>();
    rig.provider.listTransactions = async (query) => {
      const page = await list(query);
      const status = String(query.client_sync_status);
      if (answered.has(status) || page.pagination === undefined) return page;
      answered.add(status);
      const { total_records: _dropped, ...rest } = page.pagination;
      return { ...page, pagination: total === undefined ? rest : { ...rest, total_records: total as number } };
    };
    const report = await pollTransactions(rig.deps, { pageSize: 2 });
    expect(report).toMatchObject({ outcome: "complete", published: { "transaction.created": 3, "transaction.changed": 2 } });
    expect(backlogPoints(rig)).toEqual([]);
    expect(report.backlog).toBeUndefined();
  });

  it("sends no point when the cycle stops before its first read", async () => {
    const rig = await withBacklog(1, 1);
    const report = await pollTransactions(rig.deps, { deadline: rig.clock.now() });
    expect(report.outcome).toBe("deadline");
    expect(backlogPoints(rig)).toEqual([]);
    expect(report.backlog).toBeUndefined();
  });
});
