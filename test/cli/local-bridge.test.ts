import { execSync } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { readLocalSettings } from "../../shared/cli/config.js";
import { CYCLE_LEASE_MS, CYCLE_LOCK, withCycleLock } from "../../shared/cli/cycle-lease.js";
import { openLocalBridge, openLocalState, type LocalBridgeOptions } from "../../shared/cli/local-bridge.js";
import { runConformPii, runCycle, runRedrive } from "../../shared/cli/local-cycles.js";
import { LocalTokenStore } from "../../shared/cli/local-tokens.js";
import { FileTokenStore } from "../../shared/local/token-store.js";
import { contentHash } from "../../shared/bridge/hash.js";
import { CycleLeaseLostError } from "../../shared/cli/lease-guard.js";
import { CliError, ConfigError, CycleFailedError, EXIT, PiiSaltChangedError, StateDirTakenError, TokenFileError, UsageError } from "../../shared/cli/errors.js";
import { FileSnapshotStore } from "../../shared/local/snapshot-store.js";
import { FileQuarantine } from "../../shared/local/quarantine.js";
import type { BridgeEvent, LockHandle, Logger } from "../../shared/bridge/ports.js";
import { SnapshotCursorError, causeMatching } from "../../shared/bridge/errors.js";
import { FileLock } from "../../shared/local/file-lock.js";
import { nodeHttpFetch } from "../../shared/qashio/node-transport.js";
import type { FetchLike } from "../../shared/qashio/http.js";
import { harnessPerTest, idsWithStatus, openHarnessBridge, readEvents, silentLogger, warningRecorder } from "./helpers.js";
import { snapshotOf } from "../local/snapshot-fixtures.js";
import { tempDirPerTest } from "../temp-dir.js";
import { systemClock } from "../../shared/clock.js";

/** A fetch to the sandbox that records each URL it is sent to. */
function recordingFetch(): { sent: string[]; fetch: FetchLike } {
  const sent: string[] = [];
  return {
    sent,
    fetch: (url, init) => {
      sent.push(url);
      return nodeHttpFetch(url, init);
    },
  };
}

const startHarness = harnessPerTest();

