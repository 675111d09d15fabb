/**
 * `bridge demo` in-process: its temp directory (events file, state) is removed when it ends, unless --keep.
 */
import { existsSync } from "node:fs";
import { readFile, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { demoCommand } from "../../shared/cli/demo.js";
import type { DemoArgs } from "../../shared/cli/args.js";
import { EXIT } from "../../shared/cli/errors.js";
import { ROOT, runInProcess } from "./helpers.js";

/** Runs the demo with its own streams; `onStdout` sees the output as it grows (to play Ctrl-C). */
async function demo(args: Partial<DemoArgs>, onStdout: (stdout: string, stop: () => void) => void = () => undefined, onStderr: (chunk: string) => void = () => undefined) {
  const controller = new AbortController();
  let stdout = "";
  let stderr = "";
  const code = await demoCommand(
    { cycles: 1, intervalMs: 0, seed: 42, keep: false, ...args },
    {
      env: { NO_COLOR: "1" },
      cwd: ROOT,
      stdout: {
        write: (chunk: string) => {
          stdout += chunk;
          onStdout(stdout, () => controller.abort());
        },
      },
      stderr: {
        write: (chunk: string) => {
          stderr += chunk;
          onStderr(chunk);
        },
      },
      signal: controller.signal,
    },
  );
  const eventsFile = /events are appended to (\S+events\.jsonl)/.exec(stdout)?.[1] ?? "";
  return { code, stdout, stderr, eventsFile, dir: dirname(eventsFile) };
}

describe("bridge demo's temp directory", () => {
  it("is removed at the end of the demo's cycles, and both the first and the last line say so", async () => {
    const { code, stdout, stderr, eventsFile, dir } = await demo({ cycles: 1 });
    expect(code, stderr).toBe(EXIT.ok);
    expect(dir).toMatch(/qashio-bridge-demo-/);
    expect(stdout).toContain(`events are appended to ${eventsFile} (EventBridge target shape), removed at the end unless --keep; Ctrl-C stops`);
    expect(stdout.trimEnd().split("\n").at(-1)).toBe(`stopped after 1 cycle; removed ${dir} (--keep keeps it)`);
    expect(existsSync(dir)).toBe(false);
  });

  it("is removed when Ctrl-C stops the demo", async () => {
    const { code, stdout, dir } = await demo({ cycles: undefined, intervalMs: 60_000 }, (out, stop) => {
      if (out.includes("── cycle 1:")) stop();
    });
    expect(code).toBe(EXIT.ok);
    expect(stdout).toContain(`stopped after 1 cycle; removed ${dir}`);
    expect(existsSync(dir)).toBe(false);
  });

  it("does not promise that a next run resumes a cycle Ctrl-C stopped: the demo's state goes with it", async () => {
    const { code, stdout, dir } = await demo({ cycles: undefined, intervalMs: 60_000 }, (out, stop) => {
      if (out.includes("transaction.created")) stop();
    });
    expect(code).toBe(EXIT.ok);
    expect(stdout).toMatch(/── cycle 1: .* · stopped as asked\n/);
    expect(stdout).not.toContain("resumes");
    expect(stdout).toContain(`stopped after 1 cycle; removed ${dir}`);
  });

  it("is removed when Ctrl-C comes while the demo signs in, which is a clean stop, not a failure", async () => {
    const { code, stdout, stderr, dir } = await demo({ cycles: undefined, intervalMs: 60_000 }, (out, stop) => {
      if (out.includes("events are appended to")) stop();
    });
    expect(code, stderr).toBe(EXIT.ok);
    expect(stderr).not.toContain("demo failed");
    expect(stdout.trimEnd().split("\n").at(-1)).toBe(`stopped after 0 cycles; removed ${dir} (--keep keeps it)`);
    expect(existsSync(dir)).toBe(false);
  });

  it("is removed when the demo fails, says so on stderr, and the failure is passed on", async () => {
    let seen = "";
    let stderr = "";
    const failed = demo(
      { cycles: 1 },
      (out) => {
        seen = out;
        if (out.includes("authorized against the sandbox")) throw new Error("stdout closed");
      },
      (chunk) => (stderr += chunk),
    );
    await expect(failed).rejects.toThrow("stdout closed");
    const dir = dirname(/events are appended to (\S+events\.jsonl)/.exec(seen)?.[1] ?? "");
    expect(dir).toMatch(/qashio-bridge-demo-/);
    expect(existsSync(dir)).toBe(false);
    expect(stderr).toContain(`demo failed; removed ${dir} (--keep keeps it)`);
  });

  it("that cannot be made (TMPDIR missing or not writable) is a setting to fix, exit 2, not an unexpected error", async () => {
    const missing = join(ROOT, "no-such-tmpdir");
    vi.stubEnv("TMPDIR", missing);
    try {
      const { code, stdout, stderr } = await runInProcess(["demo", "--cycles", "1"], {});
      expect(stderr).not.toContain("unexpected");
      expect(stderr).toContain(`error: TMPDIR: the demo's temp directory cannot be made in ${missing} (ENOENT); point TMPDIR to a directory this user can write`);
      expect(code).toBe(EXIT.usage);
      expect(stdout).toBe("");
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it("of the bench, when it cannot be made, is the same exit 2, said before any sandbox child is started", async () => {
    const missing = join(ROOT, "no-such-tmpdir");
    vi.stubEnv("TMPDIR", missing);
    try {
      const { code, stdout, stderr } = await runInProcess(["bench", "--transactions", "100", "--latency-ms", "1"], {});
      expect(stderr).toContain(`error: TMPDIR: the bench's temp directory cannot be made in ${missing} (ENOENT); point TMPDIR to a directory this user can write`);
      expect(code).toBe(EXIT.usage);
      expect(stdout).toBe("");
    } finally {
      vi.unstubAllEnvs();
      await rm(missing, { recursive: true, force: true });
    }
  });

  it("is kept with --keep, the events file named in the last line", async () => {
    const { code, stdout, eventsFile, dir } = await demo({ cycles: 1, keep: true });
    try {
      expect(code).toBe(EXIT.ok);
      expect(stdout).toContain("(EventBridge target shape), kept at the end (--keep); Ctrl-C stops");
      expect(stdout.trimEnd().split("\n").at(-1)).toBe(`stopped after 1 cycle; events are in ${eventsFile}`);
      expect((await readFile(eventsFile, "utf8")).trim().split("\n").length).toBeGreaterThan(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("bridge demo's events", () => {
  it("carry personal fields redacted, as the default BRIDGE_PII_MODE does, and are printed one line each", async () => {
    const { code, stdout, eventsFile, dir } = await demo({ cycles: 1, keep: true });
    try {
      expect(code).toBe(EXIT.ok);
      const events = (await readFile(eventsFile, "utf8"))
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { detail: { type: string; subject: { qashio_id?: string; id: string }; data: { object: Record<string, unknown> } } });
      const transactions = events.filter((e) => e.detail.type.startsWith("transaction."));
      expect(transactions.length).toBeGreaterThan(0);
      for (const { detail } of transactions) {
        for (const field of ["card_holder_name", "card_holder_email"]) {
          const value = detail.data.object[field];
          if (value !== null && value !== undefined && value !== "") expect(value, field).toBe("[redacted]");
        }
        expect(stdout).toMatch(new RegExp(`^\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2}  ${detail.type.replace(".", "\\.")} +${detail.subject.qashio_id ?? detail.subject.id}  `, "m"));
      }
      expect(transactions.some(({ detail }) => detail.data.object.card_holder_name === "[redacted]")).toBe(true);
      // The first cycle delivers the sandbox's backlog; its activity starts before the second one (README's output).
      expect(stdout).not.toContain("sandbox activity");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
