import { readFileSync } from "node:fs";
import { beforeEach, describe, expect, it } from "vitest";
import { StaticTokenProvider } from "../../shared/qashio/auth/token-provider.js";
import { QashioClient } from "../../shared/qashio/client.js";
import { InvalidResponseError, RateLimitedError, ServerError, TimeoutError } from "../../shared/qashio/errors.js";
import { ErrorEnvelopeSchema, TransactionSchema } from "../../shared/qashio/schemas/index.js";
import { createSandbox, LEGACY_PREFIX, ValidationError } from "../../sandbox/index.js";
import { consumedOf } from "../../sandbox/data/spend-limits.js";
import { canSpendNow } from "../../sandbox/data/transactions.js";
import { MAX_RESET_TRANSACTIONS } from "../../sandbox/limits.js";
import { erpCardDetailView } from "../../sandbox/views.js";
import { round2 } from "../../sandbox/prng.js";
import { BASE, CLIENT, REDIRECT_URI, errorCodes, fillAccounts, harness, instantClock, netSpendIn, START, START_MONTH, tokensFor, type Harness, type Row } from "./helpers.js";

const LIST = "/public/v1/erp/transactions";

let h: Harness;
beforeEach(async () => {
  h = await harness();
});

const control = (path: string, body?: unknown, method?: string) => h.json(`/_sandbox${path}`, { body, method, token: null });
/** The status of a control PATCH of `fields` and its errors' field:code pairs, sorted. */
const patchRefusal = async (path: string, fields: Row) => {
  const { status, body } = await control(path, fields, "PATCH");
  return [status, errorCodes(body).sort()];
};

/** A token request (`body` given) or a validate call (`token` as bearer): status, OAuth code and challenge of the answer. */
async function oauthCall(path: string, body?: string, token?: string) {
  const headers: Record<string, string> = body === undefined ? {} : { "content-type": "application/json" };
  if (token !== undefined && body === undefined) headers.authorization = `Bearer ${token}`;
  const res = await h.sandbox.fetch(`${BASE}${path}`, { method: body === undefined ? "GET" : "POST", headers, body });
  const answer = (await res.json()) as Row;
  return { status: res.status, error: answer.error as unknown, description: answer.error_description as unknown, challenge: res.headers.get("www-authenticate") };
}

describe("companies and authorization codes", () => {
  it("lists the seeded companies with id and name", async () => {
    const { status, body } = await control("/companies");
    expect(status).toBe(200);
    expect(body.data.map((c: Row) => c.id)).toEqual([h.companyId, h.otherCompanyId, h.disabledCompanyId]);
    expect(body.data.every((c: Row) => typeof c.name === "string" && c.name.length > 0)).toBe(true);
  });

  it("counts each company's transactions in the list, new activity included", async () => {
    const counts = async () => ((await control("/companies")).body.data as Row[]).map((c) => [c.id, c.transactions]);
    const held = (id: string) => h.sandbox.control.company(id)!.transactions.size;
    expect(await counts()).toEqual([h.companyId, h.otherCompanyId, h.disabledCompanyId].map((id) => [id, held(id)]));
    const made = (await control(`/companies/${h.companyId}/transactions`, { count: 3, transaction_category: "card_loading" })).body.data as Row[];
    expect(made).toHaveLength(3);
    expect((await counts())[0]).toEqual([h.companyId, held(h.companyId)]);
  });

  it("issues a code as if the user approved, exchangeable once at the token endpoint", async () => {
    const { status, body } = await control(`/companies/${h.otherCompanyId}/authorization_codes`, { client_id: "sandbox-client", redirect_uri: REDIRECT_URI, scope: "cards:read" });
    expect(status).toBe(201);
    const exchange = () =>
      h.sandbox.fetch(`${BASE}/oauth2/token`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ grant_type: "authorization_code", ...CLIENT, code: body.code, redirect_uri: REDIRECT_URI }),
      });
    const first = await exchange();
    expect(first.status).toBe(200);
    expect(((await first.json()) as Row).scope).toBe("cards:read");
    expect((await exchange()).status).toBe(401);
  });

  it("refuses an unregistered redirect, an unknown client or scope (400) and an unknown company (404)", async () => {
    expect((await control(`/companies/${h.companyId}/authorization_codes`, { client_id: "sandbox-client", redirect_uri: "https://example.com/cb" })).status).toBe(400);
    expect((await control(`/companies/${h.companyId}/authorization_codes`, { client_id: "other", redirect_uri: REDIRECT_URI })).status).toBe(400);
    expect((await control(`/companies/${h.companyId}/authorization_codes`, { client_id: "sandbox-client", redirect_uri: REDIRECT_URI, scope: "root" })).status).toBe(400);
    const unknown = await control(`/companies/nope/authorization_codes`, { client_id: "sandbox-client", redirect_uri: REDIRECT_URI });
    expect(unknown.status).toBe(404);
    // The path parameter named, as the provider's own reads name theirs (`transactionId`, `cardId`).
    expect(errorCodes(unknown.body)).toEqual(["companyId:NOT_FOUND"]);
  });

  it("names the offending field of a refused authorization code request (§7: one errors entry per offending field)", async () => {
    const refused = async (body: Row) => errorCodes((await control(`/companies/${h.companyId}/authorization_codes`, body)).body);
    expect(await refused({ client_id: "other", redirect_uri: REDIRECT_URI }), "unknown client").toEqual(["client_id:INVALID_FORMAT"]);
    expect(await refused({ client_id: "sandbox-client", redirect_uri: "https://example.com/cb" }), "unregistered redirect").toEqual(["redirect_uri:INVALID_FORMAT"]);
    expect(await refused({ client_id: "sandbox-client", redirect_uri: REDIRECT_URI, scope: "root" }), "unknown scope").toEqual(["scope:INVALID_FORMAT"]);
    // An empty member is missing, not some client or redirect the sandbox does not know.
    expect(await refused({ client_id: "", redirect_uri: REDIRECT_URI }), "empty client").toEqual(["client_id:REQUIRED"]);
  });

  it("toggles a company's API access", async () => {
    expect((await control(`/companies/${h.companyId}/api_access`, { enabled: false })).status).toBe(200);
    expect((await h.json(LIST)).status).toBe(403);
    await control(`/companies/${h.companyId}/api_access`, { enabled: true });
    expect((await h.json(LIST)).status).toBe(200);
  });

  it("lists each company's API access as last toggled and the legacy key its x-api-key takes", async () => {
    const listed = async (id: string) => ((await control("/companies")).body.data as Row[]).find((c) => c.id === id) as Row;
    expect((await listed(h.companyId)).api_access_enabled).toBe(true);
    expect((await control(`/companies/${h.companyId}/api_access`, { enabled: false })).body.data).toEqual({ id: h.companyId, api_access_enabled: false });
    expect((await listed(h.companyId)).api_access_enabled).toBe(false);
    expect((await listed(h.otherCompanyId)).api_access_enabled).toBe(true);
    const key = (await listed(h.otherCompanyId)).legacy_api_key as string;
    const legacy = await h.json(`${LEGACY_PREFIX}/cards?companyId=${h.otherCompanyId}`, { token: null, headers: { "x-api-key": key } });
    expect(legacy.status).toBe(200);
  });
});

