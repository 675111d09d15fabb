import { getEventListeners, once } from "node:events";
import { createServer as createHttpServer } from "node:http";
import { type AddressInfo, createServer as createTcpServer, type Server, Socket } from "node:net";
import { createServer as createTlsServer } from "node:tls";
import { afterEach, describe, expect, it, vi } from "vitest";
import { AuthorizeError } from "../../shared/cli/errors.js";
import { assertHostAnswers } from "../../shared/cli/host-probe.js";
import { SELF_SIGNED_CERT, SELF_SIGNED_KEY } from "./support/self-signed-tls.js";

/** A connect that records where it was asked to connect and hands back a socket that never connects. */
function silent() {
  const asked: { port: number; host: string }[] = [];
  const sockets: Socket[] = [];
  const connect = (port: number, host: string) => {
    asked.push({ port, host });
    const socket = new Socket();
    sockets.push(socket);
    return socket;
  };
  return { asked, sockets, connect };
}

/** A connect whose socket connects at once, as any listener's does, and completes a TLS handshake when asked for one. */
function answering(): Socket {
  const socket = new Socket();
  queueMicrotask(() => {
    socket.emit("connect");
    socket.emit("secureConnect");
  });
  return socket;
}

/** Listens on 127.0.0.1 (any free port): its port, and how to close it. */
async function listening(server: Server): Promise<{ port: number; close: () => Promise<void> }> {
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { port: (server.address() as AddressInfo).port, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe("assertHostAnswers", () => {
  it("gives up on a host that does not take the connection within its timeout, naming the setting and URL, and closes the socket", async () => {
    const { sockets, connect } = silent();
    const error = await assertHostAnswers("https://api.example.test", "QASHIO_BASE_URL", { timeoutMs: 50, connect }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthorizeError);
    expect((error as Error).message).toBe(
      "QASHIO_BASE_URL (https://api.example.test) does not answer (no connection within 50 ms): the code exchange after the sign-in could not " +
        "reach it, so no sign-in was started; check the setting, and that this machine reaches api.example.test:443",
    );
    expect(sockets.every((socket) => socket.destroyed)).toBe(true);
  });

  it("connects to the URL's host and port: 443 or 80 by its scheme, an IPv6 address without brackets", async () => {
    for (const [url, port, host] of [
      ["https://api.example.test/base", 443, "api.example.test"],
      ["http://127.0.0.1:4010", 4010, "127.0.0.1"],
      ["http://[::1]", 80, "::1"],
    ] as const) {
      const { asked, connect } = silent();
      await assertHostAnswers(url, "QASHIO_BASE_URL", { timeoutMs: 1, connect }).catch(() => undefined);
      expect(asked).toEqual([{ port, host }]);
    }
  });

  it("stops at once on Ctrl-C, as the sign-in does", async () => {
    const { sockets, connect } = silent();
    const interrupt = new AbortController();
    const probe = assertHostAnswers("https://api.example.test", "QASHIO_BASE_URL", { timeoutMs: 60_000, connect, signal: interrupt.signal });
    interrupt.abort();
    await expect(probe).rejects.toThrow(new AuthorizeError("authorization cancelled"));
    expect(sockets.every((socket) => socket.destroyed)).toBe(true);
  });

  it("names the QASHIO_*_URL a named environment reads, and says a host not found is not known", async () => {
    const connect = (port: number, host: string) => {
      const socket = new Socket();
      queueMicrotask(() => socket.destroy(Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: "ENOTFOUND" })));
      return socket;
    };
    await expect(assertHostAnswers("https://sandbox.example.test", "QASHIO_SANDBOX_URL", { connect })).rejects.toThrow(
      "QASHIO_SANDBOX_URL (https://sandbox.example.test) does not answer (ENOTFOUND): the code exchange after the sign-in could not reach it, " +
        "so no sign-in was started; the host of QASHIO_SANDBOX_URL (https://sandbox.example.test) was not found: check the setting, or this machine's name resolution",
    );
  });

  it("refuses an https URL whose port serves plain http (the sandbox typed with https://) before the sign-in, with a failed run's no-TLS hint, sending no request", async () => {
    const requests: string[] = [];
    const server = createHttpServer((request, response) => {
      requests.push(request.url ?? "");
      response.end();
    });
    const { port, close } = await listening(server);
    try {
      const error = await assertHostAnswers(`https://127.0.0.1:${port}`, "QASHIO_BASE_URL").catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AuthorizeError);
      expect((error as Error).message).toBe(
        `QASHIO_BASE_URL (https://127.0.0.1:${port}) does not answer (ERR_SSL_WRONG_VERSION_NUMBER): the code exchange after the sign-in could not reach it, ` +
          `so no sign-in was started; 127.0.0.1:${port}, where QASHIO_BASE_URL points, completed no TLS handshake: does its port serve https, with TLS 1.2 or later? ` +
          `(the sandbox serves plain http: http://127.0.0.1:${port})`,
      );
      expect(requests).toEqual([]);
    } finally {
      await close();
    }
  });

  it("lets an https URL whose server takes a TLS handshake pass, a certificate this machine does not trust too (the exchange reports that as a run does)", async () => {
    const server = createTlsServer({ key: SELF_SIGNED_KEY, cert: SELF_SIGNED_CERT });
    // The client closes once its side is done (TLS 1.3): the server's side then ends in a reset, not a secure connection.
    server.on("tlsClientError", () => undefined);
    // Keys are derived only from a ClientHello: a TCP connection alone derives none.
    let keysDerived = 0;
    server.on("keylog", () => (keysDerived += 1));
    const { port, close } = await listening(server);
    try {
      await expect(assertHostAnswers(`https://localhost:${port}`, "QASHIO_BASE_URL")).resolves.toBeUndefined();
      await vi.waitFor(() => expect(keysDerived).toBeGreaterThan(0));
    } finally {
      await close();
    }
  });

  it("names a TLS handshake not completed in time as such, and lets a TLS failure other than no handshake pass for the exchange to report", async () => {
    const connectedOnly = (then?: (socket: Socket) => void) => () => {
      const socket = new Socket();
      queueMicrotask(() => {
        socket.emit("connect");
        then?.(socket);
      });
      return socket;
    };
    await expect(assertHostAnswers("https://api.example.test", "QASHIO_BASE_URL", { timeoutMs: 50, connect: connectedOnly() })).rejects.toThrow(
      "QASHIO_BASE_URL (https://api.example.test) does not answer (no TLS handshake within 50 ms)",
    );
    const alert = connectedOnly((socket) => socket.emit("error", Object.assign(new Error("alert"), { code: "ERR_SSL_TLSV1_ALERT_INTERNAL_ERROR" })));
    await expect(assertHostAnswers("https://api.example.test", "QASHIO_BASE_URL", { connect: alert })).resolves.toBeUndefined();
    const reset = connectedOnly((socket) => socket.emit("error", Object.assign(new Error("read EPROTO"), { code: "EPROTO" })));
    await expect(assertHostAnswers("https://api.example.test", "QASHIO_BASE_URL", { connect: reset })).rejects.toThrow("completed no TLS handshake");
  });

  it("asks of an https port that took the connection but no TLS handshake in time whether it serves https, not whether this machine reaches it", async () => {
    const connectedOnly = () => {
      const socket = new Socket();
      queueMicrotask(() => socket.emit("connect"));
      return socket;
    };
    const error = (await assertHostAnswers("https://api.example.test", "QASHIO_BASE_URL", { timeoutMs: 50, connect: connectedOnly }).catch((e: unknown) => e)) as Error;
    expect(error.message).toBe(
      "QASHIO_BASE_URL (https://api.example.test) does not answer (no TLS handshake within 50 ms): the code exchange after the sign-in could not reach it, " +
        "so no sign-in was started; api.example.test:443, where QASHIO_BASE_URL points, completed no TLS handshake: does its port serve https, with TLS 1.2 or later?",
    );
  });

  it("asks an http URL for a TCP connection only: a port that would complete no TLS handshake passes", async () => {
    const server = createTcpServer((socket) => socket.on("error", () => undefined));
    const { port, close } = await listening(server);
    try {
      await expect(assertHostAnswers(`http://127.0.0.1:${port}`, "QASHIO_BASE_URL")).resolves.toBeUndefined();
    } finally {
      await close();
    }
  });

  describe("with a fake clock", () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    it("waits 5 s by default, and words a timeout of a second or more in seconds", async () => {
      vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
      const byDefault = assertHostAnswers("https://api.example.test", "QASHIO_BASE_URL", { connect: silent().connect }).catch((e: unknown) => e);
      let settled = false;
      void byDefault.then(() => (settled = true));
      await vi.advanceTimersByTimeAsync(4_999);
      expect(settled).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect(((await byDefault) as Error).message).toContain("(no connection within 5 s)");
      const oneSecond = assertHostAnswers("https://api.example.test", "QASHIO_BASE_URL", { timeoutMs: 1_000, connect: silent().connect }).catch((e: unknown) => e);
      await vi.advanceTimersByTimeAsync(1_000);
      expect(((await oneSecond) as Error).message).toContain("(no connection within 1 s)");
    });

    it("leaves no timer and no listener on the signal once the host answers", async () => {
      vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
      const interrupt = new AbortController();
      await expect(assertHostAnswers("https://api.example.test", "QASHIO_BASE_URL", { connect: answering, signal: interrupt.signal })).resolves.toBeUndefined();
      expect(vi.getTimerCount()).toBe(0);
      expect(getEventListeners(interrupt.signal, "abort")).toEqual([]);
    });
  });

  it("stops at once when Ctrl-C came before it started, and closes the socket", async () => {
    const { sockets, connect } = silent();
    const interrupt = new AbortController();
    interrupt.abort();
    await expect(assertHostAnswers("https://api.example.test", "QASHIO_BASE_URL", { timeoutMs: 1_000, connect, signal: interrupt.signal })).rejects.toThrow(
      new AuthorizeError("authorization cancelled"),
    );
    expect(sockets.every((socket) => socket.destroyed)).toBe(true);
  });

  it("takes an error after the first without leaving it unhandled", async () => {
    const { sockets, connect } = silent();
    const probe = assertHostAnswers("https://api.example.test", "QASHIO_BASE_URL", { connect });
    const socket = sockets[0] as Socket;
    socket.emit("error", Object.assign(new Error("connect ECONNRESET"), { code: "ECONNRESET" }));
    expect(() => socket.emit("error", Object.assign(new Error("write EPIPE"), { code: "EPIPE" }))).not.toThrow();
    await expect(probe).rejects.toThrow("QASHIO_BASE_URL (https://api.example.test) does not answer (ECONNRESET)");
  });
});
