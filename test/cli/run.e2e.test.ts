/**
 * End-to-end: `bridge run --once` against the sandbox on a loopback port, as a child process where the
 * process boundary matters (exit codes, a crash), in-process otherwise (same `main`, faster).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, openSync, watch } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { chmod, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import type { BridgeEvent } from "../../shared/bridge/ports.js";
import { CycleIncompleteError, EXIT, AuthorizeAgainError } from "../../shared/cli/errors.js";
import { CYCLE_LOCK } from "../../shared/cli/cycle-lease.js";
import { runCommand } from "../../shared/cli/run.js";
import { exchangeCode, refresh } from "../../shared/qashio/auth/oauth.js";
import { killed, startLockHolder } from "../local/support/lock-holder.js";
import { realSleep, type Clock } from "../../shared/clock.js";
import { CLIENT, ROOT, TSX_LOADER, capturedIo, harnessPerTest, idsWithStatus, loopWithSteps, readEvents, runInProcess, spawnBridge, spawnScript, type Harness } from "./helpers.js";

const start = harnessPerTest();

/** A harness whose first run is done, then one of its active cards suspended in the provider's dashboard. */
async function suspendedAfterFirstRun(): Promise<{ h: Harness; card: { id: string } }> {
  const h = await start();
  expect((await runInProcess(["run", "--once"], h.env)).code).toBe(EXIT.ok);
  const card = h.sandbox.control.company(h.companyId)?.cards.find((c) => c.status === "Active");
  if (card === undefined) throw new Error("no active card in the seed");
  await h.control("POST", `/companies/{company}/cards/${card.id}/status`, { status: "Suspended" });
  return { h, card };
}

/** Resolves once `file` exists with at least one complete line (watching its directory, no polling). */
function firstLine(file: string): Promise<void> {
  return new Promise((resolve) => {
    const dir = join(file, "..");
    const check = async () => {
      const text = await readFile(file, "utf8").catch(() => "");
      if (text.includes("\n")) {
        watcher.close();
        resolve();
      }
    };
    const watcher = watch(dir, () => void check());
    void check();
  });
}


