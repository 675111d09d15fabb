import { randomBytes, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { EventBridgeClient, PutEventsCommand, type PutEventsRequestEntry } from "@aws-sdk/client-eventbridge";
import { DeleteCommand, ScanCommand } from "@aws-sdk/lib-dynamodb";
import { Tracer } from "@aws-lambda-powertools/tracer";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { LambdaConfigurationError, ProviderClientRejectedError } from "../../shared/aws/errors.js";
import { truncationsOf } from "../../shared/aws/event-size.js";
import { ReauthorizationNeededError, parseEventDetail } from "../../shared/bridge/index.js";
import { PutSecretValueCommand } from "@aws-sdk/client-secrets-manager";
import { ACCESS_TOKEN_TTL_SECONDS, SANDBOX_IN_PROCESS_URL } from "../../sandbox/index.js";
import { exchangeCode } from "../../shared/qashio/auth/oauth.js";
import { OAuthTokenProvider } from "../../shared/qashio/auth/token-provider.js";
import type { BridgeEventDetail } from "../../shared/bridge/ports.js";
import { DynamoLeaseLock } from "../../shared/aws/lease-lock.js";
import { DynamoQuarantine } from "../../shared/aws/quarantine.js";
import { DynamoSnapshotStore } from "../../shared/aws/snapshot-store.js";
import { contentHash } from "../../shared/bridge/hash.js";
import { KEPT_RECORDS_NAMED, recordQashioId } from "../../shared/bridge/redrive.js";
import { leaseItemKey, leaseNames, piiSaltItemKey } from "../../shared/aws/keys.js";
import { awsError } from "../aws/support/fake-secrets-manager.js";
import type { PollResult } from "../../shared/aws/handlers.js";
import type { AwsClients } from "../../shared/aws/runtime.js";
import type { PollEvent } from "../../shared/aws/poll-event.js";
import { localDynamoClient } from "../aws/support/dynamo.js";
import { fillAccounts } from "../sandbox/helpers.js";
import { runbookSaid, runbookSection } from "../runbook-section.js";
import { bare401For, createHarness, emfValues, lambdaContext, levelsLogged, REDIRECT_URI, revokeFamily, subjectIds, TENANT, type Harness } from "./support/harness.js";
import { CYCLE_SAFETY_MARGIN_MS, MIN_POLLER_TIMEOUT_MS } from "../../shared/aws/config.js";
import { DEFAULT_SECRET_CACHE_TTL_MS, SecretsManagerTokenStore } from "../../shared/aws/token-store.js";

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => h.close());

/** What `authorize --secret-id` does: a new authorization, written as a new secret version. */
async function reonboard(): Promise<void> {
  const code = h.sandbox.control.issueAuthorizationCode({ companyId: h.companyId, redirectUri: REDIRECT_URI });
  const oauth = { baseUrl: SANDBOX_IN_PROCESS_URL, clientId: "sandbox-client", clientSecret: "sandbox-secret", fetch: h.sandbox.fetch };
  const tokens = await exchangeCode(oauth, { code, redirectUri: REDIRECT_URI });
  await h.secrets.client.send(
    new PutSecretValueCommand({ SecretId: h.secrets.secretId, SecretString: JSON.stringify({ ...h.secrets.current(), refresh_token: tokens.refresh_token }) }),
  );
}

/** The log lines of skipped invocations (docs/runbook.md quotes their message), parsed. */
function skipLines(output: readonly string[]): Record<string, unknown>[] {
  return output.map((line) => JSON.parse(line) as Record<string, unknown>).filter((doc) => doc["message"] === "Another invocation is running this cycle; skipping");
}

/** The log line of a held refresh token a later invocation stored (docs/runbook.md quotes it). */
const HELD_TOKEN_STORED = "The rotated refresh token held in memory is stored now; the token family lives on";

const company = () => {
  const data = h.sandbox.control.company(h.companyId);
  if (data === undefined) throw new Error("no company");
  return data;
};

