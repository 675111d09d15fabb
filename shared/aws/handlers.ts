/**
 * Handler factories for the Lambda entries in functions/: middy with Powertools Logger, Metrics (EMF) and Tracer,
 * the environment validated once per container, the tenant runtime cached per container, and the work delegated to
 * `runCycle` / `rotateProviderSecret`. Factories take every dependency so tests run them without Lambda.
 */
import { Logger } from "@aws-lambda-powertools/logger";
import { injectLambdaContext } from "@aws-lambda-powertools/logger/middleware";
import { Metrics } from "@aws-lambda-powertools/metrics";
import { logMetrics } from "@aws-lambda-powertools/metrics/middleware";
import { Tracer } from "@aws-lambda-powertools/tracer";
import { captureLambdaHandler } from "@aws-lambda-powertools/tracer/middleware";
import middy from "@middy/core";
import type { Context } from "aws-lambda";
import type { ConformReport } from "../bridge/conform.js";
import type { Clock } from "../bridge/ports.js";
import type { PullStatus } from "../bridge/provider.js";
import { redrivenCount, type RedriveReport } from "../bridge/redrive.js";
import { totalPublished, type CycleReport } from "../bridge/report.js";
import type { FetchLike } from "../qashio/http.js";
import { systemClock } from "./clock.js";
import { DEFAULT_METRICS_NAMESPACE, DEFAULT_SERVICE_NAME, INVOCATION_EARLY_END_MS, checkPollerTimeout, cycleDeadline, loadConfig, logLevelOf, validTenantOf, type RuntimeConfig } from "./config.js";
import { runConformPii, runCycle, runRedrive, type CycleKind, type Leased } from "./cycle.js";
import { RotationError } from "./errors.js";
import { PowertoolsLoggerAdapter, PowertoolsMetricsAdapter, awsCallOf, nameFailedCalls } from "./observability.js";
import { cardModeOf, checkPollTarget, conformCursorOf, pollActionOf, type PollAction, type PollEvent } from "./poll-event.js";
import { ProviderSecretClient } from "./provider-secret.js";
import { ROTATION_STEPS, rotateProviderSecret, skipRotation, skipsRotation, type RotationEvent } from "./rotation.js";
import { RuntimeCache, defaultAwsClients, rotationDeps, type AwsClients, type TenantRuntime } from "./runtime.js";
import { dropUnparsedAnswers } from "./unparsed-answers.js";

/** What the handlers are built from; everything defaults to the Lambda environment. */
export interface HandlerOptions {
  /** @default process.env */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Built once per container. @default defaultAwsClients */
  readonly clients?: () => AwsClients;
  /** Provider fetch. @default nodeHttpFetch (the client's keep-alive node:http transport) */
  readonly fetch?: FetchLike;
  /** @default systemClock */
  readonly clock?: Clock;
  /** How long the function's process has run (ms), read at a container's first invocation. @default process.uptime() */
  readonly processUptimeMs?: () => number;
  readonly logger?: Logger;
  readonly metrics?: Metrics;
  readonly tracer?: Tracer;
}

/** Why leased work skipped (`lease_held`: another invocation holds a cycle lease it needs). */
type SkipReason = Extract<Leased<unknown>, { readonly status: "skipped" }>["reason"];

/** What a poll invocation returns (no PII, no token): the cycle's counters, or why it skipped. */
export interface PollResult {
  readonly kind: CycleKind;
  readonly status: "completed" | "skipped";
  /** Set for an invocation that asked for something else than a cycle, completed or skipped. */
  readonly action?: Exclude<PollAction, "cycle">;
  /** A skipped invocation: why. */
  readonly reason?: SkipReason;
  readonly outcome?: string;
  readonly published?: number;
  readonly acknowledged?: number;
  /** Ids the provider refused to acknowledge (metric `AcknowledgeRefused`; the warn log names them). */
  readonly acknowledgeRefused?: number;
  readonly quarantined?: number;
  /**
   * A transaction cycle: what the provider listed under each pull status when the cycle first read that list (the
   * report's `backlog`, metric `TransactionsBacklog`), so a cycle that stopped at its deadline shows what it left.
   * Absent when no count was read (a card cycle, a stop before the first read).
   */
  readonly backlog?: Partial<Record<PullStatus, number>>;
  readonly durationMs?: number;
  /** A re-drive: quarantine records whose transaction is now delivered, removed (all of them: a count, never their ids). */
  readonly redriven?: number;
  /** A re-drive: records kept (their quarantine ids, the first KEPT_RECORDS_NAMED, see shared/bridge/redrive.ts; the log says why). */
  readonly kept?: readonly string[];
  /** A re-drive that kept more records than `kept` names: how many more (the log counts them by why). */
  readonly keptNotNamed?: number;
  /** A re-drive that stopped before walking the whole quarantine: records past where it stopped were not looked at. */
  readonly notScanned?: true;
  /** A PII conform pass: snapshots read. */
  readonly scanned?: number;
  /** A PII conform pass: snapshots rewritten with their personal fields masked. */
  readonly rewritten?: number;
  /** A PII conform pass: quarantine records whose raw body was rewritten masked. */
  readonly quarantineRewritten?: number;
  /** A PII conform pass stopped at its deadline: invoke again with it as the event's `cursor` to go on (same `piiMode`). */
  readonly cursor?: string;
}