describe("activity generation", () => {
  it("creates new not_synced transactions that lead the list", async () => {
    const { status, body } = await control(`/companies/${h.companyId}/transactions`, { count: 3, transaction_category: "purchase" });
    expect(status).toBe(201);
    expect(body.data).toHaveLength(3);
    for (const tx of body.data as Row[]) {
      expect(TransactionSchema.safeParse(tx).success).toBe(true);
      expect(tx).toMatchObject({ client_sync_status: "not_synced", transaction_category: "purchase", company_id: h.companyId });
    }
    const newest = (await h.json(`${LIST}?client_sync_status=not_synced&page_size=3`)).body.data.map((t: Row) => t.id);
    expect(newest).toEqual((body.data as Row[]).map((t) => t.id).reverse());
  });

  it("refuses a member a control body does not take, naming it, and does nothing: a misspelt category made other spend", async () => {
    const before = h.sandbox.control.company(h.companyId)!.transactions.size;
    const made = await control(`/companies/${h.companyId}/transactions`, { count: 2, category: "refund" });
    expect([made.status, made.body.errors]).toEqual([400, [{ field: "category", code: "INVALID_FORMAT", message: "category is not a member of this body" }]]);
    expect(h.sandbox.control.company(h.companyId)!.transactions.size).toBe(before);
    // Beside a malformed member, every offending field at once (§7); through a body read by a transform too.
    expect(errorCodes((await control("/reset", { seed: -1, transaction: 5 })).body).sort()).toEqual(["seed:OUT_OF_RANGE", "transaction:INVALID_FORMAT"]);
    expect(errorCodes((await control("/faults", { status: 503, count: 1, path: "/public" })).body)).toEqual(["path:INVALID_FORMAT"]);
    expect((await control("/faults", undefined, "GET")).body.data).toEqual([]);
    // A member named after what every object inherits is no member of a body either.
    const clockBefore = await control("/clock", undefined, "GET");
    const inherited = await control("/clock", '{"advance_seconds": 60, "constructor": 1, "__proto__": {}}');
    expect([inherited.status, errorCodes(inherited.body).sort()]).toEqual([400, ["__proto__:INVALID_FORMAT", "constructor:INVALID_FORMAT"]]);
    expect((await control("/clock", undefined, "GET")).body.data).toEqual(clockBefore.body.data);
  });

  it("dates a transaction appearing now no later than now: an approved one was approved at most now (§2.2)", async () => {
    const { status, body } = await control(`/companies/${h.companyId}/transactions`, { count: 40, transaction_category: "purchase" });
    expect(status).toBe(201);
    const now = (await control("/clock")).body.data.now as string;
    const approved = (body.data as Row[]).filter((tx) => tx.approved_date_time !== null);
    expect(approved.length).toBeGreaterThan(0);
    for (const tx of approved) {
      const read = (await h.json(`${LIST}/${tx.id}`)).body.data as Row;
      expect(read.approval_status).toMatch(/approved/);
      // On a frozen clock a write stamp can lead now by a few milliseconds (stamps strictly rise): the later of the two.
      const latest = read.created_at > now ? read.created_at : now;
      expect(read.approved_date_time <= latest, `${read.qashio_id} approved at ${read.approved_date_time}, now ${now}`).toBe(true);
      expect(read.approved_date_time >= read.created_at).toBe(true);
    }
  });

  it("creates a refund whose parent_qashio_id names the purchase, and refuses a parent that is no purchase", async () => {
    const purchase = (await h.json(`${LIST}?transaction_category=purchase`)).body.data[0] as Row;
    const { body } = await control(`/companies/${h.companyId}/transactions`, { parent_qashio_id: purchase.qashio_id });
    const refund = body.data[0] as Row;
    expect(refund).toMatchObject({ transaction_category: "refund", parent_qashio_id: purchase.qashio_id, parent_id: purchase.id, merchant_name: purchase.merchant_name });
    expect(refund.transaction_amount).toBeLessThanOrEqual(purchase.transaction_amount);
    // A reversal of a purchase nothing has been given back of reverses all of it (one already refunded in full, as
    // seed 7's is, takes none: see the test of what is left to give back).
    const fresh = (await control(`/companies/${h.companyId}/transactions`, { transaction_category: "purchase" })).body.data[0] as Row;
    const reversal = await control(`/companies/${h.companyId}/transactions`, { parent_qashio_id: fresh.qashio_id, transaction_category: "reversal" });
    expect(reversal.body.data[0].transaction_amount).toBe(fresh.transaction_amount);
    expect((await h.json(`${LIST}?parent_qashio_id=${fresh.qashio_id}`)).body.data.map((c: Row) => c.id)).toEqual([reversal.body.data[0].id]);
    // Only money back names a parent purchase (§1 Refund matching): a child asked for without a category is a refund,
    // one asked for as another category is refused, naming the conflict, and nothing is made.
    const other = (await control(`/companies/${h.companyId}/transactions`, { transaction_category: "purchase" })).body.data[0] as Row;
    const child = (await control(`/companies/${h.companyId}/transactions`, { parent_qashio_id: other.qashio_id })).body.data[0] as Row;
    expect(child).toMatchObject({ transaction_category: "refund", transaction_type: "credit", parent_qashio_id: other.qashio_id });
    const listedBefore = (await h.json(`${LIST}?page_size=1`)).body.pagination.total_records as number;
    expect(listedBefore).toBeGreaterThan(0);
    const conflicting = await control(`/companies/${h.companyId}/transactions`, { parent_qashio_id: other.qashio_id, transaction_category: "purchase" });
    expect(conflicting.status).toBe(400);
    expect(ErrorEnvelopeSchema.parse(conflicting.body).errors).toEqual([
      expect.objectContaining({ field: "transaction_category", message: expect.stringMatching(/parent_qashio_id.*refund or a reversal/) }),
    ]);
    expect((await h.json(`${LIST}?page_size=1`)).body.pagination.total_records).toBe(listedBefore);
    const children = (await h.json(`${LIST}?parent_qashio_id=${purchase.qashio_id}`)).body.data as Row[];
    expect(children.map((c) => c.id)).toEqual(expect.arrayContaining([refund.id]));
    const bad = await control(`/companies/${h.companyId}/transactions`, { parent_qashio_id: refund.qashio_id });
    expect([bad.status, errorCodes(bad.body)]).toEqual([400, ["parent_qashio_id:INVALID_ENUM"]]);
    const unknown = await control(`/companies/${h.companyId}/transactions`, { parent_qashio_id: "CT0" });
    expect([unknown.status, errorCodes(unknown.body)]).toEqual([400, ["parent_qashio_id:NOT_FOUND"]]);
    // Empty is no id at all (a form error), not an id this company lacks.
    const empty = await control(`/companies/${h.companyId}/transactions`, { parent_qashio_id: "" });
    expect([empty.status, errorCodes(empty.body)]).toEqual([400, ["parent_qashio_id:REQUIRED"]]);
  });

  it.each([[{ count: 0 }], [{ count: 1001 }], [{ transaction_category: "gift" }]])("answers 400 for %j", async (payload) => {
    const { status, body } = await control(`/companies/${h.companyId}/transactions`, payload);
    expect(status).toBe(400);
    ErrorEnvelopeSchema.parse(body);
  });

  it("patches a transaction: updated_at and modified_date move even on a frozen clock, synced becomes outdated and stays so on another change", async () => {
    const synced = (await h.json(`${LIST}?client_sync_status=synced`)).body.data[0] as Row;
    const first = await control(`/companies/${h.companyId}/transactions/${synced.id}`, { memo: "split with team", approval_status: "approved" }, "PATCH");
    expect(first.status).toBe(200);
    expect(first.body.data).toMatchObject({ memo: "split with team", client_sync_status: "outdated" });
    expect(first.body.data.updated_at > synced.updated_at).toBe(true);
    expect(first.body.data.modified_date).toBe(first.body.data.updated_at);
    const second = await control(`/companies/${h.companyId}/transactions/${synced.id}`, { memo: "again" }, "PATCH");
    expect(second.body.data.updated_at > first.body.data.updated_at).toBe(true);
    // Changed again before it was acknowledged, it stays outdated (§3.1 knows no other move on a change).
    expect(second.body.data.client_sync_status).toBe("outdated");
    const notSynced = (await h.json(`${LIST}?client_sync_status=not_synced`)).body.data[0] as Row;
    const stays = await control(`/companies/${h.companyId}/transactions/${notSynced.id}`, { memo: "x" }, "PATCH");
    expect(stays.body.data.client_sync_status).toBe("not_synced");
  });

  it("treats a patch that changes no value as no change: updated_at stays, synced stays synced (§3.1)", async () => {
    const synced = (await h.json(`${LIST}?client_sync_status=synced`)).body.data[0] as Row;
    const path = `/companies/${h.companyId}/transactions/${synced.id}`;
    for (const body of [{}, { memo: synced.memo, segments: synced.segments }, { updated_at: "2030-01-01T00:00:00.000Z" }]) {
      const { status, body: patched } = await control(path, body, "PATCH");
      expect(status).toBe(200);
      expect(patched.data).toMatchObject({ client_sync_status: "synced", updated_at: synced.updated_at, modified_date: synced.modified_date });
    }
    expect((await h.json(`${LIST}?client_sync_status=outdated&qashio_id=${synced.qashio_id}`)).body.data).toEqual([]);
  });

  it("leaves stamped fields alone whatever is sent for them: a patch with an unparseable updated_at still applies, stamped by the write (§2.2 timing)", async () => {
    const tx = (await h.json(LIST)).body.data[0] as Row;
    const { status, body } = await control(`/companies/${h.companyId}/transactions/${tx.id}`, { memo: "restamped", updated_at: "yesterday", modified_date: 7 }, "PATCH");
    expect(status).toBe(200);
    expect(body.data.memo).toBe("restamped");
    expect(body.data.updated_at > tx.updated_at).toBe(true);
    expect(body.data.modified_date).toBe(body.data.updated_at);
  });

  it("refuses to patch identity or sync status (400), and an unknown transaction (404)", async () => {
    const tx = (await h.json(LIST)).body.data[0] as Row;
    const { status, body } = await control(`/companies/${h.companyId}/transactions/${tx.id}`, { id: "x", client_sync_status: "synced" }, "PATCH");
    expect(status).toBe(400);
    expect(errorCodes(body)).toEqual(["id:INVALID_FORMAT", "client_sync_status:INVALID_FORMAT"]);
    const unknown = await control(`/companies/${h.companyId}/transactions/2f1e7c52-0d3b-4c5a-9e8f-000000000000`, { memo: "x" }, "PATCH");
    expect(unknown.status).toBe(404);
    // §7: `field` is null only when not tied to one input; this one is the path's `id`, named as the provider's own
    // transaction read names its `transactionId`.
    expect(errorCodes(unknown.body)).toEqual(["id:NOT_FOUND"]);
  });

  it("refuses a PATCH body that is no object of fields, an array included, naming no field (§7), and changes nothing", async () => {
    const tx = (await h.json(LIST)).body.data[0] as Row;
    const before = (await h.json(`${LIST}/${tx.id}`)).body.data as Row;
    for (const body of [[], [{ memo: "x" }], "memo", 5]) {
      const refused = await control(`/companies/${h.companyId}/transactions/${tx.id}`, body, "PATCH");
      expect([refused.status, errorCodes(refused.body)], JSON.stringify(body)).toEqual([400, ["null:INVALID_FORMAT"]]);
    }
    expect((await h.json(`${LIST}/${tx.id}`)).body.data).toEqual(before);
  });

  it("refuses each identity field by name, leaving the transaction as it was", async () => {
    // A changed qashio_id or parent would be well-formed text the stored schema takes, yet the store looks purchases
    // and their refunds up by them: only the immutable list stops such a patch.
    const tx = (await h.json(LIST)).body.data[0] as Row;
    const path = `/companies/${h.companyId}/transactions/${tx.id}`;
    const before = (await h.json(`${LIST}/${tx.id}`)).body.data as Row;
    const fields = ["qashio_id", "company_id", "parent_id", "parent_qashio_id", "created_at"];
    for (const field of fields) {
      const { status, body } = await control(path, { [field]: "CT1000000000099" }, "PATCH");
      expect(status).toBe(400);
      expect(errorCodes(body)).toEqual([`${field}:INVALID_FORMAT`]);
    }
    expect((await h.json(`${LIST}/${tx.id}`)).body.data).toEqual(before);
    expect((await h.json(`${LIST}?qashio_id=${String(tx.qashio_id)}`)).body.data.map((t: Row) => t.id)).toEqual([tx.id]);
  });

  it("refuses a filtered field in a form its list filter cannot match (a flag as text, a last four or employee id as a number)", async () => {
    // The client reads "true" as true and 1234 as "1234"; the list filters compare the stored value, so such a
    // transaction would read as excluded (or as card 1234) yet never be listed by exclude_from_sync=true (or card_last_four).
    const tx = (await h.json(LIST)).body.data[0] as Row;
    const path = `/companies/${h.companyId}/transactions/${tx.id}`;
    const { status, body } = await control(path, { exclude_from_sync: "true", card_last_four: 1234, employee_id: 77 }, "PATCH");
    expect(status).toBe(400);
    expect(errorCodes(body).sort()).toEqual(["card_last_four:INVALID_FORMAT", "employee_id:INVALID_FORMAT", "exclude_from_sync:INVALID_FORMAT"]);
    const patched = await control(path, { exclude_from_sync: !tx.exclude_from_sync, card_last_four: "1234" }, "PATCH");
    expect(patched.status).toBe(200);
    const listed = (await h.json(`${LIST}?exclude_from_sync=${String(!tx.exclude_from_sync)}&card_last_four=1234&qashio_id=${String(tx.qashio_id)}`)).body.data as Row[];
    expect(listed.map((t) => t.id)).toEqual([tx.id]);
  });

  it("refuses a null exclude_from_sync (§2.2 types it boolean), which neither exclude_from_sync filter would list", async () => {
    const tx = (await h.json(LIST)).body.data[0] as Row;
    const { status, body } = await control(`/companies/${h.companyId}/transactions/${tx.id}`, { exclude_from_sync: null }, "PATCH");
    expect(status).toBe(400);
    expect(errorCodes(body)).toEqual(["exclude_from_sync:INVALID_FORMAT"]);
    const listed = (await h.json(`${LIST}?exclude_from_sync=${String(tx.exclude_from_sync)}&qashio_id=${String(tx.qashio_id)}`)).body.data as Row[];
    expect(listed.map((t) => [t.id, t.updated_at])).toEqual([[tx.id, tx.updated_at]]);
  });

  it("refuses null or a wrong type for the other fields §2.2 types that the sandbox always fills (visible, the status enums)", async () => {
    const tx = (await h.json(LIST)).body.data[0] as Row;
    const path = `/companies/${h.companyId}/transactions/${tx.id}`;
    const before = (await h.json(`${LIST}/${tx.id}`)).body.data as Row;
    expect(await patchRefusal(path, { visible: null, transaction_status: null, erp_sync_status: null, approval_status: 3 })).toEqual([
      400,
      ["approval_status:INVALID_FORMAT", "erp_sync_status:INVALID_FORMAT", "transaction_status:INVALID_FORMAT", "visible:INVALID_FORMAT"],
    ]);
    // A flag as text is no boolean either, though the client would read it as one.
    expect(errorCodes((await control(path, { visible: "false" }, "PATCH")).body)).toEqual(["visible:INVALID_FORMAT"]);
    expect((await h.json(`${LIST}/${tx.id}`)).body.data).toEqual(before);
    const patched = await control(path, { visible: false, transaction_status: "failed", erp_sync_status: "failed" }, "PATCH");
    expect(patched.status).toBe(200);
    expect((await h.json(`${LIST}/${tx.id}`)).body.data).toMatchObject({ visible: false, transaction_status: "failed", erp_sync_status: "failed" });
  });

  // The lenient read schema lets both be null; the list's category filter, the summary and spend limits compute with them.
  it("refuses a null transaction_category or billing_amount, which the filters, summary and spend limits compute with", async () => {
    const tx = (await h.json(LIST)).body.data[0] as Row;
    const path = `/companies/${h.companyId}/transactions/${tx.id}`;
    const before = (await h.json(`${LIST}/${tx.id}`)).body.data as Row;
    expect(await patchRefusal(path, { transaction_category: null, billing_amount: null })).toEqual([400, ["billing_amount:INVALID_FORMAT", "transaction_category:INVALID_FORMAT"]]);
    expect((await h.json(`${LIST}/${tx.id}`)).body.data).toEqual(before);
  });

  it("refuses values no read could serve, every offending field at once, and leaves the transaction as it was", async () => {
    const tx = (await h.json(LIST)).body.data[0] as Row;
    const path = `/companies/${h.companyId}/transactions/${tx.id}`;
    const { status, body } = await control(path, { transaction_time: null, billing_amount: "lots", segments: 3, id: "x" }, "PATCH");
    expect(status).toBe(400);
    expect(errorCodes(body).sort()).toEqual(["billing_amount:INVALID_FORMAT", "id:INVALID_FORMAT", "segments:INVALID_FORMAT", "transaction_time:INVALID_FORMAT"]);
    expect(errorCodes((await control(path, { transaction_time: "yesterday" }, "PATCH")).body)).toEqual(["transaction_time:INVALID_FORMAT"]);
    for (const read of ["/public/v1/erp/company/summary", LIST, `${LIST}/${tx.id}`]) expect((await h.json(read)).status).toBe(200);
    expect((await h.json(`${LIST}/${tx.id}`)).body.data).toMatchObject({ transaction_time: tx.transaction_time, updated_at: tx.updated_at });
    const drifted = await control(path, { approval_status: "escalated", transaction_time: "2025-03-14T09:30:00.000Z" }, "PATCH");
    expect(drifted.status).toBe(200);
    expect((await h.json("/public/v1/erp/company/summary")).status).toBe(200);
  });

  it("refuses each identity field even in a well-formed value, the message naming it (the immutable list, not the schema, stops it)", async () => {
    // A uuid parent_id or id is well-formed (§2.1), so only the immutable list keeps a purchase's refunds tied to it.
    const tx = (await h.json(LIST)).body.data[0] as Row;
    const path = `/companies/${h.companyId}/transactions/${tx.id}`;
    const uuid = "2f1e7c52-0d3b-4c5a-9e8f-000000000001";
    for (const field of ["id", "parent_id"]) {
      const { status, body } = await control(path, { [field]: uuid }, "PATCH");
      expect([status, body.errors], field).toEqual([400, [{ field, code: "INVALID_FORMAT", message: `${field} cannot be changed` }]]);
    }
  });

  it("refuses erp_company, the company's record the single read adds (§2.2 rules 2-3): the list never carries it and an acknowledged transaction stays synced", async () => {
    // Stored, it was listed (a member only the single read has) while the single read showed the company unchanged.
    const synced = (await h.json(`${LIST}?client_sync_status=synced`)).body.data[0] as Row;
    const path = `/companies/${h.companyId}/transactions/${synced.id}`;
    const { status, body } = await control(path, { erp_company: { id: "another company" } }, "PATCH");
    expect([status, body.errors]).toEqual([400, [{ field: "erp_company", code: "INVALID_FORMAT", message: "erp_company cannot be changed" }]]);
    const listed = (await h.json(`${LIST}?qashio_id=${String(synced.qashio_id)}`)).body.data as Row[];
    expect(listed).toEqual([synced]);
    expect((await h.json(`${LIST}/${synced.id}`)).body.data.erp_company.id).toBe(h.companyId);
  });

  it("refuses a field §2.2 does not name, a misspelt one beside a good one included, naming it, and changes nothing", async () => {
    // Stored, a typo was listed as a new member and made an acknowledged transaction outdated, the intended change unmade.
    const synced = (await h.json(`${LIST}?client_sync_status=synced`)).body.data[0] as Row;
    const path = `/companies/${h.companyId}/transactions/${synced.id}`;
    const { status, body } = await control(path, { memo: "team lunch", merchnat_name: "Cafe", constructor: "x" }, "PATCH");
    expect([status, body.errors]).toEqual([
      400,
      [
        { field: "merchnat_name", code: "INVALID_FORMAT", message: "merchnat_name is not a transaction field" },
        { field: "constructor", code: "INVALID_FORMAT", message: "constructor is not a transaction field" },
      ],
    ]);
    // JSON's own `__proto__` member too: assigned to the stored record, it would have replaced its prototype.
    const proto = await control(path, '{"__proto__": {"memo": "x"}}', "PATCH");
    expect([proto.status, errorCodes(proto.body)]).toEqual([400, ["__proto__:INVALID_FORMAT"]]);
    expect((await h.json(`${LIST}?qashio_id=${String(synced.qashio_id)}`)).body.data).toEqual([synced]);
  });

  it("takes amounts as the single read shows them, pre-fee (§2.2 rule 2), and answers the list view, fee-inclusive (rule 1)", async () => {
    const all = (await h.json(`${LIST}?page_size=100`)).body.data as Row[];
    const tx = all.find((t) => Number(t.fee_charges) > 0 && Number(t.clearing_amount) > 0)!;
    const before = (await h.json(`${LIST}/${tx.id}`)).body.data as Row;
    const { status, body } = await control(`/companies/${h.companyId}/transactions/${tx.id}`, { billing_amount: 500, clearing_amount: 400 }, "PATCH");
    expect(status).toBe(200);
    expect((await h.json(`${LIST}/${tx.id}`)).body.data).toMatchObject({ billing_amount: 500, clearing_amount: 400 });
    const listed = { billing_amount: 500 + Number(before.transaction_fee_amount), clearing_amount: 400 + Number(before.clearing_fee) };
    expect(body.data).toMatchObject(listed);
    expect((await h.json(`${LIST}?qashio_id=${String(tx.qashio_id)}`)).body.data[0]).toMatchObject(listed);
  });

  it("refuses a transaction_time with an offset (spec-gaps: an ISO 8601 UTC timestamp) and null or text for the typed amounts, fees and approval (§2.2)", async () => {
    const tx = (await h.json(LIST)).body.data[0] as Row;
    const path = `/companies/${h.companyId}/transactions/${tx.id}`;
    const before = (await h.json(`${LIST}/${tx.id}`)).body.data as Row;
    expect(errorCodes((await control(path, { transaction_time: "2025-03-14T13:30:00+04:00" }, "PATCH")).body)).toEqual(["transaction_time:INVALID_FORMAT"]);
    expect(await patchRefusal(path, { clearing_amount: "lots", transaction_fee_amount: null, clearing_fee: null, approval_status: null })).toEqual([
      400,
      ["approval_status:INVALID_FORMAT", "clearing_amount:INVALID_FORMAT", "clearing_fee:INVALID_FORMAT", "transaction_fee_amount:INVALID_FORMAT"],
    ]);
    expect((await h.json(`${LIST}/${tx.id}`)).body.data).toEqual(before);
  });

  it("takes a null card_last_four (spec-gaps: string or null), as a transaction of no card carries", async () => {
    const tx = (await h.json(LIST)).body.data[0] as Row;
    const patched = await control(`/companies/${h.companyId}/transactions/${tx.id}`, { card_last_four: null }, "PATCH");
    expect([patched.status, patched.body.data.card_last_four]).toEqual([200, null]);
  });

  it("lists a card's merchant categories as Travel with its own MCCs, then a fixed Software, whichever limits are active (spec-gaps, single ERP card read)", async () => {
    const data = h.sandbox.control.company(h.companyId)!;
    const categories = data.cards.map((card) => (erpCardDetailView(card, data) as Row).merchant_category_limits as Row).map((l) => l.categories as Row[]);
    expect(categories.map((c) => c.map((x) => x.name))).toEqual(data.cards.map(() => ["Travel", "Software"]));
    expect(categories.map((c) => c[0]!.mcc_codes)).toEqual(data.cards.map((card) => card.allowedMccs));
    expect(new Set(categories.map((c) => JSON.stringify(c[1]!.mcc_codes))).size, "one Software list on every card").toBe(1);
  });

  it("puts new spend only on cards Active now: none on a card the dashboard suspended, some on ones it activated (a suspended one too)", async () => {
    const cards = (await h.json("/public/v1/erp/cards?page_size=100")).body.data as Row[];
    const active = cards.filter((card) => card.status === "Active");
    const [suspendedNow] = active;
    const activatedNow = cards.find((card) => card.status === "Inactive") as Row;
    const reactivated = cards.find((card) => card.status === "Suspended") as Row;
    expect(suspendedNow).toBeDefined();
    expect(activatedNow).toBeDefined();
    expect(reactivated).toBeDefined();
    expect((await control(`/companies/${h.companyId}/cards/${suspendedNow!.id}/status`, { status: "suspended" })).status).toBe(200);
    for (const card of [activatedNow, reactivated]) {
      expect((await control(`/companies/${h.companyId}/cards/${card.id}/status`, { status: "active" })).status).toBe(200);
    }
    const spendable = new Set([...active.slice(1), activatedNow, reactivated].map((card) => card.id));
    fillAccounts(h.sandbox.control.company(h.companyId)!);
    const used = new Set<unknown>();
    for (const category of ["purchase", "cash_withdrawal"]) {
      const { status, body } = await control(`/companies/${h.companyId}/transactions`, { count: 60, transaction_category: category });
      expect(status).toBe(201);
      for (const tx of body.data as Row[]) used.add(tx.card_external_id);
    }
    expect([...used].filter((id) => !spendable.has(id as string))).toEqual([]);
    expect(used.has(activatedNow.id)).toBe(true);
    expect(used.has(reactivated.id)).toBe(true);
  });

  it("makes no cash withdrawal on a card that does not allow ATM use: on one that does, or none when no Active card does", async () => {
    const data = h.sandbox.control.company(h.companyId)!;
    fillAccounts(data);
    const atmCards = new Set(data.cards.filter((card) => card.atmWithdrawalAllowed).map((card) => card.id));
    const made = await control(`/companies/${h.companyId}/transactions`, { count: 40, transaction_category: "cash_withdrawal" });
    expect(made.body.data.length).toBeGreaterThan(0);
    expect((made.body.data as Row[]).filter((tx) => !atmCards.has(tx.card_external_id))).toEqual([]);
    for (const card of data.cards.filter((c) => c.status === "Active" && c.atmWithdrawalAllowed)) {
      expect((await control(`/companies/${h.companyId}/cards/${card.id}/status`, { status: "suspended" })).status).toBe(200);
    }
    expect(data.cards.some((card) => card.status === "Active")).toBe(true);
    const none = await control(`/companies/${h.companyId}/transactions`, { count: 5, transaction_category: "cash_withdrawal" });
    expect([none.status, none.body.data]).toEqual([201, []]);
    // Nor when every such card is terminated: what was asked for is not made, and nothing else in its place.
    for (const card of data.cards.filter((c) => c.atmWithdrawalAllowed && c.status !== "Terminated")) {
      expect((await control(`/companies/${h.companyId}/cards/${card.id}/status`, { status: "terminated" })).status).toBe(200);
    }
    const closed = await control(`/companies/${h.companyId}/transactions`, { count: 5, transaction_category: "cash_withdrawal" });
    expect([closed.status, closed.body.data]).toEqual([201, []]);
  });

  it("makes what is no spend, a card loading, on a card that ever spent when no card is Active now, and no spend", async () => {
    const data = h.sandbox.control.company(h.companyId)!;
    for (const card of data.cards.filter((c) => c.status === "Active")) {
      expect((await control(`/companies/${h.companyId}/cards/${card.id}/status`, { status: "suspended" })).status).toBe(200);
    }
    const loading = await control(`/companies/${h.companyId}/transactions`, { transaction_category: "card_loading" });
    expect([loading.status, (loading.body.data as Row[]).map((tx) => tx.transaction_category)]).toEqual([201, ["card_loading"]]);
    const purchase = await control(`/companies/${h.companyId}/transactions`, { transaction_category: "purchase" });
    expect([purchase.status, purchase.body.data]).toEqual([201, []]);
  });

  it("makes spend now only where a card's country and category limits allow, as its ERP view states them, on restricted cards too", async () => {
    const data = h.sandbox.control.company(h.companyId)!;
    fillAccounts(data);
    const byId = new Map(data.cards.map((card) => [card.id, card]));
    const made: Row[] = [];
    for (const [category, count] of [["cash_withdrawal", 20], ["purchase", 80]] as const) {
      const { status, body } = await control(`/companies/${h.companyId}/transactions`, { count, transaction_category: category });
      expect(status).toBe(201);
      made.push(...(body.data as Row[]));
    }
    const refused = made.filter((tx) => {
      const view = erpCardDetailView(byId.get(tx.card_external_id as string)!, data) as Row;
      const countries = view.country_limits as Row;
      const categories = view.merchant_category_limits as Row;
      const mccs = (categories.categories as Row[]).flatMap((c) => c.mcc_codes as string[]);
      return (countries.restriction_mode === "allow_list" && !(countries.allowed_countries as string[]).includes(tx.merchant_country as string))
        || (categories.restriction_type === "allow" && !mccs.includes(tx.mcc_code as string));
    });
    expect(refused.map((tx) => [tx.card_external_id, tx.merchant_country, tx.mcc_code])).toEqual([]);
    const restricted = made.filter((tx) => { const card = byId.get(tx.card_external_id as string)!; return card.countryLimitsActive || card.categoryLimitsActive; });
    expect(restricted.length, "some spend went on a restricted card").toBeGreaterThan(0);
    expect(made.some((tx) => tx.transaction_category === "cash_withdrawal"), "some cash withdrawal was made").toBe(true);
  });

  it("tells spend as possible on a card (canSpendNow, the demo's pick) only where its country and category limits allow it, as spend made now does", async () => {
    const data = h.sandbox.control.company(h.companyId)!;
    fillAccounts(data);
    const now = h.sandbox.control.now();
    const card = data.cards.find((c) => c.status === "Active" && c.atmWithdrawalAllowed)!;
    expect(card, "seed 7 has an Active card allowing ATM use").toBeDefined();
    const limits = card as { countryLimitsActive: boolean; categoryLimitsActive: boolean; allowedCountries: readonly string[]; allowedMccs: readonly string[] };
    Object.assign(limits, { countryLimitsActive: false, categoryLimitsActive: false });
    expect([canSpendNow(card, data, "purchase", now), canSpendNow(card, data, "cash_withdrawal", now)], "no limits").toEqual([true, true]);
    // Allowed only in a country no merchant (nor the company's ATMs) is in: nowhere.
    Object.assign(limits, { countryLimitsActive: true, allowedCountries: ["ZZ"] });
    expect([canSpendNow(card, data, "purchase", now), canSpendNow(card, data, "cash_withdrawal", now)], "no country allowed").toEqual([false, false]);
    // Its own MCCs listing the ATM's (6011): a cash withdrawal too (§2.3 merchant_category_limits lists them).
    Object.assign(limits, { countryLimitsActive: false, categoryLimitsActive: true, allowedMccs: ["6011"] });
    expect(canSpendNow(card, data, "cash_withdrawal", now), "its own MCCs allowing ATMs").toBe(true);
    // Any country, but only travel MCCs and software: purchases still, an ATM (6011) not.
    Object.assign(limits, { countryLimitsActive: false, categoryLimitsActive: true, allowedMccs: ["4511"] });
    expect([canSpendNow(card, data, "purchase", now), canSpendNow(card, data, "cash_withdrawal", now)], "categories without ATMs").toEqual([true, false]);
    // Spend made now agrees: with every other card out of room, what canSpendNow refuses is not made.
    for (const other of data.cards) if (other !== card) other.pendingAuthorisations = 1e9;
    const made = async (transaction_category: string) => (await control(`/companies/${h.companyId}/transactions`, { count: 3, transaction_category })).body.data as Row[];
    expect((await made("cash_withdrawal")).length, "no withdrawal").toBe(0);
    expect((await made("purchase")).map((tx) => tx.card_external_id), "purchases on it").toEqual([card.id, card.id, card.id]);
  });

  it("makes purchases at the Software MCCs on a card whose category limits list no travel MCC (§2.3 merchant_category_limits)", async () => {
    const data = h.sandbox.control.company(h.companyId)!;
    fillAccounts(data);
    const card = data.cards.find((c) => c.status === "Active")!;
    Object.assign(card, { countryLimitsActive: false, categoryLimitsActive: true, allowedMccs: [] });
    const view = erpCardDetailView(card, data) as Row;
    const software = ((view.merchant_category_limits as Row).categories as Row[]).flatMap((c) => c.mcc_codes as string[]);
    expect(software.length, "the view lists the Software MCCs").toBeGreaterThan(0);
    expect(canSpendNow(card, data, "purchase", h.sandbox.control.now())).toBe(true);
    for (const other of data.cards) if (other !== card) other.pendingAuthorisations = 1e9;
    const made = (await control(`/companies/${h.companyId}/transactions`, { count: 3, transaction_category: "purchase" })).body.data as Row[];
    expect(made.map((tx) => [tx.card_external_id, software.includes(tx.mcc_code as string)])).toEqual([[card.id, true], [card.id, true], [card.id, true]]);
  });

  it("tells spend as possible on a card whose spend limit leaves exactly the least spend (1, fee included), and not a cent less", async () => {
    const data = h.sandbox.control.company(h.companyId)!;
    fillAccounts(data);
    const now = h.sandbox.control.now();
    const card = data.cards.find((c) => c.status === "Active" && c.atmWithdrawalAllowed && !c.countryLimitsActive && !c.categoryLimitsActive)!;
    expect(card, "seed 7 has an Active card allowing ATM use, without country or category limits").toBeDefined();
    const used = consumedOf(card, data, now).amount;
    // The least purchase, foreign: 1 and its 2% fee; the least cash withdrawal: 1, 2% and 10.
    const room = async (left: number) => {
      const limit = { active: true, frequency: 0, max_amount: round2(used + left) };
      expect((await control(`/companies/${h.companyId}/cards/${card.id}/spend_limit`, limit)).status).toBe(200);
      return [canSpendNow(card, data, "purchase", now), canSpendNow(card, data, "cash_withdrawal", now)];
    };
    expect(await room(1.02), "room for the least purchase").toEqual([true, false]);
    expect(await room(1.01), "a cent short").toEqual([false, false]);
    expect(await room(11.02), "room for the least withdrawal").toEqual([true, true]);
    expect(await room(11.01), "a cent short of it").toEqual([true, false]);
  });

  it("seeds no cash withdrawal on a card that does not allow ATM use: when only such cards were active, a purchase instead", () => {
    const data = h.sandbox.control.company(h.companyId)!;
    const allows = new Map(data.cards.map((card) => [card.id, card.atmWithdrawalAllowed]));
    const seeded = data.transactions.all().filter((tx) => tx.transaction_category === "cash_withdrawal");
    expect(seeded.length).toBeGreaterThan(0);
    expect(seeded.filter((tx) => allows.get(tx.card_external_id as string) !== true)).toEqual([]);
    // Before any card allowing ATM use was activated, only cards that do not were active.
    const firstAtm = Math.min(...data.cards.filter((card) => card.atmWithdrawalAllowed && card.activatedAt !== null).map((card) => Date.parse(card.activatedAt!)));
    const onlyOthers = data.cards.some((card) => !card.atmWithdrawalAllowed && card.activatedAt !== null && Date.parse(card.activatedAt) < firstAtm - 86_400_000);
    expect(onlyOthers, "seed 7 has a card without ATM use active before any with it").toBe(true);
    const timeMs = firstAtm - 3_600_000;
    const createdAt = new Date(timeMs).toISOString();
    for (let i = 0; i < 10; i++) {
      const tx = data.factory.create({ category: "cash_withdrawal", timeMs, createdAt, syncStatus: "synced", nowMs: Date.parse(START) });
      expect(tx?.transaction_category).toBe("purchase");
      expect(allows.get(tx?.card_external_id as string)).toBe(false);
    }
  });

  it("dates seeded spend inside its card's active life: after activation, before termination", async () => {
    const cards = new Map(((await h.json("/public/v1/erp/cards?page_size=100")).body.data as Row[]).map((card) => [card.id, card]));
    const { body } = await h.json(`${LIST}?page_size=100`);
    const purchases = (body.data as Row[]).filter((tx) => tx.parent_id === null);
    expect(purchases.length).toBeGreaterThan(10);
    for (const tx of purchases) {
      const card = cards.get(tx.card_external_id) as Row;
      const time = Date.parse(tx.transaction_time as string);
      expect(Date.parse(card.activated_at as string), `${tx.qashio_id} on ${card.id}`).toBeLessThanOrEqual(time);
      if (card.terminated_at !== null) expect(time, `${tx.qashio_id} on ${card.id}`).toBeLessThan(Date.parse(card.terminated_at as string));
    }
  });

  it("changes a card's status as the provider's dashboard would", async () => {
    const suspended = ((await h.json("/public/v1/erp/cards?status=suspended")).body.data as Row[])[0] as Row;
    const { status, body } = await control(`/companies/${h.companyId}/cards/${suspended.id}/status`, { status: "active" });
    expect(status).toBe(200);
    expect(body.data.status).toBe("Active");
    expect((await h.json(`/public/v1/erp/cards/${suspended.id}`)).body.data.status).toBe("Active");
    expect((await control(`/companies/${h.companyId}/cards/${suspended.id}/status`, { status: "frozen" })).status).toBe(400);
    expect((await control(`/companies/${h.otherCompanyId}/cards/${suspended.id}/status`, { status: "Active" })).status).toBe(404);
  });

  it("stamps terminated_at on a termination only, shown alike in every view, and keeps it: a Terminated card stays Terminated (spec-gaps, Card timestamps)", async () => {
    const views = async (id: string) => {
      const erp = (await h.json(`/public/v1/erp/cards/${id}`)).body.data as Row;
      const listed = ((await h.json("/public/v1/erp/cards?page_size=100")).body.data as Row[]).find((card) => card.id === id) as Row;
      const core = ((await h.json("/public/v1/core/cards?page_size=100")).body.data.cards as Row[]).find((card) => card.id === id) as Row;
      return [erp.terminated_at, listed.terminated_at, core.terminated_at];
    };
    const active = ((await h.json("/public/v1/erp/cards?status=active")).body.data as Row[])[0] as Row;
    expect(active.terminated_at).toBeNull();
    // Only a termination stamps it: other dashboard moves leave it null.
    for (const next of ["inactive", "suspended", "active"]) {
      expect((await control(`/companies/${h.companyId}/cards/${active.id}/status`, { status: next })).status).toBe(200);
      expect(await views(active.id as string), `after ${next}`).toEqual([null, null, null]);
    }
    expect((await control(`/companies/${h.companyId}/cards/${active.id}/status`, { status: "terminated" })).status).toBe(200);
    const terminated = await views(active.id as string);
    expect(terminated).toEqual(Array(3).fill(terminated[0]));
    expect(Date.parse(terminated[0] as string)).toBeGreaterThanOrEqual(h.sandbox.control.now());
    h.sandbox.control.advanceClock(60);
    // The same state again changes nothing, as for every state: the stamp stays that of the termination.
    expect((await control(`/companies/${h.companyId}/cards/${active.id}/status`, { status: "terminated" })).status).toBe(200);
    expect(await views(active.id as string)).toEqual(terminated);
  });

  it.each(["Terminated", "Cancelled"])("refuses with 400 INVALID_STATE every move out of %s, which is final at the issuer, and changes nothing", async (closed) => {
    const card = ((await h.json(`/public/v1/erp/cards?status=${closed.toLowerCase()}`)).body.data as Row[])[0] as Row;
    expect(card).toBeDefined();
    const before = (await h.json(`/public/v1/erp/cards/${card.id}`)).body.data as Row;
    for (const next of ["Active", "Inactive", "Suspended", "Terminated", "Draft", "Cancelled"].filter((s) => s !== closed)) {
      const { status, body } = await control(`/companies/${h.companyId}/cards/${card.id}/status`, { status: next });
      expect(status, `${closed} -> ${next}`).toBe(400);
      expect(errorCodes(body)).toEqual(["status:INVALID_STATE"]);
      expect((body.errors as Row[])[0]?.message).toBe(`card is ${closed.toLowerCase()}, which is final`);
    }
    expect((await h.json(`/public/v1/erp/cards/${card.id}`)).body.data).toEqual(before);
  });

  it("refuses to suspend a card never activated (§3.1 suspends an active card), and terminates one without activating it (spec-gaps, Card timestamps)", async () => {
    const views = async (id: string) => {
      const erp = (await h.json(`/public/v1/erp/cards/${id}`)).body.data as Row;
      const core = ((await h.json("/public/v1/core/cards?page_size=100")).body.data.cards as Row[]).find((card) => card.id === id);
      return { status: erp.status, activated: [erp.activated_at, core?.first_activated_at ?? null] };
    };
    const cards = (await h.json("/public/v1/erp/cards?page_size=100")).body.data as Row[];
    const never = cards.filter((card) => ["Inactive", "Draft", "Cancelled"].includes(card.status as string));
    expect(never.map((card) => card.status).sort()).toEqual(["Cancelled", "Draft", "Inactive"]);
    for (const card of never) {
      expect(card.activated_at).toBeNull();
      const { status, body } = await control(`/companies/${h.companyId}/cards/${card.id}/status`, { status: "suspended" });
      expect(status, `${String(card.status)} card`).toBe(400);
      expect(errorCodes(body)).toEqual(["status:INVALID_STATE"]);
      expect(await views(card.id as string)).toEqual({ status: card.status, activated: [null, null] });
    }
    const byStatus = (status: string) => never.find((card) => card.status === status) as Row;
    const [inactive, draft] = [byStatus("Inactive"), byStatus("Draft")];
    expect((await control(`/companies/${h.companyId}/cards/${draft.id}/status`, { status: "terminated" })).status).toBe(200);
    expect(await views(draft.id as string)).toEqual({ status: "Terminated", activated: [null, null] });
    // Once activated, a card the dashboard set Inactive since may be suspended: it was active.
    for (const next of ["active", "inactive", "suspended"]) {
      expect((await control(`/companies/${h.companyId}/cards/${inactive.id}/status`, { status: next })).status).toBe(200);
    }
    expect((await views(inactive.id as string)).status).toBe("Suspended");
  });

  it("stamps issued_at when the dashboard moves a Draft card on, as every seeded card past Draft has one, and keeps its first activation through later ones (spec-gaps, Card timestamps)", async () => {
    const draft = ((await h.json("/public/v1/erp/cards?status=draft")).body.data as Row[])[0] as Row;
    expect(draft.issued_at).toBeNull();
    expect((await control(`/companies/${h.companyId}/cards/${draft.id}/status`, { status: "active" })).status).toBe(200);
    const erp = (await h.json(`/public/v1/erp/cards/${draft.id}`)).body.data as Row;
    const core = ((await h.json("/public/v1/core/cards?page_size=100")).body.data.cards as Row[]).find((card) => card.id === draft.id) as Row;
    expect(erp.issued_at).toEqual(expect.any(String));
    expect(Date.parse(erp.issued_at as string)).toBeGreaterThanOrEqual(h.sandbox.control.now());
    expect(core.issued_at).toBe(erp.issued_at);
    expect(erp.activated_at).toBe(erp.issued_at);
    const day = String(erp.issued_at).slice(0, 10);
    const issuedToday = (await h.json(`/public/v1/erp/cards?issued_time_from=${day}&page_size=100`)).body.data as Row[];
    expect(issuedToday.map((card) => card.id)).toContain(draft.id);
    // Moved on again, it keeps the issuance it had.
    expect((await control(`/companies/${h.companyId}/cards/${draft.id}/status`, { status: "suspended" })).status).toBe(200);
    expect((await h.json(`/public/v1/erp/cards/${draft.id}`)).body.data.issued_at).toBe(erp.issued_at);
    // Moved back to Draft, it keeps it too (spec-gaps: null on a Draft card never issued).
    expect((await control(`/companies/${h.companyId}/cards/${draft.id}/status`, { status: "draft" })).status).toBe(200);
    expect((await h.json(`/public/v1/erp/cards/${draft.id}`)).body.data).toMatchObject({ status: "Draft", issued_at: erp.issued_at });
    // Activated again, it keeps its first activation (spec-gaps, Card timestamps; core first_activated_at).
    expect((await control(`/companies/${h.companyId}/cards/${draft.id}/status`, { status: "active" })).status).toBe(200);
    const again = ((await h.json("/public/v1/core/cards?page_size=100")).body.data.cards as Row[]).find((card) => card.id === draft.id) as Row;
    expect([(await h.json(`/public/v1/erp/cards/${draft.id}`)).body.data.activated_at, again.first_activated_at]).toEqual([erp.activated_at, erp.activated_at]);
  });
});