/** A bridge that ran once, then a revoked token family: the first refresh token replayed after the bridge used it. */
async function startWithRevokedFamily() {
  const h = await start();
  const first = h.env.QASHIO_REFRESH_TOKEN as string;
  const options = { baseUrl: h.url, clientId: CLIENT.id, clientSecret: CLIENT.secret };
  expect((await runInProcess(["run", "--once"], h.env)).code).toBe(EXIT.ok);
  await h.control("POST", "/clock", { advance_seconds: 3_600 });
  // Replaying the consumed first refresh token revokes the whole family (spec §5 rule 6).
  await refresh(options, first).catch(() => undefined);
  await refresh(options, first).catch(() => undefined);
  return { h, first };
}
describe("bridge run --once (spawned)", () => {
  it("publishes transaction.created for every not_synced or outdated transaction, acknowledges them and exits 0", async () => {
    const h = await start();
    const pending = idsWithStatus(h, "not_synced", "outdated");
    expect(pending.length).toBeGreaterThanOrEqual(15);

    const { code, stdout } = await spawnBridge(["run", "--once"], h.env).outcome;

    expect(code).toBe(EXIT.ok);
    expect(stdout).toMatch(new RegExp(`cycle 1: ${pending.length} events \\(${pending.length} transaction.created\\) · ${pending.length} acknowledged`));
    const events = await readEvents(h.eventsFile);
    expect(events.map((e) => e.detail.subject.id).sort()).toEqual([...pending].sort());
    for (const event of events) {
      expect(Object.keys(event).sort()).toEqual(["account", "detail", "detail-type", "id", "region", "resources", "source", "time", "version"]);
      expect(event).toMatchObject({ "detail-type": "transaction.created", source: "qashio.bridge", detail: { tenant: "acme", type: "transaction.created" } });
    }
    expect(idsWithStatus(h, "not_synced", "outdated")).toEqual([]);
  });

  it("survives being killed mid-cycle: the next run delivers every change, duplicates carry the same id", async () => {
    const h = await start();
    const pending = idsWithStatus(h, "not_synced", "outdated");
    // The process dies as its first publish returns: before it stores snapshots (a kill from outside lands after that
    // write as often as not, and the next run then has nothing to send twice) and before the provider hears back.
    const doomed = spawnScript(join(ROOT, "test/cli/support/run-killed-after-publish.ts"), [], h.env);
    const died = await doomed.outcome;
    expect({ code: died.code, signal: doomed.signalCode }, died.stderr).toEqual({ code: null, signal: "SIGKILL" });
    const published = await readEvents(h.eventsFile);
    expect(published.length).toBeGreaterThan(0);
    expect(idsWithStatus(h, "not_synced", "outdated").length).toBe(pending.length);
    // The dead run's cycle lease would expire within 30 s; remove it rather than wait.
    await rm(join(h.env.BRIDGE_STATE_DIR as string, "locks", "cycle.lock"), { force: true });

    const { code } = await spawnBridge(["run", "--once"], h.env).outcome;

    expect(code).toBe(EXIT.ok);
    const events = await readEvents(h.eventsFile);
    expect(new Set(events.map((e) => e.detail.subject.id))).toEqual(new Set(pending));
    const idsBySubject = new Map<string, Set<string>>();
    for (const e of events) idsBySubject.set(e.detail.subject.id, (idsBySubject.get(e.detail.subject.id) ?? new Set()).add(e.detail.id));
    for (const ids of idsBySubject.values()) expect(ids.size).toBe(1);
    // Every event of the dead run is sent again, the same: its id and its whole detail.
    const resent = events.slice(published.length);
    for (const first of published) expect(resent.filter((e) => e.detail.id === first.detail.id).map((e) => e.detail)).toEqual([first.detail]);
    expect(idsWithStatus(h, "not_synced", "outdated")).toEqual([]);
  });

  it("stops cleanly between cycles on SIGTERM and exits 0", async () => {
    const h = await start();
    const child = spawnBridge(["run", "--interval", "1h"], h.env);
    await new Promise<void>((resolve) => {
      let seen = "";
      child.stdout?.on("data", (chunk: Buffer) => {
        seen += chunk.toString();
        if (seen.includes("cycle 1:")) resolve();
      });
    });
    child.kill("SIGTERM");
    const { code, stdout, stderr } = await child.outcome;
    expect(code).toBe(EXIT.ok);
    expect(stdout).not.toContain("cycle 2:");
    expect(stderr).toContain("SIGTERM received: stopping cleanly after the page in hand; a second stop signal (Ctrl-C, SIGTERM or SIGHUP) stops at once");
    expect(stderr).toContain("stopped after 1 cycle");
  });

  // Node tears a process down for some milliseconds after its event loop empties, with the signal listeners already
  // gone (Node 22 and later every time, Node 20 now and then): bridge.ts exits itself once nothing is left to run.
  it("exits with its result, not as killed, on a SIGTERM that comes after --once printed its summary", async () => {
    const h = await start();
    for (let attempt = 0; attempt < 3; attempt++) {
      const child = spawnBridge(["run", "--once"], h.env);
      let sent = false;
      child.stdout?.on("data", (chunk: Buffer) => {
        if (!sent && chunk.toString().includes("── cycle 1:")) {
          sent = true;
          child.kill("SIGTERM");
        }
      });
      const { code } = await child.outcome;
      expect(sent).toBe(true);
      expect({ code, signal: child.signalCode }).toEqual({ code: EXIT.ok, signal: null });
    }
  });

  it("on a second SIGTERM while a token refresh's answer is in flight, waits for the new refresh token to be saved before stopping at once (killed by SIGINT: 130 in a shell)", async () => {
    const h = await start();
    // A proxy in front of the sandbox: once armed, it lets the sandbox answer a refresh (the sent refresh token is spent
    // then), signals the bridge twice, and only then hands the answer on, as a slow network would.
    let armed: ChildProcess | undefined;
    const proxy = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        void (async () => {
          const headers = Object.fromEntries(Object.entries(request.headers).filter(([name]) => !["host", "connection", "content-length"].includes(name))) as Record<string, string>;
          const answer = await fetch(`${h.url}${request.url ?? "/"}`, { method: request.method, headers, ...(chunks.length > 0 ? { body: Buffer.concat(chunks) } : {}) });
          const body = Buffer.from(await answer.arrayBuffer());
          const child = armed;
          if (child !== undefined && request.url === "/oauth2/token") {
            armed = undefined;
            // Apart, so the kernel does not merge them into one pending signal.
            child.kill("SIGTERM");
            await new Promise((resolve) => setTimeout(resolve, 100));
            child.kill("SIGTERM");
            await new Promise((resolve) => setTimeout(resolve, 300));
          }
          response.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/json" }).end(body);
        })();
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    try {
      const env = { ...h.env, QASHIO_BASE_URL: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}` };
      expect((await runInProcess(["run", "--once"], env)).code).toBe(EXIT.ok);
      // The stored access token has expired at the provider: the next run refreshes first.
      await h.control("POST", "/clock", { advance_seconds: 3_600 });
      const child = spawnBridge(["run", "--once"], env);
      armed = child;
      const { code, stderr } = await child.outcome;
      expect(armed, "the run never refreshed").toBeUndefined();
      expect({ code, signal: child.signalCode }).toEqual({ code: null, signal: "SIGINT" });
      // The family lives: the next run uses the saved successor (a spent token would be refused: exit 3).
      const next = await runInProcess(["run", "--once"], env);
      expect(next.code, next.stderr).toBe(EXIT.ok);
      expect(stderr).toContain("a new refresh token is not saved yet: stopping once it is (a SIGKILL, kill -9, now would sign the integration out)");
      // The first signal came with the refresh in flight: its notice said so, not that a second one "stops at once".
      expect(stderr).toContain("SIGTERM received: stopping cleanly after the page in hand; a new refresh token is not saved yet: a second stop signal (Ctrl-C, SIGTERM or SIGHUP) stops once it is");
      expect(stderr).not.toContain("stops at once");
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it("stops --once after the page in hand on SIGTERM (exit 4, run again to resume), and the next run delivers the rest", async () => {
    const h = await start({ transactions: 1_000 });
    const pending = idsWithStatus(h, "not_synced", "outdated");
    // Ten pages of 100 at 300 ms a call: the whole walk would take seconds.
    await h.control("POST", "/latency", { latency_ms: 300 });
    const child = spawnBridge(["run", "--once"], h.env);
    await firstLine(h.eventsFile);
    const stoppedAt = Date.now();
    child.kill("SIGTERM");
    const { code, stdout, stderr } = await child.outcome;
    expect(code).toBe(EXIT.incomplete);
    expect(Date.now() - stoppedAt, "the cycle went on after the signal").toBeLessThan(3_000);
    expect(stderr).toContain("SIGTERM received: stopping cleanly after the page in hand; a second stop signal (Ctrl-C, SIGTERM or SIGHUP) stops at once");
    expect(stderr).toContain("the cycle stopped after the page in hand, as asked (Ctrl-C, SIGTERM or SIGHUP); run again to resume");
    expect(stdout).toContain("stopped as asked, the next run resumes");
    const first = new Set((await readEvents(h.eventsFile)).map((e) => e.detail.subject.id));
    expect(first.size).toBeGreaterThan(0);
    expect(first.size).toBeLessThan(pending.length);

    await h.control("POST", "/latency", { latency_ms: 0 });
    expect((await runInProcess(["run", "--once"], h.env)).code).toBe(EXIT.ok);
    expect(new Set((await readEvents(h.eventsFile)).map((e) => e.detail.subject.id))).toEqual(new Set(pending));
    expect(idsWithStatus(h, "not_synced", "outdated")).toEqual([]);
  });

  it("takes one stop delivered twice within a moment (coreutils `timeout` signals the command, then its group) for one clean stop", async () => {
    const h = await start({ transactions: 1_000 });
    await h.control("POST", "/latency", { latency_ms: 300 });
    const child = spawnBridge(["run", "--once"], h.env);
    await firstLine(h.eventsFile);
    child.kill("SIGINT");
    // Apart, so the kernel does not merge them into one pending signal; well within the same stop.
    await new Promise((resolve) => setTimeout(resolve, 5));
    child.kill("SIGINT");
    const { code, stderr } = await child.outcome;
    expect(stderr).not.toContain("stopped at once");
    expect(code).toBe(EXIT.incomplete);
    expect(stderr).toContain("the cycle stopped after the page in hand, as asked (Ctrl-C, SIGTERM or SIGHUP); run again to resume");
  });

  it("stops at once on a second SIGTERM while a page is in flight: killed by SIGINT (130 in a shell), not by an exit that may hang", async () => {
    const h = await start();
    const list = { method: "GET", path_prefix: "/public/v1/erp/transactions" };
    await h.control("POST", "/faults", { ...list, delay_ms: 30_000, count: 1 });
    const child = spawnBridge(["run", "--once"], h.env);
    // The first list call is held for 30 s.
    await vi.waitFor(async () => expect(((await h.control("GET", "/faults")) as { data: unknown[] }).data).toEqual([]), { timeout: 10_000, interval: 50 });
    child.kill("SIGTERM");
    // Apart by more than the 50 ms within which a second signal is the same stop delivered twice.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const stoppedAt = Date.now();
    child.kill("SIGTERM");
    const { code, stderr } = await child.outcome;
    expect(Date.now() - stoppedAt).toBeLessThan(3_000);
    expect({ code, signal: child.signalCode }).toEqual({ code: null, signal: "SIGINT" });
    expect(stderr).toContain("stopped at once");
  });

  it("stops waiting out a provider's Retry-After on SIGTERM instead of retrying on (exit 4), and the next run delivers", async () => {
    const h = await start();
    const pending = idsWithStatus(h, "not_synced", "outdated");
    const list = { method: "GET", path_prefix: "/public/v1/erp/transactions" };
    await h.control("POST", "/faults", { ...list, status: 503, retry_after: 8, count: 10 });
    const child = spawnBridge(["run", "--once"], h.env);
    // The first list call failed and the client now waits 8 s before its retry.
    await vi.waitFor(async () => expect(((await h.control("GET", "/faults")) as { data: { count: number }[] }).data[0]?.count).toBeLessThan(10), {
      timeout: 10_000,
      interval: 50,
    });
    const stoppedAt = Date.now();
    child.kill("SIGTERM");
    const { code, stderr } = await child.outcome;
    expect(Date.now() - stoppedAt, "it waited the provider's Retry-After out").toBeLessThan(3_000);
    expect(code).toBe(EXIT.incomplete);
    expect(stderr).toContain("as asked (Ctrl-C, SIGTERM or SIGHUP); run again to resume");

    await h.control("DELETE", "/faults");
    expect((await runInProcess(["run", "--once"], h.env)).code).toBe(EXIT.ok);
    expect(new Set((await readEvents(h.eventsFile)).map((e) => e.detail.subject.id))).toEqual(new Set(pending));
  });

  it("names every bad setting once, exits 2 and never prints the client secret", async () => {
    const secret = "do-not-print-this-secret";
    const { code, stdout, stderr } = await spawnBridge(["run", "--once"], {
      QASHIO_BASE_URL: "ftp://nowhere",
      QASHIO_CLIENT_SECRET: secret,
      BRIDGE_PII_MODE: "sometimes",
    }, tmpdir()).outcome;

    expect(code).toBe(EXIT.usage);
    expect(stderr).toContain("Invalid settings");
    for (const setting of ["QASHIO_BASE_URL", "QASHIO_CLIENT_ID", "BRIDGE_TENANT", "BRIDGE_PII_MODE"]) {
      expect(stderr.split(setting).length - 1).toBe(1);
    }
    expect(stdout + stderr).not.toContain(secret);
    expect(stderr).not.toContain("QASHIO_CLIENT_SECRET");
  });

  it("refuses an events file that is its own standard output (/dev/stdout redirected to a file), exit 2, before any provider call", async () => {
    const h = await start();
    // `BRIDGE_EVENTS_FILE=/dev/stdout bridge run --once > captured.jsonl`: the summary line, written at stdout's own
    // offset, landed over the first event the publisher had appended, an event acknowledged and never listed again.
    const captured = join(h.dir, "captured.jsonl");
    const out = openSync(captured, "w", 0o600);
    const child = spawn(process.execPath, ["--import", TSX_LOADER, join(ROOT, "bridge.ts"), "run", "--once"], {
      cwd: h.dir,
      env: { PATH: process.env.PATH ?? "", ...h.env, BRIDGE_EVENTS_FILE: "/dev/stdout" },
      stdio: ["ignore", out, "pipe"],
    });
    closeSync(out);
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    expect(stderr).toContain("BRIDGE_EVENTS_FILE: is this command's own standard output (/dev/stdout)");
    expect(code).toBe(EXIT.usage);
    expect(idsWithStatus(h, "not_synced").length).toBeGreaterThan(0);
    expect(await readFile(captured, "utf8")).toBe("");
  });
});

describe("bridge run --once (in-process)", () => {
  it("refuses a BRIDGE_STATE_DIR that is an ordinary directory of the user's files, exit 2, writing and re-permissioning nothing there", async () => {
    const h = await start();
    const pending = idsWithStatus(h, "not_synced", "outdated");
    await writeFile(join(h.dir, "package.json"), "{}\n");
    await chmod(h.dir, 0o755);
    const before = (await readdir(h.dir)).sort();

    const { code, stderr } = await runInProcess(["run", "--once"], { ...h.env, BRIDGE_STATE_DIR: h.dir });

    expect(code).toBe(EXIT.usage);
    // The events file set inside it is no entry in the way; the user's file is.
    expect(stderr).toContain(`BRIDGE_STATE_DIR: ${h.dir} is not a state directory of the bridge`);
    expect(stderr).toContain("but holds package.json: ");
    expect(stderr).toContain("point BRIDGE_STATE_DIR at an empty or new directory");
    expect((await readdir(h.dir)).sort()).toEqual(before);
    expect((await stat(h.dir)).mode & 0o777).toBe(0o755);
    expect(idsWithStatus(h, "not_synced", "outdated")).toEqual(pending);
  });

  it("keeps running on a state directory it made, with a file of the user's put beside its entries", async () => {
    const h = await start();
    expect((await runInProcess(["run", "--once"], h.env)).code).toBe(EXIT.ok);
    await writeFile(join(h.env.BRIDGE_STATE_DIR as string, "notes.txt"), "mine\n");

    expect((await runInProcess(["run", "--once"], h.env)).code).toBe(EXIT.ok);
  });

  it("publishes transaction.changed with the changed path after a PATCH", async () => {
    const h = await start();
    const published = new Set(idsWithStatus(h, "not_synced", "outdated"));
    expect((await runInProcess(["run", "--once"], h.env)).code).toBe(EXIT.ok);
    const target = [...published][3];
    await h.control("PATCH", `/companies/{company}/transactions/${target}`, { memo: "client dinner", approval_status: "approved" });
    expect(idsWithStatus(h, "outdated")).toEqual([target]);

    const { code, stdout } = await runInProcess(["run", "--once"], h.env);

    expect(code).toBe(EXIT.ok);
    expect(stdout).toContain("1 transaction.changed");
    const changed = (await readEvents(h.eventsFile)).filter((e) => e["detail-type"] === "transaction.changed");
    expect(changed).toHaveLength(1);
    expect(changed[0]?.detail.subject.id).toBe(target);
    expect(changed[0]?.detail.data.changes).toContainEqual(expect.objectContaining({ path: "/memo", after: "client dinner" }));
    // The subject's second event across runs (the snapshot in the state directory carries the number).
    const created = (await readEvents(h.eventsFile)).find((e) => e["detail-type"] === "transaction.created" && e.detail.subject.id === target);
    expect([created?.detail.subject.sequence, changed[0]?.detail.subject.sequence]).toEqual([1, 2]);
    expect(idsWithStatus(h, "outdated")).toEqual([]);
  });

  it("publishes card.suspended after a status change in the provider's dashboard", async () => {
    const { h, card } = await suspendedAfterFirstRun();

    expect((await runInProcess(["run", "--once"], h.env)).code).toBe(EXIT.ok);

    const cardEvents = (await readEvents(h.eventsFile)).filter((e) => e.detail.subject.type === "card");
    expect(cardEvents).toHaveLength(1);
    expect(cardEvents[0]).toMatchObject({
      "detail-type": "card.suspended",
      detail: { subject: { id: card.id }, data: { changes: [{ path: "/status", before: "Active", after: "Suspended" }] } },
    });
  });

  it("publishes card.updated for a spend limit amount changed through the API when BRIDGE_CARD_DETAILS is true", async () => {
    const h = await start();
    const env = { ...h.env, BRIDGE_CARD_DETAILS: "true" };
    expect((await runInProcess(["run", "--once"], env)).code).toBe(EXIT.ok);
    const card = h.sandbox.control.company(h.companyId)?.cards.find((c) => c.status === "Active" && c.spendLimit.active);
    if (card === undefined) throw new Error("no active card with an active spend limit in the seed");
    // A second sign-in of the same company (its own token family) changes the limit, as an administrator's tool would.
    const redirectUri = "http://127.0.0.1:9/admin";
    const code = h.sandbox.control.issueAuthorizationCode({ companyId: h.companyId, redirectUri });
    const admin = await exchangeCode({ baseUrl: h.url, clientId: CLIENT.id, clientSecret: CLIENT.secret }, { code, redirectUri });
    const response = await fetch(`${h.url}/public/v1/core/cards/${card.id}/update_velocity_limit`, {
      method: "POST",
      headers: { authorization: `Bearer ${admin.access_token}`, "content-type": "application/json" },
      body: JSON.stringify({ spend_limit_active: true, spend_limit_max_amount: card.spendLimit.maxAmount + 250 }),
    });
    expect(response.status).toBeLessThan(300);

    expect((await runInProcess(["run", "--once"], env)).code).toBe(EXIT.ok);
    const cardEvents = (await readEvents(h.eventsFile)).filter((e) => e.detail.subject.type === "card");
    expect(cardEvents.map((e) => [e["detail-type"], e.detail.subject.id, e.detail.data.changes?.map((c) => c.path)])).toEqual([
      ["card.updated", card.id, ["/purchase_limits/amount"]],
    ]);
  });

  it("converges through 429 and 500 answers on lists and on acknowledge", async () => {
    const h = await start();
    const pending = idsWithStatus(h, "not_synced", "outdated");
    const list = { method: "GET", path_prefix: "/public/v1/erp/transactions" };
    const ack = { method: "POST", path_prefix: "/public/v1/erp/transactions/acknowledge" };
    await h.control("POST", "/faults", { ...list, status: 429, retry_after: 0, count: 1 });
    await h.control("POST", "/faults", { ...list, status: 500, count: 1 });
    await h.control("POST", "/faults", { ...ack, status: 500, count: 1 });
    await h.control("POST", "/faults", { ...ack, status: 429, retry_after: 0, count: 1 });
    await h.control("POST", "/faults", { method: "GET", path_prefix: "/public/v1/erp/cards", status: 503, count: 1 });

    const { code } = await runInProcess(["run", "--once"], h.env);

    expect(code).toBe(EXIT.ok);
    expect(await h.control("GET", "/faults")).toEqual({ data: [] });
    expect(new Set((await readEvents(h.eventsFile)).map((e) => e.detail.subject.id))).toEqual(new Set(pending));
    expect(idsWithStatus(h, "not_synced", "outdated")).toEqual([]);
  });

  it("exits 1 when faults outlast the retries, and the next run delivers everything", async () => {
    const h = await start();
    const pending = idsWithStatus(h, "not_synced", "outdated");
    await h.control("POST", "/faults", { method: "POST", path_prefix: "/public/v1/erp/transactions/acknowledge", status: 429, retry_after: 0, count: 50 });

    const failed = await runInProcess(["run", "--once"], h.env);

    expect(failed.code).toBe(EXIT.failed);
    expect(failed.stderr).toMatch(/transactions cycle stopped: acknowledge transactions failed \(RateLimitedError 429: .*the next cycle resumes \(status 429/);
    expect(failed.stderr.match(/cycle stopped/g)).toHaveLength(1);
    await h.control("DELETE", "/faults");
    expect((await runInProcess(["run", "--once"], h.env)).code).toBe(EXIT.ok);
    expect(new Set((await readEvents(h.eventsFile)).map((e) => e.detail.subject.id))).toEqual(new Set(pending));
    expect(idsWithStatus(h, "not_synced", "outdated")).toEqual([]);
  });

  it("loses nothing and sends nothing twice when the provider applies an acknowledge but its answer is lost", async () => {
    const h = await start();
    const pending = idsWithStatus(h, "not_synced", "outdated");
    // A gateway's 502 after the provider did the work, on every try: the cycle cannot tell it from a refusal.
    await h.control("POST", "/faults", { method: "POST", path_prefix: "/public/v1/erp/transactions/acknowledge", status: 502, applied: true, count: 50 });

    const run = await runInProcess(["run", "--once"], h.env);

    // Each failed acknowledge is followed by a fresh read of its page instead of the same acknowledge again: the read
    // finds the transactions gone (synced), so the walk goes on and sends none of them twice.
    expect(run.code, run.stderr).toBe(EXIT.ok);
    expect(run.stderr).toMatch(/acknowledge failed for now; reading its transactions again/);
    const events = (await readEvents(h.eventsFile)).filter((e) => e.detail.type.startsWith("transaction."));
    expect(events.map((e) => e.detail.subject.id).sort()).toEqual([...pending].sort());
    expect(idsWithStatus(h, "not_synced", "outdated")).toEqual([]);
  });

  it("stops after the acknowledge failed five times in a row, each after a fresh read, and the next run finishes without sending twice", async () => {
    const h = await start();
    const pending = idsWithStatus(h, "not_synced", "outdated");
    await h.control("POST", "/faults", { method: "POST", path_prefix: "/public/v1/erp/transactions/acknowledge", status: 502, count: 5 });

    const failed = await runInProcess(["run", "--once"], h.env);

    expect(failed.code, failed.stderr).toBe(EXIT.failed);
    expect(failed.stderr).toMatch(/acknowledge transactions failed/);
    expect(failed.stderr.match(/reading its transactions again/g)).toHaveLength(4);
    expect(idsWithStatus(h, "not_synced", "outdated").sort()).toEqual([...pending].sort());
    expect((await runInProcess(["run", "--once"], h.env)).code).toBe(EXIT.ok);
    const events = (await readEvents(h.eventsFile)).filter((e) => e.detail.type.startsWith("transaction."));
    // The first run published its first page; the second found it stored and only acknowledged it.
    expect(events.map((e) => e.detail.subject.id).sort()).toEqual([...pending].sort());
    expect(idsWithStatus(h, "not_synced", "outdated")).toEqual([]);
  });

  it("does not replay a refresh whose answer was lost (exit 1); if the provider had rotated, the next run asks to re-authorize (exit 3)", async () => {
    const h = await start();
    await h.control("POST", "/faults", { method: "POST", path_prefix: "/oauth2/token", status: 502, applied: true, count: 1 });

    const lost = await runInProcess(["run", "--once"], h.env);

    expect(lost.code, lost.stderr).toBe(EXIT.failed);
    expect(lost.stderr).toMatch(/POST \/oauth2\/token answered 502/);
    expect(await h.control("GET", "/faults")).toEqual({ data: [] });
    // The new refresh token never arrived; the only one left was consumed, and presenting it revokes the family
    // (spec §5 rule 6). Only a person signing in again recovers it (docs/spec-gaps.md, "Ambiguous refresh failures").
    const next = await runInProcess(["run", "--once"], h.env);
    expect(next.code, next.stderr).toBe(EXIT.reauthorize);
    // The seed was the consumed token here (the state directory held none yet): the message names that setting.
    expect(next.stderr).toContain("the provider rejected QASHIO_REFRESH_TOKEN (spent, revoked or expired)");
    expect(next.stderr).toContain("run `npm run bridge -- authorize`");
    for (const { stderr } of [lost, next]) expect(stderr).not.toContain(h.env.QASHIO_REFRESH_TOKEN as string);
  });

  it("still walks the cards when the transactions cycle fails, so a suspension is published, and exits 1 naming the transactions failure", async () => {
    const { h, card } = await suspendedAfterFirstRun();
    // The transactions list fails past the retries; the cards list (another path) answers.
    await h.control("POST", "/faults", { method: "GET", path_prefix: "/public/v1/erp/transactions", status: 500, count: 50 });

    const failed = await runInProcess(["run", "--once"], h.env);

    expect(failed.code).toBe(EXIT.failed);
    expect(failed.stderr).toMatch(/transactions cycle stopped: list not_synced transactions failed \(ServerError 500/);
    const suspended = (await readEvents(h.eventsFile)).filter((e) => e["detail-type"] === "card.suspended");
    expect(suspended.map((e) => e.detail.subject.id)).toEqual([card.id]);
  });

  it("names the cards walk's own failure too when both cycles fail, rather than only logging it aborted (exit 1)", async () => {
    const h = await start();
    expect((await runInProcess(["run", "--once"], h.env)).code).toBe(EXIT.ok);
    // Two outages of two endpoints, each past the retries: neither failure may hide the other's cause.
    await h.control("POST", "/faults", { method: "GET", path_prefix: "/public/v1/erp/transactions", status: 500, count: 50 });
    await h.control("POST", "/faults", { method: "GET", path_prefix: "/public/v1/erp/cards", status: 503, count: 50 });

    const failed = await runInProcess(["run", "--once"], h.env);

    expect(failed.code).toBe(EXIT.failed);
    const final = failed.stderr.split("\n").find((line) => line.startsWith("error: ")) ?? "";
    expect(final, failed.stderr).toMatch(/^error: transactions cycle stopped: list not_synced transactions failed \(ServerError 500/);
    expect(final, failed.stderr).toMatch(/; and cards cycle stopped: list full cards failed \(ServerError 503/);
  });

  it("asks whether QASHIO_BASE_URL is the provider's API when its token endpoint answers as no OAuth server does", async () => {
    const h = await start();
    // A web server: a page not found (404) for a POST, an HTML page (200) for anything, or a redirect (a site's move to
    // https or to www., a sign-in page), which no token endpoint answers.
    for (const [status, body] of [[404, "<html>Not Found</html>"], [200, "<html>Welcome</html>"], [302, ""], [308, ""]] as const) {
      const server = createServer((_request, response) =>
        response.writeHead(status, { "content-type": "text/html", location: "https://www.provider.test/login" }).end(body),
      );
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      try {
        const stateDir = join(h.dir, `state-${status}`);
        const outcome = await runInProcess(["run", "--once"], { ...h.env, QASHIO_BASE_URL: url, BRIDGE_STATE_DIR: stateDir });
        expect(outcome.code).toBe(EXIT.failed);
        expect(outcome.stderr).toContain(`the token endpoint answered as no OAuth server does: is QASHIO_BASE_URL (${url}) the provider's API?`);
        // Through a named environment, the URL is another variable's, which is the one to check.
        const named = await runInProcess(["run", "--once"], { ...h.env, QASHIO_BASE_URL: "sandbox", QASHIO_SANDBOX_URL: url, BRIDGE_STATE_DIR: `${stateDir}-named` });
        expect(named.code).toBe(EXIT.failed);
        expect(named.stderr).toContain(`the token endpoint answered as no OAuth server does: is QASHIO_SANDBOX_URL (${url}) the provider's API?`);
      } finally {
        await new Promise((resolve) => server.close(resolve));
      }
    }
    // The provider's own token endpoint failing (a 500 past the retries) is an outage, not a wrong URL: no such hint.
    await h.control("POST", "/faults", { method: "POST", path_prefix: "/oauth2/token", status: 500, count: 50 });
    const outage = await runInProcess(["run", "--once"], h.env);
    expect(outage.code).toBe(EXIT.failed);
    expect(outage.stderr).toContain("POST /oauth2/token answered 500");
    expect(outage.stderr).not.toContain("QASHIO_BASE_URL");
  });

  it("exits 3 when the transactions cycle fails for a provider reason and the cards walk then finds the token family revoked", async () => {
    const h = await start();
    const first = h.env.QASHIO_REFRESH_TOKEN as string;
    expect((await runInProcess(["run", "--once"], h.env)).code).toBe(EXIT.ok);
    // The transactions list fails past the retries (faults answer before the token is checked); then the family is
    // revoked, so the cards walk's call is refused and its refresh rejected.
    await h.control("POST", "/faults", { method: "GET", path_prefix: "/public/v1/erp/transactions", status: 500, count: 50 });
    const options = { baseUrl: h.url, clientId: CLIENT.id, clientSecret: CLIENT.secret };
    await refresh(options, first).catch(() => undefined);

    const { code, stderr } = await runInProcess(["run", "--once"], h.env);

    expect(code).toBe(EXIT.reauthorize);
    expect(stderr).toContain("run `npm run bridge -- authorize` to sign in again");
    // The transactions half failed on the injected 500s, not on the revoked family as well.
    expect(stderr).toMatch(/path=\/public\/v1\/erp\/transactions status=500 error=ServerError/);
    expect(stderr).toContain("transactions cycle aborted");
  });

  it("exits 4 when the cycle stops at its time budget, and the next run finishes the backlog", async () => {
    const h = await start({ transactions: 500 });
    await h.control("POST", "/latency", { latency_ms: 300 });

    const partial = await runInProcess(["run", "--once"], { ...h.env, BRIDGE_CYCLE_BUDGET: "1s" });

    expect(partial.code).toBe(EXIT.incomplete);
    expect(partial.stdout).toContain("stopped at budget, resumes next cycle");
    expect(partial.stderr).toContain("run again to resume");
    const left = idsWithStatus(h, "not_synced").length;
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThan(500);
    await h.control("POST", "/latency", { latency_ms: 0 });
    expect((await runInProcess(["run", "--once"], h.env)).code).toBe(EXIT.ok);
    expect(idsWithStatus(h, "not_synced", "outdated")).toEqual([]);
    expect(new Set((await readEvents(h.eventsFile)).map((e) => e.detail.subject.id)).size).toBe(500);
  });

  it("exits 4 saying the event publisher took no events for now when a publisher of its own defers every event, and sends nothing as done", async () => {
    const h = await start({ transactions: 250 });
    const pending = idsWithStatus(h, "not_synced", "outdated");
    // A sink that takes nothing for now (throttled): every event is deferred, none is failed for good.
    const publisher = {
      publish: async (events: readonly BridgeEvent[]) => ({ failed: events.map((event) => ({ event, reason: "throttled", retryable: true })) }),
    };
    const { io, out } = capturedIo(h, new AbortController().signal);

    const error = await runCommand({ once: true, intervalMs: 60_000 }, io, { publisher }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(CycleIncompleteError);
    expect((error as CycleIncompleteError).exitCode).toBe(EXIT.incomplete);
    expect((error as Error).message).toBe("the cycle stopped because the event publisher took no events for now; run again to re-send them");
    expect(out.stdout).toContain("stopped: the event sink takes no events for now, resumes next cycle");
    expect(idsWithStatus(h, "not_synced", "outdated")).toEqual(pending);
  });

  it("leaves the cards walk its share of the budget when the transactions would take all of it", async () => {
    // The transactions stop starting pages at 75 % of the budget, but the page in hand (an acknowledge, 300 ms here)
    // runs past it: with a 3 s budget that left the cards walk about 0.4 s to start its first call, and a loaded
    // machine could take that. A 6 s budget leaves it over a second; 3,000 transactions (30 pages, at 300 ms a call)
    // still outlast the transactions' 4.5 s.
    const h = await start({ transactions: 3_000 });
    await h.control("POST", "/latency", { latency_ms: 300 });
    const cards = h.sandbox.control.company(h.companyId)?.cards ?? [];
    expect(cards.length).toBeGreaterThan(0);

    const partial = await runInProcess(["run", "--once"], { ...h.env, BRIDGE_CYCLE_BUDGET: "6s", BRIDGE_EMIT_CARD_CREATED: "true" });

    expect(partial.code).toBe(EXIT.incomplete);
    expect(idsWithStatus(h, "not_synced").length, "the transactions drained within the budget").toBeGreaterThan(0);
    const created = (await readEvents(h.eventsFile)).filter((e) => e["detail-type"] === "card.created");
    expect(created.length, "the cards walk got no time").toBeGreaterThan(0);
  });

  it("starts a cycle whose lease it took from a crashed run in a later second, as that run would have left it", async () => {
    const h = await start();
    expect((await runInProcess(["run", "--once"], h.env)).code).toBe(EXIT.ok);
    const firstRun = (await readEvents(h.eventsFile)).length;
    await h.control("POST", "/companies/{company}/transactions", { count: 2 });
    // A run killed while holding the cycle lease, as between publishing and storing snapshots.
    await killed(await startLockHolder(h.env.BRIDGE_STATE_DIR as string, CYCLE_LOCK, 60_000));
    const killedAt = Date.now();

    const { code, stderr } = await runInProcess(["run", "--once"], h.env);

    expect(code, stderr).toBe(EXIT.ok);
    const times = (await readEvents(h.eventsFile)).slice(firstRun).map((event) => Date.parse(event.time));
    expect(times).toHaveLength(2);
    // 600 ms into the next whole second after the takeover: never the second the crashed run may have published in.
    expect(Math.min(...times)).toBeGreaterThanOrEqual(Math.floor(killedAt / 1000) * 1000 + 1600);
  });

  it("keeps its token family valid over ten runs while access tokens expire between them", async () => {
    const h = await start();
    const tokensFile = join(h.env.BRIDGE_STATE_DIR as string, "tokens.json");
    const seen = new Set<string>();
    for (let run = 0; run < 10; run += 1) {
      await h.control("POST", "/companies/{company}/transactions", { count: 1 });
      const { code, stderr } = await runInProcess(["run", "--once"], h.env);
      expect(code, stderr).toBe(EXIT.ok);
      seen.add((JSON.parse(await readFile(tokensFile, "utf8")) as { refreshToken: string }).refreshToken);
      await h.control("POST", "/clock", { advance_seconds: 3_600 });
    }
    expect(seen.size).toBeGreaterThanOrEqual(9);
    expect(idsWithStatus(h, "not_synced", "outdated")).toEqual([]);
    // The stored refresh token is still the live one of the family: the provider accepts it.
    const last = (JSON.parse(await readFile(tokensFile, "utf8")) as { refreshToken: string }).refreshToken;
    await expect(refresh({ baseUrl: h.url, clientId: CLIENT.id, clientSecret: CLIENT.secret }, last)).resolves.toMatchObject({ token_type: "Bearer" });
  });

  it("refreshes once in a run against a provider whose access tokens live 30 s, not before every call", async () => {
    const h = await start({ accessTokenTtlSeconds: 30 });
    // A delay-only fault of 0 ms serves every token request as is and counts them down.
    await h.control("POST", "/faults", { method: "POST", path_prefix: "/oauth2/token", delay_ms: 0, count: 1_000 });

    const { code, stderr } = await runInProcess(["run", "--once"], h.env);

    expect(code, stderr).toBe(EXIT.ok);
    const [left] = ((await h.control("GET", "/faults")) as { data: { count: number }[] }).data;
    expect(1_000 - (left?.count ?? 0)).toBe(1);
    expect(idsWithStatus(h, "not_synced", "outdated")).toEqual([]);
  });

  it("stops with exit 3 and a re-authorize message when the token family is revoked", async () => {
    const { h, first } = await startWithRevokedFamily();

    const { code, stderr } = await runInProcess(["run", "--once"], h.env);

    expect(code).toBe(EXIT.reauthorize);
    expect(stderr).toContain("run `npm run bridge -- authorize` to sign in again");
    expect(stderr).not.toContain(first);
    // QASHIO_REFRESH_TOKEN is still set from the first run: a fresh one there would not be read, and it says so.
    const tokens = join(h.env.BRIDGE_STATE_DIR as string, "tokens.json");
    expect(stderr).toContain(`; QASHIO_REFRESH_TOKEN is not read while ${tokens} exists: to start from it instead, move that file aside`);
    const { QASHIO_REFRESH_TOKEN: _seed, ...withoutSeed } = h.env;
    expect((await runInProcess(["run", "--once"], withoutSeed)).stderr).not.toContain("QASHIO_REFRESH_TOKEN");
  });

  it("applies the optional settings: event source, card.created, hashed cardholder data", async () => {
    const h = await start();
    const env = { ...h.env, BRIDGE_EVENT_SOURCE: "acme.cards", BRIDGE_EMIT_CARD_CREATED: "true", BRIDGE_PII_MODE: "hash", BRIDGE_PII_SALT: "0123456789abcdef0123" };

    expect((await runInProcess(["run", "--once"], env)).code).toBe(EXIT.ok);

    const events = await readEvents(h.eventsFile);
    const cards = h.sandbox.control.company(h.companyId)?.cards ?? [];
    expect(events.filter((e) => e["detail-type"] === "card.created")).toHaveLength(cards.length);
    expect(new Set(events.map((e) => e.source))).toEqual(new Set(["acme.cards"]));
    const names = events.flatMap((e) => {
      const name = e.detail.data.object.card_holder_name;
      return typeof name === "string" ? [name] : [];
    });
    expect(names.length).toBeGreaterThan(0);
    for (const name of names) expect(name).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
  });

  it("warns of a prefixed variable that names no setting, on stderr, without its value, and runs on", async () => {
    const h = await start();
    const { code, stderr } = await runInProcess(["run", "--once"], { ...h.env, BRIDGE_PII_MOD: "hash-value-7" });
    expect(code).toBe(EXIT.ok);
    expect(stderr).toContain("warning: BRIDGE_PII_MOD is not a setting (did you mean BRIDGE_PII_MODE?)");
    expect(stderr).not.toContain("hash-value-7");
  });

  it("asks for a token when the state directory has none and QASHIO_REFRESH_TOKEN is unset", async () => {
    const h = await start();
    const { QASHIO_REFRESH_TOKEN: _unused, ...env } = h.env;
    const { code, stderr } = await runInProcess(["run", "--once"], env);
    expect(code).toBe(EXIT.usage);
    expect(stderr).toMatch(/QASHIO_REFRESH_TOKEN: is required while the state directory .* holds no token/);
  });

  it("names a state directory under a regular file, an events file that is a directory and the missing token at once, exit 2", async () => {
    const h = await start();
    await writeFile(join(h.dir, "plain-file"), "x");
    const { QASHIO_REFRESH_TOKEN: _unused, ...env } = h.env;
    const bad = { ...env, BRIDGE_STATE_DIR: join(h.dir, "plain-file", "state"), BRIDGE_EVENTS_FILE: h.dir };

    const { code, stderr } = await runInProcess(["run", "--once"], bad);

    expect(code).toBe(EXIT.usage);
    expect(stderr).toContain("BRIDGE_STATE_DIR: cannot be created");
    // One message for the events file, naming the state directory under it.
    expect(stderr).toContain(`BRIDGE_EVENTS_FILE: is ${h.dir}, the directory BRIDGE_STATE_DIR (${bad.BRIDGE_STATE_DIR}) lies in, not a file`);
    expect(stderr.match(/BRIDGE_EVENTS_FILE:/g)).toHaveLength(1);
    expect(stderr).not.toContain("ENOTDIR");
    const fresh = { ...env, BRIDGE_STATE_DIR: join(h.dir, "empty-state"), BRIDGE_EVENTS_FILE: h.dir };
    const second = await runInProcess(["run", "--once"], fresh);
    expect(second.code).toBe(EXIT.usage);
    expect(second.stderr).toContain(`BRIDGE_EVENTS_FILE: is ${h.dir}, the directory BRIDGE_STATE_DIR (${fresh.BRIDGE_STATE_DIR}) lies in, not a file`);
    expect(second.stderr).toContain("QASHIO_REFRESH_TOKEN: is required");
  });

  it("rejects a bad argument with exit 2 before reading any setting", async () => {
    const { code, stderr } = await runInProcess(["run", "--interval", "often"], {});
    expect(code).toBe(EXIT.usage);
    expect(stderr).toContain('--interval: invalid duration "often"');
    expect(stderr).toContain("Run `npm run bridge -- run --help` for usage.");
  });
});

