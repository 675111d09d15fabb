/**
 * End-to-end: several bridge processes on one state directory at once, as an operator causes by accident (a cron
 * `run --once` beside a `run --interval` loop, a `redrive` or `conform-pii` started mid-cycle). Each refusal names the
 * process that holds the lease and says what to do; the holder's cycle goes on and delivers everything once.
 */
import { readdir, readFile, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { EXIT } from "../../shared/cli/errors.js";
import { harnessPerTest, idsWithStatus, readEvents, runInProcess, spawnBridge } from "./helpers.js";

const startHarness = harnessPerTest();
let ackProxy: Awaited<ReturnType<typeof holdingProxy>> | undefined;
const children: ReturnType<typeof spawnBridge>[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await ackProxy?.close();
  ackProxy = undefined;
});

function spawned(args: readonly string[], env: Record<string, string>): ReturnType<typeof spawnBridge> {
  const child = spawnBridge(args, env);
  children.push(child);
  return child;
}

describe("bridge processes sharing a state directory", () => {
  it("refuses a run --once, redrive and conform-pii started mid-cycle, naming the loop's pid and saying to run again", async () => {
    const h = await startHarness();
    const pending = idsWithStatus(h, "not_synced", "outdated");
    // The answers to the loop's acknowledges are held until the others are done: it holds the cycle lease, mid-cycle,
    // meanwhile. (A fixed 6 s hang raced the start of three processes on a loaded machine: once it ran out, one of
    // them would take the free lease and run.)
    const proxy = (ackProxy = await holdingProxy(h.url));
    const env: Record<string, string> = { ...h.env, QASHIO_BASE_URL: proxy.url };
    const held = proxy.holdAll(({ method, url }) => method === "POST" && url.startsWith("/public/v1/erp/transactions/acknowledge"));
    const loop = spawned(["run", "--interval", "1h"], env);
    let seen = "";
    const cycleEnded = new Promise<void>((resolve) => loop.stdout?.on("data", (chunk: Buffer) => (seen += chunk.toString()).includes("cycle 1:") && resolve()));
    await held;

    const others = await Promise.all([["run", "--once"], ["redrive"], ["conform-pii"]].map((args) => spawned(args, env).outcome));

    for (const { code, stderr } of others) {
      expect(code).toBe(EXIT.failed);
      expect(stderr).toContain(`another bridge process (pid ${loop.pid} on this machine) is running a cycle, re-drive or conform-pii on this state directory`);
      expect(stderr).toContain("run this command again once it is done");
    }
    // The loop's cycle was not disturbed: it ends, then the loop stops between cycles.
    expect(seen).not.toContain("cycle 1:");
    proxy.release();
    await cycleEnded;
    loop.kill("SIGTERM");
    expect((await loop.outcome).code).toBe(EXIT.ok);
    const delivered = await readEvents(h.eventsFile);
    expect(new Set(delivered.map((e) => e.detail.subject.id))).toEqual(new Set(pending));
    expect(new Set(delivered.map((e) => e.detail.id)).size).toBe(pending.length);
  });
});

/** What a held request is picked by: its method, path and query, and the sandbox's answer to it. */
type HoldMatch = (exchange: { readonly method: string; readonly url: string; readonly answer: string }) => boolean;

/**
 * A loopback proxy to the sandbox that can hold back the answer to one request `hold` picks: it reads the sandbox's
 * answer at once (the provider's state then) and hands it over only when released.
 */