describe("balances following new spend (§4.9: card balances account for pending authorisations)", () => {
  const CORE = "/public/v1/core/cards";
  const data = () => h.sandbox.control.company(h.companyId)!;
  /** What the balance read gives each Active card: what its account can still spend. */
  async function spendable(): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (const card of data().cards.filter((c) => c.status === "Active")) {
      const read = await h.client.getCardBalance({ nickname: card.nickname });
      out.set(card.id, read.cards.find((c) => c.card_id === card.id)?.balance as number);
    }
    return out;
  }
  /** The core card's `account_balance`: the balance of the account it draws on, before holds. */
  async function accountBalances(): Promise<Map<string, number>> {
    const cards = (await h.json(`${CORE}?page_size=100`)).body.data.cards as Row[];
    return new Map(cards.map((c) => [c.id as string, Number(c.account_balance)]));
  }
  const onAccountOf = (cardId: string) => {
    const account = data().cards.find((c) => c.id === cardId)!.accountExternalId;
    return new Set(data().cards.filter((c) => c.accountExternalId === account).map((c) => c.id));
  };
  const cents = (n: number) => Math.round(n * 100) / 100;

  async function purchase(): Promise<Row> {
    const { status, body } = await control(`/companies/${h.companyId}/transactions`, { count: 1, transaction_category: "purchase" });
    expect(status).toBe(201);
    return body.data[0] as Row;
  }

  it("holds a new purchase against the account its card draws on: every card on it can spend its fee-inclusive amount less, the account holds as much as before", async () => {
    const [spendBefore, accountBefore] = [await spendable(), await accountBalances()];
    const tx = await purchase();
    expect(tx.clearing_status).toBe("pending");
    const [spendAfter, accountAfter] = [await spendable(), await accountBalances()];
    const shared = onAccountOf(tx.card_external_id as string);
    for (const [id, before] of spendBefore) {
      expect([id, spendAfter.get(id)]).toEqual([id, cents(before - (shared.has(id) ? (tx.billing_amount as number) : 0))]);
    }
    expect(accountAfter).toEqual(accountBefore);
  });

  it("when the purchase clears, its hold goes and its account's balance falls by it: what the card can spend stays where the hold put it", async () => {
    const tx = await purchase();
    const [spendBefore, accountBefore] = [await spendable(), await accountBalances()];
    expect((await control(`/companies/${h.companyId}/transactions/${tx.id}`, { clearing_status: "cleared" }, "PATCH")).status).toBe(200);
    const [spendAfter, accountAfter] = [await spendable(), await accountBalances()];
    expect(spendAfter).toEqual(spendBefore);
    const shared = onAccountOf(tx.card_external_id as string);
    for (const [id, before] of accountBefore) {
      expect([id, accountAfter.get(id)]).toEqual([id, cents(before - (shared.has(id) ? (tx.billing_amount as number) : 0))]);
    }
    // A second clearing of the same purchase takes nothing more.
    await control(`/companies/${h.companyId}/transactions/${tx.id}`, { clearing_status: "pending" }, "PATCH");
    await control(`/companies/${h.companyId}/transactions/${tx.id}`, { clearing_status: "cleared" }, "PATCH");
    expect(await accountBalances()).toEqual(accountAfter);
  });

  it("when a purchase clears for another amount than was authorised, its whole hold goes and its account's balance falls by what cleared", async () => {
    fillAccounts(data());
    for (const [ratio, extra] of [[0.5, 0], [1.2, 3.5]] as const) {
      const tx = await purchase();
      const card = data().cards.find((c) => c.id === tx.card_external_id)!;
      const [pendingBefore, accountBefore] = [card.pendingAuthorisations, await accountBalances()];
      const cleared = { clearing_amount: cents((tx.billing_amount as number) * ratio), clearing_fee: extra };
      expect((await control(`/companies/${h.companyId}/transactions/${tx.id}`, { clearing_status: "cleared", ...cleared }, "PATCH")).status).toBe(200);
      expect([ratio, card.pendingAuthorisations]).toEqual([ratio, cents(pendingBefore - (tx.billing_amount as number))]);
      const shared = onAccountOf(card.id);
      const after = await accountBalances();
      for (const [id, before] of accountBefore) {
        expect([ratio, id, after.get(id)]).toEqual([ratio, id, cents(before - (shared.has(id) ? cleared.clearing_amount + cleared.clearing_fee : 0))]);
      }
    }
  });

  it("clears seeded spend still held as it clears new spend: its hold goes and its account's balance falls by it", async () => {
    const [id, hold] = [...data().holds][0] ?? [];
    expect(id, "seed 7 has seeded spend still held").toBeDefined();
    expect(data().transactions.get(id!)?.clearing_status).toBe("pending");
    const [pendingBefore, accountBefore] = [hold!.card.pendingAuthorisations, await accountBalances()];
    expect(hold!.amount).toBeGreaterThan(0);
    expect((await control(`/companies/${h.companyId}/transactions/${id}`, { clearing_status: "cleared" }, "PATCH")).status).toBe(200);
    expect(hold!.card.pendingAuthorisations).toBe(cents(pendingBefore - hold!.amount));
    const shared = onAccountOf(hold!.card.id);
    const after = await accountBalances();
    for (const [card, before] of accountBefore) expect([card, after.get(card)]).toEqual([card, cents(before - (shared.has(card) ? hold!.amount : 0))]);
  });

  it("a reversal of a held purchase releases its hold; a refund raises its card's account's balance", async () => {
    const spendBefore = await spendable();
    const tx = await purchase();
    const reversal = await control(`/companies/${h.companyId}/transactions`, { parent_qashio_id: tx.qashio_id, transaction_category: "reversal" });
    expect(reversal.status).toBe(201);
    expect(await spendable()).toEqual(spendBefore);
    const paid = await purchase();
    await control(`/companies/${h.companyId}/transactions/${paid.id}`, { clearing_status: "cleared" }, "PATCH");
    const [spendPaid, accountPaid] = [await spendable(), await accountBalances()];
    const refund = (await control(`/companies/${h.companyId}/transactions`, { parent_qashio_id: paid.qashio_id })).body.data[0] as Row;
    expect(refund.transaction_category).toBe("refund");
    const shared = onAccountOf(paid.card_external_id as string);
    const [spendAfter, accountAfter] = [await spendable(), await accountBalances()];
    for (const [id, before] of spendPaid) expect([id, spendAfter.get(id)]).toEqual([id, cents(before + (shared.has(id) ? (refund.billing_amount as number) : 0))]);
    for (const [id, before] of accountPaid) expect([id, accountAfter.get(id)]).toEqual([id, cents(before + (shared.has(id) ? (refund.billing_amount as number) : 0))]);
  });

  it("a reversal of a purchase no longer held (cleared) gives its amount back to its card's account, as a refund does (spec-gaps, Balances)", async () => {
    fillAccounts(data());
    const paid = await purchase();
    expect((await control(`/companies/${h.companyId}/transactions/${paid.id}`, { clearing_status: "cleared" }, "PATCH")).status).toBe(200);
    const accountBefore = await accountBalances();
    const reversal = (await control(`/companies/${h.companyId}/transactions`, { parent_qashio_id: paid.qashio_id, transaction_category: "reversal" })).body.data[0] as Row;
    expect(reversal.transaction_category).toBe("reversal");
    // Its fee-inclusive amount, as the store keeps it (the list view names no fee).
    const stored = data().transactions.get(reversal.id as string)!;
    const given = cents(stored.billing_amount + stored.transaction_fee_amount);
    expect(given).toBeGreaterThan(0);
    const shared = onAccountOf(paid.card_external_id as string);
    const after = await accountBalances();
    for (const [id, before] of accountBefore) expect([id, after.get(id)]).toEqual([id, cents(before + (shared.has(id) ? given : 0))]);
  });

  it("a partial reversal releases only its share of the hold; clearing then moves only the rest, net of the refund what the purchase kept", async () => {
    fillAccounts(data());
    // A held purchase its first refund gave back only part of: the reversal then reverses the rest alone.
    let paid: Row | undefined;
    let refund: Row | undefined;
    for (let i = 0; i < 20 && refund === undefined; i++) {
      const tx = await purchase();
      const made = (await control(`/companies/${h.companyId}/transactions`, { parent_qashio_id: tx.qashio_id })).body.data[0] as Row;
      if ((made.transaction_amount as number) < (tx.transaction_amount as number)) [paid, refund] = [tx, made];
    }
    expect(refund, "seed 7 makes a partial refund within 20 purchases").toBeDefined();
    const card = data().cards.find((c) => c.id === paid!.card_external_id)!;
    const [pendingBefore, accountBefore] = [card.pendingAuthorisations, await accountBalances()];
    const reversal = (await control(`/companies/${h.companyId}/transactions`, { parent_qashio_id: paid!.qashio_id, transaction_category: "reversal" })).body.data[0] as Row;
    expect(cents((reversal.transaction_amount as number) + (refund!.transaction_amount as number))).toBe(paid!.transaction_amount);
    // The hold keeps the refunded part: the fee-inclusive purchase in the share the refund took.
    const kept = cents(((paid!.billing_amount as number) * (refund!.transaction_amount as number)) / (paid!.transaction_amount as number));
    expect(cents(pendingBefore - card.pendingAuthorisations)).toBe(cents((paid!.billing_amount as number) - kept));
    expect(await accountBalances()).toEqual(accountBefore);
    await control(`/companies/${h.companyId}/transactions/${paid!.id}`, { clearing_status: "cleared" }, "PATCH");
    expect(card.pendingAuthorisations).toBe(cents(pendingBefore - (paid!.billing_amount as number)));
    const shared = onAccountOf(card.id);
    for (const [id, before] of accountBefore) expect([id, (await accountBalances()).get(id)]).toEqual([id, cents(before - (shared.has(id) ? kept : 0))]);
  });

  it("never gives back more than a purchase took: refunds take what is left of it, and once none is left none is made", async () => {
    const paid = await purchase();
    await control(`/companies/${h.companyId}/transactions/${paid.id}`, { clearing_status: "cleared" }, "PATCH");
    const accountBefore = await accountBalances();
    const { status, body } = await control(`/companies/${h.companyId}/transactions`, { parent_qashio_id: paid.qashio_id, count: 6 });
    expect(status).toBe(201);
    const refunds = body.data as Row[];
    const refunded = refunds.reduce((sum, r) => sum + (r.transaction_amount as number), 0);
    expect(cents(refunded)).toBe(paid.transaction_amount);
    expect(refunds.every((r) => (r.transaction_amount as number) > 0)).toBe(true);
    // The account got back what the refunds were (within its allowed_max_balance: a fresh purchase's account has room).
    const given = refunds.reduce((sum, r) => sum + (r.billing_amount as number), 0);
    const shared = onAccountOf(paid.card_external_id as string);
    for (const [id, before] of accountBefore) expect([id, (await accountBalances()).get(id)]).toEqual([id, cents(before + (shared.has(id) ? given : 0))]);
    const after = await accountBalances();
    for (const category of ["refund", "reversal"]) {
      const none = await control(`/companies/${h.companyId}/transactions`, { parent_qashio_id: paid.qashio_id, transaction_category: category });
      expect([category, none.status, none.body.data]).toEqual([category, 201, []]);
    }
    expect(await accountBalances()).toEqual(after);
  });

  it("never spends more than an account can: a card holding nothing gets no purchase, and after many no balance read is below 0", async () => {
    const broke = [...(await spendable())].find(([, balance]) => balance === 0)?.[0];
    expect(broke, "seed 7 has an Active card holding 0").toBeDefined();
    const made: Row[] = [];
    for (const category of ["purchase", "cash_withdrawal"]) {
      const { status, body } = await control(`/companies/${h.companyId}/transactions`, { count: 150, transaction_category: category });
      expect(status).toBe(201);
      made.push(...(body.data as Row[]));
    }
    expect(made.length).toBeGreaterThan(0);
    expect(made.filter((tx) => tx.card_external_id === broke)).toEqual([]);
    for (const [id, balance] of await spendable()) expect([id, balance >= 0]).toEqual([id, true]);
  });
});

