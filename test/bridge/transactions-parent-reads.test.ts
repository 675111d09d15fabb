/**
 * The provider reads of refund parents the store does not know: a few at a time, as card details are read, with the
 * outcome of reads made one after another (events, their order and ids; deadline; token failures; throttling).
 */
import { describe, expect, it } from "vitest";
import { pollTransactions } from "../../shared/bridge/transactions.js";
import { CycleAbortedError, ReauthorizationNeededError } from "../../shared/bridge/errors.js";
import { SINGLE_READ_CONCURRENCY } from "../../shared/bridge/provider.js";
import { ReauthorizationRequiredError } from "../../shared/qashio/errors.js";
import { countReadsInFlight, isReadByQashioId, laterTurn, makeRig, orderOfReads } from "./fakes.js";
import { clientOverFake } from "./provider-client.js";

/** `count` refunds, each of a parent of its own that is neither listed nor in the store: each needs a provider read. */
function refundsOfUnknownParents(count: number) {
  const rig = makeRig();
  const parents = Array.from({ length: count }, () => {
    const parent = rig.provider.addTransaction();
    // Acknowledged before aliases were written: only a provider read finds it.
    parent.client_sync_status = "synced";
    return parent;
  });
  for (const parent of parents) rig.provider.addTransaction({ transaction_category: "refund", parent_qashio_id: parent.qashio_id });
  return { rig, parents };
}


describe("refund parent reads", () => {
  it("reads the parents of a page's refunds SINGLE_READ_CONCURRENCY at a time, as card details are, not one after another", async () => {
    const { rig, parents } = refundsOfUnknownParents(10);
    const reads = countReadsInFlight(rig);
    const report = await pollTransactions(rig.deps);
    expect(report.outcome).toBe("complete");
    expect(reads.most()).toBe(SINGLE_READ_CONCURRENCY);
    // Still one read per distinct parent.
    expect(rig.provider.calls.filter(isReadByQashioId)).toHaveLength(parents.length);
    // Published oldest created first: the refund of parents[0] first.
    expect(rig.publisher.events.map((e) => e.detail.data.parent)).toEqual(parents.map((p) => ({ id: p.id, qashio_id: p.qashio_id })));
  });

  it("publishes the same events, in the same order and with the same ids, and writes the same aliases, whichever parent read answers first", async () => {
    const run = async (laterStartedAnswerFirst: boolean) => {
      const { rig } = refundsOfUnknownParents(8);
      const { started, answered } = orderOfReads(rig, laterStartedAnswerFirst);
      await pollTransactions(rig.deps);
      const aliases = [...rig.snapshots.data].filter(([key]) => key.startsWith("transaction:qashio_id:"));
      return { started, answered, events: rig.publisher.events.map((e) => [e.detail.id, e.detail.subject.id, e.detail.data.parent]), aliases };
    };
    const inOrder = await run(false);
    const reversed = await run(true);
    expect(inOrder.answered).toEqual(inOrder.started);
    // The case this test is about: answers out of the order the reads started in.
    expect(reversed.answered).not.toEqual(reversed.started);
    expect(reversed.events).toEqual(inOrder.events);
    expect(reversed.aliases).toEqual(inOrder.aliases);
  });

  it("stops at a parent read that cannot finish by the deadline: starts none after it, publishes nothing of the page, and the next cycle publishes it with its parents", async () => {
    const { rig, parents } = refundsOfUnknownParents(10);
    const deadline = rig.clock.now() + 60_000;
    let reads = 0;
    rig.provider.beforeCall = async (call) => {
      if (!isReadByQashioId(call)) return;
      // The third read cannot finish by the deadline: the client refuses to send it, as QashioClient does.
      if (++reads === 3) throw Object.assign(new Error("no time left"), { name: "DeadlineExceededError", deadline });
      await laterTurn();
    };
    const stopped = await pollTransactions(rig.deps, { deadline, deadlineGraceMs: 0 });
    expect(stopped.outcome).toBe("deadline");
    expect(rig.metrics.sum("CycleErrors")).toBe(0);
    expect(rig.publisher.events).toEqual([]);
    // Those in flight when it stopped ended; no read started after it.
    expect(rig.provider.calls.filter(isReadByQashioId)).toHaveLength(SINGLE_READ_CONCURRENCY);
    expect(rig.provider.pending()).toHaveLength(parents.length);

    rig.provider.beforeCall = () => undefined;
    expect((await pollTransactions(rig.deps)).outcome).toBe("complete");
    expect(rig.publisher.events.map((e) => e.detail.data.parent)).toEqual(parents.map((p) => ({ id: p.id, qashio_id: p.qashio_id })));
  });

  it("stops with ReauthorizationNeededError when a parent read meets a revoked token family, also when another read in flight failed first", async () => {
    const { rig } = refundsOfUnknownParents(4);
    let reads = 0;
    rig.provider.beforeCall = async (call) => {
      if (!isReadByQashioId(call)) return;
      const n = ++reads;
      if (n === 1) throw Object.assign(new Error("failure 500"), { name: "ServerError", status: 500 });
      await laterTurn();
      if (n === 2) throw new ReauthorizationRequiredError("refresh token rejected", { status: 400, method: "POST", path: "/oauth2/token" });
    };
    await expect(pollTransactions(rig.deps)).rejects.toBeInstanceOf(ReauthorizationNeededError);
    expect(rig.metrics.sum("TokenFamilyRevoked")).toBe(1);
    expect(rig.publisher.events).toEqual([]);
  });

  it("stops the cycle when the provider keeps answering parent reads 429, without starting a read per refund meanwhile", async () => {
    const { rig } = refundsOfUnknownParents(10);
    const asked = new Set<string>();
    const provider = clientOverFake(rig.provider, rig.clock, (call) => {
      if (!isReadByQashioId(call) || call.op !== "listTransactions") return undefined;
      asked.add(call.query.qashio_id as string);
      return { status: 429, retryAfterSeconds: 1 };
    });
    await expect(pollTransactions({ ...rig.deps, provider })).rejects.toBeInstanceOf(CycleAbortedError);
    expect(rig.publisher.events).toEqual([]);
    // Each read waited out its Retry-After up to the client's attempts; once one gave up, no other started.
    expect(asked.size).toBe(SINGLE_READ_CONCURRENCY);
  });
});
