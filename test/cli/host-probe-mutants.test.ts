import { createServer, Socket, type AddressInfo, type Server } from "node:net";
import { createSecureContext, createServer as createTlsServer } from "node:tls";
import { describe, expect, it } from "vitest";
import { assertHostAnswers } from "../../shared/cli/host-probe.js";
import { SELF_SIGNED_CERT, SELF_SIGNED_KEY } from "./support/self-signed-tls.js";

/**
 * What assertHostAnswers names and whom it connects to, beyond host-probe.test.ts: each pins a change hand mutation
 * found unseen there (an explicit port, a fractional second, a code-less error, node:net's and node:tls's connect).
 */

/** A connect whose socket never connects: the probe waits out its timeout. */
const silent = () => new Socket();

/** What the probe threw, for a message to read. */
const failureOf = (probe: Promise<void>): Promise<Error> => probe.then(() => expect.fail("the probe passed"), (e: unknown) => e as Error);

describe("assertHostAnswers: what a failed probe names", () => {
  it("names the explicit port of a URL whose host it could not reach", async () => {
    const error = await failureOf(assertHostAnswers("https://api.example.test:8443", "QASHIO_BASE_URL", { timeoutMs: 20, connect: silent }));
    expect(error.message).toMatch(/; check the setting, and that this machine reaches api\.example\.test:8443$/);
  });

  it("words a timeout of a fraction of a second over one in seconds as it is", async () => {
    const error = await failureOf(assertHostAnswers("https://api.example.test", "QASHIO_BASE_URL", { timeoutMs: 1_500, connect: silent }));
    expect(error.message).toContain("(no connection within 1.5 s)");
  });

  it("names a connection error that has no code by its name", async () => {
    const connect = () => {
      const socket = new Socket();
      queueMicrotask(() => socket.destroy(Object.assign(new Error("handshake gone"), { name: "AbortError" })));
      return socket;
    };
    const error = await failureOf(assertHostAnswers("https://api.example.test", "QASHIO_BASE_URL", { connect }));
    expect(error.message).toContain("does not answer (AbortError)");
  });
});

/** Listens on 127.0.0.1 (any free port) while `use` runs, then closes. */
async function whileListening(server: Server, use: (port: number) => Promise<void>): Promise<void> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    await use((server.address() as AddressInfo).port);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

describe("assertHostAnswers: node:net's own connect", () => {
  it("connects to the URL's own host: a listener on 127.0.0.1 answers, its port on 127.0.0.2 refuses", async () => {
    await whileListening(createServer((socket) => socket.destroy()), async (port) => {
      await expect(assertHostAnswers(`http://127.0.0.1:${port}`, "QASHIO_BASE_URL")).resolves.toBeUndefined();
      // Refused on Linux, where all of 127.0.0.0/8 is this machine's; not reached within the timeout where it is not.
      const error = await failureOf(assertHostAnswers(`http://127.0.0.2:${port}`, "QASHIO_BASE_URL", { timeoutMs: 2_000 }));
      expect(error.message).toContain(`QASHIO_BASE_URL (http://127.0.0.2:${port}) does not answer (`);
    });
  });
});

describe("assertHostAnswers: node:tls's own connect", () => {
  /** A TLS server that records the server name (SNI) of each ClientHello that carries one. */
  function tlsServer() {
    const serverNames: string[] = [];
    const context = createSecureContext({ key: SELF_SIGNED_KEY, cert: SELF_SIGNED_CERT });
    const server = createTlsServer({
      key: SELF_SIGNED_KEY,
      cert: SELF_SIGNED_CERT,
      SNICallback: (name, callback) => {
        serverNames.push(name);
        callback(null, context);
      },
    });
    // The client closes once its side is done (TLS 1.3): the server's side then ends in a reset.
    server.on("tlsClientError", () => undefined);
    return { server, serverNames };
  }

  it("names the host in its ClientHello as the exchange's https request does, and no IP address (RFC 6066)", async () => {
    const { server, serverNames } = tlsServer();
    await whileListening(server, async (port) => {
      await expect(assertHostAnswers(`https://localhost:${port}`, "QASHIO_BASE_URL")).resolves.toBeUndefined();
      await expect(assertHostAnswers(`https://127.0.0.1:${port}`, "QASHIO_BASE_URL")).resolves.toBeUndefined();
      expect(serverNames).toEqual(["localhost"]);
    });
  });

  it("connects to the https URL's own host: its port on 127.0.0.2 refuses, though 127.0.0.1 would take the handshake", async () => {
    await whileListening(tlsServer().server, async (port) => {
      // Refused on Linux, where all of 127.0.0.0/8 is this machine's; not reached within the timeout where it is not.
      const error = await failureOf(assertHostAnswers(`https://127.0.0.2:${port}`, "QASHIO_BASE_URL", { timeoutMs: 2_000 }));
      expect(error.message).toContain(`QASHIO_BASE_URL (https://127.0.0.2:${port}) does not answer (`);
    });
  });
});