describe("spend limits (§4.9: spend_limit_active says the limit is enforced, per spend_limit_period)", () => {
  const data = () => h.sandbox.control.company(h.companyId)!;
  /** The one card that can pay: an Active card with its own account holding `balance` (`atm`: allowing ATM use); every other account empty. */
  function onlyPayer(balance?: number, atm = false) {
    const card = data().cards.find((c) => c.status === "Active" && c.poolAccountId === null && (!atm || c.atmWithdrawalAllowed))!;
    for (const other of data().cards) if (other.poolAccountId === null) other.balance = 0;
    for (const pool of data().pools) pool.balance = 0;
    card.balance = balance ?? card.allowedMaxBalance;
    return card;
  }
  /** Sets the card's limit; the write response's spend_limit object. */
  async function limit(cardId: string, body: Row, token?: string): Promise<Row> {
    const { status, body: answer } = await h.json(`/public/v1/core/cards/${cardId}/update_velocity_limit`, { body, token });
    expect(status).toBe(201);
    return answer.data.card.spend_limit as Row;
  }
  /** What a transaction made now costs its card (fee included), as the store holds it. */
  const cost = (tx: Row) => {
    const stored = data().transactions.get(tx.id as string)!;
    return round2(stored.billing_amount + stored.transaction_fee_amount);
  };
  const purchases = async (count: number) => (await control(`/companies/${h.companyId}/transactions`, { count, transaction_category: "purchase" })).body.data as Row[];
  /** The one card that can pay, with money for any number of purchases, its DAILY limit's count leaving room for `left`. */
  async function countLimited(left: number) {
    const card = onlyPayer(1_000_000);
    const before = await limit(card.id, { spend_limit_active: true, spend_limit_period: "DAILY", spend_limit_max_amount: 400_000, spend_limit_frequency: 1 });
    const frequency = (before.consumed_frequency as number) + left;
    await limit(card.id, { spend_limit_frequency: frequency });
    return { card, frequency };
  }

  it("spends no more than an active limit's amount in its period, and the write response reports what was consumed and what remains", async () => {
    const card = onlyPayer();
    const before = await limit(card.id, { spend_limit_active: true, spend_limit_period: "DAILY", spend_limit_frequency: 0 });
    const max = Math.ceil(before.consumed_limit as number) + 300;
    await limit(card.id, { spend_limit_max_amount: max });
    const made = await purchases(30);
    expect(made.length).toBeGreaterThan(0);
    expect(made.every((tx) => tx.card_external_id === card.id)).toBe(true);
    const spent = round2(made.reduce((sum, tx) => sum + cost(tx), 0));
    const room = max - (before.consumed_limit as number);
    expect(spent).toBeLessThanOrEqual(room);
    // Spend stops only once less than the least purchase (1, with a foreign fee of 2%) is left.
    expect(spent).toBeGreaterThanOrEqual(room - 1.02);
    expect(await purchases(5)).toEqual([]);
    const after = await limit(card.id, { spend_limit_active: true });
    expect(after).toMatchObject({
      max_amount: max,
      consumed_limit: round2((before.consumed_limit as number) + spent),
      remaining_balance: round2(max - (before.consumed_limit as number) - spent),
      consumed_frequency: (before.consumed_frequency as number) + made.length,
    });
  });

  it("makes no more than an active limit's number of transactions in its period; the next period starts afresh", async () => {
    // Money for any number of purchases: only the limit's count stops them.
    const { card, frequency } = await countLimited(3);
    expect(await purchases(10)).toHaveLength(3);
    expect(await limit(card.id, { spend_limit_active: true })).toMatchObject({ consumed_frequency: frequency, remaining_frequency: 0 });
    // A day later (the access token long expired) the DAILY window holds nothing yet.
    await control("/clock", { advance_seconds: 86_400 });
    const { access_token } = await tokensFor(h.sandbox, h.companyId);
    expect(await limit(card.id, { spend_limit_active: true }, access_token)).toMatchObject({ consumed_limit: 0, consumed_frequency: 0, remaining_frequency: frequency, remaining_balance: 400_000 });
    expect(await purchases(2)).toHaveLength(2);
  });

  it("changes a card's limit as the provider's dashboard would: raised, spend goes on it again; what the body leaves out stays", async () => {
    const { card, frequency } = await countLimited(2);
    expect(await purchases(5)).toHaveLength(2);
    expect(await purchases(1)).toEqual([]);
    const { status, body } = await control(`/companies/${h.companyId}/cards/${card.id}/spend_limit`, { frequency: frequency + 3 });
    expect(status).toBe(200);
    expect(body.data.purchase_limits).toMatchObject({ enabled: true, amount: 400_000, frequency: "DAILY", number_of_purchases: frequency + 3 });
    expect((await h.json(`/public/v1/erp/cards/${card.id}`)).body.data.purchase_limits).toMatchObject({ number_of_purchases: frequency + 3 });
    expect(await purchases(5)).toHaveLength(3);
    // The amount too, and a limit turned off bounds nothing.
    expect((await control(`/companies/${h.companyId}/cards/${card.id}/spend_limit`, { max_amount: 1234.5, active: false })).body.data.purchase_limits).toMatchObject({
      enabled: false,
      amount: 1234.5,
      number_of_purchases: frequency + 3,
    });
    expect(await purchases(2)).toHaveLength(2);
  });

  it("refuses a dashboard limit change that changes nothing, or is out of range, and a card of another company", async () => {
    const card = onlyPayer();
    const path = `/companies/${h.companyId}/cards/${card.id}/spend_limit`;
    for (const body of [{}, { max_amount: -1 }, { max_amount: 500_000.01 }, { max_amount: 1.001 }, { frequency: 1.5 }, { frequency: -1 }, { active: "yes" }]) {
      expect((await control(path, body)).status, JSON.stringify(body)).toBe(400);
    }
    expect((await control(`/companies/${h.otherCompanyId}/cards/${card.id}/spend_limit`, { max_amount: 10 })).status).toBe(404);
    expect(card.spendLimit.maxAmount).not.toBe(10);
  });

  it("counts cash withdrawals toward an active limit's number of transactions too, and stops them at it (spend_limit_frequency)", async () => {
    // The one card that can pay must allow ATM use for a cash withdrawal to go on it.
    const atm = onlyPayer(1_000_000, true);
    const before = await limit(atm.id, { spend_limit_active: true, spend_limit_period: "DAILY", spend_limit_max_amount: 400_000, spend_limit_frequency: 1 });
    await limit(atm.id, { spend_limit_frequency: (before.consumed_frequency as number) + 3 });
    const withdrawals = async (count: number) => (await control(`/companies/${h.companyId}/transactions`, { count, transaction_category: "cash_withdrawal" })).body.data as Row[];
    expect(await withdrawals(2)).toHaveLength(2);
    expect(await purchases(5)).toHaveLength(1);
    expect(await withdrawals(2)).toEqual([]);
    expect(await limit(atm.id, { spend_limit_active: true })).toMatchObject({ consumed_frequency: (before.consumed_frequency as number) + 3, remaining_frequency: 0 });
  });

  it("gives a reversed authorisation's room back, count and amount, but not a refund's (spec-gaps, Spend limits)", async () => {
    const { card, frequency } = await countLimited(2);
    const [first, second] = await purchases(5);
    expect(await purchases(1)).toEqual([]);
    const full = await limit(card.id, { spend_limit_active: true });
    const child = async (parent: Row, category: string) =>
      (await control(`/companies/${h.companyId}/transactions`, { parent_qashio_id: parent.qashio_id, transaction_category: category })).body.data as Row[];
    expect(await child(second!, "refund")).toHaveLength(1);
    expect(await limit(card.id, { spend_limit_active: true })).toMatchObject({ consumed_frequency: frequency, consumed_limit: full.consumed_limit });
    expect(await purchases(1)).toEqual([]);
    expect(await child(first!, "reversal")).toHaveLength(1);
    expect(await limit(card.id, { spend_limit_active: true })).toMatchObject({
      consumed_frequency: frequency - 1,
      consumed_limit: round2((full.consumed_limit as number) - cost(first!)),
    });
    expect(await purchases(3)).toHaveLength(1);
  });

  it("counts a transaction by its time as it is now: one patched into the window counts, one patched out of it no longer does", async () => {
    const monthStart = new Date(Date.UTC(2025, 2, 1)).toISOString();
    // A seeded purchase made and created before this month: the walk of the window's transactions passed it by.
    const old = data().transactions.all().find((tx) => tx.transaction_category === "purchase" && tx.created_at < monthStart && data().transactions.childrenOf(tx.qashio_id).length === 0)!;
    const path = (id: string) => `/companies/${h.companyId}/transactions/${id}`;
    const cardId = String(old.card_external_id);
    const before = await limit(cardId, { spend_limit_active: true, spend_limit_period: "MONTHLY" });
    expect((await control(path(old.id), { transaction_time: START }, "PATCH")).status).toBe(200);
    const moved = await limit(cardId, { spend_limit_active: true });
    expect(moved).toMatchObject({ consumed_frequency: (before.consumed_frequency as number) + 1, consumed_limit: round2((before.consumed_limit as number) + cost(old)) });
    expect((await control(path(old.id), { transaction_time: monthStart.replace("03-01", "02-27") }, "PATCH")).status).toBe(200);
    expect(await limit(cardId, { spend_limit_active: true })).toMatchObject({ consumed_frequency: before.consumed_frequency, consumed_limit: before.consumed_limit });
  });

  it("shows the count limit on, in the ERP and core views, only while it is enforced: not for a limit not enforced, without a count, or PER_TRANSACTION", async () => {
    const card = onlyPayer(1_000_000);
    /**
     * The count flag and the spend-limit flag as every view shows them after `body` is written: core write and list,
     * ERP list and read (the spend-limit flag follows `spend_limit_active` alone, whatever the count).
     */
    const flagsAfter = async (body: Row) => {
      const written = (await h.json(`/public/v1/core/cards/${card.id}/update_velocity_limit`, { body })).body.data.card as Row;
      const listed = ((await h.json("/public/v1/core/cards?page_size=100")).body.data.cards as Row[]).find((c) => c.id === card.id)!;
      const erp = ((await h.json("/public/v1/erp/cards?page_size=100")).body.data as Row[]).find((c) => c.id === card.id)!;
      const detail = (await h.json(`/public/v1/erp/cards/${card.id}`)).body.data as Row;
      return {
        count: [written.transactions_limit_active, listed.transactions_limit_active, erp.transaction_limits_active, detail.transaction_limits_active].map(String),
        spend: [written.spend_limit_active, listed.spend_limit_active, erp.purchase_limits_active, detail.purchase_limits_active, detail.purchase_limits.enabled].map(String),
      };
    };
    const cases: [Row, string, string][] = [
      [{ spend_limit_active: false, spend_limit_period: "DAILY", spend_limit_max_amount: 400_000, spend_limit_frequency: 1 }, "false", "false"],
      [{ spend_limit_active: true, spend_limit_frequency: 0 }, "false", "true"],
      [{ spend_limit_period: "PER_TRANSACTION", spend_limit_frequency: 1 }, "false", "true"],
      [{ spend_limit_period: "DAILY", spend_limit_frequency: 1_000 }, "true", "true"],
    ];
    for (const [body, count, spend] of cases) {
      expect(await flagsAfter(body), JSON.stringify(body)).toEqual({ count: Array(4).fill(count), spend: Array(5).fill(spend) });
    }
    // What the flag says is what happens: a PER_TRANSACTION limit counts nothing, so its count of 1 stops no purchase.
    await limit(card.id, { spend_limit_period: "PER_TRANSACTION", spend_limit_frequency: 1 });
    expect(await purchases(3)).toHaveLength(3);
  });

  it("shows no ATM limit on, in the ERP and core views, as none is enforced: a card allowing ATM use withdraws more often than any shown", async () => {
    const atm = onlyPayer(1_000_000, true);
    const listed = ((await h.json("/public/v1/core/cards?page_size=100")).body.data.cards as Row[]).find((c) => c.id === atm.id)!;
    expect([listed.atm_limit_active, listed.atm_transactions_limit_active].map(String)).toEqual(["false", "false"]);
    expect([listed.atm_limit, listed.atm_transactions_limit]).toEqual([null, null]);
    const detail = (await h.json(`/public/v1/erp/cards/${atm.id}`)).body.data as Row;
    expect(detail.atm_configuration).toEqual({ atm_withdrawal_allowed: true, frequency: null, max_amount: null, number_of_withdrawals: null, limit_per_withdrawal: null });
    const made = (await control(`/companies/${h.companyId}/transactions`, { count: 6, transaction_category: "cash_withdrawal" })).body.data as Row[];
    expect(made.filter((tx) => tx.card_external_id === atm.id)).toHaveLength(6);
  });

  it("does not enforce an inactive limit, yet reports the period's spend", async () => {
    const card = onlyPayer();
    const before = await limit(card.id, { spend_limit_active: false, spend_limit_period: "MONTHLY", spend_limit_max_amount: 0, spend_limit_frequency: 1 });
    const made = await purchases(3);
    expect(made).toHaveLength(3);
    const after = await limit(card.id, { spend_limit_active: false });
    expect(after).toMatchObject({
      consumed_frequency: (before.consumed_frequency as number) + 3,
      consumed_limit: round2((before.consumed_limit as number) + made.reduce((sum, tx) => sum + cost(tx), 0)),
      remaining_balance: 0,
      // No count is enforced: none remains to show (0 would read as no transaction left).
      remaining_frequency: null,
    });
  });

  it("shows remaining_frequency only while the limit's count is enforced, null otherwise", async () => {
    const card = onlyPayer();
    expect(await limit(card.id, { spend_limit_active: true, spend_limit_period: "MONTHLY", spend_limit_frequency: 0 }), "no count").toMatchObject({ remaining_frequency: null });
    expect(await limit(card.id, { spend_limit_period: "PER_TRANSACTION", spend_limit_frequency: 5 }), "no window to count in").toMatchObject({ remaining_frequency: null });
    const counted = await limit(card.id, { spend_limit_period: "MONTHLY", spend_limit_frequency: 1_000 });
    expect(counted.remaining_frequency).toBe(1_000 - (counted.consumed_frequency as number));
    // A count lowered below what the window already made leaves none, not fewer than none.
    expect(await purchases(2)).toHaveLength(2);
    const passed = await limit(card.id, { spend_limit_frequency: 1 });
    expect(passed.consumed_frequency).toBeGreaterThan(1);
    expect(passed.remaining_frequency).toBe(0);
  });
});