describe("local bridge cycle", () => {
  it("reports the records held in quarantine after every cycle, as a gauge rather than a running sum", async () => {
    const harness = await startHarness();
    const { bridge, settings } = await openHarnessBridge(harness);

    expect((await runCycle(bridge)).quarantineSize).toBe(0);
    await new FileQuarantine(settings.stateDir).put({ id: "held", kind: "transaction", reason: "invalid amount", raw: {}, at: "2026-03-01T12:00:00Z" });
    expect((await runCycle(bridge)).quarantineSize).toBe(1);
    expect((await runCycle(bridge)).quarantineSize).toBe(1);
    expect(bridge.metrics.get("QuarantineSize")).toBe(1);
  });

  it("sets the quarantine gauge after a re-drive to the records still held", async () => {
    const harness = await startHarness();
    const { bridge, settings } = await openHarnessBridge(harness);
    await new FileQuarantine(settings.stateDir).put({ id: "held", kind: "transaction", reason: "invalid amount", raw: {}, at: "2026-03-01T12:00:00Z" });
    await runRedrive(bridge);
    expect((await new FileQuarantine(settings.stateDir).list()).map((r) => r.id)).toEqual(["held"]);
    expect(bridge.metrics.get("QuarantineSize")).toBe(1);
  });

  it("re-drives and conforms within the budget they are given, not BRIDGE_CYCLE_BUDGET's", async () => {
    const harness = await startHarness();
    const { bridge, settings } = await openHarnessBridge(harness);
    await runCycle(bridge);
    await new FileQuarantine(settings.stateDir).put({ id: "held", kind: "transaction", reason: "invalid amount", raw: {}, at: "2026-03-01T12:00:00Z" });
    // A budget of 0: past its deadline before it reads anything.
    const redrive = await runRedrive(bridge, { budgetMs: 0 });
    expect(redrive).toMatchObject({ considered: 0, notScanned: true, cycle: { outcome: "deadline" } });
    expect((await new FileQuarantine(settings.stateDir).list()).map((r) => r.id)).toEqual(["held"]);
    expect(await runConformPii(bridge, undefined, { budgetMs: 0 })).toMatchObject({ outcome: "deadline", scanned: 0 });
  });

  it("counts a re-drive's budget from when it was asked for: time taken before the walk (under the lease) comes out of it", async () => {
    const harness = await startHarness();
    let at = Date.now();
    const clock = { now: () => at, sleep: () => new Promise<void>((resolve) => setImmediate(resolve)) };
    const { bridge, settings } = await openHarnessBridge(harness, { clock });
    await runCycle(bridge);
    await new FileQuarantine(settings.stateDir).put({ id: "held", kind: "transaction", reason: "invalid amount", raw: {}, at: "2026-03-01T12:00:00Z" });
    // The reload under the lease takes 1.5 s of a 1 s budget.
    const reload = bridge.snapshots.reload.bind(bridge.snapshots);
    vi.spyOn(bridge.snapshots, "reload").mockImplementationOnce(async () => {
      at += 1_500;
      return reload();
    });
    expect(await runRedrive(bridge, { budgetMs: 1_000 })).toMatchObject({ considered: 0, notScanned: true, cycle: { outcome: "deadline" } });
    expect((await new FileQuarantine(settings.stateDir).list()).map((r) => r.id)).toEqual(["held"]);
  });

  it("counts in a cycle's events those of both walks, as published to the events file", async () => {
    const harness = await startHarness();
    const { bridge } = await openHarnessBridge(harness);
    await runCycle(bridge);
    const before = (await readEvents(harness.eventsFile)).length;
    const card = harness.sandbox.control.company(harness.companyId)?.cards.find((c) => c.status === "Active");
    await harness.control("POST", `/companies/{company}/cards/${card?.id ?? "none"}/status`, { status: "Suspended" });
    await harness.control("POST", "/companies/{company}/transactions", { count: 1, transaction_category: "purchase" });
    const result = await runCycle(bridge);
    const published = (await readEvents(harness.eventsFile)).slice(before);
    expect(published.map((e) => e.detail.subject.type).sort()).toEqual(["card", "transaction"]);
    expect(result.events).toBe(2);
  });

  it("reports a cycle stopped at its budget as incomplete, not as interrupted, while its signal never aborted", async () => {
    const harness = await startHarness();
    const { bridge } = await openHarnessBridge(harness);
    const result = await runCycle(bridge, { budgetMs: 0, signal: new AbortController().signal });
    expect(result.complete).toBe(false);
    expect(result.interrupted).toBe(false);
  });

  it("leaves the cards walk a quarter of the cycle's budget however long the transactions backlog runs, and reports such a cycle incomplete", async () => {
    const harness = await startHarness({ transactions: 250 });
    const { sent, fetch } = recordingFetch();
    // Each page of transactions takes 0.8 of the budget: past the transactions' share (0.75), within the cycle's.
    let at = Date.now();
    const clock = { now: () => at, sleep: () => new Promise<void>((resolve) => setImmediate(resolve)) };
    const slowTransactions: FetchLike = async (url, init) => {
      if (url.includes("/erp/transactions?")) at += 800;
      return fetch(url, init);
    };
    const { bridge } = await openHarnessBridge(harness, { clock, fetch: slowTransactions });
    const result = await runCycle(bridge, { budgetMs: 1_000 });
    expect(sent.filter((url) => url.includes("/erp/transactions?"))).toHaveLength(1);
    expect(sent.filter((url) => url.includes("/erp/cards")).length).toBeGreaterThan(0);
    expect([result.transactions.outcome, result.cards.outcome, result.complete]).toEqual(["deadline", "complete", false]);
  });

  it("reports a cycle incomplete when only the cards walk stopped short (at the budget), though the transactions walk completed", async () => {
    const harness = await startHarness();
    const { sent, fetch } = recordingFetch();
    // The transactions' last list (the outdated ones, one page) takes past the whole budget: their walk ends with it, and
    // the cards walk starts too late to list anything.
    let at = Date.now();
    const clock = { now: () => at, sleep: () => new Promise<void>((resolve) => setImmediate(resolve)) };
    const slowTransactions: FetchLike = async (url, init) => {
      if (url.includes("/erp/transactions?") && url.includes("client_sync_status=outdated")) at += 2_000;
      return fetch(url, init);
    };
    const { bridge } = await openHarnessBridge(harness, { clock, fetch: slowTransactions });
    const result = await runCycle(bridge, { budgetMs: 1_000 });
    expect(sent.filter((url) => url.includes("/erp/cards"))).toEqual([]);
    expect([result.transactions.outcome, result.cards.outcome, result.complete]).toEqual(["complete", "deadline", false]);
  });

  it("reports a quarantine it could not count as 0 records held, warning of it", async () => {
    const harness = await startHarness();
    const { logger, messages } = warningRecorder();
    const { bridge } = await openHarnessBridge(harness, { logger });
    vi.spyOn(bridge.transactions.quarantine, "size").mockRejectedValue(new Error("EIO: i/o error, scandir"));
    expect((await runCycle(bridge)).quarantineSize).toBe(0);
    expect(messages()).toContain("counting the quarantine failed");
  });

  it("reports a cycle's duration as 0, never below, when the wall clock steps back during it", async () => {
    const harness = await startHarness();
    let stepBack = 0;
    const clock = { now: () => Date.now() - stepBack, sleep: (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)) };
    // Stepped back a minute once the first events are out (an NTP correction mid-cycle).
    const { bridge } = await openHarnessBridge(harness, { clock, onPublished: () => (stepBack = 60_000) });
    const result = await runCycle(bridge);
    expect(result.events).toBeGreaterThan(0);
    expect(result.durationMs).toBe(0);
  });

  it("reports a cycle that completed as not interrupted, though Ctrl-C came as it ended: nothing is left for a next run", async () => {
    const harness = await startHarness();
    const { bridge } = await openHarnessBridge(harness);
    const controller = new AbortController();
    // Ctrl-C once both walks are done, as the quarantine is counted at the cycle's end.
    const { quarantine } = bridge.transactions;
    const size = quarantine.size.bind(quarantine);
    quarantine.size = () => {
      controller.abort();
      return size();
    };
    const result = await runCycle(bridge, { signal: controller.signal });
    expect(controller.signal.aborted).toBe(true);
    expect(result.events).toBeGreaterThan(0);
    expect(result.complete).toBe(true);
    expect(result.interrupted).toBe(false);
  });

  it("stops the cards walk too on Ctrl-C during the transactions walk: it reads no card after the stop", async () => {
    const harness = await startHarness();
    const controller = new AbortController();
    const { sent, fetch } = recordingFetch();
    // Ctrl-C as the first page of transactions comes back.
    const stopping: FetchLike = async (url, init) => {
      const response = await fetch(url, init);
      if (url.includes("/erp/transactions")) controller.abort();
      return response;
    };
    const { bridge } = await openHarnessBridge(harness, { fetch: stopping });
    const result = await runCycle(bridge, { signal: controller.signal });
    expect(result.interrupted).toBe(true);
    expect(sent.filter((url) => url.includes("/erp/cards"))).toEqual([]);
  });

  it("walks no cards after the transactions stopped on a revoked token: it asks the token endpoint once and lists no card", async () => {
    const harness = await startHarness();
    const { sent, fetch } = recordingFetch();
    const { bridge, settings } = await openHarnessBridge(harness, { fetch });
    // As a revoked family answers: the token endpoint refuses the stored refresh token (invalid_grant).
    writeFileSync(join(settings.stateDir, "tokens.json"), JSON.stringify({ refreshToken: "a-refresh-token-the-provider-never-issued" }));
    const error = await runCycle(bridge).catch((e: unknown) => e);
    expect((error as CliError).exitCode).toBe(EXIT.reauthorize);
    expect(sent.filter((url) => url.includes("/oauth2/token"))).toHaveLength(1);
    expect(sent.filter((url) => url.includes("/erp/cards"))).toEqual([]);
  });

  it("ends with the refused refresh token the cards walk met (exit 3), not the transactions' failure for now before it", async () => {
    const harness = await startHarness();
    let tokenRefused = false;
    // Once the transactions were refused, the token endpoint refuses the refresh token (a bare 401): the cards walk's refresh, after a 401, fails.
    const fetch: FetchLike = async (url, init) => {
      const response = await nodeHttpFetch(url, init);
      if (!tokenRefused && url.includes("/erp/transactions")) {
        await harness.control("POST", "/faults", { method: "POST", path_prefix: "/oauth2/token", status: 401, bare: true, count: 50 });
        tokenRefused = true;
      }
      return response;
    };
    const { bridge } = await openHarnessBridge(harness, { fetch });
    await harness.control("POST", "/faults", { method: "GET", path_prefix: "/public/v1/erp/transactions", status: 403, count: 50 });
    await harness.control("POST", "/faults", { method: "GET", path_prefix: "/public/v1/erp/cards", status: 401, count: 50 });
    const error = await runCycle(bridge).catch((e: unknown) => e);
    expect(tokenRefused).toBe(true);
    // The refused refresh token ends the run (exit 3: authorize again), not an outage a `run --interval` loop retries.
    expect(error).toBeInstanceOf(CliError);
    expect((error as CliError).exitCode).toBe(EXIT.reauthorize);
  });

  it("keeps the transactions' failure as the cause of the error naming both walks' failures", async () => {
    const harness = await startHarness();
    const { bridge } = await openHarnessBridge(harness);
    // Refused outright (no retries): the cards walk still has its turn after the transactions' provider failure.
    await harness.control("POST", "/faults", { method: "GET", path_prefix: "/public/v1/erp/transactions", status: 403, count: 50 });
    await harness.control("POST", "/faults", { method: "GET", path_prefix: "/public/v1/erp/cards", status: 403, count: 50 });
    const error = await runCycle(bridge).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CycleFailedError);
    expect((error as Error).message).toMatch(/^transactions cycle stopped: .*; and cards cycle stopped: list full cards failed \(ForbiddenError 403/);
    // In-process callers find what stopped the transactions down the chain, as under any other cycle failure.
    const cause = (error as Error).cause;
    expect(cause).toBeInstanceOf(CycleFailedError);
    expect((cause as Error).message).toMatch(/^transactions cycle stopped: list not_synced transactions failed \(ForbiddenError 403/);
    expect((cause as Error).message).not.toContain("cards cycle");
    expect(causeMatching(error, (e): e is Error => e instanceof Error && e.name === "ForbiddenError")?.message).toContain("GET /public/v1/erp/transactions answered 403");
  });

  it("warns, without the token, while QASHIO_REFRESH_TOKEN is set beside stored tokens: spent, it would revoke the family from an empty state directory", async () => {
    const harness = await startHarness();
    const seed = harness.env.QASHIO_REFRESH_TOKEN ?? "";
    const { logger, warnings, messages } = warningRecorder();
    await runCycle((await openHarnessBridge(harness, { logger })).bridge);
    // The seed stood in for the first run: no word of it then.
    expect(messages().filter((w) => w.includes("QASHIO_REFRESH_TOKEN"))).toEqual([]);
    await openHarnessBridge(harness, { logger });
    const seedWarnings = messages().filter((w) => w.includes("QASHIO_REFRESH_TOKEN"));
    expect(seedWarnings).toHaveLength(1);
    expect(seedWarnings[0]).toMatch(/not read while .*tokens\.json holds tokens: remove it from the environment and \.env/);
    expect(seedWarnings[0]).not.toContain(seed);
    // Without the variable, nothing to say.
    const { QASHIO_REFRESH_TOKEN: _unset, ...env } = harness.env;
    warnings.length = 0;
    await openHarnessBridge({ ...harness, env }, { logger });
    expect(messages().filter((w) => w.includes("QASHIO_REFRESH_TOKEN"))).toEqual([]);
  });

  it("says, for a token file it cannot use, how to sign in again as the bridge was opened to (authorize, or the demo's own words)", async () => {
    const harness = await startHarness();
    const { bridge, settings } = await openHarnessBridge(harness);
    await runCycle(bridge);
    writeFileSync(join(settings.stateDir, "tokens.json"), "{not json");
    const failureWith = (options: Partial<LocalBridgeOptions>) => openHarnessBridge(harness, options).then(() => undefined, (e: unknown) => e);

    const authorize = await failureWith({});
    expect(authorize).toBeInstanceOf(TokenFileError);
    expect((authorize as Error).message).toContain(": run `npm run bridge -- authorize` to store a new token set");
    const demo = await failureWith({ signInAgain: { words: "start a new demo with `npm start`", sameState: false } });
    expect(demo).toBeInstanceOf(TokenFileError);
    expect((demo as Error).message).toMatch(/: start a new demo with `npm start`/);
    expect((demo as Error).message).not.toContain("authorize");
    expect((demo as CliError).exitCode).toBe(EXIT.reauthorize);
  });

  it("sets the quarantine gauge after a cycle that failed too", async () => {
    const harness = await startHarness();
    const { bridge, settings } = await openHarnessBridge(harness);
    await new FileQuarantine(settings.stateDir).put({ id: "held", kind: "transaction", reason: "invalid amount", raw: {}, at: "2026-03-01T12:00:00Z" });
    // Refused at once (no retry): the transactions half fails, and with it the cycle.
    await harness.control("POST", "/faults", { method: "GET", path_prefix: "/public/v1/erp/transactions", status: 403, count: 50 });
    await expect(runCycle(bridge)).rejects.toBeInstanceOf(CycleFailedError);
    expect(bridge.metrics.get("QuarantineSize")).toBe(1);
  });

  it("counts each token refresh (TokenRefreshes), none while the access token is good", async () => {
    const harness = await startHarness();
    const { bridge } = await openHarnessBridge(harness);
    await runCycle(bridge);
    expect(bridge.metrics.get("TokenRefreshes")).toBe(1);
    await runCycle(bridge);
    expect(bridge.metrics.get("TokenRefreshes")).toBe(1);
  });

  it("refreshes an expired access token within the shortest BRIDGE_CYCLE_BUDGET (1 s): a local refresh is not held to the cycle's deadline", async () => {
    const harness = await startHarness();
    expect((await runCycle((await openHarnessBridge(harness)).bridge)).complete).toBe(true);
    // An hour on, for the provider and the bridge: the access token has expired on both clocks.
    await harness.control("POST", "/clock", { advance_seconds: 3_600 });
    await harness.control("POST", "/companies/{company}/transactions", { count: 2 });
    const settings = readLocalSettings({ ...harness.env, BRIDGE_CYCLE_BUDGET: "1s" }, harness.dir);
    expect(settings.cycleBudgetMs).toBe(1_000);
    // Frozen: whatever the cycle does before its first provider call, the deadline stays 0.75 s (transactions) ahead.
    const at = Date.now() + 3_600_000;
    const clock = { now: () => at, sleep: () => new Promise<void>((resolve) => setImmediate(resolve)) };
    const bridge = await openLocalBridge(settings, { env: harness.env, logger: silentLogger, clock });
    expect(await runCycle(bridge)).toMatchObject({ events: 2, complete: true });
    expect(bridge.metrics.get("TokenRefreshes")).toBe(1);
  });

  it("keeps a bridge open across cycles (run --interval) in step with what another process wrote and compacted between them", async () => {
    const harness = await startHarness();
    const { bridge: loop, settings } = await openHarnessBridge(harness);
    const [edited] = idsWithStatus(harness, "not_synced");
    expect((await runCycle(loop)).complete).toBe(true);

    // Between two of the loop's cycles, a `run --once` publishes a new transaction and a change; a compaction then
    // deletes the segments the loop loaded (each now holds a superseded entry).
    await harness.control("POST", "/companies/{company}/transactions", { count: 1, transaction_category: "purchase" });
    await harness.control("PATCH", `/companies/{company}/transactions/${edited}`, { memo: "changed between the loop's cycles" });
    const [added] = idsWithStatus(harness, "not_synced");
    expect((await runCycle((await openHarnessBridge(harness)).bridge)).events).toBe(2);
    await new FileSnapshotStore(settings.stateDir).vacuum();

    await harness.control("PATCH", `/companies/{company}/transactions/${added}`, { memo: "changed after the other run" });
    await harness.control("PATCH", `/companies/{company}/transactions/${edited}`, { memo: "changed again" });
    const result = await runCycle(loop);
    expect(result.complete).toBe(true);
    expect(result.events).toBe(2);
    const last = (await readEvents(harness.eventsFile)).slice(-2);
    expect(last.map((e) => [e["detail-type"], e.detail.subject.id]).sort()).toEqual(
      [
        ["transaction.changed", added],
        ["transaction.changed", edited],
      ].sort(),
    );
    expect(last.find((e) => e.detail.subject.id === edited)?.detail.data.changes).toContainEqual(
      expect.objectContaining({ path: "/memo", before: "changed between the loop's cycles", after: "changed again" }),
    );
  });

  it("names a segment that turned corrupt between two cycles of an open bridge as a state directory problem, exit 2", async () => {
    const harness = await startHarness();
    const { bridge: loop, settings } = await openHarnessBridge(harness);
    expect((await runCycle(loop)).complete).toBe(true);
    const bad = join(settings.stateDir, "snapshots", "seg-000000009999-0badc0de.log");
    writeFileSync(bad, "not a header\n");
    const error = await runCycle(loop).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).exitCode).toBe(EXIT.usage);
    expect((error as Error).message).toContain(bad);
  });

  it.each([
    ["moved away", "moved or removed", (dir: string) => renameSync(dir, `${dir}-moved`)],
    ["replaced by an empty directory", "replaced", (dir: string) => (renameSync(dir, `${dir}-moved`), mkdirSync(dir))],
  ])("stops an open bridge's next cycle, exit 2, when its state directory was %s, before it touches either", async (_what, said, change) => {
    const harness = await startHarness();
    const { bridge: loop, settings } = await openHarnessBridge(harness);
    expect((await runCycle(loop)).complete).toBe(true);
    change(settings.stateDir);
    await harness.control("POST", "/companies/{company}/transactions", { count: 1, transaction_category: "purchase" });
    const before = readFileSync(harness.eventsFile, "utf8");
    const error = await runCycle(loop).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).exitCode).toBe(EXIT.usage);
    expect((error as Error).message).toMatch(/^The state directory changed under the bridge:\n/);
    expect((error as Error).message).toContain(`BRIDGE_STATE_DIR: ${settings.stateDir} was ${said} while the bridge ran`);
    // Nothing made afresh at the old path (binding, lease, snapshots), nothing published, nothing acknowledged.
    expect(existsSync(settings.stateDir) ? readdirSync(settings.stateDir) : []).toEqual([]);
    expect(readFileSync(harness.eventsFile, "utf8")).toBe(before);
    expect(idsWithStatus(harness, "not_synced")).toHaveLength(1);
  });

  it("goes on when the state directory at its path is another directory holding its state (a mount that renumbers it)", async () => {
    const harness = await startHarness();
    const { bridge: loop, settings } = await openHarnessBridge(harness);
    expect((await runCycle(loop)).complete).toBe(true);
    cpSync(settings.stateDir, `${settings.stateDir}-copy`, { recursive: true });
    rmSync(settings.stateDir, { recursive: true });
    renameSync(`${settings.stateDir}-copy`, settings.stateDir);
    await harness.control("POST", "/companies/{company}/transactions", { count: 1, transaction_category: "purchase" });
    const result = await runCycle(loop);
    expect(result.complete).toBe(true);
    expect(result.events).toBe(1);
    expect(idsWithStatus(harness, "not_synced")).toEqual([]);
  });

  it("takes a renumbered state directory as its own from then on: its binding gone later is named as such, not as a directory replaced", async () => {
    const harness = await startHarness();
    const { bridge: loop, settings } = await openHarnessBridge(harness);
    await runCycle(loop);
    cpSync(settings.stateDir, `${settings.stateDir}-copy`, { recursive: true });
    rmSync(settings.stateDir, { recursive: true });
    renameSync(`${settings.stateDir}-copy`, settings.stateDir);
    expect((await runCycle(loop)).complete).toBe(true);
    rmSync(join(settings.stateDir, "binding.json"));
    const error = await runCycle(loop).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toContain("BRIDGE_STATE_DIR: state directory holds tokens or snapshots but no binding file");
    expect((error as Error).message).not.toContain("while the bridge ran");
  });

  it("never sends a state directory's tokens to another provider, nor lets another client or tenant use it", async () => {
    const harness = await startHarness();
    const { bridge, settings } = await openHarnessBridge(harness);
    await runCycle(bridge);
    const sent: string[] = [];
    const fetch = async (url: string) => {
      sent.push(url);
      throw new Error("must not be called");
    };
    const others = [
      [{ ...settings, baseUrl: "https://api.other-provider.test" }, "QASHIO_BASE_URL", harness.url, "https://api.other-provider.test"],
      [{ ...settings, clientId: "another-client" }, "QASHIO_CLIENT_ID", settings.clientId, "another-client"],
      [{ ...settings, tenant: "another-tenant" }, "BRIDGE_TENANT", settings.tenant, "another-tenant"],
    ] as const;
    for (const [other, setting, there, here] of others) {
      const error = await openLocalBridge(other, { env: harness.env, logger: silentLogger, fetch }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StateDirTakenError);
      expect((error as StateDirTakenError).exitCode).toBe(EXIT.usage);
      // Both values, so `localhost` against `127.0.0.1` shows at a glance; none of them is a secret.
      expect((error as Error).message).toContain(
        `BRIDGE_STATE_DIR: ${settings.stateDir} holds the tokens or snapshots of another ${setting} than these settings name (${setting} ${there} there, ${here} here; see its binding.json)`,
      );
      expect((error as Error).message).not.toContain(settings.clientSecret);
    }
    expect(sent).toEqual([]);
    // The owner still runs.
    expect((await runCycle((await openHarnessBridge(harness)).bridge)).complete).toBe(true);
  });

  it("lets only the first of two first uses racing on an empty state directory keep it", async () => {
    const harness = await startHarness();
    const sent: string[] = [];
    const fetch = async (url: string) => {
      sent.push(url);
      throw new Error("must not be called");
    };
    // Both open while the directory holds nothing, so both pass the check at open.
    const { bridge: owner, settings } = await openHarnessBridge(harness);
    const others = await Promise.all(
      [{ ...settings, baseUrl: "https://api.other-provider.test" }, { ...settings, tenant: "another-tenant" }].map((other) =>
        openLocalBridge(other, { env: harness.env, logger: silentLogger, fetch }),
      ),
    );
    expect((await runCycle(owner)).complete).toBe(true);
    for (const other of others) {
      const error = await runCycle(other).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StateDirTakenError);
      expect((error as StateDirTakenError).exitCode).toBe(EXIT.usage);
    }
    // The owner's tokens never went elsewhere, and the refused cycles left the lock free.
    expect(sent).toEqual([]);
    expect((await runCycle(owner)).complete).toBe(true);
  });

  it("keeps the first use's binding when another owner opens the directory during its first cycle, before it stored anything", async () => {
    const harness = await startHarness();
    const settings = readLocalSettings(harness.env, harness.dir);
    const other = { ...settings, baseUrl: "https://api.other-provider.test", tenant: "another-tenant" };
    const sent: string[] = [];
    const refusingFetch = async (url: string) => {
      sent.push(url);
      throw new Error("must not be called");
    };
    // The other opens while the owner's first cycle asks for its first token: no token and no snapshot stored yet.
    let opened: Promise<unknown> | undefined;
    const fetch: FetchLike = async (url, init) => {
      opened ??= openLocalBridge(other, { env: harness.env, logger: silentLogger, fetch: refusingFetch }).catch((e: unknown) => e);
      await opened;
      return nodeHttpFetch(url, init);
    };
    const owner = await openLocalBridge(settings, { env: harness.env, logger: silentLogger, fetch });
    expect((await runCycle(owner)).complete).toBe(true);

    // The owner's state stays the owner's: its next cycle runs, and the other is refused before any call.
    expect((await runCycle(owner)).complete).toBe(true);
    const otherBridge = await opened;
    const error = otherBridge instanceof Error ? otherBridge : await runCycle(otherBridge as Awaited<ReturnType<typeof openLocalBridge>>).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StateDirTakenError);
    expect(sent).toEqual([]);
  });

  it("keeps the salt fingerprint of the first use when a bridge with another hash salt opens during its first cycle, before it stored a snapshot", async () => {
    const harness = await startHarness();
    const hashed = { ...harness.env, BRIDGE_PII_MODE: "hash", BRIDGE_PII_SALT: "the-owner's-salt-0123456789" };
    const settings = readLocalSettings(hashed, harness.dir);
    const mistyped = readLocalSettings({ ...hashed, BRIDGE_PII_SALT: "a-mistyped-salt-0123456789" }, harness.dir);
    const sent: string[] = [];
    const refusingFetch = async (url: string) => {
      sent.push(url);
      throw new Error("must not be called");
    };
    // The mistyped one opens while the owner's first cycle asks for its first token: no snapshot stored yet.
    let opened: Promise<unknown> | undefined;
    const fetch: FetchLike = async (url, init) => {
      opened ??= openLocalBridge(mistyped, { env: harness.env, logger: silentLogger, fetch: refusingFetch }).catch((e: unknown) => e);
      await opened;
      return nodeHttpFetch(url, init);
    };
    const owner = await openLocalBridge(settings, { env: harness.env, logger: silentLogger, fetch });
    expect((await runCycle(owner)).events).toBeGreaterThan(0);

    // The snapshots hold the owner's pseudonyms: its next cycle runs, and the other salt is refused before any call.
    expect((await runCycle(owner)).complete).toBe(true);
    const other = await opened;
    const error = other instanceof Error ? other : await runCycle(other as Awaited<ReturnType<typeof openLocalBridge>>).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PiiSaltChangedError);
    expect(sent).toEqual([]);
  });

  it("names an unreadable binding file as a state directory problem, exit 2", async () => {
    const harness = await startHarness();
    const { bridge, settings } = await openHarnessBridge(harness);
    await runCycle(bridge);
    writeFileSync(join(settings.stateDir, "binding.json"), "{ torn");
    const error = await openHarnessBridge(harness).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).exitCode).toBe(EXIT.usage);
    expect((error as Error).message).toContain(`A file in the state directory (${settings.stateDir}) cannot be used:\n  - BRIDGE_STATE_DIR: state directory binding is not valid JSON`);
    expect((error as Error).message).toContain("restore it or use another state directory");
  });

  it("refuses a state directory whose binding file is gone while it holds state, showing how to restore it, exit 2", async () => {
    const harness = await startHarness();
    // A path with a space and a quote: the command shown must quote it for the shell.
    const settings = { ...readLocalSettings(harness.env, harness.dir), stateDir: join(harness.dir, "Bob's state") };
    await runCycle(await openLocalBridge(settings, { env: harness.env, logger: silentLogger }));
    const file = join(settings.stateDir, "binding.json");
    const recorded = JSON.parse(readFileSync(file, "utf8")) as unknown;
    rmSync(file);
    const error = await openLocalBridge(settings, { env: harness.env, logger: silentLogger }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).exitCode).toBe(EXIT.usage);
    const message = (error as Error).message;
    expect(message).toContain("BRIDGE_STATE_DIR: state directory holds tokens or snapshots but no binding file");
    // The command it shows restores the file as it was: run as shown, it lets the owner in again, even from a shell
    // whose umask lets the group write (002, the default of many distributions), which would make a plain
    // redirection's new file 0664, refused as writable by its group.
    const command = /restore the file \(in a POSIX shell: `([^`]*)`\); otherwise use another state directory/.exec(message)?.[1];
    expect(command).toBeDefined();
    execSync(`umask 002; ${command as string}`, { shell: "/bin/sh" });
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual(recorded);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect((await runCycle(await openLocalBridge(settings, { env: harness.env, logger: silentLogger }))).complete).toBe(true);
  });

  it("stops with the token file's own error (exit 3: authorize again) when the file turns unusable under an open bridge, not as a failed cycle a loop retries", async () => {
    const harness = await startHarness();
    const { bridge, settings } = await openHarnessBridge(harness);
    writeFileSync(join(settings.stateDir, "tokens.json"), "not json");
    const error = await runCycle(bridge).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TokenFileError);
    expect((error as CliError).exitCode).toBe(EXIT.reauthorize);
  });

  it("names an unusable base URL without quoting it", async () => {
    const harness = await startHarness();
    const settings = { ...readLocalSettings(harness.env, harness.dir), baseUrl: "https://user:pw-value@provider.test/?k=v" };
    const error = await openLocalBridge(settings, { env: harness.env, logger: silentLogger }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toContain("QASHIO_BASE_URL: does not resolve to an https URL");
    expect((error as ConfigError).message).not.toMatch(/provider\.test|pw-value/);
  });
});

describe("local bridge opening", () => {
  it("refuses before any provider call when neither the state directory nor QASHIO_REFRESH_TOKEN holds a token, naming the directory and authorize", async () => {
    const harness = await startHarness();
    const { refreshToken: _seed, ...settings } = readLocalSettings(harness.env, harness.dir);
    const { sent, fetch } = recordingFetch();
    const error = await openLocalBridge(settings, { env: harness.env, logger: silentLogger, fetch }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).exitCode).toBe(EXIT.usage);
    expect((error as Error).message).toContain(
      `QASHIO_REFRESH_TOKEN: is required while the state directory (${settings.stateDir}) holds no token; or run \`npm run bridge -- authorize\` first`,
    );
    expect(sent).toEqual([]);
  });

  it("makes a state directory others may read private, with a warning, whether it opens the bridge or the state alone (conform-pii)", async () => {
    const harness = await startHarness();
    const { bridge, settings } = await openHarnessBridge(harness);
    await runCycle(bridge);
    for (const open of [
      (logger: Logger) => openHarnessBridge(harness, { logger }),
      (logger: Logger) => openLocalState(settings, { logger }),
    ]) {
      chmodSync(settings.stateDir, 0o755);
      const { logger, messages } = warningRecorder();
      await open(logger);
      expect(statSync(settings.stateDir).mode & 0o777).toBe(0o700);
      expect(messages().join("\n")).toContain(`${settings.stateDir} could be entered and read by its group or others (mode 0755): made it private to its owner (0700)`);
    }
  });

  it("refuses conform-pii under hash with a salt other than the one the state directory records, before it reads a snapshot", async () => {
    const harness = await startHarness();
    const hashed = { ...readLocalSettings(harness.env, harness.dir), piiMode: "hash" as const, piiSalt: "0123456789abcdef0123" };
    await runCycle(await openLocalBridge(hashed, { env: harness.env, logger: silentLogger }));
    const scan = vi.spyOn(FileSnapshotStore.prototype, "scan");
    const error = await openLocalState({ ...hashed, piiSalt: "fedcba9876543210fedc" }, { logger: silentLogger }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PiiSaltChangedError);
    expect((error as CliError).exitCode).toBe(EXIT.usage);
    expect(scan).not.toHaveBeenCalled();
    await expect(openLocalState(hashed, { logger: silentLogger })).resolves.toBeDefined();
  });

  it("refuses to open (exit 2) a state directory whose snapshots were removed, naming the loss, at open rather than at its first cycle", async () => {
    const harness = await startHarness();
    const { bridge, settings } = await openHarnessBridge(harness);
    await runCycle(bridge);
    rmSync(join(settings.stateDir, "snapshots"), { recursive: true });
    const error = await openHarnessBridge(harness).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).exitCode).toBe(EXIT.usage);
    expect((error as Error).message).toContain(`The state directory (${settings.stateDir}) lost its snapshots`);
  });

  it("publishes through the publisher it is given (the bench's null sink) rather than to the events file", async () => {
    const harness = await startHarness({ transactions: 3 });
    const published: BridgeEvent[] = [];
    const publisher = {
      publish: async (events: readonly BridgeEvent[]) => {
        published.push(...events);
        return { failed: [] };
      },
    };
    const { bridge, settings } = await openHarnessBridge(harness, { publisher });
    await runCycle(bridge);
    expect(published.length).toBeGreaterThan(0);
    expect(existsSync(settings.eventsFile)).toBe(false);
  });
});

