import { beforeEach, describe, expect, it } from "vitest";
import * as z from "zod";
import {
  ErrorEnvelopeSchema,
  TransactionDetailSchema,
  TransactionSchema,
  listEnvelope,
  successEnvelope,
} from "../../shared/qashio/schemas/index.js";
import { ForbiddenError, NotFoundError, UnauthorizedError } from "../../shared/qashio/errors.js";
import { BASE, errorCodes, harness, tokensFor, type Harness, type Row } from "./helpers.js";

const LIST = "/public/v1/erp/transactions";
const TransactionList = listEnvelope(TransactionSchema);

let h: Harness;
beforeEach(async () => {
  h = await harness();
});

describe("GET /public/v1/erp/transactions", () => {
  it("answers the list envelope with 10 transactions by default, newest first, request id in body and header", async () => {
    const { status, headers, body } = await h.json(LIST);
    expect(status).toBe(200);
    const page = TransactionList.parse(body);
    expect(page.data).toHaveLength(10);
    expect(page.pagination).toMatchObject({ page: 1, page_size: 10, total_records: 40, total_pages: 4, has_next: true, has_previous: false });
    expect(body.meta.request_id).toBe(headers.get("x-request-id"));
    const created = page.data.map((t) => String(t.created_at));
    expect([...created].sort().reverse()).toEqual(created);
  });

  it("walks every page to the end with has_next and answers an empty page past it", async () => {
    const seen: string[] = [];
    let last: Row = {};
    for (let page = 1; ; page++) {
      const { body } = await h.json(`${LIST}?page=${page}&page_size=7`);
      seen.push(...body.data.map((t: { id: string }) => t.id));
      last = body;
      if (!body.pagination.has_next) break;
    }
    expect(new Set(seen).size).toBe(40);
    // The last page, 6 of 40 / 7, says it is the last: no empty page past it is needed to learn it.
    expect(last.data).toHaveLength(5);
    expect(last.pagination).toMatchObject({ page: 6, total_pages: 6, has_next: false, has_previous: true });
    const past = await h.json(`${LIST}?page=9&page_size=7`);
    expect(past.body.data).toEqual([]);
    expect(past.body.pagination).toMatchObject({ page: 9, has_next: false, has_previous: true });
  });

  it("accepts page_size up to 100", async () => {
    const { status, body } = await h.json(`${LIST}?page_size=100`);
    expect(status).toBe(200);
    expect(body.data).toHaveLength(40);
  });

  it.each([
    ["page=0", ["page:OUT_OF_RANGE"]],
    ["page=abc", ["page:INVALID_FORMAT"]],
    ["page_size=0", ["page_size:OUT_OF_RANGE"]],
    ["page_size=101", ["page_size:OUT_OF_RANGE"]],
    // Past the safe integers and past the sandbox's maximum too: still one entry for the field (§7).
    ["page_size=99999999999999999999", ["page_size:OUT_OF_RANGE"]],
    ["transaction_status=done", ["transaction_status:INVALID_ENUM"]],
    ["transaction_category=gift", ["transaction_category:INVALID_ENUM"]],
    ["erp_sync_status=maybe", ["erp_sync_status:INVALID_ENUM"]],
    ["approval_status=ok", ["approval_status:INVALID_ENUM"]],
    ["client_sync_status=new", ["client_sync_status:INVALID_ENUM"]],
    ["client_sync_status=synced&client_sync_status=outdated", ["client_sync_status:INVALID_FORMAT"]],
    ["card_last_four=123", ["card_last_four:INVALID_FORMAT"]],
    ["card_last_four=12a4", ["card_last_four:INVALID_FORMAT"]],
    ["transaction_time_from=2025-01-01", ["transaction_time_to:REQUIRED"]],
    ["transaction_time_to=2025-01-01", ["transaction_time_from:REQUIRED"]],
    ["transaction_time_from=2025-13-01&transaction_time_to=2025-01-31", ["transaction_time_from:INVALID_FORMAT"]],
    ["transaction_time_from=2025-01-01&transaction_time_to=2025-02-30", ["transaction_time_to:INVALID_FORMAT"]],
    ["transaction_time_from=2025-01-01&transaction_time_to=2025-02", ["transaction_time_to:INVALID_FORMAT"]],
    ["exclude_from_sync=maybe", ["exclude_from_sync:INVALID_FORMAT"]],
    ["page=0&card_last_four=1&approval_status=x", ["page:OUT_OF_RANGE", "approval_status:INVALID_ENUM", "card_last_four:INVALID_FORMAT"]],
  ])("answers 400 for %s with one error per offending field", async (query, expected) => {
    const { status, headers, body } = await h.json(`${LIST}?${query}`);
    expect(status).toBe(400);
    const envelope = ErrorEnvelopeSchema.parse(body);
    expect(body).not.toHaveProperty("success");
    expect(envelope.status_code).toBe(400);
    expect(body.meta.request_id).toBe(headers.get("x-request-id"));
    expect(errorCodes(body).sort()).toEqual([...expected].sort());
  });

  // docs/spec-gaps.md, Sandbox > Lists and validation: "unknown query keys are ignored" (the spec, §4.3 and §8.2, names no
  // rule for them). A key the endpoint does not take is ignored however often it is sent; only a key it takes is held to
  // one value per request (§8.2 rule 7).
  it("ignores an unknown query key even when it is repeated", async () => {
    const { status, body } = await h.json(`${LIST}?page_size=5&cache_bust=1&cache_bust=2`);
    expect({ status, errors: body.errors }).toEqual({ status: 200, errors: undefined });
    expect(body.data).toHaveLength(5);
  });

  it("filters on client_sync_status with exact totals", async () => {
    const counts: Record<string, number> = {};
    for (const status of ["not_synced", "synced", "outdated"]) {
      const { body } = await h.json(`${LIST}?client_sync_status=${status}&page_size=100`);
      expect(body.data.every((t: { client_sync_status: string }) => t.client_sync_status === status)).toBe(true);
      expect(body.pagination.total_records).toBe(body.data.length);
      counts[status] = body.data.length;
    }
    expect(counts.not_synced).toBeGreaterThanOrEqual(15);
    expect((counts.not_synced ?? 0) + (counts.synced ?? 0) + (counts.outdated ?? 0)).toBe(40);
  });

  it("filters on qashio_id and parent_qashio_id exactly", async () => {
    const all = (await h.json(`${LIST}?page_size=100`)).body.data as { qashio_id: string; parent_qashio_id: string | null }[];
    const child = all.find((t) => t.parent_qashio_id !== null);
    expect(child).toBeDefined();
    const byId = await h.json(`${LIST}?qashio_id=${child?.qashio_id}`);
    expect(byId.body.data.map((t: { qashio_id: string }) => t.qashio_id)).toEqual([child?.qashio_id]);
    const partial = await h.json(`${LIST}?qashio_id=${child?.qashio_id.slice(0, 5)}`);
    expect(partial.body.data).toEqual([]);
    const children = await h.json(`${LIST}?parent_qashio_id=${child?.parent_qashio_id}`);
    expect(children.body.data.length).toBeGreaterThan(0);
    expect(children.body.data.every((t: { parent_qashio_id: string }) => t.parent_qashio_id === child?.parent_qashio_id)).toBe(true);
  });

  // §8.2 rule 5: identifier filters are exact, unlike the case-insensitive text filters (spec-gaps: ids as issued).
  it("matches qashio_id and parent_qashio_id in the letter case issued only: a lower-case reference names nothing", async () => {
    const all = (await h.json(`${LIST}?page_size=100`)).body.data as { qashio_id: string; parent_qashio_id: string | null }[];
    const child = all.find((t) => t.parent_qashio_id !== null);
    expect(child?.qashio_id).not.toBe(child?.qashio_id.toLowerCase());
    for (const query of [`qashio_id=${child?.qashio_id.toLowerCase()}`, `parent_qashio_id=${child?.parent_qashio_id?.toLowerCase()}`]) {
      const { status, body } = await h.json(`${LIST}?${query}`);
      expect({ status, data: body.data, total: body.pagination.total_records }, query).toEqual({ status: 200, data: [], total: 0 });
    }
  });

  // §4.3 and §8.2 rule 5: both are exact identifier filters, and filters sent together all apply.
  it("answers qashio_id with parent_qashio_id only when that transaction names that parent", async () => {
    const all = (await h.json(`${LIST}?page_size=100`)).body.data as { qashio_id: string; parent_qashio_id: string | null }[];
    const child = all.find((t) => t.parent_qashio_id !== null);
    const other = all.find((t) => t.parent_qashio_id === null && t.qashio_id !== child?.parent_qashio_id);
    expect(child && other).toBeDefined();
    const named = await h.json(`${LIST}?qashio_id=${child?.qashio_id}&parent_qashio_id=${child?.parent_qashio_id}`);
    expect(named.body.data.map((t: { qashio_id: string }) => t.qashio_id)).toEqual([child?.qashio_id]);
    const notNamed = await h.json(`${LIST}?qashio_id=${child?.qashio_id}&parent_qashio_id=${other?.qashio_id}`);
    expect(notNamed.body.data).toEqual([]);
    expect(notNamed.body.pagination).toMatchObject({ total_records: 0, total_pages: 0, has_next: false });
  });

  it("pages the children of one parent by page_size, newest first, with the pagination totals of all of them", async () => {
    // Money back is capped at what a purchase took (spec-gaps, Balances), so a refund of it in full ends its children:
    // take the first purchase that three refunds in a row still find something left of.
    const purchases = (await h.json(`${LIST}?transaction_category=purchase&page_size=100`)).body.data as Row[];
    let purchase: Row | undefined;
    let created: Row[] = [];
    for (const candidate of purchases) {
      created = [];
      for (let i = 0; i < 3; i += 1) {
        const body = { count: 1, transaction_category: "refund", parent_qashio_id: candidate.qashio_id };
        created.push(...((await h.json(`/_sandbox/companies/${h.companyId}/transactions`, { body, token: null })).body.data as Row[]));
      }
      if (created.length === 3) {
        purchase = candidate;
        break;
      }
    }
    if (purchase === undefined) throw new Error("no purchase took three refunds");
    const children = (await h.json(`${LIST}?parent_qashio_id=${purchase.qashio_id}&page_size=100`)).body.data as Row[];
    expect(children.slice(0, 3).map((t) => t.id)).toEqual(created.map((t) => t.id).reverse());
    for (const page of [1, 2]) {
      const { body } = await h.json(`${LIST}?parent_qashio_id=${purchase.qashio_id}&page_size=1&page=${page}`);
      expect(body.data.map((t: Row) => t.id)).toEqual([children[page - 1]?.id]);
      expect(body.pagination).toMatchObject({ page, page_size: 1, total_records: children.length, total_pages: children.length, has_next: true, has_previous: page > 1 });
    }
  });

  it("filters on transaction_status, which only the single read shows", async () => {
    const all = (await h.json(`${LIST}?page_size=100`)).body.data as Row[];
    const statusOf = new Map<string, string>();
    for (const t of all) statusOf.set(t.id, (await h.json(`${LIST}/${t.id}`)).body.data.transaction_status);
    const wanted = statusOf.get(all[5]?.id);
    const { body } = await h.json(`${LIST}?transaction_status=${wanted}&page_size=100`);
    expect(body.data.map((t: Row) => t.id)).toEqual(all.filter((t) => statusOf.get(t.id) === wanted).map((t) => t.id));
    expect(body.data.length).toBeLessThan(all.length);
    expect(body.pagination.total_records).toBe(body.data.length);
  });

  it("takes the Bearer scheme in any letter case (RFC 7235 §2.1: auth schemes are case-insensitive)", async () => {
    for (const scheme of ["bearer", "BEARER"]) {
      expect((await h.json(LIST, { token: null, headers: { authorization: `${scheme} ${h.tokens.access_token}` } })).status, scheme).toBe(200);
    }
  });

  it("matches employee_id case-insensitively and in part, as a text filter (§8.2 rule 5)", async () => {
    const all = (await h.json(`${LIST}?page_size=100`)).body.data as Row[];
    const employee = String((all[5] as Row).employee_id);
    const exact = (await h.json(`${LIST}?employee_id=${employee}&page_size=100`)).body.data as Row[];
    expect(exact.length).toBeGreaterThan(0);
    const lower = (await h.json(`${LIST}?employee_id=${employee.toLowerCase()}&page_size=100`)).body.data as Row[];
    expect(lower.map((t) => t.id)).toEqual(exact.map((t) => t.id));
    const part = employee.slice(0, -1);
    const partial = (await h.json(`${LIST}?employee_id=${part}&page_size=100`)).body.data as Row[];
    expect(partial.map((t) => t.id)).toEqual(all.filter((t) => String(t.employee_id).includes(part)).map((t) => t.id));
    expect(partial.length).toBeGreaterThan(exact.length);
  });

  it("matches every transaction with an empty employee_id, one whose employee_id a change left null included (spec-gaps: an empty text filter matches every record)", async () => {
    const [tx] = (await h.json(LIST)).body.data as Row[];
    expect((await h.json(`/_sandbox/companies/${h.companyId}/transactions/${tx?.id}`, { method: "PATCH", body: { employee_id: null } })).status).toBe(200);
    const all = (await h.json(`${LIST}?page_size=100`)).body;
    const empty = (await h.json(`${LIST}?employee_id=&page_size=100`)).body;
    expect(empty.pagination.total_records).toBe(all.pagination.total_records);
    expect(empty.data.map((t: Row) => t.id)).toContain(tx?.id);
  });

  it("matches the currency filters to a stored code in any letter case, whole codes only (spec-gaps: compared case-insensitively)", async () => {
    const [tx] = (await h.json(LIST)).body.data as Row[];
    const patched = await h.json(`/_sandbox/companies/${h.companyId}/transactions/${tx?.id}`, { method: "PATCH", body: { transaction_currency: "usd", billing_currency: "aed" } });
    expect(patched.status).toBe(200);
    for (const query of ["transaction_currency=USD", "transaction_currency=usd", "billing_currency=AED", "billing_currency=aEd"]) {
      const ids = ((await h.json(`${LIST}?${query}&page_size=100`)).body.data as Row[]).map((t) => t.id);
      expect(ids, query).toContain(tx?.id);
    }
    expect((await h.json(`${LIST}?transaction_currency=us&page_size=100`)).body.data).toEqual([]);
  });

  it("lists under billing_currency only what was billed in that currency, none for a currency nothing was billed in (§4.3)", async () => {
    const [tx] = (await h.json(LIST)).body.data as Row[];
    expect((await h.json(`/_sandbox/companies/${h.companyId}/transactions/${tx?.id}`, { method: "PATCH", body: { billing_currency: "SAR" } })).status).toBe(200);
    const billed = async (currency: string) => ((await h.json(`${LIST}?billing_currency=${currency}&page_size=100`)).body.data as Row[]).map((t) => t.id);
    expect(await billed("SAR")).toEqual([tx?.id]);
    expect(await billed("AED")).not.toContain(tx?.id);
    expect(await billed("USD")).toEqual([]);
  });

  it("filters on category, card, employee, currencies, statuses, exclude_from_sync and an inclusive time range", async () => {
    const all = (await h.json(`${LIST}?page_size=100`)).body.data as Row[];
    const sample = all[5] as Row;
    const detail = (await h.json(`${LIST}/${sample.id}`)).body.data;
    const day = String(sample.transaction_time).slice(0, 10);
    const cases: [string, (t: Row) => boolean][] = [
      [`transaction_category=${sample.transaction_category}`, (t) => t.transaction_category === sample.transaction_category],
      [`card_last_four=${sample.card_last_four}`, (t) => t.card_last_four === sample.card_last_four],
      [`employee_id=${sample.employee_id}`, (t) => t.employee_id === sample.employee_id],
      [`transaction_currency=${sample.transaction_currency}`, (t) => t.transaction_currency === sample.transaction_currency],
      [`billing_currency=${sample.billing_currency}`, (t) => t.billing_currency === sample.billing_currency],
      [`approval_status=${sample.approval_status}`, (t) => t.approval_status === sample.approval_status],
      [`erp_sync_status=${sample.erp_sync_status}`, (t) => t.erp_sync_status === sample.erp_sync_status],
      [`exclude_from_sync=${sample.exclude_from_sync}`, (t) => t.exclude_from_sync === sample.exclude_from_sync],
      [`transaction_time_from=${day}&transaction_time_to=${day}`, (t) => String(t.transaction_time).startsWith(day)],
    ];
    for (const [query, matches] of cases) {
      const { body } = await h.json(`${LIST}?${query}&page_size=100`);
      expect(body.data.map((t: { id: string }) => t.id), query).toEqual(all.filter(matches).map((t) => t.id));
      expect(body.data.map((t: { id: string }) => t.id), query).toContain(sample.id);
    }
    const byStatus = await h.json(`${LIST}?transaction_status=${detail.transaction_status}&page_size=100`);
    expect(byStatus.body.data.map((t: { id: string }) => t.id)).toContain(sample.id);
  });

  it("ranges transaction_time_from/_to over transaction_time, not created_at: a transaction whose time a change moved is listed under its new day only (§4.3, §8.2 rule 1)", async () => {
    const sample = ((await h.json(`${LIST}?page_size=100`)).body.data as Row[])[5] as Row;
    const detail = (await h.json(`${LIST}/${sample.id}`)).body.data as Row;
    const createdDay = String(detail.created_at).slice(0, 10);
    const moved = "2020-01-15";
    const patched = await h.json(`/_sandbox/companies/${h.companyId}/transactions/${sample.id}`, { method: "PATCH", body: { transaction_time: `${moved}T12:00:00.000Z` }, token: null });
    expect(patched.status).toBe(200);
    const ids = async (day: string) => ((await h.json(`${LIST}?transaction_time_from=${day}&transaction_time_to=${day}&page_size=100`)).body.data as Row[]).map((t) => t.id);
    expect(await ids(moved)).toEqual([sample.id]);
    expect(await ids(createdDay)).not.toContain(sample.id);
  });

  // §8.2 rule 6: four digits name one ending; a card sharing only the last three is another card.
  it("lists under card_last_four only the transactions of cards ending in all four digits sent", async () => {
    const all = (await h.json(`${LIST}?page_size=100`)).body.data as Row[];
    const last4 = String((all[5] as Row).card_last_four);
    const other = `${(Number(last4[0]) + 1) % 10}${last4.slice(1)}`;
    const { body } = await h.json(`${LIST}?card_last_four=${other}&page_size=100`);
    expect(body.data.map((t: Row) => t.id)).toEqual(all.filter((t) => t.card_last_four === other).map((t) => t.id));
    expect(body.data.map((t: Row) => t.card_last_four)).not.toContain(last4);
  });

  it("lists under exclude_from_sync=true only the excluded transactions and under false only the others", async () => {
    const all = (await h.json(`${LIST}?page_size=100`)).body.data as Row[];
    for (const value of [true, false]) {
      const wanted = all.filter((t) => t.exclude_from_sync === value).map((t) => t.id);
      expect(wanted.length, String(value)).toBeGreaterThan(0);
      const { body } = await h.json(`${LIST}?exclude_from_sync=${value}&page_size=100`);
      expect(body.data.map((t: Row) => t.id), String(value)).toEqual(wanted);
    }
  });

  it("combines filters: a transaction is listed only when it matches every one sent", async () => {
    const all = (await h.json(`${LIST}?page_size=100`)).body.data as Row[];
    const sample = all[5] as Row;
    const category = (t: Row) => t.transaction_category === sample.transaction_category;
    const card = (t: Row) => t.card_last_four === sample.card_last_four;
    const both = all.filter((t) => category(t) && card(t)).map((t) => t.id);
    // The seed has transactions matching one filter and not the other, so "either" would list more.
    expect(all.filter((t) => category(t) || card(t)).length).toBeGreaterThan(both.length);
    const { body } = await h.json(`${LIST}?transaction_category=${sample.transaction_category}&card_last_four=${sample.card_last_four}&page_size=100`);
    expect(body.data.map((t: Row) => t.id)).toEqual(both);
    expect(body.pagination.total_records).toBe(both.length);
  });

  it("answers 401 without a token or with a forged one", async () => {
    expect((await h.json(LIST, { token: null })).status).toBe(401);
    const forged = `${h.tokens.access_token.slice(0, -4)}AAAA`;
    const { status, body } = await h.json(LIST, { token: forged });
    expect(status).toBe(401);
    expect(errorCodes(body)).toEqual(["null:UNAUTHORIZED"]);
    // RFC 6750 §3: a 401 to a bearer-protected resource carries the Bearer challenge.
    expect((await h.json(LIST, { token: null })).headers.get("www-authenticate")).toMatch(/^Bearer /);
  });

  it("names the cause of a 401 in its message: a header that is no Bearer token is malformed, not missing (§5 rule 9)", async () => {
    const message = async (headers: Record<string, string>) => (await h.json(LIST, { token: null, headers })).body.message as string;
    expect(await message({})).toBe("Missing bearer token");
    expect(await message({ authorization: "Bearer " })).toBe("Missing bearer token");
    for (const header of [`Basic ${Buffer.from("a:b").toString("base64")}`, `Bearer ${h.tokens.access_token} extra`, h.tokens.access_token]) {
      expect(await message({ authorization: header }), header.slice(0, 20)).toMatch(/^Malformed Authorization header/);
    }
    const validate = await h.sandbox.fetch(`${BASE}/oauth2/validate`, { headers: { authorization: "Basic abc" } });
    expect(((await validate.json()) as Row).error_description).toMatch(/^Malformed Authorization header/);
  });

  it("answers 403 when the company's API access is disabled, and when the token lacks the scope", async () => {
    const disabled = await tokensFor(h.sandbox, h.disabledCompanyId);
    expect((await h.json(LIST, { token: disabled.access_token })).status).toBe(403);
    const narrow = await tokensFor(h.sandbox, h.companyId, "cards:read");
    const { status, body } = await h.json(LIST, { token: narrow.access_token });
    expect(status).toBe(403);
    expect(ErrorEnvelopeSchema.parse(body).status_code).toBe(403);
  });
});