async function holdingProxy(upstream: string) {
  let armed: HoldMatch | undefined;
  let holdingAll = false;
  let captured: () => void = () => undefined;
  const capturedOnce = new Promise<void>((resolve) => (captured = resolve));
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      void (async () => {
        const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !["host", "connection", "content-length"].includes(k))) as Record<string, string>;
        const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
        const answer = await globalThis.fetch(`${upstream}${req.url}`, { method: req.method, headers, body });
        const text = await answer.text();
        if (armed !== undefined && armed({ method: req.method ?? "", url: req.url ?? "", answer: text })) {
          if (!holdingAll) armed = undefined;
          captured();
          await released;
        }
        res.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/json" }).end(text);
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    /** Holds the first request `match` picks; resolves once it came. */
    hold(match: HoldMatch) {
      armed = match;
      return capturedOnce;
    },
    /** Holds every request `match` picks until released (a retry after the client's timeout too); resolves once one came. */
    holdAll(match: HoldMatch) {
      armed = match;
      holdingAll = true;
      return capturedOnce;
    },
    release,
    close: () => new Promise<void>((resolve) => {
      release();
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** Makes the cycle lease in `stateDir` read as run out on every clock, as 30 s of a stopped holder would. */
async function leaseRunsOut(stateDir: string): Promise<void> {
  const locks = join(stateDir, "locks");
  const [top] = (await readdir(locks)).filter((name) => name.startsWith("cycle.lock")).sort((a, b) => b.length - a.length || (a < b ? 1 : -1));
  const file = join(locks, top as string);
  const lease = JSON.parse(await readFile(file, "utf8")) as { expiresAt: number; steady?: { expiresAt: number } };
  await writeFile(file, JSON.stringify({ ...lease, expiresAt: 0, ...(lease.steady ? { steady: { ...lease.steady, expiresAt: 0 } } : {}) }));
}

describe("a bridge process that lost its cycle lease while stopped (Ctrl-Z, SIGSTOP) for longer than the lease", () => {
  let proxy: Awaited<ReturnType<typeof holdingProxy>> | undefined;
  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
  });

  it("stops at its next write once resumed, rather than publish and store a page it read before another run took the lease", async () => {
    const h = await startHarness();
    proxy = await holdingProxy(h.url);
    const env: Record<string, string> = { ...h.env, QASHIO_BASE_URL: proxy.url };
    expect((await runInProcess(["run", "--once"], env)).code).toBe(EXIT.ok);
    const target = (await readEvents(h.eventsFile))[0]?.detail.subject.id;
    await h.control("PATCH", `/companies/{company}/transactions/${target}`, { memo: "first memo" });

    // A reads the page with the first memo, and is stopped before it gets the answer.
    const held = proxy.hold(({ method, url, answer }) => method === "GET" && url.startsWith("/public/v1/erp/transactions") && answer.includes(target as string));
    const stopped = spawned(["run", "--once"], env);
    await held;
    stopped.kill("SIGSTOP");
    await leaseRunsOut(env.BRIDGE_STATE_DIR as string);
    // Meanwhile the memo changes again, and a cron run takes the lease and delivers it.
    await h.control("PATCH", `/companies/{company}/transactions/${target}`, { memo: "second memo" });
    const cron = await runInProcess(["run", "--once"], env);
    expect(cron.code).toBe(EXIT.ok);
    const before = (await readEvents(h.eventsFile)).length;

    stopped.kill("SIGCONT");
    proxy.release();
    const { code, stderr } = await stopped.outcome;

    expect(code).toBe(EXIT.failed);
    expect(stderr).toContain(`the cycle lease of this state directory (${env.BRIDGE_STATE_DIR}) was lost`);
    // Nothing of the stale page was published or stored: the last event says what the provider holds.
    const events = await readEvents(h.eventsFile);
    expect(events.length).toBe(before);
    const last = events.filter((e) => e.detail.subject.id === target).at(-1);
    expect(last?.detail.data.object).toMatchObject({ memo: "second memo" });
    await h.control("PATCH", `/companies/{company}/transactions/${target}`, { memo: "third memo" });
    expect((await runInProcess(["run", "--once"], env)).code).toBe(EXIT.ok);
    const changed = (await readEvents(h.eventsFile)).at(-1);
    expect(changed?.detail.data.changes).toContainEqual(expect.objectContaining({ path: "/memo", before: "second memo", after: "third memo" }));
  });
});
