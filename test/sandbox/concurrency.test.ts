/**
 * The sandbox under concurrent and interleaved requests, as a provider serves several clients at once: two bridge
 * processes and a dashboard user on the control surface. Requests are fired together (Promise.all) in-process and
 * over a listening server.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { LATEST_SANDBOX_TIME_MS } from "../../sandbox/clock.js";
import { SUSPENSION_PROCESSING_SECONDS } from "../../sandbox/index.js";
import { BASE, CLIENT, REDIRECT_URI, harness, tokensFor, type Harness, type Row } from "./helpers.js";

const LIST = "/public/v1/erp/transactions";
const ACK = "/public/v1/erp/transactions/acknowledge";

let h: Harness;
beforeEach(async () => {
  h = await harness();
});

async function control(path: string, body?: unknown, method = body === undefined ? "GET" : "POST"): Promise<{ status: number; body: Row }> {
  const res = await h.sandbox.fetch(`${BASE}/_sandbox${path}`, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Row };
}

function token(body: Record<string, unknown>): Promise<{ status: number; body: Row }> {
  return h.sandbox
    .fetch(`${BASE}/oauth2/token`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ ...CLIENT, ...body }) })
    .then(async (res) => ({ status: res.status, body: (await res.json()) as Row }));
}

function checkPage(body: Row): void {
  const { pagination, data } = body as { pagination: Row; data: Row[] };
  const before = (pagination.page - 1) * pagination.page_size;
  expect(data.length).toBe(Math.max(0, Math.min(pagination.page_size, pagination.total_records - before)));
  expect(pagination.total_pages).toBe(Math.ceil(pagination.total_records / pagination.page_size));
  expect(pagination.has_next).toBe(pagination.page < pagination.total_pages);
  const created = data.map((t) => String(t.created_at));
  expect([...created].sort().reverse()).toEqual(created);
}

describe("lists read while acknowledges and new transactions interleave", () => {
  it("answers every page consistent with itself, newest first", async () => {
    const { body: first } = await h.json(`${LIST}?client_sync_status=not_synced&page_size=100`);
    const ids = (first.data as Row[]).map((t) => String(t.id));
    const requests: Promise<unknown>[] = [];
    for (let i = 0; i < ids.length; i += 3) {
      requests.push(h.json(ACK, { body: { transaction_ids: ids.slice(i, i + 3) } }).then((r) => expect(r.status).toBe(200)));
      requests.push(control(`/companies/${h.companyId}/transactions`, { count: 2 }).then((r) => expect(r.status).toBe(201)));
      for (const status of ["not_synced", "synced", ""]) {
        for (const page of [1, 2, 3]) {
          const q = status ? `client_sync_status=${status}&` : "";
          requests.push(h.json(`${LIST}?${q}page=${page}&page_size=4`).then((r) => checkPage(r.body)));
          requests.push(h.json(`${LIST}?${q}transaction_category=purchase&page=${page}&page_size=4`).then((r) => checkPage(r.body)));
        }
      }
    }
    await Promise.all(requests);
  });

  it("puts no item on two pages of one snapshot", async () => {
    await control(`/companies/${h.companyId}/transactions`, { count: 30 });
    for (const q of ["", "client_sync_status=not_synced&", "transaction_category=purchase&"]) {
      const pages = await Promise.all([1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((p) => h.json(`${LIST}?${q}page=${p}&page_size=7`)));
      const ids = pages.flatMap((p) => (p.body.data as Row[]).map((t) => String(t.id)));
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids.length).toBe(pages[0]?.body.pagination.total_records);
    }
  });
});

describe("acknowledge of ids while they change", () => {
  it("a change after the acknowledge makes the transaction outdated, one before leaves it to the acknowledge", async () => {
    const { body } = await h.json(`${LIST}?client_sync_status=not_synced&page_size=4`);
    const [a, b] = (body.data as Row[]).map((t) => String(t.id));
    // Patched before its acknowledge: still not_synced, then synced by it.
    const before = await control(`/companies/${h.companyId}/transactions/${a}`, { memo: "changed before" }, "PATCH");
    expect(before.body.data.client_sync_status).toBe("not_synced");
    const ack = await h.json(ACK, { body: { transaction_ids: [a, b] } });
    expect(ack.status).toBe(200);
    const after = await control(`/companies/${h.companyId}/transactions/${b}`, { memo: "changed after" }, "PATCH");
    expect(after.body.data.client_sync_status).toBe("outdated");
    expect((await h.json(`${LIST}/${a}`)).body.data.client_sync_status).toBe("synced");
    expect((await h.json(`${LIST}/${b}`)).body.data.client_sync_status).toBe("outdated");
  });

  it("linearises an acknowledge and a change fired together", async () => {
    const { body } = await h.json(`${LIST}?client_sync_status=not_synced&page_size=10`);
    const ids = (body.data as Row[]).map((t) => String(t.id));
    const results = await Promise.all([
      ...ids.map((id, i) => control(`/companies/${h.companyId}/transactions/${id}`, { memo: `m${i}` }, "PATCH")),
      h.json(ACK, { body: { transaction_ids: ids } }),
      ...ids.map((id, i) => control(`/companies/${h.companyId}/transactions/${id}`, { memo: `n${i}` }, "PATCH")),
    ]);
    for (const r of results) expect(r.status).toBe(200);
    const statuses = await Promise.all(ids.map((id) => h.json(`${LIST}/${id}`).then((r) => String(r.body.data.client_sync_status))));
    for (const s of statuses) expect(["synced", "outdated"]).toContain(s);
    const { body: outdated } = await h.json(`${LIST}?client_sync_status=outdated&page_size=100`);
    const { body: all } = await h.json(`${LIST}?page_size=100`);
    const counted = (all.data as Row[]).filter((t) => t.client_sync_status === "outdated").length;
    expect(outdated.pagination.total_records).toBe(counted);
  });
});

describe("OAuth under concurrent requests", () => {
  it("lets exactly one of two simultaneous refreshes with one token win, and the reuse revokes the family", async () => {
    const rt = h.tokens.refresh_token;
    const results = await Promise.all([token({ grant_type: "refresh_token", refresh_token: rt }), token({ grant_type: "refresh_token", refresh_token: rt })]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 401]);
    const winner = results.find((r) => r.status === 200)?.body as Row;
    expect((await h.call(LIST, { token: winner.access_token as string })).status).toBe(401);
    expect((await h.call(LIST)).status).toBe(401);
    expect((await token({ grant_type: "refresh_token", refresh_token: winner.refresh_token })).status).toBe(401);
  });

  it("exchanges an authorization code once when two exchanges race", async () => {
    const code = h.sandbox.control.issueAuthorizationCode({ companyId: h.companyId, redirectUri: REDIRECT_URI });
    const body = { grant_type: "authorization_code", code, redirect_uri: REDIRECT_URI };
    const results = await Promise.all([token(body), token(body), token(body)]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 401, 401]);
  });

  it("leaves other families alone when one family is revoked mid-flight", async () => {
    const other = await tokensFor(h.sandbox, h.companyId);
    const rt = h.tokens.refresh_token;
    await token({ grant_type: "refresh_token", refresh_token: rt });
    const [reuse, read] = await Promise.all([token({ grant_type: "refresh_token", refresh_token: rt }), h.call(LIST, { token: other.access_token })]);
    expect(reuse.status).toBe(401);
    expect(read.status).toBe(200);
  });
});

describe("faults under concurrent requests", () => {
  it("answers one armed 500 to exactly one of two acknowledges, which changes nothing", async () => {
    const { body } = await h.json(`${LIST}?client_sync_status=not_synced&page_size=4`);
    const [a, b] = (body.data as Row[]).map((t) => String(t.id));
    await control("/faults", { method: "POST", path_prefix: ACK, status: 500, count: 1 });
    const [ra, rb] = await Promise.all([h.json(ACK, { body: { transaction_ids: [a] } }), h.json(ACK, { body: { transaction_ids: [b] } })]);
    expect([ra.status, rb.status].sort()).toEqual([200, 500]);
    const failed = ra.status === 500 ? a : b;
    expect((await h.json(`${LIST}/${failed}`)).body.data.client_sync_status).toBe("not_synced");
  });
});

describe("suspension and clock", () => {
  it("commits one suspension of concurrent requests after the delay", async () => {
    const { body } = await h.json("/public/v1/erp/cards?status=active&page_size=1");
    const id = String((body.data as Row[])[0]?.id);
    const put = () => h.json(`/public/v1/core/cards/${id}/change_status`, { method: "PUT", body: { status: "suspended" } });
    const rs = await Promise.all([put(), put(), put()]);
    for (const r of rs) expect(r.status).toBe(200);
    expect((await h.json(`/public/v1/erp/cards/${id}`)).body.data.status).toBe("Active");
    await Promise.all([control("/clock", { advance_seconds: 15 }), control("/clock", { advance_seconds: 15 })]);
    expect((await h.json(`/public/v1/erp/cards/${id}`)).body.data.status).toBe("Suspended");
  });
});

describe("suspension commit on a clock that follows real time", () => {
  /** A real-time sandbox with an active card whose suspension falls due 100 ms from now, at `dueMs`. */
  async function suspensionDueSoon(): Promise<{ rt: Harness; id: string; dueMs: number }> {
    const rt = await harness({ realTime: true });
    const { body } = await rt.json("/public/v1/erp/cards?status=active&page_size=1");
    const id = String((body.data as Row[])[0]?.id);
    expect((await rt.json(`/public/v1/core/cards/${id}/change_status`, { method: "PUT", body: { status: "suspended" } })).status).toBe(200);
    const dueMs = rt.sandbox.control.now() + SUSPENSION_PROCESSING_SECONDS * 1000;
    rt.sandbox.control.advanceClock(SUSPENSION_PROCESSING_SECONDS - 0.1);
    return { rt, id, dueMs };
  }

  it("shows a suspension that became due while the request waited out the latency", async () => {
    const { rt, id, dueMs } = await suspensionDueSoon();
    // Every answer now waits 400 ms.
    rt.sandbox.control.setLatency(400);
    const [card, list, summary] = await Promise.all([
      rt.json(`/public/v1/erp/cards/${id}`),
      rt.json("/public/v1/erp/cards?status=suspended&page_size=100"),
      rt.json("/public/v1/erp/company/summary"),
    ]);
    expect(Date.parse(String(card.body.meta.timestamp))).toBeGreaterThanOrEqual(dueMs);
    expect(card.body.data.status).toBe("Suspended");
    expect((list.body.data as Row[]).map((c) => c.id)).toContain(id);
    expect(summary.body.data.cards.by_status.suspended).toBeGreaterThanOrEqual(1);
  });

  it("shows a suspension that became due while the request waited out an injected delay, after the latency's commit", async () => {
    const { rt, id } = await suspensionDueSoon();
    rt.sandbox.control.state.faults.add({ method: "GET", pathPrefix: `/public/v1/erp/cards/${id}`, delayMs: 400, count: 1 });
    expect((await rt.json(`/public/v1/erp/cards/${id}`)).body.data.status).toBe("Suspended");
  });
});

