/** Tiny node:http loopback servers for the transport's tests: each records what it receives and counts its connections. */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";

export interface Received {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

export interface Loopback {
  readonly url: string;
  readonly received: Received[];
  /** Connections the server accepted. */
  connections: number;
  /** Of those, the ones closed since. */
  closedConnections: number;
  close(): Promise<void>;
}

const opened: Loopback[] = [];

/**
 * A loopback server that records each request (body included) and then lets `handler` answer, or not; it keeps an idle
 * connection `keepAliveTimeoutMs` (Node's default, 5 s, unless given).
 */
export async function loopback(handler: (request: Received, res: ServerResponse) => void, keepAliveTimeoutMs?: number): Promise<Loopback> {
  const received: Received[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const request = { method: req.method ?? "", url: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") };
      received.push(request);
      handler(request, res);
    });
  });
  if (keepAliveTimeoutMs !== undefined) server.keepAliveTimeout = keepAliveTimeoutMs;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  const box: Loopback = {
    url: `http://127.0.0.1:${address.port}`,
    received,
    connections: 0,
    closedConnections: 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  server.on("connection", (socket) => {
    box.connections += 1;
    socket.on("close", () => (box.closedConnections += 1));
  });
  opened.push(box);
  return box;
}

/** A port nothing listens on: bound, then released. */
export async function closedPortUrl(): Promise<string> {
  const server = await loopback(() => undefined);
  await server.close();
  return server.url;
}

/** Resolves once `done()` holds, checked every millisecond or so (no fixed sleep). */
export function eventually(done: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const poll = () => (done() ? resolve() : setTimeout(poll, 1));
    poll();
  });
}

/** Closes every loopback server opened since the last call (a test file's afterEach). */
export async function closeLoopbacks(): Promise<void> {
  await Promise.all(opened.splice(0).map((server) => server.close()));
}
