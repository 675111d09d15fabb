import { describe, expect, it } from "vitest";
import { TransactionAcknowledger, type AcknowledgePorts } from "../../shared/bridge/transaction-acknowledge.js";
import { emptyReport } from "../../shared/bridge/report.js";
import { RetryDeferredError } from "../../shared/qashio/errors.js";
import { RecordingLogger, RecordingMetrics } from "./fakes.js";

/** An acknowledger over recording ports whose provider answers every call with `answer`. */
function acknowledgerOver(answer: () => Promise<unknown>) {
  const logger = new RecordingLogger();
  const waits: number[] = [];
  /** What the acknowledger's `expected` said of each failure: true for an answer, false for a provider error. */
  const expectedFailures: boolean[] = [];
  const ports: AcknowledgePorts = {
    logger,
    metrics: new RecordingMetrics(),
    report: emptyReport("transactions"),
    acknowledgeTransactions: async (_step, _ids, _retries, expected) => {
      try {
        return await answer();
      } catch (err) {
        expectedFailures.push(expected(err));
        throw err;
      }
    },
    wait: async (ms) => void waits.push(ms),
    pageSize: () => 10,
  };
  return { acknowledger: new TransactionAcknowledger(ports), logger, waits, expectedFailures };
}

const failedForNow = () => new RetryDeferredError("failure 503; left to the caller", { status: 503, delayMs: 1_000, attempt: 2 });

describe("TransactionAcknowledger", () => {
  it("fails with the provider's error, unchanged, when an acknowledge fails for now and no retry was given", async () => {
    // Only a caller that tells the client its retries gets this error from it; any ProviderPort may still throw it.
    const deferred = new RetryDeferredError("failure 503; left to the caller", { status: 503, delayMs: 1_000, attempt: 1 });
    const logger = new RecordingLogger();
    const acknowledger = new TransactionAcknowledger({
      logger,
      metrics: new RecordingMetrics(),
      report: emptyReport("transactions"),
      acknowledgeTransactions: () => Promise.reject(deferred),
      wait: () => Promise.resolve(),
      pageSize: () => 10,
    });
    await expect(acknowledger.acknowledge(["t1", "t2"], undefined)).rejects.toBe(deferred);
    expect(logger.lines).toEqual([]);
  });
  it("counts the ids of the calls the provider took in the report and Acknowledged when a later call of the same acknowledge fails", async () => {
    const metrics = new RecordingMetrics();
    const report = emptyReport("transactions");
    const failure = new Error("socket hang up");
    let calls = 0;
    const acknowledger = new TransactionAcknowledger({
      logger: new RecordingLogger(),
      metrics,
      report,
      // Two calls of two ids: the provider takes the first, the second fails (the cycle then aborts with the report).
      acknowledgeTransactions: () => (++calls === 1 ? Promise.resolve(undefined) : Promise.reject(failure)),
      wait: () => Promise.resolve(),
      pageSize: () => 2,
    });
    await expect(acknowledger.acknowledge(["t1", "t2", "t3", "t4"], { failedBefore: 0, readsPage: true })).rejects.toBe(failure);
    expect(calls).toBe(2);
    expect(report.acknowledged).toBe(2);
    expect(metrics.sum("Acknowledged")).toBe(2);
  });

  it("leaves a re-drive's acknowledge that fails for now to the next cycle, waiting for nothing, and says where its ids went", async () => {
    const rig = acknowledgerOver(() => Promise.reject(failedForNow()));
    const retry = { failedBefore: 1, readsPage: false };
    await expect(rig.acknowledger.acknowledge(["t1", "t2"], retry)).resolves.toEqual({ acknowledged: 0, readAgain: ["t1", "t2"] });
    expect(rig.waits).toEqual([]);
    expect(retry.failedBefore).toBe(2);
    expect(rig.logger.lines).toEqual([
      { level: "warn", message: "acknowledge failed for now; left to the next cycle, which lists the transactions again", attributes: { ids: 2, attempt: 2 } },
    ]);
  });

  it("tells the run a failure for now is an answer, not a provider error (the client counted that attempt), and any other failure is one", async () => {
    // Taken for a provider error too, a failure for now would count twice in ProviderErrors.
    const deferred = acknowledgerOver(() => Promise.reject(failedForNow()));
    await deferred.acknowledger.acknowledge(["t1"], { failedBefore: 0, readsPage: false });
    const down = acknowledgerOver(() => Promise.reject(new Error("provider down")));
    await expect(down.acknowledger.acknowledge(["t1"], { failedBefore: 0, readsPage: false })).rejects.toThrow("provider down");
    expect([deferred.expectedFailures, down.expectedFailures]).toEqual([[true], [false]]);
  });

  it("fails with a refusal whose field is no string, even one that reads as an id's field once made a string (an array): it names no id", async () => {
    const refusal = Object.assign(new Error("The acknowledge was refused"), { name: "InvalidRequestError", status: 400, errors: [{ field: ["transaction_ids.0"], code: "NOT_FOUND" }] });
    const rig = acknowledgerOver(() => Promise.reject(refusal));
    await expect(rig.acknowledger.acknowledge(["t1", "t2"], { failedBefore: 0, readsPage: true })).rejects.toBe(refusal);
    expect(rig.logger.lines).toEqual([]);
  });
});

