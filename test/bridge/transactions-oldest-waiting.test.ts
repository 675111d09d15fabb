import { describe, expect, it } from "vitest";
import { pollTransactions } from "../../shared/bridge/transactions.js";
import { ReauthorizationNeededError } from "../../shared/bridge/errors.js";
import type { ProviderPage } from "../../shared/bridge/provider.js";
import type { CycleReport } from "../../shared/bridge/report.js";
import { makeRig, refusal, type ProviderCall, type TestRig } from "./fakes.js";

/** When the old transactions changed: six hours before the rig's clock, five before the newer ones. */
const OLD_CHANGE_MS = Date.parse("2025-01-15T04:00:00.000Z");
const PAGE_SIZE = 10;

/**
 * `old` transactions changed six hours ago under `newer` ones changed an hour ago, all `not_synced`; each acknowledge
 * takes a second of the rig's clock, so a budget of 8 s pauses the `not_synced` pass at 6 s (its share), 60 taken.
 */
function oldBehindNewer(old = 30, newer = 100): { rig: TestRig; oldIds: Set<string> } {
  const rig = makeRig();
  const oldIds = new Set<string>();
  for (let i = 0; i < old; i++) oldIds.add(rig.provider.addTransaction({ updated_at: new Date(OLD_CHANGE_MS + i * 1000).toISOString() }).id);
  for (let i = 0; i < newer; i++) rig.provider.addTransaction();
  rig.provider.beforeCall = (call) => {
    if (call.op === "acknowledgeTransactions") rig.clock.advance(1000);
  };
  return { rig, oldIds };
}

const BUDGET_MS = 8_000;

function listCalls(rig: TestRig): Extract<ProviderCall, { op: "listTransactions" }>[] {
  return rig.provider.calls.filter((c): c is Extract<ProviderCall, { op: "listTransactions" }> => c.op === "listTransactions");
}

/**
 * The cycle's reads of a `not_synced` page past the second: a walk re-reads page 1 (acknowledged items leave the
 * list) and reads page 2 ahead, so only the look at the list's end reads further.
 */
function looksAtTheEnd(rig: TestRig): number[] {
  return listCalls(rig).flatMap((c) => (c.query.client_sync_status === "not_synced" && c.query.page > 2 ? [c.query.page] : []));
}

/** Makes the rig's reads of a `not_synced` page past the second answer with `answer` instead of the list. */
function endAnswers(rig: TestRig, answer: () => Promise<ProviderPage>): void {
  const list = rig.provider.listTransactions.bind(rig.provider);
  rig.provider.listTransactions = async (query) => {
    const page = await list(query);
    return query.client_sync_status === "not_synced" && query.page > 2 ? answer() : page;
  };
}

/** What a cycle delivered: its outcome and counters, the events published and the ids acknowledged, in order. */
function deliveries(rig: TestRig, report: CycleReport) {
  const { outcome, pulled, handled, published, acknowledged, unchanged, quarantined } = report;
  return {
    report: { outcome, pulled, handled, published, acknowledged, unchanged, quarantined },
    events: rig.publisher.events.map((e) => e.detail.id),
    acknowledgedIds: rig.provider.calls.flatMap((c) => (c.op === "acknowledgeTransactions" ? c.ids : [])),
    waiting: rig.provider.pending().map((t) => t.id),
  };
}

/**
 * The cycle of {@link oldBehindNewer} over a provider that gives no `total_records`: without a count the cycle cannot
 * tell where the list ends, so it makes no read of its end. What it delivers is what a cycle delivers without that read.
 */
async function withoutTheLook(): Promise<{ rig: TestRig; report: CycleReport }> {
  const { rig } = oldBehindNewer();
  const list = rig.provider.listTransactions.bind(rig.provider);
  rig.provider.listTransactions = async (query) => {
    const { pagination, ...page } = await list(query);
    const { total_records: _unknown, ...rest } = pagination ?? {};
    return { ...page, pagination: rest };
  };
  const report = await pollTransactions(rig.deps, { pageSize: PAGE_SIZE, deadline: rig.clock.now() + BUDGET_MS });
  expect(looksAtTheEnd(rig)).toEqual([]);
  return { rig, report };
}