describe("money back (spec-gaps, Balances): auto top-up and deposits", () => {
  const data = () => h.sandbox.control.company(h.companyId)!;
  const companyBalance = async () => (await h.client.getCardBalance({ nickname: data().cards[0]!.nickname })).company_balance?.amount as number;

  it("tops up an account on auto top-up from the funding account once spend leaves it below its threshold, within its allowed_max_balance", async () => {
    const card = data().cards.find((c) => c.status === "Active" && c.poolAccountId === null && c.autoTopUpEnabled)!;
    expect(card, "seed 7 has an Active card on auto top-up").toBeDefined();
    // Only this card can pay, and just above its threshold: any purchase leaves it below.
    for (const other of data().cards) if (other !== card && other.poolAccountId === null) other.balance = 0;
    for (const pool of data().pools) pool.balance = 0;
    card.balance = card.lowBalanceNotificationAmount + card.pendingAuthorisations + 50;
    const [fundingBefore, balanceBefore] = [await companyBalance(), card.balance];
    const tx = (await control(`/companies/${h.companyId}/transactions`, { count: 1, transaction_category: "purchase" })).body.data[0] as Row;
    expect(tx.card_external_id).toBe(card.id);
    const topUp = Math.min(card.autoTopUpAmount, card.allowedMaxBalance - balanceBefore);
    expect(topUp).toBeGreaterThan(0);
    expect(card.balance).toBe(balanceBefore + topUp);
    expect(await companyBalance()).toBe(round2(fundingBefore - topUp));
  });

  /**
   * An Active card with its own account, on auto top-up, holding `balance` (no holds), the funding account well stocked
   * and no other card on auto top-up (their top-ups would draw on the funding account too).
   */
  const autoTopUpCard = (balance: number) => {
    const card = data().cards.find((c) => c.status === "Active" && c.poolAccountId === null && c.autoTopUpEnabled)!;
    expect(card, "seed 7 has an Active card on auto top-up").toBeDefined();
    for (const other of data().cards) if (other !== card) other.autoTopUpEnabled = false;
    card.balance = balance;
    card.pendingAuthorisations = 0;
    data().company.fundingBalance = 1_000_000;
    return card;
  };
  /** A provider API call with a token issued now: sandbox time moves past the harness token's life here. */
  const api = async (path: string, init: { method?: string; body?: unknown } = {}) => h.json(path, { ...init, token: (await tokensFor(h.sandbox, h.companyId)).access_token });
  const erpCard = async (id: string) => (await api(`/public/v1/erp/cards/${id}`)).body.data as Row;
  const coreCard = async (id: string) => ((await api("/public/v1/core/cards?page_size=100")).body.data.cards as Row[]).find((c) => c.id === id)!;
  const clockTo = async (iso: string) => control("/clock", { advance_seconds: (Date.parse(iso) - h.sandbox.control.now()) / 1000 });

  it("tops up a card on auto top-up by its auto_top_up_amount at the start of each velocity_period (UTC), never past card_usage_type_amount", async () => {
    const card = autoTopUpCard(0);
    const put = await api(`/public/v1/core/cards/${card.id}`, { method: "PUT", body: { auto_top_up_amount: 1000, velocity_period: "DAILY", card_usage_type_amount: 3500 } });
    expect(put.status).toBe(200);
    expect((await erpCard(card.id)).auto_top_up_configuration).toMatchObject({ amount: 1000, trigger: "balance_below_threshold", period: "DAILY" });
    await clockTo("2025-03-15T23:59:59.000Z");
    expect([card.balance, data().company.fundingBalance], "not before the period ends").toEqual([0, 1_000_000]);
    await clockTo("2025-03-16T00:00:00.000Z");
    expect([card.balance, data().company.fundingBalance]).toEqual([1000, 999_000]);
    await clockTo("2025-03-16T23:00:00.000Z");
    expect(card.balance, "once per period").toBe(1000);
    await clockTo("2025-03-18T00:00:01.000Z");
    expect(card.balance, "each period passed, two more").toBe(3000);
    await clockTo("2025-03-25T00:00:00.000Z");
    expect([card.balance, data().company.fundingBalance], "no further than the maximum balance").toEqual([3500, 996_500]);

    // A new period starts its schedule afresh: weekly from Monday.
    card.balance = 0;
    expect((await api(`/public/v1/core/cards/${card.id}`, { method: "PUT", body: { velocity_period: "WEEKLY" } })).status).toBe(200);
    await clockTo("2025-03-30T23:59:59.000Z");
    expect(card.balance, "Sunday: still the week of the change").toBe(0);
    await clockTo("2025-03-31T00:00:00.000Z");
    expect(card.balance, "Monday").toBe(1000);
  });

  it("tops up a seeded card on auto top-up first at the start of the month after seeding: until then it holds its latest statement's closing", async () => {
    const cards = data().cards;
    const due = cards.filter((c) => c.status === "Active" && c.poolAccountId === null && c.autoTopUpEnabled && !c.autoLoadOnTransactionApproval);
    const room = (c: (typeof cards)[number]) => c.allowedMaxBalance - c.balance;
    expect(due.filter((c) => room(c) > 0).length, "seed 7 has a card on auto top-up with room below its maximum").toBeGreaterThan(0);
    // Nothing moved them since seeding (a request made): each still holds what its latest statement closed at.
    const closing = (c: (typeof cards)[number]) => data().statements.filter((s) => s.account.accountExternalId === c.accountExternalId).sort((a, b) => a.month.localeCompare(b.month)).at(-1)?.closing;
    expect(due.map((c) => [c.nickname, c.balance])).toEqual(due.map((c) => [c.nickname, closing(c)]));
    data().company.fundingBalance = 1_000_000;
    const before = cards.map((c) => c.balance);
    const seeded = new Date(h.sandbox.control.now());
    await clockTo(new Date(seeded.getTime() + 1000).toISOString());
    expect(cards.map((c) => c.balance), "the month of seeding: no top-up yet").toEqual(before);
    await clockTo(new Date(Date.UTC(seeded.getUTCFullYear(), seeded.getUTCMonth() + 1, 1)).toISOString());
    const topped = cards.map((c, i) => (due.includes(c) ? round2(Math.min(c.allowedMaxBalance, before[i]! + c.autoTopUpAmount)) : before[i]));
    expect(cards.map((c) => c.balance), "the next month: each card on auto top-up once").toEqual(topped);
  });

  it("counts the periods of a clock move of millennia at once: every card a top-up per day, the move answered without walking day by day", async () => {
    const cards = data().cards.filter((c) => c.status === "Active" && c.poolAccountId === null);
    expect(cards.length, "seed 7 has several Active cards of their own account").toBeGreaterThan(3);
    for (const card of cards) {
      // A small top-up below a large maximum: the counted periods never fill the account.
      Object.assign(card, { balance: 0, pendingAuthorisations: 0, autoTopUpEnabled: true, autoTopUpAmount: 1, allowedMaxBalance: 1e12 });
      expect((await api(`/public/v1/core/cards/${card.id}`, { method: "PUT", body: { velocity_period: "DAILY" } })).status).toBe(200);
    }
    data().company.fundingBalance = 1e15;
    const from = h.sandbox.control.now();
    const to = Date.parse("9998-06-01T00:00:00.000Z");
    const days = Math.floor(to / 86_400_000) - Math.floor(from / 86_400_000);
    const started = performance.now();
    expect((await control("/clock", { advance_seconds: (to - from) / 1000 })).status).toBe(200);
    expect(performance.now() - started, "ms to answer the clock move").toBeLessThan(500);
    for (const card of cards) expect(card.balance, card.id).toBe(days);
    await clockTo("9998-06-01T23:59:59.000Z");
    await clockTo("9998-06-03T00:00:00.000Z");
    for (const card of cards) expect(card.balance, "one per day from there on").toBe(days + 2);
  });

  it("tops up by period a card whose suspension was still being processed when the period started, and none after it is suspended", async () => {
    const card = autoTopUpCard(0);
    expect((await api(`/public/v1/core/cards/${card.id}`, { method: "PUT", body: { auto_top_up_amount: 1000, velocity_period: "DAILY", card_usage_type_amount: 5000 } })).status).toBe(200);
    await clockTo("2025-03-15T23:59:50.000Z");
    expect((await api(`/public/v1/core/cards/${card.id}/change_status`, { method: "PUT", body: { status: "suspended" } })).status).toBe(200);
    // One move past both: the period started at midnight, the suspension was committed 20 s later.
    await clockTo("2025-03-16T01:00:00.000Z");
    expect(card.status).toBe("Suspended");
    expect(card.balance, "Active when the period started").toBe(1000);
    await clockTo("2025-03-18T00:00:00.000Z");
    expect(card.balance, "none while suspended").toBe(1000);
  });

  it("drops at a reset the suspensions queued before it: a clock move then shares a short funding account as if none was queued", async () => {
    /** Two new cards' balances after one clock move over several daily periods, with 3000 to share between them. */
    const topUpsAfterReset = async (queueSuspension: boolean) => {
      h = await harness();
      await clockTo("2025-03-31T23:59:50.000Z");
      const suspended = data().cards.find((c) => c.status === "Active")!;
      if (queueSuspension) expect((await api(`/public/v1/core/cards/${suspended.id}/change_status`, { method: "PUT", body: { status: "suspended" } })).status).toBe(200);
      expect((await control("/reset", {})).status).toBe(200);
      const cards = data().cards.filter((c) => c.status === "Active" && c.poolAccountId === null).slice(0, 2);
      expect(cards, "seed 7 has two Active cards with their own account").toHaveLength(2);
      for (const card of data().cards) card.autoTopUpEnabled = cards.includes(card);
      for (const card of cards) {
        card.balance = 0;
        card.pendingAuthorisations = 0;
        expect((await api(`/public/v1/core/cards/${card.id}`, { method: "PUT", body: { auto_top_up_amount: 1000, velocity_period: "DAILY", card_usage_type_amount: 5000 } })).status).toBe(200);
      }
      data().company.fundingBalance = 3000;
      // Past the old card's due time (00:00:20) and three period starts, in one move.
      await clockTo("2025-04-03T01:00:00.000Z");
      return cards.map((c) => c.balance);
    };
    const unqueued = await topUpsAfterReset(false);
    expect(await topUpsAfterReset(true)).toEqual(unqueued);
  });

  it("gives what an account cannot hold of a refund to the funding account: a card's own account stays at its allowed_max_balance, a pool at the pool's, whatever its card's", async () => {
    // A cleared purchase on a card of its own account and one on a pool card, each to refund once its account is all but full.
    const paid = new Map<boolean, Row>();
    for (let i = 0; i < 40 && paid.size < 2; i++) {
      const tx = (await control(`/companies/${h.companyId}/transactions`, { count: 1, transaction_category: "purchase" })).body.data[0] as Row;
      await control(`/companies/${h.companyId}/transactions/${String(tx.id)}`, { clearing_status: "cleared" }, "PATCH");
      const onPool = data().cards.find((c) => c.id === tx.card_external_id)!.poolAccountId !== null;
      if (!paid.has(onPool)) paid.set(onPool, tx);
    }
    expect([...paid.keys()].sort(), "seed 7 makes purchases on both kinds of card within 40").toEqual([false, true]);
    for (const [onPool, tx] of paid) {
      const card = data().cards.find((c) => c.id === tx.card_external_id)!;
      const pool = data().pools.find((p) => p.id === card.poolAccountId);
      // A pool card may hold more than its pool (its card_usage_type_amount bounds no pool balance).
      if (pool) expect((await api(`/public/v1/core/cards/${card.id}`, { method: "PUT", body: { card_usage_type_amount: pool.allowedMaxBalance * 10 } })).status).toBe(200);
      // A cent of room: the account keeps that much of the refund.
      if (pool) pool.balance = round2(pool.allowedMaxBalance - 0.01);
      else card.balance = round2(card.allowedMaxBalance - 0.01);
      const fundingBefore = await companyBalance();
      const refund = (await control(`/companies/${h.companyId}/transactions`, { parent_qashio_id: tx.qashio_id })).body.data[0] as Row;
      expect([onPool, refund.transaction_category]).toEqual([onPool, "refund"]);
      expect([onPool, pool ? pool.balance : card.balance]).toEqual([onPool, pool ? pool.allowedMaxBalance : card.allowedMaxBalance]);
      expect([onPool, await companyBalance()]).toEqual([onPool, round2(fundingBefore + (refund.billing_amount as number) - 0.01)]);
    }
  });

  it("does not top up by period a card that cannot spend, nor one whose auto top-up is off, nor beyond what the funding account holds", async () => {
    const card = autoTopUpCard(0);
    const other = data().cards.find((c) => c !== card && c.status === "Active" && c.poolAccountId === null)!;
    other.balance = 0;
    other.pendingAuthorisations = 0;
    other.autoTopUpEnabled = true;
    await api(`/public/v1/core/cards/${other.id}`, { method: "PUT", body: { auto_top_up_amount: 0 } });
    await control(`/companies/${h.companyId}/cards/${card.id}/status`, { status: "Inactive" });
    await clockTo("2025-04-01T00:00:00.000Z");
    expect([card.balance, other.balance]).toEqual([0, 0]);
    await control(`/companies/${h.companyId}/cards/${card.id}/status`, { status: "Active" });
    data().company.fundingBalance = 40;
    await clockTo("2025-05-01T00:00:00.000Z");
    expect([card.balance, data().company.fundingBalance]).toEqual([40, 0]);
  });

  it("never makes up later the top-ups of periods that started while a card could not spend: Active again, it gets one per period from then on", async () => {
    const card = autoTopUpCard(0);
    expect((await api(`/public/v1/core/cards/${card.id}`, { method: "PUT", body: { auto_top_up_amount: 1000, velocity_period: "DAILY", card_usage_type_amount: 10_000 } })).status).toBe(200);
    await control(`/companies/${h.companyId}/cards/${card.id}/status`, { status: "Inactive" });
    await clockTo("2025-03-19T12:00:00.000Z");
    expect(card.balance, "four days Inactive").toBe(0);
    await control(`/companies/${h.companyId}/cards/${card.id}/status`, { status: "Active" });
    await clockTo("2025-03-20T12:00:00.000Z");
    expect(card.balance, "the one day since it is Active").toBe(1000);
  });

  it("loads a card set to load on transaction approval when one of its purchases is approved, instead of by period or when spend leaves it low", async () => {
    const card = autoTopUpCard(100);
    const set = await control(`/companies/${h.companyId}/cards/${card.id}/auto_load`, { on_transaction_approval: true });
    expect(set.status).toBe(200);
    expect(set.body.data.auto_top_up_configuration).toMatchObject({ amount: card.autoTopUpAmount, trigger: "transaction_approval", period: null });
    expect((await coreCard(card.id)).auto_load_on_transaction_approval).toBe(true);
    await clockTo("2025-04-01T00:00:00.000Z");
    expect(card.balance, "no top-up by period").toBe(100);
    const purchase = data().transactions.all().find((tx) => tx.card_external_id === card.id && tx.transaction_category === "purchase")!;
    expect(purchase, "the card has a seeded purchase").toBeDefined();
    const approval = (approval_status: string) => control(`/companies/${h.companyId}/transactions/${purchase.id}`, { approval_status }, "PATCH");
    expect((await approval("pending")).status).toBe(200);
    expect([card.balance, data().company.fundingBalance], "pending is no approval").toEqual([100, 1_000_000]);
    expect((await approval("approved")).status).toBe(200);
    const loaded = Math.min(100 + card.autoTopUpAmount, card.allowedMaxBalance);
    expect(loaded).toBeGreaterThan(100);
    expect([card.balance, data().company.fundingBalance]).toEqual([loaded, round2(1_000_000 - (loaded - 100))]);
    expect((await approval("admin_approved")).status).toBe(200);
    expect(card.balance, "moving from one approval to another is no new approval").toBe(loaded);

    expect((await control(`/companies/${h.companyId}/cards/${card.id}/auto_load`, { on_transaction_approval: false })).body.data.auto_top_up_configuration).toMatchObject({
      trigger: "balance_below_threshold",
      period: card.velocityPeriod,
    });
    for (const body of [{}, { on_transaction_approval: "yes" }]) expect((await control(`/companies/${h.companyId}/cards/${card.id}/auto_load`, body)).status).toBe(400);
    expect((await control(`/companies/${h.companyId}/cards/CAUNKNOWN000/auto_load`, { on_transaction_approval: true })).status).toBe(404);
    // The card is looked up before the body is read, as the company is: an unknown card is 404 whatever the body.
    expect((await control(`/companies/${h.companyId}/cards/CAUNKNOWN000/auto_load`, { on_transaction_approval: "yes" })).status).toBe(404);
  });

  it("loads a card set to load on approval once for each of its purchases made already approved, never again when a PATCH approves it anew", async () => {
    const card = autoTopUpCard(1_000);
    await control(`/companies/${h.companyId}/cards/${card.id}/auto_load`, { on_transaction_approval: true });
    // Only this card can pay, with room for every load and no limit stopping spend.
    for (const other of data().cards) if (other !== card && other.poolAccountId === null) other.balance = 0;
    for (const pool of data().pools) pool.balance = 0;
    card.allowedMaxBalance = 100_000_000;
    card.spendLimit.active = false;
    const made = (await control(`/companies/${h.companyId}/transactions`, { count: 20, transaction_category: "purchase" })).body.data as Row[];
    expect(made.every((tx) => tx.card_external_id === card.id)).toBe(true);
    const approved = made.filter((tx) => tx.approval_status === "approved" || tx.approval_status === "admin_approved");
    expect(approved.length, "some purchases are made approved").toBeGreaterThan(0);
    expect(approved.length, "some are not").toBeLessThan(made.length);
    const funding = round2(1_000_000 - approved.length * card.autoTopUpAmount);
    expect(data().company.fundingBalance).toBe(funding);
    const first = approved[0]!;
    for (const approval_status of ["pending", "approved"]) {
      expect((await control(`/companies/${h.companyId}/transactions/${String(first.id)}`, { approval_status }, "PATCH")).status).toBe(200);
    }
    expect(data().company.fundingBalance, "approved again: no second load").toBe(funding);
  });

  it("loads on approval only spend of an Active card approved from no approval: not while it cannot spend, not from one approval to another, never a refund", async () => {
    const card = autoTopUpCard(100);
    await control(`/companies/${h.companyId}/cards/${card.id}/auto_load`, { on_transaction_approval: true });
    const purchase = data().transactions.all().find((tx) => tx.card_external_id === card.id && tx.transaction_category === "purchase")!;
    expect(purchase, "the card has a seeded purchase").toBeDefined();
    const approval = (id: string, approval_status: string) => control(`/companies/${h.companyId}/transactions/${id}`, { approval_status }, "PATCH");
    const moved = () => [card.balance, data().company.fundingBalance];
    expect((await approval(purchase.id, "pending")).status).toBe(200);
    await control(`/companies/${h.companyId}/cards/${card.id}/status`, { status: "Inactive" });
    expect((await approval(purchase.id, "approved")).status).toBe(200);
    expect(moved(), "approved while the card cannot spend").toEqual([100, 1_000_000]);
    await control(`/companies/${h.companyId}/cards/${card.id}/status`, { status: "Active" });
    expect((await approval(purchase.id, "admin_approved")).status).toBe(200);
    expect(moved(), "from one approval to another, Active again").toEqual([100, 1_000_000]);

    // A refund of a new purchase, which only this card can pay.
    for (const other of data().cards) if (other !== card && other.poolAccountId === null) other.balance = 0;
    for (const pool of data().pools) pool.balance = 0;
    card.spendLimit.active = false;
    const paid = (await control(`/companies/${h.companyId}/transactions`, { count: 1, transaction_category: "purchase" })).body.data[0] as Row;
    expect(paid.card_external_id).toBe(card.id);
    const refund = (await control(`/companies/${h.companyId}/transactions`, { parent_qashio_id: paid.qashio_id })).body.data[0] as Row;
    expect(refund.transaction_category).toBe("refund");
    const afterRefund = moved();
    expect((await approval(String(refund.id), "pending")).status).toBe(200);
    expect((await approval(String(refund.id), "approved")).status).toBe(200);
    expect(moved(), "a refund approved").toEqual(afterRefund);
  });

  it("tops up an account on auto top-up once its purchase clears, when the hold found it too full to take one", async () => {
    const card = autoTopUpCard(0);
    // Only this card can pay; full, and below its threshold after any purchase.
    for (const other of data().cards) if (other !== card && other.poolAccountId === null) other.balance = 0;
    for (const pool of data().pools) pool.balance = 0;
    card.spendLimit.active = false;
    Object.assign(card, { balance: card.allowedMaxBalance, lowBalanceNotificationAmount: card.allowedMaxBalance });
    const tx = (await control(`/companies/${h.companyId}/transactions`, { count: 1, transaction_category: "purchase" })).body.data[0] as Row;
    expect([tx.card_external_id, tx.clearing_status]).toEqual([card.id, "pending"]);
    expect(card.balance, "held: no room for a top-up").toBe(card.allowedMaxBalance);
    expect((await control(`/companies/${h.companyId}/transactions/${String(tx.id)}`, { clearing_status: "cleared" }, "PATCH")).status).toBe(200);
    const held = data().transactions.get(String(tx.id))!;
    const spent = round2(held.billing_amount + held.transaction_fee_amount);
    const topUp = Math.min(card.autoTopUpAmount, spent);
    expect(topUp).toBeGreaterThan(0);
    expect([card.balance, data().company.fundingBalance]).toEqual([round2(card.allowedMaxBalance - spent + topUp), round2(1_000_000 - topUp)]);
  });

  it("refuses to set a pool card to load on transaction approval (its account is its pool's, which no approval loads), naming the field", async () => {
    const card = data().cards.find((c) => c.poolAccountId !== null)!;
    expect(card, "seed 7 has a pool card").toBeDefined();
    const before = await erpCard(card.id);
    const refused = await control(`/companies/${h.companyId}/cards/${card.id}/auto_load`, { on_transaction_approval: true });
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toEqual([expect.objectContaining({ field: "on_transaction_approval", code: "INVALID_STATE" })]);
    expect(card.autoLoadOnTransactionApproval).toBe(false);
    expect(await erpCard(card.id), "the card is as it was").toEqual(before);
    expect((await control(`/companies/${h.companyId}/cards/${card.id}/auto_load`, { on_transaction_approval: false })).status, "off it is already").toBe(200);
  });

  it("shows on a pool card its pool's top-up (topup_type, low-balance amount), whatever the card's own auto top-up settings", async () => {
    const card = data().cards.find((c) => c.poolAccountId !== null)!;
    expect(card, "seed 7 has a pool card").toBeDefined();
    const pool = data().pools.find((p) => p.id === card.poolAccountId)! as { topupType: string; lowBalanceNotificationAmount: number };
    // The card's own figures differ from its pool's, so the view shows which it took.
    card.autoTopUpAmount = pool.lowBalanceNotificationAmount + 100;
    (card as { lowBalanceNotificationAmount: number }).lowBalanceNotificationAmount = pool.lowBalanceNotificationAmount + 200;
    for (const [topupType, enabled, trigger] of [
      ["auto_topup", false, "balance_below_threshold"],
      ["manual", true, "manual"],
    ] as const) {
      pool.topupType = topupType;
      card.autoTopUpEnabled = enabled;
      expect((await erpCard(card.id)).auto_top_up_configuration, `pool ${topupType}, card's own flag ${enabled}`).toEqual({
        amount: pool.lowBalanceNotificationAmount,
        trigger,
        threshold: pool.lowBalanceNotificationAmount,
        period: null,
      });
    }
  });

  it("shows on a pool card its pool's top-up in topup_configuration and the core auto_top_up_amount too, as auto_top_up_configuration does", async () => {
    const card = data().cards.find((c) => c.status === "Active" && c.poolAccountId !== null)!;
    expect(card, "seed 7 has an Active pool card").toBeDefined();
    const pool = data().pools.find((p) => p.id === card.poolAccountId)! as { topupType: string; lowBalanceNotificationAmount: number };
    for (const topupType of ["manual", "auto_topup"]) {
      pool.topupType = topupType;
      // The card's own amount (and so its own flag, on) differs from its pool's, so the views show which they took.
      const written = await api(`/public/v1/core/cards/${card.id}`, { method: "PUT", body: { auto_top_up_amount: pool.lowBalanceNotificationAmount + 100 } });
      expect(written.status).toBe(200);
      const view = await erpCard(card.id);
      const shown = view.auto_top_up_configuration as Row;
      expect(shown.amount, "the pool's amount").toBe(pool.lowBalanceNotificationAmount);
      expect(view.topup_configuration, `pool ${topupType}`).toEqual({ auto_topup_enabled: shown.trigger !== "manual", auto_topup_amount: shown.amount, frequency: null });
      expect(Number(((written.body.data as Row).card as Row).auto_top_up_amount), "core auto_top_up_amount").toBe(shown.amount);
    }
  });

  it("shows on a card of its own account the topup_configuration frequency its top-ups follow: none while auto top-up is off or it loads on approval", async () => {
    const card = autoTopUpCard(0);
    const topUp = async () => (await erpCard(card.id)).topup_configuration as Row;
    expect((await api(`/public/v1/core/cards/${card.id}`, { method: "PUT", body: { auto_top_up_amount: 500, velocity_period: "WEEKLY" } })).status).toBe(200);
    expect(await topUp(), "on auto top-up").toEqual({ auto_topup_enabled: true, auto_topup_amount: 500, frequency: "WEEKLY" });
    await control(`/companies/${h.companyId}/cards/${card.id}/auto_load`, { on_transaction_approval: true });
    expect(await topUp(), "loads on approval, by no period").toEqual({ auto_topup_enabled: true, auto_topup_amount: 500, frequency: null });
    await control(`/companies/${h.companyId}/cards/${card.id}/auto_load`, { on_transaction_approval: false });
    const off = await api(`/public/v1/core/cards/${card.id}`, { method: "PUT", body: { auto_top_up_amount: 0 } });
    expect(off.status).toBe(200);
    expect(await topUp(), "auto top-up off").toEqual({ auto_topup_enabled: false, auto_topup_amount: 0, frequency: null });
    // The setting stays the card's: the funding update's answer shows what it was set to (§4.9).
    expect(((off.body.data as Row).card as Row).velocity_period).toBe("WEEKLY");
    expect((await erpCard(card.id)).auto_top_up_configuration, "as auto_top_up_configuration beside it").toMatchObject({ trigger: "manual", period: null });
  });

  it("shows no top-up period on a pool card with an auto top-up amount: its account is its pool's, which no period tops up", async () => {
    const card = data().cards.find((c) => c.status === "Active" && c.poolAccountId !== null)!;
    expect(card, "seed 7 has an Active pool card").toBeDefined();
    const pool = data().pools.find((p) => p.id === card.poolAccountId)!;
    pool.balance = 0;
    // No other card on auto top-up: its top-ups would draw on the funding account too.
    for (const other of data().cards) if (other !== card) other.autoTopUpEnabled = false;
    data().company.fundingBalance = 1_000_000;
    expect((await api(`/public/v1/core/cards/${card.id}`, { method: "PUT", body: { auto_top_up_amount: 500, velocity_period: "DAILY" } })).status).toBe(200);
    // The amount shown is what tops its account up, its pool's, not the card's own 500.
    expect((await erpCard(card.id)).auto_top_up_configuration).toMatchObject({ amount: pool.lowBalanceNotificationAmount, period: null });
    await clockTo("2025-04-01T00:00:00.000Z");
    expect([pool.balance, data().company.fundingBalance], "no top-up per period").toEqual([0, 1_000_000]);
  });

  it("does not top up a card set to load on approval when spend leaves it below its threshold", async () => {
    const card = autoTopUpCard(0);
    await control(`/companies/${h.companyId}/cards/${card.id}/auto_load`, { on_transaction_approval: true });
    for (const other of data().cards) if (other !== card && other.poolAccountId === null) other.balance = 0;
    for (const pool of data().pools) pool.balance = 0;
    card.balance = card.lowBalanceNotificationAmount + 50;
    const tx = (await control(`/companies/${h.companyId}/transactions`, { count: 1, transaction_category: "purchase" })).body.data[0] as Row;
    expect(tx.card_external_id).toBe(card.id);
    // A purchase made approved loads the card by its amount, as an approval does; nothing else tops it up.
    const before = card.lowBalanceNotificationAmount + 50;
    const load = tx.approval_status === "approved" || tx.approval_status === "admin_approved" ? Math.min(card.autoTopUpAmount, card.allowedMaxBalance - before) : 0;
    expect(card.balance, "held, not topped up").toBe(before + load);
  });

  it("shows the trigger manual on a card set to load on approval once its auto top-up is off (spec-gaps, ERP card read: transaction_approval only while auto top-up is on)", async () => {
    const card = autoTopUpCard(0);
    expect((await control(`/companies/${h.companyId}/cards/${card.id}/auto_load`, { on_transaction_approval: true })).status).toBe(200);
    expect((await api(`/public/v1/core/cards/${card.id}`, { method: "PUT", body: { auto_top_up_amount: 0 } })).status).toBe(200);
    expect((await coreCard(card.id)).auto_load_on_transaction_approval, "the flag stays set").toBe(true);
    const read = await erpCard(card.id);
    expect(read.auto_top_up_configuration).toMatchObject({ trigger: "manual", period: null });
    expect((read.topup_configuration as Row).auto_topup_enabled).toBe(false);
  });

  it("takes a deposit into the funding account, and refuses an amount that is not a positive sum of cents, naming it", async () => {
    const before = await companyBalance();
    const { status, body } = await control(`/companies/${h.companyId}/deposits`, { amount: 1234.56 });
    expect(status).toBe(201);
    expect(body.data.funding_account).toEqual({ account_external_id: data().company.fundingAccountId, balance: round2(before + 1234.56) });
    expect(await companyBalance()).toBe(body.data.funding_account.balance);
    for (const amount of [0, -5, 1.234, "100", 10_000_001]) {
      const refused = await control(`/companies/${h.companyId}/deposits`, { amount });
      expect([amount, refused.status, refused.body.errors?.[0]?.field]).toEqual([amount, 400, "amount"]);
    }
    expect(await companyBalance()).toBe(body.data.funding_account.balance);
  });

  it("pays in README's deposits example as the sum it shows, in the currency to the cent (not a number of cents)", async () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    const row = readme.split("\n").find((line) => line.startsWith("| `POST /_sandbox/companies/{id}/deposits`")) ?? "";
    const example = /`\{"amount": ?([\d.]+)\}`/.exec(row)?.[1];
    expect(example, "README's deposits row shows an example amount").toBeDefined();
    const before = await companyBalance();
    const { status, body } = await control(`/companies/${h.companyId}/deposits`, { amount: Number(example) });
    expect(status).toBe(201);
    expect(body.data.funding_account.balance).toBe(round2(before + Number(example)));
    // A reader who takes the amount for cents pays in a hundred times what they meant.
    expect(row).not.toMatch(/in cents/);
  });
});