describe("bridge run (loop)", () => {
  it("stops cleanly between cycles when signalled", async () => {
    const h = await start();
    const controller = new AbortController();
    const run = runInProcess(["run", "--interval", "1h500ms"], h.env, controller.signal);
    // The loop waits an hour after its first cycle unless stopped; stop it once the cycle is done.
    await firstLine(h.eventsFile);
    controller.abort();
    const { code, stdout, stderr } = await run;
    expect(code).toBe(EXIT.ok);
    expect(stdout).toContain("cycle 1:");
    expect(stdout).not.toContain("cycle 2:");
    expect(stderr).toMatch(/^bridge: stopped after 1 cycle$/m);
    expect(stderr).toMatch(/^bridge: polling every 1h500ms; /m); // the interval as given, not rounded nor in seconds
  });
});

describe("bridge run (loop) with a revoked token family", () => {
  it("stops at once with the re-authorize error (exit 3) instead of retrying at every interval", async () => {
    const { h } = await startWithRevokedFamily();

    // A loop that goes on would wait here; stop it after a few rounds rather than wait.
    const { outcome, pauses: waits } = await loopWithSteps(h, [() => undefined, () => undefined]);

    expect(outcome).toBeInstanceOf(AuthorizeAgainError);
    expect((outcome as AuthorizeAgainError).exitCode).toBe(EXIT.reauthorize);
    expect(waits).toEqual([]);
  });
});