/** Powertools' own "no metrics" warning: expected on an invocation that skipped (a lease held elsewhere). */
const NO_METRICS_WARNING = "No application metrics to publish";

/** The logger option of Powertools Metrics (its `GenericLogger`, taken from the options type: commons is not our dependency). */
type MetricsLogger = NonNullable<NonNullable<ConstructorParameters<typeof Metrics>[0]>["logger"]>;

/**
 * The logger Powertools Metrics reports its own problems to: the function's, so they are structured JSON with the
 * tenant like every other line (Powertools prints plain text otherwise), and its "no metrics" warning at debug level.
 */
function metricsLogger(logger: Logger): MetricsLogger {
  return {
    debug: (message) => logger.debug(message),
    info: (message) => logger.info(message),
    warn: (message) => (String(message).startsWith(NO_METRICS_WARNING) ? logger.debug(message) : logger.warn(message)),
    error: (message) => logger.error(message),
  };
}

/** Container-level state shared by the invocations of one handler. */
class Container {
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly tracer: Tracer;
  readonly loggerPort: PowertoolsLoggerAdapter;
  readonly metricsPort: PowertoolsMetricsAdapter;
  readonly #cache = new RuntimeCache();
  #config?: RuntimeConfig;
  #clients?: AwsClients;
  /** Set at the container's first invocation. */
  #invoked = false;

  constructor(readonly options: HandlerOptions) {
    this.clock = options.clock ?? systemClock;
    // The documented defaults of POWERTOOLS_SERVICE_NAME / POWERTOOLS_METRICS_NAMESPACE (config.ts), read from the
    // function's environment: left to Powertools, an unset variable gives "service_undefined" / "default_namespace",
    // where no alarm or dashboard looks.
    const env = options.env ?? process.env;
    const serviceName = env.POWERTOOLS_SERVICE_NAME?.trim() || DEFAULT_SERVICE_NAME;
    const namespace = env.POWERTOOLS_METRICS_NAMESPACE?.trim() || DEFAULT_METRICS_NAMESPACE;
    // Given to the Logger, which reads its variables (POWERTOOLS_LOG_LEVEL, else LOG_LEVEL) upper case only: `debug`
    // would leave it at INFO unsaid. A value that is no level is left to it too (INFO), and named by config() in the
    // invocation's error.
    const logLevel = logLevelOf(env);
    this.logger = options.logger ?? new Logger({ serviceName, ...(logLevel === undefined ? {} : { logLevel }) });
    this.metrics = options.metrics ?? new Metrics({ serviceName, namespace, logger: metricsLogger(this.logger) });
    // The tenant on every line and metric from the start: a LambdaConfigurationError's line, and the ColdStart logMetrics
    // emits before the body validates the environment (without it, the one metric a `WHERE tenant = ...` query misses).
    // None when TENANT_ID is itself the bad variable: a config error never echoes a value, nor does the EMF line.
    const tenant = validTenantOf(env);
    if (tenant !== undefined) {
      this.logger.appendPersistentKeys({ tenant });
      this.metrics.setDefaultDimensions({ tenant });
    }
    this.tracer = options.tracer ?? new Tracer();
    this.loggerPort = new PowertoolsLoggerAdapter(this.logger);
    this.metricsPort = new PowertoolsMetricsAdapter(this.metrics);
  }