describe("local bridge cycle lease", () => {
  it("starts in a later second after taking the lease over from a crashed holder, not when renewing its own it could not release", async () => {
    const harness = await startHarness();
    const { bridge: opened } = await openHarnessBridge(harness);
    // The waits of the cycle itself (the lease's keep-alive waits with a signal).
    const waits: number[] = [];
    const clock = { now: () => Date.now(), sleep: async (ms: number, signal?: AbortSignal) => void (signal === undefined && waits.push(ms)) };
    let takes = 0;
    let renewals = 0;
    const handle: LockHandle = {
      tookOver: true,
      renew: async () => {
        renewals += 1;
        return true;
      },
      release: async () => {
        throw Object.assign(new Error("ENOSPC: no space left on device"), { code: "ENOSPC" });
      },
    };
    const tryAcquire = async () => {
      takes += 1;
      return handle;
    };
    const bridge = { ...opened, clock, lock: { tryAcquire } };

    expect(await withCycleLock(bridge, async () => "first")).toBe("first");
    expect(waits).toHaveLength(1);
    expect(waits[0]).toBeGreaterThan(600);
    // The release failed: the next cycle renews the lease it kept, which no crashed holder left.
    expect(await withCycleLock(bridge, async () => "second")).toBe("second");
    expect([takes, renewals]).toEqual([1, 1]);
    expect(waits).toHaveLength(1);
  });

  it("counts the wait after a lease taken over in the cycle's duration, as the cycle started when it was asked for", async () => {
    const harness = await startHarness();
    // A clock just past a whole second as the cycle starts, so the wait for a later second is most of one; the waits
    // without a signal (the cycle's own, not the lease keep-alive's) pass at once on it.
    let base = 0;
    let started = 0;
    const waits: number[] = [];
    const clock = {
      now: () => base + (Date.now() - started) + waits.reduce((sum, ms) => sum + ms, 0),
      sleep: async (ms: number, signal?: AbortSignal) => {
        if (signal === undefined) waits.push(ms);
        else await systemClock.sleep(ms, signal);
      },
    };
    const { bridge: opened } = await openHarnessBridge(harness, { clock });
    const tryAcquire = async (name: string, ttlMs: number): Promise<LockHandle | undefined> => {
      const handle = await opened.lock.tryAcquire(name, ttlMs);
      return handle && { tookOver: true, renew: (ms, signal) => handle.renew(ms, signal), release: () => handle.release() };
    };
    const bridge = { ...opened, lock: { tryAcquire } };
    started = Date.now();
    base = Math.ceil(started / 1000) * 1000 + 1;
    const result = await runCycle(bridge, { budgetMs: 0 });
    // The first wait is the one for a later second after the takeover, before the walks.
    expect(waits[0]).toBeGreaterThan(500);
    expect(result.durationMs).toBeGreaterThanOrEqual(waits[0] as number);
  });

  it("takes the lease docs/spec-gaps.md names, <state>/locks/cycle.lock for 30 s, so processes of other versions on the directory never overlap with it", async () => {
    const harness = await startHarness();
    const { bridge: opened } = await openHarnessBridge(harness);
    const taken: [string, number][] = [];
    const handle: LockHandle = { renew: async () => true, release: async () => undefined };
    const tryAcquire = async (name: string, ttlMs: number) => {
      taken.push([name, ttlMs]);
      return handle;
    };
    expect(await withCycleLock({ ...opened, lock: { tryAcquire } }, async () => "done")).toBe("done");
    expect(taken).toEqual([["cycle", 30_000]]);
  });

  it("starts at once under a lease whose adapter does not say it was taken over", async () => {
    const harness = await startHarness();
    const { bridge: opened } = await openHarnessBridge(harness);
    const waits: number[] = [];
    const clock = { now: () => Date.now(), sleep: async (ms: number, signal?: AbortSignal) => void (signal === undefined && waits.push(ms)) };
    const handle: LockHandle = { renew: async () => true, release: async () => undefined };
    const tryAcquire = async () => handle;
    expect(await withCycleLock({ ...opened, clock, lock: { tryAcquire } }, async () => "done")).toBe("done");
    expect(waits).toEqual([]);
  });

  it("takes the lease anew once a cycle released the one it renewed, rather than renewing a released lease", async () => {
    const harness = await startHarness();
    const { bridge: opened } = await openHarnessBridge(harness);
    let takes = 0;
    let renewals = 0;
    let releases = 0;
    const handle: LockHandle = {
      renew: async () => {
        renewals += 1;
        return true;
      },
      release: async () => {
        // Only the first release fails (a full disk, freed since).
        if ((releases += 1) === 1) throw Object.assign(new Error("ENOSPC: no space left on device"), { code: "ENOSPC" });
      },
    };
    const tryAcquire = async () => {
      takes += 1;
      return handle;
    };
    const bridge = { ...opened, lock: { tryAcquire } };

    for (const cycle of ["first", "second", "third"]) expect(await withCycleLock(bridge, async () => cycle)).toBe(cycle);
    expect({ takes, renewals, releases }).toEqual({ takes: 2, renewals: 1, releases: 3 });
  });

  it("warns of a release the state directory refused by its system error code, and returns what the cycle did", async () => {
    const harness = await startHarness();
    const { logger, warnings } = warningRecorder();
    const { bridge: opened } = await openHarnessBridge(harness, { logger });
    const handle: LockHandle = {
      renew: async () => true,
      release: async () => {
        throw Object.assign(new Error("ENOSPC: no space left on device"), { code: "ENOSPC" });
      },
    };
    const tryAcquire = async () => handle;
    expect(await withCycleLock({ ...opened, lock: { tryAcquire } }, async () => "done")).toBe("done");
    expect(warnings).toEqual([
      ["releasing the cycle lease failed; the next cycle of this process takes it again, another process once it runs out", { error: "ENOSPC" }],
    ]);
  });

  it("takes the lease anew when the one an earlier cycle could not release was lost meanwhile, rather than refusing the cycle", async () => {
    const harness = await startHarness();
    const { bridge: opened } = await openHarnessBridge(harness);
    const kept: LockHandle = {
      renew: async () => false,
      release: async () => {
        throw Object.assign(new Error("ENOSPC: no space left on device"), { code: "ENOSPC" });
      },
    };
    const fresh: LockHandle = { renew: async () => true, release: async () => undefined };
    const handles = [kept, fresh];
    const tryAcquire = async () => handles.shift();
    const bridge = { ...opened, lock: { tryAcquire } };

    expect(await withCycleLock(bridge, async () => "first")).toBe("first");
    expect(await withCycleLock(bridge, async () => "second")).toBe("second");
    expect(handles).toEqual([]);
  });

  it("refuses a cycle while another process holds the lease (exit 1), naming the holder, the state directory, what to do and when the lease runs out, before any provider call", async () => {
    const harness = await startHarness();
    const { bridge: other, settings } = await openHarnessBridge(harness);
    const held = await other.lock.tryAcquire(CYCLE_LOCK, CYCLE_LEASE_MS);
    expect(held).toBeDefined();
    const sent: string[] = [];
    const fetch = async (url: string) => {
      sent.push(url);
      throw new Error("must not be called");
    };
    const error = await runCycle((await openHarnessBridge(harness, { fetch })).bridge).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CliError);
    expect((error as CliError).exitCode).toBe(EXIT.failed);
    expect((error as Error).message).toBe(
      `another bridge process (pid ${process.pid} on this machine) is running a cycle, re-drive or conform-pii on this state directory ` +
        `(${settings.stateDir}): run this command again once it is done (a \`run --interval\` loop retries by itself). The lease of ` +
        `a run that has exited is taken over at once from the same Linux boot and pid namespace, else it expires within ${CYCLE_LEASE_MS / 1000} s of its last renewal`,
    );
    expect(sent).toEqual([]);
    await held?.release();
  });

  it("stops the whole cycle once its lease was lost: the cards walk reads nothing after the transactions cycle stopped for it", async () => {
    const harness = await startHarness();
    const settings = readLocalSettings(harness.env, harness.dir);
    // Another process takes the lease while this one reads its first page (as after a stop past the lease).
    const thief = new FileLock(settings.stateDir, { clock: { now: () => Date.now() + 10 * CYCLE_LEASE_MS }, steady: false });
    let stolen: LockHandle | undefined;
    const afterLoss: string[] = [];
    const fetch: FetchLike = async (url, init) => {
      if (stolen !== undefined) afterLoss.push(url);
      const response = await nodeHttpFetch(url, init);
      if (stolen === undefined && url.includes("/erp/transactions")) stolen = await thief.tryAcquire(CYCLE_LOCK, CYCLE_LEASE_MS);
      return response;
    };
    const bridge = await openLocalBridge(settings, { env: harness.env, logger: silentLogger, fetch });
    const error = await runCycle(bridge).catch((e: unknown) => e);
    expect(stolen).toBeDefined();
    expect((error as Error).message).toContain("was lost");
    expect((error as CliError).exitCode).toBe(EXIT.failed);
    expect(afterLoss.filter((url) => url.includes("/cards"))).toEqual([]);
    await stolen?.release();
  });

  it("checks the lease before each write of a cycle (events, snapshots and their vacuum, quarantine put and delete, acknowledge): a process stopped past it writes none", async () => {
    const harness = await startHarness();
    const { sent, fetch } = recordingFetch();
    const { bridge: opened, settings } = await openHarnessBridge(harness, { fetch });
    // The lease as another process left it after taking it over: `confirm` says this process holds it no longer.
    let held = true;
    const handle: LockHandle = { renew: async () => true, release: async () => undefined, confirm: async () => held };
    const bridge = { ...opened, lock: { tryAcquire: async () => handle } };
    const { publisher, snapshots, quarantine } = bridge.transactions;
    const record = { id: "q1", kind: "transaction" as const, entityId: "t1", reason: "invalid", raw: {}, at: "2026-03-01T10:00:00.000Z" };
    const event = {
      source: "qashio.bridge",
      detailType: "transaction.created",
      time: "2026-03-01T10:00:00.000Z",
      detail: { id: "e1", type: "transaction.created", schema_version: "1", tenant: "acme", occurred_at: "2026-03-01T10:00:00.000Z", subject: { type: "transaction", id: "t1" }, data: { object: {} } },
    } as unknown as BridgeEvent;
    const snapshot = { key: "transaction:t1" as const, hash: "h", object: {}, updatedAt: "2026-03-01T10:00:00.000Z" };

    await withCycleLock(bridge, async () => {
      await quarantine.put({ ...record, id: "q0" });
      held = false;
      const writes: [string, () => Promise<unknown>][] = [
        ["publish", () => publisher.publish([event])],
        ["putMany", () => snapshots.putMany([snapshot])],
        ["vacuum", () => snapshots.vacuum()],
        ["put", () => quarantine.put(record)],
        ["deleteMany", () => quarantine.deleteMany(["q0"])],
        // Unversioned (spec): sent late, it would mark synced a change another run listed meanwhile and nobody published.
        ["acknowledge", () => bridge.transactions.provider.acknowledgeTransactions(["7f0c8a9e-0000-4000-8000-000000000001"])],
      ];
      for (const [name, write] of writes) {
        const error = await write().then(() => undefined, (e: unknown) => e);
        expect(error, name).toBeInstanceOf(CycleLeaseLostError);
      }
    });

    expect(existsSync(settings.eventsFile) ? readFileSync(settings.eventsFile, "utf8") : "").toBe("");
    expect((await new FileSnapshotStore(settings.stateDir).getMany(["transaction:t1"])).size).toBe(0);
    expect((await new FileQuarantine(settings.stateDir).list()).map((r) => r.id)).toEqual(["q0"]);
    expect(sent.filter((url) => url.includes("/acknowledge"))).toEqual([]);
  });

  it("checks the lease before each compaction batch: a vacuum stopped past it copies no snapshot it read before over a newer one", async () => {
    const harness = await startHarness();
    const { bridge: opened, settings } = await openHarnessBridge(harness);
    let held = true;
    const handle: LockHandle = { renew: async () => true, release: async () => undefined, confirm: async () => held };
    const bridge = { ...opened, lock: { tryAcquire: async () => handle } };
    // Ten snapshots of 350 KB in one segment, one of them superseded: a vacuum copies the other nine two per 1 MiB batch.
    const keys = Array.from({ length: 10 }, (_, i) => `card:c${i}` as const);
    await new FileSnapshotStore(settings.stateDir).putMany(keys.map((key) => snapshotOf(key, 1, 350_000)));
    await new FileSnapshotStore(settings.stateDir).putMany([snapshotOf("card:c0", 2, 350_000)]);
    // The process stops between two batches, past its lease; another run takes it and stores a newer version of the
    // snapshot the last batch copies.
    const raw = bridge.snapshots as unknown as { compactBatch(from: unknown): Promise<number> };
    const compactBatch = raw.compactBatch.bind(raw);
    let batches = 0;
    raw.compactBatch = async (from) => {
      if (++batches === 2) {
        held = false;
        await new FileSnapshotStore(settings.stateDir).putMany([snapshotOf("card:c9", 3, 100)]);
      }
      return compactBatch(from);
    };

    const error = await withCycleLock(bridge, () => bridge.transactions.snapshots.vacuum()).then(
      () => undefined,
      (e: unknown) => e,
    );

    expect(error).toBeInstanceOf(CycleLeaseLostError);
    expect((await new FileSnapshotStore(settings.stateDir).getMany(["card:c9"])).get("card:c9")).toEqual(snapshotOf("card:c9", 3, 100));
  });

  it("fails a cycle whose reload of the snapshots under the lease fails, before any provider call: stale snapshots would publish changes again", async () => {
    const harness = await startHarness();
    const { sent, fetch } = recordingFetch();
    const { bridge } = await openHarnessBridge(harness, { fetch });
    sent.length = 0;
    vi.spyOn(bridge.snapshots, "reload").mockRejectedValueOnce(new Error("EIO: i/o error, read"));
    const error = await runCycle(bridge).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CycleFailedError);
    expect((error as Error).message).toContain("EIO: i/o error, read");
    expect(sent).toEqual([]);
    expect(existsSync(harness.eventsFile)).toBe(false);
  });

  it("passes on a lock failure that is no system error as it is, not as a state directory that takes no writes", async () => {
    const harness = await startHarness();
    const { bridge: opened } = await openHarnessBridge(harness);
    const failure = new TypeError("lock is broken");
    const bridge = { ...opened, lock: { tryAcquire: () => Promise.reject(failure) } };
    await expect(withCycleLock(bridge, async () => "never")).rejects.toBe(failure);
  });
});

