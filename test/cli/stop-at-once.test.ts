import { describe, expect, it, vi } from "vitest";
import { EXIT } from "../../shared/cli/errors.js";
import { stopAtOnce, type EndingProcess } from "../../shared/cli/stop-at-once.js";

/** A process on `platform` that records how it was ended. */
function fakeProcess(platform: NodeJS.Platform) {
  const calls: string[] = [];
  const proc = {
    platform,
    pid: 4242,
    kill: vi.fn((pid: number, signal?: string | number) => {
      calls.push(`kill ${pid} ${signal}`);
      return true;
    }),
    exit: vi.fn((code?: number | string | null) => {
      calls.push(`exit ${code}`);
    }) as unknown as EndingProcess["exit"],
    removeAllListeners: vi.fn((event?: string | symbol) => {
      calls.push(`removeAllListeners ${String(event)}`);
      return proc as unknown as NodeJS.Process;
    }),
    stderr: { write: (text: string) => calls.push(`stderr ${text.trim()}`) },
  };
  return { proc: proc as unknown as EndingProcess, calls };
}

describe("stopAtOnce (a second Ctrl-C, SIGTERM or SIGHUP)", () => {
  it("on POSIX, ends the process by SIGINT's default action (130 in a shell) before any process.exit()", () => {
    const { proc, calls } = fakeProcess("linux");
    stopAtOnce(proc);
    expect(calls.slice(0, 3)).toEqual(["stderr stopped at once", "removeAllListeners SIGINT", "kill 4242 SIGINT"]);
  });

  it("exits 130 when its own SIGINT left it running: PID 1 of a container (its PID namespace's init) ignores a signal it has no handler for", () => {
    const { proc, calls } = fakeProcess("linux");
    // The fake's kill, like the kernel's to such a process, returns with the process still running.
    stopAtOnce(proc);
    expect(calls).toEqual(["stderr stopped at once", "removeAllListeners SIGINT", "kill 4242 SIGINT", `exit ${EXIT.interrupted}`]);
  });

  it("on Windows, whose process.kill() of itself terminates it with exit code 1 (the code of a failed cycle), exits 130", () => {
    const { proc, calls } = fakeProcess("win32");
    stopAtOnce(proc);
    expect(calls).toEqual(["stderr stopped at once", `exit ${EXIT.interrupted}`]);
  });
});