describe("clock", () => {
  it("advances sandbox time and reports it", async () => {
    const before = (await control("/clock")).body.data.now as string;
    expect(before).toBe("2025-03-15T12:00:00.000Z");
    const { status, body } = await control("/clock", { advance_seconds: 90 });
    expect(status).toBe(200);
    expect(body.data.now).toBe("2025-03-15T12:01:30.000Z");
    expect((await control("/clock", { advance_seconds: -1 })).status).toBe(400);
    const { body: listed, headers } = await h.json(LIST);
    expect(listed.meta.timestamp).toBe("2025-03-15T12:01:30.000Z");
    expect(headers.get("x-request-id")).toBe(listed.meta.request_id);
  });

  it("refuses a move back in time as a negative move, not as one past the latest time, and keeps the clock", async () => {
    const refused = await control("/clock", { advance_seconds: -1 });
    expect([refused.status, errorCodes(refused.body)]).toEqual([400, ["advance_seconds:OUT_OF_RANGE"]]);
    expect(refused.body.errors[0].message).toMatch(/>=\s*0/);
    expect((await control("/clock")).body.data.now).toBe("2025-03-15T12:00:00.000Z");
  });

  it("keeps sandbox time in whole milliseconds when a move is given in fractions of one (rounded)", async () => {
    expect((await control("/clock", { advance_seconds: 0.0006 })).body.data.now).toBe("2025-03-15T12:00:00.001Z");
    expect((await control("/clock", { advance_seconds: 0.0004 })).body.data.now).toBe("2025-03-15T12:00:00.001Z");
  });

  it("refuses a move past the latest valid time (400, clock unchanged) and keeps answering; the edge itself works", async () => {
    const refused = await control("/clock", { advance_seconds: 1e13 });
    expect(refused.status).toBe(400);
    expect(errorCodes(refused.body)).toEqual(["advance_seconds:OUT_OF_RANGE"]);
    expect((await control("/clock")).body.data.now).toBe("2025-03-15T12:00:00.000Z");
    expect(() => h.sandbox.control.advanceClock(1e13)).toThrow(ValidationError);
    expect((await h.json(LIST)).status).toBe(200);
    expect((await control("/reset", {})).status).toBe(200);
    const toEdge = (Date.UTC(9999, 0, 1) - Date.parse("2025-03-15T12:00:00.000Z")) / 1000;
    expect((await control("/clock", { advance_seconds: toEdge })).body.data.now).toBe("9999-01-01T00:00:00.000Z");
    expect((await control("/clock", { advance_seconds: 1 })).status).toBe(400);
    expect((await control("/reset", {})).status).toBe(200);
    const { status, body } = await h.json(`${LIST}?page_size=1`);
    expect(status).toBe(401); // the token issued in 2025 expired long ago; the sandbox still answers with its envelope
    expect(body.meta.timestamp).toMatch(/^9999-01-01T/);
  });
});