describe("TransactionAcknowledger, when the run lowers its page size during an acknowledge", () => {
  it("sends no id twice: a read ahead that lowers the page size while a call is out leaves the next call to start past it", async () => {
    // A page read ahead runs beside the batch's acknowledge; its page_size rejection lowers the size mid-call.
    let size = 4;
    const calls: string[][] = [];
    const report = emptyReport("transactions");
    const acknowledger = new TransactionAcknowledger({
      logger: new RecordingLogger(),
      metrics: new RecordingMetrics(),
      report,
      acknowledgeTransactions: async (_step, ids) => {
        calls.push(ids);
        size = 2;
      },
      wait: () => Promise.resolve(),
      pageSize: () => size,
    });
    const ids = ["t1", "t2", "t3", "t4", "t5", "t6"];
    await expect(acknowledger.acknowledge(ids, { failedBefore: 0, readsPage: true })).resolves.toEqual({ acknowledged: 6, readAgain: [] });
    expect(calls).toEqual([["t1", "t2", "t3", "t4"], ["t5", "t6"]]);
    expect(report.acknowledged).toBe(6);
  });

  it("leaves every id after a call that failed for now to the fresh read, once, when the page size was lowered during it", async () => {
    let size = 2;
    const acknowledger = new TransactionAcknowledger({
      logger: new RecordingLogger(),
      metrics: new RecordingMetrics(),
      report: emptyReport("transactions"),
      acknowledgeTransactions: async () => {
        size = 1;
        throw failedForNow();
      },
      wait: () => Promise.resolve(),
      pageSize: () => size,
    });
    await expect(acknowledger.acknowledge(["t1", "t2", "t3", "t4"], { failedBefore: 0, readsPage: true })).resolves.toEqual({ acknowledged: 0, readAgain: ["t1", "t2", "t3", "t4"] });
  });
});

describe("TransactionAcknowledger's log of a refusal by name", () => {
  it("logs no request id that is not a string (any ProviderPort may refuse, and an object may hold anything)", async () => {
    let calls = 0;
    const refusal = Object.assign(new Error("The acknowledge was refused"), {
      name: "InvalidRequestError",
      status: 400,
      errors: [{ field: "transaction_ids.0", code: "NOT_FOUND" }],
      requestId: { authorization: "Bearer not-for-logs" },
    });
    const rig = acknowledgerOver(() => (++calls === 1 ? Promise.reject(refusal) : Promise.resolve(undefined)));
    await expect(rig.acknowledger.acknowledge(["t1", "t2"], { failedBefore: 0, readsPage: true })).resolves.toEqual({ acknowledged: 1, readAgain: [] });
    expect(rig.logger.lines).toEqual([
      { level: "warn", message: "provider refused to acknowledge some transactions; they stay listed", attributes: { ids: ["t1"], codes: ["NOT_FOUND"] } },
    ]);
  });
});