describe("local bridge after a PII mode change", () => {
  const PASS_KEY = "transaction:~conform-pass";

  /** A bridge under full (and its events file) over a state directory holding the id a conform-pii pass under redact stored when it stopped. */
  async function bridgeAfterPassUnderRedact() {
    const harness = await startHarness();
    const settings = { ...readLocalSettings(harness.env, harness.dir), piiMode: "full" as const };
    const bridge = await openLocalBridge(settings, { env: harness.env, logger: silentLogger });
    const object = { pass: "0123456789abcdef", mode: "redact" };
    await new FileSnapshotStore(settings.stateDir).putMany([{ key: PASS_KEY, hash: contentHash(object), object, updatedAt: "2026-03-01T11:00:00.000Z" }]);
    const passReads = vi.spyOn(FileSnapshotStore.prototype, "getMany");
    // The bridge's own store, not the one `stored` reads through.
    const reads = () => passReads.mock.calls.filter(([keys], i) => keys.includes(PASS_KEY) && passReads.mock.contexts[i] === bridge.snapshots).length;
    const stored = async () => (await new FileSnapshotStore(settings.stateDir).getMany([PASS_KEY])).get(PASS_KEY)?.object;
    return { bridge, eventsFile: harness.eventsFile, passReads, reads, stored };
  }

  it("supersedes the pass under the cycle lease once per open bridge, as the transaction poller does once per container", async () => {
    const { bridge, reads, stored } = await bridgeAfterPassUnderRedact();
    expect((await runCycle(bridge)).complete).toBe(true);
    expect(await stored()).toEqual({ pass: expect.not.stringMatching(/^0123456789abcdef$/), mode: "full" });
    expect((await runCycle(bridge)).complete).toBe(true);
    await runRedrive(bridge);
    expect(reads()).toBe(1);
  });

  it("supersedes the pass before a re-drive too, when it is the open bridge's first run under the lease", async () => {
    const { bridge, reads, stored } = await bridgeAfterPassUnderRedact();
    await runRedrive(bridge);
    expect(reads()).toBe(1);
    expect(await stored()).toEqual({ pass: expect.not.stringMatching(/^0123456789abcdef$/), mode: "full" });
  });

  it("fails the cycle whose read of the pass id fails, before anything is written; the bridge's next cycle reads it again", async () => {
    const { bridge, eventsFile, passReads, reads, stored } = await bridgeAfterPassUnderRedact();
    passReads.mockRejectedValueOnce(new Error("EIO: i/o error, read"));
    // No provider failure the cards walk could go on past: the cycle stops there.
    const cardReads = vi.spyOn(bridge.cards.provider, "listErpCards");
    const failed = await runCycle(bridge).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(CycleFailedError);
    expect(cardReads).not.toHaveBeenCalled();
    expect((failed as Error).message).toContain("EIO: i/o error, read");
    expect(existsSync(eventsFile)).toBe(false);
    expect(await stored()).toMatchObject({ pass: "0123456789abcdef", mode: "redact" });
    expect((await runCycle(bridge)).events).toBeGreaterThan(0);
    expect(reads()).toBe(2);
    expect(await stored()).toMatchObject({ mode: "full" });
  });
});

