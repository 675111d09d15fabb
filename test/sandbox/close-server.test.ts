import { afterEach, describe, expect, it, vi } from "vitest";
import { closeServer } from "../../sandbox/close-server.js";

/** Lets the close's rejection handler run. */
const settled = async (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe("closeServer", () => {
  const exitCodeBefore = process.exitCode;
  afterEach(() => {
    process.exitCode = exitCodeBefore;
    vi.restoreAllMocks();
  });

  it.each([
    ["an Error, by its message", new Error("port gone"), "port gone"],
    ["anything else, as text", "port gone (a string)", "port gone (a string)"],
  ])("says a close that rejects with %s after the entry's name, and fails the process", async (_what, reason, said) => {
    const stderr = vi.spyOn(console, "error").mockImplementation(() => undefined);
    closeServer({ close: async () => Promise.reject(reason) }, "sandbox");
    await settled();
    expect(stderr.mock.calls).toEqual([[`sandbox: error while stopping: ${said}`]]);
    expect(process.exitCode).toBe(1);
  });

  it("says nothing and leaves the exit code alone when the close succeeds", async () => {
    const stderr = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const close = vi.fn(async () => undefined);
    closeServer({ close }, "sandbox");
    await settled();
    expect(close).toHaveBeenCalledOnce();
    expect(stderr).not.toHaveBeenCalled();
    expect(process.exitCode).toBe(exitCodeBefore);
  });
});