describe("SyncLagSeconds with transactions a cycle cannot reach", () => {
  it("counts the oldest transaction still waiting when the not_synced pass pauses at its share with more listed than it reached", async () => {
    const { rig, oldIds } = oldBehindNewer();
    const report = await pollTransactions(rig.deps, { pageSize: PAGE_SIZE, deadline: rig.clock.now() + BUDGET_MS });
    expect(report.outcome).toBe("deadline");
    // The line docs/runbook.md (SyncLag) has a cycle stopped at its budget say, at info.
    expect(rig.logger.lines.filter((l) => l.message.startsWith("transactions cycle")).map((l) => [l.level, l.message])).toEqual([["info", "transactions cycle deadline"]]);
    // The cycle delivered newer transactions only: every old one still waits.
    expect(rig.publisher.events.some((e) => oldIds.has(e.detail.subject.id))).toBe(false);
    expect(rig.provider.pending().filter((t) => oldIds.has(t.id))).toHaveLength(oldIds.size);
    const oldestAgeSeconds = Math.round((rig.clock.now() - OLD_CHANGE_MS) / 1000);
    expect(report.syncLagSeconds).toBeGreaterThanOrEqual(oldestAgeSeconds);
    expect(rig.metrics.points.filter((p) => p.name === "SyncLagSeconds").map((p) => p.value)).toEqual([report.syncLagSeconds]);
  });

  it("counts every transaction at the end of the list when the snapshot store cannot say which were delivered", async () => {
    const { rig, oldIds } = oldBehindNewer();
    const getMany = rig.deps.snapshots.getMany.bind(rig.deps.snapshots);
    // Only the look reads the old ones' snapshots: the walk never reaches them.
    rig.deps.snapshots.getMany = (keys, options) =>
      keys.some((key) => oldIds.has(key.slice("transaction:".length))) ? Promise.reject(new Error("store down")) : getMany(keys, options);
    const report = await pollTransactions(rig.deps, { pageSize: PAGE_SIZE, deadline: rig.clock.now() + BUDGET_MS });
    expect(report.outcome).toBe("deadline");
    expect(looksAtTheEnd(rig)).toHaveLength(1);
    expect(rig.logger.lines.filter((l) => l.message.startsWith("could not read the oldest transactions waiting"))).toEqual([]);
    expect(report.syncLagSeconds).toBeGreaterThanOrEqual(Math.round((rig.clock.now() - OLD_CHANGE_MS) / 1000));
  });

  it.each([
    // Five acknowledged a second: 30 by the pause, 100 wait, the oldest on page 20 of five.
    ["fewer than asked, saying so in pagination.page_size", 5, false, 20],
    // Acknowledged ten at a time, three calls a page: 50 by the pause, 80 wait, the oldest on page 4 of 25.
    ["more than asked, its page_size echoing the size asked", 25, true, 4],
  ])("counts the oldest transaction still waiting at the pause when the provider serves %s", async (_, served, echoes, lastPage) => {
    const { rig, oldIds } = oldBehindNewer();
    const list = rig.provider.listTransactions.bind(rig.provider);
    rig.provider.listTransactions = async (query) => {
      const page = await list({ ...query, page_size: served });
      return echoes ? { ...page, pagination: { ...page.pagination, page_size: query.page_size } } : page;
    };
    const report = await pollTransactions(rig.deps, { pageSize: PAGE_SIZE, deadline: rig.clock.now() + BUDGET_MS });
    expect(report.outcome).toBe("deadline");
    expect(rig.publisher.events.some((e) => oldIds.has(e.detail.subject.id))).toBe(false);
    expect(looksAtTheEnd(rig)).toEqual([lastPage]);
    expect(report.syncLagSeconds).toBeGreaterThanOrEqual(Math.round((rig.clock.now() - OLD_CHANGE_MS) / 1000));
  });

  it.each([
    // Asked and served ten, the list's 16th (on page 2) left out of every page: the walk's reads of page 2 hold nine.
    ["the size asked, its page 2 short of one", 10, 15],
    // The same, its page 1 short: the cycle's first read is the short page, the reads of page 2 ahead come whole.
    ["the size asked, its page 1 short of one", 10, 5],
    // Five a page, its page_size echoing the size asked, the 8th (on page 2) left out.
    ["five a page, its page 2 short of one", 5, 7],
  ])("counts the oldest transaction still waiting at the pause when the provider serves %s (an item left out, not the last page)", async (_, served, leftOut) => {
    const { rig, oldIds } = oldBehindNewer();
    const list = rig.provider.listTransactions.bind(rig.provider);
    rig.provider.listTransactions = async (query) => {
      const page = await list({ ...query, page_size: served });
      const start = (query.page - 1) * served;
      // Still counted in total_records and has_next: a page short for another reason than the provider's maximum.
      const data = page.data.filter((_, i) => query.client_sync_status !== "not_synced" || start + i !== leftOut);
      if (query.client_sync_status === "not_synced" && query.page > 2) seenAtTheEnd.push(...data.map((t) => (t as { id: string }).id));
      return { ...page, data, pagination: { ...page.pagination, page_size: query.page_size } };
    };
    const seenAtTheEnd: string[] = [];
    const report = await pollTransactions(rig.deps, { pageSize: PAGE_SIZE, deadline: rig.clock.now() + BUDGET_MS });
    expect(report.outcome).toBe("deadline");
    expect(rig.publisher.events.some((e) => oldIds.has(e.detail.subject.id))).toBe(false);
    // One look, at the list's last page: it holds the oldest transaction (the list is newest first).
    expect(looksAtTheEnd(rig)).toHaveLength(1);
    expect(seenAtTheEnd).toContain(rig.provider.transactions.at(-1)!.id);
    expect(report.syncLagSeconds).toBeGreaterThanOrEqual(Math.round((rig.clock.now() - OLD_CHANGE_MS) / 1000));
  });

  it("looks at the end of the list once, at the pause (before the outdated list), not again when the cycle ends at its deadline", async () => {
    const { rig } = oldBehindNewer();
    await pollTransactions(rig.deps, { pageSize: PAGE_SIZE, deadline: rig.clock.now() + BUDGET_MS });
    // 130 listed, 60 acknowledged by the pause: 70 wait, the oldest ten on page 7.
    expect(looksAtTheEnd(rig)).toEqual([7]);
    const calls = listCalls(rig);
    const look = calls.findIndex((c) => c.query.page === 7);
    expect(look).toBeLessThan(calls.findIndex((c) => c.query.client_sync_status === "outdated"));
  });

  it("makes no extra read when the walk completes, with a budget or without one: the same calls", async () => {
    const withBudget = oldBehindNewer();
    const roomy = await pollTransactions(withBudget.rig.deps, { pageSize: PAGE_SIZE, deadline: withBudget.rig.clock.now() + 1_000_000 });
    const without = oldBehindNewer();
    const unbounded = await pollTransactions(without.rig.deps, { pageSize: PAGE_SIZE });
    expect([roomy.outcome, unbounded.outcome]).toEqual(["complete", "complete"]);
    expect(looksAtTheEnd(withBudget.rig)).toEqual([]);
    expect(withBudget.rig.provider.calls).toEqual(without.rig.provider.calls);
  });

  it("makes no extra read at the pause when what still waits fits the page the walk is at", async () => {
    const rig = makeRig();
    for (let i = 0; i < 15; i++) rig.provider.addTransaction();
    let first = true;
    rig.provider.beforeCall = (call) => {
      // The first read takes four fifths of the budget: the pass pauses after its page, 5 of 15 left.
      if (first && call.op === "listTransactions") rig.clock.advance(80_000);
      first = false;
    };
    const report = await pollTransactions(rig.deps, { pageSize: PAGE_SIZE, deadline: rig.clock.now() + 100_000 });
    expect(report.outcome).toBe("complete");
    expect(listCalls(rig).filter((c) => c.query.client_sync_status === "not_synced").map((c) => c.query.page)).toEqual([1, 1]);
  });

  it("neither publishes nor acknowledges what it read at the end of the list, nor counts it as pulled: it delivers as without the read", async () => {
    const { rig } = oldBehindNewer();
    const seenAtTheEnd: string[] = [];
    const list = rig.provider.listTransactions.bind(rig.provider);
    rig.provider.listTransactions = async (query) => {
      const page = await list(query);
      if (query.client_sync_status === "not_synced" && query.page > 2) seenAtTheEnd.push(...page.data.map((t) => (t as { id: string }).id));
      return page;
    };
    const report = await pollTransactions(rig.deps, { pageSize: PAGE_SIZE, deadline: rig.clock.now() + BUDGET_MS });
    expect(seenAtTheEnd).toHaveLength(PAGE_SIZE);
    const delivered = deliveries(rig, report);
    expect(delivered.acknowledgedIds.filter((id) => seenAtTheEnd.includes(id))).toEqual([]);
    expect(rig.publisher.events.filter((e) => seenAtTheEnd.includes(e.detail.subject.id))).toEqual([]);
    expect(delivered.waiting).toEqual(expect.arrayContaining(seenAtTheEnd));
    // Pulled, handled, published and acknowledged as without the read; only the lag differs.
    const blind = await withoutTheLook();
    expect(delivered).toEqual(deliveries(blind.rig, blind.report));
    expect(rig.metrics.sum("TransactionsPulled")).toBe(blind.rig.metrics.sum("TransactionsPulled"));
    expect(report.syncLagSeconds).toBeGreaterThan(blind.report.syncLagSeconds);
  });

  it.each([
    ["the provider fails it", 1, () => Promise.reject(Object.assign(new Error("upstream down"), { name: "ServiceUnavailableError", status: 503 }))],
    ["its page is no list", 1, () => Promise.resolve({ data: "not a list" } as unknown as ProviderPage)],
    // Nothing fails here: items without an id or a change time have no age to count (the walk quarantines them).
    ["its items are no transactions", 0, () => Promise.resolve({ data: [null, 42, { id: 7, updated_at: "yesterday" }, { updated_at: "2025-01-15T04:00:00Z" }] })],
  ])("delivers as it would without the look at the end of the list when %s (warnings: %i)", async (_, warnings, answer) => {
    const looked = oldBehindNewer();
    endAnswers(looked.rig, answer);
    const lookedReport = await pollTransactions(looked.rig.deps, { pageSize: PAGE_SIZE, deadline: looked.rig.clock.now() + BUDGET_MS });
    const blind = await withoutTheLook();
    expect(looksAtTheEnd(looked.rig)).toEqual([7]);
    expect(deliveries(looked.rig, lookedReport)).toEqual(deliveries(blind.rig, blind.report));
    expect(lookedReport.syncLagSeconds).toBe(blind.report.syncLagSeconds);
    expect(lookedReport.outcome).toBe("deadline");
    // The warning docs/runbook.md (SyncLag) names by its text.
    expect(looked.rig.logger.lines.filter((l) => /oldest/.test(l.message)).map((l) => [l.level, l.message])).toEqual(
      Array.from({ length: warnings }, () => ["warn", "could not read the oldest transactions waiting; the lag leaves them out this cycle"]),
    );
  });

  it.each([
    ["with time left", 0],
    // The refused refresh held its lease (a lock wait) past the deadline: no later call would meet the refusal.
    ["past the deadline", BUDGET_MS],
  ])("stops the cycle with the re-authorize error when the token family is revoked at the look at the end of the list (%s)", async (_, refusalTakesMs) => {
    const { rig } = oldBehindNewer();
    let lookedAt = false;
    const beforeCall = rig.provider.beforeCall;
    rig.provider.beforeCall = (call) => {
      lookedAt ||= call.op === "listTransactions" && call.query.client_sync_status === "not_synced" && call.query.page > 2;
      if (!lookedAt) return beforeCall(call);
      rig.clock.advance(refusalTakesMs);
      throw Object.assign(new Error("refresh rejected"), { name: "ReauthorizationRequiredError", status: 401 });
    };
    const error = await pollTransactions(rig.deps, { pageSize: PAGE_SIZE, deadline: rig.clock.now() + BUDGET_MS }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReauthorizationNeededError);
    expect(rig.metrics.sum("TokenFamilyRevoked")).toBe(1);
    // The bridge does not call again with a revoked family, and says nothing of the oldest it could not read.
    expect(rig.provider.calls.at(-1)).toMatchObject({ op: "listTransactions", query: { client_sync_status: "not_synced", page: 7 } });
    expect(rig.logger.lines.filter((l) => /oldest/.test(l.message))).toEqual([]);
  });
});

