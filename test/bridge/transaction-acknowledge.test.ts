import { describe, expect, it } from "vitest";
import { TransactionAcknowledger } from "../../shared/bridge/transaction-acknowledge.js";
import { emptyReport } from "../../shared/bridge/report.js";
import { RetryDeferredError } from "../../shared/qashio/errors.js";
import { RecordingLogger, RecordingMetrics } from "./fakes.js";

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
});
