/**
 * Whether the provider's host takes a TCP connection, asked before `authorize` waits for the browser: a sign-in whose
 * code exchange cannot reach the token endpoint would only wait out its --timeout. It connects and closes: no request,
 * no HTTP byte sent, so no secret goes to a host that may be the wrong one. For an https URL it also completes a TLS
 * handshake (a ClientHello is all it sends), so a port serving plain http (the sandbox typed with https://) is refused
 * before the sign-in with the no-TLS hint a failed exchange gets. Any other answer passes (what an HTTP request would
 * get is not asked), a certificate this machine does not trust too: the exchange reports it as a run does. The
 * provider client uses no proxy, so a direct connection is what the exchange makes too.
 */
import { isIP, connect as netConnect, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { NetworkError } from "../qashio/errors.js";
import { baseUrlHint, completedNoTlsHandshake, noTlsHint, portOf } from "./base-url-hint.js";
import { AuthorizeError } from "./errors.js";

/** How long the connection may take: a reachable provider takes one within a round trip or two. */
export const HOST_PROBE_TIMEOUT_MS = 5_000;

export interface HostProbeOptions {
  /** @default HOST_PROBE_TIMEOUT_MS */
  readonly timeoutMs?: number;
  /** Ctrl-C: the probe ends, as the sign-in does. */
  readonly signal?: AbortSignal;
  /**
   * Opens the connection, with a TLS handshake when `tls` (tests: one that never connects).
   * @default node:net's connect, or node:tls's without certificate checks
   */
  readonly connect?: (port: number, host: string, tls: boolean) => Socket;
}

/**
 * Opens a TCP connection, or a TLS one that names the host as the exchange's https request does (SNI, not for an IP
 * address) and takes any certificate: whether the exchange trusts it is the exchange's to report, and nothing is sent.
 */
function openConnection(port: number, host: string, tls: boolean): Socket {
  if (!tls) return netConnect(port, host);
  return tlsConnect({ port, host, rejectUnauthorized: false, ...(isIP(host) === 0 ? { servername: host } : {}) });
}

const CANCELLED = Symbol("cancelled");

/**
 * Connects to the host and port of `baseUrl` (held by `setting`, QASHIO_BASE_URL or the QASHIO_*_URL of a named
 * environment), with a TLS handshake for an https one, and closes the connection at once.
 *
 * @throws AuthorizeError (exit 1) when the connection is refused, fails, or is not made within `timeoutMs`, or (for
 *   https) completes no TLS handshake, naming `setting` and `baseUrl` (and, as a failed run does, the sandbox for a
 *   loopback address nothing listens on, or for one typed with https://).
 * @example
 * await assertHostAnswers("http://127.0.0.1:4010", "QASHIO_BASE_URL", { signal: io.signal });
 */
export async function assertHostAnswers(baseUrl: string, setting: string, options: HostProbeOptions = {}): Promise<void> {
  const { timeoutMs = HOST_PROBE_TIMEOUT_MS, signal, connect = openConnection } = options;
  const url = new URL(baseUrl);
  // node:net takes an IPv6 address without the brackets a URL writes it in.
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  const port = portOf(url);
  const tls = url.protocol === "https:";
  let connected = false;
  const failure = await new Promise<string | typeof CANCELLED | undefined>((resolve) => {
    const socket = connect(port, host, tls);
    const end = (outcome: string | typeof CANCELLED | undefined) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      socket.destroy();
      resolve(outcome);
    };
    const onAbort = () => end(CANCELLED);
    const within = timeoutMs < 1_000 ? `${timeoutMs} ms` : `${timeoutMs / 1_000} s`;
    const timer = setTimeout(() => end(`no ${connected ? "TLS handshake" : "connection"} within ${within}`), timeoutMs);
    signal?.addEventListener("abort", onAbort, { once: true });
    if (signal?.aborted === true) onAbort();
    socket.once("connect", () => {
      connected = true;
      if (!tls) end(undefined);
    });
    if (tls) socket.once("secureConnect", () => end(undefined));
    // `on`, not `once`: an error after the first must not go unhandled. Once connected, only a port that completed no
    // TLS handshake is refused: another TLS failure is the exchange's to report, in its words.
    socket.on("error", (error: NodeJS.ErrnoException) => {
      const reason = error.code ?? error.name;
      end(connected && !completedNoTlsHandshake(reason) ? undefined : reason);
    });
  });
  if (failure === undefined) return;
  if (failure === CANCELLED) throw new AuthorizeError("authorization cancelled");
  // Worded as a failed run's connection error is (base-url-hint.ts), from the same system code. An https port that took
  // the connection and failed completed no TLS handshake (other failures pass), in time or at all: not a matter of reach.
  const hint =
    tls && connected ? noTlsHint(baseUrl, setting) : baseUrlHint(new NetworkError(`connecting to ${setting} failed`, { reason: failure }), baseUrl, setting);
  throw new AuthorizeError(
    `${setting} (${baseUrl}) does not answer (${failure}): the code exchange after the sign-in could not reach it, so no sign-in was started` +
      (hint || `; check the setting, and that this machine reaches ${url.host}${url.port === "" ? `:${port}` : ""}`),
  );
}
