/**
 * Public surface of the provider API client: the client, its errors, auth, configuration, pagination
 * helpers and the shared schemas.
 */
export { QashioClient, PATHS } from "./client.js";
export type {
  QashioClientOptions,
  AcknowledgeResult,
  CallOptions,
  CardWriteResult,
  IssueCardResult,
  StatementsByAccountPage,
  SuspendCardResult,
} from "./client-types.js";
export * from "./errors.js";
export {
  HttpCore,
  DEFAULT_RETRY,
  DEFAULT_TIMEOUT_MS,
  systemClock,
  type Clock,
  type ClientLogger,
  type FetchInit,
  type FetchLike,
  type FetchResponse,
  type HttpCoreOptions,
  type HttpRequest,
  type HttpResponse,
  type ResponseHeaders,
  type RetryEvent,
  type RetryMode,
  type RetryOptions,
} from "./http.js";
export { redactSecrets } from "./redact.js";
export { parseRetryAfter } from "./retry-after.js";
export { nodeHttpFetch, TransportError } from "./node-transport.js";
export {
  AUTHORIZE_URL_ENV_VAR,
  BASE_URL_ENV_VARS,
  normaliseBaseUrl,
  resolveAuthorizeUrl,
  resolveBaseUrl,
  type QashioDeployment,
} from "./config.js";
export {
  DEFAULT_MAX_PAGES,
  itemsOf,
  pagesByHasNext,
  pagesByNextPage,
  pagesByTotalPages,
  type InnerPage,
  type Page,
  type PageInfoPage,
  type WalkOptions,
} from "./pagination.js";
export type { InvalidItem } from "./parse.js";
export * from "./auth/index.js";
export * from "./schemas/index.js";
