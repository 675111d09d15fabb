/** Options and results of QashioClient (client.ts): what a caller passes to it and gets back from it. */
import type { CoreCard, DriftReport, StatementPeriodBalance, StatementsByAccount } from "./schemas/index.js";
import type { Clock, ClientLogger, FetchLike, RetryEvent, RetryOptions } from "./http.js";
import type { TokenProvider } from "./auth/token-provider.js";
import type { InnerPage } from "./pagination.js";

export interface QashioClientOptions {
  /** Provider base URL (see config.ts `resolveBaseUrl`). */
  readonly baseUrl: string;
  readonly tokenProvider: TokenProvider;
  /** @default nodeHttpFetch (node:http with keep-alive) */
  readonly fetch?: FetchLike;
  /** @default the system clock */
  readonly clock?: Clock;
  /** Per-attempt timeout. @default 10_000 */
  readonly timeoutMs?: number;
  readonly retry?: RetryOptions;
  /** Receives retries and enum drift warnings; never tokens. */
  readonly logger?: ClientLogger;
  /** Called once per (schema, field, value) of enum drift found in a response. */
  readonly onDrift?: (warning: DriftReport) => void;
  /** Called for each failed attempt the client retries (not the failure it throws); see `RetryEvent`. */
  readonly onRetry?: (event: RetryEvent) => void;
}

/** Statements of one account: the account fields plus one page of its monthly periods. */
export interface StatementsByAccountPage extends InnerPage<StatementPeriodBalance> {
  readonly account: Omit<StatementsByAccount, "data" | "page" | "total_pages" | "total">;
}

/** Outcome of a card write answered with `data.card`. */
export interface CardWriteResult {
  readonly card: CoreCard;
  readonly message?: string | null;
  readonly requestId?: string;
}

/** Outcome of card issuance, whose response shape the spec does not show. */
export interface IssueCardResult {
  /** The card, when `data.card` has the operational card shape. */
  readonly card?: CoreCard;
  /** `data` as received. */
  readonly data: unknown;
  readonly message?: string | null;
  readonly requestId?: string;
}

/** Outcome of a suspension request: accepted only; the committed state is read back from `getErpCard`. */
export interface SuspendCardResult {
  readonly message?: string | null;
  readonly requestId?: string;
}

/** Settings of one call, for a caller with a time budget. */
export interface CallOptions {
  /**
   * Epoch ms by which the call, retries included, must be over: an attempt starts only when its whole timeout fits
   * before it, else the call throws `DeadlineExceededError` (see `HttpRequest.deadline`).
   */
  readonly deadline?: number;
  /** Stops retries early, as when out of time (see `HttpRequest.stop`); the attempt under way finishes. */
  readonly stop?: AbortSignal;
  /** Retries left to the caller (see `HttpRequest.callerRetries`); honoured by `acknowledgeTransactions`. */
  readonly callerRetries?: { readonly failedBefore: number };
}

/** Outcome of an acknowledgement. */
export interface AcknowledgeResult {
  readonly acknowledged: number;
  readonly requestId?: string;
}
