import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { EXIT } from "../../shared/cli/errors.js";
import { StopSignals, stopAtOnce, type EndingProcess } from "../../shared/cli/stop-at-once.js";
import { ROOT } from "./helpers.js";

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
  it.each<NodeJS.Platform>(["linux", "darwin", "freebsd"])("on POSIX (%s), ends the process by SIGINT's default action (130 in a shell) before any process.exit()", (platform) => {
    const { proc, calls } = fakeProcess(platform);
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

describe("StopSignals (the one rule bridge.ts and npm run sandbox count stop signals by)", () => {
  /** Hears a signal at each of `times` (ms, performance.now()), answering what each counted as. */
  function hear(times: readonly number[]): number[] {
    const signals = new StopSignals();
    const now = vi.spyOn(performance, "now");
    try {
      return times.map((at) => {
        now.mockReturnValue(at);
        return signals.hear();
      });
    } finally {
      now.mockRestore();
    }
  }

  it("counts the first signal as stop 1, and one within 50 ms of it as that one delivered again (0: no new stop)", () => {
    expect(hear([1_000, 1_001, 1_049.9])).toEqual([1, 0, 0]);
  });

  it("counts a signal 50 ms or more after the first as a second stop, and each later one as the next", () => {
    expect(hear([1_000, 1_050, 1_051, 5_000])).toEqual([1, 2, 3, 4]);
    expect(hear([1_000, 1_010, 1_200, 1_201])).toEqual([1, 0, 2, 3]);
  });

  // Read as the docs word it: "N ms or more" makes a signal exactly N ms after the first a second stop, "more than N ms" the first again.
  it.each([
    ["docs/local-mode.md", /stopped at once by a second Ctrl-C, SIGTERM or SIGHUP, (more than (\d+) ms|(\d+) ms or more) after the first/],
    ["README.md", /a second one, Ctrl-C or SIGTERM whichever came first, (more than (\d+) ms|(\d+) ms or more) after the first/],
  ])("counts a second stop from the time after the first %s gives", (doc, pattern) => {
    const match = pattern.exec(readFileSync(join(ROOT, doc), "utf8").replace(/\s+/g, " "));
    expect(match, `${doc} no longer says when a second stop counts`).not.toBeNull();
    const strictlyAfter = match?.[2] !== undefined;
    const ms = Number(match?.[2] ?? match?.[3]);
    expect(hear([1_000, 1_000 + ms - 0.1])).toEqual([1, 0]);
    expect(hear([1_000, 1_000 + ms])).toEqual([1, strictlyAfter ? 0 : 2]);
    expect(hear([1_000, 1_000 + ms + 0.1])).toEqual([1, 2]);
  });

  it("measures the 50 ms from the first signal, not from its last repeat: a stream of repeats does not hold off a second stop", () => {
    expect(hear([1_000, 1_040, 1_080])).toEqual([1, 0, 2]);
  });
});