describe("faults", () => {
  it("fails the next count matching requests with the status, the error envelope and Retry-After", async () => {
    const armed = await control("/faults", { method: "GET", path_prefix: LIST, status: 503, count: 2, retry_after: 7 });
    expect(armed.status).toBe(201);
    for (let i = 0; i < 2; i++) {
      const { status, headers, body } = await h.json(LIST);
      expect(status).toBe(503);
      expect(headers.get("retry-after")).toBe("7");
      expect(ErrorEnvelopeSchema.parse(body).status_code).toBe(503);
      expect(body.meta.request_id).toBe(headers.get("x-request-id"));
      expect(body).not.toHaveProperty("success");
    }
    expect((await h.json(LIST)).status).toBe(200);
  });

  // docs/spec-gaps.md: "the first armed matching fault is consumed per request", so faults armed in turn answer in turn.
  it("answers overlapping faults in the order they were armed", async () => {
    await control("/faults", { method: "GET", path_prefix: LIST, status: 503, count: 1 });
    await control("/faults", { path_prefix: "/public/v1/erp", status: 429, count: 1 });
    expect((await h.json(LIST)).status).toBe(503);
    expect((await h.json(LIST)).status).toBe(429);
    expect((await h.json(LIST)).status).toBe(200);
  });

  it("spends the fault a request matched, not an earlier one armed for another path", async () => {
    await control("/faults", { method: "GET", path_prefix: LIST, status: 503, count: 1 });
    await control("/faults", { method: "GET", path_prefix: "/public/v1/erp/cards", status: 429, count: 1 });
    expect((await h.json("/public/v1/erp/cards")).status).toBe(429);
    expect((await control("/faults")).body.data).toEqual([{ method: "GET", path_prefix: LIST, status: 503, count: 1 }]);
    expect((await h.json(LIST)).status).toBe(503);
  });

  // spec-gaps (Errors): an injected 5xx carries INTERNAL_ERROR, a 503 SERVICE_UNAVAILABLE, a status the sandbox has no
  // code for INJECTED_FAULT, so a client's log of the §7 entry tells them apart.
  it.each([
    [500, "INTERNAL_ERROR"],
    [502, "INTERNAL_ERROR"],
    [503, "SERVICE_UNAVAILABLE"],
    [409, "INJECTED_FAULT"],
  ])("answers an injected %i with the §7 envelope naming %s", async (status, code) => {
    await control("/faults", { method: "GET", path_prefix: LIST, status, count: 1 });
    const injected = await h.json(LIST);
    expect([injected.status, ErrorEnvelopeSchema.parse(injected.body).status_code]).toEqual([status, status]);
    expect(errorCodes(injected.body)).toEqual([`null:${code}`]);
  });

  it("matches on method and path prefix only", async () => {
    await control("/faults", { method: "POST", path_prefix: "/public/v1/erp/transactions/acknowledge", status: 500, count: 1 });
    expect((await h.json(LIST)).status).toBe(200);
    expect((await h.json("/public/v1/erp/cards")).status).toBe(200);
    const tx = (await h.json(LIST)).body.data[0] as Row;
    expect((await h.json(`${LIST}/acknowledge`, { body: { transaction_ids: [tx.id] } })).status).toBe(500);
    expect((await h.json(`${LIST}/acknowledge`, { body: { transaction_ids: [tx.id] } })).status).toBe(200);
  });

  it("matches a path prefix from the path's start only, so a prefix short of its /public/v1 faults nothing", async () => {
    await control("/faults", { path_prefix: "/erp/transactions", status: 500, count: 1 });
    expect((await h.json(LIST)).status).toBe(200);
    expect((await control("/faults")).body.data).toEqual([{ path_prefix: "/erp/transactions", status: 500, count: 1 }]);
  });

  it("fails only requests matching both the method and the path prefix, with the RATE_LIMITED code for a 429", async () => {
    await control("/faults", { method: "GET", path_prefix: LIST, status: 429, count: 1 });
    const card = (await h.json("/public/v1/erp/cards")).body.data[0] as Row | undefined;
    expect(card).toBeDefined();
    const mine = (await control(`/companies/${h.companyId}/transactions`, { count: 1 })).body.data[0] as Row;
    expect((await h.json(`${LIST}/acknowledge`, { body: { transaction_ids: [mine.id] } })).status).toBe(200);
    expect((await control("/faults")).body.data).toEqual([{ method: "GET", path_prefix: LIST, status: 429, count: 1 }]);
    const { status, body } = await h.json(`${LIST}?page_size=1`);
    expect(status).toBe(429);
    expect(errorCodes(body)).toEqual(["null:RATE_LIMITED"]);
  });

  it("drives the client's retry on 429 with Retry-After, without real sleeps", async () => {
    await control("/faults", { path_prefix: LIST, status: 429, count: 1, retry_after: 3 });
    const clock = instantClock();
    const client = new QashioClient({ baseUrl: BASE, tokenProvider: new StaticTokenProvider(h.tokens.access_token), fetch: h.sandbox.fetch, clock, retry: { maxAttempts: 3 } });
    const page = await client.listTransactions();
    expect(page.data).toHaveLength(10);
    // One wait, until the instant the Retry-After named: this clock reads real time, so a loaded machine may have spent
    // a millisecond or a few of it before the sleep starts.
    expect(clock.sleeps).toHaveLength(1);
    expect(clock.sleeps[0]).toBeGreaterThan(2_900);
    expect(clock.sleeps[0]).toBeLessThanOrEqual(3_000);
    await control("/faults", { path_prefix: LIST, status: 429, count: 5, retry_after: 1 });
    await expect(client.listTransactions()).rejects.toBeInstanceOf(RateLimitedError);
    await control("/faults", { path_prefix: LIST, status: 502, count: 5 });
    await expect(client.listTransactions()).rejects.toBeInstanceOf(ServerError);
  });

  it("answers a body that is not JSON when malformed, with the status given or 200", async () => {
    await control("/faults", { path_prefix: LIST, malformed: true, count: 1 });
    const res = await h.call(LIST);
    expect(res.status).toBe(200);
    await expect(res.clone().json()).rejects.toThrow();
    expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    await control("/faults", { path_prefix: LIST, malformed: true, count: 1 });
    await expect(h.client.listTransactions()).rejects.toBeInstanceOf(InvalidResponseError);
    await control("/faults", { path_prefix: LIST, malformed: true, status: 502, count: 1 });
    const failed = await h.call(LIST);
    expect(failed.status).toBe(502);
    await expect(failed.json()).rejects.toThrow();
  });

  it("delays the answer by delay_ms of real time", async () => {
    await control("/faults", { path_prefix: LIST, delay_ms: 60, count: 1 });
    const started = performance.now();
    const { status, body } = await h.json(LIST);
    expect(performance.now() - started).toBeGreaterThanOrEqual(55);
    expect(status).toBe(200);
    expect(body).toMatchObject({ status_code: 200, success: true });
    expect(body.data).toHaveLength(10);
  });

  it("lets an aborted request reject at once while the delay runs, which the client reports as a timeout", async () => {
    await control("/faults", { path_prefix: LIST, delay_ms: 30_000, count: 2 });
    const started = performance.now();
    await expect(h.sandbox.fetch(`${BASE}${LIST}`, { headers: { authorization: `Bearer ${h.tokens.access_token}` }, signal: AbortSignal.timeout(50) })).rejects.toThrow();
    const client = new QashioClient({ baseUrl: BASE, tokenProvider: new StaticTokenProvider(h.tokens.access_token), fetch: h.sandbox.fetch, clock: instantClock(), timeoutMs: 50, retry: { maxAttempts: 1 } });
    await expect(client.listTransactions()).rejects.toBeInstanceOf(TimeoutError);
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it("serves nothing for a signal aborted before the call, as a real fetch sends nothing: an acknowledge is not applied", async () => {
    const tx = (await h.json(`${LIST}?client_sync_status=not_synced&page_size=1`)).body.data[0] as Row;
    const aborted = AbortSignal.abort(new Error("gave up before sending"));
    const headers = { authorization: `Bearer ${h.tokens.access_token}`, "content-type": "application/json" };
    const body = JSON.stringify({ transaction_ids: [tx.id] });
    await expect(h.sandbox.fetch(`${BASE}${LIST}/acknowledge`, { method: "POST", headers, body, signal: aborted })).rejects.toThrow("gave up before sending");
    // Given time to run, had it started.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect((await h.json(`${LIST}/${String(tx.id)}`)).body.data.client_sync_status).toBe("not_synced");
  });

  it("combines a delay with a status", async () => {
    await control("/faults", { path_prefix: LIST, delay_ms: 20, status: 504, count: 1 });
    expect((await h.call(LIST)).status).toBe(504);
  });

  it("applies a write a delay-only fault holds back, after the delay, as README's faults row says", async () => {
    const tx = (await h.json(`${LIST}?client_sync_status=not_synced&page_size=1`)).body.data[0] as Row;
    await control("/faults", { method: "POST", path_prefix: `${LIST}/acknowledge`, delay_ms: 5, count: 1 });
    expect((await h.json(`${LIST}/acknowledge`, { body: { transaction_ids: [tx.id] } })).status).toBe(200);
    expect((await h.json(`${LIST}/${String(tx.id)}`)).body.data.client_sync_status).toBe("synced");
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    const row = readme.split("\n").find((line) => line.startsWith("| `POST /_sandbox/faults`"));
    expect(row).toMatch(/`delay_ms` alone only delays/);
  });

  it("serves the request of an applied fault first, then answers the fault: an acknowledge answered 500 took effect", async () => {
    const [tx, other] = (await h.json(`${LIST}?client_sync_status=not_synced&page_size=2`)).body.data as Row[];
    await control("/faults", { method: "POST", path_prefix: `${LIST}/acknowledge`, status: 500, applied: true, count: 1 });
    expect((await control("/faults")).body.data).toEqual([{ method: "POST", path_prefix: `${LIST}/acknowledge`, status: 500, count: 1, applied: true }]);
    const { status, headers, body } = await h.json(`${LIST}/acknowledge`, { body: { transaction_ids: [tx!.id] } });
    expect(status).toBe(500);
    expect(ErrorEnvelopeSchema.parse(body).status_code).toBe(500);
    expect(body.meta.request_id).toBe(headers.get("x-request-id"));
    expect((await h.json(`${LIST}/${String(tx!.id)}`)).body.data.client_sync_status).toBe("synced");
    // A malformed answer after the write, too; a delay alone serves the real answer late.
    await control("/faults", { method: "POST", path_prefix: `${LIST}/acknowledge`, malformed: true, applied: true, count: 1 });
    const malformed = await h.call(`${LIST}/acknowledge`, { body: { transaction_ids: [other!.id] } });
    expect(malformed.status).toBe(200);
    await expect(malformed.json()).rejects.toThrow();
    expect((await h.json(`${LIST}/${String(other!.id)}`)).body.data.client_sync_status).toBe("synced");
    // The answer replaces the served one whole: a 503 over a refused token carries no `www-authenticate` of the 401.
    await control("/faults", { method: "GET", path_prefix: LIST, status: 503, applied: true, count: 1 });
    const replaced = await h.call(LIST, { token: "not-a-token" });
    expect(replaced.status).toBe(503);
    expect(replaced.headers.get("www-authenticate")).toBeNull();
    expect(replaced.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    await control("/faults", { method: "GET", path_prefix: LIST, delay_ms: 5, applied: true, count: 1 });
    expect((await h.json(LIST)).body.data).toHaveLength(10);
    expect((await control("/faults", { status: 500, applied: "yes", count: 1 })).status).toBe(400);
  });

  // §7 lists UNAUTHORIZED among the codes seen; spec-gaps: an API 401 carries it and WWW-Authenticate. An injected
  // 401, 403 or 404 stands for the provider's own, so it looks like the one the sandbox gives for real. The spec fixes
  // no message: the sandbox's own defaults, the 404's that of an unknown endpoint too.
  it.each([
    [401, "null:UNAUTHORIZED", 'Bearer realm="sandbox"', "Unauthorized"],
    [403, "null:FORBIDDEN", null, "Forbidden"],
    [404, "null:NOT_FOUND", null, "Resource not found"],
  ])("answers an injected %i with the body and headers of the sandbox's own", async (status, code, challenge, message) => {
    await control("/faults", { method: "GET", path_prefix: LIST, status, count: 1 });
    const injected = await h.json(LIST);
    expect(injected.status).toBe(status);
    const envelope = ErrorEnvelopeSchema.parse(injected.body);
    expect(envelope.status_code).toBe(status);
    expect(errorCodes(injected.body)).toEqual([code]);
    expect([envelope.message, envelope.errors[0]?.message]).toEqual([message, message]);
    expect(injected.headers.get("www-authenticate")).toBe(challenge);
  });

  // An injected 400, 401 or 403 on the token and validate operations stands for the provider's own too: the OAuth
  // code the sandbox gives for that status there (RFC 6749 §5.2, RFC 6750 §3.1), not server_error, which a client
  // reads as the provider failing rather than refusing.
  it.each([
    ["/oauth2/token", 400, () => oauthCall("/oauth2/token", "{}")],
    ["/oauth2/token", 401, () => oauthCall("/oauth2/token", JSON.stringify({ grant_type: "refresh_token", ...CLIENT, refresh_token: "rt_unknown" }))],
    ["/oauth2/validate", 401, () => oauthCall("/oauth2/validate")],
    ["/oauth2/validate", 403, async () => oauthCall("/oauth2/validate", undefined, (await tokensFor(h.sandbox, h.disabledCompanyId)).access_token)],
  ])("answers an injected fault on %s %i with the OAuth code and headers of the sandbox's own", async (path, status, own) => {
    const real = await own();
    expect(real.status).toBe(status);
    await control("/faults", { path_prefix: path, status, count: 1 });
    // A request the sandbox would serve: only the fault refuses it.
    const served = path === "/oauth2/token" ? JSON.stringify({ grant_type: "refresh_token", ...CLIENT, refresh_token: h.tokens.refresh_token }) : undefined;
    const injected = await oauthCall(path, served, h.tokens.access_token);
    expect(injected).toEqual({ ...real, description: expect.any(String) });
  });

  it("answers an injected 400 on validate, which never refuses a request as malformed itself, with RFC 6750's invalid_request", async () => {
    await control("/faults", { path_prefix: "/oauth2/validate", status: 400, count: 1 });
    expect(await oauthCall("/oauth2/validate", undefined, h.tokens.access_token)).toMatchObject({ status: 400, error: "invalid_request" });
  });

  // The sandbox refuses nothing with this itself and the spec names no code for it (§4.2 gives the token endpoint no
  // 403, §7 shows no body): a refusal's code, RFC 6749 §4.1.2.1's access_denied, not server_error, that section's
  // stand-in for a 500, which the client reads as the provider failing.
  it("answers an injected 403 on the token endpoint with access_denied", async () => {
    await control("/faults", { method: "POST", path_prefix: "/oauth2/token", status: 403, count: 1 });
    const res = await h.sandbox.fetch(`${BASE}/oauth2/token`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ error: "access_denied", error_description: expect.any(String) });
  });

  describe("on the authorize screen, a browser's page (§4.2)", () => {
    const screen = `${BASE}/oauth2/authorize?${new URLSearchParams({ response_type: "code", client_id: CLIENT.client_id, redirect_uri: REDIRECT_URI, scope: "cards:read", state: "s1" })}`;
    const decision = () =>
      h.sandbox.fetch(`${BASE}/oauth2/authorize`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ response_type: "code", client_id: CLIENT.client_id, redirect_uri: REDIRECT_URI, scope: "cards:read", state: "s1", decision: "approve", company_id: h.companyId }).toString(),
        redirect: "manual",
      });
    const open = (method: string) => (method === "GET" ? h.sandbox.fetch(screen) : decision());

    it.each([
      ["GET", 503, "Service unavailable"],
      ["GET", 401, "Injected failure"],
      ["POST", 500, "Internal server error"],
      ["POST", 403, "Injected failure"],
    ])("answers an injected fault on %s with a short HTML page of its status %i, no JSON, then serves the screen", async (method, status, words) => {
      await control("/faults", { method, path_prefix: "/oauth2/authorize", status, retry_after: 5, count: 1 });
      const res = await open(method);
      expect(res.status).toBe(status);
      expect(res.headers.get("content-type")).toMatch(/^text\/html/);
      expect(res.headers.get("retry-after")).toBe("5");
      expect(res.headers.get("www-authenticate")).toBeNull();
      const html = await res.text();
      expect(html).toMatch(/^<!doctype html>/);
      expect(html).toContain(`<p id="error">${status} ${words}</p>`);
      expect((await open(method)).status).toBe(method === "GET" ? 200 : 302);
    });

    it("answers a fault armed for every path with a page there and JSON on the token endpoint beside it", async () => {
      await control("/faults", { status: 502, count: 2 });
      const page = await h.sandbox.fetch(screen);
      expect(page.status).toBe(502);
      expect(page.headers.get("content-type")).toMatch(/^text\/html/);
      const token = await oauthCall("/oauth2/token", "{}");
      expect(token).toMatchObject({ status: 502, error: "server_error" });
    });

    it("answers a malformed fault there with a page cut short, as HTML, and a bare one with its status alone", async () => {
      await control("/faults", { path_prefix: "/oauth2/authorize", malformed: true, count: 1 });
      const cut = await h.sandbox.fetch(screen);
      expect(cut.status).toBe(200);
      expect(cut.headers.get("content-type")).toMatch(/^text\/html/);
      const text = await cut.text();
      expect(text).toMatch(/^<!doctype html>/);
      expect(text).not.toContain("</html>");
      await control("/faults", { path_prefix: "/oauth2/authorize", status: 503, bare: true, count: 1 });
      const bare = await h.sandbox.fetch(screen);
      expect(bare.status).toBe(503);
      expect(await bare.text()).toBe("");
      expect(bare.headers.get("content-type")).toBeNull();
    });
  });

  // Spec §4.2 answers wrong client credentials and a spent or revoked refresh token alike with 401, the body not shown
  // (§7): `bare` gives that status with no body at all, which the client cannot read as either.
  it("answers a bare fault with its status and headers only, no body, and spends nothing", async () => {
    const refresh = JSON.stringify({ grant_type: "refresh_token", ...CLIENT, refresh_token: h.tokens.refresh_token });
    await control("/faults", { method: "POST", path_prefix: "/oauth2/token", status: 401, bare: true, retry_after: 3, count: 1 });
    expect((await control("/faults")).body.data).toEqual([{ method: "POST", path_prefix: "/oauth2/token", status: 401, bare: true, retry_after: 3, count: 1 }]);
    const post = () => h.sandbox.fetch(`${BASE}/oauth2/token`, { method: "POST", headers: { "content-type": "application/json" }, body: refresh });
    const bare = await post();
    expect(bare.status).toBe(401);
    expect(await bare.text()).toBe("");
    expect(bare.headers.get("content-type")).toBeNull();
    expect(bare.headers.get("www-authenticate")).toBeNull();
    expect(bare.headers.get("retry-after")).toBe("3");
    expect(bare.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    // Answered before the handler: the refresh token was not spent, so it still refreshes.
    expect((await post()).status).toBe(200);
    // On an API path too: the status alone, without the §7 envelope the sandbox's own 401 carries.
    await control("/faults", { method: "GET", path_prefix: LIST, status: 401, bare: true, count: 1 });
    const api = await h.call(LIST);
    expect(api.status).toBe(401);
    expect(await api.text()).toBe("");
  });

  it("answers OAuth-style bodies on the token endpoint", async () => {
    await control("/faults", { path_prefix: "/oauth2/token", status: 503, count: 1, retry_after: 2 });
    const res = await h.sandbox.fetch(`${BASE}/oauth2/token`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("2");
    expect(await res.json()).toEqual({ error: "temporarily_unavailable", error_description: expect.any(String) });
  });

  it("never faults the control surface, lists armed faults and clears them", async () => {
    await control("/faults", { status: 500, count: 3 });
    expect((await control("/companies")).status).toBe(200);
    expect((await control("/faults")).body.data).toEqual([{ status: 500, count: 3 }]);
    expect((await h.json(LIST)).status).toBe(500);
    expect((await control("/faults")).body.data).toEqual([{ status: 500, count: 2 }]);
    expect((await control("/faults", undefined, "DELETE")).status).toBe(200);
    expect((await h.json(LIST)).status).toBe(200);
  });

  it("leaves an unknown control path (a typo, a wrong method) unfaulted: its 404 consumes no armed fault", async () => {
    // The control routes answer before the fault middleware runs; a path none of them serves reaches it, and only the
    // `/_sandbox` check keeps the fault armed for the provider request the test meant it for.
    await control("/faults", { status: 500, count: 1 });
    expect((await control("/no-such-route")).status).toBe(404);
    expect((await control("/clock", {}, "PUT")).status).toBe(404);
    expect((await control("/faults")).body.data).toEqual([{ status: 500, count: 1 }]);
    expect((await h.json(LIST)).status).toBe(500);
  });

  it("shows every member POST took in the names it took them, falsy ones too, and none it was not given", async () => {
    const every = { method: "POST", path_prefix: `${LIST}/acknowledge`, status: 503, count: 2, retry_after: 7, delay_ms: 5, malformed: true, applied: true };
    const falsy = { path_prefix: LIST, count: 1, retry_after: 0, delay_ms: 0, malformed: false, bare: false, applied: false, status: 500 };
    expect((await control("/faults", { ...every, method: "post" })).body.data).toEqual([every]);
    expect((await control("/faults", falsy)).body.data).toEqual([every, falsy]);
    expect((await control("/faults")).body.data).toEqual([every, falsy]);
  });

  it.each([
    [{ count: 1 }],
    [{ malformed: false, count: 1 }],
    [{ status: 200, count: 1 }],
    [{ status: 500 }],
    [{ status: 500, count: 0 }],
    [{ status: 500, count: 1, path_prefix: "public" }],
    [{ bare: true, count: 1 }],
    [{ bare: true, delay_ms: 5, count: 1 }],
    [{ status: 401, bare: true, malformed: true, count: 1 }],
    [{ status: 401, bare: "yes", count: 1 }],
    [{ delay_ms: 1.5, count: 1 }],
    [{ delay_ms: -1, count: 1 }],
    [{ status: 429, retry_after: -1, count: 1 }],
    [{ status: 429, retry_after: 0.5, count: 1 }],
  ])("answers 400 for %j", async (payload) => {
    expect((await control("/faults", payload)).status).toBe(400);
  });

  it("refuses a delay past two minutes, naming delay_ms, so a typo of digits cannot hold requests for hours", async () => {
    const { status, body } = await control("/faults", { path_prefix: LIST, delay_ms: 120_001, count: 1 });
    expect(status).toBe(400);
    expect(errorCodes(body)).toEqual(["delay_ms:OUT_OF_RANGE"]);
    expect((await control("/faults", { path_prefix: LIST, delay_ms: 120_000, count: 1 })).status).toBe(201);
  });
});

describe("reset", () => {
  it("re-seeds deterministically; tokens stay valid", async () => {
    const before = (await h.json(`${LIST}?page_size=100`)).body.data.map((t: Row) => t.id);
    await control(`/companies/${h.companyId}/transactions`, { count: 5 });
    const { status, body } = await control("/reset", {});
    expect(status).toBe(200);
    expect(body.data.seed).toBe(7);
    expect((await h.json(`${LIST}?page_size=100`)).body.data.map((t: Row) => t.id)).toEqual(before);
    await control("/reset", { seed: 8 });
    const other = (await h.json(`${LIST}?page_size=100`)).body.data.map((t: Row) => t.id);
    expect(other).not.toEqual(before);
  });

  it("builds a backlog of the requested size, every transaction not_synced, leaving other companies alone", async () => {
    const otherToken = await tokensFor(h.sandbox, h.otherCompanyId);
    const otherBefore = (await h.json(`${LIST}?page_size=100`, { token: otherToken.access_token })).body.data.map((t: Row) => t.id);
    const { body } = await control("/reset", { transactions: 2500 });
    expect(body.data.companies[0]).toMatchObject({ id: h.companyId, transactions: 2500 });
    const page = (await h.json(`${LIST}?client_sync_status=not_synced&page_size=100&page=25`)).body;
    expect(page.pagination).toMatchObject({ total_records: 2500, total_pages: 25, has_next: false });
    expect((await h.json(`${LIST}?page_size=100`, { token: otherToken.access_token })).body.data.map((t: Row) => t.id)).toEqual(otherBefore);
  });

  it("builds the backlog in the company company_id names, leaving the first company as seeded", async () => {
    const firstBefore = (await h.json(`${LIST}?page_size=100`)).body.data.map((t: Row) => t.id);
    const { status, body } = await control("/reset", { transactions: 40, company_id: h.otherCompanyId });
    expect(status).toBe(200);
    expect(body.data.companies[1]).toMatchObject({ id: h.otherCompanyId, transactions: 40 });
    const otherToken = await tokensFor(h.sandbox, h.otherCompanyId);
    const backlog = (await h.json(`${LIST}?client_sync_status=not_synced&page_size=100`, { token: otherToken.access_token })).body;
    expect(backlog.pagination).toMatchObject({ total_records: 40 });
    expect((await h.json(`${LIST}?page_size=100`)).body.data.map((t: Row) => t.id)).toEqual(firstBefore);
  });

  it("builds an empty backlog for transactions 0 (a company with nothing to sync) and refuses a negative one", async () => {
    const { status, body } = await control("/reset", { transactions: 0 });
    expect(status).toBe(200);
    expect(body.data.companies[0]).toMatchObject({ id: h.companyId, transactions: 0 });
    expect((await h.json(LIST)).body.data).toEqual([]);
    const negative = await control("/reset", { transactions: -1 });
    expect([negative.status, errorCodes(negative.body)]).toEqual([400, ["transactions:OUT_OF_RANGE"]]);
  });

  it("clears faults and refuses bad options", async () => {
    await control("/faults", { status: 500, count: 3 });
    await control("/reset", {});
    expect((await h.json(LIST)).status).toBe(200);
    expect((await control("/reset", { seed: -1 })).status).toBe(400);
    expect((await control("/reset", { transactions: 1.5 })).status).toBe(400);
    // The bench's parser checks against the same bound before it calls: a backlog past it is refused, not built.
    const tooMany = await control("/reset", { transactions: MAX_RESET_TRANSACTIONS + 1 });
    expect(tooMany.status).toBe(400);
    expect(errorCodes(tooMany.body)).toEqual(["transactions:OUT_OF_RANGE"]);
    // §7: `field` is null only when not tied to one input; here the body's company_id is at fault.
    const unknown = await control("/reset", { company_id: "nope" });
    expect([unknown.status, errorCodes(unknown.body)]).toEqual([404, ["company_id:NOT_FOUND"]]);
  });
});

describe("retention (retainTransactions, the demo's bound)", () => {
  const ACK = "/public/v1/erp/transactions/acknowledge";

  /** Acknowledges every transaction still to read, as a client that delivered them would. */
  async function acknowledgeAll(x: Harness): Promise<void> {
    for (const status of ["not_synced", "outdated"]) {
      for (;;) {
        const ids = (await x.json(`${LIST}?client_sync_status=${status}&page_size=100`)).body.data.map((t: Row) => t.id) as string[];
        if (ids.length === 0) break;
        expect((await x.json(ACK, { body: { transaction_ids: ids } })).status).toBe(200);
      }
    }
  }
  const held = (x: Harness) => x.sandbox.control.company(x.companyId)?.transactions.all() ?? [];

  it("is off by default: every transaction is kept, acknowledged or not, as the provider keeps them", async () => {
    fillAccounts(h.sandbox.control.company(h.companyId)!);
    await control(`/companies/${h.companyId}/transactions`, { count: 60, transaction_category: "purchase" });
    await acknowledgeAll(h);
    expect(held(h)).toHaveLength(100);
    expect((await h.json(LIST)).body.pagination.total_records).toBe(100);
  });

  it("forgets acknowledged transactions older than the newest n, never one still to read or the parent of a held one", async () => {
    const x = await harness({ retainTransactions: 10 });
    // Seeded: 13 acknowledged, 3 changed since (outdated), 24 not_synced. Of those beyond the newest 10, only the
    // acknowledged ones go, but a purchase a held refund names.
    const seeded = held(x);
    expect(seeded.length).toBeLessThan(40);
    expect(seeded.filter((t) => t.client_sync_status !== "synced")).toHaveLength(27);
    const named = new Set(seeded.map((t) => t.parent_qashio_id));
    expect(seeded.slice(0, -10).filter((t) => t.client_sync_status === "synced" && !named.has(t.qashio_id))).toEqual([]);
    await acknowledgeAll(x);
    const bought = (await x.json(`/_sandbox/companies/${x.companyId}/transactions`, { body: { count: 15, transaction_category: "purchase" }, token: null })).body.data as Row[];
    const oldest = bought[0] as Row;
    const refund = (await x.json(`/_sandbox/companies/${x.companyId}/transactions`, { body: { parent_qashio_id: oldest.qashio_id }, token: null })).body.data[0] as Row;
    await acknowledgeAll(x);
    await x.json(`/_sandbox/companies/${x.companyId}/transactions`, { body: { count: 3, transaction_category: "purchase" }, token: null });
    // The newest 10, the 3 new ones among them still to read, and the purchase the held refund names.
    expect(held(x).map((t) => t.id)).toEqual([oldest.id, ...bought.slice(-6).map((t) => t.id), refund.id, ...held(x).slice(-3).map((t) => t.id)]);
    // What it forgot is gone from every read, as if never made.
    const forgotten = bought[1] as Row;
    expect((await x.json(`${LIST}/${forgotten.id}`)).status).toBe(404);
    expect((await x.json(`${LIST}?page_size=100`)).body.pagination.total_records).toBe(11);
    expect((await x.json(`/_sandbox/companies/${x.companyId}/transactions`, { body: { parent_qashio_id: forgotten.qashio_id }, token: null })).status).toBe(400);
    // The company summary leaves it out: this month's spend is that of the transactions held.
    expect((await x.json("/public/v1/erp/company/summary")).body.data.month_to_date_spend.amount).toBe(netSpendIn(held(x), ...START_MONTH));
  });

  it("names only a purchase it still holds as the parent of a refund or reversal made without one", async () => {
    const x = await harness({ retainTransactions: 3 });
    await acknowledgeAll(x);
    for (let i = 0; i < 10; i++) {
      await x.json(`/_sandbox/companies/${x.companyId}/transactions`, { body: { count: 4, transaction_category: "purchase" }, token: null });
      await acknowledgeAll(x);
      const children = (await x.json(`/_sandbox/companies/${x.companyId}/transactions`, { body: { count: 2, transaction_category: i % 2 === 0 ? "refund" : "reversal" }, token: null })).body.data as Row[];
      expect(children).toHaveLength(2);
      for (const child of children) expect(x.sandbox.control.company(x.companyId)?.transactions.getByQashioId(child.parent_qashio_id)).toBeDefined();
    }
  });

  it("keeps what forgotten spend consumed of its card's spend limit window: forgetting gives no limit room back", async () => {
    const x = await harness({ retainTransactions: 3 });
    const data = x.sandbox.control.company(x.companyId)!;
    fillAccounts(data);
    const consumed = () => data.cards.map((card) => consumedOf({ ...card, spendLimit: { ...card.spendLimit, period: "ALL_TIME" } }, data, Date.parse(START)));
    const before = consumed();
    await acknowledgeAll(x);
    expect(data.transactions.size).toBeLessThan(10);
    expect(consumed()).toEqual(before);
  });

  it("keeps the room a forgotten reversal gave back when its purchase, still held, changes afterwards", async () => {
    const x = await harness({ retainTransactions: 2 });
    const data = x.sandbox.control.company(x.companyId)!;
    fillAccounts(data);
    const make = async (body: Row) => (await x.json(`/_sandbox/companies/${x.companyId}/transactions`, { body, token: null })).body.data as Row[];
    const patch = (id: string, body: Row) => x.json(`/_sandbox/companies/${x.companyId}/transactions/${id}`, { body, method: "PATCH", token: null });
    await acknowledgeAll(x);
    const [purchase] = await make({ count: 1, transaction_category: "purchase" });
    const card = data.cards.find((c) => c.id === purchase!.card_external_id)!;
    const daily = { ...card, spendLimit: { ...card.spendLimit, period: "DAILY" } };
    const before = consumedOf(daily, data, Date.parse(START));
    expect(await make({ parent_qashio_id: purchase!.qashio_id, transaction_category: "reversal" })).toHaveLength(1);
    await acknowledgeAll(x);
    // Changed after acknowledgement, the purchase is still to read (held); its acknowledged reversal is forgotten.
    expect((await patch(purchase!.id, { memo: "first look" })).status).toBe(200);
    await make({ count: 3, transaction_category: "deposit" });
    expect(data.transactions.get(purchase!.id)).toBeDefined();
    expect(data.transactions.childrenOf(purchase!.qashio_id)).toEqual([]);
    const reversed = consumedOf(daily, data, Date.parse(START));
    expect(reversed.count).toBe(before.count - 1);
    expect((await patch(purchase!.id, { memo: "second look" })).status).toBe(200);
    expect(consumedOf(daily, data, Date.parse(START))).toEqual(reversed);
  });

  it("keeps what a purchase gave back when it forgets the refunds and reversals that gave it: no more is given back", async () => {
    const x = await harness({ retainTransactions: 3 });
    fillAccounts(x.sandbox.control.company(x.companyId)!);
    await acknowledgeAll(x);
    const make = async (body: unknown) => (await x.json(`/_sandbox/companies/${x.companyId}/transactions`, { body, token: null })).body.data as Row[];
    const [paid] = await make({ count: 1, transaction_category: "purchase" });
    const [refund] = await make({ parent_qashio_id: paid!.qashio_id, transaction_category: "refund" });
    const [reversal] = (refund!.transaction_amount as number) < (paid!.transaction_amount as number) ? await make({ parent_qashio_id: paid!.qashio_id, transaction_category: "reversal" }) : [];
    // The purchase stays to read (not acknowledged), its children are acknowledged and, once older than the newest 3, forgotten.
    const children = [refund, reversal].filter((t) => t !== undefined);
    expect((await x.json(ACK, { body: { transaction_ids: children.map((t) => t.id) } })).status).toBe(200);
    await make({ count: 3, transaction_category: "purchase" });
    const company = x.sandbox.control.company(x.companyId)!;
    expect(children.filter((t) => company.transactions.get(t.id as string) !== undefined), "its children are forgotten").toEqual([]);
    expect(company.transactions.get(paid!.id as string), "the purchase is kept").toBeDefined();
    for (const category of ["refund", "reversal"]) expect([category, await make({ parent_qashio_id: paid!.qashio_id, transaction_category: category })]).toEqual([category, []]);
  });

  it("lets the hold of an uncleared purchase it forgets lapse: its card's pending authorisations fall by it, so what the card can spend comes back", async () => {
    const x = await harness({ retainTransactions: 3 });
    const data = x.sandbox.control.company(x.companyId)!;
    fillAccounts(data);
    const seededHolds = [...data.holds.keys()];
    expect(seededHolds.length, "seed 7 holds seeded spend not yet cleared").toBeGreaterThan(0);
    await acknowledgeAll(x);
    const first = (await x.json(`/_sandbox/companies/${x.companyId}/transactions`, { body: { count: 5, transaction_category: "purchase" }, token: null })).body.data as Row[];
    await acknowledgeAll(x);
    await x.json(`/_sandbox/companies/${x.companyId}/transactions`, { body: { count: 5, transaction_category: "purchase" }, token: null });
    expect(first.filter((t) => data.transactions.get(t.id as string) !== undefined), "the first 5 purchases are forgotten").toEqual([]);
    // The seeded spend, acknowledged and forgotten too, lapses as well: what is held is the spend still kept.
    expect(seededHolds.filter((id) => data.transactions.get(id) !== undefined), "the seeded spend is forgotten").toEqual([]);
    expect([...data.holds.keys()].filter((id) => data.transactions.get(id) === undefined)).toEqual([]);
    // Each card holds the purchases still kept, none of the forgotten ones.
    for (const card of data.cards) {
      const kept = [...data.holds.values()].filter((hold) => hold.card === card).reduce((sum, hold) => sum + hold.amount, 0);
      expect([card.id, card.pendingAuthorisations]).toEqual([card.id, round2(kept)]);
    }
  });

  it("keeps holds and marks of loads on approval for exactly the transactions it keeps, through rounds of spend, approvals and acknowledgements", async () => {
    const x = await harness({ retainTransactions: 4 });
    const data = x.sandbox.control.company(x.companyId)!;
    fillAccounts(data);
    const loader = data.cards.find((c) => c.status === "Active" && c.poolAccountId === null && c.autoTopUpEnabled)!;
    expect(loader, "seed 7 has an Active card on auto top-up").toBeDefined();
    expect((await x.json(`/_sandbox/companies/${x.companyId}/cards/${loader.id}/auto_load`, { body: { on_transaction_approval: true }, token: null })).status).toBe(200);
    // Only it can pay, so every purchase is its own and loads it when approved.
    for (const other of data.cards) if (other !== loader && other.poolAccountId === null) other.balance = 0;
    for (const pool of data.pools) pool.balance = 0;
    data.company.fundingBalance = 1e9;
    const marked = new Set<string>();
    const madeIds: string[] = [];
    for (let round = 0; round < 8; round++) {
      const made = (await x.json(`/_sandbox/companies/${x.companyId}/transactions`, { body: { count: 3, transaction_category: "purchase" }, token: null })).body.data as Row[];
      expect(made.filter((t) => t.card_external_id !== loader.id), `round ${round}: on it alone`).toEqual([]);
      madeIds.push(...made.map((t) => t.id as string));
      for (const tx of made.filter((t) => t.approval_status !== "approved")) {
        expect((await x.json(`/_sandbox/companies/${x.companyId}/transactions/${String(tx.id)}`, { body: { approval_status: "approved" }, method: "PATCH", token: null })).status).toBe(200);
      }
      for (const id of data.loadedOnApproval) marked.add(id);
      await acknowledgeAll(x);
      const kept = (id: string) => data.transactions.get(id) !== undefined;
      expect([...data.holds.keys()].filter((id) => !kept(id)), `round ${round}: holds of forgotten spend`).toEqual([]);
      expect([...data.loadedOnApproval].filter((id) => !kept(id)), `round ${round}: marks of forgotten spend`).toEqual([]);
      const uncleared = madeIds.map((id) => data.transactions.get(id)).filter((tx) => tx !== undefined && tx.clearing_status !== "cleared");
      expect(uncleared.filter((tx) => !data.holds.has(tx!.id)).map((tx) => tx!.id), `round ${round}: kept spend not held`).toEqual([]);
      for (const card of data.cards) {
        const held = [...data.holds.values()].filter((hold) => hold.card === card).reduce((sum, hold) => sum + hold.amount, 0);
        expect([card.id, card.pendingAuthorisations]).toEqual([card.id, round2(held)]);
      }
    }
    expect([...marked].filter((id) => !data.loadedOnApproval.has(id)).length, "some marks went with their transactions").toBeGreaterThan(0);
  });

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])("refuses %s: a bound must be a positive whole number", (retainTransactions) => {
    expect(() => createSandbox({ retainTransactions })).toThrow(new RangeError(`retainTransactions must be a positive integer, got ${retainTransactions}`));
  });
});