describe("bridge run (loop) with a wall clock stepped back during a cycle", () => {
  it("waits no longer than the interval: a clock set back an hour (NTP, a person) does not stall polling for that hour", async () => {
    const h = await start();
    let offset = 0;
    const clock: Clock = { now: () => Date.now() + offset, sleep: realSleep };

    const { outcome: code, pauses: waits } = await loopWithSteps(h, [], {
      seams: {
        clock,
        // The first cycle publishes: the host's clock steps back an hour in the middle of it.
        onPublished: () => {
          offset = -3_600_000;
        },
      },
    });

    expect(code).toBe(EXIT.ok);
    expect(waits).toHaveLength(1);
    expect(waits[0]).toBeLessThanOrEqual(60_000);
  });
});

describe("bridge run (loop) after a failed cycle", () => {
  it("logs the failure, tries again at the next interval and delivers everything", async () => {
    const h = await start();
    const pending = idsWithStatus(h, "not_synced", "outdated");
    await h.control("POST", "/faults", { method: "POST", path_prefix: "/public/v1/erp/transactions/acknowledge", status: 429, retry_after: 0, count: 50 });

    // Instead of waiting the interval: clear the faults after the first cycle, stop after the second.
    const { outcome: code, pauses: waits, ...out } = await loopWithSteps(h, [() => h.control("DELETE", "/faults")]);

    expect(code).toBe(EXIT.ok);
    expect(out.stderr).toMatch(/^error cycle 1 failed; retrying at the next interval .*status 429/m);
    expect(out.stdout).toMatch(/cycle 2: \d+ events/);
    // The interval runs from each cycle's start: the wait is what the cycle left of it.
    expect(waits.every((ms) => ms > 0 && ms < 60_000)).toBe(true);
    expect(new Set((await readEvents(h.eventsFile)).map((e) => e.detail.subject.id))).toEqual(new Set(pending));
    expect(idsWithStatus(h, "not_synced", "outdated")).toEqual([]);
  });
});

