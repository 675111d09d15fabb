/**
 * Ids whose acknowledge failed for now are left to a fresh read of their page; one the walk's pass completes without
 * meeting again left the list (the acknowledge was applied despite its failure), and its lag is settled. One listed
 * again, by either status, is the walk's like any other: when its change then stays undelivered (its event failed for
 * now), its age counts towards SyncLagSeconds though every pass completes.
 */
import { describe, expect, it } from "vitest";
import { pollTransactions } from "../../shared/bridge/transactions.js";
import type { CycleReport } from "../../shared/bridge/report.js";
import { RetryDeferredError } from "../../shared/qashio/errors.js";
import { makeRig, type FakeTransaction, type TestRig } from "./fakes.js";

/** What the client asks the engine to wait before the acknowledge's next attempt. */
const ACK_RETRY_MS = 60_000;

/**
 * A rig listing three new transactions whose first acknowledge fails for now (applied by the provider first when
 * `applied`, as a gateway's 502 may), the last of them edited meanwhile; every `transaction.changed` event fails for
 * now, so the edit stays undelivered. The clock is a second past the newest change: the first batch's lag is seconds.
 */
function editedWhileAcknowledgeFails(applied: boolean): { rig: TestRig; edited: FakeTransaction } {
  const rig = makeRig();
  rig.provider.addTransaction();
  rig.provider.addTransaction();
  const edited = rig.provider.addTransaction();
  rig.clock.ms = Date.parse(edited.updated_at) + 1000;
  const acknowledge = rig.provider.acknowledgeTransactions.bind(rig.provider);
  let failures = 1;
  rig.provider.acknowledgeTransactions = async (ids) => {
    if (failures === 0) return acknowledge(ids);
    failures -= 1;
    if (applied) await acknowledge(ids);
    rig.provider.changeTransaction(edited.id, { memo: "edited while the acknowledge failed" });
    throw new RetryDeferredError("acknowledge answered 503", { delayMs: ACK_RETRY_MS, attempt: 1 });
  };
  rig.publisher.reject = (event) => (event.detail.type === "transaction.changed" ? { reason: "ThrottlingException", retryable: true } : undefined);
  return { rig, edited };
}

/** The cycle's lag is the age of `edited`'s undelivered change when it ended (before leaving the second): a minute. */
function expectLagOfEdit(rig: TestRig, startedAt: number, report: CycleReport, edited: FakeTransaction): void {
  expect(rig.provider.pending().map((t) => t.id)).toEqual([edited.id]);
  const lag = Math.round((startedAt + report.durationMs - Date.parse(edited.updated_at)) / 1000);
  expect(lag).toBeGreaterThanOrEqual(ACK_RETRY_MS / 1000);
  expect(report.syncLagSeconds).toBe(lag);
  expect(rig.metrics.points.filter((p) => p.name === "SyncLagSeconds").map((p) => p.value)).toEqual([lag]);
}

describe("transaction walk: ids left to a fresh read by an acknowledge that failed for now", () => {
  it("counts the lag of one the fresh read lists again changed, whose event then fails for now, though the pass completes", async () => {
    const { rig, edited } = editedWhileAcknowledgeFails(false);
    const startedAt = rig.clock.now();

    const report = await pollTransactions(rig.deps);

    expect(report).toMatchObject({ outcome: "complete", publishDeferred: 1, unchanged: 2, published: { "transaction.created": 3 } });
    expectLagOfEdit(rig, startedAt, report, edited);
  });

  it("counts it too when the outdated list shows it, the acknowledge applied, after the wait stopped the not_synced pass at its share", async () => {
    const { rig, edited } = editedWhileAcknowledgeFails(true);
    const startedAt = rig.clock.now();
    const asked: string[] = [];
    const list = rig.provider.listTransactions.bind(rig.provider);
    rig.provider.listTransactions = (query) => (asked.push(`${query.client_sync_status} ${query.page}`), list(query));

    // The wait (a minute) ends the not_synced pass past its share (52.5 s of 70) before the fresh read.
    const report = await pollTransactions(rig.deps, { deadline: startedAt + 70_000 });

    expect(asked).toEqual(["not_synced 1", "outdated 1", "outdated 1", "not_synced 1"]);
    expect(report).toMatchObject({ outcome: "complete", publishDeferred: 1, unchanged: 0, published: { "transaction.created": 3 } });
    expectLagOfEdit(rig, startedAt, report, edited);
  });
});