describe("latency", () => {
  it("delays every provider API answer by the latency set at creation or through the control surface, never the control surface", async () => {
    const slow = createSandbox({ seed: 7, latencyMs: 40 });
    const started = performance.now();
    await slow.fetch(`${BASE}/public/v1/erp/cards`);
    expect(performance.now() - started).toBeGreaterThanOrEqual(35);

    expect((await control("/latency")).body.data.latency_ms).toBe(0);
    expect((await control("/latency", { latency_ms: 40 })).status).toBe(200);
    const t0 = performance.now();
    await h.call(LIST);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(35);
    // The control surface answers while a provider call that came first still waits out its latency (were it delayed
    // too, that call would answer first): an order of events, not a duration, which a control call timed against 35 ms
    // was, failing whenever a loaded machine held this process up that long.
    expect((await control("/latency", { latency_ms: 5_000 })).status).toBe(200);
    const waiting = new AbortController();
    let providerAnswered = false;
    const provider = h.sandbox
      .fetch(`${BASE}${LIST}`, { headers: { authorization: `Bearer ${h.tokens.access_token}` }, signal: waiting.signal })
      .then(() => void (providerAnswered = true), () => undefined);
    expect((await control("/companies")).status).toBe(200);
    expect(providerAnswered).toBe(false);
    waiting.abort();
    await provider;
    expect((await control("/latency", { latency_ms: -1 })).status).toBe(400);
    h.sandbox.control.setLatency(0);
    expect(h.sandbox.control.state.latencyMs).toBe(0);
  });

  it("takes a latency of at most a minute, as --latency-ms does, refusing more by name (400 OUT_OF_RANGE) and keeping the one set", async () => {
    expect((await control("/latency", { latency_ms: 60_000 })).body.data).toEqual({ latency_ms: 60_000 });
    const refused = await control("/latency", { latency_ms: 60_001 });
    expect([refused.status, errorCodes(refused.body)]).toEqual([400, ["latency_ms:OUT_OF_RANGE"]]);
    expect((await control("/latency")).body.data).toEqual({ latency_ms: 60_000 });
    h.sandbox.control.setLatency(0);
  });
});