describe("a clock that follows real time", () => {
  it("never runs backwards when the host's wall clock is stepped back (NTP), so an expired code stays expired", async () => {
    const rt = await harness({ realTime: true });
    const code = rt.sandbox.control.issueAuthorizationCode({ companyId: rt.companyId, redirectUri: REDIRECT_URI });
    rt.sandbox.control.advanceClock(600);
    const before = rt.sandbox.control.now();
    const wall = Date.now();
    vi.spyOn(Date, "now").mockReturnValue(wall - 3_600_000);
    expect(rt.sandbox.control.now()).toBeGreaterThanOrEqual(before);
    const res = await rt.sandbox.fetch(`${BASE}/oauth2/token`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ ...CLIENT, grant_type: "authorization_code", code, redirect_uri: REDIRECT_URI }),
    });
    expect(res.status).toBe(401);
  });
});

describe("a clock move on a clock that follows real time", () => {
  // Real time moves while the move is checked and made: a move to the latest time the clock holds, allowed at the
  // check, must not then be refused as one past it (an unexpected RangeError, a 500 at the control surface).
  it("makes a move to the latest time it was allowed, real time passing between the check and the move", async () => {
    const rt = await harness({ realTime: true });
    const real = performance.now();
    let readings = Number.NEGATIVE_INFINITY;
    vi.spyOn(performance, "now").mockImplementation(() => ((readings += 1) > 1 ? real + 5 : real));
    const seconds = (LATEST_SANDBOX_TIME_MS - rt.sandbox.control.now()) / 1000;
    readings = 0;
    expect(() => rt.sandbox.control.advanceClock(seconds)).not.toThrow();
    expect(rt.sandbox.control.now()).toBeGreaterThanOrEqual(LATEST_SANDBOX_TIME_MS);
  });
});