  /**
   * Validated config (once per container). Its tenant is on logs and metrics from the constructor already: loadConfig
   * takes TENANT_ID as validTenantOf does.
   */
  config(): RuntimeConfig {
    this.#config ??= loadConfig(this.options.env ?? process.env);
    return this.#config;
  }

  /**
   * How much of this invocation's time may have gone before its handler started: for the container's first, the
   * process's whole life (Lambda runs an Init phase over 10 s, or one after a crash, within that invocation's timeout);
   * nothing for a warm one. Call once per invocation.
   */
  timeLostBeforeEntryMs(): number {
    if (this.#invoked) return 0;
    this.#invoked = true;
    return this.options.processUptimeMs?.() ?? process.uptime() * 1000;
  }

  /** The SDK clients (once per container, traced, an answer they cannot parse quoted nowhere). */
  clients(): AwsClients {
    if (this.#clients === undefined) {
      const clients = (this.options.clients ?? defaultAwsClients)();
      for (const client of Object.values(clients)) {
        this.tracer.captureAWSv3Client(client);
        nameFailedCalls(client);
        dropUnparsedAnswers(client);
      }
      this.#clients = clients;
    }
    return this.#clients;
  }

  /**
   * The tenant runtime, its token store told when this invocation ends (`invocationEndsAt`, epoch ms): its saves store a
   * rotated refresh token before then, even while Secrets Manager hangs (token-store.ts, `saveVersion`).
   */
  async runtime(invocationEndsAt: number): Promise<TenantRuntime> {
    const config = this.config();
    const runtime = await this.#cache.get({
      config,
      clients: this.clients(),
      logger: this.loggerPort,
      metrics: this.metricsPort,
      clock: this.clock,
      ...(this.options.fetch !== undefined ? { fetch: this.options.fetch } : {}),
    });
    runtime.tokens.setInvocationEnd(invocationEndsAt);
    return runtime;
  }

  /**
   * Wraps a handler body in the Powertools middlewares. The metrics adapter's aggregated (dimensioned) data points are
   * flushed by a middleware used after logMetrics, so its `after` / `onError` run before logMetrics publishes: on
   * middy's early timeout (INVOCATION_EARLY_END_MS before Lambda's) the body is still running, and a flush in its
   * `finally` would come after the invocation. `describe` gives what the invocation was asked (the attributes its failure
   * lines carry, never a value from the event the handler would not echo).
   */
  wrap<E, R>(
    body: (event: E, context: Context, options: { readonly signal: AbortSignal }) => Promise<R>,
    describe: (event: E) => Readonly<Record<string, unknown>>,
  ) {
    const flush = () => this.metricsPort.flush();
    // The body's own catch never sees middy's early timeout (the body is still running): logged here, while the
    // invocation's context is still on the logger, so a timed-out invocation has its structured error line too.
    const onError = ({ error, event }: { readonly error: unknown; readonly event: E }) => {
      if (isInvocationTimeout(error)) {
        this.logger.error("Invocation timed out: the Lambda timeout came before the handler finished", {
          ...describe(event),
          error: { name: error.name, message: error.message },
        });
      }
      flush();
    };
    return middy(body, { timeoutEarlyInMillis: INVOCATION_EARLY_END_MS })
      .use(captureLambdaHandler(this.tracer))
      .use(injectLambdaContext(this.logger))
      .use(logMetrics(this.metrics, { captureColdStartMetric: true }))
      .use({ after: flush, onError });
  }
}

/**
 * True for the error middy throws at its early timeout (a few ms before the Lambda timeout): named `TimeoutError`
 * like the AWS SDK's, told apart by its cause.
 */
function isInvocationTimeout(error: unknown): error is Error {
  return error instanceof Error && error.name === "TimeoutError" && (error.cause as { package?: unknown } | undefined)?.package === "@middy/core";
}

/**
 * Logs a failure by name and message only (errors of this codebase never carry secrets), and for an SDK error (as it
 * escaped, or the cause of the error that wraps it) the call and table it came from, with `context` (what the
 * invocation was doing), then rethrows.
 */
function logFailure(logger: Logger, message: string, error: unknown, context: Readonly<Record<string, unknown>> = {}): never {
  const e = error instanceof Error ? error : new Error(String(error));
  logger.error(message, { ...context, error: { name: e.name, message: e.message, ...awsCallOf(error) } });
  throw error;
}

