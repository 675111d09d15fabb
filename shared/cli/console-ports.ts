/**
 * Small ports the CLI gives the engine: a stderr logger with a level, metrics kept in memory
 * (local mode has no metrics backend; the summary line shows what matters), a system clock,
 * and a publisher wrapper that also hands every published event to the console printer.
 */
import type { BridgeEvent, EventPublisher, Logger, MetricName, Metrics } from "../bridge/ports.js";
import type { LogLevel } from "./config.js";
import type { OutputStream } from "./printer.js";
import { printable } from "./terminal-text.js";
import { HIDDEN, isSecretName, withSecretsHidden } from "../secret-attributes.js";

const RANK: Readonly<Record<LogLevel, number>> = { debug: 10, info: 20, warn: 30, error: 40 };

function safeAttributes(attributes?: Readonly<Record<string, unknown>>): string {
  if (attributes === undefined) return "";
  // An attribute without a value is left out (as JSON.stringify and the Lambdas' JSON logger do): "lastError=undefined"
  // reads as an error of an unknown kind.
  const shown = Object.entries(attributes).filter(([, v]) => v !== undefined).map(([k, v]) => {
    // Secret-looking names hidden at the top and inside a value (secret-attributes.ts), and in a URL inside a string or
    // an error's message. A string is shown unquoted, anything else as JSON: a URL, a Date quoted, even where hiding
    // made a URL its href.
    const value = isSecretName(k) ? HIDDEN : v instanceof Error ? `${v.name}: ${withSecretsHidden(v.message)}` : typeof v === "string" ? withSecretsHidden(v) : JSON.stringify(withSecretsHidden(v));
    return `${k}=${value}`;
  });
  return shown.length === 0 ? "" : ` ${shown.join(" ")}`;
}

/**
 * A one-line-per-message logger to `stream` (stderr), dropping messages under `level`.
 *
 * @example
 * const logger = streamLogger(process.stderr, "info");
 * logger.warn("provider slow", { status: 429 }); // "warn  provider slow status=429"
 */
export function streamLogger(stream: OutputStream, level: LogLevel): Logger {
  const at = (l: LogLevel) => (message: string, attributes?: Readonly<Record<string, unknown>>) => {
    if (RANK[l] < RANK[level]) return;
    // Attributes carry provider values (a quarantined record's raw id): one line, no terminal escapes, whatever they hold.
    stream.write(`${printable(`${l.padEnd(5)} ${message}${safeAttributes(attributes)}`)}\n`);
  };
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

/** Metrics that are a level, not a count: the latest value replaces the previous one. */
const GAUGES: ReadonlySet<MetricName> = new Set<MetricName>(["QuarantineSize", "TransactionsBacklog"]);

/**
 * Metrics summed in memory by name (and `type` dimension, or the backlog's `status`), gauges kept at their latest value,
 * readable by the command.
 */
export class MemoryMetrics implements Metrics {
  readonly totals = new Map<string, number>();

  add(name: MetricName, value: number, _unit?: string, dimensions?: Readonly<Record<string, string>>): void {
    const split = dimensions?.type ?? dimensions?.status;
    const key = split === undefined ? name : `${name}:${split}`;
    this.totals.set(key, GAUGES.has(name) ? value : (this.totals.get(key) ?? 0) + value);
  }

  get(name: MetricName): number {
    return this.totals.get(name) ?? 0;
  }
}

/** Wall clock of the process (the shared one). */
export { systemClock } from "../clock.js";

/**
 * Wraps a publisher so the events it accepted (all but the failed ones) are also handed to `onPublished`,
 * e.g. the console printer of `demo`.
 *
 * @example
 * const publisher = observePublished(jsonl, (events) => events.forEach((e) => print(e)));
 */
export function observePublished(inner: EventPublisher, onPublished: (events: readonly BridgeEvent[]) => void): EventPublisher {
  return {
    async publish(events, options) {
      const result = await inner.publish(events, options);
      const failed = new Set(result.failed.map((f) => f.event.detail.id));
      onPublished(failed.size === 0 ? events : events.filter((e) => !failed.has(e.detail.id)));
      return result;
    },
  };
}