describe("over a listening server", () => {
  let server: { url: string; close(): Promise<void> } | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it("serves concurrent refreshes and acknowledges like the in-process fetch", async () => {
    server = await h.sandbox.listen(0);
    const url = server.url;
    const post = (path: string, body: unknown, auth?: string) =>
      fetch(`${url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(auth ? { authorization: `Bearer ${auth}` } : {}) },
        body: JSON.stringify(body),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as Row }));
    const rt = h.tokens.refresh_token;
    const rs = await Promise.all(Array.from({ length: 5 }, () => post("/oauth2/token", { ...CLIENT, grant_type: "refresh_token", refresh_token: rt })));
    expect(rs.filter((r) => r.status === 200)).toHaveLength(1);
    const fresh = await tokensFor(h.sandbox, h.companyId);
    const list = (await fetch(`${url}${LIST}?client_sync_status=not_synced&page_size=20`, { headers: { authorization: `Bearer ${fresh.access_token}` } }).then((r) => r.json())) as Row;
    const ids = (list.data as Row[]).map((t) => String(t.id));
    const acks = await Promise.all(ids.map((id) => post(ACK, { transaction_ids: [id] }, fresh.access_token)));
    for (const r of acks) expect(r.status).toBe(200);
    const after = (await fetch(`${url}${LIST}?client_sync_status=not_synced&page_size=20`, { headers: { authorization: `Bearer ${fresh.access_token}` } }).then((r) => r.json())) as Row;
    expect(after.pagination.total_records).toBe(list.pagination.total_records - ids.length);
  });
});