/** What a completed invocation reports besides its poller, status and action. */
type Summary = Omit<PollResult, "kind" | "status" | "action" | "reason">;

/** A cycle's counters. */
function cycleSummary(report: CycleReport): Summary {
  return {
    outcome: report.outcome,
    published: totalPublished(report),
    acknowledged: report.acknowledged,
    acknowledgeRefused: report.acknowledgeRefused,
    quarantined: report.quarantined,
    ...(report.backlog === undefined ? {} : { backlog: report.backlog }),
    durationMs: report.durationMs,
  };
}

/** The `redrive` action's counters, kept records by id (no PII). */
function redriveSummary(report: RedriveReport): Summary {
  return {
    // `deadline`: records were not reached, invoke again; `complete`: every record was tried (`kept` stay for good).
    outcome: report.cycle.outcome,
    published: totalPublished(report.cycle),
    redriven: redrivenCount(report),
    kept: report.kept.map(({ record }) => record.id),
    ...(report.keptNotNamed === undefined ? {} : { keptNotNamed: report.keptNotNamed }),
    ...(report.notScanned === undefined ? {} : { notScanned: report.notScanned }),
  };
}

/** The `conform-pii` action's counters, and where to go on after a deadline. */
function conformSummary(report: ConformReport): Summary {
  return {
    // `deadline`: invoke again with `cursor`; `complete`: every snapshot is in the current form; `full_mode`: nothing to do.
    outcome: report.outcome,
    scanned: report.scanned,
    rewritten: report.rewritten,
    quarantineRewritten: report.quarantineRewritten,
    durationMs: report.durationMs,
    ...(report.cursor === undefined ? {} : { cursor: report.cursor }),
  };
}

/** An action other than the cycle, as the result and the log lines name it (a scheduled cycle names none). */
function actionAsked(action: PollAction): { action?: Exclude<PollAction, "cycle"> } {
  return action === "cycle" ? {} : { action };
}

/**
 * What `kind`'s poller returns for the leased work of `action`: `skipped` and why, or the report's summary, logged as
 * `finished`; either names an action other than the cycle (an operator reading a hand-made invoke's result).
 */
function pollResultOf<T>(
  container: Container,
  kind: CycleKind,
  action: PollAction,
  result: Leased<T>,
  finished: string,
  summarize: (report: T) => Summary,
): PollResult {
  const asked = actionAsked(action);
  if (result.status === "skipped") return { kind, status: "skipped", ...asked, reason: result.reason };
  const summary: PollResult = { kind, status: "completed", ...asked, ...summarize(result.report) };
  container.logger.info(finished, { ...summary });
  return summary;
}

/**
 * Builds a poller handler (`poll-transactions` or `poll-cards`): validates the environment, wires the adapters,
 * takes the tenant's cycle lease and runs one engine cycle (or the operator action the event asks for) within the
 * invocation's remaining time.
 *
 * @example
 * export const handler = createPollHandler("transactions");
 */
export function createPollHandler(kind: CycleKind, options: HandlerOptions = {}) {
  const container = new Container(options);
  // Named on the failure lines as on the result: a hand-made re-drive's failure is no failed scheduled cycle.
  const describe = (event: PollEvent | undefined) => {
    try {
      return actionAsked(pollActionOf(event, kind));
    } catch {
      return {};
    }
  };
  return container.wrap<PollEvent | undefined, PollResult>(async (event, context, { signal }) => {
    try {
      // First thing: what is left at entry tells the function's timeout, which nothing else does.
      const remainingAtEntryMs = context.getRemainingTimeInMillis();
      const invocationEndsAt = container.clock.now() + remainingAtEntryMs;
      const lostMs = container.timeLostBeforeEntryMs();
      const action = pollActionOf(event, kind);
      const cursor = conformCursorOf(event, action);
      const cardMode = cardModeOf(event);
      checkPollTarget(event, kind, container.config().tenant);
      // Before the runtime, so before any provider call or write; conform-pii calls no provider, so needs less time.
      checkPollerTimeout(remainingAtEntryMs, lostMs, container.config().cycleBudgetMs, action);
      const runtime = await container.runtime(invocationEndsAt);
      const deadline = cycleDeadline(container.clock.now(), context.getRemainingTimeInMillis(), runtime.config.cycleBudgetMs);
      // Each takes middy's abort signal (its early timeout): work the invocation gave up on must not go on at a thaw.
      if (action === "redrive") return pollResultOf(container, kind, action, await runRedrive(runtime, { deadline, signal }), "Re-drive finished", redriveSummary);
      if (action === "conform-pii") {
        const result = await runConformPii(runtime, { deadline, signal, ...(cursor === undefined ? {} : { cursor }) });
        return pollResultOf(container, kind, action, result, "PII conform pass finished", conformSummary);
      }
      return pollResultOf(container, kind, action, await runCycle(runtime, kind, { deadline, cardMode, signal }), "Cycle finished", cycleSummary);
    } catch (error) {
      return logFailure(container.logger, "Cycle failed", error, describe(event));
    }
  }, describe);
}