describe("GET /public/v1/erp/transactions/{id}", () => {
  it("answers the single read with pre-fee amounts, fees apart and erp_company, where the list is fee-inclusive", async () => {
    const all = (await h.json(`${LIST}?page_size=100`)).body.data as Row[];
    const withFee = all.find((t) => Number(t.fee_charges) > 0 && Number(t.clearing_amount) > 0);
    expect(withFee).toBeDefined();
    const { status, body } = await h.json(`${LIST}/${withFee?.id}`);
    expect(status).toBe(200);
    const detail = successEnvelope(TransactionDetailSchema).parse(body).data;
    expect(detail.transaction_fee_amount).toBeGreaterThan(0);
    expect(Number(detail.billing_amount) + Number(detail.transaction_fee_amount)).toBeCloseTo(Number(withFee?.billing_amount), 2);
    expect(Number(detail.clearing_amount) + Number(detail.clearing_fee)).toBeCloseTo(Number(withFee?.clearing_amount), 2);
    // §2.2 rule 3: the company the token reads, a company of its own (no parent), active and not deleted; read as sent,
    // since the schema would also take `is_deleted` as "false".
    const company = h.sandbox.control.company(h.companyId)!.company;
    expect(body.data.erp_company).toEqual({
      id: h.companyId,
      name: company.name,
      business_legal_name: company.legalName,
      company_country: company.country,
      parent_company_id: null,
      status: "active",
      is_deleted: false,
      updated_at: company.createdAt,
      created_at: company.createdAt,
    });
    expect(["draft", "pushed", "synced", "failed"]).toContain(detail.transaction_status);
    // §2.2 rule 2: these are what the single read adds; the list has none of them.
    for (const field of ["transaction_status", "transaction_fee_amount", "clearing_fee", "erp_company"]) {
      expect(detail).toHaveProperty(field);
      expect(all.filter((t) => field in t), field).toEqual([]);
    }
  });

  it("names in erp_company the company whose token reads, its own country included (§2.2 rule 3)", async () => {
    const other = await tokensFor(h.sandbox, h.otherCompanyId);
    const [theirs] = (await h.json(LIST, { token: other.access_token })).body.data as { id: string }[];
    const { body } = await h.json(`${LIST}/${theirs?.id}`, { token: other.access_token });
    const company = h.sandbox.control.company(h.otherCompanyId)!.company;
    // The two seeded companies with API access lie in different countries, so a fixed country would show here.
    expect(company.country).not.toBe(h.sandbox.control.company(h.companyId)!.company.country);
    expect(body.data.erp_company).toMatchObject({ id: h.otherCompanyId, name: company.name, business_legal_name: company.legalName, company_country: company.country });
  });

  it("lists clearing_amount with the clearing's own fee, and 0 while the clearing names no amount, a clearing fee alone included, both sums in cents (§2.2 rule 1)", async () => {
    const [tx] = (await h.json(LIST)).body.data as Row[];
    const patch = (fields: Row) => h.json(`/_sandbox/companies/${h.companyId}/transactions/${tx?.id}`, { method: "PATCH", body: fields, token: null });
    const listed = async () => ((await h.json(`${LIST}?qashio_id=${tx?.qashio_id}`)).body.data as Row[])[0];
    // A clearing may take another fee than the authorisation held (clearing_fee beside transaction_fee_amount).
    expect((await patch({ clearing_status: "cleared", clearing_amount: 100, clearing_fee: 3.5, transaction_fee_amount: 1 })).status).toBe(200);
    expect(await listed()).toMatchObject({ clearing_amount: 103.5 });
    expect((await patch({ clearing_amount: 0, clearing_fee: 2 })).status).toBe(200);
    expect(await listed()).toMatchObject({ clearing_amount: 0 });
    // The sums are amounts in cents, not the float sums (0.1 + 0.2 is 0.30000000000000004).
    expect((await patch({ billing_amount: 0.1, transaction_fee_amount: 0.2, clearing_amount: 0.1, clearing_fee: 0.2 })).status).toBe(200);
    expect(await listed()).toMatchObject({ billing_amount: 0.3, clearing_amount: 0.3 });
  });

  it("answers 400 for a CT reference or another malformed id", async () => {
    const [first] = (await h.json(LIST)).body.data as { qashio_id: string }[];
    for (const id of [first?.qashio_id, "not-a-uuid"]) {
      const { status, body } = await h.json(`${LIST}/${id}`);
      expect(status).toBe(400);
      expect(errorCodes(body)).toEqual(["transactionId:INVALID_FORMAT"]);
    }
  });

  it("answers 404 for an unknown id and for another company's transaction", async () => {
    const unknown = await h.json(`${LIST}/2f1e7c52-0d3b-4c5a-9e8f-000000000000`);
    expect(unknown.status).toBe(404);
    expect(errorCodes(unknown.body)).toEqual(["transactionId:NOT_FOUND"]);
    const other = await tokensFor(h.sandbox, h.otherCompanyId);
    const [theirs] = (await h.json(LIST, { token: other.access_token })).body.data as { id: string }[];
    const { status, body } = await h.json(`${LIST}/${theirs?.id}`);
    expect(status).toBe(404);
    expect(body).not.toHaveProperty("data");
  });
});