describe("SyncLagSeconds once the cycle reaches what the look at the end of the list counted", () => {
  /**
   * 25 `not_synced` transactions, the oldest (changed six hours ago) one the validator refuses; the first read takes
   * four fifths of a 100 s budget, so the pass pauses at its share after one page, looks at the end of the list (the
   * oldest five), and the pass after `outdated` walks to the end: the refused one is quarantined and acknowledged.
   */
  async function brokenOldestReached(withCount: boolean): Promise<{ rig: TestRig; report: CycleReport; brokenId: string }> {
    const rig = makeRig({}, { validators: { transaction: (raw) => ((raw as { memo?: unknown }).memo === "BROKEN" ? { success: false, reason: "memo: refused" } : { success: true, data: raw as Record<string, unknown> }) } });
    const brokenId = rig.provider.addTransaction({ memo: "BROKEN", updated_at: new Date(OLD_CHANGE_MS).toISOString() }).id;
    for (let i = 0; i < 24; i++) rig.provider.addTransaction();
    const list = rig.provider.listTransactions.bind(rig.provider);
    let first = true;
    rig.provider.listTransactions = async (query) => {
      if (first) rig.clock.advance(80_000);
      first = false;
      const page = await list(query);
      if (withCount) return page;
      const { total_records: _unknown, ...rest } = page.pagination ?? {};
      return { ...page, pagination: rest };
    };
    const report = await pollTransactions(rig.deps, { pageSize: PAGE_SIZE, deadline: rig.clock.now() + 100_000 });
    return { rig, report, brokenId };
  }

  it("leaves out an invalid transaction the look counted once the cycle quarantined and acknowledged it, as a cycle without the look does", async () => {
    const looked = await brokenOldestReached(true);
    const blind = await brokenOldestReached(false);
    // The look: page 2 (25 listed, 10 acknowledged), read at the pause, before the outdated list; none without a count.
    for (const [{ rig }, look] of [[looked, 2], [blind, 1]] as const) {
      const calls = listCalls(rig);
      expect(calls[calls.findIndex((c) => c.query.client_sync_status === "outdated") - 1]?.query).toMatchObject({ client_sync_status: "not_synced", page: look });
    }
    for (const { rig, report, brokenId } of [looked, blind]) {
      expect(report.outcome).toBe("complete");
      expect(rig.provider.pending()).toEqual([]);
      expect([...rig.quarantine.records.values()].map((r) => r.entityId)).toEqual([brokenId]);
    }
    // Nothing waits once the cycle completes: the lag is that of what it published, with or without the look.
    expect(looked.report.syncLagSeconds).toBe(blind.report.syncLagSeconds);
    expect(looked.report.syncLagSeconds).toBeLessThan(Math.round((looked.rig.clock.now() - OLD_CHANGE_MS) / 1000));
  });
});

