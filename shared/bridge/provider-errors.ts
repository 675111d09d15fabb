/**
 * What a failed provider call was: a refused page size, a revoked token family, a token that could not be had, a
 * status class. Read by shape and name, as the engine does not depend on the client's classes, and through the
 * {@link StepFailure} a cycle wraps a failure in, so the cycles and the runners around them classify one error alike.
 */
import { logToken } from "../log-token.js";
import { TOKEN_PATH } from "../qashio/auth/oauth.js";
import { statusClassOf, type StatusClass } from "../qashio/errors.js";
import { causeMatching } from "./errors.js";
import { mapLimit } from "./map-limit.js";
import { SINGLE_READ_CONCURRENCY } from "./provider.js";

/** A failed dependency call, tagged with what was being done (internal; converted at the cycle boundary). */
export class StepFailure extends Error {
  override name = "StepFailure";
  constructor(
    readonly step: string,
    options: ErrorOptions,
  ) {
    super(step, options);
  }
}

/** The client's RetryDeferredError (see `ProviderCallOptions.callerRetries`), seen by name. */
export function retryDeferred(err: unknown): (Error & { delayMs: number; attempt: number }) | undefined {
  return causeMatching(
    err,
    (e): e is Error & { delayMs: number; attempt: number } =>
      e instanceof Error &&
      e.name === "RetryDeferredError" &&
      typeof (e as { delayMs?: unknown }).delayMs === "number" &&
      typeof (e as { attempt?: unknown }).attempt === "number",
  );
}

/** The client's DeadlineExceededError, seen by name (the engine takes no class of the client). */
export function deadlineExceeded(err: unknown): (Error & { deadline: number }) | undefined {
  return causeMatching(
    err,
    (e): e is Error & { deadline: number } =>
      e instanceof Error && e.name === "DeadlineExceededError" && typeof (e as { deadline?: unknown }).deadline === "number",
  );
}

/**
 * A 400 from the provider (or the client's own request check) naming `page_size`, seen directly or through a step.
 *
 * @example
 * ```ts
 * isPageSizeRejection(Object.assign(new Error("x"), { status: 400, errors: [{ field: "page_size", code: "OUT_OF_RANGE" }] })); // true
 * ```
 */
export function isPageSizeRejection(err: unknown): boolean {
  const refusal = providerRefusal(err);
  if (refusal === undefined || (refusal.status !== 400 && refusal.name !== "InvalidRequestError")) return false;
  return refusal.errors.some((x) => x?.field === "page_size");
}

/** One entry of a provider error's `errors[]`: the field it names and the error code. */
export type ProviderErrorEntry = { readonly field?: unknown; readonly code?: unknown } | null;

/**
 * The provider error in `err`'s cause chain that lists `errors[]` (a step failure wraps the client's error), if any;
 * read by shape, as the engine does not depend on the client's classes.
 *
 * @example
 * ```ts
 * providerRefusal(stepFailure)?.errors; // [{ field: "transaction_ids.3", code: "NOT_FOUND", ... }]
 * ```
 */
export function providerRefusal(
  err: unknown,
): { readonly errors: readonly ProviderErrorEntry[]; readonly status?: unknown; readonly name?: unknown; readonly requestId?: unknown } | undefined {
  return causeMatching(err, (e): e is { errors: ProviderErrorEntry[] } => Array.isArray((e as { errors?: unknown } | null)?.errors));
}

/** Entries of a provider error's `errors[]` named in an abort message; the rest are counted. */
const MAX_NAMED_ERRORS = 10;

/**
 * `field code` of each entry of a provider error's `errors[]` (e.g. `transaction_ids.3 NOT_FOUND`), so an operator
 * sees which input the provider refused. Entry messages are left out: they may quote the refused values.
 */
export function errorFields(err: unknown): string | undefined {
  const errors = providerRefusal(err)?.errors ?? [];
  if (errors.length === 0) return undefined;
  const named = errors.slice(0, MAX_NAMED_ERRORS).map((e) => {
    const { field, code } = e ?? {};
    // Only identifiers (logToken): a provider other than the client, or a client that let one through, could put
    // free text holding a value into either.
    return `${field === null || field === undefined ? "(request)" : logToken(field)} ${logToken(code)}`;
  });
  const more = errors.length - named.length;
  return named.join(", ") + (more > 0 ? ` and ${more} more` : "");
}

