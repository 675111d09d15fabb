/**
 * The engine against the provider sandbox through the real QashioClient: proves the client satisfies the
 * provider port and the cycle drains a seeded backlog, sees PATCHed changes, refunds and suspensions.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { createSandbox, SANDBOX_IN_PROCESS_URL, type Sandbox, type SandboxOptions } from "../../sandbox/index.js";
import { OAuthTokenProvider, QashioClient, exchangeCode, refresh, storedTokensOf } from "../../shared/qashio/index.js";
import { pollCards, pollTransactions, ReauthorizationNeededError, type ProviderPort } from "../../shared/bridge/index.js";
import { makeRig, MemoryLock, MemoryTokenStore, type TestRig } from "./fakes.js";

const REDIRECT = "http://127.0.0.1:8765/callback";
const START = "2025-03-15T12:00:00Z";

const tokenCalls = { count: 0 };

interface World {
  sandbox: Sandbox;
  store: MemoryTokenStore;
  oauth: { baseUrl: string; clientId: string; clientSecret: string; fetch: Sandbox["fetch"] };
  companyId: string;
  client: QashioClient;
  rig: TestRig;
  control(method: string, path: string, body?: unknown): Promise<Record<string, unknown>>;
  /** Answers a request of the bridge's client in the sandbox's place when it returns a response. */
  intercept?: (url: string, init: RequestInit | undefined) => Promise<Response | undefined>;
}