describe("client_sync_status state machine and acknowledge", () => {
  const ACK = "/public/v1/erp/transactions/acknowledge";

  it("moves not_synced to synced, then a change makes it outdated, and acknowledging again makes it synced", async () => {
    const before = (await h.json(`${LIST}?client_sync_status=not_synced&page_size=3`)).body;
    const ids = before.data.map((t: { id: string }) => t.id) as string[];
    const ack = await h.json(ACK, { body: { transaction_ids: ids } });
    expect(ack.status).toBe(200);
    successEnvelope(z.looseObject({ acknowledged: z.number() })).parse(ack.body);
    expect(ack.body.data).toMatchObject({ acknowledged: 3, transaction_ids: ids });
    expect(ack.body.message).toEqual(expect.any(String)); // §4.1: present on writes

    const after = (await h.json(`${LIST}?client_sync_status=not_synced&page_size=100`)).body;
    expect(after.pagination.total_records).toBe(before.pagination.total_records - 3);
    expect(after.data.map((t: { id: string }) => t.id)).not.toContain(ids[0]);

    const patched = await h.json(`/_sandbox/companies/${h.companyId}/transactions/${ids[0]}`, { method: "PATCH", body: { memo: "corrected" } });
    expect(patched.status).toBe(200);
    const outdated = (await h.json(`${LIST}?client_sync_status=outdated&page_size=100`)).body.data as { id: string; memo: string }[];
    expect(outdated.find((t) => t.id === ids[0])?.memo).toBe("corrected");

    await h.json(ACK, { body: { transaction_ids: [ids[0]] } });
    const detail = (await h.json(`${LIST}/${ids[0]}`)).body.data;
    expect(detail.client_sync_status).toBe("synced");
  });

  it("is idempotent: acknowledging a synced transaction keeps it synced, an id sent twice counted once", async () => {
    const [tx] = (await h.json(`${LIST}?client_sync_status=synced`)).body.data as { id: string }[];
    const { status, body } = await h.json(ACK, { body: { transaction_ids: [tx?.id, tx?.id] } });
    expect(status).toBe(200);
    expect(body.data).toEqual({ acknowledged: 1, transaction_ids: [tx?.id], client_sync_status: "synced" });
    expect((await h.json(`${LIST}/${tx?.id}`)).body.data.client_sync_status).toBe("synced");
  });

  // §3.1: acknowledge moves to `synced` whatever the state; only a change makes a `synced` one `outdated`. The id sent
  // once, so two flips in one batch cannot cancel out.
  it("leaves a synced transaction synced when it is acknowledged once again, out of the outdated pull", async () => {
    const [tx] = (await h.json(`${LIST}?client_sync_status=synced`)).body.data as Row[];
    const outdatedBefore = (await h.json(`${LIST}?client_sync_status=outdated`)).body.pagination.total_records;
    expect((await h.json(ACK, { body: { transaction_ids: [tx?.id] } })).status).toBe(200);
    expect((await h.json(`${LIST}/${tx?.id}`)).body.data.client_sync_status).toBe("synced");
    const outdated = (await h.json(`${LIST}?client_sync_status=outdated&page_size=100`)).body;
    expect(outdated.pagination.total_records).toBe(outdatedBefore);
    expect(outdated.data.map((t: Row) => t.id)).not.toContain(tx?.id);
  });

  // docs/spec-gaps.md, Acknowledge: "Acknowledging does not move updated_at" (the acknowledge is the client's
  // bookkeeping, not a change of the transaction, §3.1); a moved stamp would show every acknowledged item as changed.
  it("keeps updated_at and modified_date as they were when acknowledging, not_synced and outdated alike", async () => {
    const [fresh] = (await h.json(`${LIST}?client_sync_status=not_synced`)).body.data as Row[];
    const [synced] = (await h.json(`${LIST}?client_sync_status=synced`)).body.data as Row[];
    await h.json(`/_sandbox/companies/${h.companyId}/transactions/${synced?.id}`, { method: "PATCH", body: { memo: "corrected" }, token: null });
    const before = await Promise.all([fresh, synced].map(async (t) => (await h.json(`${LIST}/${t?.id}`)).body.data as Row));
    expect(before.map((t) => t.client_sync_status)).toEqual(["not_synced", "outdated"]);
    await h.json("/_sandbox/clock", { body: { advance_seconds: 60 }, token: null });
    expect((await h.json(ACK, { body: { transaction_ids: before.map((t) => t.id) } })).status).toBe(200);
    for (const t of before) {
      const after = (await h.json(`${LIST}/${t.id}`)).body.data as Row;
      expect(after).toMatchObject({ client_sync_status: "synced", updated_at: t.updated_at, modified_date: t.modified_date });
    }
  });

  it("lists transactions under a status their backlog held none of: acknowledged ones as synced, then changed ones as outdated", async () => {
    await h.json("/_sandbox/reset", { body: { transactions: 30 }, token: null });
    expect((await h.json(`${LIST}?client_sync_status=synced`)).body.pagination.total_records).toBe(0);
    const ids = (await h.json(`${LIST}?client_sync_status=not_synced&page_size=3`)).body.data.map((t: Row) => t.id) as string[];
    expect((await h.json(ACK, { body: { transaction_ids: ids } })).status).toBe(200);
    const synced = (await h.json(`${LIST}?client_sync_status=synced`)).body;
    expect(synced.data.map((t: Row) => t.id)).toEqual(ids);
    expect(synced.pagination.total_records).toBe(3);
    await h.json(`/_sandbox/companies/${h.companyId}/transactions/${ids[1]}`, { method: "PATCH", body: { memo: "corrected" }, token: null });
    expect((await h.json(`${LIST}?client_sync_status=outdated`)).body.data.map((t: Row) => t.id)).toEqual([ids[1]]);
    expect((await h.json(`${LIST}?client_sync_status=synced`)).body.data.map((t: Row) => t.id)).toEqual([ids[0], ids[2]]);
    expect((await h.json(`${LIST}?client_sync_status=not_synced`)).body.pagination.total_records).toBe(27);
  });

  it("refuses unknown and other-company ids with one NOT_FOUND per id and acknowledges nothing", async () => {
    const other = await tokensFor(h.sandbox, h.otherCompanyId);
    const [theirs] = (await h.json(LIST, { token: other.access_token })).body.data as { id: string }[];
    const [mine] = (await h.json(`${LIST}?client_sync_status=not_synced`)).body.data as { id: string }[];
    const unknown = "2f1e7c52-0d3b-4c5a-9e8f-000000000000";
    const { status, body } = await h.json(ACK, { body: { transaction_ids: [mine?.id, theirs?.id, unknown] } });
    expect(status).toBe(400);
    expect(errorCodes(body)).toEqual(["transaction_ids.1:NOT_FOUND", "transaction_ids.2:NOT_FOUND"]);
    // The envelope's own message says why the whole batch was refused, not a validation's generic words.
    expect(body.message).toBe("Some transactions were not found");
    expect((await h.json(`${LIST}/${mine?.id}`)).body.data.client_sync_status).toBe("not_synced");
  });

  // §7: each errors entry is `{ field, code, message }`; the message says which id and why, another company's id too.
  it("says in each NOT_FOUND entry's message which id it refused and that it is not this company's (§7 errors entry)", async () => {
    const other = await tokensFor(h.sandbox, h.otherCompanyId);
    const [theirs] = (await h.json(LIST, { token: other.access_token })).body.data as { id: string }[];
    const { body } = await h.json(ACK, { body: { transaction_ids: ["2f1e7c52-0d3b-4c5a-9e8f-000000000000", theirs?.id] } });
    expect(body.errors).toEqual([0, 1].map((i) => ({ field: `transaction_ids.${i}`, code: "NOT_FOUND", message: `transaction_ids.${i} is not a transaction of this company` })));
  });

  // §7: "a failed write returns 400 with one errors entry per offending field": one unknown id fails the batch too.
  it("refuses a batch with a single unknown id beside known ones, acknowledging none of them", async () => {
    const mine = (await h.json(`${LIST}?client_sync_status=not_synced&page_size=2`)).body.data as { id: string }[];
    const unknown = "2f1e7c52-0d3b-4c5a-9e8f-000000000000";
    const { status, body } = await h.json(ACK, { body: { transaction_ids: [mine[0]?.id, unknown, mine[1]?.id] } });
    expect(status).toBe(400);
    expect(errorCodes(body)).toEqual(["transaction_ids.1:NOT_FOUND"]);
    for (const tx of mine) expect((await h.json(`${LIST}/${tx.id}`)).body.data.client_sync_status).toBe("not_synced");
  });

  it.each([
    [{ transaction_ids: [] }, ["transaction_ids:REQUIRED"]],
    [{}, ["transaction_ids:REQUIRED"]],
    [{ transaction_ids: "abc" }, ["transaction_ids:INVALID_FORMAT"]],
    [{ transaction_ids: ["CT1000000001"] }, ["transaction_ids.0:INVALID_FORMAT"]],
    ["{not json", ["null:INVALID_FORMAT"]],
  ])("answers 400 for the body %j", async (payload, expected) => {
    const { status, body } = await h.json(ACK, { body: payload });
    expect(status).toBe(400);
    expect(errorCodes(body)).toEqual(expected);
  });

  it("caps a batch at 1000 ids", async () => {
    const ids = Array.from({ length: 1001 }, (_, i) => `2f1e7c52-0d3b-4c5a-9e8f-${String(i).padStart(12, "0")}`);
    const { status, body } = await h.json(ACK, { body: { transaction_ids: ids } });
    expect(status).toBe(400);
    expect(errorCodes(body)).toEqual(["transaction_ids:OUT_OF_RANGE"]);
    // 1000 is within the cap: the batch is checked id by id (every one unknown here).
    const atCap = await h.json(ACK, { body: { transaction_ids: ids.slice(0, 1000) } });
    expect(errorCodes(atCap.body)).not.toContain("transaction_ids:OUT_OF_RANGE");
    expect(errorCodes(atCap.body)).toHaveLength(1000);
  });

  it("reports the cap beside a malformed id in one 400, one entry per offending field (§7)", async () => {
    const ids = Array.from({ length: 1001 }, (_, i) => `2f1e7c52-0d3b-4c5a-9e8f-${String(i).padStart(12, "0")}`);
    ids[3] = "CT1000000001";
    const { status, body } = await h.json(ACK, { body: { transaction_ids: ids } });
    expect(status).toBe(400);
    expect(errorCodes(body)).toEqual(["transaction_ids.3:INVALID_FORMAT", "transaction_ids:OUT_OF_RANGE"]);
  });

  it("needs the transactions:write scope", async () => {
    const readOnly = await tokensFor(h.sandbox, h.companyId, "transactions:read");
    const [tx] = (await h.json(LIST)).body.data as { id: string }[];
    expect((await h.json(ACK, { body: { transaction_ids: [tx?.id] }, token: readOnly.access_token })).status).toBe(403);
  });
});