/** Reads `status` / `requestId` off a provider error without depending on its class. */
export function errorContext(err: unknown): { status?: number; requestId?: string; name: string; message: string } {
  if (!(err instanceof Error)) return { name: "Error", message: String(err) };
  const e = err as Error & { status?: unknown; requestId?: unknown };
  return {
    name: e.name,
    message: e.message,
    status: typeof e.status === "number" ? e.status : undefined,
    requestId: typeof e.requestId === "string" ? e.requestId : undefined,
  };
}

/** Error name and HTTP status (if it had one) of a failed provider call, seen through the step it failed in. */
export function failedCallOf(err: unknown): { readonly name: string; readonly status?: number } {
  return errorContext(err instanceof StepFailure ? err.cause : err);
}

/** HTTP status of a failed provider call (seen through the step it failed in), if it had one. */
export function statusOf(err: unknown): number | undefined {
  return failedCallOf(err).status;
}

/** True when `err` (or a cause) is the client's ReauthorizationRequiredError (token family revoked). */
export function isReauthorizationRequired(err: unknown): boolean {
  return causeMatching(err, (e): e is Error => e instanceof Error && e.name === "ReauthorizationRequiredError") !== undefined;
}

/**
 * True when `err` (or a cause) is a token endpoint refusal that may have been of the client credentials rather than of
 * the refresh token (the client's `ReauthorizationRequiredError.clientMayBeRefused`: a 401 naming no `invalid_grant`),
 * read by shape. Not the client's own `clientMayBeRefused`, which reads one answer's status and codes.
 *
 * @example
 * ```ts
 * if (causedByClientRefusal(err)) console.warn("check the client id and secret first");
 * ```
 */
export function causedByClientRefusal(err: unknown): boolean {
  return causeMatching(err, (e): e is Error => e instanceof Error && (e as { clientMayBeRefused?: unknown }).clientMayBeRefused === true) !== undefined;
}

/**
 * True when `err` (or a cause) came from getting a token for a call, not from the call: the token endpoint refused
 * (a revoked family, wrong client credentials), whatever its status, or no token could be had at all (the client's
 * TokenUnavailableError: none stored, the refresh lock held elsewhere, rotated tokens not saved). Read structurally,
 * as the client's errors carry the path they failed on, and by name.
 */
export function isTokenFailure(err: unknown): boolean {
  const fromGettingToken = (e: unknown): e is Error =>
    e instanceof Error && ((e as { path?: unknown }).path === TOKEN_PATH || e.name === "TokenUnavailableError");
  return isReauthorizationRequired(err) || causeMatching(err, fromGettingToken) !== undefined;
}

/**
 * Runs single provider reads SINGLE_READ_CONCURRENCY at a time through {@link mapLimit} (answers in `items`' order, none
 * started after a failure). When several fail, a token failure any of them met is the one thrown: a revoked family must
 * reach the runner as such (it stops asking until re-authorized), not as the deadline or a 5xx another read met first.
 *
 * @example
 * ```ts
 * const pages = await mapSingleReads(qashioIds, (qid) => readByQashioId(qid));
 * ```
 */
export async function mapSingleReads<T, R>(items: readonly T[], read: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const failures: unknown[] = [];
  return mapLimit(items, SINGLE_READ_CONCURRENCY, (item, index) =>
    read(item, index).catch((err: unknown) => {
      failures.push(err);
      throw err;
    }),
  ).catch((err: unknown) => {
    throw failures.find(isTokenFailure) ?? err;
  });
}

/**
 * True when a failed call says something of every call to the provider, not only of the one that met it: getting a
 * token failed, or the provider refused access (401, 403) or throttles (429). A call the run can do without (a check)
 * that fails so still stops the run, as the next call would meet the same; one failing otherwise fails alone.
 */
export function concernsEveryCall(err: unknown): boolean {
  const status = statusOf(err);
  return isTokenFailure(err) || status === 401 || status === 403 || status === 429;
}

/**
 * True when the provider refused a read for the reference it was asked about alone (a 400 for an odd id, a 414 for a
 * long one): a 4xx other than 408 that does not {@link concernsEveryCall}. Reads of other references still work,
 * so such a refusal must not stop the run at that reference; anything else (access, throttling, 5xx) still does.
 */
export function refusedForReference(err: unknown): boolean {
  const status = statusOf(err);
  return status !== undefined && status >= 400 && status < 500 && status !== 408 && !concernsEveryCall(err);
}

/** `status_class` dimension of the ProviderErrors metric. */
export function statusClass(err: unknown): StatusClass {
  return statusClassOf(errorContext(err));
}