describe("poll-transactions handler", () => {
  it("publishes transaction.created for the whole backlog and leaves nothing pending at the provider", async () => {
    const backlog = company().transactions.all().filter((t) => t.client_sync_status !== "synced").map((t) => t.id);
    const result = await h.poller("transactions")();
    expect(result).toMatchObject({ kind: "transactions", status: "completed", outcome: "complete", published: backlog.length });
    expect(subjectIds(h.published, "transaction.created")).toEqual(new Set(backlog));
    expect(h.published.every((e) => e.source === "qashio.bridge" && e.detail.tenant === TENANT)).toBe(true);
    expect(h.pendingAtProvider()).toBe(0);
  });

  it("publishes every event to the bus EVENT_BUS_NAME names, not another the runtime could build from the config", async () => {
    const result = await h.poller("transactions")();
    expect(result).toMatchObject({ status: "completed", published: expect.any(Number) });
    const buses = h.eventBridge.commandCalls(PutEventsCommand).flatMap((call) => (call.args[0].input.Entries ?? []).map((entry) => entry.EventBusName));
    expect(buses.length).toBeGreaterThan(0);
    expect(new Set(buses)).toEqual(new Set([h.env["EVENT_BUS_NAME"]]));
  });

  it("counts each token refresh of a poller once in TokenRefreshes (the dashboard's refreshes line)", async () => {
    const before = h.refreshTokensPresented.length;
    expect((await h.poller("transactions")()).status).toBe("completed");
    const refreshes = h.refreshTokensPresented.length - before;
    expect(refreshes).toBeGreaterThan(0);
    expect(emfValues(h.output, "TokenRefreshes").reduce((sum, n) => sum + n, 0)).toBe(refreshes);
  });

  it("publishes transaction.changed with the changed path after the provider changes a transaction", async () => {
    const poll = h.poller("transactions");
    await poll();
    const target = company().transactions.get(h.published[0]?.detail.subject.id ?? "");
    if (target === undefined) throw new Error("no published transaction");
    h.sandbox.control.state.patchTransaction(company(), target.id, { memo: "Team lunch, client visit" });
    h.published.length = 0;
    const result = await poll();
    expect(result.published).toBe(1);
    const [changed] = h.published;
    expect(changed?.detailType).toBe("transaction.changed");
    expect(changed?.detail.subject.id).toBe(target.id);
    expect(changed?.detail.data.changes).toContainEqual(expect.objectContaining({ path: "/memo", after: "Team lunch, client visit" }));
    expect(h.pendingAtProvider()).toBe(0);
  });

  it("publishes an oversized change trimmed with a marker, still valid against the event schema", async () => {
    const poll = h.poller("transactions");
    await poll();
    const target = company().transactions.get(h.published[0]?.detail.subject.id ?? "");
    if (target === undefined) throw new Error("no published transaction");
    const lineItems = Array.from({ length: 1_500 }, (_, i) => ({ id: `li_${i}`, description: `Item ${i} ${"x".repeat(80)}`, amount: i }));
    h.sandbox.control.state.patchTransaction(company(), target.id, { line_items: lineItems });
    h.published.length = 0;
    expect(await poll()).toMatchObject({ published: 1, quarantined: 0 });
    const [event] = h.published;
    expect(event?.detailType).toBe("transaction.changed");
    expect(truncationsOf(event?.detail as BridgeEventDetail).length).toBeGreaterThan(0);
    expect(parseEventDetail(event?.detail).success).toBe(true);
    expect(h.pendingAtProvider()).toBe(0);
  });

  it("warns through the function's logger of an event reduced to fit the bus and of a snapshot too large for its item, stored hash-only", async () => {
    const target = company().transactions.all().find((t) => t.client_sync_status === "not_synced");
    if (target === undefined) throw new Error("no pending transaction");
    // Random text barely compresses: the line items make the event too large until trimmed, the snapshot too large gzipped.
    const lineItems = Array.from({ length: 1_500 }, (_, i) => ({ id: `li_${i}`, description: randomBytes(300).toString("base64"), amount: i }));
    h.sandbox.control.state.patchTransaction(company(), target.id, { line_items: lineItems });
    expect(await h.poller("transactions")()).toMatchObject({ status: "completed", quarantined: 0 });
    const docs = h.output.map((line) => JSON.parse(line) as Record<string, unknown>);
    const warned = (message: string) => docs.find((doc) => doc["message"] === message);
    // The invocation's own logger (its request id, the tenant key), not a silent default.
    const invocation = { level: "WARN", tenant: TENANT, function_request_id: expect.any(String) };
    expect(warned("Event reduced to fit EventBridge's entry limit")).toMatchObject({ ...invocation, type: "transaction.created" });
    expect(warned("Snapshot too large for DynamoDB even compressed; stored hash-only")).toMatchObject({ ...invocation, compressedBytes: expect.any(Number) });
  });

  it("rides out provider faults (500 on a list, 429 on acknowledge) within the cycle", async () => {
    h.sandbox.control.state.faults.add({ method: "GET", pathPrefix: "/public/v1/erp/transactions", status: 500, count: 2 });
    h.sandbox.control.state.faults.add({ method: "POST", pathPrefix: "/public/v1/erp/transactions", status: 429, count: 1, retryAfter: 1 });
    const result = await h.poller("transactions")();
    expect(result.outcome).toBe("complete");
    expect(h.pendingAtProvider()).toBe(0);
    // Each retried failure counted once, by status class (the dimension the dashboard groups by).
    const retried = h.output
      .filter((line) => line.includes('"ProviderErrors"'))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .map((doc) => [doc["status_class"], doc["ProviderErrors"]]);
    expect(retried.sort()).toEqual([
      ["4xx", 1],
      ["5xx", 2],
    ]);
  });

  it("fails the invocation when the provider keeps failing its list past the deadline before anything is pulled, so an alarm sees the outage", async () => {
    // A 1-minute schedule (60 s timeout): the provider throttles every list with a Retry-After the budget cannot wait out.
    // A completed `deadline` cycle would fail no invocation and send no SyncLagSeconds point: every alarm stays OK.
    h.sandbox.control.state.faults.add({ method: "GET", pathPrefix: "/public/v1/erp/transactions", status: 429, count: 1000, retryAfter: 60 });
    const backlog = h.pendingAtProvider();
    const poll = h.poller("transactions");
    await expect(poll(undefined, lambdaContext(60_000))).rejects.toThrow(/list not_synced transactions failed \(RateLimitedError 429/);
    expect(h.pendingAtProvider()).toBe(backlog);
    // A stop for want of time without a failing provider is still a deadline, not a failure: a new container whose
    // Init phase ran within its first invocation, which has 30 s of its 60 s left (a warm one would be refused).
    h.sandbox.control.state.faults.clear();
    const late = h.poller("transactions", { processUptimeMs: () => MIN_POLLER_TIMEOUT_MS - CYCLE_SAFETY_MARGIN_MS });
    expect(await late(undefined, lambdaContext(CYCLE_SAFETY_MARGIN_MS))).toMatchObject({ status: "completed", outcome: "deadline", published: 0 });
  });

  it("sends nothing to the provider from a warm container until a 429's hour-long wait has passed, then delivers everything", async () => {
    const backlog = h.pendingAtProvider();
    let sent = 0;
    const poll = h.poller("transactions", { fetch: (url, init) => ((sent += 1), h.fetch(url, init as RequestInit)) });
    h.sandbox.control.state.faults.add({ method: "GET", pathPrefix: "/public/v1/erp/transactions", status: 429, count: 1, retryAfter: 3600 });
    await expect(poll()).rejects.toThrow(/list not_synced transactions failed \(RateLimitedError 429: GET \/public\/v1\/erp\/transactions answered 429; errors: \(request\) RATE_LIMITED\)/);
    // The next tick, ten minutes on, in the same container: refused at once, unsent, with the wait left.
    h.sandbox.control.advanceClock(600);
    const before = sent;
    await expect(poll()).rejects.toThrow(/list not_synced transactions failed \(RateLimitedError 429: GET \/public\/v1\/erp\/transactions was not sent: .*, 3000 s from now\)/);
    expect(sent).toBe(before);
    expect(h.pendingAtProvider()).toBe(backlog);
    h.sandbox.control.advanceClock(3000);
    expect(await poll()).toMatchObject({ status: "completed", outcome: "complete" });
    expect(h.pendingAtProvider()).toBe(0);
  });

  it("re-sends the same event ids after a crash between publishing and acknowledging, then finishes", async () => {
    const backlog = h.pendingAtProvider();
    // EventBridge takes the first batch, then the call fails as a whole: the invocation dies before acknowledging.
    let calls = 0;
    const accepted: PutEventsRequestEntry[] = [];
    h.eventBridge.on(PutEventsCommand).callsFake((input: { Entries: PutEventsRequestEntry[] }) => {
      calls += 1;
      accepted.push(...input.Entries);
      if (calls === 2) throw awsError("AccessDeniedException", 400);
      return { FailedEntryCount: 0, Entries: input.Entries.map(() => ({ EventId: "x" })) };
    });
    await expect(h.poller("transactions")()).rejects.toThrow();
    expect(h.pendingAtProvider()).toBeGreaterThan(0);

    h.eventBridge.on(PutEventsCommand).callsFake((input: { Entries: PutEventsRequestEntry[] }) => {
      accepted.push(...input.Entries);
      return { FailedEntryCount: 0, Entries: input.Entries.map(() => ({ EventId: "x" })) };
    });
    const result = await h.poller("transactions")();
    expect(result.status).toBe("completed");
    expect(h.pendingAtProvider()).toBe(0);
    const details = accepted.map((entry) => JSON.parse(entry.Detail ?? "{}") as { id: string; subject: { id: string } });
    expect(new Set(details.map((d) => d.subject.id)).size).toBe(backlog);
    // A duplicate delivery always carries the id of the first one.
    const idBySubject = new Map<string, string>();
    for (const d of details) {
      expect(idBySubject.get(d.subject.id) ?? d.id).toBe(d.id);
      idBySubject.set(d.subject.id, d.id);
    }
  });

  it("stops at the deadline the invocation's remaining time leaves after the safety margin, and the next invocation goes on", async () => {
    const backlog = h.pendingAtProvider();
    // A 60 s function whose Init phase ran within the container's first invocation: 30 s of it left at entry.
    const poll = h.poller("transactions", { processUptimeMs: () => MIN_POLLER_TIMEOUT_MS - CYCLE_SAFETY_MARGIN_MS });
    expect(await poll(undefined, lambdaContext(CYCLE_SAFETY_MARGIN_MS))).toMatchObject({ status: "completed", outcome: "deadline", published: 0 });
    expect(h.pendingAtProvider()).toBe(backlog);
    expect(await poll()).toMatchObject({ status: "completed", outcome: "complete", published: backlog });
  });

  it("reports what the provider listed when the cycle first read it, so a manual invoke that stopped at its deadline shows what it left (as run --once does)", async () => {
    const listed = () => ({ not_synced: company().transactions.countByStatus("not_synced"), outdated: company().transactions.countByStatus("outdated") });
    const before = listed();
    const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
      // The first acknowledge answers after the deadline (60 s remaining less the safety margin): one page done.
      if (url.endsWith("/transactions/acknowledge")) h.sandbox.control.advanceClock((60_000 - CYCLE_SAFETY_MARGIN_MS) / 1_000 + 1);
      return h.fetch(input, init);
    };
    const stopped = await h.poller("transactions", { fetch })(undefined, lambdaContext(60_000));
    // Stopped after its first page of the new transactions: the changed ones' list was not read, so it has no count.
    expect(stopped).toMatchObject({ status: "completed", outcome: "deadline", backlog: { not_synced: before.not_synced } });
    expect(stopped.backlog).not.toHaveProperty("outdated");
    expect(stopped.published).toBeLessThan(before.not_synced + before.outdated);
    // How long it ran: past its deadline, by the acknowledge that answered after it.
    expect(stopped.durationMs).toBeGreaterThan(60_000 - CYCLE_SAFETY_MARGIN_MS);
    // The function log's line of the cycle carries it too (Logs Insights over past cycles).
    const finished = h.output.map((line) => JSON.parse(line) as Record<string, unknown>).find((doc) => doc["message"] === "Cycle finished");
    expect(finished).toMatchObject({ outcome: "deadline", backlog: { not_synced: before.not_synced } });
    // The next cycle counts what is left; a card cycle lists no counts, and its result names none.
    const left = listed();
    expect(left.not_synced).toBeLessThan(before.not_synced);
    expect(await h.poller("transactions")()).toMatchObject({ outcome: "complete", backlog: left });
    expect(await h.poller("cards")()).not.toHaveProperty("backlog");
  });

  it("logs each completed invocation's result at info, the level a function logs at by default, not only at debug", async () => {
    const lines = () => h.output.map((line) => JSON.parse(line) as Record<string, unknown>);
    const invocations = [
      ["Cycle finished", undefined],
      ["Re-drive finished", { action: "redrive" }],
      ["PII conform pass finished", { action: "conform-pii" }],
    ] as const;
    for (const [message, event] of invocations) {
      const result = await h.poller("transactions")(event);
      expect(result.status).toBe("completed");
      // The harness logs at DEBUG: a line at debug would be here too, and missing from a function at its default INFO.
      expect(lines().filter((doc) => doc["message"] === message)).toEqual([expect.objectContaining({ level: "INFO", ...result })]);
    }
  });

  it("names the action a failed invocation was asked for on its failure line, as its result would: a hand-made re-drive's failure is no failed scheduled cycle", async () => {
    const failures = () => h.output.map((line) => JSON.parse(line) as Record<string, unknown>).filter((doc) => doc["message"] === "Cycle failed");
    const events = [undefined, { action: "redrive" }, { action: "conform-pii" }] as const;
    for (const event of events) {
      // A new container each, whose first secret read is refused.
      h.secrets.failNext("GetSecretValue", awsError("AccessDeniedException"));
      await expect(h.poller("transactions")(event)).rejects.toMatchObject({ name: "SecretStoreError" });
    }
    const lines = failures();
    expect(lines).toHaveLength(3);
    expect(lines[0]).not.toHaveProperty("action");
    expect(lines.slice(1)).toMatchObject([{ action: "redrive" }, { action: "conform-pii" }]);
  });

  it("holds its cycle lease past the deadline while it still works on the page in hand, so no other invocation overlaps it", async () => {
    const lock = new DynamoLeaseLock({ doc: h.table.doc, tableName: h.table.tableName, clock: h.clock });
    let overlapping: boolean | undefined;
    const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
      if (overlapping === undefined && url.endsWith("/transactions/acknowledge")) {
        // The first acknowledge answers a second after the deadline (60 s remaining less the safety margin).
        h.sandbox.control.advanceClock((60_000 - CYCLE_SAFETY_MARGIN_MS) / 1_000 + 1);
        const other = await lock.tryAcquire(leaseNames.transactionsCycle(TENANT), 60_000);
        overlapping = other !== undefined;
        await other?.release();
      }
      return h.fetch(input, init);
    };
    expect(await h.poller("transactions", { fetch })()).toMatchObject({ status: "completed", outcome: "deadline" });
    expect(overlapping).toBe(false);
    // Released once the cycle ended.
    expect(await lock.tryAcquire(leaseNames.transactionsCycle(TENANT), 60_000)).toBeDefined();
  });

  it.each([
    ["ProvisionedThroughputExceededException", () => awsError("ProvisionedThroughputExceededException")],
    // Node names a network failure a plain Error: its system code says what happened.
    ["ECONNREFUSED", () => Object.assign(new Error("connect ECONNREFUSED 10.0.0.1:443"), { code: "ECONNREFUSED" })],
  ])("completes a cycle whose lease release fails (%s), logging the failure by name: the lease then runs out by itself", async (name, failure) => {
    const cycleLease = leaseItemKey(leaseNames.transactionsCycle(TENANT));
    const clients = h.clients((dynamo) =>
      dynamo.middlewareStack.add(
        (next, context) => async (args) => {
          const key = (args.input as { Key?: { pk?: { S?: string } } }).Key;
          if (String(context.commandName).startsWith("Delete") && key?.pk?.S === cycleLease.pk) throw failure();
          return next(args);
        },
        { step: "build", name: "failCycleLeaseRelease" },
      ),
    );
    expect(await h.poller("transactions", { clients })()).toMatchObject({ status: "completed", outcome: "complete" });
    const warning = h.output.map((line) => JSON.parse(line) as Record<string, unknown>).find((doc) => doc["message"] === "Could not release the cycle lease; it will expire");
    expect(warning).toMatchObject({ kind: "transactions", error: name });
    const lock = new DynamoLeaseLock({ doc: h.table.doc, tableName: h.table.tableName, clock: h.clock });
    expect(await lock.tryAcquire(leaseNames.transactionsCycle(TENANT), 60_000)).toBeUndefined();
  });

  it("starts no token refresh whose lease would outlast the call's deadline: the cycle stops at its deadline with the refresh token unspent", async () => {
    await h.poller("transactions")();
    const presented = h.refreshTokensPresented.length;
    // The access token is due for a refresh 60 s before it expires, and then too close to expiry to outlast a call
    // (8 s left, the request timeout is 10 s); the cycle's deadline falls 4 s after that.
    const shortOfExpiryS = ACCESS_TOKEN_TTL_SECONDS - 8;
    const context = lambdaContext((shortOfExpiryS + 4) * 1_000 + CYCLE_SAFETY_MARGIN_MS);
    let lists = 0;
    const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const response = await h.fetch(input, init);
      // After the first list: the token is due, and the next call still fits in the calls' grace, but a refresh under
      // its 30 s lease would not, and would run into the last seconds of the invocation.
      if ((init?.method ?? "GET") === "GET" && ++lists === 1) h.sandbox.control.advanceClock(shortOfExpiryS);
      return response;
    };
    expect(await h.poller("transactions", { fetch })(undefined, context)).toMatchObject({ status: "completed", outcome: "deadline" });
    expect(h.refreshTokensPresented).toHaveLength(presented);
    // The next tick refreshes as usual.
    expect(await h.poller("transactions")()).toMatchObject({ status: "completed", outcome: "complete" });
    expect(h.refreshTokensPresented).toHaveLength(presented + 1);
  });

  it("sends a cycle's acknowledge with the access token still valid for the call when only its early refresh fell on the deadline", async () => {
    await h.poller("transactions")();
    const presented = h.refreshTokensPresented.length;
    // Due for its refresh 60 s before it expires; the cycle's deadline falls 5 s after that, with 59 s of the token left.
    const dueInS = ACCESS_TOKEN_TTL_SECONDS - 60;
    const context = lambdaContext((dueInS + 5) * 1_000 + CYCLE_SAFETY_MARGIN_MS);
    let lists = 0;
    const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const response = await h.fetch(input, init);
      if ((init?.method ?? "GET") === "GET" && ++lists === 1) h.sandbox.control.advanceClock(dueInS + 1);
      return response;
    };
    expect(await h.poller("transactions", { fetch })(undefined, context)).toMatchObject({ status: "completed", outcome: "complete" });
    // No refresh started (its lease would have outlasted the deadline), and nothing left to pull again.
    expect(h.refreshTokensPresented).toHaveLength(presented);
    expect(h.pendingAtProvider()).toBe(0);
  });

  it("ends no invocation while a token refresh a page read ahead started is still unsaved: a frozen container would lose the new refresh token", async () => {
    // Two pages: the second is read ahead while the first batch is published.
    h.sandbox.control.reset({ transactions: 150, companyId: h.companyId });
    let lists = 0;
    let refreshes = 0;
    let answerHeld = false;
    let answer!: () => void;
    const gate = new Promise<void>((resolve) => (answer = resolve));
    const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
      const response = await h.fetch(input, init);
      // The read-ahead's refresh: the provider rotated, its answer is on the way when the batch fails.
      if (url.endsWith("/oauth2/token") && ++refreshes === 2) {
        answerHeld = true;
        await gate;
      }
      // After the first list the access token has expired: reading the next page ahead refreshes it.
      if ((init?.method ?? "GET") === "GET" && url.includes("/erp/transactions") && ++lists === 1) h.sandbox.control.advanceClock(ACCESS_TOKEN_TTL_SECONDS + 1);
      return response;
    };
    h.eventBridge.on(PutEventsCommand).rejects(awsError("AccessDeniedException", 400));
    let settledWhileHeld = false;
    const invocation = h
      .poller("transactions", { fetch })(undefined, lambdaContext(2 * 3_600_000))
      .then(
        () => undefined,
        (error: unknown) => error,
      )
      .finally(() => (settledWhileHeld = answerHeld && !answered));
    let answered = false;
    // Time enough for the failed invocation to end, were it not waiting for the refresh it left in flight.
    const started = Date.now();
    while (!settledWhileHeld && Date.now() - started < 2_000) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(answerHeld).toBe(true);
    answered = true;
    answer();
    // The batch's publish failed; the refresh it left running was stored before the invocation ended.
    expect(await invocation).toMatchObject({ name: "CycleAbortedError", message: expect.stringMatching(/publish/) });
    // Returned to Lambda (the container frozen, maybe never thawed) only once the new refresh token was stored.
    expect(settledWhileHeld).toBe(false);
    expect(new Set(h.refreshTokensPresented).size).toBe(h.refreshTokensPresented.length);
    expect(await h.familyStillValid()).toBe(true);
  });

  it("starts no token refresh for a call the invocation left behind once it has settled: a container frozen mid-refresh would lose the new refresh token", async () => {
    // Two pages: the second is read ahead while the first batch is published, and left behind when the publish fails.
    h.sandbox.control.reset({ transactions: 150, companyId: h.companyId });
    let lists = 0;
    let aheadHeld = false;
    let releaseAhead!: () => void;
    const gate = new Promise<void>((resolve) => (releaseAhead = resolve));
    const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
      // The read-ahead's GET is slow to answer: still on its way when the invocation returns.
      if ((init?.method ?? "GET") === "GET" && url.includes("/erp/transactions") && ++lists === 2) {
        aheadHeld = true;
        await gate;
      }
      return h.fetch(input, init);
    };
    const replays: Promise<unknown>[] = [];
    const original = OAuthTokenProvider.prototype.refreshAfterUnauthorized;
    vi.spyOn(OAuthTokenProvider.prototype, "refreshAfterUnauthorized").mockImplementation(function (this: OAuthTokenProvider, ...args) {
      const replay = original.apply(this, args);
      replays.push(replay.catch(() => undefined));
      return replay;
    });
    h.eventBridge.on(PutEventsCommand).rejects(awsError("AccessDeniedException", 400));
    const poll = h.poller("transactions", { fetch });
    const failed = await poll(undefined, lambdaContext(2 * 3_600_000)).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failed).toMatchObject({ name: "CycleAbortedError", message: expect.stringMatching(/publish/) });
    // Returned to Lambda with a call of the invocation still running: the container may freeze any moment now.
    expect(aheadHeld).toBe(true);
    const presentedAtReturn = h.refreshTokensPresented.length;
    // The left-behind GET is answered 401 (its access token expired meanwhile), which asks for a refresh.
    h.sandbox.control.advanceClock(ACCESS_TOKEN_TTL_SECONDS + 1);
    releaseAhead();
    const started = Date.now();
    while (replays.length === 0 && Date.now() - started < 2_000) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(replays).toHaveLength(1);
    await Promise.all(replays);
    // No refresh token was spent after the invocation returned: nothing was left between spending one and storing it.
    expect(h.refreshTokensPresented).toHaveLength(presentedAtReturn);
    // The container's next invocation refreshes as usual (its access token has expired).
    await poll(undefined, lambdaContext(2 * 3_600_000)).catch(() => undefined);
    expect(h.refreshTokensPresented.length).toBeGreaterThan(presentedAtReturn);
    expect(new Set(h.refreshTokensPresented).size).toBe(h.refreshTokensPresented.length);
    expect(await h.familyStillValid()).toBe(true);
  });

  it.each([
    ["ProvisionedThroughputExceededException", Object.assign(new Error("Rate exceeded"), { name: "ProvisionedThroughputExceededException" })],
    // Node names a network failure a plain Error: its system code says what happened.
    ["ECONNREFUSED", Object.assign(new Error("connect ECONNREFUSED 10.0.0.1:443"), { code: "ECONNREFUSED" })],
  ])("still reports a cycle whose quarantine count fails (%s), logging the failure by name", async (name, failure) => {
    vi.spyOn(DynamoQuarantine.prototype, "size").mockRejectedValue(failure);
    expect(await h.poller("transactions")()).toMatchObject({ status: "completed", outcome: "complete" });
    const warning = h.output.map((line) => JSON.parse(line) as Record<string, unknown>).find((doc) => doc["message"] === "Could not count the quarantine");
    expect(warning).toMatchObject({ level: "WARN", kind: "transactions", error: name });
  });

  it("skips a re-drive while a transaction cycle holds its lease, saying which action it skipped and why (the runbook's result)", async () => {
    const lock = new DynamoLeaseLock({ doc: h.table.doc, tableName: h.table.tableName, clock: h.clock });
    const lease = await lock.tryAcquire(leaseNames.transactionsCycle(TENANT), 60_000);
    const skipped = await h.poller("transactions")({ action: "redrive" });
    expect(skipped).toEqual({ kind: "transactions", status: "skipped", action: "redrive", reason: "lease_held" });
    // As `aws lambda invoke` prints it (docs/runbook.md, Quarantine).
    expect(JSON.stringify(skipped)).toBe('{"kind":"transactions","status":"skipped","action":"redrive","reason":"lease_held"}');
    // The log line names the action it skipped too, not only the cycle lease's kind (docs/runbook.md quotes its text).
    expect(skipLines(h.output).at(-1)).toMatchObject({ level: "INFO", kind: "transactions", action: "redrive" });
    await lease?.release();
  });

  it("skips when another invocation holds the tenant's transaction cycle lease", async () => {
    const lock = new DynamoLeaseLock({ doc: h.table.doc, tableName: h.table.tableName, clock: h.clock });
    const lease = await lock.tryAcquire(leaseNames.transactionsCycle(TENANT), 60_000);
    expect(await h.poller("transactions")()).toEqual({ kind: "transactions", status: "skipped", reason: "lease_held" });
    expect(h.published).toHaveLength(0);
    await lease?.release();
    expect((await h.poller("transactions")()).status).toBe("completed");
  });

  it("runs a cycle of one kind while the other kind's cycle holds its lease: each kind has a lease of its own", async () => {
    const lock = new DynamoLeaseLock({ doc: h.table.doc, tableName: h.table.tableName, clock: h.clock });
    const transactionsCycle = await lock.tryAcquire(leaseNames.transactionsCycle(TENANT), 60_000);
    expect(await h.poller("cards")()).toMatchObject({ kind: "cards", status: "completed" });
    await transactionsCycle?.release();
    const cardsCycle = await lock.tryAcquire(leaseNames.cardsCycle(TENANT), 60_000);
    expect(await h.poller("transactions")()).toMatchObject({ kind: "transactions", status: "completed" });
    await cardsCycle?.release();
  });

  it("logs a warm skipped invocation, which emits no metric, in structured JSON only, Powertools' own warning at debug level", async () => {
    expect((await h.poller("transactions")()).status).toBe("completed");
    const lock = new DynamoLeaseLock({ doc: h.table.doc, tableName: h.table.tableName, clock: h.clock });
    const lease = await lock.tryAcquire(leaseNames.transactionsCycle(TENANT), 60_000);
    h.output.length = 0;
    expect(await h.poller("transactions")()).toEqual({ kind: "transactions", status: "skipped", reason: "lease_held" });
    await lease?.release();
    const docs = h.output.map((line) => JSON.parse(line) as Record<string, unknown>);
    const noMetrics = docs.find((doc) => String(doc["message"]).startsWith("No application metrics to publish"));
    expect(noMetrics).toMatchObject({ level: "DEBUG", tenant: TENANT });
  });

  it("reuses the shared access token across containers instead of refreshing per invocation", async () => {
    await h.poller("transactions")();
    await h.poller("cards")();
    await h.poller("transactions")();
    expect(h.refreshTokensPresented).toHaveLength(1);
    expect(h.secrets.versionCount).toBe(2);
  });

  it("goes on when Secrets Manager refuses the rotated refresh token: it is held in the table, counted, and written by the next refresh", async () => {
    const first = h.secrets.current().refresh_token;
    h.secrets.failNext("PutSecretValue", awsError("AccessDeniedException"));
    expect((await h.poller("transactions")()).status).toBe("completed");
    expect(h.secrets.current().refresh_token).toBe(first);
    expect(h.output.some((line) => line.includes('"TokenSecretWriteFailed"'))).toBe(true);
    expect(h.output.join("\n")).toContain("it is held in the table");
    // Another container, after the access token expired, refreshes with the held token (not the spent first one).
    h.sandbox.control.advanceClock(ACCESS_TOKEN_TTL_SECONDS + 1);
    expect((await h.poller("cards")()).status).toBe("completed");
    expect(h.refreshTokensPresented).toHaveLength(2);
    expect(h.refreshTokensPresented[1]).not.toBe(first);
    expect(h.secrets.current().refresh_token).not.toBe(first);
    expect(await h.familyStillValid()).toBe(true);
  });

  it("keeps using the held refresh token after an operator writes a new secret version that keeps the spent one (pii_salt replaced)", async () => {
    const first = h.secrets.current().refresh_token;
    h.secrets.failNext("PutSecretValue", awsError("AccessDeniedException"));
    expect((await h.poller("transactions")()).status).toBe("completed");
    expect(h.secrets.current().refresh_token).toBe(first);
    // The runbook's pii_salt replacement: get-secret-value | jq '.pii_salt = ...' | put-secret-value.
    await h.secrets.client.send(
      new PutSecretValueCommand({ SecretId: h.secrets.secretId, SecretString: JSON.stringify({ ...h.secrets.current(), pii_salt: "another-salt-0123456789" }) }),
    );
    h.sandbox.control.advanceClock(ACCESS_TOKEN_TTL_SECONDS + 1);
    expect((await h.poller("cards")()).status).toBe("completed");
    expect(h.refreshTokensPresented).toHaveLength(2);
    expect(h.refreshTokensPresented[1]).not.toBe(first);
    expect(await h.familyStillValid()).toBe(true);
  });

  it("says, once a warm container's next invocation stores the rotated refresh token it held in memory, that it is stored", async () => {
    const outage = h.tokenWriteOutage();
    const poll = h.poller("transactions", { clients: outage.clients }); // one warm container
    const spent = h.secrets.current().refresh_token;
    outage.on = true;
    await poll().catch(() => undefined);
    // At error, as docs/runbook.md says: the token family is lost if the container never runs again.
    const held = h.output.map((line) => JSON.parse(line) as Record<string, unknown>).find((doc) => String(doc["message"]).startsWith("The rotated refresh token could not be stored"));
    expect(held).toMatchObject({ level: "ERROR", message: "The rotated refresh token could not be stored; it is held in memory until the next invocation of this container", kind: "transactions" });
    expect(h.output.join("\n")).not.toContain(HELD_TOKEN_STORED);
    outage.on = false;

    expect((await poll()).status).toBe("completed");
    // The error above is otherwise never answered: only a revoked family, much later, would tell the token was lost.
    // At warn, as docs/runbook.md says.
    expect(levelsLogged(h.output, HELD_TOKEN_STORED)).toEqual(["WARN"]);
    expect(h.secrets.current().refresh_token).not.toBe(spent);
    expect(await h.familyStillValid()).toBe(true);
  });

  it("tries to store a rotated refresh token it holds in memory before it counts the quarantine: a count hanging to the timeout must not keep it from the try", async () => {
    const outage = h.tokenWriteOutage();
    const poll = h.poller("transactions", { clients: outage.clients });
    // Whether the invocation had tried (and, in the outage, failed) to store the held token when its count began.
    const triedAtCount: boolean[] = [];
    vi.spyOn(DynamoQuarantine.prototype, "size").mockImplementation(async () => {
      triedAtCount.push(h.output.some((line) => line.includes("The rotated refresh token could not be stored")));
      return 0;
    });
    outage.on = true;
    await poll().catch(() => undefined);
    expect(h.refreshTokensPresented).toHaveLength(1);
    expect(triedAtCount).toEqual([true]);
  });

  it.each([
    ["pii_salt", "another-salt-0123456789"],
    ["client_secret", "sandbox-secret-replaced"],
  ])("never presents the spent refresh token when a warm container that holds the rotated one in memory (both stores refused it) is rebuilt for a new %s", async (field, value) => {
    // A client secret replaced at the provider: the client and its token families stay; both secrets work meanwhile.
    const oauth = h.sandbox.control.state.oauth as unknown as Record<string, unknown>;
    oauth.authenticateClient = (id: string, secret: string) => {
      if (id !== "sandbox-client" || !["sandbox-secret", "sandbox-secret-replaced"].includes(secret)) {
        throw Object.assign(new Error("client authentication failed"), { status: 401, error: "invalid_client" });
      }
    };
    // A Secrets Manager and DynamoDB outage at once: the rotated refresh token reaches neither the secret nor the table.
    const outage = h.tokenWriteOutage();
    const poll = h.poller("transactions", { clients: outage.clients }); // one warm container
    const spent = h.secrets.current().refresh_token;
    outage.on = true;
    await poll().catch(() => undefined);
    expect(h.refreshTokensPresented).toEqual([spent]);
    expect(h.secrets.current().refresh_token).toBe(spent);
    expect(h.output.join("\n")).toContain("it is held in memory until the next invocation of this container");
    outage.on = false;
    // The outage is over; an operator replaces a credential (the runbook's get-secret-value | jq | put-secret-value),
    // which keeps the spent refresh token in the secret.
    await h.secrets.client.send(
      new PutSecretValueCommand({ SecretId: h.secrets.secretId, SecretString: JSON.stringify({ ...h.secrets.current(), [field]: value }) }),
    );
    // The container's secret cache runs out: its next invocation sees new credentials and rebuilds its runtime.
    h.sandbox.control.advanceClock(DEFAULT_SECRET_CACHE_TTL_MS / 1_000 + 1);
    expect((await poll()).status).toBe("completed");
    expect(h.refreshTokensPresented.slice(1)).not.toContain(spent);
    expect(h.secrets.current().refresh_token).not.toBe(spent);
    expect(await h.familyStillValid()).toBe(true);
  });

  it("hashes personal fields with the new pii_salt once a warm container re-reads a secret whose salt was replaced on purpose", async () => {
    await h.close();
    h = await createHarness({ piiMode: "hash" });
    const poll = h.poller("transactions");
    await poll();
    const target = h.published.find((e) => typeof e.detail.data.object["card_holder_email"] === "string");
    if (target === undefined) throw new Error("no transaction with a cardholder email");
    const before = target.detail.data.object["card_holder_email"];
    await h.secrets.client.send(
      new PutSecretValueCommand({ SecretId: h.secrets.secretId, SecretString: JSON.stringify({ ...h.secrets.current(), pii_salt: "another-salt-0123456789" }) }),
    );
    // On purpose: the runbook's delete of the table's salt fingerprint (without it the new salt is refused, pii-salt.test.ts).
    await h.table.doc.send(new DeleteCommand({ TableName: h.table.tableName, Key: piiSaltItemKey(TENANT) }));
    h.sandbox.control.advanceClock(DEFAULT_SECRET_CACHE_TTL_MS / 1_000 + 1);
    h.sandbox.control.state.patchTransaction(company(), target.detail.subject.id, { memo: "after the salt change" });
    h.published.length = 0;
    await poll();
    const after = h.published.find((e) => e.detail.subject.id === target.detail.subject.id)?.detail.data.object["card_holder_email"];
    expect(after).toMatch(/^hmac-sha256:/);
    expect(after).not.toBe(before);
  });

  it("stops with a re-authorize error and a TokenFamilyRevoked metric when the family is revoked, without a retry loop", async () => {
    await h.poller("transactions")();
    await revokeFamily(h);
    const presentedBefore = h.refreshTokensPresented.length;
    const error = await h.poller("transactions")().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReauthorizationNeededError);
    expect(h.refreshTokensPresented.length - presentedBefore).toBe(1);
    expect(h.output.some((line) => line.includes('"TokenFamilyRevoked"'))).toBe(true);
  });

  it("publishes the token family's state in TokenFamilyRevoked: 0 for a tick the provider answered, 1 while revoked, 0 again after re-onboarding", async () => {
    const revoked = (from: number) => emfValues(h.output, "TokenFamilyRevoked", from);
    await h.poller("transactions")();
    await h.poller("cards")();
    expect(revoked(0)).toEqual([0, 0]);
    await revokeFamily(h);
    let from = h.output.length;
    // The tick that meets the revocation, then one that fails fast: 1 each, never a 0 beside it.
    for (let tick = 0; tick < 2; tick++) await expect(h.poller("transactions")()).rejects.toBeInstanceOf(ReauthorizationNeededError);
    await expect(h.poller("cards")()).rejects.toBeInstanceOf(ReauthorizationNeededError);
    expect(revoked(from)).toEqual([1, 1, 1]);
    await reonboard();
    from = h.output.length;
    expect((await h.poller("cards")()).status).toBe("completed");
    expect(revoked(from)).toEqual([0]);
  });

  it("marks no version a re-authorization wrote while the adopted refresh token was refused: the next tick runs on it", async () => {
    await h.poller("transactions")();
    await revokeFamily(h);
    const stale = h.secrets.current().refresh_token as string;
    const code = h.sandbox.control.issueAuthorizationCode({ companyId: h.companyId, redirectUri: REDIRECT_URI });
    const reonboarded = await exchangeCode(
      { baseUrl: SANDBOX_IN_PROCESS_URL, clientId: "sandbox-client", clientSecret: "sandbox-secret", fetch: h.sandbox.fetch },
      { code, redirectUri: REDIRECT_URI },
    );
    // A pasted (spent) token lands while the first refresh is in flight, then the operator's `authorize --secret-id`
    // while the refresh of the adopted pasted token is.
    const written = [`${stale}-pasted`, reonboarded.refresh_token];
    let writes = 0;
    const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const response = await h.fetch(input, init);
      if (writes < written.length && String(input).endsWith("/oauth2/token")) {
        const SecretString = JSON.stringify({ ...h.secrets.current(), refresh_token: written[writes++] });
        await h.secrets.client.send(new PutSecretValueCommand({ SecretId: h.secrets.secretId, SecretString }));
      }
      return response;
    };
    await expect(h.poller("transactions", { fetch })()).rejects.toBeInstanceOf(ReauthorizationNeededError);
    expect(writes).toBe(2);
    expect(await h.poller("transactions")()).toMatchObject({ status: "completed", outcome: "complete" });
    expect(h.refreshTokensPresented.at(-1)).toBe(reonboarded.refresh_token);
  });

  it("still stops with the re-authorize error when recording the revocation fails, logging both by name and message only", async () => {
    await h.poller("transactions")();
    await revokeFamily(h);
    const denied = Object.assign(new Error("User is not authorized"), { name: "AccessDeniedException" });
    vi.spyOn(SecretsManagerTokenStore.prototype, "markRevoked").mockRejectedValue(denied);
    expect(await h.poller("transactions")().catch((e: unknown) => e)).toBeInstanceOf(ReauthorizationNeededError);
    const docs = h.output.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(docs.find((doc) => doc["message"] === "Could not record the revoked token family")).toMatchObject({ level: "WARN", kind: "transactions", error: "AccessDeniedException" });
    const failed = docs.find((doc) => doc["message"] === "Cycle failed");
    expect(failed?.["error"]).toEqual({ name: "ReauthorizationNeededError", message: expect.stringContaining("re-authorize") });
  });

  it("names the secret's client_id and client_secret when the provider refuses them (invalid_client), never their values, and revokes nothing", async () => {
    const right = h.secrets.current().client_secret;
    const putClientSecret = (value: unknown) =>
      h.secrets.client.send(new PutSecretValueCommand({ SecretId: h.secrets.secretId, SecretString: JSON.stringify({ ...h.secrets.current(), client_secret: value }) }));
    await putClientSecret("wrong-client-secret-0123456789");
    const error = await h.poller("transactions")().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderClientRejectedError);
    const message = (error as Error).message;
    for (const named of ["client_id", "client_secret", h.secrets.secretId]) expect(message).toContain(named);
    // Not a transient failure: the next tick fails the same way until a person fixes the secret.
    expect(message).not.toContain("next cycle resumes");
    const docs = h.output.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(docs.find((doc) => doc["message"] === "Cycle failed")?.["error"]).toEqual({ name: "ProviderClientRejectedError", message });
    expect(h.output.join("\n")).not.toContain("wrong-client-secret-0123456789");
    expect(h.output.some((line) => line.includes('"TokenFamilyRevoked"'))).toBe(false);
    await putClientSecret(right);
    expect(await h.poller("transactions")()).toMatchObject({ status: "completed", outcome: "complete" });
  });

  it("fails fast on later ticks after a revocation, with no provider call, until re-onboarding writes a new secret version", async () => {
    await h.poller("transactions")();
    await revokeFamily(h);
    expect(await h.poller("transactions")().catch((e: unknown) => e)).toBeInstanceOf(ReauthorizationNeededError);
    const presented = h.refreshTokensPresented.length;
    let providerCalls = 0;
    const countingFetch = async (input: string | URL | Request, init?: RequestInit) => {
      providerCalls += 1;
      return h.sandbox.fetch(input, init);
    };
    const revokedBefore = h.output.filter((line) => line.includes('"TokenFamilyRevoked"')).length;

    for (const kind of ["transactions", "cards"] as const) {
      const error = await h.poller(kind, { fetch: countingFetch })().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ReauthorizationNeededError);
      // The provider named invalid_grant: only re-authorizing helps, so the client credentials go unmentioned.
      expect((error as Error).message).toContain("re-authorize");
      expect((error as Error).message).not.toContain("client_secret");
    }

    expect(providerCalls).toBe(0);
    expect(h.refreshTokensPresented).toHaveLength(presented);
    expect(h.output.filter((line) => line.includes('"TokenFamilyRevoked"')).length - revokedBefore).toBe(2);

    await reonboard();
    expect((await h.poller("transactions")()).status).toBe("completed");
    expect(h.pendingAtProvider()).toBe(0);
  });

  it("says on later ticks to check the secret's client_id and client_secret first when the refusal was a 401 without an error code, until fixing them clears the mark", async () => {
    await h.poller("transactions")();
    const putSecret = (value: Record<string, unknown>) =>
      h.secrets.client.send(new PutSecretValueCommand({ SecretId: h.secrets.secretId, SecretString: JSON.stringify(value) }));
    const right = h.secrets.current();
    await putSecret({ ...right, client_secret: "mistyped-client-secret" });
    const bare401 = bare401For(h, "mistyped-client-secret");
    h.sandbox.control.advanceClock(ACCESS_TOKEN_TTL_SECONDS + 1);
    expect(await h.poller("transactions", { fetch: bare401 })().catch((e: unknown) => e)).toBeInstanceOf(ReauthorizationNeededError);

    const presented = h.refreshTokensPresented.length;
    const later = await h.poller("cards")().catch((e: unknown) => e);
    expect(later).toBeInstanceOf(ReauthorizationNeededError);
    expect(h.refreshTokensPresented).toHaveLength(presented);
    const message = (later as Error).message;
    expect(message).toContain("check the secret's client_id and client_secret first");
    expect(message).toContain("clears this mark");

    // The right ones put back: a new secret version, and the refresh token, never spent, still works.
    await putSecret(right);
    expect((await h.poller("transactions", { fetch: bare401 })()).status).toBe("completed");
  });

  it("logs one line, the runtime's that the runbook names, when another container rotated the refresh token first", async () => {
    await h.poller("transactions")();
    h.sandbox.control.advanceClock(ACCESS_TOKEN_TTL_SECONDS + 1);
    let raced = false;
    // The first refresh loses a race: another container refreshed first and stored its refresh token.
    const racing: Harness["fetch"] = async (input, init) => {
      if (raced || !String(input).endsWith("/oauth2/token")) return h.fetch(input, init);
      raced = true;
      const set = (await (await h.fetch(input, init)).json()) as { refresh_token: string };
      await h.tokenStore().save({ refreshToken: set.refresh_token });
      return new Response(JSON.stringify({ error: "invalid_grant" }), { status: 400, headers: { "content-type": "application/json" } });
    };
    const before = h.output.length;

    expect((await h.poller("transactions", { fetch: racing })()).status).toBe("completed");

    const logged = h.output.slice(before).join("\n");
    expect(logged.match(/rotated by another (container|process)/g)).toEqual(["rotated by another container"]);
    // A warning, as docs/runbook.md calls it: a sign of two refreshes close together.
    expect(levelsLogged(h.output.slice(before), "Refresh token was rotated by another container; adopted it")).toEqual(["WARN"]);
    expect(levelsLogged(h.output.slice(before), runbookSaid("TokenFamilyRevoked", /Signs of two are a warning `([^`]+)`/))).toEqual(["WARN"]);
  });

  it("fails with a LambdaConfigurationError naming every bad variable", async () => {
    const { TABLE_NAME: _table, ...rest } = h.env;
    const poll = h.poller("transactions", { env: { ...rest, PII_MODE: "sometimes" } });
    const error = await poll().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LambdaConfigurationError);
    expect((error as LambdaConfigurationError).issues.map((i) => i.variable).sort()).toEqual(["PII_MODE", "TABLE_NAME"]);
  });

  it("validates the environment once per container: a warm invocation is not refused for a variable changed since, a new container is", async () => {
    const env = { ...h.env };
    const poll = h.poller("transactions", { env });
    expect((await poll()).status).toBe("completed");
    env.PII_MODE = "sometimes";
    expect((await poll()).status).toBe("completed");
    await expect(h.poller("transactions", { env })()).rejects.toBeInstanceOf(LambdaConfigurationError);
  });

  it("logs a LambdaConfigurationError with the tenant key when TENANT_ID itself is valid, as its metrics carry it", async () => {
    const failedLine = () => h.output.map((line) => JSON.parse(line) as Record<string, unknown>).find((doc) => doc["message"] === "Cycle failed");
    await expect(h.poller("transactions", { env: { ...h.env, PII_MODE: "sometimes" } })()).rejects.toBeInstanceOf(LambdaConfigurationError);
    expect(failedLine()).toMatchObject({ tenant: TENANT, error: { name: "LambdaConfigurationError" } });
  });

  it("never echoes an invalid TENANT_ID in the LambdaConfigurationError log line", async () => {
    const bad = "acme#not-a-tenant";
    const error = await h.poller("transactions", { env: { ...h.env, TENANT_ID: bad } })().catch((e: unknown) => e);
    expect((error as LambdaConfigurationError).issues.map((i) => i.variable)).toEqual(["TENANT_ID"]);
    const failed = h.output.find((line) => line.includes('"Cycle failed"'));
    expect(failed).toBeDefined();
    expect(JSON.parse(failed as string)).not.toHaveProperty("tenant");
    expect(failed).not.toContain(bad);
  });

  it("names the AWS call and the table in the failure log line when the tenant's table is gone (DynamoDB says only \"Requested resource not found\")", async () => {
    const missing = `${h.table.tableName}-deleted`;
    const error = await h.poller("transactions", { env: { ...h.env, TABLE_NAME: missing } })().catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "ResourceNotFoundException" });
    const failed = h.output.map((line) => JSON.parse(line) as Record<string, unknown>).find((doc) => doc["message"] === "Cycle failed");
    expect(failed?.["error"]).toMatchObject({ name: "ResourceNotFoundException", awsCall: expect.stringMatching(/^DynamoDB \w+$/), table: missing });
    // The runbook names the two fields by their path in the line, as a Logs Insights query must write them.
    const named = /the log line's `([\w.]+)` a `DynamoDB` call\s+and `([\w.]+)` the table it asked for/.exec(runbookSection("Function errors"));
    const at = (path: string): unknown => path.split(".").reduce<unknown>((doc, key) => (doc as Record<string, unknown> | undefined)?.[key], failed);
    expect(named?.slice(1).map(at)).toEqual([(failed?.["error"] as { awsCall: string }).awsCall, missing]);
  });

  it("names the AWS call and the table in the failure log line for a DynamoDB error inside a cycle too (wrapped in CycleAbortedError)", async () => {
    const clients = h.clients((dynamo) =>
      dynamo.middlewareStack.add(
        (next, context) => async (args) => {
          if (String(context.commandName) === "BatchWriteItemCommand") throw awsError("AccessDeniedException");
          return next(args);
        },
        { step: "initialize", name: "denySnapshotWrites" },
      ),
    );
    const error = await h.poller("transactions", { clients })().catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "CycleAbortedError" });
    const failed = h.output.map((line) => JSON.parse(line) as Record<string, unknown>).find((doc) => doc["message"] === "Cycle failed");
    expect(failed?.["error"]).toMatchObject({ name: "CycleAbortedError", awsCall: "DynamoDB BatchWriteItem", table: h.table.tableName });
  });

  it("logs an AWS SDK TimeoutError that escapes the cycle as the cycle's failure only, not as the invocation's timeout", async () => {
    // The SDK's own TimeoutError (every attempt timed out) shares its name with middy's early timeout; only middy's is
    // the invocation running into its Lambda timeout (the runbook tells them apart by this line).
    const clients = h.clients((dynamo) =>
      dynamo.middlewareStack.add(
        () => async () => {
          throw awsError("TimeoutError");
        },
        { step: "initialize", name: "everyCallTimesOut" },
      ),
    );
    const error = await h.poller("transactions", { clients })().catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "TimeoutError" });
    const errors = h.output.map((line) => JSON.parse(line) as Record<string, unknown>).filter((doc) => doc["level"] === "ERROR");
    expect(errors.map((doc) => doc["message"])).toEqual(["Cycle failed"]);
  });

  it("traces the calls of each SDK client of a container once (X-Ray subsegments), however many invocations it serves", async () => {
    const tracer = new Tracer({ enabled: false });
    const captured = vi.spyOn(tracer, "captureAWSv3Client");
    const build = h.clients();
    const built: AwsClients[] = [];
    const poll = h.poller("transactions", { tracer, clients: () => built[built.push(build()) - 1] as AwsClients });
    await poll();
    await poll();
    expect(built).toHaveLength(1);
    const [clients] = built as [AwsClients];
    expect(captured.mock.calls.map(([client]) => client)).toEqual([clients.dynamo, clients.eventBridge, clients.secrets]);
  });

  it("logs no warning on a cycle that goes well: the tenant dimension is set once per container, not overwritten", async () => {
    expect((await h.poller("transactions")()).status).toBe("completed");
    const warnings = h.output.map((line) => JSON.parse(line) as Record<string, unknown>).filter((doc) => doc["level"] === "WARN");
    expect(warnings).toEqual([]);
  });

  it("emits EMF metrics in the QashioBridge namespace with the tenant dimension", async () => {
    await h.poller("transactions")();
    const emf = h.output.filter((line) => line.includes('"_aws"')).map((line) => JSON.parse(line) as Record<string, unknown>);
    const names = emf.flatMap((doc) =>
      ((doc._aws as { CloudWatchMetrics: { Namespace: string; Metrics: { Name: string; Unit: string }[]; Dimensions: string[][] }[] }).CloudWatchMetrics).flatMap(
        (m) => m.Metrics.map((metric) => ({ name: metric.Name, unit: metric.Unit, namespace: m.Namespace, dimensions: m.Dimensions.flat() })),
      ),
    );
    for (const name of ["TransactionsPulled", "EventsPublished", "Acknowledged", "TokenRefreshes", "CycleDurationMs", "SyncLagSeconds"]) {
      expect(names.find((n) => n.name === name), name).toMatchObject({ namespace: "QashioBridge", dimensions: expect.arrayContaining(["tenant"]) });
    }
    expect(names.find((n) => n.name === "EventsPublished")?.dimensions).toContain("type");
    // The units the alarms' thresholds are in.
    const units = Object.fromEntries(["TransactionsPulled", "EventsPublished", "TokenRefreshes", "CycleDurationMs", "SyncLagSeconds"].map((name) => [name, names.find((n) => n.name === name)?.unit]));
    expect(units).toEqual({ TransactionsPulled: "Count", EventsPublished: "Count", TokenRefreshes: "Count", CycleDurationMs: "Milliseconds", SyncLagSeconds: "Seconds" });
    expect(emf.every((doc) => doc.tenant === TENANT)).toBe(true);
  });

  it("counts a transaction the provider refuses to acknowledge in its result and AcknowledgeRefused, and logs the fields the runbook's query reads", async () => {
    const stuck = company().transactions.all().find((t) => t.client_sync_status !== "synced")?.id as string;
    // The provider does not find that id for the company (the sandbox's NOT_FOUND for an id it does not hold).
    const refusing = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
      if (!url.endsWith("/transactions/acknowledge") || typeof init?.body !== "string") return h.sandbox.fetch(input, init);
      const body = JSON.parse(init.body) as { transaction_ids: string[] };
      const sent = body.transaction_ids.map((id) => (id === stuck ? randomUUID() : id));
      return h.sandbox.fetch(input, { ...init, body: JSON.stringify({ ...body, transaction_ids: sent }) });
    };
    const poll = h.poller("transactions", { fetch: refusing });
    const backlog = h.pendingAtProvider();

    for (let cycle = 1; cycle <= 2; cycle += 1) {
      expect(await poll()).toMatchObject({ status: "completed", outcome: "complete", acknowledgeRefused: 1, acknowledged: cycle === 1 ? backlog - 1 : 0 });
    }
    expect(h.pendingAtProvider()).toBe(1);
    expect(subjectIds(h.published).has(stuck)).toBe(true);

    const docs = h.output.map((line) => JSON.parse(line) as Record<string, unknown>);
    const emf = docs.filter((doc) => doc["AcknowledgeRefused"] !== undefined);
    expect(emf.map((doc) => doc["AcknowledgeRefused"])).toEqual([1, 1]);
    for (const doc of emf) {
      const [directive] = (doc._aws as { CloudWatchMetrics: { Namespace: string; Dimensions: string[][] }[] }).CloudWatchMetrics;
      expect(directive).toMatchObject({ Namespace: "QashioBridge", Dimensions: [["service", "tenant"]] });
    }
    // The runbook's filter-log-events (AcknowledgeRefused) matches the message exactly: it finds each refusal's warning.
    const filtered = /--filter-pattern '\{ \$\.message = "([^"]+)" \}'/.exec(runbookSection("AcknowledgeRefused"))?.[1];
    const warnings = docs.filter((doc) => doc["message"] === filtered);
    expect(warnings).toHaveLength(2);
    for (const w of warnings) expect(w).toMatchObject({ level: "WARN", ids: [stuck], codes: ["NOT_FOUND"], requestId: expect.any(String) });
  });

  it("reports the quarantine's size after every cycle as a gauge, so a held record keeps counting until it is gone", async () => {
    const quarantineSizes = () =>
      h.output
        .filter((line) => line.includes('"_aws"'))
        .map((line) => (JSON.parse(line) as Record<string, unknown>).QuarantineSize)
        .filter((value) => value !== undefined);
    await h.poller("transactions")();
    expect(quarantineSizes()).toEqual([0]);
    const quarantine = new DynamoQuarantine({ doc: h.table.doc, tableName: h.table.tableName, tenant: TENANT });
    await quarantine.put({ id: "held", kind: "transaction", reason: "invalid amount", raw: {}, at: "2026-03-01T12:00:00Z" });
    await h.poller("transactions")();
    await h.poller("cards")();
    expect(quarantineSizes()).toEqual([0, 1, 1]);
  });

  it("names at most KEPT_RECORDS_NAMED kept records in a re-drive's result and counts the rest, so the result stays far below Lambda's 6 MB", async () => {
    const quarantine = new DynamoQuarantine({ doc: h.table.doc, tableName: h.table.tableName, tenant: TENANT });
    const count = KEPT_RECORDS_NAMED + 5;
    // Publish failures without a qashio_id: kept without a provider read ("no transaction id or qashio_id in the record").
    for (let i = 0; i < count; i++) {
      await quarantine.put({ id: `kept-${String(i).padStart(3, "0")}`, kind: "transaction", reason: "publish: refused", raw: {}, at: "2025-01-01T00:00:00.000Z" });
    }
    const result = await h.poller("transactions")({ action: "redrive" });
    expect(result).toMatchObject({ action: "redrive", outcome: "complete", redriven: 0, keptNotNamed: 5 });
    expect(new Set(result.kept)).toHaveProperty("size", KEPT_RECORDS_NAMED);
    expect(await quarantine.size()).toBe(count);
  });

  it("says a re-drive that stopped at its deadline before reading the quarantine left its records not looked at, and the next one looks at them", async () => {
    const quarantine = new DynamoQuarantine({ doc: h.table.doc, tableName: h.table.tableName, tenant: TENANT });
    for (const id of ["kept-a", "kept-b"]) await quarantine.put({ id, kind: "transaction", reason: "publish: refused", raw: {}, at: "2025-01-01T00:00:00.000Z" });
    // A 60 s function whose Init phase ran within the container's first invocation: only the safety margin left at entry.
    const poll = h.poller("transactions", { processUptimeMs: () => MIN_POLLER_TIMEOUT_MS - CYCLE_SAFETY_MARGIN_MS });
    const stopped = await poll({ action: "redrive" }, lambdaContext(CYCLE_SAFETY_MARGIN_MS));
    expect(stopped).toMatchObject({ status: "completed", action: "redrive", outcome: "deadline", redriven: 0, kept: [], notScanned: true });
    const next = await poll({ action: "redrive" });
    expect(next).toMatchObject({ status: "completed", action: "redrive", outcome: "complete", redriven: 0 });
    expect(next).not.toHaveProperty("notScanned");
    expect([...(next.kept ?? [])].sort()).toEqual(["kept-a", "kept-b"]);
  });

  it("re-drives a transaction whose event the bus refused for good once invoked with action redrive, and refuses the action elsewhere", async () => {
    const poll = h.poller("transactions");
    const refusedId = company().transactions.all().find((t) => t.client_sync_status !== "synced")?.id;
    // The bus refuses that transaction's event for good (a detail it cannot take), and takes the rest.
    h.eventBridge.on(PutEventsCommand).callsFake((input: { Entries: PutEventsRequestEntry[] }) => ({
      FailedEntryCount: 0,
      Entries: input.Entries.map((entry) => {
        const detail = JSON.parse(entry.Detail ?? "{}") as BridgeEventDetail;
        if (detail.subject.id === refusedId) return { ErrorCode: "MalformedDetail", ErrorMessage: "detail is malformed" };
        h.published.push({ source: entry.Source ?? "", detailType: entry.DetailType ?? "", detail });
        return { EventId: "e" };
      }),
    }));
    expect(await poll()).toMatchObject({ status: "completed", quarantined: 1 });
    expect(subjectIds(h.published).has(refusedId ?? "")).toBe(false);
    // Acknowledged with its record written: no cycle pulls it again.
    expect(h.pendingAtProvider()).toBe(0);
    await expect(h.poller("cards")({ action: "redrive" })).rejects.toThrow('Poll event field action must be "cycle" on the card poller');
    await expect(poll({ action: "replay" as never })).rejects.toThrow('Poll event field action must be "cycle", "redrive" or "conform-pii"');

    // Still refused: the record stays, named in the result.
    const kept = await poll({ action: "redrive" });
    expect(kept).toMatchObject({ kind: "transactions", status: "completed", action: "redrive", outcome: "complete", redriven: 0 });
    expect(kept.kept).toHaveLength(1);

    // The cause fixed, the re-drive publishes it and removes the record.
    h.eventBridge.on(PutEventsCommand).callsFake((input: { Entries: PutEventsRequestEntry[] }) => {
      for (const entry of input.Entries) {
        h.published.push({ source: entry.Source ?? "", detailType: entry.DetailType ?? "", detail: JSON.parse(entry.Detail ?? "{}") as BridgeEventDetail });
      }
      return { FailedEntryCount: 0, Entries: input.Entries.map(() => ({ EventId: "e" })) };
    });
    const delivered = await poll({ action: "redrive" });
    expect(delivered).toMatchObject({ status: "completed", action: "redrive", outcome: "complete", published: 1, redriven: 1, kept: [] });
    // Exactly the result docs/runbook.md shows for this invoke (Re-driving quarantined transactions), key order included.
    const shown = /--payload '\{"action":"redrive"\}' \/dev\/stdout\n# (\{.*\})\n/.exec(readFileSync("docs/runbook.md", "utf8"))?.[1];
    expect(JSON.stringify(delivered)).toBe(shown);
    expect(subjectIds(h.published, "transaction.created").has(refusedId ?? "")).toBe(true);
    const quarantine = new DynamoQuarantine({ doc: h.table.doc, tableName: h.table.tableName, tenant: TENANT });
    expect(await quarantine.size()).toBe(0);
  });

  it("keeps an oversized change's record on every re-drive (restarting its retention) until the provider's change makes it fit (runbook, QuarantineNotEmpty)", async () => {
    const poll = h.poller("transactions");
    await poll();
    const target = company().transactions.get(h.published[0]?.detail.subject.id ?? "");
    if (target === undefined) throw new Error("no published transaction");
    // One string no trimming can shorten: the change is refused for good and quarantined.
    h.sandbox.control.state.patchTransaction(company(), target.id, { memo: "m".repeat(300_000) });
    expect(await poll()).toMatchObject({ published: 0, quarantined: 1 });
    const records = async () =>
      ((await h.table.doc.send(new ScanCommand({ TableName: h.table.tableName }))).Items ?? []).filter((item) => String(item["pk"]).startsWith("QUAR#"));
    const [held] = await records();
    expect(held).toMatchObject({ entityId: target.id, reason: expect.stringMatching(/^publish: oversized: /) });

    // Nothing to deploy: the re-drive reads the same transaction, keeps the record and restarts its retention.
    h.sandbox.control.advanceClock(3_600);
    const kept = await poll({ action: "redrive" });
    expect(kept).toMatchObject({ outcome: "complete", published: 0, redriven: 0, kept: [held?.["sk"]] });
    const [again] = await records();
    expect(again?.["ttl"]).toBe((held?.["ttl"] as number) + 3_600);

    // Changed at the provider into a form that fits: the next cycle publishes it, the next re-drive removes the record.
    h.sandbox.control.state.patchTransaction(company(), target.id, { memo: "Shortened" });
    h.published.length = 0;
    expect(await poll()).toMatchObject({ published: 1, quarantined: 0 });
    expect(h.published.map((e) => [e.detailType, e.detail.subject.id])).toEqual([["transaction.changed", target.id]]);
    expect(await poll({ action: "redrive" })).toMatchObject({ outcome: "complete", published: 0, redriven: 1, kept: [] });
    expect(await records()).toEqual([]);
    expect(h.published).toHaveLength(1);
  });

  it("never writes a token, the client secret or a cardholder name to its logs", async () => {
    await h.poller("transactions")();
    await h.poller("cards")();
    const stored = await h.tokenStore().load();
    const secrets = [stored?.refreshToken, stored?.accessToken, "sandbox-secret", ...h.refreshTokensPresented];
    const names = company().cards.map((card) => `${card.holder.firstName} ${card.holder.lastName}`);
    const text = h.output.join("\n");
    expect(text.length).toBeGreaterThan(0);
    for (const value of [...secrets, ...names]) if (value !== undefined) expect(text).not.toContain(value);
    const events = JSON.stringify(h.published);
    for (const name of names) expect(events).not.toContain(name);
  });
});

/** Every item of the tenant's table as JSON text, snapshot objects and quarantine bodies stored gzip-compressed included. */
async function storedText(): Promise<string> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await h.table.doc.send(new ScanCommand({ TableName: h.table.tableName, ConsistentRead: true, ExclusiveStartKey: start }));
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start !== undefined);
  const unzipped = (bytes: unknown) => (bytes instanceof Uint8Array ? gunzipSync(bytes).toString("utf8") : "");
  return items.map(({ objz, rawz, ...item }) => JSON.stringify(item) + unzipped(objz) + unzipped(rawz)).join("\n");
}

/** Cardholder names and emails of the sandbox company (on its cards and transactions). */
function cardholderValues(): string[] {
  return company().cards.flatMap((card) => [`${card.holder.firstName} ${card.holder.lastName}`, card.holder.email]);
}

/** A container's SDK clients whose DynamoDB client hands `each` every request (command name and input) before it is sent. */
function tableSeen(each: (command: string, input: unknown) => void): () => AwsClients {
  return h.clients((dynamo) =>
    dynamo.middlewareStack.add(
      (next, context) => async (args) => {
        each(String(context.commandName), args.input);
        return next(args);
      },
      { step: "initialize" },
    ),
  );
}

/**
 * A container's SDK clients whose every Scan call takes 20 s of sandbox time, of the 30 s budget an invocation with
 * 60 s remaining has after the safety margin: a conform-pii pass reads two pages, then stops with a cursor.
 */
const slowScans = (): (() => AwsClients) => tableSeen((command) => command === "ScanCommand" && h.sandbox.control.advanceClock(20));

/** Snapshots (and aliases) of 150 more transactions than the sandbox seeds, stored by a transaction cycle under full. */
async function transactionsStoredUnderFull(): Promise<void> {
  h.env.PII_MODE = "full";
  // Every one asked for made: new spend needs money in the accounts (spec-gaps, Balances).
  fillAccounts(company());
  h.sandbox.control.state.createTransactions(company(), { count: 150 });
  expect(await h.poller("transactions")()).toMatchObject({ status: "completed", outcome: "complete" });
}

describe("poll-transactions conform-pii action", () => {
  it("re-masks every snapshot written under full once invoked after a switch to redact; later cycles publish nothing", async () => {
    h.env.PII_MODE = "full";
    await h.poller("transactions")();
    await h.poller("cards")();
    const cleartext = cardholderValues();
    const before = await storedText();
    expect(cleartext.filter((value) => before.includes(value)).length).toBeGreaterThan(0);

    h.env.PII_MODE = "redact";
    const result = await h.poller("transactions")({ action: "conform-pii" });
    expect(result).toMatchObject({ kind: "transactions", status: "completed", action: "conform-pii", outcome: "complete" });
    expect(result.rewritten).toBeGreaterThan(0);
    expect(result.cursor).toBeUndefined();
    const after = await storedText();
    for (const value of cleartext) expect(after).not.toContain(value);

    const published = h.published.length;
    await h.poller("transactions")();
    await h.poller("cards")();
    expect(h.published).toHaveLength(published);
    expect(await h.poller("transactions")({ action: "conform-pii" })).toMatchObject({ outcome: "complete", rewritten: 0 });
  });

  it("masks the kept head of a quarantined body the table had to cut, written under full, once invoked after a switch to redact", async () => {
    h.env.PII_MODE = "full";
    const target = company().transactions.all().find((t) => t.client_sync_status === "not_synced");
    if (target === undefined) throw new Error("no pending transaction");
    // Random text barely compresses: its event is too large to publish, and its body too large for one item even gzipped.
    h.sandbox.control.state.patchTransaction(company(), target.id, { memo: randomBytes(500 * 1024).toString("base64") });
    expect(await h.poller("transactions")()).toMatchObject({ status: "completed", quarantined: 1 });
    const quarantine = new DynamoQuarantine({ doc: h.table.doc, tableName: h.table.tableName, tenant: TENANT, clock: h.clock });
    const [cut] = await quarantine.list();
    expect(cut?.raw).toMatchObject({ _truncated: { bytes: expect.any(Number) }, head: expect.stringContaining(String(target.card_holder_email)) });
    const personal = [target.card_holder_name, target.card_holder_email, target.employee_id].map(String);

    h.env.PII_MODE = "redact";
    expect(await h.poller("transactions")({ action: "conform-pii" })).toMatchObject({ outcome: "complete", quarantineRewritten: 1 });
    const after = await storedText();
    for (const value of personal) expect(after).not.toContain(value);
    // Still a cut body, its qashio_id kept: the re-drive reads the transaction again by it.
    const [masked] = await quarantine.list();
    expect(masked).toMatchObject({ id: cut?.id, at: cut?.at, raw: { _truncated: { bytes: expect.any(Number) }, head: "[redacted]" } });
    expect(recordQashioId(masked?.raw)).toBe(target.qashio_id);
    expect(await h.poller("transactions")({ action: "conform-pii" })).toMatchObject({ outcome: "complete", quarantineRewritten: 0 });
  });

  it("stops at the invocation's deadline with a cursor, and invocations with the cursor finish the pass", async () => {
    await transactionsStoredUnderFull();
    await h.poller("cards")();
    const holders = cardholderValues();
    const withCleartext = (await storedText()).split("\n").filter((item) => holders.some((value) => item.includes(value))).length;
    expect(withCleartext).toBeGreaterThan(150);
    h.env.PII_MODE = "redact";
    const results: PollResult[] = [];
    let cursor: string | undefined;
    do {
      const result = await h.poller("transactions", { clients: slowScans() })({ action: "conform-pii", ...(cursor === undefined ? {} : { cursor }) });
      results.push(result);
      cursor = result.cursor;
    } while (cursor !== undefined && results.length < 20);
    expect(results[0]).toMatchObject({ status: "completed", action: "conform-pii", outcome: "deadline", cursor: expect.any(String) });
    // How long the pass ran: its scans took it past its deadline (the invocation's 60 s less the margin).
    expect(results[0]?.durationMs).toBeGreaterThanOrEqual(60_000 - CYCLE_SAFETY_MARGIN_MS);
    expect(results.at(-1)).toMatchObject({ outcome: "complete" });
    expect(results.length).toBeGreaterThan(1);
    const scanned = results.reduce((sum, r) => sum + (r.scanned ?? 0), 0);
    const rewritten = results.reduce((sum, r) => sum + (r.rewritten ?? 0), 0);
    expect(scanned).toBeGreaterThan(300);
    expect(rewritten).toBe(withCleartext);
    const after = await storedText();
    for (const value of holders) expect(after).not.toContain(value);
    // Taken only under the PII mode it was made under: the snapshots before it are in that mode's form.
    h.env.PII_MODE = "hash";
    await expect(h.poller("transactions")({ action: "conform-pii", cursor: results.at(-2)?.cursor ?? "" })).rejects.toMatchObject({
      name: "ConformCursorError",
      problem: "mode",
    });
  });

  it("refuses, after a switch to full and back, the cursor of a pass unfinished before it: transaction cycles under full wrote cleartext behind it", async () => {
    await transactionsStoredUnderFull();
    h.env.PII_MODE = "redact";
    const stopped = await h.poller("transactions", { clients: slowScans() })({ action: "conform-pii" });
    expect(stopped).toMatchObject({ outcome: "deadline", cursor: expect.any(String) });

    // Deployed under full (new containers): every transaction changes, and its snapshot is stored in cleartext again,
    // at keys the Scan (in hash order) had passed as well as ahead of the cursor.
    h.env.PII_MODE = "full";
    for (const t of company().transactions.all()) h.sandbox.control.state.patchTransaction(company(), t.id, { memo: `changed ${t.id}` });
    expect(await h.poller("transactions")()).toMatchObject({ status: "completed", outcome: "complete" });
    const holders = cardholderValues();
    const cleartext = await storedText();
    expect(holders.filter((value) => cleartext.includes(value)).length).toBeGreaterThan(0);

    // Back under redact (new containers): a run from the old cursor would skip the cleartext behind it.
    h.env.PII_MODE = "redact";
    await expect(h.poller("transactions")({ action: "conform-pii", cursor: stopped.cursor ?? "" })).rejects.toMatchObject({
      name: "ConformCursorError",
      problem: "superseded",
    });
    expect(await h.poller("transactions")({ action: "conform-pii" })).toMatchObject({ outcome: "complete" });
    const after = await storedText();
    for (const value of holders) expect(after).not.toContain(value);
  });

  it("skips while a card cycle holds its lease (it rewrites card snapshots too), and says when there is nothing to do", async () => {
    const lock = new DynamoLeaseLock({ doc: h.table.doc, tableName: h.table.tableName, clock: h.clock });
    const lease = await lock.tryAcquire(leaseNames.cardsCycle(TENANT), 60_000);
    expect(await h.poller("transactions")({ action: "conform-pii" })).toEqual({ kind: "transactions", status: "skipped", action: "conform-pii", reason: "lease_held" });
    // `kind`: the cycle whose lease is held; `action`: what skipped.
    expect(skipLines(h.output).at(-1)).toMatchObject({ level: "INFO", kind: "cards", action: "conform-pii" });
    await lease?.release();
    // The transaction lease was given back: a cycle runs.
    expect(await h.poller("transactions")()).toMatchObject({ status: "completed" });
    h.env.PII_MODE = "full";
    expect(await h.poller("transactions")({ action: "conform-pii" })).toMatchObject({
      status: "completed",
      action: "conform-pii",
      outcome: "full_mode",
      scanned: 0,
      rewritten: 0,
    });
  });

  it("refuses a payload that is not a JSON object (a quoting slip) before anything runs, instead of running a cycle", async () => {
    const pending = h.pendingAtProvider();
    for (const event of ["redrive", ["redrive"], [{ action: "conform-pii" }], 7, true]) {
      await expect(h.poller("transactions")(event as never)).rejects.toMatchObject({ name: "PollEventError", field: "(event)" });
      await expect(h.poller("cards")(event as never)).rejects.toMatchObject({ name: "PollEventError", field: "(event)" });
    }
    expect(h.published).toEqual([]);
    expect(h.pendingAtProvider()).toBe(pending);
  });

  it("refuses the action on the card poller, a cursor with another action or of another shape, and a cursor it did not issue", async () => {
    await expect(h.poller("cards")({ action: "conform-pii" })).rejects.toThrow('Poll event field action must be "cycle" on the card poller');
    await expect(h.poller("transactions")({ cursor: "abc" })).rejects.toMatchObject({ name: "PollEventError", field: "cursor" });
    await expect(h.poller("transactions")({ action: "redrive", cursor: "abc" })).rejects.toMatchObject({ name: "PollEventError", field: "cursor" });
    await expect(h.poller("transactions")({ action: "conform-pii", cursor: 7 as never })).rejects.toMatchObject({ name: "PollEventError", field: "cursor" });
    await expect(h.poller("transactions")({ action: "conform-pii", cursor: "" })).rejects.toMatchObject({ name: "PollEventError", field: "cursor" });
    await expect(h.poller("transactions")({ action: "conform-pii", cursor: "bm90IGEga2V5" })).rejects.toMatchObject({ name: "ConformCursorError", problem: "unversioned" });
    expect(h.published).toEqual([]);
  });
});

describe("poll-transactions after a PII mode change", () => {
  const PASS_KEY = "transaction:~conform-pass";
  const snapshots = () => new DynamoSnapshotStore({ doc: h.table.doc, tableName: h.table.tableName, tenant: TENANT });
  const storedPass = async () => (await snapshots().getMany([PASS_KEY])).get(PASS_KEY)?.object;

  /** The pass id a conform-pii pass under redact stored when it stopped with a cursor. */
  async function passStoppedUnderRedact(): Promise<void> {
    const object = { pass: "0123456789abcdef", mode: "redact" };
    await snapshots().putMany([{ key: PASS_KEY, hash: contentHash(object), object, updatedAt: "2026-03-01T11:00:00.000Z" }]);
  }

  /** One DynamoDB request: its command, and whether it names the pass id's item or another snapshot item. */
  interface TableRequest {
    readonly command: string;
    readonly pass: boolean;
    readonly snapshot: boolean;
  }

  /** A container's clients recording its requests into `requests`; `refuse` may fail one instead of sending it. */
  function recorded(requests: TableRequest[], refuse?: (request: TableRequest) => Error | undefined): () => AwsClients {
    return tableSeen((command, input) => {
      const text = JSON.stringify(input);
      const request = { command, pass: text.includes(PASS_KEY), snapshot: text.replaceAll(`SNAP#${TENANT}#${PASS_KEY}`, "").includes(`SNAP#${TENANT}#`) };
      requests.push(request);
      const error = refuse?.(request);
      if (error !== undefined) throw error;
    });
  }

  it("supersedes the pass a conform-pii run stored under another mode once per container, before its first snapshot write; the card poller never reads it", async () => {
    await passStoppedUnderRedact();
    h.env.PII_MODE = "full";
    const requests: TableRequest[] = [];
    const poll = h.poller("transactions", { clients: recorded(requests) });
    expect(await poll()).toMatchObject({ status: "completed", outcome: "complete" });
    const changed = h.published[0]?.detail.subject.id ?? "";
    h.sandbox.control.state.patchTransaction(company(), changed, { memo: "changed under full" });
    expect(await poll()).toMatchObject({ status: "completed", published: 1 });

    // One read across both invocations, and one write, of the pass id, before any other snapshot is written.
    const passRequests = requests.filter((r) => r.pass).map((r) => r.command);
    expect(passRequests).toEqual(["BatchGetItemCommand", "BatchWriteItemCommand"]);
    const passWrite = requests.findIndex((r) => r.pass && r.command === "BatchWriteItemCommand");
    const firstWrite = requests.findIndex((r) => r.snapshot && r.command === "BatchWriteItemCommand");
    expect(firstWrite).toBeGreaterThan(passWrite);
    expect(await storedPass()).toEqual({ pass: expect.not.stringMatching(/^0123456789abcdef$/), mode: "full" });

    // Another container under the same mode reads it and writes nothing; a card container never names it.
    const next: TableRequest[] = [];
    expect(await h.poller("transactions", { clients: recorded(next) })()).toMatchObject({ status: "completed" });
    expect(next.filter((r) => r.pass).map((r) => r.command)).toEqual(["BatchGetItemCommand"]);
    const cards: TableRequest[] = [];
    expect(await h.poller("cards", { clients: recorded(cards) })()).toMatchObject({ status: "completed" });
    expect(cards.filter((r) => r.snapshot).length).toBeGreaterThan(0);
    expect(cards.filter((r) => r.pass)).toEqual([]);
  });

  it("fails the invocation whose read of the pass id fails, before anything is written; the container's next invocation reads it again", async () => {
    await passStoppedUnderRedact();
    h.env.PII_MODE = "full";
    const requests: TableRequest[] = [];
    let refusals = 1;
    const refuse = (r: TableRequest) => (r.pass && refusals-- > 0 ? awsError("AccessDeniedException") : undefined);
    const poll = h.poller("transactions", { clients: recorded(requests, refuse) });
    await expect(poll()).rejects.toMatchObject({ name: "AccessDeniedException" });
    expect(requests.filter((r) => r.snapshot || r.pass).map((r) => r.command)).toEqual(["BatchGetItemCommand"]);
    expect(h.published).toEqual([]);
    expect(await storedPass()).toMatchObject({ pass: "0123456789abcdef", mode: "redact" });
    expect(h.output.join("\n")).toContain("Cycle failed");

    expect(await poll()).toMatchObject({ status: "completed", outcome: "complete" });
    expect(requests.filter((r) => r.pass).map((r) => r.command)).toEqual(["BatchGetItemCommand", "BatchGetItemCommand", "BatchWriteItemCommand"]);
    expect(await storedPass()).toMatchObject({ mode: "full" });
    expect(h.published.length).toBeGreaterThan(0);
  });
});