describe("bridge run, redrive and conform-pii against the state directory's BRIDGE_PII_SALT", () => {
  const SALT = "salt-of-the-tenant-0001";
  const MISTYPED = "salt-of-the-tenant-000l";

  /** Every file of the state directory, as text by path: what a refused command must leave as it was. */
  async function stateFiles(dir: string): Promise<Record<string, string>> {
    const entries = await readdir(dir, { withFileTypes: true, recursive: true });
    const files = entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
    return Object.fromEntries(await Promise.all(files.map(async (file) => [file, await readFile(file, "utf8")] as const)));
  }

  /** A harness whose first run under `hash` with {@link SALT} is done. */
  async function hashedOnce(): Promise<{ h: Harness; env: Record<string, string>; binding: string }> {
    const h = await start();
    const env = { ...h.env, BRIDGE_PII_MODE: "hash", BRIDGE_PII_SALT: SALT };
    expect((await runInProcess(["run", "--once"], env)).code).toBe(EXIT.ok);
    return { h, env, binding: join(h.env.BRIDGE_STATE_DIR as string, "binding.json") };
  }

  /** A provider transport that records each call and answers none. */
  function refusingFetch(): { calls: string[]; fetch: (url: string) => Promise<never> } {
    const calls: string[] = [];
    return {
      calls,
      fetch: async (url: string) => {
        calls.push(url);
        throw new Error("must not be called");
      },
    };
  }

  it("refuses a mistyped salt (exit 2) naming BRIDGE_PII_SALT and how to switch on purpose, before any provider call or state write", async () => {
    const { h, env } = await hashedOnce();
    const state = await stateFiles(h.env.BRIDGE_STATE_DIR as string);
    const events = await readFile(h.eventsFile, "utf8");
    const { calls, fetch } = refusingFetch();
    const { io } = capturedIo({ ...h, env: { ...env, BRIDGE_PII_SALT: MISTYPED } }, new AbortController().signal);

    const error = await runCommand({ once: true, intervalMs: 60_000 }, io, { fetch }).catch((e: unknown) => e);

    expect(error).toMatchObject({ name: "PiiSaltChangedError", exitCode: EXIT.usage });
    const message = (error as Error).message;
    expect(message).toContain(`BRIDGE_PII_SALT: differs from the salt the pseudonyms in this state directory (${h.env.BRIDGE_STATE_DIR}) were made with`);
    expect(message).toContain("run `npm run bridge -- run --once --new-pii-salt` once");
    expect(message).not.toContain(SALT);
    expect(message).not.toContain(MISTYPED);
    expect(calls).toEqual([]);
    expect(await stateFiles(h.env.BRIDGE_STATE_DIR as string)).toEqual(state);
    expect(await readFile(h.eventsFile, "utf8")).toBe(events);
    // Through the command line: exit 2 with the message on stderr. The salt it ran with runs on, and quietly.
    const refused = await runInProcess(["run", "--once"], { ...env, BRIDGE_PII_SALT: MISTYPED });
    expect(refused).toMatchObject({ code: EXIT.usage, stdout: "" });
    expect(refused.stderr).toContain("BRIDGE_PII_SALT: differs from the salt");
    const same = await runInProcess(["run", "--once"], env);
    expect(same.code).toBe(EXIT.ok);
    expect(same.stdout).toMatch(/cycle 1: 0 events/);
  });

  it("refuses it to redrive and to conform-pii under hash as well, writing nothing", async () => {
    const { h, env } = await hashedOnce();
    const state = await stateFiles(h.env.BRIDGE_STATE_DIR as string);
    for (const command of ["redrive", "conform-pii"]) {
      const { code, stderr } = await runInProcess([command], { ...env, BRIDGE_PII_SALT: MISTYPED }, undefined, h.dir);
      expect([command, code]).toEqual([command, EXIT.usage]);
      expect(stderr).toContain("BRIDGE_PII_SALT: differs from the salt");
    }
    expect(await stateFiles(h.env.BRIDGE_STATE_DIR as string)).toEqual(state);
    // Under redact conform-pii hashes nothing: the salt set there is not its concern.
    expect((await runInProcess(["conform-pii"], { ...env, BRIDGE_PII_MODE: "redact", BRIDGE_PII_SALT: MISTYPED }, undefined, h.dir)).code).toBe(EXIT.ok);
  });

  it("switches salts on purpose with run --new-pii-salt: one pseudonym change per item pulled, then the new salt is the one checked", async () => {
    const { h, env, binding } = await hashedOnce();
    const before = (await readEvents(h.eventsFile)).length;
    const next = { ...env, BRIDGE_PII_SALT: MISTYPED };

    const switched = await runInProcess(["run", "--once", "--new-pii-salt"], next);

    expect(switched.code).toBe(EXIT.ok);
    const published = (await readEvents(h.eventsFile)).slice(before);
    const cards = h.sandbox.control.company(h.companyId)?.cards ?? [];
    // The cards walk reads every card: each one publishes its new pseudonyms, once.
    expect(published.filter((e) => e["detail-type"] === "card.updated").map((e) => e.detail.subject.id).sort()).toEqual(cards.map((c) => c.id).sort());
    expect((await runInProcess(["run", "--once"], next)).stdout).toMatch(/cycle 1: 0 events/);
    expect((await runInProcess(["run", "--once"], env)).code).toBe(EXIT.usage);
    for (const salt of [SALT, MISTYPED]) expect(await readFile(binding, "utf8")).not.toContain(salt);
  });

  it("refuses run --new-pii-salt (exit 2) when BRIDGE_PII_SALT is the recorded salt already, naming the flag, before any provider call or state write", async () => {
    const { h, env } = await hashedOnce();
    const state = await stateFiles(h.env.BRIDGE_STATE_DIR as string);
    const events = await readFile(h.eventsFile, "utf8");
    const { calls, fetch } = refusingFetch();
    // Once and in a loop alike: left in a service definition or cron line, the flag would take a later typo as a switch.
    for (const once of [true, false]) {
      const controller = new AbortController();
      const { io } = capturedIo({ ...h, env }, controller.signal);

      const error = await runCommand({ once, intervalMs: 60_000, newPiiSalt: true }, io, { fetch, pause: async () => controller.abort() }).catch((e: unknown) => e);

      expect(error).toMatchObject({ name: "PiiSaltUnchangedError", exitCode: EXIT.usage });
      const message = (error as Error).message;
      expect(message).toContain(`--new-pii-salt refused: BRIDGE_PII_SALT is already the salt this state directory (${h.env.BRIDGE_STATE_DIR}) records`);
      expect(message).toContain("remove --new-pii-salt");
      expect(message).toContain("would take a later mistyped BRIDGE_PII_SALT as a switch");
      expect(message).not.toContain(SALT);
    }
    expect(calls).toEqual([]);
    expect(await stateFiles(h.env.BRIDGE_STATE_DIR as string)).toEqual(state);
    expect(await readFile(h.eventsFile, "utf8")).toBe(events);
    const refused = await runInProcess(["run", "--once", "--new-pii-salt"], env);
    expect(refused).toMatchObject({ code: EXIT.usage, stdout: "" });
    expect(refused.stderr).toContain("--new-pii-salt refused");
    expect((await runInProcess(["run", "--once"], env)).code).toBe(EXIT.ok);
  });

  it("tells a switch run again after its cycle failed that it is done: the failed run recorded the new salt", async () => {
    const { h, env } = await hashedOnce();
    const next = { ...env, BRIDGE_PII_SALT: MISTYPED };
    await h.control("POST", "/faults", { method: "GET", path_prefix: "/public/v1/erp/transactions", status: 500, count: 50 });
    expect((await runInProcess(["run", "--once", "--new-pii-salt"], next)).code).toBe(EXIT.failed);
    await h.control("DELETE", "/faults");

    const again = await runInProcess(["run", "--once", "--new-pii-salt"], next);

    expect(again.code).toBe(EXIT.usage);
    expect(again.stderr).toContain("the switch is done: a run with --new-pii-salt recorded this salt, even one whose cycle then failed");
    expect((await runInProcess(["run", "--once"], next)).code).toBe(EXIT.ok);
  });

  it("switches on the first cycle of run --new-pii-salt in a loop, and refuses none of that process's later cycles", async () => {
    const { h, env } = await hashedOnce();

    const { outcome: code, ...out } = await loopWithSteps(
      { ...h, env: { ...env, BRIDGE_PII_SALT: MISTYPED } },
      [() => h.control("POST", "/companies/{company}/transactions", { count: 2 })],
      { args: { newPiiSalt: true } },
    );

    expect(code).toBe(EXIT.ok);
    expect(out.stdout).toMatch(/cycle 2: 2 events/);
    expect(out.stderr).not.toContain("--new-pii-salt refused");
  });

  it("takes run --new-pii-salt where no fingerprint is recorded yet (it records what a run without it would), and refuses it at the next start", async () => {
    const h = await start();
    const env = { ...h.env, BRIDGE_PII_MODE: "hash", BRIDGE_PII_SALT: SALT };

    expect((await runInProcess(["run", "--once", "--new-pii-salt"], env)).code).toBe(EXIT.ok);

    const again = await runInProcess(["run", "--once", "--new-pii-salt"], env);
    expect(again.code).toBe(EXIT.usage);
    expect(again.stderr).toContain("--new-pii-salt refused");
  });

  it("records a fingerprint for a state directory bound before fingerprints, on its next run, rather than refusing it", async () => {
    const { env, binding } = await hashedOnce();
    const { piiSaltFingerprint, ...older } = JSON.parse(await readFile(binding, "utf8")) as Record<string, string>;
    expect(piiSaltFingerprint).toMatch(/^[0-9a-f]{16}$/);
    await writeFile(binding, `${JSON.stringify(older)}\n`);

    const upgraded = await runInProcess(["run", "--once"], env);

    expect(upgraded.code).toBe(EXIT.ok);
    expect(upgraded.stdout).toMatch(/cycle 1: 0 events/);
    expect(JSON.parse(await readFile(binding, "utf8"))).toEqual({ ...older, piiSaltFingerprint });
    expect((await runInProcess(["run", "--once"], { ...env, BRIDGE_PII_SALT: MISTYPED })).code).toBe(EXIT.usage);
  });

  it("keeps the fingerprint through a switch to redact, so a return to hash takes the same salt and refuses another", async () => {
    const { env, binding } = await hashedOnce();
    const recorded = await readFile(binding, "utf8");
    const { BRIDGE_PII_SALT: _salt, ...redact }: Record<string, string> = { ...env, BRIDGE_PII_MODE: "redact" };
    expect((await runInProcess(["run", "--once"], redact)).code).toBe(EXIT.ok);
    expect(await readFile(binding, "utf8")).toBe(recorded);
    const misplaced = await runInProcess(["run", "--once", "--new-pii-salt"], redact);
    expect(misplaced.code).toBe(EXIT.usage);
    expect(misplaced.stderr).toContain("BRIDGE_PII_MODE: is redact: --new-pii-salt records the salt of hash mode");

    expect((await runInProcess(["run", "--once"], { ...env, BRIDGE_PII_SALT: MISTYPED })).code).toBe(EXIT.usage);
    expect((await runInProcess(["run", "--once"], env)).code).toBe(EXIT.ok);
  });
});
