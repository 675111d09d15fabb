import { createServer, Socket, type AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { assertHostAnswers } from "../../shared/cli/host-probe.js";

/**
 * What assertHostAnswers names and whom it connects to, beyond host-probe.test.ts: each pins a change hand mutation
 * found unseen there (an explicit port, a fractional second, a code-less error, node:net's connect).
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

describe("assertHostAnswers: node:net's own connect", () => {
  it("connects to the URL's own host: a listener on 127.0.0.1 answers, its port on 127.0.0.2 refuses", async () => {
    const server = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as AddressInfo;
      await expect(assertHostAnswers(`http://127.0.0.1:${port}`, "QASHIO_BASE_URL")).resolves.toBeUndefined();
      // Refused on Linux, where all of 127.0.0.0/8 is this machine's; not reached within the timeout where it is not.
      const error = await failureOf(assertHostAnswers(`http://127.0.0.2:${port}`, "QASHIO_BASE_URL", { timeoutMs: 2_000 }));
      expect(error.message).toContain(`QASHIO_BASE_URL (http://127.0.0.2:${port}) does not answer (`);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