describe("transactions through the provider client", () => {
  it("lists, reads, iterates and acknowledges", async () => {
    const page = await h.client.listTransactions({ client_sync_status: "not_synced", page_size: 5 });
    expect(page.data).toHaveLength(5);
    expect(page.pagination.has_next).toBe(true);
    const detail = await h.client.getTransaction(page.data[0]?.id as string);
    expect(detail.id).toBe(page.data[0]?.id);
    const all: string[] = [];
    for await (const tx of h.client.iterateTransactions({ page_size: 9 })) all.push(tx.id);
    expect(all).toHaveLength(40);
    const result = await h.client.acknowledgeTransactions(page.data.map((t) => t.id));
    expect(result.acknowledged).toBe(5);
    expect(result.requestId).toMatch(/^[0-9a-f-]{36}$/);
    const next = await h.client.listTransactions({ client_sync_status: "not_synced", page_size: 100 });
    expect(next.pagination.total_records).toBe(page.pagination.total_records - 5);
  });

  it("surfaces 401, 403 and 404 as the client's typed errors", async () => {
    await expect(h.clientFor("not.a.token").listTransactions()).rejects.toBeInstanceOf(UnauthorizedError);
    const disabled = await tokensFor(h.sandbox, h.disabledCompanyId);
    await expect(h.clientFor(disabled.access_token).listTransactions()).rejects.toBeInstanceOf(ForbiddenError);
    await expect(h.client.getTransaction("2f1e7c52-0d3b-4c5a-9e8f-000000000000")).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe("paths and methods the API does not serve", () => {
  it.each([
    ["GET", "/public/v1/erp/no_such_resource"],
    ["POST", "/public/v1/erp/transactions"],
    ["DELETE", "/public/v1/erp/cards"],
    ["PATCH", "/public/v1/core/cards/CA0000000000"],
    ["GET", "/oauth2/token"],
    ["POST", "/oauth2/validate"],
  ])("answers %s %s with the §7 404 envelope (not 405, not an OAuth body), its request id in the header", async (method, path) => {
    const { status, headers, body } = await h.json(path, { method, body: method === "GET" ? undefined : {} });
    expect(status).toBe(404);
    expect(ErrorEnvelopeSchema.safeParse(body).success).toBe(true);
    expect(body).not.toHaveProperty("success");
    expect(errorCodes(body)).toEqual(["null:NOT_FOUND"]);
    expect(body.meta.request_id).toBe(headers.get("x-request-id"));
  });

  it("checks the bearer token under /public/v1/erp and /public/v1/core before the path: 401 without one", async () => {
    for (const path of ["/public/v1/erp/no_such_resource", "/public/v1/core/no_such_resource"]) {
      expect((await h.json(path, { token: null })).status).toBe(401);
    }
  });
});
