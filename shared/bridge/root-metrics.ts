/**
 * Metrics a composition root (the Lambda runtime, local mode) emits around the engine rather than from inside it:
 * the provider client's retried failures, and the quarantine gauge after a cycle.
 */
import type { RetryEvent } from "../qashio/http.js";
import type { BridgeDeps } from "./deps.js";
import type { Metrics } from "./ports.js";

/**
 * The provider client's `onRetry`: counts each retried failure as `ProviderErrors` by `status_class`.
 *
 * @example
 * new QashioClient({ baseUrl, tokenProvider, onRetry: countProviderRetries(metrics) });
 */
export function countProviderRetries(metrics: Metrics): (event: RetryEvent) => void {
  // Retried failures only: the failure that ends a call is counted by the engine (cycle.ts), so none is counted twice.
  return (event) => metrics.add("ProviderErrors", 1, "Count", { status_class: event.statusClass });
}

/**
 * Sets the `QuarantineSize` gauge (records held now) after a cycle, whatever its outcome; returns the size, or
 * undefined when counting failed. A failed count goes to `onFailure` (each root logs it its own way), never thrown, so
 * it cannot hide the cycle's own result.
 *
 * @example
 * await reportQuarantineSize(runtime.transactions, (error) => logger.warn("Could not count the quarantine", { error }));
 */
export async function reportQuarantineSize(
  deps: Pick<BridgeDeps, "quarantine" | "metrics">,
  onFailure: (error: unknown) => void,
): Promise<number | undefined> {
  try {
    const size = await deps.quarantine.size();
    deps.metrics.add("QuarantineSize", size, "Count");
    return size;
  } catch (error) {
    onFailure(error);
    return undefined;
  }
}
