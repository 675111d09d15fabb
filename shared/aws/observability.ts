/**
 * Adapters from the engine's Logger and Metrics ports to Powertools Logger and Metrics (EMF), and the naming of a
 * failed SDK call for the failure log line.
 */
import type { Logger as PowertoolsLogger } from "@aws-lambda-powertools/logger";
import type { Metrics as PowertoolsMetrics } from "@aws-lambda-powertools/metrics";
import { MetricUnit } from "@aws-lambda-powertools/metrics";
import type { MetricUnit as PowertoolsMetricUnit } from "@aws-lambda-powertools/metrics/types";
import { causeMatching } from "../bridge/errors.js";
import { withSecretsHidden } from "../secret-attributes.js";
import type { Logger, MetricName, MetricUnit as PortMetricUnit, Metrics } from "../bridge/ports.js";

/**
 * Engine logger on Powertools Logger: structured JSON, attributes merged into the entry, the values of secret-looking
 * names hidden at any depth (secret-attributes.ts), as the CLI's logger hides them.
 */
export class PowertoolsLoggerAdapter implements Logger {
  constructor(private readonly logger: PowertoolsLogger) {}
  debug(message: string, attributes: Readonly<Record<string, unknown>> = {}): void {
    this.logger.debug(message, { ...withSecretsHidden(attributes) });
  }
  info(message: string, attributes: Readonly<Record<string, unknown>> = {}): void {
    this.logger.info(message, { ...withSecretsHidden(attributes) });
  }
  warn(message: string, attributes: Readonly<Record<string, unknown>> = {}): void {
    this.logger.warn(message, { ...withSecretsHidden(attributes) });
  }
  error(message: string, attributes: Readonly<Record<string, unknown>> = {}): void {
    this.logger.error(message, { ...withSecretsHidden(attributes) });
  }
}

const UNITS: Record<PortMetricUnit, PowertoolsMetricUnit> = {
  Count: MetricUnit.Count,
  Seconds: MetricUnit.Seconds,
  Milliseconds: MetricUnit.Milliseconds,
};

/**
 * Gauges of a state that can change within one invocation: a refresh loads a held token (TokenHeldInTable 1), then
 * writes the secret (0). An invocation publishes only the last value it reported (per dimension set), at `flush()`:
 * CloudWatch has no "last" statistic, and the period's maximum of both values would keep the alarm on after the state
 * cleared. A gauge reported as a count (TransactionsBacklog, per `status`) must not be summed either. TokenFamilyRevoked
 * gets one value per run, but a run given up at middy's early timeout ends at the container's next thaw, into that
 * invocation's buffer before its own run's value: a stale 1 must not outweigh the 0 of a run after re-onboarding.
 */
export const LAST_VALUE_METRICS: ReadonlySet<MetricName> = new Set<MetricName>(["TokenHeldInTable", "TokenFamilyRevoked", "TransactionsBacklog"]);

interface Aggregate {
  readonly name: MetricName;
  readonly unit: PortMetricUnit;
  readonly dimensions: Readonly<Record<string, string>>;
  values: number[];
}

/**
 * Engine metrics on Powertools Metrics. The tenant is a default dimension of the Powertools instance. Data points
 * with extra dimensions (`type`, `status_class`, `status`) are aggregated per dimension set (counts summed, gauges at
 * their last value) and emitted by `flush()` as one EMF document per dimension set (per value for other units),
 * instead of one document per call.
 * {@link LAST_VALUE_METRICS} are held until `flush()` too, which adds only their last value.
 *
 * @example
 * const metrics = new PowertoolsMetricsAdapter(powertoolsMetrics);
 * metrics.add("EventsPublished", 1, "Count", { type: "card.suspended" });
 * metrics.flush(); // before the logMetrics middleware publishes the rest
 */
export class PowertoolsMetricsAdapter implements Metrics {
  readonly #aggregates = new Map<string, Aggregate>();
  readonly #lastValues = new Map<MetricName, { readonly unit: PortMetricUnit; readonly value: number }>();

  constructor(private readonly metrics: PowertoolsMetrics) {}

  add(name: MetricName, value: number, unit: PortMetricUnit = "Count", dimensions?: Readonly<Record<string, string>>): void {
    if (dimensions === undefined || Object.keys(dimensions).length === 0) {
      if (LAST_VALUE_METRICS.has(name)) this.#lastValues.set(name, { unit, value });
      else this.metrics.addMetric(name, UNITS[unit], value);
      return;
    }
    const sorted = Object.fromEntries(Object.entries(dimensions).sort(([a], [b]) => a.localeCompare(b)));
    const key = JSON.stringify([name, unit, sorted]);
    const aggregate = this.#aggregates.get(key);
    if (aggregate === undefined) this.#aggregates.set(key, { name, unit, dimensions: sorted, values: [value] });
    else if (LAST_VALUE_METRICS.has(name)) aggregate.values = [value];
    else if (unit === "Count") aggregate.values[0] = (aggregate.values[0] ?? 0) + value;
    else aggregate.values.push(value);
  }