async function world(options: SandboxOptions = {}): Promise<World> {
  const sandbox = createSandbox({ seed: 3, startTime: START, ...options });
  const [company] = sandbox.control.companies().filter((c) => c.apiAccessEnabled);
  const companyId = company!.id;
  const oauth = { baseUrl: SANDBOX_IN_PROCESS_URL, clientId: "sandbox-client", clientSecret: "sandbox-secret", fetch: sandbox.fetch };
  const code = sandbox.control.issueAuthorizationCode({ companyId, redirectUri: REDIRECT });
  const store = new MemoryTokenStore(storedTokensOf(await exchangeCode(oauth, { code, redirectUri: REDIRECT }), Date.parse(START)));
  const rig = makeRig({ tenant: companyId, emitCardCreated: false });
  rig.clock.ms = Date.parse(START);
  const fetch: typeof sandbox.fetch = async (input, init) => {
    if (String(input).endsWith("/oauth2/token")) tokenCalls.count += 1;
    return (await w.intercept?.(String(input), init)) ?? sandbox.fetch(input, init);
  };
  const tokenProvider = new OAuthTokenProvider({ ...oauth, fetch, store, lock: new MemoryLock(rig.clock), clock: rig.clock });
  const client = new QashioClient({ baseUrl: SANDBOX_IN_PROCESS_URL, tokenProvider, fetch, clock: rig.clock });
  // The client is the provider port: this assignment is the compile-time proof.
  const provider: ProviderPort = client;
  Object.assign(rig.deps, { provider });
  const control = async (method: string, path: string, body?: unknown) => {
    const res = await sandbox.fetch(`${SANDBOX_IN_PROCESS_URL}/_sandbox/companies/${companyId}${path}`, {
      method,
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    expect(res.status, `${method} ${path}`).toBeLessThan(300);
    return (await res.json()) as Record<string, unknown>;
  };
  const w: World = { sandbox, store, oauth, companyId, client, rig, control };
  return w;
}

async function pullable(client: QashioClient): Promise<number> {
  const a = await client.listTransactions({ client_sync_status: "not_synced", page: 1, page_size: 1 });
  const b = await client.listTransactions({ client_sync_status: "outdated", page: 1, page_size: 1 });
  return a.pagination.total_records + b.pagination.total_records;
}

describe("bridge engine against the sandbox", () => {
  let w: World;
  beforeEach(async () => {
    w = await world();
  });

  it("drains the seeded backlog in one cycle and leaves nothing pullable", async () => {
    const before = await pullable(w.client);
    expect(before).toBeGreaterThan(0);
    const report = await pollTransactions(w.rig.deps);
    expect(report.outcome).toBe("complete");
    expect(report.handled).toBe(before);
    expect(await pullable(w.client)).toBe(0);
    expect(new Set(w.rig.publisher.ids).size).toBe(w.rig.publisher.events.length);
    const second = await pollTransactions(w.rig.deps);
    expect(second.handled).toBe(0);
  });

  it("publishes transaction.changed after a dashboard PATCH, and a refund with its parent", async () => {
    await pollTransactions(w.rig.deps);
    const [purchase] = (await w.client.listTransactions({ transaction_category: "purchase", page: 1, page_size: 1 })).data;
    await w.control("PATCH", `/transactions/${purchase!.id}`, { memo: "patched in the dashboard" });
    await w.control("POST", "/transactions", { count: 1, transaction_category: "refund", parent_qashio_id: purchase!.qashio_id });
    const seen = w.rig.publisher.events.length;
    await pollTransactions(w.rig.deps);
    const fresh = w.rig.publisher.events.slice(seen);
    const changed = fresh.find((e) => e.detail.type === "transaction.changed" && e.detail.subject.id === purchase!.id);
    expect(changed?.detail.data.changes).toContainEqual(expect.objectContaining({ path: "/memo", after: "patched in the dashboard" }));
    const refund = fresh.find((e) => e.detail.type === "transaction.created" && e.detail.data.object["parent_qashio_id"] === purchase!.qashio_id);
    expect(refund?.detail.data.parent).toEqual({ id: purchase!.id, qashio_id: purchase!.qashio_id });
  });

  it("reads a page again instead of re-sending its failed acknowledge, so a change made meanwhile is published", async () => {
    const acks: string[][] = [];
    let changed: string | undefined;
    w.intercept = async (url, init) => {
      if (!url.endsWith("/erp/transactions/acknowledge")) return undefined;
      const ids = (JSON.parse(String(init?.body)) as { transaction_ids: string[] }).transaction_ids;
      acks.push(ids);
      if (changed !== undefined) return undefined;
      // The first acknowledge fails unanswered-for-now, and the dashboard edits one of its transactions meanwhile: an
      // acknowledge sent again as it was would mark that edit synced, unseen.
      changed = ids[0];
      await w.control("PATCH", `/transactions/${changed}`, { memo: "edited while the acknowledge failed" });
      return new Response(JSON.stringify({ success: false, message: "unavailable" }), { status: 503, headers: { "content-type": "application/json" } });
    };
    const report = await pollTransactions(w.rig.deps);
    expect(report.outcome).toBe("complete");
    expect(changed).toBeDefined();
    const edit = w.rig.publisher.events.find((e) => e.detail.type === "transaction.changed" && e.detail.subject.id === changed);
    expect(edit?.detail.data.changes).toContainEqual(expect.objectContaining({ path: "/memo", after: "edited while the acknowledge failed" }));
    // Every id of the failed call was acknowledged after its fresh read; nothing is left to pull.
    expect(acks.slice(1).flat()).toEqual(expect.arrayContaining(acks[0]!));
    expect(await pullable(w.client)).toBe(0);
    expect(new Set(w.rig.publisher.ids).size).toBe(w.rig.publisher.events.length);
  });

  it("stops the cycle with the failure once the acknowledge failed the client's attempt limit in a row", async () => {
    const calls: string[] = [];
    w.intercept = async (url) => {
      if (url.includes("/erp/transactions?")) calls.push("list");
      if (!url.endsWith("/erp/transactions/acknowledge")) return undefined;
      calls.push("ack");
      return new Response("{}", { status: 500, headers: { "content-type": "application/json" } });
    };
    await expect(pollTransactions(w.rig.deps)).rejects.toThrow(/acknowledge transactions/);
    // Five attempts (the client's default limit), each after a fresh read of the page.
    const acks = calls.flatMap((call, i) => (call === "ack" ? [i] : []));
    expect(acks).toHaveLength(5);
    for (let k = 1; k < acks.length; k++) expect(calls.slice(acks[k - 1]! + 1, acks[k]!)).toContain("list");
    expect(w.rig.publisher.events.length).toBeGreaterThan(0);
    expect(new Set(w.rig.publisher.ids).size).toBe(w.rig.publisher.events.length);
  });

  it("publishes card.suspended after a dashboard status change, in both walk modes", async () => {
    await pollCards(w.rig.deps);
    expect(w.rig.publisher.events).toHaveLength(0);
    const [active] = (await w.client.listErpCards({ status: "active", page: 1, page_size: 2 })).data;
    await w.control("POST", `/cards/${active!.id}/status`, { status: "Suspended" });
    await pollCards(w.rig.deps, { mode: "suspended-only" });
    expect(w.rig.publisher.events.map((e) => [e.detail.type, e.detail.subject.id])).toEqual([["card.suspended", active!.id]]);
    await pollCards(w.rig.deps);
    expect(w.rig.publisher.events).toHaveLength(1);
  });

  it("stops with a re-authorize error after one token call when the token family is revoked", async () => {
    // Another party used the stored refresh token: it is consumed, and presenting it again revokes the family.
    const stored = await w.store.load();
    await refresh(w.oauth, stored!.refreshToken);
    w.sandbox.control.advanceClock(3600);
    w.rig.clock.advance(3600_000);
    tokenCalls.count = 0;
    const error = await pollTransactions(w.rig.deps).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReauthorizationNeededError);
    expect((error as Error).message).toMatch(/re-authorize/);
    expect(tokenCalls.count).toBe(1);
    expect(w.rig.metrics.sum("TokenFamilyRevoked")).toBe(1);
    await expect(pollTransactions(w.rig.deps)).rejects.toBeInstanceOf(ReauthorizationNeededError);
  });
});

describe("card limit changes against the sandbox", () => {
  let w: World;
  beforeEach(async () => {
    w = await world();
  });

  /** Raises an active card's spend limit through update_velocity_limit (the limit is active before and after). */
  async function raiseSpendLimit(): Promise<string> {
    const [active] = (await w.client.listErpCards({ status: "active", page: 1, page_size: 1 })).data;
    const before = await w.client.getErpCard(active!.id);
    await w.client.updateVelocityLimit(active!.id, { spend_limit_active: true, spend_limit_max_amount: 1_000 });
    await pollCards(w.rig.deps);
    await w.client.updateVelocityLimit(active!.id, { spend_limit_active: true, spend_limit_max_amount: (before.purchase_limits?.amount ?? 1_000) + 500 });
    return active!.id;
  }

  it("publishes card.updated for a spend limit amount changed through update_velocity_limit when the tenant reads card details", async () => {
    Object.assign(w.rig.deps, { cardDetails: true });
    await pollCards(w.rig.deps);
    expect(w.rig.publisher.events).toHaveLength(0);
    const id = await raiseSpendLimit();
    w.rig.publisher.events.length = 0;
    await pollCards(w.rig.deps);
    const events = w.rig.publisher.events.map((e) => [e.detail.type, e.detail.subject.id, e.detail.data.changes?.map((c) => c.path)]);
    expect(events).toEqual([["card.updated", id, ["/purchase_limits/amount"]]]);
  });

  it("does not see a limit amount from the card list alone (card details off, the default)", async () => {
    await pollCards(w.rig.deps);
    await raiseSpendLimit();
    w.rig.publisher.events.length = 0;
    await pollCards(w.rig.deps);
    expect(w.rig.publisher.events).toEqual([]);
  });
});

describe("bridge engine against a sandbox that forgets old acknowledged transactions (retainTransactions, the demo's)", () => {
  it("delivers every new transaction, refund and change, round after round, while the sandbox holds no more than it needs", async () => {
    const n = 25;
    const w = await world({ retainTransactions: n });
    const store = () => w.sandbox.control.company(w.companyId)!.transactions;
    const seeded = store().all().filter((t) => t.client_sync_status !== "synced").length;
    await pollTransactions(w.rig.deps);
    type Made = { id: string; qashio_id: string };
    const purchases: Made[][] = [];
    const refunds: Made[] = [];
    let changes = 0;
    let parentsHeldForRefunds = 0;
    for (let round = 0; round < 60; round++) {
      purchases.push((await w.control("POST", "/transactions", { count: 2, transaction_category: "purchase" })).data as Made[]);
      // A refund of a purchase six rounds old (19 transactions back): a held refund then keeps it past the newest n.
      const earlier = purchases[round - 6]?.[0];
      if (earlier) refunds.push(...((await w.control("POST", "/transactions", { parent_qashio_id: earlier.qashio_id })).data as Made[]));
      const last = purchases[round - 1]?.[1];
      if (last) {
        await w.control("PATCH", `/transactions/${last.id}`, { memo: `changed in round ${round}` });
        changes += 1;
      }
      expect((await pollTransactions(w.rig.deps)).outcome).toBe("complete");
      expect(await pullable(w.client)).toBe(0);
      // Beyond the newest n, only what a held transaction names as its parent.
      const held = store().all();
      const named = new Set(held.map((t) => t.parent_qashio_id));
      const beyond = held.slice(0, -n);
      expect(beyond.filter((t) => !named.has(t.qashio_id))).toEqual([]);
      parentsHeldForRefunds += beyond.length;
    }
    expect(parentsHeldForRefunds).toBeGreaterThan(0);
    expect(store().size).toBeLessThan(n + 10);

    const events = w.rig.publisher.events;
    const createdIds = events.filter((e) => e.detail.type === "transaction.created").map((e) => e.detail.subject.id);
    const made = [...purchases.flat(), ...refunds].map((t) => t.id);
    expect(createdIds).toHaveLength(seeded + made.length);
    expect(new Set(createdIds)).toEqual(new Set([...createdIds.slice(0, seeded), ...made]));
    for (const refund of refunds) {
      const event = events.find((e) => e.detail.subject.id === refund.id);
      const parent = purchases.flat().find((p) => p.qashio_id === event?.detail.data.object["parent_qashio_id"]);
      expect(event?.detail.data.parent).toEqual({ id: parent?.id, qashio_id: parent?.qashio_id });
    }
    expect(events.filter((e) => e.detail.type === "transaction.changed")).toHaveLength(changes);
  });
});
