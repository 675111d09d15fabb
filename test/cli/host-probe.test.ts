import { getEventListeners } from "node:events";
import { Socket } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { AuthorizeError } from "../../shared/cli/errors.js";
import { assertHostAnswers } from "../../shared/cli/host-probe.js";

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

/** A connect whose socket connects at once, as any listener's does. */
function answering(): Socket {
  const socket = new Socket();
  queueMicrotask(() => socket.emit("connect"));
  return socket;
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