describe("local bridge conform-pii errors", () => {
  it("maps a refused cursor or place to exit 2, a corrupt segment to a state directory problem (exit 2) and any other failure to exit 1", async () => {
    const harness = await startHarness();
    const settings = { ...readLocalSettings(harness.env, harness.dir), piiMode: "redact" as const };
    await runCycle(await openLocalBridge(settings, { env: harness.env, logger: silentLogger }));
    const open = () => openLocalBridge(settings, { env: harness.env, logger: silentLogger });

    const cursor = await runConformPii(await open(), "0123456789abcdef.000000000001-abcdef01:0").catch((e: unknown) => e);
    expect(cursor).toBeInstanceOf(UsageError);
    expect((cursor as UsageError).message).toBe(
      "--cursor refused: it is not of the form this version prints (cursors of earlier versions record no PII mode, so none is taken): " +
        "run `npm run bridge -- conform-pii` without --cursor to start over",
    );
    vi.spyOn(FileSnapshotStore.prototype, "scan").mockRejectedValueOnce(new SnapshotCursorError());
    const place = await runConformPii(await open()).catch((e: unknown) => e);
    expect(place).toBeInstanceOf(UsageError);
    expect((place as UsageError).message).toContain("--cursor is not a cursor of this state directory's snapshots");

    vi.spyOn(FileSnapshotStore.prototype, "scan").mockRejectedValueOnce(new Error("EIO: i/o error, read"));
    const failed = await runConformPii(await open()).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(CycleFailedError);
    expect((failed as CycleFailedError).exitCode).toBe(EXIT.failed);
    expect((failed as Error).message).toBe(
      "conform-pii stopped: Error: EIO: i/o error, read; snapshots rewritten so far keep their new form: run conform-pii again",
    );

    const segment = join(settings.stateDir, "snapshots", "seg-999999999999-deadbeef.log");
    writeFileSync(segment, "not json\n");
    const corrupt = await runConformPii(await open()).catch((e: unknown) => e);
    expect(corrupt).toBeInstanceOf(ConfigError);
    expect((corrupt as ConfigError).exitCode).toBe(EXIT.usage);
    expect((corrupt as Error).message).toContain(`A file in the state directory (${settings.stateDir}) cannot be used:\n  - BRIDGE_STATE_DIR: Snapshot segment header is unreadable (${segment}); restore it or move it aside`);
    expect((corrupt as Error).message).not.toContain("Invalid settings");
  });
});