  /** Emits the aggregated dimensioned metrics, and adds the last value of each gauge to the invocation's buffer. */
  flush(): void {
    for (const [name, { unit, value }] of this.#lastValues) this.metrics.addMetric(name, UNITS[unit], value);
    this.#lastValues.clear();
    for (const aggregate of this.#aggregates.values()) {
      for (const value of aggregate.values) {
        // A single-metric instance publishes on addMetric and then drops its dimensions: one instance per value, and no
        // publishStoredMetrics() after it (it would find nothing and print a plain-text warning).
        const single = this.metrics.singleMetric();
        single.addDimensions({ ...aggregate.dimensions });
        single.addMetric(aggregate.name, UNITS[aggregate.unit], value);
      }
    }
    this.#aggregates.clear();
  }
}

/** Which SDK call failed: the service and operation, and the table a DynamoDB call was for (never a value or a key). */
export interface AwsCall {
  /** e.g. "DynamoDB GetItem" */
  readonly awsCall: string;
  /** e.g. "bridge-acme"; a batch call's tables comma-separated */
  readonly table?: string;
}

const failedCalls = new WeakMap<object, AwsCall>();
/** Stacks already set up: containers may share a client (tests do), and a stack refuses a second middleware of a name. */
const namingStacks = new WeakSet<object>();

/** The minimal middleware stack of an SDK v3 client (`client.middlewareStack`), typed loosely: clients differ in it. */
interface CallStack {
  add(middleware: (next: (args: { input: unknown }) => Promise<unknown>, context: { clientName?: string; commandName?: string }) => (args: { input: unknown }) => Promise<unknown>, options: { step: "initialize"; priority: "high"; name: string }): void;
}

/** The table a DynamoDB call names: its TableName, or a batch call's RequestItems keys (comma-separated). */
function tableOf(input: unknown): string | undefined {
  const { TableName, RequestItems } = (input ?? {}) as { TableName?: unknown; RequestItems?: unknown };
  if (typeof TableName === "string") return TableName;
  const tables = typeof RequestItems === "object" && RequestItems !== null ? Object.keys(RequestItems) : [];
  return tables.length > 0 ? tables.join(",") : undefined;
}

/**
 * Remembers, for every error a call of `client` fails with, which call it was (see {@link awsCallOf}). An error the
 * SDK raises escapes some adapters as it is, and DynamoDB's own words name nothing: a deleted table answers
 * `ResourceNotFoundException` "Requested resource not found".
 *
 * @example
 * for (const client of Object.values(clients)) nameFailedCalls(client);
 */
export function nameFailedCalls(client: { readonly middlewareStack: unknown }): void {
  const stack = client.middlewareStack as CallStack;
  if (namingStacks.has(stack)) return;
  namingStacks.add(stack);
  stack.add(
    (next, context) => async (args) => {
      try {
        return await next(args);
      } catch (error) {
        if (typeof error === "object" && error !== null && !failedCalls.has(error)) {
          const service = (context.clientName ?? "AWS").replace(/Client$/, "");
          const operation = (context.commandName ?? "call").replace(/Command$/, "");
          const table = tableOf(args.input);
          failedCalls.set(error, { awsCall: `${service} ${operation}`, ...(table === undefined ? {} : { table }) });
        }
        throw error;
      }
    },
    // Outermost, so it sees the error the caller gets, after the SDK's retries.
    { step: "initialize", priority: "high", name: "nameFailedCalls" },
  );
}

/**
 * The call `error` came from, when a client set up with {@link nameFailedCalls} raised it or raised one of its causes
 * (the engine wraps a store's failure in a CycleAbortedError, an adapter in its own error): the first named one
 * down the `cause` chain. Only the call's name and table, never anything of the cause's message.
 *
 * @example
 * logger.error("Cycle failed", { error: { name: e.name, message: e.message, ...awsCallOf(e) } });
 */
export function awsCallOf(error: unknown): AwsCall | undefined {
  const named = causeMatching(error, (e): e is object => typeof e === "object" && e !== null && failedCalls.has(e));
  return named === undefined ? undefined : failedCalls.get(named);
}
