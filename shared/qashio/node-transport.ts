/**
 * The provider client's default transport: a `FetchLike` over `node:http` / `node:https` with keep-alive sockets.
 * It exists for CPU: a 360 KB page costs about half the CPU of undici's fetch (`docs/spec-gaps.md`, Provider API client).
 */
import http, { type IncomingHttpHeaders, type OutgoingHttpHeaders } from "node:http";
import https from "node:https";
import type { FetchInit, FetchResponse, ResponseHeaders } from "./fetch-like.js";
import { decodeUtf8 } from "./json-body.js";

/** At most a read-ahead page and an acknowledge or four refund parent reads, or four card detail or re-drive reads, are in flight per client; the cap bounds an accidental fan-out. */
const MAX_SOCKETS_PER_HOST = 8;
/** Idle sockets close after this (undici's default), before common 5 s server timeouts; a shorter `Keep-Alive` hint wins. */
const IDLE_SOCKET_TIMEOUT_MS = 4_000;
/**
 * Largest response body read, in bytes. A page of 100 transactions is about 360 KB (`docs/spec-gaps.md`, Transport),
 * so this leaves ~90 times that; a body past it (an endless or runaway answer) fails with `ERR_RESPONSE_TOO_LARGE`
 * rather than being buffered until the timeout, which over a fast link is gigabytes.
 */
export const MAX_RESPONSE_BODY_BYTES = 32 * 1024 * 1024;
/**
 * Most of an error answer's body (a status outside 2xx) kept, in bytes: the provider's error envelope is a few hundred
 * bytes (one with a long message still fits), while a proxy's error page may run to megabytes and come to every request
 * in flight at once. The rest is not read: the body resolves with this head and the connection closes.
 */
export const MAX_ERROR_BODY_BYTES = 1024 * 1024;
/** `TransportError.code` of a response whose body passed {@link MAX_RESPONSE_BODY_BYTES}. */
export const RESPONSE_TOO_LARGE = "ERR_RESPONSE_TOO_LARGE";
/** Sent unless the caller gives one: WAF rule sets commonly block requests without a user agent. */
const USER_AGENT = "qashio-bridge";

// One pool per protocol for the whole process, so page reads, read-ahead and acknowledges reuse warm connections.
const agentOptions = { keepAlive: true, maxSockets: MAX_SOCKETS_PER_HOST, timeout: IDLE_SOCKET_TIMEOUT_MS };
const AGENTS: Readonly<Record<string, { readonly module: typeof http | typeof https; readonly agent: http.Agent }>> = {
  "http:": { module: http, agent: new http.Agent(agentOptions) },
  "https:": { module: https, agent: new https.Agent(agentOptions) },
};

/**
 * A request that failed before its response was complete. Carries the system error code only: no cause, because a
 * Node error may quote the URL (`ERR_INVALID_URL` keeps its `input`) and the URL may carry a query string.
 */
export class TransportError extends Error {
  override name = "TransportError";
  /** `ECONNREFUSED`, `ECONNRESET`, `ENOTFOUND`, ... or `ERR_*` when the request could not be sent at all. */
  readonly code: string;

  constructor(code: string, what = "request") {
    super(`${what} failed (${code})`);
    this.code = code;
  }
}

function transportErrorOf(error: unknown): TransportError {
  const { code, syscall } = (typeof error === "object" && error !== null ? error : {}) as { code?: unknown; syscall?: unknown };
  return new TransportError(typeof code === "string" ? code : "ERR_HTTP_TRANSPORT", typeof syscall === "string" ? syscall : undefined);
}

/** Like fetch: the signal's reason, by default a DOMException named `AbortError`. */
function abortReasonOf(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("This operation was aborted", "AbortError");
}

/**
 * A `Headers` object, told apart without touching the global `Headers`: on Node 20 its first use loads Node's bundled
 * undici, tens of milliseconds of CPU in a process that otherwise never needs it (Node 24's node:http loads undici
 * itself, at import). Header values are strings, so a record never has a `get` method.
 */
function isHeaders(headers: FetchInit["headers"]): headers is Headers {
  return typeof (headers as Partial<Headers> | undefined)?.get === "function";
}

function requestHeadersOf(init: FetchInit, body: Buffer | undefined): OutgoingHttpHeaders {
  const given = isHeaders(init.headers) ? Object.fromEntries(init.headers) : init.headers;
  // Node sets headers case-insensitively in key order: a caller's `User-Agent` replaces the default.
  const headers: OutgoingHttpHeaders = { "user-agent": USER_AGENT, ...given };
  // The body is never decompressed; without this header a server may pick any coding (RFC 9110 §12.5.3).
  headers["accept-encoding"] = "identity";
  if (body !== undefined) headers["content-length"] = body.length;
  return headers;
}