describe("SyncLagSeconds and a delivered transaction the look at the end of the list meets", () => {
  it("leaves out a transaction whose change went out in an earlier cycle and which stays listed only because the provider refuses its acknowledge", async () => {
    const rig = makeRig();
    const threeDaysAgo = rig.clock.now() - 3 * 24 * 3600 * 1000;
    const stuck = rig.provider.addTransaction({ updated_at: new Date(threeDaysAgo).toISOString() }).id;
    rig.provider.beforeCall = (call) => {
      if (call.op === "acknowledgeTransactions" && call.ids.includes(stuck)) throw refusal(call.ids, [stuck]);
    };
    // An earlier cycle published it and stored its snapshot; the provider refused its acknowledge, so it stays listed.
    await pollTransactions(rig.deps, { pageSize: PAGE_SIZE });
    expect(rig.publisher.events.map((e) => e.detail.subject.id)).toEqual([stuck]);
    expect(rig.provider.pending().map((t) => t.id)).toEqual([stuck]);

    // Sustained load: newer transactions (changed about an hour ago) above it; each acknowledge takes a second.
    for (let i = 0; i < 100; i++) rig.provider.addTransaction();
    rig.provider.beforeCall = (call) => {
      if (call.op !== "acknowledgeTransactions") return;
      rig.clock.advance(1000);
      if (call.ids.includes(stuck)) throw refusal(call.ids, [stuck]);
    };
    const report = await pollTransactions(rig.deps, { pageSize: PAGE_SIZE, deadline: rig.clock.now() + BUDGET_MS });
    // The look read the end of the list, where the stuck one sits with the oldest waiting.
    expect(looksAtTheEnd(rig)).toEqual([5]);
    expect(rig.publisher.events.filter((e) => e.detail.subject.id === stuck)).toHaveLength(1);
    // What waits is about an hour old: the stuck one's change was delivered three days ago and is no lag.
    expect(report.syncLagSeconds).toBeGreaterThan(3000);
    expect(report.syncLagSeconds).toBeLessThan(2 * 3600);
  });
  it("counts such a transaction at the age of a change made since its delivery: its snapshot holds another version than the one listed", async () => {
    const rig = makeRig();
    const threeDaysAgo = rig.clock.now() - 3 * 24 * 3600 * 1000;
    const stuck = rig.provider.addTransaction({ updated_at: new Date(threeDaysAgo).toISOString() }).id;
    const refuseStuck = (call: ProviderCall): void => {
      if (call.op === "acknowledgeTransactions" && call.ids.includes(stuck)) throw refusal(call.ids, [stuck]);
    };
    rig.provider.beforeCall = refuseStuck;
    await pollTransactions(rig.deps, { pageSize: PAGE_SIZE });
    expect(rig.provider.pending().map((t) => t.id)).toEqual([stuck]);

    // Changed a day ago, after the version delivered: still listed at the end, now with a change not delivered.
    const twoDaysAgo = rig.clock.now() - 2 * 24 * 3600 * 1000;
    Object.assign(rig.provider.transactions.find((t) => t.id === stuck)!, { memo: "corrected", updated_at: new Date(twoDaysAgo).toISOString() });
    for (let i = 0; i < 100; i++) rig.provider.addTransaction();
    rig.provider.beforeCall = (call) => {
      if (call.op === "acknowledgeTransactions") rig.clock.advance(1000);
      refuseStuck(call);
    };
    const report = await pollTransactions(rig.deps, { pageSize: PAGE_SIZE, deadline: rig.clock.now() + BUDGET_MS });
    expect(looksAtTheEnd(rig)).toEqual([5]);
    // The walk did not reach it: its change is still undelivered, two days old.
    expect(rig.publisher.ofType("transaction.changed")).toEqual([]);
    expect(report.syncLagSeconds).toBeGreaterThanOrEqual(2 * 24 * 3600);
  });
});
