/**
 * `bridge demo` in-process: its temp directory (events file, state) is removed when it ends, unless --keep.
 */
import type * as fs from "node:fs";
import type * as fsPromises from "node:fs/promises";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { readFile, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import type { BridgeEvent } from "../../shared/bridge/ports.js";
import { createSandbox, type Sandbox } from "../../sandbox/index.js";
import { spendableOf } from "../../sandbox/data/balances.js";
import { accountBalanceOf } from "../../sandbox/data/model.js";
import { canSpendNow } from "../../sandbox/data/transactions.js";
import { demoCommand, SeenTransactions, type DemoSeams } from "../../shared/cli/demo.js";
import type { DemoArgs } from "../../shared/cli/args.js";
import { AuthorizeAgainError, AuthorizeError, CliError, EXIT } from "../../shared/cli/errors.js";
import { STATE_FILES } from "../../shared/local/layout.js";
import { ISSUER_MAX_SPEND_LIMIT } from "../../sandbox/routes/core.js";
import { ROOT, runInProcess } from "./helpers.js";

/**
 * fsync made a no-op: it makes the demo's writes survive power loss, which nothing here looks at (the local store's
 * durability tests do), and on a disk it took about a third of the demo's cycles. Every other file operation is real.
 */
vi.mock("node:fs", async (importOriginal) => ({ ...(await importOriginal<typeof fs>()), fsyncSync: () => undefined }));

/** The error code `rm` fails with while set, to play a temp directory the demo cannot remove; unset, `rm` is real. */
const rmFailure = vi.hoisted(() => ({ code: undefined as string | undefined }));
vi.mock("node:fs/promises", async (importOriginal) => {
  const real = await importOriginal<typeof fsPromises>();
  const rm: typeof real.rm = async (path, options) => {
    if (rmFailure.code !== undefined) throw Object.assign(new Error(`rm failed (${rmFailure.code})`), { code: rmFailure.code });
    return real.rm(path, options);
  };
  return { ...real, rm };
});

/** Runs the demo with its own streams; `onStdout` sees the output as it grows (to play Ctrl-C). */
async function demo({ seams, env = { NO_COLOR: "1" }, ...args }: Partial<DemoArgs> & { seams?: DemoSeams; env?: Record<string, string> }, onStdout: (stdout: string, stop: () => void) => void = () => undefined, onStderr: (chunk: string) => void = () => undefined) {
  const controller = new AbortController();
  let stdout = "";
  let stderr = "";
  const code = await demoCommand(
    { cycles: 1, intervalMs: 0, seed: 42, keep: false, ...args },
    {
      env,
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
    seams,
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

  // A closed stderr too changes nothing: the failure passed on is the demo's own, not the closed stderr's.
  it.each([["open", false], ["closed", true]])("is removed when the demo fails, says so on stderr (%s), and the failure is passed on", async (_, stderrClosed) => {
    let seen = "";
    let stderr = "";
    const failed = demo(
      { cycles: 1 },
      (out) => {
        seen = out;
        if (out.includes("authorized against the sandbox")) throw new Error("stdout closed");
      },
      (chunk) => {
        stderr += chunk;
        if (stderrClosed) throw new Error("stderr closed");
      },
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

  it("that cannot be removed is left with a warning naming it and why, the last line naming the events file: the demo still ends 0", async () => {
    rmFailure.code = "EBUSY";
    let output: Awaited<ReturnType<typeof demo>>;
    try {
      output = await demo({ cycles: 1 });
    } finally {
      rmFailure.code = undefined;
    }
    const { code, stdout, stderr, eventsFile, dir } = output;
    try {
      expect(code, stderr).toBe(EXIT.ok);
      expect(stderr).toBe(`warning: could not remove ${dir} (EBUSY)\n`);
      expect(stdout.trimEnd().split("\n").at(-1)).toBe(`stopped after 1 cycle; events are in ${eventsFile}`);
      expect(existsSync(eventsFile)).toBe(true);
    } finally {
      await rm(dir, { recursive: true, force: true });
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

/** A line of the demo's output without what changes from run to run: clock times, durations, port, temp directory. */
function comparable(line: string): string {
  return line
    .replace(/^\d{2}-\d{2} \d{2}:\d{2}:\d{2}/, "<time>")
    .replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/g, "<iso time>")
    .replace(/ · \d+ ms$/, " · <n> ms")
    .replace(/http:\/\/127\.0\.0\.1:\d+/, "<sandbox>")
    .replace(/\S*qashio-bridge-demo-[^/\s]+/g, "<temp dir>");
}

describe("README's `npm start` sample", () => {
  it("is real output of the demo at the seed README names: every line it shows, in order, but times and paths", async () => {
    const readme = await readFile(join(ROOT, "README.md"), "utf8");
    const sample = /^Real output of `npm start -- --cycles (\d+)` \(seed (\d+)[^\n]*\n+```text\n([\s\S]*?)```/m.exec(readme);
    expect(sample, "README names its sample's cycles and seed").not.toBeNull();
    const [, cycles, seed, text] = sample!;
    // The date README's sample was made on: the seeded history and the spend limits' windows sit relative to it.
    const { code, stdout, stderr } = await demo({ cycles: Number(cycles), seed: Number(seed), seams: { startTime: "2026-12-02T00:39:40.000Z" } });
    expect(code, stderr).toBe(EXIT.ok);
    const printed = stdout.split("\n").map(comparable);
    // README leaves lines out ("..."), never adds or reorders any: each line it shows comes after the one before it.
    let after = 0;
    for (const line of text!.split("\n").filter((l) => l !== "" && l !== "...").map(comparable)) {
      const at = printed.indexOf(line, after);
      expect(at, `README line not printed (in this order): ${line}`).toBeGreaterThanOrEqual(0);
      after = at + 1;
    }
  });
});

describe("bridge demo with a token the provider refuses", () => {
  it("stops at once with the re-authorize error (exit 3) instead of failing every cycle, and removes its temp directory", async () => {
    let stdout = "";
    let stderr = "";
    let refused = false;
    const failed = demo(
      { cycles: 2 },
      (out) => {
        stdout = out;
        if (refused || !out.includes("authorized against the sandbox")) return;
        // As a revoked family answers: the token endpoint refuses the stored refresh token (invalid_grant).
        const dir = dirname(/events are appended to (\S+events\.jsonl)/.exec(out)?.[1] ?? "");
        writeFileSync(join(dir, "state", STATE_FILES.tokens), JSON.stringify({ refreshToken: "a-refresh-token-the-provider-never-issued" }));
        refused = true;
      },
      (chunk) => (stderr += chunk),
    );
    const error = await failed.catch((e: unknown) => e);
    expect(refused).toBe(true);
    expect(error).toBeInstanceOf(AuthorizeAgainError);
    expect((error as AuthorizeAgainError).exitCode).toBe(EXIT.reauthorize);
    expect(stderr).not.toContain("cycle 1 failed");
    expect(stdout).not.toContain("── cycle");
    const dir = dirname(/events are appended to (\S+events\.jsonl)/.exec(stdout)?.[1] ?? "");
    expect(stderr).toContain(`demo failed; removed ${dir} (--keep keeps it)`);
    // Its sandbox and state went with it: nothing to authorize, a new demo signs in anew.
    expect((error as AuthorizeAgainError).message).toBe("the provider revoked this integration's token family: start a new demo with `npm start` to sign in again");
  });
});

describe("bridge demo whose sign-in fails", () => {
  it("fails with the sign-in's error, its temp directory removed, rather than stop cleanly after 0 cycles: no Ctrl-C asked for it", async () => {
    let stderr = "";
    const seams: DemoSeams = {
      onSandbox: (sandbox) => {
        // The provider hands out a code its token endpoint then refuses.
        sandbox.control.issueAuthorizationCode = () => "a-code-the-provider-never-issued";
      },
    };
    const error = await demo({ cycles: 1, seams }, undefined, (chunk) => (stderr += chunk)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthorizeError);
    expect((error as AuthorizeError).message).toMatch(/^the code exchange failed: /);
    expect(stderr).toMatch(/demo failed; removed \S*qashio-bridge-demo-\S+ \(--keep keeps it\)/);
  });
});

describe("bridge demo whose cycle fails as the next one may not", () => {
  it("says on stderr which cycle failed and why, and goes on to the next, as `run --interval` does", async () => {
    let sandbox: Sandbox | undefined;
    let faulted = false;
    const { code, stdout, stderr } = await demo({ cycles: 3, seams: { onSandbox: (s) => (sandbox = s) } }, (out) => {
      if (faulted || !out.includes("── cycle 1:")) return;
      // The provider refuses the next transaction list once: the cycle fails, the one after it reads again.
      sandbox?.control.state.faults.add({ method: "GET", pathPrefix: "/public/v1/erp/transactions", status: 400, count: 1 });
      faulted = true;
    });
    expect(code, stderr).toBe(EXIT.ok);
    expect(stderr).toMatch(/^cycle 2 failed: \S/m);
    expect(stdout).toContain("── cycle 3:");
    expect(stdout).toContain("stopped after 3 cycles");
  });
});

describe("bridge demo that fails with --keep", () => {
  it("keeps its temp directory, as README says --keep does however the demo ends, and names the events file on stderr", async () => {
    let stderr = "";
    const seams: DemoSeams = { onSandbox: (sandbox) => (sandbox.control.issueAuthorizationCode = () => "a-code-the-provider-never-issued") };
    const error = await demo({ cycles: 1, keep: true, seams }, undefined, (chunk) => (stderr += chunk)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthorizeError);
    const eventsFile = /demo failed; events are in (\S+events\.jsonl)/.exec(stderr)?.[1] ?? "";
    const dir = dirname(eventsFile);
    try {
      expect(dir).toMatch(/qashio-bridge-demo-/);
      expect(existsSync(join(dir, "state"))).toBe(true);
    } finally {
      if (dir.includes("qashio-bridge-demo-")) rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("bridge demo whose state directory goes away", () => {
  it("stops with the state directory's error (exit 2) instead of failing every cycle, as `run --interval` does", async () => {
    let stdout = "";
    let stderr = "";
    let removed = false;
    const failed = demo(
      { cycles: 3 },
      (out) => {
        stdout = out;
        if (removed || !out.includes("── cycle 1:")) return;
        // A temp cleaner, or a person tidying /tmp of an earlier --keep, takes the running demo's directory.
        rmSync(dirname(/events are appended to (\S+events\.jsonl)/.exec(out)?.[1] ?? ""), { recursive: true, force: true });
        removed = true;
      },
      (chunk) => (stderr += chunk),
    );
    const error = await failed.catch((e: unknown) => e);
    expect(removed).toBe(true);
    expect(error).toBeInstanceOf(CliError);
    expect((error as CliError).exitCode).toBe(EXIT.usage);
    expect((error as CliError).message).toContain("was moved or removed while the bridge ran");
    expect(stderr).not.toContain("cycle 2 failed");
    expect(stdout).not.toContain("── cycle 2:");
    expect(stdout).not.toContain("stopped after");
    expect(stderr).toContain("demo failed; removed");
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

describe("bridge demo's events' tenant", () => {
  it("is demo, on every event the events file holds", async () => {
    const { code, stderr, eventsFile, dir } = await demo({ cycles: 1, keep: true });
    try {
      expect(code, stderr).toBe(EXIT.ok);
      const tenants = (await readFile(eventsFile, "utf8"))
        .trim()
        .split("\n")
        .map((l) => (JSON.parse(l) as { detail: { tenant: string } }).detail.tenant);
      expect(tenants.length).toBeGreaterThan(0);
      expect(new Set(tenants)).toEqual(new Set(["demo"]));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("what the bridge demo remembers to aim its activity at", () => {
  function event(type: string, id: number, object: Record<string, unknown>, subjectType: "transaction" | "card" = "transaction"): BridgeEvent {
    return {
      source: "qashio-bridge",
      detailType: type,
      time: "2025-03-15T12:00:00.000Z",
      detail: {
        id: `event-${type}-${id}`,
        type,
        schema_version: "1",
        tenant: "demo",
        occurred_at: "2025-03-15T12:00:00.000Z",
        subject: { type: subjectType, id: `tx-${id}`, qashio_id: `CT${id}`, sequence: 1 },
        data: { object },
      },
    };
  }
  const purchase = (id: number, approval = "pending") => event("transaction.created", id, { transaction_category: "purchase", approval_status: approval });

  it("is the most recent purchases and first-seen transactions only, however many it saw, so a long demo stays flat", () => {
    const seen = new SeenTransactions(3);
    for (let id = 1; id <= 1_000; id++) seen.remember(purchase(id));
    expect(seen.purchases).toEqual([998, 999, 1_000].map((id) => ({ id: `tx-${id}`, qashioId: `CT${id}` })));
    expect([...seen.approvals.keys()]).toEqual(["tx-998", "tx-999", "tx-1000"]);
  });

  it("is, unless told, as many purchases and transactions as README says the demo remembers", async () => {
    const readme = await readFile(join(ROOT, "README.md"), "utf8");
    const said = Number(/the demo remembers only the (\d+) most recent purchases and transactions it saw/.exec(readme)?.[1]);
    expect(said).toBeGreaterThan(0);
    const seen = new SeenTransactions();
    for (let id = 0; id <= said; id++) seen.remember(purchase(id));
    expect(seen.purchases).toHaveLength(said);
    expect(seen.purchases[0]?.id).toBe("tx-1");
    expect(seen.approvals.size).toBe(said);
    expect(seen.approvals.has("tx-0")).toBe(false);
  });

  it("updates a transaction seen again in place (the oldest first seen goes first), and remembers only new purchases as purchases", () => {
    const seen = new SeenTransactions(3);
    [1, 2, 3].forEach((id) => seen.remember(purchase(id)));
    seen.remember(event("transaction.changed", 1, { transaction_category: "purchase", approval_status: "rejected" }));
    seen.remember(event("transaction.created", 4, { transaction_category: "refund", approval_status: "approved" }));
    seen.remember(event("card.suspended", 5, { status: "Suspended" }, "card"));
    expect([...seen.approvals]).toEqual([["tx-2", "pending"], ["tx-3", "pending"], ["tx-4", "approved"]]);
    expect(seen.purchases.map((p) => p.id)).toEqual(["tx-1", "tx-2", "tx-3"]);
  });

  it("keeps its activity going round after round: refunds and approval changes, no control call refused", async () => {
    const { code, stdout, stderr } = await demo({ cycles: 30 });
    expect(code, stderr).toBe(EXIT.ok);
    expect(stderr).toBe("");
    expect(stdout).toMatch(/sandbox activity: .*refund of CT/);
    expect(stdout).toMatch(/sandbox activity: .*approval → /);
    expect(stdout).toContain("stopped after 30 cycles");
  });

  it("moves an approval for real each time it says so: every narrated change is published as an approval_status change", async () => {
    const { code, stdout, stderr, eventsFile, dir } = await demo({ cycles: 20, keep: true });
    try {
      expect(code, stderr).toBe(EXIT.ok);
      const narrated = [...stdout.matchAll(/sandbox activity: .*approval → /g)].length;
      const published = (await readFile(eventsFile, "utf8"))
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { detail: { data: { changes?: { path: string }[] } } })
        .filter((e) => e.detail.data.changes?.some((c) => c.path === "/approval_status")).length;
      expect(narrated).toBeGreaterThan(0);
      expect(published).toBe(narrated);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("aims only at transactions its sandbox still holds, so a sandbox that forgets fast refuses no control call", async () => {
    // Under the demo's own bound every id it remembers is still held; at 5 the sandbox forgets the seed's acknowledged
    // transactions after the first cycle, and most of what the demo remembers soon after.
    const cycles = 100;
    let demoSandbox: Sandbox | undefined;
    const seams = { retainTransactions: 5, onSandbox: (s: Sandbox) => (demoSandbox = s) };
    const { code, stdout, stderr, eventsFile, dir } = await demo({ cycles, keep: true, seams });
    try {
      expect(code, stderr).toBe(EXIT.ok);
      expect(stderr).toBe("");
      expect(stdout).toContain(`stopped after ${cycles} cycles`);
      expect(stdout).toMatch(/sandbox activity: .*refund of CT/);
      expect(stdout).toMatch(/sandbox activity: .*approval → /);
      // Every cycle whole: nothing quarantined, none stopped short.
      const summaries = stdout.split("\n").filter((l) => l.startsWith("── cycle "));
      expect(summaries).toHaveLength(cycles);
      for (const summary of summaries) expect(summary).toMatch(/ · 0 quarantined · \d+ ms$/);
      // Every transaction to read, the seed's (those it did not mark acknowledged) and the activity's, delivered once.
      const sandbox = createSandbox({ seed: 42 });
      const seeded = sandbox.control.company(sandbox.control.companies()[0]?.id ?? "")?.transactions;
      const backlog = (seeded?.countByStatus("not_synced") ?? 0) + (seeded?.countByStatus("outdated") ?? 0);
      const rounds = [...stdout.matchAll(/sandbox activity: (\d+) new purchases?(, refund of)?/g)];
      const made = backlog + rounds.reduce((sum, [, spend, refund]) => sum + Number(spend) + (refund === undefined ? 0 : 1), 0);
      const created = (await readFile(eventsFile, "utf8"))
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { detail: { type: string; subject: { id: string } } })
        .filter((e) => e.detail.type === "transaction.created")
        .map((e) => e.detail.subject.id);
      expect(rounds).toHaveLength(cycles - 1);
      expect(new Set(created).size).toBe(created.length);
      expect(created).toHaveLength(made);
      // The ground of the claim: the sandbox forgot most of them, the demo's targets among them.
      const transactions = demoSandbox?.control.company(demoSandbox.control.companies()[0]?.id ?? "")?.transactions;
      expect(created.filter((id) => transactions?.get(id) !== undefined).length).toBeLessThan(made / 2);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("the bridge demo's deposits", () => {
  it("pay into the funding account what the cards spent since the last deposit, net of refunds, and no more", async () => {
    // The control calls the demo makes (over fetch; the bridge's own calls go over node:http), with their answers.
    const calls: { path: string; body: { amount?: number; transaction_category?: string }; answer: { data?: unknown } }[] = [];
    const realFetch = globalThis.fetch;
    const spy = vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      const response = await realFetch(input, init);
      const path = new URL(input instanceof Request ? input.url : input).pathname;
      if (path.startsWith("/_sandbox/companies/") && init?.method === "POST") {
        calls.push({ path, body: JSON.parse(String(init.body)) as { amount?: number }, answer: (await response.clone().json()) as { data?: unknown } });
      }
      return response;
    });
    let output: Awaited<ReturnType<typeof demo>>;
    try {
      output = await demo({ cycles: 21 });
    } finally {
      spy.mockRestore();
    }
    expect(output.code, output.stderr).toBe(EXIT.ok);
    // What each deposit should be: the purchases' billing amounts less the refunds', since the deposit before it.
    const expected: number[] = [];
    let spent = 0;
    let refunded = 0;
    let refundsDeposited = 0;
    for (const { path, body, answer } of calls) {
      if (path.endsWith("/deposits")) {
        expected.push(Math.round(spent * 100) / 100);
        spent = 0;
        refundsDeposited += refunded;
        refunded = 0;
      } else if (path.endsWith("/transactions")) {
        const billed = (answer.data as { billing_amount: number }[]).reduce((sum, tx) => sum + tx.billing_amount, 0);
        spent += body.transaction_category === "refund" ? -billed : billed;
        if (body.transaction_category === "refund" && billed > 0) refunded += 1;
      }
    }
    // Rounds 10 and 20 deposit, with refunds among what they pay back.
    expect(expected).toHaveLength(2);
    const rounds = output.stdout.split("\n").filter((l) => l.includes("sandbox activity: "));
    expect(rounds.flatMap((l, i) => (l.includes("deposit of") ? [i + 2] : []))).toEqual([10, 20]);
    expect(refundsDeposited).toBeGreaterThan(0);
    const printed = [...output.stdout.matchAll(/deposit of (\d+\.\d{2}) into the funding account/g)].map(([, amount]) => Number(amount));
    expect(printed).toEqual(expected);
    expect(calls.filter((c) => c.path.endsWith("/deposits")).map((c) => c.body.amount)).toEqual(expected);
  }, 60_000);

  it("are said to the cent, a whole amount too", async () => {
    // Seed 1's first deposit, at round 10, is a whole amount on this start date (the spend before it, and so the
    // deposit, follows the calendar: on another day it can come to cents).
    const { code, stdout, stderr } = await demo({ cycles: 10, seed: 1, seams: { startTime: "2026-12-05T06:55:00.000Z" } });
    expect(code, stderr).toBe(EXIT.ok);
    expect(stdout).toMatch(/sandbox activity: .*deposit of \d+\.00 into the funding account/);
  });

  it("are none when refunds gave back more than the cards spent since the last one: nothing to pay in, and no deposit of 0 or less", async () => {
    // No card can buy after its one purchase, none can be raised: from round 2 on only refunds move money, back.
    const { code, stdout, stderr } = await demo({ cycles: 11, seams: everyCardLimitedToOnePurchase(400_000) });
    expect(code, stderr).toBe(EXIT.ok);
    expect(stdout).toMatch(/sandbox activity: 0 new purchases, refund of CT/);
    expect(stdout).toContain("stopped after 11 cycles");
    expect(stdout).not.toContain("deposit of");
  });

  it("are none when the cards spent nothing since the last one: no deposit of 0, which the sandbox refuses", async () => {
    // No card to buy on (every one terminated) and nothing for the bridge to hand on (the seed's transactions all
    // acknowledged), so no purchase to refund either: round 10 comes with exactly 0 spent.
    const seams: DemoSeams = {
      onSandbox: (sandbox) => {
        const data = sandbox.control.company(sandbox.control.companies()[0]?.id ?? "");
        for (const card of data?.cards ?? []) card.status = "Terminated";
        for (const tx of data?.transactions.all() ?? []) data?.transactions.setSyncStatus(tx, "synced");
      },
    };
    const { code, stdout, stderr } = await demo({ cycles: 10, seams });
    expect(code, stderr).toBe(EXIT.ok);
    expect(stderr).toBe("");
    const rounds = stdout.split("\n").filter((l) => l.includes("sandbox activity: "));
    expect(rounds).toHaveLength(9);
    for (const round of rounds) expect(round).toMatch(/sandbox activity: 0 new purchases(, \d+ purchases? cleared)?$/);
    expect(stdout).toContain("stopped after 10 cycles");
  });
});

/**
 * Seams that limit every card of the demo's company to `maxAmount` in at most `frequency` purchases ever (0: any number);
 * `onSandbox` also sees the sandbox. At a fixed start: which cards the seeded history bought on follows the calendar
 * (spec-gaps, Spend limits), and at this start every Active card of seed 42 bought; on some days one has not (at
 * 2026-12-31T23:59:30Z, 2027-02-28T12:00:00Z or 2027-04-01T00:00:00Z one had none), and it could buy in round 2 where
 * these tests expect none.
 */
function everyCardLimitedEver(maxAmount: number, frequency: number, onSandbox: (sandbox: Sandbox) => void = () => undefined): DemoSeams {
  return {
    startTime: "2027-03-15T12:00:00.000Z",
    onSandbox: (sandbox) => {
      const data = sandbox.control.company(sandbox.control.companies()[0]?.id ?? "");
      for (const card of data?.cards ?? []) card.spendLimit = { ...card.spendLimit, active: true, period: "ALL_TIME", maxAmount, frequency };
      onSandbox(sandbox);
    },
  };
}

/** Every card limited to one purchase ever at `maxAmount` (whose raise is about twice it), so no card can buy once it bought. */
function everyCardLimitedToOnePurchase(maxAmount: number, onSandbox?: (sandbox: Sandbox) => void): DemoSeams {
  return everyCardLimitedEver(maxAmount, 1, onSandbox);
}

describe("the bridge demo's spend limit raises", () => {
  it("ask for up to what the issuer accepts, that amount included, and say which card's limit was raised", async () => {
    // A limit of half the issuer's most, of which the window used less: its raise is the issuer's most exactly.
    let sandbox: Sandbox | undefined;
    const { code, stdout, stderr } = await demo({ cycles: 2, seams: everyCardLimitedToOnePurchase(ISSUER_MAX_SPEND_LIMIT / 2, (s) => (sandbox = s)) });
    expect(code, stderr).toBe(EXIT.ok);
    const raised = /sandbox activity: 1 new purchase, spend limit of card (\S+) raised in the dashboard/.exec(stdout)?.[1];
    expect(raised, stdout).toBeDefined();
    const card = sandbox?.control.company(sandbox.control.companies()[0]?.id ?? "")?.cards.find((c) => c.id === raised);
    expect(card?.spendLimit.maxAmount).toBe(ISSUER_MAX_SPEND_LIMIT);
    // The demo reads cards as the default BRIDGE_CARD_DETAILS (false) does: a limit raised is no card event.
    expect(stdout).not.toContain("card.updated");
  });

  /** Two demo cycles with every card limited ever to `maxAmount` in `frequency` purchases: the spend limit it raised. */
  async function raisedLimitOf(maxAmount: number, frequency: number) {
    let sandbox: Sandbox | undefined;
    const { code, stdout, stderr } = await demo({ cycles: 2, seams: everyCardLimitedEver(maxAmount, frequency, (s) => (sandbox = s)) });
    expect(code, stderr).toBe(EXIT.ok);
    const raised = /spend limit of card (\S+) raised in the dashboard/.exec(stdout)?.[1];
    expect(raised, stdout).toBeDefined();
    return sandbox?.control.company(sandbox.control.companies()[0]?.id ?? "")?.cards.find((c) => c.id === raised)?.spendLimit;
  }

  it("give a limit its amount stops, not its count, a full window's count again: twice the count it had", async () => {
    // An amount below any purchase's, and a count of purchases no card's history comes near.
    expect((await raisedLimitOf(1, 1_000))?.frequency).toBe(2_000);
  });

  it("leave a limit with no count (frequency 0) without one: only its amount is raised", async () => {
    const limit = await raisedLimitOf(1, 0);
    expect(limit?.maxAmount).toBeGreaterThan(1);
    expect(limit?.frequency).toBe(0);
  });

  it("never ask for a limit past what the issuer accepts: with no card to buy on and none to raise, rounds make no purchase and go on", async () => {
    // Every card limited to one purchase ever, at an amount whose raise (twice it) the issuer would refuse.
    const { code, stdout, stderr } = await demo({ cycles: 4, seams: everyCardLimitedToOnePurchase(400_000) });
    expect(code, stderr).toBe(EXIT.ok);
    expect(stderr).toBe("");
    const rounds = [...stdout.matchAll(/sandbox activity: (\d+) new purchases?/g)].map(([, n]) => Number(n));
    expect(rounds).toHaveLength(3);
    expect(rounds.at(-1)).toBe(0);
    expect(stdout).not.toContain("raised in the dashboard");
  });
});

describe("the bridge demo's clearings", () => {
  it("clear a purchase for what it authorised, fee included, at sandbox time, settled", async () => {
    // A start far from the current time, so sandbox time and real time differ.
    const startTime = "2027-03-15T12:00:00.000Z";
    const { code, stdout, stderr, eventsFile, dir } = await demo({ cycles: 6, keep: true, seams: { startTime } });
    try {
      expect(code, stderr).toBe(EXIT.ok);
      const clearings = (await readFile(eventsFile, "utf8"))
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { detail: { data: { object: Record<string, unknown>; changes?: { path: string; after: unknown }[] } } })
        .filter((e) => e.detail.data.changes?.some((c) => c.path === "/clearing_status" && c.after === "cleared"))
        .map((e) => e.detail.data.object);
      expect(clearings.length, stdout).toBeGreaterThan(0);
      // Among them a foreign purchase's, with its fee.
      expect(clearings.some((tx) => Number(tx.fee_charges) > 0)).toBe(true);
      for (const tx of clearings) {
        expect(tx.clearing_amount, String(tx.id)).toBe(tx.billing_amount);
        expect(tx).toMatchObject({ settlement_status: "settled", message_type: "clearing" });
        expect(Date.parse(String(tx.cleared_at)) - Date.parse(startTime)).toBeGreaterThanOrEqual(0);
        expect(Date.parse(String(tx.cleared_at)) - Date.parse(startTime)).toBeLessThan(60_000);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("clear each purchase once, CLEARS_AFTER_ROUNDS (3) rounds after the round that made it", async () => {
    const { code, stdout, stderr } = await demo({ cycles: 12 });
    expect(code, stderr).toBe(EXIT.ok);
    // Round r is cycle r's activity (from cycle 2): what it made, and what it said it cleared.
    const rounds = stdout
      .split("\n")
      .filter((l) => l.includes("sandbox activity: "))
      .map((l) => ({ made: Number(/(\d+) new purchases?/.exec(l)?.[1]), cleared: Number(/(\d+) purchases? cleared/.exec(l)?.[1] ?? 0) }));
    expect(rounds).toHaveLength(11);
    const made = new Map(rounds.map((r, i) => [i + 2, r.made]));
    expect(rounds.map((r) => r.cleared)).toEqual(rounds.map((_, i) => made.get(i + 2 - 3) ?? 0));
    expect(rounds.some((r) => r.cleared > 0)).toBe(true);
  });
});

describe("bridge demo whose sandbox refuses a control call", () => {
  // Purchases are asked for from round 2 on, the clock read for the first clearing, at round 5.
  it.each([
    ["POST /transactions", 2, /^\/_sandbox\/companies\/[^/]+\/transactions$/],
    ["GET /clock", 5, /^\/_sandbox\/clock$/],
  ])("fails naming the call (%s) and its status, its temp directory removed, rather than go on as if the activity were made", async (call, cycles, refused) => {
    const realFetch = globalThis.fetch;
    const spy = vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      const path = new URL(input instanceof Request ? input.url : input).pathname;
      if (refused.test(path)) return new Response(JSON.stringify({ error: "unavailable" }), { status: 503 });
      return realFetch(input, init);
    });
    let stderr = "";
    try {
      const failed = demo({ cycles }, undefined, (chunk) => (stderr += chunk));
      await expect(failed).rejects.toThrow(`sandbox control ${call} answered 503`);
    } finally {
      spy.mockRestore();
    }
    expect(stderr).toMatch(/demo failed; removed \S*qashio-bridge-demo-\S+ \(--keep keeps it\)/);
  });
});

describe("bridge demo's sandbox", () => {
  it("stops listening when the demo ends", async () => {
    const { code, stdout, stderr } = await demo({ cycles: 1 });
    expect(code, stderr).toBe(EXIT.ok);
    const url = /sandbox at (http:\/\/127\.0\.0\.1:\d+),/.exec(stdout)?.[1];
    expect(url).toBeDefined();
    await expect(fetch(`${url}/_sandbox/clock`)).rejects.toThrow();
  });

  it("keeps the newest transactions README says it keeps, so a demo left running holds constant memory", async () => {
    const readme = await readFile(join(ROOT, "README.md"), "utf8");
    const said = /its sandbox forgets acknowledged transactions older than its newest (\d+)/.exec(readme)?.[1];
    let sandbox: Sandbox | undefined;
    const { code, stderr } = await demo({ cycles: 1, seams: { onSandbox: (s) => (sandbox = s) } });
    expect(code, stderr).toBe(EXIT.ok);
    expect(said).toBeDefined();
    expect(sandbox?.control.state.retainTransactions).toBe(Number(said));
  });
});

describe("bridge demo's pace and colour", () => {
  it("waits --interval between cycles", async () => {
    let cycleEnded = 0;
    let nextStarted = 0;
    const { code, stderr } = await demo({ cycles: 2, intervalMs: 400 }, (out) => {
      if (cycleEnded === 0 && out.includes("── cycle 1:")) cycleEnded = performance.now();
      if (nextStarted === 0 && out.includes("sandbox activity")) nextStarted = performance.now();
    });
    expect(code, stderr).toBe(EXIT.ok);
    expect(nextStarted - cycleEnded).toBeGreaterThanOrEqual(350);
  });

  it("colours its output when FORCE_COLOR asks for it", async () => {
    const { code, stdout, stderr } = await demo({ cycles: 1, env: { FORCE_COLOR: "1" } });
    expect(code, stderr).toBe(EXIT.ok);
    // Bold the first line, dim the last (SGR 1 and 2).
    expect(stdout.split("\n")[0]?.startsWith("\u001b[1mqashio-bridge demo: sandbox at ")).toBe(true);
    expect(stdout.trimEnd().split("\n").at(-1)?.startsWith("\u001b[2mstopped after 1 cycle; ")).toBe(true);
  });
});

/**
 * Runs the demo `cycles` cycles from `startTime` (the current time if undefined), reading after each cycle every balance
 * the sandbox answers with (what a card can spend, its account's, the funding account's), and checks it never ran dry:
 * every round made new purchases (it asks 1-3), the last half of them, long after the seeded balances would have run
 * out without money coming back, about as many as asked (2 a round on average): at least 1.5 a round; and no balance
 * was ever below 0 or above its account's most.
 */
async function expectNeverRunsDry(cycles: number, startTime?: string, seed = 42): Promise<void> {
  let sandbox: Sandbox | undefined;
  let read = 0;
  const problems: string[] = [];
  const checkBalances = (cycle: string) => {
    const data = sandbox?.control.company(sandbox.control.companies()[0]?.id ?? "");
    if (data === undefined) return;
    if (data.company.fundingBalance < 0) problems.push(`${cycle}: funding account ${data.company.fundingBalance}`);
    for (const card of data.cards) {
      const spendable = spendableOf(card, data);
      const account = accountBalanceOf(card, data);
      if (spendable < 0) problems.push(`${cycle}: card ${card.nickname} can spend ${spendable}`);
      if (account < 0 || account > card.allowedMaxBalance) problems.push(`${cycle}: card ${card.nickname}'s account holds ${account} (most ${card.allowedMaxBalance})`);
    }
    for (const pool of data.pools) if (pool.balance < 0 || pool.balance > pool.allowedMaxBalance) problems.push(`${cycle}: pool ${pool.accountName} holds ${pool.balance}`);
  };
  const { code, stdout, stderr } = await demo({ cycles, seed, seams: { startTime, onSandbox: (s) => (sandbox = s) } }, (out) => {
    for (const summary of out.slice(read).match(/^── cycle \d+/gm) ?? []) checkBalances(summary);
    read = out.lastIndexOf("\n") + 1;
  });
  expect(code, stderr).toBe(EXIT.ok);
  expect(stderr).toBe("");
  const spend = [...stdout.matchAll(/sandbox activity: (\d+) new purchases?/g)].map(([, n]) => Number(n));
  expect(spend).toHaveLength(cycles - 1);
  expect(spend.map((n, i) => [i + 2, n]).filter(([, n]) => n === 0)).toEqual([]);
  const half = Math.floor(cycles / 2);
  expect(spend.slice(-half).reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(1.5 * half);
  expect(problems).toEqual([]);
}

describe("the bridge demo's money (spec-gaps, Balances)", () => {
  it("never runs dry: round after round it makes new purchases, and no balance the sandbox reads is below 0 or above its account's most", async () => {
    await expectNeverRunsDry(200);
  }, 120_000);

  it("never suspends the last Active card a purchase can go on: with one card left to buy on, the suspension round leaves it buying", async () => {
    // One Active card, its limit off, every other card terminated: round 3 (a suspension round) has none it may suspend.
    const seams: DemoSeams = {
      startTime: "2027-03-15T12:00:00.000Z",
      onSandbox: (sandbox) => {
        const data = sandbox.control.company(sandbox.control.companies()[0]?.id ?? "");
        const buyer = data?.cards.find((c) => c.status === "Active" && canSpendNow(c, data, "purchase", sandbox.control.now()));
        for (const card of data?.cards ?? []) {
          if (card === buyer) card.spendLimit = { ...card.spendLimit, active: false };
          else card.status = "Terminated";
        }
      },
    };
    const { code, stdout, stderr } = await demo({ cycles: 4, seams });
    expect(code, stderr).toBe(EXIT.ok);
    expect(stdout).not.toContain("suspended in the dashboard");
    const spend = [...stdout.matchAll(/sandbox activity: (\d+) new purchases?/g)].map(([, n]) => Number(n));
    expect(spend).toHaveLength(3);
    expect(spend.filter((n) => n === 0)).toEqual([]);
  });

  // The spend limits count calendar windows (UTC) and the seeded history sits before the start, drawn within those
  // windows: the last evening of a month or quarter holds the most seeded spend in its window, the first of a month
  // none, and the seed draws one history for the first at midnight, one up to the 21st and one after. Fewer cycles
  // than above: the limits the seed leaves room in are used up within the first few dozen rounds.
  it.each(["2027-03-31T22:00:00Z", "2026-12-31T22:00:00Z", "2027-04-01T00:00:00Z", "2027-03-15T12:00:00Z"])(
    "never runs dry whatever the date: started at %s, every round makes new purchases, no balance below 0",
    async (startTime) => {
      await expectNeverRunsDry(80, startTime);
    },
    60_000,
  );

  // Seeds whose cards' limits and accounts left rounds without a card to buy on once the sandbox enforced spend limits:
  // at 64 the only Active card without a limit draws on a pool at 0 without auto top-up, and the limited cards use up
  // their monthly limits; at 37 no Active card without a limit can buy from the start. The company's admins then raise
  // a limit or top up a pool in the dashboard.
  it.each([
    [64, "2027-04-01T00:00:00Z"],
    [37, "2027-04-01T00:00:00Z"],
  ])("never runs dry at seed %i either (started at %s): an admin makes room when no card has any", async (seed, startTime) => {
    await expectNeverRunsDry(100, startTime, seed);
  }, 90_000);
});