describe("poll-cards handler", () => {
  it("runs a cycle when the event names the cycle action itself, on either poller", async () => {
    expect(await h.poller("cards")({ action: "cycle" })).toMatchObject({ kind: "cards", status: "completed", outcome: "complete" });
    const result = await h.poller("transactions")({ action: "cycle" });
    expect(result).toMatchObject({ kind: "transactions", status: "completed", outcome: "complete" });
    expect(result).not.toHaveProperty("action");
    expect(result.published).toBeGreaterThan(0);
  });

  it("records cards silently first, then publishes card.suspended when a card is suspended", async () => {
    const poll = h.poller("cards");
    expect(await poll()).toMatchObject({ status: "completed", published: 0 });
    const active = company().cards.find((card) => card.status === "Active");
    if (active === undefined) throw new Error("no active card");
    h.sandbox.control.state.setCardStatus(active, "Suspended");
    expect(await poll()).toMatchObject({ status: "completed", published: 1 });
    expect(h.published[0]).toMatchObject({
      detailType: "card.suspended",
      detail: { subject: { type: "card", id: active.id }, data: { changes: [expect.objectContaining({ path: "/status", after: "Suspended" })] } },
    });
  });

  it("counts the events of every type a cycle published in its result", async () => {
    const poll = h.poller("cards");
    await poll();
    const [suspended, terminated] = company().cards.filter((card) => card.status === "Active");
    if (suspended === undefined || terminated === undefined) throw new Error("fewer than two active cards");
    h.sandbox.control.state.setCardStatus(suspended, "Suspended");
    h.sandbox.control.state.setCardStatus(terminated, "Terminated");
    expect(await poll()).toMatchObject({ status: "completed", published: 2 });
    expect(h.published.map((e) => e.detailType).sort()).toEqual(["card.status_changed", "card.suspended"]);
  });

  it.each([
    [{ mode: "suspend-only-SECRET" }, "mode"],
    [{ detail: { mode: "FULL-SECRET" } }, "detail.mode"],
    [{ mode: 7 }, "mode"],
    [{ mode: "constructor" }, "mode"],
  ])("rejects a card mode it does not know (%j), naming the field without echoing the value", async (event, field) => {
    const result = h.poller("cards")(event as PollEvent);
    await expect(result).rejects.toMatchObject({ name: "PollEventError", field, message: `Poll event field ${field} must be "full" or "suspended-only"` });
    expect(h.published).toEqual([]);
    expect(h.refreshTokensPresented).toEqual([]);
    expect(h.output.join("\n")).not.toMatch(/SECRET/);
    expect(h.output.join("\n")).toContain("PollEventError");
  });

  it.each([
    ["another poller's schedule", "transactions", { kind: "cards", tenant: TENANT, scheduledTime: "2026-01-01T00:00:00Z" }, "kind"],
    ["another poller's schedule", "cards", { kind: "transactions", tenant: TENANT, scheduledTime: "2026-01-01T00:00:00Z" }, "kind"],
    ["another tenant's schedule", "transactions", { kind: "transactions", tenant: "heron", scheduledTime: "2026-01-01T00:00:00Z" }, "tenant"],
    ["another tenant's schedule", "cards", { kind: "cards", tenant: "heron", mode: "suspended-only" }, "tenant"],
  ] as const)("refuses the input of %s (%s poller), naming the field, before any provider call or write", async (_, kind, event, field) => {
    const result = h.poller(kind)(event as PollEvent);
    await expect(result).rejects.toMatchObject({ name: "PollEventError", field });
    expect(h.published).toEqual([]);
    expect(h.refreshTokensPresented).toEqual([]);
    expect(h.pendingAtProvider()).toBeGreaterThan(0);
    expect(h.output.join("\n")).toContain("PollEventError");
  });

  it.each([
    ["a card mode in a rule event's detail, given to the transaction poller", "transactions", { detail: { mode: "suspended-only" } }, "detail.mode"],
    ["a detail that is no object, given to the card poller", "cards", { detail: "suspended-only" }, "detail"],
  ] as const)("refuses %s, which would run another cycle than the one asked for, before any provider call or write", async (_, kind, event, field) => {
    const result = h.poller(kind)(event as unknown as PollEvent);
    await expect(result).rejects.toMatchObject({ name: "PollEventError", field });
    expect(h.published).toEqual([]);
    expect(h.refreshTokensPresented).toEqual([]);
    expect(h.output.join("\n")).toContain("PollEventError");
  });

  it("runs the cycle its own schedule's input asks for", async () => {
    const tick = { kind: "transactions", tenant: TENANT, scheduledTime: "2026-01-01T00:00:00Z" } as PollEvent;
    expect(await h.poller("transactions")(tick)).toMatchObject({ kind: "transactions", status: "completed", outcome: "complete" });
    expect(await h.poller("cards")({ ...tick, kind: "cards", mode: "suspended-only" } as PollEvent)).toMatchObject({ kind: "cards", status: "completed" });
  });

  it("writes an invalid card's quarantine record with one table request per walk, whether the record is new or held", async () => {
    // Ids the client's schema rejects (a card id starts with CA): quarantined on every walk.
    const cards = company().cards as unknown as object[];
    const [model] = company().cards;
    for (const n of [1, 2, 3]) cards.push({ ...model, id: `ZZ${String(n).padStart(10, "0")}` });
    const quarantineRequests: string[] = [];
    const dynamo = localDynamoClient();
    dynamo.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { Key?: { pk?: { S?: string } }; Item?: { pk?: { S?: string } } };
        if ((input.Key ?? input.Item)?.pk?.S?.startsWith("QUAR#")) quarantineRequests.push(String(context.commandName));
        return next(args);
      },
      { step: "build", name: "countQuarantineRequests" },
    );
    const eventBridge = new EventBridgeClient({ region: "eu-west-1", credentials: { accessKeyId: "x", secretAccessKey: "x" } });
    const poll = h.poller("cards", { clients: () => ({ dynamo, eventBridge, secrets: h.secrets.client }) });
    for (const walk of ["new", "held"]) {
      quarantineRequests.length = 0;
      expect(await poll(), walk).toMatchObject({ status: "completed", outcome: "complete", quarantined: 3 });
      expect(quarantineRequests, walk).toHaveLength(3);
      // A later walk, as the schedule runs it: the records are held, their retention restarted.
      h.sandbox.control.advanceClock(600);
    }
    expect(await new DynamoQuarantine({ doc: h.table.doc, tableName: h.table.tableName, tenant: TENANT, clock: h.clock }).size()).toBe(3);
    dynamo.destroy();
  });

  it("reads card details when the tenant's CARD_DETAILS is true, and publishes card.updated for a spend limit amount", async () => {
    const poll = h.poller("cards", { env: { ...h.env, CARD_DETAILS: "true" } });
    await poll();
    const card = company().cards.find((c) => c.status === "Active" && c.spendLimit.active);
    if (card === undefined) throw new Error("no active card with an active spend limit");
    card.spendLimit.maxAmount += 250;
    expect(await poll()).toMatchObject({ status: "completed", published: 1 });
    expect(h.published[0]).toMatchObject({
      detailType: "card.updated",
      detail: { subject: { id: card.id }, data: { changes: [{ path: "/purchase_limits/amount", after: card.spendLimit.maxAmount }] } },
    });
    // Without it (the default), the same kind of change is not seen.
    card.spendLimit.maxAmount += 250;
    expect(await h.poller("cards")()).toMatchObject({ status: "completed", published: 0 });
  });

  it("publishes card.created for every card on first sight when the tenant's EMIT_CARD_CREATED is true", async () => {
    const result = await h.poller("cards", { env: { ...h.env, EMIT_CARD_CREATED: "true" } })();
    expect(result).toMatchObject({ status: "completed", published: company().cards.length });
    expect(new Set(h.published.map((e) => e.detailType))).toEqual(new Set(["card.created"]));
  });

  it("skips a fast-path tick, without failing, while a full walk holds the card cycle lease (one left by a walk that timed out)", async () => {
    // Reserved concurrency 1 queues a tick behind a running walk; the lease is what it meets once a walk died holding it.
    await h.poller("cards")();
    const lock = new DynamoLeaseLock({ doc: h.table.doc, tableName: h.table.tableName, clock: h.clock });
    const lease = await lock.tryAcquire(leaseNames.cardsCycle(TENANT), 60_000);
    const suspended = company().cards.find((card) => card.status === "Active");
    if (suspended === undefined) throw new Error("no active card");
    h.sandbox.control.state.setCardStatus(suspended, "Suspended");
    // The input of the stack's fast-path schedule (test/infra/tenant-stack.test.ts pins it).
    const tick = { kind: "cards", tenant: TENANT, scheduledTime: "2026-01-01T00:00:00Z", mode: "suspended-only" } as const;
    expect(await h.poller("cards")(tick)).toEqual({ kind: "cards", status: "skipped", reason: "lease_held" });
    expect(h.published).toHaveLength(0);
    await lease?.release();
    // The next tick publishes the suspension: nothing was lost to the skip.
    expect(await h.poller("cards")(tick)).toMatchObject({ status: "completed", published: 1 });
    expect(h.published.map((e) => e.detailType)).toEqual(["card.suspended"]);
  });

  it("emits FullCardWalks with the tenant and service dimensions for a full walk only: not for a fast-path tick, nor a walk skipped for a held lease", async () => {
    const walkDocs = () =>
      h.output
        .filter((line) => line.includes('"_aws"'))
        .map((line) => JSON.parse(line) as Record<string, unknown> & { _aws: { CloudWatchMetrics: { Namespace: string; Metrics: { Name: string }[]; Dimensions: string[][] }[] } })
        .filter((doc) => doc._aws.CloudWatchMetrics.some((m) => m.Metrics.some((metric) => metric.Name === "FullCardWalks")));
    await h.poller("cards")();
    const [doc, ...more] = walkDocs();
    expect(more).toEqual([]);
    // Exactly what Heartbeat-PollCards reads (test/infra/ops-alarms.test.ts): a plain metric matches its dimension set only.
    expect(doc?._aws.CloudWatchMetrics[0]).toMatchObject({ Namespace: "QashioBridge", Dimensions: [["service", "tenant"]] });
    expect(doc).toMatchObject({ FullCardWalks: 1, tenant: TENANT, service: "qashio-bridge" });
    await h.poller("cards")({ mode: "suspended-only" });
    expect(walkDocs()).toHaveLength(1);
    const lock = new DynamoLeaseLock({ doc: h.table.doc, tableName: h.table.tableName, clock: h.clock });
    const lease = await lock.tryAcquire(leaseNames.cardsCycle(TENANT), 60_000);
    expect(await h.poller("cards")()).toEqual({ kind: "cards", status: "skipped", reason: "lease_held" });
    await lease?.release();
    expect(walkDocs()).toHaveLength(1);
  });

  it("takes the suspended-only fast path when the schedule asks for it", async () => {
    await h.poller("cards")();
    const [active, other] = company().cards.filter((card) => card.status === "Active");
    if (active === undefined || other === undefined) throw new Error("fewer than two active cards");
    h.sandbox.control.state.setCardStatus(active, "Suspended");
    // Not on the suspended list: only a full cycle sees it.
    h.sandbox.control.state.setCardStatus(other, "Terminated");
    const result = await h.poller("cards")({ mode: "suspended-only" });
    expect(result.published).toBe(1);
    expect(h.published.map((e) => e.detailType)).toEqual(["card.suspended"]);
    expect(await h.poller("cards")()).toMatchObject({ published: 1 });
    expect(h.published.map((e) => e.detailType)).toEqual(["card.suspended", "card.status_changed"]);
  });
});