describe("LocalTokenStore (the token file, seeded from QASHIO_REFRESH_TOKEN)", () => {
  let dir: string;
  tempDirPerTest("local-tokens-", (made) => (dir = made));

  /** The error a load gives once the token file is gone after this store held tokens: the spent seed is not sent. */
  async function expectRemovedError(store: LocalTokenStore): Promise<void> {
    const error = await store.load().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TokenFileError);
    expect((error as TokenFileError).message).toContain("removed while this process was running");
    expect((error as CliError).exitCode).toBe(EXIT.reauthorize);
    expect(await store.usesSeed()).toBe(false);
    expect(existsSync(store.file)).toBe(false);
  }

  it("lets the seed stand in only until it saved tokens: the token file removed after, the spent seed never comes back", async () => {
    const store = new LocalTokenStore(new FileTokenStore(dir), "rt-seed");
    expect(await store.load()).toEqual({ refreshToken: "rt-seed" });
    expect(await store.usesSeed()).toBe(true);
    await store.save({ accessToken: "at-2", refreshToken: "rt-2" });
    expect(await store.usesSeed()).toBe(false);
    rmSync(store.file);
    await expectRemovedError(store);
  });

  it("never lets the seed stand in once it found tokens in the file, even when the file is removed under it", async () => {
    await new FileTokenStore(dir).save({ accessToken: "at-5", refreshToken: "rt-5" });
    const store = new LocalTokenStore(new FileTokenStore(dir), "rt-seed");
    expect(await store.usesSeed()).toBe(false);
    expect(await store.load()).toEqual({ accessToken: "at-5", refreshToken: "rt-5" });
    rmSync(store.file);
    await expectRemovedError(store);
  });
});
