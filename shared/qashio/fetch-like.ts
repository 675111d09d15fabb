/**
 * The fetch subset the provider client uses: what HttpCore sends and reads. Its own module so that the transport
 * (node-transport.ts) and the error mapping (response-errors.ts) share it with the core without importing the core.
 */
/** Response headers as HttpCore reads them; a fetch `Headers` fits. */
export interface ResponseHeaders {
  get(name: string): string | null;
}

/** The part of a response HttpCore reads; a fetch `Response` fits. */
export interface FetchResponse {
  readonly status: number;
  readonly headers: ResponseHeaders;
  text(): Promise<string>;
  /**
   * The body as the chunks it arrived in (`nodeHttpFetch`): a successful list page is then parsed without one string of
   * the whole body (json-body.ts). Fetch has no such method: HttpCore reads `text()` then.
   */
  chunks?(): Promise<readonly Buffer[]>;
}

/** The part of `RequestInit` HttpCore sends (a plain header record, a JSON string body); global fetch accepts it. */
export interface FetchInit {
  readonly method?: string;
  readonly headers?: Readonly<Record<string, string>> | Headers;
  readonly body?: string;
  readonly signal?: AbortSignal;
  /**
   * Always `manual`: a 3xx is an answer, never followed. Global fetch would otherwise send a token request's body
   * (client secret, refresh token, code) again to wherever `Location` points, another host or plain http included.
   * `nodeHttpFetch` never follows one.
   */
  readonly redirect?: "manual";
}

/**
 * Any fetch-compatible function: `nodeHttpFetch` (the default), global fetch, the sandbox's in-process fetch, a test
 * fake. Only the subset in `FetchInit` and `FetchResponse` is used.
 */
export type FetchLike = (input: string, init: FetchInit) => Promise<FetchResponse>;
