/**
 * Lambda environment of every bridge function, validated once per container with zod. The variable names are the
 * contract with the CDK stack, which sets them (infra/constructs/bridge-function.ts; test/infra/tenant-stack.test.ts pins them).
 */
import * as z from "zod";
import { DEFAULT_DEADLINE_GRACE_MS, DEFAULT_SOURCE } from "../bridge/deps.js";
import { eventSourceSchema } from "../bridge/events/source-schema.js";
import { PII_MODES } from "../bridge/pii.js";
import { DEFAULT_LOCK_TTL_MS, DEFAULT_LOCK_WAIT_MS } from "../qashio/auth/token-provider.js";
import { resolveBaseUrl } from "../qashio/config.js";
import { FunctionTimeoutTooShortError, LambdaConfigurationError } from "./errors.js";
import { wordList } from "../word-list.js";
import {
  EVENT_BUS_ARN_PATTERN,
  EVENT_BUS_NAME_PATTERN,
  SECRET_ARN_PATTERN,
  SECRET_NAME_PATTERN,
  TENANT_ID_PATTERN,
  TENANT_ID_RULE,
} from "./resource-ids.js";
import type { PollAction } from "./poll-event.js";

export const DEFAULT_EVENT_SOURCE = DEFAULT_SOURCE;
export const DEFAULT_METRICS_NAMESPACE = "QashioBridge";
export const DEFAULT_SERVICE_NAME = "qashio-bridge";
/**
 * Time kept back from the Lambda's remaining time so a cycle ends cleanly before the timeout: the grace its provider
 * calls may run past the deadline (an acknowledge of a page already published), plus time to write that page's
 * snapshots and flush metrics. A token refresh a call needs is held within that grace too, lease and save included
 * (`refreshWithinCallDeadline`, runtime.ts).
 */
export const CYCLE_SAFETY_MARGIN_MS = DEFAULT_DEADLINE_GRACE_MS + 15_000;
/**
 * Lease length of one token refresh (runtime.ts): its first half bounds the refresh call, retries included; the second
 * is for the Secrets Manager writes, renewed while they run.
 */
export const TOKEN_LEASE_TTL_MS = DEFAULT_LOCK_TTL_MS;
/**
 * Smallest CYCLE_BUDGET_MS. A refresh starts only when its whole lease ends by the deadline of the call needing it, the
 * cycle's deadline plus DEFAULT_DEADLINE_GRACE_MS (`refreshWithinCallDeadline`, runtime.ts): under the lease less that
 * grace no expired access token is ever refreshed, and every cycle ends `deadline` with nothing pulled and no error. A
 * budget of the whole lease leaves the cycle that grace to reach its first provider call (its lease, the token store,
 * a wait for the other poller's refresh).
 */
export const MIN_CYCLE_BUDGET_MS = TOKEN_LEASE_TTL_MS;

/**
 * How long before the Lambda timeout middy gives an invocation up (its early timeout; its default is 5 ms). After it, the
 * timeout's log line, the metrics flush, the tracer's record of the error and the runtime's answer still run, the last
 * two formatting the error's stack: source-mapped in the bundle (`--enable-source-maps`), the first stack a container
 * formats parses the bundle's source map, ~100 ms on a fast machine, more on a Lambda's fraction of a vCPU. Should
 * Lambda's own timeout come first, it resets the execution environment: the page the abandoned cycle holds, to finish
 * at the next thaw, and a rotated refresh token held in memory go with it. Taken out of the 30 s kept back after the
 * cycle's deadline (CYCLE_SAFETY_MARGIN_MS), and within the token store's SAVE_END_MARGIN_MS, so a save still stores
 * the token before middy's end.
 */
export const INVOCATION_EARLY_END_MS = 1_000;

/**
 * Largest CYCLE_BUDGET_MS: Lambda's longest timeout, 15 minutes. The remaining time bounds every cycle below it
 * ({@link cycleDeadline}), so a larger budget is never reached: a typo (an extra digit, seconds taken for ms).
 */
export const MAX_CYCLE_BUDGET_MS = 900_000;

/**
 * Shortest Lambda timeout of a poller: its cycle gets MIN_CYCLE_BUDGET_MS once CYCLE_SAFETY_MARGIN_MS is kept back from
 * the remaining time ({@link cycleDeadline}). The stack never sets less (60 s, `pollerTimeout`).
 */
