/**
 * Whether the provider's host takes a TCP connection, asked before `authorize` waits for the browser: a sign-in whose
 * code exchange cannot reach the token endpoint would only wait out its --timeout. It connects and closes: no request,
 * no byte sent, so no secret goes to a host that may be the wrong one. Any answer passes (what an HTTP request would
 * get is not asked). The provider client uses no proxy, so a direct connection is what the exchange makes too.
 */
import { connect as netConnect, type Socket } from "node:net";
import { NetworkError } from "../qashio/errors.js";
import { baseUrlHint, portOf } from "./base-url-hint.js";
import { AuthorizeError } from "./errors.js";

/** How long the connection may take: a reachable provider takes one within a round trip or two. */
export const HOST_PROBE_TIMEOUT_MS = 5_000;

export interface HostProbeOptions {
  /** @default HOST_PROBE_TIMEOUT_MS */
  readonly timeoutMs?: number;
  /** Ctrl-C: the probe ends, as the sign-in does. */
  readonly signal?: AbortSignal;
  /** Opens the connection (tests: one that never connects). @default node:net's connect */
  readonly connect?: (port: number, host: string) => Socket;
}

const CANCELLED = Symbol("cancelled");

/**
 * Connects to the host and port of `baseUrl` (held by `setting`, QASHIO_BASE_URL or the QASHIO_*_URL of a named
 * environment) and closes the connection at once.
 *
 * @throws AuthorizeError (exit 1) when the connection is refused, fails, or is not made within `timeoutMs`, naming
 *   `setting` and `baseUrl` (and, as a failed run does, the sandbox for a loopback address nothing listens on).
 * @example
 * await assertHostAnswers("http://127.0.0.1:4010", "QASHIO_BASE_URL", { signal: io.signal });
 */
export async function assertHostAnswers(baseUrl: string, setting: string, options: HostProbeOptions = {}): Promise<void> {
  const { timeoutMs = HOST_PROBE_TIMEOUT_MS, signal, connect = netConnect } = options;
  const url = new URL(baseUrl);
  // node:net takes an IPv6 address without the brackets a URL writes it in.
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  const port = portOf(url);
  const failure = await new Promise<string | typeof CANCELLED | undefined>((resolve) => {
    const socket = connect(port, host);
    const end = (outcome: string | typeof CANCELLED | undefined) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      socket.destroy();
      resolve(outcome);
    };
    const onAbort = () => end(CANCELLED);
    const timer = setTimeout(() => end(`no connection within ${timeoutMs < 1_000 ? `${timeoutMs} ms` : `${timeoutMs / 1_000} s`}`), timeoutMs);
    signal?.addEventListener("abort", onAbort, { once: true });
    if (signal?.aborted === true) onAbort();
    socket.once("connect", () => end(undefined));
    // `on`, not `once`: an error after the first must not go unhandled.
    socket.on("error", (error: NodeJS.ErrnoException) => end(error.code ?? error.name));
  });
  if (failure === undefined) return;
  if (failure === CANCELLED) throw new AuthorizeError("authorization cancelled");
  // Worded as a failed run's connection error is (base-url-hint.ts), from the same system code.
  const hint = baseUrlHint(new NetworkError(`connecting to ${setting} failed`, { reason: failure }), baseUrl, setting);
  throw new AuthorizeError(
    `${setting} (${baseUrl}) does not answer (${failure}): the code exchange after the sign-in could not reach it, so no sign-in was started` +
      (hint || `; check the setting, and that this machine reaches ${url.host}${url.port === "" ? `:${port}` : ""}`),
  );
}