function responseHeadersOf(headers: IncomingHttpHeaders): ResponseHeaders {
  return {
    get(name) {
      const value = headers[name.toLowerCase()];
      if (value === undefined) return null;
      return Array.isArray(value) ? value.join(", ") : value;
    },
  };
}

/**
 * Sends one request over a pooled keep-alive socket and resolves when the response headers arrive; `text()` and
 * `chunks()` resolve when the body is complete. Supports what `HttpCore` sends: method, headers, a string body and an
 * abort signal. Fails with `TransportError` before a complete response and with the signal's reason once aborted; the
 * body fails with `TransportError` code {@link RESPONSE_TOO_LARGE} (the connection closed) once it passes
 * {@link MAX_RESPONSE_BODY_BYTES}, by its `Content-Length` or as it arrives.
 *
 * @example
 * const response = await nodeHttpFetch("https://api.example/public/v1/erp/cards", { headers: { accept: "application/json" } });
 * const body = JSON.parse(await response.text());
 */
export function nodeHttpFetch(input: string, init: FetchInit = {}): Promise<FetchResponse> {
  const { signal } = init;
  if (signal?.aborted) return Promise.reject(abortReasonOf(signal));
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return Promise.reject(new TransportError("ERR_INVALID_URL", "URL parsing"));
  }
  const transport = AGENTS[url.protocol];
  if (transport === undefined) return Promise.reject(new TransportError("ERR_UNSUPPORTED_PROTOCOL", `${url.protocol} request`));
  const body = init.body === undefined ? undefined : Buffer.from(init.body, "utf8");

  return new Promise<FetchResponse>((resolve, reject) => {
    let rejectBody: ((reason: unknown) => void) | undefined;
    // Settles whichever promise is pending: the response before the headers, the body after them.
    const fail = (reason: unknown) => {
      signal?.removeEventListener("abort", onAbort);
      reject(reason);
      rejectBody?.(reason);
    };
    const onAbort = () => {
      fail(abortReasonOf(signal!));
      request.destroy();
    };

    const onResponse = (response: http.IncomingMessage) => {
      const chunks: Buffer[] = [];
      let length = 0;
      const status = response.statusCode ?? 0;
      const success = status >= 200 && status < 300;
      const tooLarge = () => {
        chunks.length = 0;
        fail(new TransportError(RESPONSE_TOO_LARGE, "response body"));
        request.destroy();
      };
      const complete = new Promise<void>((resolveBody, rejectComplete) => {
        rejectBody = rejectComplete;
        // An error answer's head is all its reader needs: the body ends there, settled before the connection goes.
        const headKept = () => {
          signal?.removeEventListener("abort", onAbort);
          resolveBody();
          request.destroy();
        };
        response.on("data", (chunk: Buffer) => {
          const before = length;
          length += chunk.length;
          if (success) {
            if (length > MAX_RESPONSE_BODY_BYTES) tooLarge();
            else chunks.push(chunk);
          } else if (before < MAX_ERROR_BODY_BYTES) {
            chunks.push(length > MAX_ERROR_BODY_BYTES ? chunk.subarray(0, MAX_ERROR_BODY_BYTES - before) : chunk);
            if (length >= MAX_ERROR_BODY_BYTES) headKept();
          }
        });
        response.on("end", () => {
          signal?.removeEventListener("abort", onAbort);
          resolveBody();
        });
        response.on("error", (error) => fail(transportErrorOf(error)));
      });
      // A body nobody reads may fail without an unhandled rejection.
      complete.catch(() => undefined);
      resolve({
        status,
        headers: responseHeadersOf(response.headers),
        text: () => complete.then(() => decodeUtf8(chunks)),
        chunks: () => complete.then(() => chunks),
      });
      // Announced too large: the body fails at once, before a byte of it is read (the status is the caller's). An
      // error answer's is read up to its head whatever it announces.
      if (success && Number(response.headers["content-length"]) > MAX_RESPONSE_BODY_BYTES) tooLarge();
    };

    let request: http.ClientRequest;
    try {
      request = transport.module.request(url, { method: init.method ?? "GET", headers: requestHeadersOf(init, body), agent: transport.agent }, onResponse);
    } catch (error) {
      // Node checks the method and the headers before sending (ERR_INVALID_CHAR, ERR_INVALID_HTTP_TOKEN); its
      // TypeError would break the contract that a failure before a response is a TransportError.
      reject(transportErrorOf(error));
      return;
    }
    request.on("error", (error) => fail(transportErrorOf(error)));
    signal?.addEventListener("abort", onAbort, { once: true });
    request.end(body);
  });
}
