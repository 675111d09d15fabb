import { beforeEach, describe, expect, it } from "vitest";
import { TransactionSchema, listEnvelope } from "../../shared/qashio/schemas/index.js";
import { LEGACY_API_KEY_CHALLENGE, LEGACY_PREFIX } from "../../sandbox/index.js";
import { errorCodes, harness, type Harness } from "./helpers.js";

let h: Harness;
let apiKey: string;
beforeEach(async () => {
  h = await harness();
  apiKey = h.sandbox.control.companies()[0]?.apiKey as string;
});

const legacy = (path: string, key: string | undefined, companyId: string | undefined, query = "") => {
  const params = new URLSearchParams(query);
  if (companyId !== undefined) params.set("companyId", companyId);
  return h.json(`${LEGACY_PREFIX}${path}?${params.toString()}`, { token: null, headers: key === undefined ? {} : { "x-api-key": key } });
};

describe("earlier connector generation (§9)", () => {
  it.each([
    ["/erp-transactions", "/public/v1/erp/transactions"],
    ["/erp-bank-accounts", "/public/v1/erp/bank_accounts"],
    ["/erp-chart-of-accounts", "/public/v1/erp/chart_of_accounts"],
    ["/erp-suppliers", "/public/v1/erp/suppliers"],
    ["/erp-tax-rates", "/public/v1/erp/tax_rates"],
    ["/cards", "/public/v1/erp/cards"],
    ["/pool-accounts", "/public/v1/erp/pool_accounts"],
    ["/statements", "/public/v1/erp/statements"],
    ["/company/summary", "/public/v1/erp/company/summary"],
  ])("serves %s with x-api-key and companyId on the same data as %s", async (old, current) => {
    const before = await legacy(old, apiKey, h.companyId);
    const now = await h.json(current);
    expect(before.status).toBe(200);
    expect({ ...before.body, meta: undefined }).toEqual({ ...now.body, meta: undefined });
  });

  it("applies the same query rules and single reads", async () => {
    const page = await legacy("/erp-transactions", apiKey, h.companyId, "client_sync_status=not_synced&page_size=5");
    expect(listEnvelope(TransactionSchema).parse(page.body).data).toHaveLength(5);
    const id = page.body.data[0].id as string;
    expect((await legacy(`/erp-transactions/${id}`, apiKey, h.companyId)).body.data.id).toBe(id);
    const bad = await legacy("/erp-transactions", apiKey, h.companyId, "card_last_four=1");
    expect(bad.status).toBe(400);
    expect(errorCodes(bad.body)).toEqual(["card_last_four:INVALID_FORMAT"]);
  });

  it("takes no parent_qashio_id filter, which came with 2.0 (§9 rule 5): the key is ignored like any unknown one", async () => {
    const child = (await h.json("/public/v1/erp/transactions?page_size=100")).body.data.find((tx: { parent_qashio_id: string | null }) => tx.parent_qashio_id !== null);
    const parent = String(child?.parent_qashio_id);
    expect((await h.json(`/public/v1/erp/transactions?parent_qashio_id=${parent}`)).body.pagination.total_records).toBeLessThan(40);
    const all = await legacy("/erp-transactions", apiKey, h.companyId);
    const filtered = await legacy("/erp-transactions", apiKey, h.companyId, `parent_qashio_id=${parent}`);
    expect(filtered.status).toBe(200);
    expect({ ...filtered.body, meta: undefined }).toEqual({ ...all.body, meta: undefined });
    // Sent twice, an unknown key is still ignored, not "one value per request" (400).
    const twice = await legacy("/erp-transactions", apiKey, h.companyId, `parent_qashio_id=${parent}&parent_qashio_id=x`);
    expect(twice.status).toBe(200);
    expect(twice.body.pagination.total_records).toBe(all.body.pagination.total_records);
  });

  it("answers 401 without or with an unknown x-api-key, 400 without companyId, 403 for another company's id", async () => {
    expect((await legacy("/cards", undefined, h.companyId)).status).toBe(401);
    expect((await legacy("/cards", "wrong-key", h.companyId)).status).toBe(401);
    const missing = await legacy("/cards", apiKey, undefined);
    expect(missing.status).toBe(400);
    expect(errorCodes(missing.body)).toEqual(["companyId:REQUIRED"]);
    const another = await legacy("/cards", apiKey, h.otherCompanyId);
    expect(another.status).toBe(403);
    // The §7 entry names the parameter at fault, so a client can tell a wrong companyId from a key without access.
    expect(errorCodes(another.body)).toEqual(["companyId:FORBIDDEN"]);
  });

  it("holds companyId to one value per request, as every key a query takes: a second company's id beside its own is 400", async () => {
    for (const second of [h.otherCompanyId, h.companyId]) {
      const { status, body } = await h.json(`${LEGACY_PREFIX}/cards?companyId=${h.companyId}&companyId=${second}`, { token: null, headers: { "x-api-key": apiKey } });
      expect(status, second).toBe(400);
      expect(errorCodes(body)).toEqual(["companyId:INVALID_FORMAT"]);
    }
  });

  it("challenges a 401 for the API key it takes, not for a bearer token it refuses (RFC 7235 §4.1), a 401 injected there too", async () => {
    const own = await legacy("/cards", undefined, h.companyId);
    expect(own.status).toBe(401);
    expect(errorCodes(own.body)).toEqual(["null:UNAUTHORIZED"]);
    expect(own.headers.get("www-authenticate")).toBe(LEGACY_API_KEY_CHALLENGE);
    expect(LEGACY_API_KEY_CHALLENGE).not.toMatch(/^Bearer/i);
    h.sandbox.control.state.faults.add({ method: "GET", pathPrefix: `${LEGACY_PREFIX}/cards`, status: 401, count: 1 });
    const injected = await legacy("/cards", apiKey, h.companyId);
    expect(injected.status).toBe(401);
    expect(errorCodes(injected.body)).toEqual(["null:UNAUTHORIZED"]);
    expect(injected.headers.get("www-authenticate")).toBe(LEGACY_API_KEY_CHALLENGE);
  });

  it("does not accept a bearer token instead of the API key, nor the current paths at the legacy prefix", async () => {
    expect((await h.json(`${LEGACY_PREFIX}/erp-transactions?companyId=${h.companyId}`)).status).toBe(401);
    expect((await legacy("/bank_accounts", apiKey, h.companyId)).status).toBe(404);
  });

  it("answers 403 for a company whose API access is disabled", async () => {
    const disabled = h.sandbox.control.companies()[2];
    const refused = await legacy("/cards", disabled?.apiKey, disabled?.id);
    expect(refused.status).toBe(403);
    expect(errorCodes(refused.body)).toEqual(["null:FORBIDDEN"]);
  });
});