export const MIN_POLLER_TIMEOUT_MS = MIN_CYCLE_BUDGET_MS + CYCLE_SAFETY_MARGIN_MS;

/**
 * Shortest Lambda timeout of a poller's `conform-pii` pass, which needs no token (so not MIN_POLLER_TIMEOUT_MS): the
 * CYCLE_SAFETY_MARGIN_MS kept back ({@link cycleDeadline}) and 5 s for the pass to reach its first page (the runtime,
 * both cycle leases, the pass id's read). A pass left no time past the margin ends `deadline` before that page, with
 * nothing read and no cursor to go on from, on every invoke.
 */
export const MIN_CONFORM_TIMEOUT_MS = CYCLE_SAFETY_MARGIN_MS + 5_000;

/**
 * Least time a token refresh's lease ends before the function's timeout: for a save outlasting the lease (renewed while
 * it runs), the lease's release and the metrics flush. A poller's refresh lease ends by its call's deadline, the cycle's
 * deadline plus DEFAULT_DEADLINE_GRACE_MS, so at least this long before its timeout; the rotation function's too
 * (rotation.ts): a timeout cutting a refresh between spending the refresh token and saving its successor revokes the family.
 * So the latest refresh's save starts at least 30 s before the timeout (the lease's second half and this margin). A
 * Secrets Manager that hangs could take that save far past it (a read and 3 write rounds of SDK_CALL_MAX_MS each,
 * ~52 s); the token store, told the invocation's end, stores the token by SAVE_END_MARGIN_MS before it all the same:
 * held in the table first, the hold started by SAVE_END_MARGIN_MS + SDK_CALL_MAX_MS (15 s) before the end at the
 * latest, and no secret call started that could outlast it (token-store.ts, `saveVersion`).
 */
export const REFRESH_TIMEOUT_MARGIN_MS = CYCLE_SAFETY_MARGIN_MS - DEFAULT_DEADLINE_GRACE_MS;

/**
 * Shortest Lambda timeout with which the rotation function's refresh always starts: the longest wait for the refresh
 * lease, the lease, and {@link REFRESH_TIMEOUT_MARGIN_MS}. With less it may refuse to refresh (nothing spent). The stack
 * sets 10 minutes.
 */
export const MIN_ROTATION_TIMEOUT_MS = DEFAULT_LOCK_WAIT_MS + TOKEN_LEASE_TTL_MS + REFRESH_TIMEOUT_MARGIN_MS;

/** How long one SDK request attempt may take (connecting, then waiting for the response), and how many attempts. */
export interface SdkTimeouts {
  readonly connectionTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly maxAttempts: number;
}

/**
 * Without these the SDK waits on a silent connection until its 300 s socket timeout. Both timers start with the
 * attempt, so one attempt lasts at most `requestTimeoutMs`; the SDK's standard retry then tries again, 3 attempts for
 * every client (DynamoDB's would make 4), and the adapters do not retry the final `TimeoutError` (retry.ts; the
 * provider secret's write is the one exception, paced by the invocation's end: see provider-secret.ts). So a silent
 * endpoint fails one call after about 3 x 4 s = 12 s (plus the SDK's sub-second backoff, SDK_CALL_MAX_MS), within the
 * part of CYCLE_SAFETY_MARGIN_MS kept for the writes after the provider calls' 15 s grace. Nothing ties it to the cycle's deadline. 4 s is ample: every call of
 * the bridge is small (a page of keys, 25 writes, 10 events, a secret).
 */
export const SDK_TIMEOUTS: SdkTimeouts = { connectionTimeoutMs: 3_000, requestTimeoutMs: 4_000, maxAttempts: 3 };

/**
 * Longest one AWS SDK call of the bridge's clients takes against a silent endpoint: every attempt of
 * {@link SDK_TIMEOUTS} timing out, and the SDK's backoff between them (under a second). The token store paces its
 * secret writes and its fallback to the table by it (token-store.ts, `saveVersion`).
 */
export const SDK_CALL_MAX_MS = SDK_TIMEOUTS.maxAttempts * SDK_TIMEOUTS.requestTimeoutMs + 1_000;

const nonEmpty = z.string().trim().min(1, "must not be empty");

/** A resource named by `name` or `arn` (resource-ids.ts), trimmed and refused blank as every variable. */
function nameOrArn(name: RegExp, arn: RegExp, problem: string) {
  return nonEmpty.pipe(z.string().refine((id) => name.test(id) || arn.test(id), problem));
}