/** Whether `event` has the shape Secrets Manager invokes a rotation function with (a hand-made invoke may not). */
function isRotationEvent(event: unknown): event is RotationEvent {
  if (typeof event !== "object" || event === null) return false;
  const { SecretId, ClientRequestToken, Step } = event as Record<string, unknown>;
  return typeof SecretId === "string" && typeof ClientRequestToken === "string" && typeof Step === "string";
}

/** Whether `step` is one of Secrets Manager's four rotation steps. */
function isRotationStep(step: string): boolean {
  return (ROTATION_STEPS as readonly string[]).includes(step);
}

/** The event's Step as a log attribute when it is one of Secrets Manager's four (a hand-made typo is not echoed). */
function rotationStepOf(event: unknown): { step?: string } {
  return isRotationEvent(event) && isRotationStep(event.Step) ? { step: event.Step } : {};
}

/**
 * Builds the Secrets Manager rotation handler of the provider secret (see rotation.ts for the step semantics). A
 * secret not yet onboarded (no refresh token), or one the pollers refresh often, completes its rotation as a logged
 * skip, without error.
 *
 * @example
 * export const handler = createRotationHandler();
 */
export function createRotationHandler(options: HandlerOptions = {}) {
  const container = new Container(options);
  return container.wrap<RotationEvent, void>(async (event, context) => {
    try {
      // The refresh must end, saved, well before the invocation does (rotation.ts).
      const invocationEndsAt = container.clock.now() + context.getRemainingTimeInMillis();
      const config = container.config();
      // A hand-made invoke (`null`, `{}`): named as such, not as a TypeError or an event for another secret.
      if (!isRotationEvent(event)) {
        throw new RotationError("Rotation event must be Secrets Manager's {SecretId, ClientRequestToken, Step} (strings)", config.secretId, "(event)");
      }
      if (event.SecretId !== config.secretId) {
        throw new RotationError("Rotation event is for a different secret than SECRET_ID", event.SecretId, event.Step);
      }
      // Named before any read: else a mistyped Step of a hand-made invoke reads as a version not under rotation.
      if (!isRotationStep(event.Step)) {
        throw new RotationError(`Rotation event Step must be one of ${ROTATION_STEPS.map((step) => `"${step}"`).join(", ")}`, event.SecretId, "(event)");
      }
      if (event.ClientRequestToken.trim() === "") throw new RotationError("Rotation event ClientRequestToken must not be empty", event.SecretId, event.Step);
      // Before the runtime, which needs a complete secret: one not yet onboarded has nothing to refresh.
      const { secrets } = container.clients();
      const secret = new ProviderSecretClient({ secrets, secretId: config.secretId, clock: container.clock, logger: container.loggerPort });
      const skip = await skipsRotation(event, secret, container.clock.now());
      if (skip !== undefined) {
        await skipRotation(event, { secrets, logger: container.loggerPort }, skip);
        return;
      }
      const runtime = await container.runtime(invocationEndsAt);
      const deps = await rotationDeps(runtime, {
        logger: container.loggerPort,
        metrics: container.metricsPort,
        invocationEndsAt,
        ...(options.fetch !== undefined ? { fetch: options.fetch } : {}),
      });
      await rotateProviderSecret(event, deps);
    } catch (error) {
      // Which step failed: most errors (an AWS call's, the provider's) do not say, and the runbook tells them apart by it.
      logFailure(container.logger, "Rotation step failed", error, rotationStepOf(event));
    }
  }, rotationStepOf);
}