/** One of `values`, trimmed and refused blank as every variable (zod's own enum message reads "Invalid option"). */
function oneOf<const T extends readonly [string, ...string[]]>(values: T) {
  return nonEmpty.pipe(z.enum(values, `must be ${wordList(values, "or")}`));
}

/** Decimal digits only: Number() would also take `0x1d4c0`, `1e5`, `+1` or `1.0`, none the stack writes. */
const wholeMilliseconds = z
  .string()
  .regex(/^\d+$/, "must be a whole number of milliseconds in decimal digits, e.g. 45000")
  .transform(Number);

/** Powertools Logger's levels. It takes them upper case only from its variables, and ignores any other value unsaid. */
export const LOG_LEVELS = ["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "CRITICAL", "SILENT"] as const;
const LOG_LEVEL_NAMES = wordList(LOG_LEVELS, "or").toLowerCase();

type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * The variable Powertools Logger takes its level from: POWERTOOLS_LOG_LEVEL, else its legacy LOG_LEVEL, with the level
 * its value names in any case (undefined when it names none). Powertools trims both and takes a blank one as unset (its
 * `getStringFromEnv`, then `||`), so does this; undefined when neither is set.
 */
function logLevelSource(
  env: Readonly<Record<string, string | undefined>>,
): { variable: "POWERTOOLS_LOG_LEVEL" | "LOG_LEVEL"; level: LogLevel | undefined } | undefined {
  const powertools = env.POWERTOOLS_LOG_LEVEL?.trim();
  const variable = powertools ? "POWERTOOLS_LOG_LEVEL" : "LOG_LEVEL";
  const value = (powertools || env.LOG_LEVEL?.trim())?.toUpperCase();
  return value ? { variable, level: LOG_LEVELS.find((known) => known === value) } : undefined;
}

/**
 * The function's log level from the variable Powertools Logger reads, POWERTOOLS_LOG_LEVEL, or its legacy LOG_LEVEL
 * when that is unset or blank, in any case (`debug`, as the CLI's BRIDGE_LOG_LEVEL spells it), or undefined when
 * neither is set or it is not a level ({@link loadConfig} names it then).
 *
 * @example
 * const level = logLevelOf({ POWERTOOLS_LOG_LEVEL: " ", LOG_LEVEL: "debug" }); // "DEBUG"
 */
export function logLevelOf(env: Readonly<Record<string, string | undefined>>): LogLevel | undefined {
  return logLevelSource(env)?.level;
}

const EnvSchema = z.object({
  // The tenants file's rule, from which the stack writes it: an id it could never have written was edited by hand.
  // Piped, so a blank one is named once, as empty.
  TENANT_ID: nonEmpty.pipe(z.string().regex(TENANT_ID_PATTERN, TENANT_ID_RULE)),
  QASHIO_BASE_URL: nonEmpty,
  // DynamoDB's rule, so a typo is named here rather than failing every call as a ValidationException naming nothing.
  TABLE_NAME: nonEmpty.pipe(
    z
      .string()
      .regex(
        /^(?:arn:aws[a-z-]*:dynamodb:[a-z0-9-]+:\d{12}:table\/)?[A-Za-z0-9_.-]{3,255}$/,
        "must be a DynamoDB table name (3 to 255 letters, digits, _ . or -) or a table's ARN",
      ),
  ),
  SECRET_ID: nameOrArn(SECRET_NAME_PATTERN, SECRET_ARN_PATTERN, "must be a Secrets Manager secret name or ARN"),
  EVENT_BUS_NAME: nameOrArn(EVENT_BUS_NAME_PATTERN, EVENT_BUS_ARN_PATTERN, "must be an event bus name or ARN"),
  EVENT_SOURCE: nonEmpty.pipe(eventSourceSchema).default(DEFAULT_EVENT_SOURCE),
  PII_MODE: oneOf(PII_MODES),
  EMIT_CARD_CREATED: oneOf(["true", "false"]).default("false"),
  CARD_DETAILS: oneOf(["true", "false"]).default("false"),
  CYCLE_BUDGET_MS: nonEmpty
    .pipe(wholeMilliseconds)
    // Checks, not a pipe into z.number(): that would call the Infinity of a long digit string "not a number".
    .check(
      z.gte(
        MIN_CYCLE_BUDGET_MS,
        `must be at least ${MIN_CYCLE_BUDGET_MS} (ms): a token refresh starts only when its ${TOKEN_LEASE_TTL_MS / 1000} s lease ends by ` +
          `the cycle's deadline plus the calls' ${DEFAULT_DEADLINE_GRACE_MS / 1000} s grace; under ${TOKEN_LEASE_TTL_MS - DEFAULT_DEADLINE_GRACE_MS} ` +
          "no expired access token is ever refreshed (every cycle ends at its deadline with nothing pulled), and the rest is the cycle's " +
          "time to reach its first provider call",
      ),
      z.lte(
        MAX_CYCLE_BUDGET_MS,
        `must be at most ${MAX_CYCLE_BUDGET_MS} (ms): no Lambda runs longer than ${MAX_CYCLE_BUDGET_MS / 60_000} minutes, and the remaining ` +
          "time bounds the cycle below it, so a larger budget is never reached (a typo: an extra digit, or seconds meant)",
      ),
    )
    .optional(),
  // Powertools Metrics makes it the `service` dimension of every metric: CloudWatch's rule for a dimension value (its
  // Dimension API) is 1 to 1024 ASCII characters, no control character.
  POWERTOOLS_SERVICE_NAME: nonEmpty
    .pipe(
      z
        .string()
        .regex(/^[\x20-\x7E]{1,1024}$/, "must be at most 1024 printable ASCII characters (CloudWatch's rule for a dimension value: it is the metrics' service dimension)"),
    )
    .default(DEFAULT_SERVICE_NAME),
  // CloudWatch's namespace rule: under any other it extracts none of the EMF lines' metrics, and says nothing.
  POWERTOOLS_METRICS_NAMESPACE: nonEmpty
    .pipe(
      z
        .string()
        .regex(/^[A-Za-z0-9 ._/#:-]{1,255}$/, "must be at most 255 ASCII letters, digits, spaces or . - _ / # : (CloudWatch extracts no metric under another namespace)")
        .regex(/^(?!AWS\/)/, "must not start with AWS/ (kept for AWS services)"),
    )
    .default(DEFAULT_METRICS_NAMESPACE),
});

/**
 * TENANT_ID as {@link loadConfig} takes it (trimmed) when that variable alone is valid, whatever else is wrong; else
 * undefined, so an invalid value is never echoed.
 *
 * @example
 * const tenant = validTenantOf(process.env); // "acme", or undefined for "acme#1"
 */
export function validTenantOf(env: Readonly<Record<string, string | undefined>>): string | undefined {
  const parsed = EnvSchema.shape.TENANT_ID.safeParse(env.TENANT_ID);
  return parsed.success ? parsed.data : undefined;
}

/** Validated settings of one function. */
export interface RuntimeConfig {
  readonly tenant: string;
  readonly baseUrl: string;
  readonly tableName: string;
  readonly secretId: string;
  readonly eventBusName: string;
  readonly eventSource: string;
  readonly piiMode: "full" | "redact" | "hash";
  readonly emitCardCreated: boolean;
  /** Read each card's detail in the card walk (limit amounts and other settings the list does not show). */
  readonly cardDetails: boolean;
  /** Upper bound of one cycle, {@link MIN_CYCLE_BUDGET_MS} to {@link MAX_CYCLE_BUDGET_MS}; the Lambda's remaining time (minus a margin) bounds it too. */
  readonly cycleBudgetMs?: number;
  readonly serviceName: string;
  readonly metricsNamespace: string;
}

/**
 * Reads and validates the function environment.
 *
 * @throws LambdaConfigurationError naming every missing or invalid variable (values are never echoed: some are ARNs of
 *   secrets, and none is needed to fix the problem).
 * @example
 * const config = loadConfig(process.env);
 */
export function loadConfig(env: Readonly<Record<string, string | undefined>> = process.env): RuntimeConfig {
  const parsed = EnvSchema.safeParse(env);
  const issues: { variable: string; problem: string }[] = [];
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const variable = String(issue.path[0] ?? "(environment)");
      // An unset variable without a default is missing, whatever zod calls it (an enum reports `invalid_value`).
      const problem = env[variable] === undefined ? "is required" : issue.message;
      issues.push({ variable, problem });
    }
  }
  // Only the variable Powertools reads is checked: a typo there would leave it at INFO unsaid, and LOG_LEVEL is unread
  // once POWERTOOLS_LOG_LEVEL is set (another tool's variable, perhaps).
  const levelSource = logLevelSource(env);
  if (levelSource !== undefined && levelSource.level === undefined) {
    const why = levelSource.variable === "LOG_LEVEL" ? `; read as POWERTOOLS_LOG_LEVEL is ${env.POWERTOOLS_LOG_LEVEL === undefined ? "unset" : "blank"}` : "";
    issues.push({ variable: levelSource.variable, problem: `must be one of ${LOG_LEVEL_NAMES} (any case${why})` });
  }
  // Resolved whatever else is wrong, so one error names every bad setting (not the base URL only once the rest is fixed).
  let baseUrl: string | undefined;
  const target = env.QASHIO_BASE_URL?.trim();
  if (target && !issues.some((i) => i.variable === "QASHIO_BASE_URL")) {
    try {
      baseUrl = resolveBaseUrl(target, env);
    } catch (error) {
      issues.push({ variable: "QASHIO_BASE_URL", problem: (error as Error).message });
    }
  }
  if (!parsed.success || baseUrl === undefined || issues.length > 0) {
    const list = issues.map((i) => `${i.variable} ${i.problem}`).join("; ");
    throw new LambdaConfigurationError(`Invalid function environment: ${list}`, issues);
  }
  const data = parsed.data;
  return {
    tenant: data.TENANT_ID,
    baseUrl,
    tableName: data.TABLE_NAME,
    secretId: data.SECRET_ID,
    eventBusName: data.EVENT_BUS_NAME,
    eventSource: data.EVENT_SOURCE,
    piiMode: data.PII_MODE,
    emitCardCreated: data.EMIT_CARD_CREATED === "true",
    cardDetails: data.CARD_DETAILS === "true",
    ...(data.CYCLE_BUDGET_MS !== undefined ? { cycleBudgetMs: data.CYCLE_BUDGET_MS } : {}),
    serviceName: data.POWERTOOLS_SERVICE_NAME,
    metricsNamespace: data.POWERTOOLS_METRICS_NAMESPACE,
  };
}

/**
 * Epoch ms at which the cycle stops starting new work: the configured budget, capped by the Lambda's remaining time
 * minus a safety margin.
 */
export function cycleDeadline(now: number, remainingMs: number, budgetMs?: number): number {
  const available = Math.max(0, remainingMs - CYCLE_SAFETY_MARGIN_MS);
  return now + Math.min(available, budgetMs ?? Number.POSITIVE_INFINITY);
}

/**
 * Refuses an invocation of a poller whose Lambda timeout is under the minimum of its `action` (set by hand):
 * {@link MIN_POLLER_TIMEOUT_MS} for work that calls the provider, {@link MIN_CONFORM_TIMEOUT_MS} for a `conform-pii`
 * pass. The environment cannot show it (Lambda sets no variable with the timeout), so it is taken from the remaining
 * time at handler entry plus `lostMs`, the time the invocation may have spent before its handler started, rounded up
 * to the whole seconds Lambda timeouts come in. That is the timeout or more, so a late start never makes the refusal.
 *
 * @param budgetMs CYCLE_BUDGET_MS, which the stack sets to its timeout less CYCLE_SAFETY_MARGIN_MS (named in the error).
 * @throws FunctionTimeoutTooShortError naming the timeout, the minimum and the stack's value.
 * @example
 * checkPollerTimeout(context.getRemainingTimeInMillis(), 0, config.cycleBudgetMs, "cycle");
 */
export function checkPollerTimeout(remainingAtEntryMs: number, lostMs: number, budgetMs?: number, action: PollAction = "cycle"): void {
  const timeoutMs = Math.ceil((remainingAtEntryMs + lostMs) / 1000) * 1000;
  const minimumMs = action === "conform-pii" ? MIN_CONFORM_TIMEOUT_MS : MIN_POLLER_TIMEOUT_MS;
  if (timeoutMs >= minimumMs) return;
  const stackTimeoutMs = budgetMs === undefined ? undefined : budgetMs + CYCLE_SAFETY_MARGIN_MS;
  const workMinimumMs = minimumMs - CYCLE_SAFETY_MARGIN_MS;
  throw new FunctionTimeoutTooShortError(timeoutMs, minimumMs, workMinimumMs, stackTimeoutMs, {
    action: action === "conform-pii" ? action : "cycle",
    pollerMinimumMs: MIN_POLLER_TIMEOUT_MS,
  });
}
