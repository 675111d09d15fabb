import { readFileSync } from "node:fs";
import { beforeEach, describe, expect, it } from "vitest";
import {
  CardBalanceSchema,
  CoreCardListEnvelopeSchema,
  CoreCardWriteDataSchema,
  ChangeStatusDataSchema,
  ErpCardDetailSchema,
  ErpCardSchema,
  InvitationResultSchema,
  listEnvelope,
  successEnvelope,
} from "../../shared/qashio/schemas/index.js";
import { BadRequestError, ForbiddenError, NotFoundError } from "../../shared/qashio/errors.js";
import { SUSPENSION_PROCESSING_SECONDS } from "../../sandbox/index.js";
import { errorCodes, harness, tokensFor, type Harness, type Row } from "./helpers.js";

const ERP = "/public/v1/erp/cards";
const CORE = "/public/v1/core/cards";

let h: Harness;
beforeEach(async () => {
  h = await harness();
});

async function erpCards(query = "page_size=100"): Promise<Row[]> {
  return (await h.json(`${ERP}?${query}`)).body.data as Row[];
}
async function cardWith(status: string): Promise<Row> {
  const card = (await erpCards()).find((c) => c.status === status);
  if (!card) throw new Error(`no ${status} card`);
  return card;
}

describe("GET /public/v1/erp/cards", () => {
  it("lists 20 per page by default, newest first, every card validating", async () => {
    const { status, body } = await h.json(ERP);
    expect(status).toBe(200);
    const page = listEnvelope(ErpCardSchema).parse(body);
    expect(page.pagination).toMatchObject({ page: 1, page_size: 20, total_records: 12 });
    const created = page.data.map((c) => String(c.created_at));
    expect([...created].sort().reverse()).toEqual(created);
    expect(page.data.every((c) => String(c.masked_card_number).startsWith("****"))).toBe(true);
  });

  it("filters on status, card_type, account_type, pool account, user, last4 and date ranges sent alone", async () => {
    const all = await erpCards();
    const pooled = all.find((c) => c.account_type === "pool") as Row;
    const pick = all[3] as Row;
    const users = (await h.json(`/public/v1/core/cards?page_size=100`)).body.data.cards as Row[];
    const holder = users.find((c) => c.id === pick.id)?.user_profile.user_id as string;
    const cases: [string, (c: Row) => boolean][] = [
      ["status=suspended", (c) => c.status === "Suspended"],
      ["card_type=physical", (c) => c.card_type === "Physical"],
      ["account_type=pool", (c) => c.account_type === "pool"],
      [`pool_account_id=${pooled.account_external_id}`, (c) => c.account_external_id === pooled.account_external_id],
      [`user_id=${holder}`, (c) => c.cardholder.email === pick.cardholder.email],
      [`last4=${String(pick.masked_card_number).slice(-4)}`, (c) => c.masked_card_number === pick.masked_card_number],
      ["created_time_from=2025-03-01", (c) => String(c.created_at) >= "2025-03-01"],
      ["issued_time_to=2024-12-31", (c) => c.issued_at !== null && String(c.issued_at) < "2025-01-01"],
    ];
    for (const [query, matches] of cases) {
      const got = (await erpCards(`${query}&page_size=100`)).map((c) => c.id);
      expect(got, query).toEqual(all.filter(matches).map((c) => c.id));
      expect(got.length, query).toBeGreaterThan(0);
    }
  });

  it("shows whether country and category limits are in force as the card holds each, not one for the other", async () => {
    const records = h.sandbox.control.company(h.companyId)!.cards;
    expect(records.some((c) => c.countryLimitsActive !== c.categoryLimitsActive), "a card with one family on and the other off").toBe(true);
    const listed = new Map((await erpCards()).map((c) => [c.id, [c.country_limits_active, c.category_limits_active]]));
    expect(records.map((c) => [c.id, listed.get(c.id)])).toEqual(records.map((c) => [c.id, [c.countryLimitsActive, c.categoryLimitsActive]]));
  });

  it("counts only the cards a filter matches in its pagination", async () => {
    const all = await erpCards();
    const physical = all.filter((c) => c.card_type === "Physical").length;
    expect(physical).toBeLessThan(all.length);
    const { body } = await h.json(`${ERP}?card_type=physical&page_size=1`);
    expect(body.pagination).toMatchObject({ page: 1, page_size: 1, total_records: physical, total_pages: physical, has_next: physical > 1 });
  });

  it("filters issued_time on the issue time, so a card never issued is outside every issue range, whenever it was created", async () => {
    const draft = await cardWith("Draft");
    expect(draft.issued_at).toBeNull();
    const created = String(draft.created_at).slice(0, 10);
    const ids = (await erpCards(`issued_time_from=${created}&issued_time_to=${created}&page_size=100`)).map((c) => c.id);
    expect(ids).not.toContain(draft.id);
    expect((await erpCards(`created_time_from=${created}&created_time_to=${created}&page_size=100`)).map((c) => c.id)).toContain(draft.id);
  });

  it.each([
    ["account_type=company", ["account_type:INVALID_ENUM"]],
    ["status=frozen", ["status:INVALID_ENUM"]],
    ["card_type=plastic", ["card_type:INVALID_ENUM"]],
    ["last4=12345", ["last4:INVALID_FORMAT"]],
    ["issued_time_from=2025-02-01&issued_time_to=2025-01-01", ["issued_time_to:INVALID_RANGE"]],
    ["created_time_from=2025-02-01&created_time_to=2025-01-01", ["created_time_to:INVALID_RANGE"]],
    ["page_size=500", ["page_size:OUT_OF_RANGE"]],
  ])("answers 400 for %s", async (query, expected) => {
    const { status, body } = await h.json(`${ERP}?${query}`);
    expect(status).toBe(400);
    expect(errorCodes(body)).toEqual(expected);
  });

  it("answers 404 for a pool account or user of nobody in this company, the entry naming the filter (§7)", async () => {
    const pool = await h.json(`${ERP}?pool_account_id=PAUNKNOWN00`);
    const user = await h.json(`${ERP}?user_id=00000000-0000-4000-8000-000000000000`);
    expect([pool, user].map(({ status, body }) => [status, errorCodes(body)])).toEqual([
      [404, ["pool_account_id:NOT_FOUND"]],
      [404, ["user_id:NOT_FOUND"]],
    ]);
  });

  it("answers page_size cards per page, each page the next cards in order (§8.1)", async () => {
    const all = (await erpCards()).map((c) => c.id);
    expect(all.length, "seed 7 has cards for three pages of 5").toBeGreaterThan(10);
    const pages = [];
    for (const page of [1, 2, 3]) pages.push(((await h.json(`${ERP}?page_size=5&page=${page}`)).body.data as Row[]).map((c) => c.id));
    expect(pages).toEqual([all.slice(0, 5), all.slice(5, 10), all.slice(10, 15)]);
  });

  it("matches last4 on all four digits, not a card ending in the same three (§8.2 rule 6)", async () => {
    const [mine, lookalike] = h.sandbox.control.company(h.companyId)!.cards;
    const other = String((Number(mine!.lastFour[0]) + 1) % 10);
    Object.assign(lookalike!, { lastFour: `${other}${mine!.lastFour.slice(1)}` });
    expect((await erpCards(`last4=${mine!.lastFour}&page_size=100`)).map((c) => c.id)).toEqual([mine!.id]);
  });

  it("has every status, both types and both funding models among the seeded cards", async () => {
    const all = await erpCards();
    expect(new Set(all.map((c) => c.status))).toEqual(new Set(["Active", "Inactive", "Suspended", "Terminated", "Draft", "Cancelled"]));
    expect(new Set(all.map((c) => c.card_type))).toEqual(new Set(["Virtual", "Physical"]));
    expect(new Set(all.map((c) => c.account_type))).toEqual(new Set(["reloadable", "pool"]));
  });

  it("shows each card's own settings and times as the card record holds them (§2.3)", async () => {
    const data = h.sandbox.control.company(h.companyId)!;
    const records = new Map(data.cards.map((c) => [c.id, c]));
    const listed = await erpCards();
    const expected = listed.map((c) => {
      const card = records.get(c.id as string)!;
      return {
        id: card.id,
        card_nickname: card.nickname,
        company_name: data.company.name,
        allowed_max_balance: card.allowedMaxBalance,
        topup_type: card.topupType,
        float_management_enabled: card.floatManagementEnabled,
        card_replaced: card.cardReplaced,
        low_balance_notification_active: card.lowBalanceNotificationActive,
        low_balance_notification_amount: card.lowBalanceNotificationAmount,
        issued_at: card.issuedAt,
        activated_at: card.activatedAt,
        terminated_at: card.terminatedAt,
        created_at: card.createdAt,
      };
    });
    expect(listed.map((c) => Object.fromEntries(Object.keys(expected[0]!).map((key) => [key, c[key]])))).toEqual(expected);
    // The notification amount is the card's own, not its maximum balance, among the seeded cards.
    expect(expected.filter((c) => c.low_balance_notification_amount !== c.allowed_max_balance).length).toBeGreaterThan(0);
  });
});

describe("GET /public/v1/erp/cards/{cardId}", () => {
  it("answers one card with its configuration objects", async () => {
    const card = await cardWith("Active");
    const { status, body } = await h.json(`${ERP}/${card.id}`);
    expect(status).toBe(200);
    const detail = successEnvelope(ErpCardDetailSchema).parse(body).data;
    expect(detail.purchase_limits).toBeTruthy();
    expect(detail.country_limits).toBeTruthy();
    expect(detail.merchant_category_limits?.categories?.[0]?.mcc_codes?.length).toBeGreaterThan(0);
    expect(detail.topup_configuration).toBeTruthy();
    expect(detail.atm_configuration).toBeTruthy();
  });

  it("lists two MCC categories: Travel with the card's own codes, Software with the codes docs/spec-gaps.md names", async () => {
    const gaps = readFileSync(new URL("../../docs/spec-gaps.md", import.meta.url), "utf8").replace(/\s+/g, " ");
    const named = /a fixed Software of MCCs (\d{4}), (\d{4}) and (\d{4})\)/.exec(gaps);
    expect(named).not.toBeNull();
    const record = h.sandbox.control.company(h.companyId)!.cards.find((c) => c.allowedMccs.length > 0)!;
    const detail = (await h.json(`${ERP}/${record.id}`)).body.data as Row;
    expect((detail.merchant_category_limits as Row).categories).toEqual([
      { name: "Travel", mcc_codes: record.allowedMccs },
      { name: "Software", mcc_codes: named!.slice(1) },
    ]);
  });

  it("shows a card's limits as the card holds them: the purchase limit in the card's currency, the countries allowed and blocked, the category restriction's type", async () => {
    const records = h.sandbox.control.company(h.companyId)!.cards;
    const blocking = records.find((c) => c.blockedCountries.length > 0)!;
    for (const card of [blocking, ...records.filter((c) => c !== blocking).slice(0, 3)]) {
      const detail = (await h.json(`${ERP}/${card.id}`)).body.data as Row;
      expect([card.id, detail.purchase_limits, detail.country_limits]).toEqual([
        card.id,
        { enabled: card.spendLimit.active, amount: card.spendLimit.maxAmount, frequency: card.spendLimit.period, limit_currency: card.currency, number_of_purchases: card.spendLimit.frequency },
        { restriction_mode: card.countryLimitsActive ? "allow_list" : "none", allowed_countries: card.allowedCountries, blocked_countries: card.blockedCountries },
      ]);
    }
    // The category restriction's type (spec-gaps, Cards and users), seen both ways among the seeded cards.
    const types = new Map<string, unknown>();
    for (const card of records) types.set(card.id, ((await h.json(`${ERP}/${card.id}`)).body.data as Row).merchant_category_limits.restriction_type);
    expect([...types]).toEqual(records.map((card) => [card.id, card.categoryLimitsActive ? "allow" : "none"]));
    expect(new Set(types.values()).size).toBe(2);
  });

  it("names the cardholder and funding account its transactions name (§2.2 card and holder, §2.3 cardholder)", async () => {
    const cards = new Map((await erpCards()).map((c) => [c.id as string, c]));
    const listed = (await h.json("/public/v1/erp/transactions?page_size=100")).body.data as Row[];
    expect(listed.some((tx) => tx.pool_external_id !== null), "some spend on a pool card").toBe(true);
    for (const tx of listed) {
      const card = cards.get(tx.card_external_id as string)!;
      expect([tx.qashio_id, card.cardholder, card.account_type === "pool" ? card.account_external_id : null]).toEqual([
        tx.qashio_id,
        { name: tx.card_holder_name, email: tx.card_holder_email, employee_id: tx.employee_id },
        tx.pool_external_id,
      ]);
    }
  });

  it("shows in atm_configuration whether the card allows ATM use, and a purchase limit in the card's currency in every company", async () => {
    for (const companyId of [h.companyId, h.otherCompanyId]) {
      const { access_token } = await tokensFor(h.sandbox, companyId);
      const cards = h.sandbox.control.company(companyId)!.cards;
      for (const card of cards) {
        const detail = (await h.json(`${ERP}/${card.id}`, { token: access_token })).body.data as Row;
        expect([card.id, detail.atm_configuration.atm_withdrawal_allowed, detail.purchase_limits.limit_currency]).toEqual([card.id, card.atmWithdrawalAllowed, card.currency]);
      }
    }
    const all = [h.companyId, h.otherCompanyId].flatMap((id) => h.sandbox.control.company(id)!.cards);
    expect(new Set(all.map((c) => c.atmWithdrawalAllowed)).size).toBe(2);
    expect(new Set(all.map((c) => c.currency)).size).toBeGreaterThan(1);
  });

  it("answers 404 for an unknown card and for another company's card", async () => {
    expect((await h.json(`${ERP}/CAUNKNOWN000`)).status).toBe(404);
    // Ids are exact as issued (spec-gaps): a card's id in lower case names no card.
    const known = (await erpCards())[0]!.id as string;
    expect([(await h.json(`${ERP}/${known}`)).status, (await h.json(`${ERP}/${known.toLowerCase()}`)).status]).toEqual([200, 404]);
    // The same error entry from the card read and from each card write: the path parameter named, as §7 entries do.
    const notFound = [
      await h.json(`${ERP}/CAUNKNOWN000`),
      await h.json(`${CORE}/CAUNKNOWN000`, { method: "PUT", body: { nickname: "x" } }),
      await h.json(`${CORE}/CAUNKNOWN000/change_status`, { method: "PUT", body: { status: "suspended" } }),
      await h.json(`${CORE}/CAUNKNOWN000/update_velocity_limit`, { method: "POST", body: { spend_limit_active: false } }),
    ];
    expect(notFound.map(({ status, body }) => [status, errorCodes(body)])).toEqual(Array(4).fill([404, ["cardId:NOT_FOUND"]]));
    const other = await tokensFor(h.sandbox, h.otherCompanyId);
    const [theirs] = (await h.json(ERP, { token: other.access_token })).body.data as Row[];
    expect((await h.json(`${ERP}/${theirs?.id}`)).status).toBe(404);
    await expect(h.client.getErpCard(theirs?.id as string)).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe("GET /public/v1/core/cards", () => {
  it("answers { cards, page_info } with lowercase statuses, hiding draft cards", async () => {
    const { status, body } = await h.json(`${CORE}?page_size=5&page=2`);
    expect(status).toBe(200);
    const { data } = CoreCardListEnvelopeSchema.parse(body);
    expect(data.page_info).toEqual({ current_page: 2, per_page: 5, total_entries: 11, total_pages: 3, next_page: 3, previous_page: 1, offset: 5 });
    expect(body).not.toHaveProperty("pagination");
    const all = (await h.json(`${CORE}?page_size=100`)).body.data.cards as Row[];
    expect(all.every((c) => c.status === String(c.status).toLowerCase())).toBe(true);
    expect(all.some((c) => c.status === "draft")).toBe(false);
  });

  it("derives the core fields §2.4 leaves open from the card, as spec-gaps (Cards and users) states them, the card number masked to its last four", async () => {
    const data = h.sandbox.control.company(h.companyId)!;
    // One card of each type Inactive (dashboard), so the fields that look at type and status meet every pair.
    for (const type of ["Virtual", "Physical"] as const) {
      const card = data.cards.find((c) => c.cardType === type && c.status === "Active")!;
      await h.json(`/_sandbox/companies/${h.companyId}/cards/${card.id}/status`, { body: { status: "Inactive" } });
    }
    expect(new Set(data.cards.filter((c) => c.status === "Inactive").map((c) => c.cardType))).toEqual(new Set(["Virtual", "Physical"]));
    const [records, country] = [new Map(data.cards.map((c) => [c.id, c])), data.company.country];
    const listed = (await h.json(`${CORE}?page_size=100`)).body.data.cards as Row[];
    const derived = listed.map((c) => {
      const card = records.get(c.id as string)!;
      const physical = card.cardType === "Physical";
      const segment = (label: string) => card.segments.find((s) => s.label === label)?.name ?? null;
      return {
        id: card.id,
        card_number: `**** **** **** ${card.lastFour}`,
        allow_replace_card: physical,
        shipping_card: physical && card.status === "Inactive",
        spend_restriction_type: card.categoryLimitsActive ? "ALLOW" : "NONE",
        tokenization_status: card.status === "Active" ? "tokenized" : "not_tokenized",
        show_pool_balance_to_cardholder: card.accountType === "pool",
        spend_limit: card.spendLimit.maxAmount,
        department: segment("Department"),
        location: segment("Location"),
        wallets_status: { apple_pay: card.status === "Active", google_pay: false, samsung_pay: false },
        shipping_details: { method: physical ? "courier" : null, return_address: null, shipping_address: null },
        shipping_address: physical ? expect.objectContaining({ country }) : null,
        replaced_by_card_id: card.replacedByCardId,
        replaced_by_card_external_id: card.replacedByCardId,
        user_profile: expect.objectContaining({ system_role_name: card.holder.role, fullname: `${card.holder.firstName} ${card.holder.lastName}` }),
      };
    });
    expect(listed.map((c) => Object.fromEntries(Object.keys(derived[0]!).map((key) => [key, c[key]])))).toEqual(derived);
    // The card product is an object of the write responses only (§2.4).
    expect(listed.filter((c) => "card_product" in c).map((c) => c.id)).toEqual([]);
    // Each rule is seen both ways among the seeded cards, so none of them holds by the seed's chance alone.
    for (const key of ["allow_replace_card", "shipping_card", "spend_restriction_type", "tokenization_status", "show_pool_balance_to_cardholder", "replaced_by_card_id"] as const) {
      expect([key, new Set(derived.map((d) => d[key])).size]).toEqual([key, 2]);
    }
  });

  it("shows each core card's status, notifications, country list, account and holder as the card record holds them (§2.4, spec-gaps)", async () => {
    const data = h.sandbox.control.company(h.companyId)!;
    const records = new Map(data.cards.map((c) => [c.id, c]));
    const listed = (await h.json(`${CORE}?page_size=100`)).body.data.cards as Row[];
    const erp = new Map(((await h.json(`${ERP}?page_size=100`)).body.data as Row[]).map((c) => [c.id as string, c]));
    const expected = listed.map((c) => {
      const card = records.get(c.id as string)!;
      const holder = card.holder;
      return {
        id: card.id,
        status: card.status.toLowerCase(),
        // spec-gaps (values of fields the spec lists none for): the lowercase status.
        display_status: card.status.toLowerCase(),
        limit_amount_notification: card.lowBalanceNotificationActive,
        card_balance_running_low_notification: card.lowBalanceNotificationAmount,
        allowed_countries_list: card.allowedCountries,
        allowed_countries_list_active: card.countryLimitsActive,
        account_type: card.accountType.toUpperCase(),
        account_id: card.accountExternalId,
        currency: card.currency,
        issued_at: card.issuedAt,
        first_activated_at: card.activatedAt,
        // The count limit the ERP read says is enforced (some cards send the flag as text, §2.4).
        transactions_limit_active: expect.stringMatching(`^${String(erp.get(card.id)?.transaction_limits_active)}$`),
        transactions_limit: expect.objectContaining({ max_amount: card.spendLimit.maxAmount, period: card.spendLimit.period, frequency: card.spendLimit.frequency, currency: card.currency }),
        user_name: `${holder.firstName} ${holder.lastName}`,
        user_email: holder.email,
        user_profile: expect.objectContaining({
          department_name: holder.department,
          first_name: holder.firstName,
          last_name: holder.lastName,
          user_name: holder.email,
          email: holder.email,
          user_email: holder.email,
          external_id: holder.externalId,
          user_id: holder.userId,
          employee_id: holder.employeeId,
        }),
      };
    });
    const shown = listed.map((c) => Object.fromEntries(Object.keys(expected[0]!).map((key) => [key, key === "transactions_limit_active" ? String(c[key]) : c[key]])));
    expect(shown).toEqual(expected);
    for (const key of ["display_status", "limit_amount_notification", "allowed_countries_list_active", "account_type"] as const) {
      expect([key, new Set(expected.map((d) => d[key])).size > 1]).toEqual([key, true]);
    }
  });

  it("lists newest first, as every list (spec-gaps, Lists and validation: creation order), the pages joining without a gap", async () => {
    const all = (await h.json(`${CORE}?page_size=100`)).body.data.cards as Row[];
    const created = all.map((c) => String(c.created_at));
    expect(created.every((at) => at !== "undefined")).toBe(true);
    expect([...created].sort().reverse()).toEqual(created);
    expect(new Set(created).size).toBeGreaterThan(1);
    const pages = [1, 2, 3].map(async (page) => (await h.json(`${CORE}?page_size=5&page=${page}`)).body.data.cards as Row[]);
    expect((await Promise.all(pages)).flat().map((c) => c.id)).toEqual(all.map((c) => c.id));
    expect(all.every((c) => typeof c.id === "string")).toBe(true);
  });

  it("accepts limit instead of page_size and defaults to 20", async () => {
    expect((await h.json(`${CORE}?limit=4`)).body.data.page_info.per_page).toBe(4);
    expect((await h.json(CORE)).body.data.page_info).toMatchObject({ per_page: 20, next_page: null, previous_page: null });
    expect((await h.json(`${CORE}?limit=0`)).status).toBe(400);
    expect((await h.json(`${CORE}?limit=101`)).status).toBe(400);
    // Both sent: `page_size`, the name every list takes (§8.1), wins over its §4.9 alternative (spec-gaps, Lists and validation).
    expect((await h.json(`${CORE}?page_size=3&limit=5`)).body.data.page_info.per_page).toBe(3);
    expect((await h.json(`${CORE}?limit=3&page_size=5`)).body.data.page_info.per_page).toBe(5);
  });

  it("refuses a page whose offset is past the safe integers 400 OUT_OF_RANGE, so page_info stays whole numbers", async () => {
    const last = Math.floor(Number.MAX_SAFE_INTEGER / 100) + 1;
    const edge = await h.json(`${CORE}?page=${last}&limit=100`);
    expect(edge.status).toBe(200);
    const { data } = CoreCardListEnvelopeSchema.parse(edge.body);
    expect(data).toMatchObject({ cards: [], page_info: { current_page: last, offset: (last - 1) * 100, next_page: null } });
    for (const query of [`page=${last + 1}&limit=100`, `page=${Number.MAX_SAFE_INTEGER}&page_size=100`, `page=${Number.MAX_SAFE_INTEGER}`]) {
      const { status, body } = await h.json(`${CORE}?${query}`);
      expect(status).toBe(400);
      expect(errorCodes(body)).toEqual(["page:OUT_OF_RANGE"]);
    }
    // The message names the last page the client may still ask for, the one answered 200 above.
    const past = await h.json(`${CORE}?page=${last + 1}&limit=100`);
    expect(past.body.errors[0].message).toBe(`page must be at most ${last} at 100 a page`);
  });

  it("answers 401 without a token", async () => {
    expect((await h.json(CORE, { token: null })).status).toBe(401);
  });

  it("is walked by the client with next_page", async () => {
    const ids: string[] = [];
    for await (const card of h.client.iterateCoreCards({ page_size: 3 })) ids.push(card.id);
    expect(ids).toHaveLength(11);
  });
});

describe("GET /public/v1/core/cards/balance", () => {
  // Both kinds: a card with its own account, and a pool card, which spends its pool's balance less the holds of every
  // card on the pool (the first Active card alone would test only the first kind).
  it.each(["reloadable", "pool"])("answers the company balance and a %s card's balance net of its account's pending authorisations", async (kind) => {
    const card = (await erpCards()).find((c) => c.status === "Active" && c.account_type === kind);
    if (!card) throw new Error(`no Active ${kind} card`);
    const company = h.sandbox.control.company(h.companyId)!;
    const record = company.cards.find((c) => c.id === card.id)!;
    // The seed holds only its uncleared spend, on few cards: a pending authorisation of this one's, as a purchase makes.
    record.pendingAuthorisations += 12.5;
    const last4 = String(card.masked_card_number).slice(-4);
    const { status, body } = await h.json(`/public/v1/core/cards/balance?last_four=${last4}`);
    expect(status).toBe(200);
    const data = successEnvelope(CardBalanceSchema).parse(body).data;
    expect(data.company_balance?.currency).toBe("AED");
    expect(data.cards.map((c) => c.card_id)).toContain(card.id);
    const account = record.poolAccountId === null ? record.balance : company.pools.find((p) => p.id === record.poolAccountId)!.balance;
    const holds = company.cards.filter((c) => c.accountExternalId === record.accountExternalId).reduce((sum, c) => sum + c.pendingAuthorisations, 0);
    expect(holds).toBeGreaterThan(0);
    const entry = data.cards.find((c) => c.card_id === card.id);
    expect(entry?.balance).toBeCloseTo(account - holds, 2);
  });

  it("lists under last_four only the visible cards ending in those digits", async () => {
    const card = await cardWith("Suspended");
    const last4 = String(card.masked_card_number).slice(-4);
    const { status, body } = await h.json(`/public/v1/core/cards/balance?last_four=${last4}`);
    expect(status).toBe(200);
    const sameDigits = (await erpCards()).filter((c) => c.status !== "Draft" && String(c.masked_card_number).endsWith(last4)).map((c) => c.id);
    expect((body.data.cards as Row[]).map((c) => c.card_id)).toEqual(sameDigits);
    expect((body.data.cards as Row[]).every((c) => c.last_four === last4)).toBe(true);
    const other = last4 === "0000" ? "0001" : "0000";
    expect((await h.json(`/public/v1/core/cards/balance?last_four=${other}`)).body.data.cards).toEqual([]);
  });

  // Cents whose float times 100 falls just below the whole number (1.15 * 100 is 114.999...): cut off, not rounded,
  // they would read a cent short.
  it.each([0.29, 1.15, 4.35, 8.2])("gives a card holding %d exactly that balance, to the cent", async (held) => {
    const record = h.sandbox.control.company(h.companyId)!.cards.find((c) => c.status === "Active" && c.poolAccountId === null)!;
    record.balance = held;
    record.pendingAuthorisations = 0;
    const read = await h.client.getCardBalance({ nickname: record.nickname });
    expect(read.cards.find((c) => c.card_id === record.id)?.balance).toBe(held);
  });

  it("matches the exact nickname and narrows on status", async () => {
    const card = await cardWith("Suspended");
    const byName = await h.client.getCardBalance({ nickname: card.card_nickname as string });
    expect(byName.cards.map((c) => c.card_id)).toEqual([card.id]);
    const partial = await h.client.getCardBalance({ nickname: String(card.card_nickname).slice(0, 4) });
    expect(partial.cards).toEqual([]);
    const narrowed = await h.client.getCardBalance({ nickname: card.card_nickname as string, status: "active" });
    expect(narrowed.cards).toEqual([]);
    // Exact (§4.9 "exact card name"): another letter case names another card; the card's own status keeps it.
    const shouted = String(card.card_nickname).toUpperCase();
    expect(shouted).not.toBe(card.card_nickname);
    expect((await h.client.getCardBalance({ nickname: shouted })).cards).toEqual([]);
    const kept = await h.client.getCardBalance({ nickname: card.card_nickname as string, status: "suspended" });
    expect(kept.cards.map((c) => [c.card_id, c.status])).toEqual([[card.id, "suspended"]]);
  });

  it.each([
    ["status=active", ["null:REQUIRED"]],
    ["", ["null:REQUIRED"]],
    ["nickname=x&status=frozen", ["status:INVALID_ENUM"]],
    ["last_four=12", ["last_four:INVALID_FORMAT"]],
    // An empty nickname names no card (spec-gaps, Card balance), a last_four beside it or not.
    ["nickname=", ["nickname:REQUIRED"]],
    ["nickname=&last_four=1234", ["nickname:REQUIRED"]],
  ])("answers 400 for %j", async (query, expected) => {
    const { status, body } = await h.json(`/public/v1/core/cards/balance?${query}`);
    expect(status).toBe(400);
    expect(errorCodes(body)).toEqual(expected);
  });

  // §4.9 lists the balance read's query (nickname, last_four, status) and its 400s; it is no list and takes no
  // page_size, so one sent is an unknown key, ignored whatever its value (spec-gaps, Lists and validation).
  it.each(["page_size=500", "page_size=abc", "limit=500"])("ignores %s, a key it does not take", async (extra) => {
    const card = await cardWith("Active");
    const { status, body } = await h.json(`/public/v1/core/cards/balance?nickname=${encodeURIComponent(String(card.card_nickname))}&${extra}`);
    expect({ status, errors: body.errors }).toEqual({ status: 200, errors: undefined });
    expect((body.data.cards as Row[]).map((c) => c.card_id)).toEqual([card.id]);
  });
});

describe("GET /public/v1/core/cards/balance of pool cards", () => {
  it("gives every card on a pool what the pool can still spend: its balance less the holds of all its cards", async () => {
    const data = h.sandbox.control.company(h.companyId)!;
    const pool = data.pools.find((p) => data.cards.filter((c) => c.poolAccountId === p.id && c.status === "Active").length >= 2)!;
    const [x, y] = data.cards.filter((c) => c.poolAccountId === pool.id && c.status === "Active");
    x!.pendingAuthorisations = 100;
    y!.pendingAuthorisations = 25.5;
    const held = data.cards.filter((c) => c.poolAccountId === pool.id).reduce((sum, c) => sum + c.pendingAuthorisations, 0);
    const balance = async (nickname: string) =>
      ((await h.json(`/public/v1/core/cards/balance?nickname=${encodeURIComponent(nickname)}`)).body.data.cards as Row[]).find((c) => c.card_id !== undefined)?.balance;
    const spendable = Math.round((pool.balance - held) * 100) / 100;
    expect([await balance(x!.nickname), await balance(y!.nickname)]).toEqual([spendable, spendable]);
  });
});

describe("core card account_balance", () => {
  // §2.4 `account_balance` beside `account_id` (a pool card's is the pool) and `show_pool_balance_to_cardholder`:
  // the balance of the account the card draws on, from which the balance read (§4.9) takes that account's holds.
  it("is the balance of the card's account: a pool card shows its pool's, as every card on that pool does (spec-gaps)", async () => {
    const data = h.sandbox.control.company(h.companyId)!;
    const listed = (await h.json(`${CORE}?page_size=100`)).body.data.cards as Row[];
    const pooled = listed.filter((c) => c.account_type === "POOL");
    expect(pooled.length).toBeGreaterThan(1);
    for (const core of listed) {
      const record = data.cards.find((c) => c.id === core.id)!;
      const pool = data.pools.find((p) => p.id === record.poolAccountId);
      const expected = pool ? pool.balance : record.balance;
      expect([core.nickname, Number(core.account_balance)]).toEqual([core.nickname, expected]);
      if (record.status !== "Active") continue;
      const holds = data.cards.filter((c) => c.accountExternalId === record.accountExternalId).reduce((sum, c) => sum + c.pendingAuthorisations, 0);
      const read = (await h.client.getCardBalance({ nickname: record.nickname })).cards.find((c) => c.card_id === record.id);
      expect(read?.balance, record.nickname).toBeCloseTo(Number(core.account_balance) - holds, 2);
    }
  });
});

describe("PUT /public/v1/core/cards/{cardId} (funding update)", () => {
  it("changes only the fields sent and answers the updated card", async () => {
    const card = await cardWith("Active");
    const { status, body } = await h.json(`${CORE}/${card.id}`, { method: "PUT", body: { auto_top_up_amount: 1500, velocity_period: "weekly" } });
    expect(status).toBe(200);
    expect(body.message).toMatch(/updated/i);
    const updated = successEnvelope(CoreCardWriteDataSchema).parse(body).data.card;
    expect(updated.auto_top_up_amount).toBe(1500);
    expect(updated.velocity_period).toBe("WEEKLY");
    expect(updated.nickname).toBe(card.card_nickname);
    const detail = (await h.json(`${ERP}/${card.id}`)).body.data;
    expect(detail.topup_configuration).toMatchObject({ auto_topup_amount: 1500, frequency: "WEEKLY" });
    // kept trimmed, as when issuing a card
    const result = await h.client.updateCard(card.id as string, { nickname: " Renamed ", card_usage_type_amount: 12000, card_usage_type: "one_time" });
    expect(result.card.nickname).toBe("Renamed");
    // The funding model sent is kept, upper-cased as velocity_period is, and listed so from then on.
    expect(result.card.card_usage_type).toBe("ONE_TIME");
    const listed = ((await h.json(`${CORE}?page_size=100`)).body.data.cards as Row[]).find((c) => c.id === card.id);
    expect(listed?.card_usage_type).toBe("ONE_TIME");
    expect((await h.json(`${ERP}/${card.id}`)).body.data).toMatchObject({ card_nickname: "Renamed", allowed_max_balance: 12000 });
  });

  it("answers with a card product in the card's own currency (§2.4 card_product), whatever the company's", async () => {
    const other = await tokensFor(h.sandbox, h.otherCompanyId);
    const cards = (await h.json(`${CORE}?page_size=100`, { token: other.access_token })).body.data.cards as Row[];
    const card = cards.find((c) => c.status === "active")!;
    expect(card.currency).not.toBe(h.sandbox.control.company(h.companyId)!.company.currency);
    const { status, body } = await h.json(`${CORE}/${String(card.id)}`, { method: "PUT", body: { nickname: "Product" }, token: other.access_token });
    expect(status).toBe(200);
    expect(body.data.card.card_product.currency_settings).toEqual({ currency: card.currency });
  });

  it("keeps topup_type agreeing with the auto top-up an update turns on or off, as seeded cards do", async () => {
    const own = (await erpCards()).filter((c) => c.account_type === "reloadable" && !["Terminated", "Cancelled"].includes(c.status as string));
    const manual = own.find((c) => c.topup_type === "manual");
    const auto = own.find((c) => c.topup_type === "auto_topup");
    if (!manual || !auto) throw new Error("expected changeable reloadable cards funded manually and by auto top-up");
    expect((await h.json(`${CORE}/${manual.id}`, { method: "PUT", body: { auto_top_up_amount: 2500 } })).status).toBe(200);
    expect((await h.json(`${ERP}/${manual.id}`)).body.data).toMatchObject({ topup_type: "auto_topup", topup_configuration: { auto_topup_enabled: true } });
    expect((await h.json(`${CORE}/${auto.id}`, { method: "PUT", body: { auto_top_up_amount: 0 } })).status).toBe(200);
    expect((await h.json(`${ERP}/${auto.id}`)).body.data).toMatchObject({ topup_type: "manual", topup_configuration: { auto_topup_enabled: false } });
    // A pool card is funded by its pool (§2.5), whatever auto top-up of its own it is given.
    const pooled = (await erpCards()).find((c) => c.account_type === "pool" && c.status === "Active");
    if (!pooled) throw new Error("expected an active pool card");
    expect((await h.json(`${CORE}/${pooled.id}`, { method: "PUT", body: { auto_top_up_amount: 2500 } })).status).toBe(200);
    expect((await h.json(`${ERP}/${pooled.id}`)).body.data.topup_type).toBe("pool");
  });

  it.each([
    [{}, ["null:REQUIRED"]],
    [{ auto_top_up_amount: -5 }, ["auto_top_up_amount:OUT_OF_RANGE"]],
    [{ auto_top_up_amount: 1.5 }, ["auto_top_up_amount:INVALID_FORMAT"]],
    [{ velocity_period: "HOURLY" }, ["velocity_period:INVALID_ENUM"]],
    // the wrong type, as card_type or account_type when issuing a card
    [{ velocity_period: 5 }, ["velocity_period:INVALID_FORMAT"]],
    [{ card_usage_type: "PREPAID_GIFT" }, ["card_usage_type:INVALID_ENUM"]],
    [{ nickname: "" }, ["nickname:REQUIRED"]],
    // blank as when issuing a card
    [{ nickname: "   " }, ["nickname:REQUIRED"]],
    [{ auto_top_up_amount: -1, velocity_period: "FORTNIGHTLY" }, ["auto_top_up_amount:OUT_OF_RANGE", "velocity_period:INVALID_ENUM"]],
    [{ nickname: "", card_usage_type: "GIFT", card_usage_type_amount: 0 }, ["nickname:REQUIRED", "card_usage_type:INVALID_ENUM", "card_usage_type_amount:OUT_OF_RANGE"]],
  ])("answers 400 for %j", async (payload, expected) => {
    const card = await cardWith("Active");
    const { status, body } = await h.json(`${CORE}/${card.id}`, { method: "PUT", body: payload });
    expect(status).toBe(400);
    expect(errorCodes(body)).toEqual(expected);
  });

  it("takes back a pool card's own card_usage_type POOL, and refuses a funding model the card's account cannot have", async () => {
    const pool = (await erpCards()).find((c) => c.account_type === "pool" && c.status === "Active");
    const own = await cardWith("Active");
    if (!pool || own.account_type !== "reloadable") throw new Error("expected an active pool card and an active reloadable card");
    const coreCard = async (id: string) => ((await h.json(`${CORE}?page_size=100`)).body.data.cards as Row[]).find((c) => c.id === id) as Row;
    const echoed = (await coreCard(pool.id as string)).card_usage_type as string;
    expect(echoed).toBe("POOL");
    const same = await h.json(`${CORE}/${pool.id}`, { method: "PUT", body: { card_usage_type: echoed } });
    expect(same.status).toBe(200);
    expect(same.body.data.card.card_usage_type).toBe("POOL");
    const offPool = await h.json(`${CORE}/${pool.id}`, { method: "PUT", body: { card_usage_type: "RELOADABLE" } });
    expect(errorCodes(offPool.body)).toEqual(["card_usage_type:INVALID_ENUM"]);
    const ontoPool = await h.json(`${CORE}/${own.id}`, { method: "PUT", body: { card_usage_type: "pool" } });
    expect(errorCodes(ontoPool.body)).toEqual(["card_usage_type:INVALID_ENUM"]);
    expect((await coreCard(own.id as string)).card_usage_type).toBe("RELOADABLE");
  });

  it("refuses a maximum balance below what the card's own account holds (§4.9, §2.3: the most it may hold), changing nothing", async () => {
    const record = h.sandbox.control.company(h.companyId)?.cards.find((c) => c.status === "Active" && c.poolAccountId === null && c.balance >= 100);
    if (!record) throw new Error("expected an active card of its own account holding at least 100");
    // A whole balance, so the maximum sent can equal it exactly.
    record.balance = Math.floor(record.balance);
    const before = (await h.json(`${ERP}/${record.id}`)).body.data as Row;
    const below = Math.ceil(record.balance) - 1;
    const refused = await h.json(`${CORE}/${record.id}`, { method: "PUT", body: { card_usage_type_amount: below, nickname: "Not renamed" } });
    expect(refused.status).toBe(400);
    expect(errorCodes(refused.body)).toEqual(["card_usage_type_amount:OUT_OF_RANGE"]);
    expect((await h.json(`${ERP}/${record.id}`)).body.data).toEqual(before);
    // What it holds fits, to the unit: the card keeps its balance at its new maximum.
    const fits = await h.json(`${CORE}/${record.id}`, { method: "PUT", body: { card_usage_type_amount: record.balance } });
    expect(fits.status).toBe(200);
    expect(Number(fits.body.data.card.account_balance)).toBeLessThanOrEqual(Number(fits.body.data.card.card_usage_type_amount));
    // A pool card holds nothing of its own: its pool's balance is no bound on its amount.
    const poolCard = h.sandbox.control.company(h.companyId)?.cards.find((c) => c.status === "Active" && c.poolAccountId !== null);
    if (!poolCard) throw new Error("expected an active pool card");
    expect((await h.json(`${CORE}/${poolCard.id}`, { method: "PUT", body: { card_usage_type_amount: 1 } })).status).toBe(200);
  });

  it("answers 404 for an unknown card, 400 for a terminated one, 403 without cards:write", async () => {
    expect((await h.json(`${CORE}/CAUNKNOWN000`, { method: "PUT", body: { nickname: "x" } })).status).toBe(404);
    // A funding model only a card could refuse is no 400 for a card that does not exist: either kind is its 404.
    for (const usage of ["RELOADABLE", "POOL"]) {
      expect((await h.json(`${CORE}/CAUNKNOWN000`, { method: "PUT", body: { card_usage_type: usage } })).status, usage).toBe(404);
    }
    const terminated = await cardWith("Terminated");
    expect((await h.json(`${CORE}/${terminated.id}`, { method: "PUT", body: { nickname: "x" } })).status).toBe(400);
    const readOnly = await tokensFor(h.sandbox, h.companyId, "cards:read");
    const card = await cardWith("Active");
    expect((await h.json(`${CORE}/${card.id}`, { method: "PUT", body: { nickname: "x" }, token: readOnly.access_token })).status).toBe(403);
  });

  it.each(["Terminated", "Cancelled"])("answers a funding update of a %s card 400 INVALID_STATE naming its state (§4.9 400, spec-gaps Funding update)", async (current) => {
    const card = await cardWith(current);
    const { status, body } = await h.json(`${CORE}/${card.id}`, { method: "PUT", body: { nickname: "x" } });
    expect(status).toBe(400);
    expect({ message: body.message, errors: body.errors }).toEqual({
      message: "Card cannot be changed in its current state",
      errors: [{ field: null, code: "INVALID_STATE", message: `card is ${current.toLowerCase()} and cannot be changed` }],
    });
  });

  // spec-gaps (Funding update): every listed velocity_period is taken, as the value stored upper case.
  it.each(["DAILY", "WEEKLY", "MONTHLY", "QUARTERLY", "YEARLY"])("takes velocity_period %s (spec-gaps Funding update)", async (period) => {
    const card = await cardWith("Active");
    const { status, body } = await h.json(`${CORE}/${card.id}`, { method: "PUT", body: { velocity_period: period.toLowerCase() } });
    expect([status, body.data?.card?.velocity_period]).toEqual([200, period]);
  });
});

describe("card writes with a JSON body that is not an object", () => {
  it.each([
    ["PUT", ""],
    ["POST", "/update_velocity_limit"],
    ["PUT", "/change_status"],
  ])("%s %s answers 400 INVALID_FORMAT, not a service failure, and changes nothing", async (method, suffix) => {
    const card = await cardWith("Active");
    const before = (await h.json(`${ERP}/${card.id}`)).body.data;
    for (const raw of ["null", "[]", '"x"', "5"]) {
      const { status, body } = await h.json(`${CORE}/${card.id}${suffix}`, { method, body: raw });
      expect(status).toBe(400);
      expect(errorCodes(body)).toEqual(["null:INVALID_FORMAT"]);
    }
    expect((await h.json(`${ERP}/${card.id}`)).body.data).toEqual(before);
  });
});

describe("PUT /public/v1/core/cards/{cardId}/change_status (suspension)", () => {
  it("accepts at once and commits after the processing delay of sandbox time", async () => {
    const card = await cardWith("Active");
    const { status, body } = await h.json(`${CORE}/${card.id}/change_status`, { method: "PUT", body: { status: "suspended", reason: "lost" } });
    expect(status).toBe(200);
    expect(successEnvelope(ChangeStatusDataSchema).parse(body).data.message).toMatch(/processed/);
    // §4.9: the envelope's own `message` is a resource-updated text, beside `data.message`.
    expect(body.message).toMatch(/updated/i);
    expect((await h.json(`${ERP}/${card.id}`)).body.data.status).toBe("Active");
    h.sandbox.control.advanceClock(SUSPENSION_PROCESSING_SECONDS - 1);
    expect((await h.json(`${ERP}/${card.id}`)).body.data.status).toBe("Active");
    h.sandbox.control.advanceClock(1);
    expect((await h.json(`${ERP}/${card.id}`)).body.data.status).toBe("Suspended");
    expect(SUSPENSION_PROCESSING_SECONDS).toBeLessThanOrEqual(60);
  });

  it("commits through the control-surface clock too, and a retry has the same final effect", async () => {
    const card = await cardWith("Active");
    await h.client.suspendCard(card.id as string, { reason: "travel over" });
    await h.client.suspendCard(card.id as string);
    // One request forwarded to the issuer, audited once (its reason given, not kept): the retry while it is processed
    // has the same final effect (§7 rule 4), no second request.
    const audit = (await h.json(`/_sandbox/companies/${h.companyId}/audit`)).body.data as Row[];
    expect(audit.filter((a) => a.cardId === card.id).map((a) => [a.action, a.details])).toEqual([["card.suspension_requested", { reason_given: true }]]);
    const clock = await h.json("/_sandbox/clock", { body: { advance_seconds: 60 } });
    expect(clock.status).toBe(200);
    expect((await h.client.getErpCard(card.id as string)).status).toBe("Suspended");
    expect((await h.json(`${CORE}/${card.id}/change_status`, { method: "PUT", body: { status: "suspended" } })).status).toBe(200);
  });

  it("audits a suspension sent without a reason as reason_given false (§4.9 reason accepted but not kept)", async () => {
    const card = await cardWith("Active");
    await h.client.suspendCard(card.id as string);
    const audit = (await h.json(`/_sandbox/companies/${h.companyId}/audit`)).body.data as Row[];
    expect(audit.filter((a) => a.cardId === card.id).map((a) => [a.action, a.details])).toEqual([["card.suspension_requested", { reason_given: false }]]);
  });

  // §4.9: "any other value ... gives 403", a value that is not text (or empty text) included; only a missing one is a 400.
  it.each<unknown>(["active", "terminated", "inactive", "Suspended", "SUSPENDED", " suspended", "", 5, true, ["suspended"], { status: "suspended" }])("answers 403 for status %j (only `suspended` exactly)", async (target) => {
    const card = await cardWith("Active");
    const { status, body } = await h.json(`${CORE}/${card.id}/change_status`, { method: "PUT", body: { status: target } });
    expect(status).toBe(403);
    expect(body).not.toHaveProperty("success");
  });

  it("names the status sent in the 403 of another status (§4.9 403, §7: field null only when no one input is at fault)", async () => {
    const card = await cardWith("Active");
    const { status, body } = await h.json(`${CORE}/${card.id}/change_status`, { method: "PUT", body: { status: "active" } });
    expect(status).toBe(403);
    expect(body.errors).toEqual([{ field: "status", code: "FORBIDDEN", message: "Only suspension is permitted through the API" }]);
  });

  it.each(["Inactive", "Terminated", "Draft", "Cancelled"])("answers 400 when the card is %s", async (current) => {
    const card = await cardWith(current);
    const { status, body } = await h.json(`${CORE}/${card.id}/change_status`, { method: "PUT", body: { status: "suspended" } });
    expect(status).toBe(400);
    expect(errorCodes(body)).toEqual(["status:INVALID_STATE"]);
    // The state named in plain words (it read "a inactive card cannot be suspended").
    expect(body.errors[0].message).toBe(`card is ${current.toLowerCase()} and cannot be suspended`);
  });

  it("answers 400 without a status, 404 for an unknown card, 401 without a token", async () => {
    const card = await cardWith("Active");
    expect(errorCodes((await h.json(`${CORE}/${card.id}/change_status`, { method: "PUT", body: {} })).body)).toEqual(["status:REQUIRED"]);
    expect(errorCodes((await h.json(`${CORE}/${card.id}/change_status`, { method: "PUT", body: { status: null } })).body)).toEqual(["status:REQUIRED"]);
    expect((await h.json(`${CORE}/CAUNKNOWN000/change_status`, { method: "PUT", body: { status: "suspended" } })).status).toBe(404);
    expect((await h.json(`${CORE}/${card.id}/change_status`, { method: "PUT", body: { status: "suspended" }, token: null })).status).toBe(401);
  });

  // A null body field is of the wrong type, and the body's check precedes the 403 of another status (spec-gaps).
  it.each<[unknown, string[]]>([
    [{ status: "suspended", reason: null }, ["reason:INVALID_FORMAT"]],
    [{ status: "active", reason: 5 }, ["reason:INVALID_FORMAT"]],
  ])("answers 400 for the body %j", async (sent, expected) => {
    const card = await cardWith("Active");
    const { status, body } = await h.json(`${CORE}/${card.id}/change_status`, { method: "PUT", body: sent });
    expect(status).toBe(400);
    expect(errorCodes(body)).toEqual(expected);
    expect((await h.json(`${ERP}/${card.id}`)).body.data.status).toBe("Active");
  });

  it("leaves a card the dashboard reactivated or terminated meanwhile alone", async () => {
    const card = await cardWith("Active");
    await h.json(`${CORE}/${card.id}/change_status`, { method: "PUT", body: { status: "suspended" } });
    await h.json(`/_sandbox/companies/${h.companyId}/cards/${card.id}/status`, { body: { status: "Terminated" } });
    h.sandbox.control.advanceClock(SUSPENSION_PROCESSING_SECONDS);
    expect((await h.json(`${ERP}/${card.id}`)).body.data.status).toBe("Terminated");
  });

  it("drops a pending suspension when the dashboard moves the card away and back to Active", async () => {
    const card = await cardWith("Active");
    const dashboard = (status: string) => h.json(`/_sandbox/companies/${h.companyId}/cards/${card.id}/status`, { body: { status } });
    expect((await h.json(`${CORE}/${card.id}/change_status`, { method: "PUT", body: { status: "suspended" } })).status).toBe(200);
    await dashboard("Inactive");
    await dashboard("Active");
    h.sandbox.control.advanceClock(SUSPENSION_PROCESSING_SECONDS + 1);
    expect((await h.json(`${ERP}/${card.id}`)).body.data.status).toBe("Active");
  });

  it("answers 400 to a retry once the dashboard terminated a card with a suspension pending", async () => {
    const card = await cardWith("Active");
    await h.json(`${CORE}/${card.id}/change_status`, { method: "PUT", body: { status: "suspended" } });
    await h.json(`/_sandbox/companies/${h.companyId}/cards/${card.id}/status`, { body: { status: "Terminated" } });
    const retry = await h.json(`${CORE}/${card.id}/change_status`, { method: "PUT", body: { status: "suspended" } });
    expect(retry.status).toBe(400);
    expect(errorCodes(retry.body)).toEqual(["status:INVALID_STATE"]);
  });
});

describe("POST /public/v1/core/cards/{cardId}/update_velocity_limit", () => {
  it("sets the limit, answers 201 with the card, and audits every call even without change", async () => {
    const card = await cardWith("Active");
    const body = { spend_limit_active: true, spend_limit_period: "DAILY", spend_limit_max_amount: 2500, spend_limit_frequency: 10 };
    const res = await h.json(`${CORE}/${card.id}/update_velocity_limit`, { body });
    expect(res.status).toBe(201);
    expect(res.body.status_code).toBe(201);
    expect(res.body.message).toMatch(/created/i);
    const updated = successEnvelope(CoreCardWriteDataSchema).parse(res.body).data.card;
    expect(updated.spend_limit).toMatchObject({ active: true, period: "DAILY", max_amount: 2500, frequency: 10 });
    // The members §2.4 gives no value, as spec-gaps (Cards and users) states them.
    const cardId = String(card.id);
    expect(res.body.data.card.spend_limit).toMatchObject({
      id: `SL-${cardId}`,
      external_id: `SL${cardId.slice(2)}`,
      name: `${String(card.card_nickname)} spend limit`,
      limit_type: "SPEND",
      transaction_scope: "ALL",
      min_amount: 0,
    });
    expect(res.body.data.card.card_product).toMatchObject({ id: "CP-SANDBOX-01", external_id: "CPSANDBOX01", name: `${String(card.card_type)} corporate card` });
    expect((await h.json(`${ERP}/${card.id}`)).body.data.purchase_limits).toMatchObject({ enabled: true, amount: 2500, frequency: "DAILY", number_of_purchases: 10 });
    // The period in any letter case, as velocity_period; the issuer's most (500000) itself is taken.
    const lower = await h.json(`${CORE}/${card.id}/update_velocity_limit`, { body: { spend_limit_period: "weekly", spend_limit_max_amount: 500_000 } });
    expect(lower.status).toBe(201);
    expect(lower.body.data.card.spend_limit).toMatchObject({ period: "WEEKLY", max_amount: 500_000 });
    await h.client.updateVelocityLimit(card.id as string, body);
    const audit = (await h.json(`/_sandbox/companies/${h.companyId}/audit`)).body.data as { action: string; cardId: string }[];
    expect(audit.filter((a) => a.action === "card.velocity_limit_updated" && a.cardId === card.id)).toHaveLength(3);
  });

  it.each([
    [{}, ["null:REQUIRED"]],
    [{ spend_limit_active: "yes" }, ["spend_limit_active:INVALID_FORMAT"]],
    [{ spend_limit_period: "HOURLY" }, ["spend_limit_period:INVALID_ENUM"]],
    [{ spend_limit_max_amount: -1 }, ["spend_limit_max_amount:OUT_OF_RANGE"]],
    [{ spend_limit_max_amount: 600_000 }, ["spend_limit_max_amount:OUT_OF_RANGE"]],
    [{ spend_limit_max_amount: -5, spend_limit_period: "HOURLY" }, ["spend_limit_max_amount:OUT_OF_RANGE", "spend_limit_period:INVALID_ENUM"]],
  ])("answers 400 for %j", async (payload, expected) => {
    const card = await cardWith("Active");
    const { status, body } = await h.json(`${CORE}/${card.id}/update_velocity_limit`, { body: payload });
    expect(status).toBe(400);
    expect(errorCodes(body)).toEqual(expected);
  });

  it("answers 404 for an unknown card", async () => {
    await expect(h.client.updateVelocityLimit("CAUNKNOWN000", { spend_limit_active: false })).rejects.toBeInstanceOf(NotFoundError);
  });

  it("audits a call the issuer refuses (400 'Limit could not be applied at the issuer'), not one refused before it reaches the issuer (spec-gaps)", async () => {
    const active = await cardWith("Active");
    const terminated = await cardWith("Terminated");
    const auditOf = async (cardId: unknown) =>
      ((await h.json(`/_sandbox/companies/${h.companyId}/audit`)).body.data as Row[]).filter((a) => a.cardId === cardId).map((a) => [a.action, a.details]);
    const limitBefore = (await h.json(`${ERP}/${active.id}`)).body.data.purchase_limits;

    const overIssuer = { spend_limit_active: true, spend_limit_max_amount: 600_000 };
    const refused = await h.json(`${CORE}/${active.id}/update_velocity_limit`, { body: overIssuer });
    expect([refused.status, refused.body.message]).toEqual([400, "Limit could not be applied at the issuer"]);
    expect(await auditOf(active.id)).toEqual([["card.velocity_limit_refused", { ...overIssuer, error_code: "OUT_OF_RANGE" }]]);
    expect((await h.json(`${ERP}/${active.id}`)).body.data.purchase_limits, "a refused limit changes nothing").toEqual(limitBefore);

    const closed = await h.json(`${CORE}/${terminated.id}/update_velocity_limit`, { body: { spend_limit_active: false } });
    expect([closed.status, closed.body.message]).toEqual([400, "Limit could not be applied at the issuer"]);
    expect(await auditOf(terminated.id)).toEqual([["card.velocity_limit_refused", { spend_limit_active: false, error_code: "INVALID_STATE" }]]);
    // §4.9 400 "limit could not be applied at the issuer": the entry says why, naming the card's state.
    expect(closed.body.errors).toEqual([{ field: null, code: "INVALID_STATE", message: "card is terminated" }]);

    // Refused by the provider itself (body, card, scope): the issuer is never asked, nothing to audit.
    expect((await h.json(`${CORE}/${active.id}/update_velocity_limit`, { body: { spend_limit_period: "HOURLY" } })).status).toBe(400);
    expect((await h.json(`${CORE}/CAUNKNOWN000/update_velocity_limit`, { body: { spend_limit_active: true } })).status).toBe(404);
    const readOnly = await tokensFor(h.sandbox, h.companyId, "cards:read");
    expect((await h.json(`${CORE}/${active.id}/update_velocity_limit`, { body: { spend_limit_active: true }, token: readOnly.access_token })).status).toBe(403);
    expect(await auditOf(active.id)).toHaveLength(1);
    expect(await auditOf("CAUNKNOWN000")).toEqual([]);
  });
});

describe("the audit of core writes (§4.9: the cardholder is told of each; the sandbox keeps a record instead)", () => {
  it("records a funding update with what was sent, an issuance with its card type, and an invitation with its counts", async () => {
    const auditOf = async (action: string) =>
      ((await h.json(`/_sandbox/companies/${h.companyId}/audit`)).body.data as Row[]).filter((a) => a.action === action).map((a) => [a.cardId, a.details]);
    const card = await cardWith("Active");
    const sent = { nickname: "Audited", auto_top_up_amount: 700 };
    expect((await h.json(`${CORE}/${card.id}`, { method: "PUT", body: sent })).status).toBe(200);
    expect(await auditOf("card.funding_updated")).toEqual([[card.id, sent]]);
    const users = (await h.json(`${CORE}?page_size=100`)).body.data.cards as Row[];
    const issued = await h.json(CORE, { body: { nickname: "Audited issue", card_type: "physical", user_id: users[0]?.user_profile.user_id } });
    expect(await auditOf("card.issued")).toEqual([[issued.body.data.card.id, { card_type: "Physical" }]]);
    expect((await h.json("/public/v1/core/user_profiles/invite", { body: { end_user: ["audited@falcongate.ae", "nope"] } })).status).toBe(201);
    expect(await auditOf("users.invited")).toEqual([[undefined, { invited: 1, failed: 1 }]]);
  });
});

describe("Draft cards in the core routes (spec-gaps, Cards and users)", () => {
  it("are hidden from the list and the balance read, yet reached by the writes", async () => {
    const draft = await cardWith("Draft");
    const listed = (await h.json(`${CORE}?page_size=100`)).body.data.cards as Row[];
    expect(listed.map((c) => c.id)).not.toContain(draft.id);
    const balance = await h.json(`${CORE}/balance?last_four=${String(draft.masked_card_number).slice(-4)}`);
    expect((balance.body.data.cards as Row[]).map((c) => c.card_id)).not.toContain(draft.id);
    const renamed = await h.json(`${CORE}/${draft.id}`, { method: "PUT", body: { nickname: "Renamed draft" } });
    expect({ status: renamed.status, card: renamed.body.data.card.status }).toEqual({ status: 200, card: "draft" });
    const limited = await h.json(`${CORE}/${draft.id}/update_velocity_limit`, { body: { spend_limit_active: true } });
    expect({ status: limited.status, card: limited.body.data.card.status }).toEqual({ status: 201, card: "draft" });
  });
});

describe("POST /public/v1/core/cards (issuance)", () => {
  /** Issues a virtual card to the first listed cardholder of the company `token` is of (the harness's by default). */
  async function issueVirtual(token?: string): Promise<Row> {
    const users = (await h.json(`${CORE}?page_size=100`, { token })).body.data.cards as Row[];
    const res = await h.json(CORE, { token, body: { nickname: "Review card", card_type: "VIRTUAL", user_id: users[0]?.user_profile.user_id } });
    expect(res.status).toBe(201);
    return res.body.data.card as Row;
  }

  it("issues a virtual card that is active at once and listed afterwards", async () => {
    const users = (await h.json(`${CORE}?page_size=100`)).body.data.cards as Row[];
    const userId = users[0]?.user_profile.user_id as string;
    const result = await h.client.issueCard({ nickname: "Conference 2025", card_type: "VIRTUAL", user_id: userId, card_usage_type_amount: 3000 });
    expect(result.card?.status).toBe("active");
    expect(result.card?.card_usage_type_amount).toBe(3000);
    // Topped up per month and funded by its own account, as its spend limit's period below.
    expect([result.card?.velocity_period, result.card?.card_usage_type]).toEqual(["MONTHLY", "RELOADABLE"]);
    // Issued with no segment, so no department or location is named (spec-gaps, Cards and users).
    expect([result.card?.department, result.card?.location]).toEqual([null, null]);
    const listed = (await erpCards()).find((c) => c.id === result.card?.id);
    expect(listed).toMatchObject({ card_nickname: "Conference 2025", card_type: "Virtual", account_type: "reloadable" });
    // Funded by hand until an update turns auto top-up on; activated when issued; no ATM for a card without plastic.
    const detail = (await h.json(`${ERP}/${String(result.card?.id)}`)).body.data as Row;
    expect(detail).toMatchObject({ topup_type: "manual", atm_withdrawal_allowed: false, activated_at: detail.issued_at });
    // No spend limit in force until one is set, its period monthly as the top-ups'.
    expect(detail.purchase_limits).toMatchObject({ enabled: false, amount: 0, frequency: "MONTHLY" });
    expect(detail.activated_at).not.toBeNull();
    // Its own account is a statement account from issuance (§4.7: a valid account without statements is a 200).
    const statements = await h.json(`/public/v1/erp/statements/${String(detail.account_external_id)}`);
    expect([statements.status, statements.body.data.total]).toEqual([200, 0]);
  });

  it("issues a physical pool card inactive until delivered", async () => {
    const users = (await h.json(`${CORE}?page_size=100`)).body.data.cards as Row[];
    const pools = (await h.json("/public/v1/erp/pool_accounts?status=active")).body.data as Row[];
    const res = await h.json(CORE, { body: { nickname: "Driver card", card_type: "physical", user_id: users[0]?.user_profile.user_id, account_type: "POOL", pool_account_id: pools[0]?.id } });
    expect(res.status).toBe(201);
    expect(res.body.data.card).toMatchObject({ status: "inactive", account_id: pools[0]?.id });
    // Its funding model is its pool's (spec-gaps Funding update: POOL, the value a funding update then takes back).
    expect(res.body.data.card.card_usage_type).toBe("POOL");
    // Not activated until delivered; a physical card may withdraw cash; its pool funds it.
    const detail = (await h.json(`${ERP}/${String(res.body.data.card.id)}`)).body.data as Row;
    expect(detail).toMatchObject({ account_type: "pool", account_external_id: pools[0]?.id, activated_at: null, atm_withdrawal_allowed: true, topup_type: "pool" });
  });

  it("refuses a pool account that is not active, and an empty user_id or no card_type as missing (400, nothing issued)", async () => {
    const users = (await h.json(`${CORE}?page_size=100`)).body.data.cards as Row[];
    const idle = ((await h.json("/public/v1/erp/pool_accounts?status=all")).body.data as Row[]).filter((p) => p.status !== "Active");
    expect(idle.length).toBeGreaterThan(0);
    const before = (await erpCards()).length;
    for (const pool of idle) {
      const res = await h.json(CORE, { body: { nickname: "Idle pool card", card_type: "VIRTUAL", user_id: users[0]?.user_profile.user_id, account_type: "POOL", pool_account_id: pool.id } });
      expect(errorCodes(res.body), String(pool.status)).toEqual(["pool_account_id:INVALID_STATE"]);
    }
    const empty = await h.json(CORE, { body: { nickname: "Nobody's card", card_type: "VIRTUAL", user_id: "" } });
    expect(errorCodes(empty.body)).toEqual(["user_id:REQUIRED"]);
    const untyped = await h.json(CORE, { body: { nickname: "Untyped card", user_id: users[0]?.user_profile.user_id } });
    expect(errorCodes(untyped.body)).toEqual(["card_type:REQUIRED"]);
    expect((await erpCards()).length).toBe(before);
  });

  it("gives cards issued by two companies in the same second ids of their own: another company's card stays a 404", async () => {
    const other = await tokensFor(h.sandbox, h.otherCompanyId);
    const mine = await issueVirtual();
    const theirs = await issueVirtual(other.access_token);
    expect(theirs.id).not.toBe(mine.id);
    // Each card draws its own number (the draws are seeded, so fixed): two cards one company issues end differently here.
    const again = await issueVirtual();
    expect(again.last_four).not.toBe(mine.last_four);
    // Each in its own company's currency.
    expect([mine.currency, theirs.currency]).toEqual(["AED", "SAR"]);
    expect(theirs.account_id).not.toBe(mine.account_id);
    expect((await h.json(`/public/v1/erp/cards/${String(mine.id)}`, { token: other.access_token })).status).toBe(404);
  });

  it("never gives a card an id or account another company's card holds, though both draw from one seed", async () => {
    const other = await tokensFor(h.sandbox, h.otherCompanyId);
    const counts = await Promise.all([undefined, other.access_token].map(async (token) => (await h.json(`${ERP}?page_size=100`, { token })).body.pagination.total_records));
    expect(counts[0]).toBe(counts[1]);
    // The draw's seed adds the company's place in the seed order times 7919 to the clock's seconds: the first company,
    // 7919 seconds after the second issued a card, draws as it drew.
    const theirs = await issueVirtual(other.access_token);
    h.sandbox.control.advanceClock(7919);
    // A token of its own: the harness's has expired by then.
    const mine = await issueVirtual((await tokensFor(h.sandbox, h.companyId)).access_token);
    expect([mine.id, mine.account_id]).not.toContain(theirs.id);
    expect([mine.id, mine.account_id]).not.toContain(theirs.account_id);
  });

  it("answers 400 with one entry per offending field", async () => {
    const { status, body } = await h.json(CORE, { body: { card_type: "METAL", user_id: "nobody", account_type: "POOL" } });
    expect(status).toBe(400);
    expect(errorCodes(body).sort()).toEqual(["card_type:INVALID_ENUM", "nickname:REQUIRED", "pool_account_id:REQUIRED", "user_id:NOT_FOUND"]);
    // The entries say what is wrong; the envelope's message only what kind of refusal it is (the spec fixes none).
    expect(body.message).toBe("Validation failed");
    await expect(h.client.issueCard({ nickname: "x" })).rejects.toBeInstanceOf(BadRequestError);
  });

  it("answers 400 for a field sent with the wrong type, naming it as sent, not as missing or defaulted", async () => {
    const users = (await h.json(`${CORE}?page_size=100`)).body.data.cards as Row[];
    const before = (await erpCards()).length;
    const { status, body } = await h.json(CORE, { body: { nickname: 5, card_type: 5, user_id: 5, account_type: 7 } });
    expect(status).toBe(400);
    // A value of the wrong type is INVALID_FORMAT, as a number for velocity_period on the funding update; INVALID_ENUM is for text not listed.
    expect(errorCodes(body).sort()).toEqual(["account_type:INVALID_FORMAT", "card_type:INVALID_FORMAT", "nickname:INVALID_FORMAT", "user_id:INVALID_FORMAT"]);
    // An account_type that is no text is not the default RELOADABLE: no card is issued.
    const alone = await h.json(CORE, { body: { nickname: "Typed", card_type: "VIRTUAL", user_id: users[0]?.user_profile.user_id, account_type: ["POOL"] } });
    expect(errorCodes(alone.body)).toEqual(["account_type:INVALID_FORMAT"]);
    expect((await erpCards()).length).toBe(before);
  });

  it("reads pool_account_id and card_usage_type_amount sent as null as absent, as every other field of the issuance body", async () => {
    const users = (await h.json(`${CORE}?page_size=100`)).body.data.cards as Row[];
    const base = { card_type: "VIRTUAL", user_id: users[0]?.user_profile.user_id };
    const before = (await erpCards()).length;
    const pool = await h.json(CORE, { body: { ...base, nickname: "Null pool", account_type: "POOL", pool_account_id: null } });
    expect(pool.status).toBe(400);
    expect(errorCodes(pool.body)).toEqual(["pool_account_id:REQUIRED"]);
    expect((await erpCards()).length).toBe(before);
    const amount = await h.json(CORE, { body: { ...base, nickname: "Null amount", card_usage_type_amount: null } });
    expect(amount.status).toBe(201);
    expect((await h.json(`${ERP}/${String(amount.body.data.card.id)}`)).body.data.allowed_max_balance).toBe(5000);
  });

  it("refuses a pool_account_id on a card of its own account instead of issuing it off the pool", async () => {
    const users = (await h.json(`${CORE}?page_size=100`)).body.data.cards as Row[];
    const pools = (await h.json("/public/v1/erp/pool_accounts?status=active")).body.data as Row[];
    const before = (await erpCards()).length;
    const base = { nickname: "Pool meant", card_type: "VIRTUAL", user_id: users[0]?.user_profile.user_id, pool_account_id: pools[0]?.id };
    const implied = await h.json(CORE, { body: base });
    expect(implied.status).toBe(400);
    expect(errorCodes(implied.body)).toEqual(["account_type:REQUIRED"]);
    const contradicted = await h.json(CORE, { body: { ...base, account_type: "reloadable" } });
    expect(errorCodes(contradicted.body)).toEqual(["account_type:INVALID_ENUM"]);
    expect((await erpCards()).length).toBe(before);
    expect((await h.json(CORE, { body: { ...base, account_type: "POOL" } })).body.data.card).toMatchObject({ account_id: pools[0]?.id });
  });

  it("gives a pool card the card_usage_type_amount sent, as a funding update of a pool card does", async () => {
    const users = (await h.json(`${CORE}?page_size=100`)).body.data.cards as Row[];
    const pools = (await h.json("/public/v1/erp/pool_accounts?status=active")).body.data as Row[];
    const base = { card_type: "VIRTUAL", user_id: users[0]?.user_profile.user_id, account_type: "POOL", pool_account_id: pools[0]?.id };
    const capped = (await h.json(CORE, { body: { ...base, nickname: "Capped pool card", card_usage_type_amount: 3000 } })).body.data.card as Row;
    expect((await h.json(`${ERP}/${String(capped.id)}`)).body.data.allowed_max_balance).toBe(3000);
    const plain = (await h.json(CORE, { body: { ...base, nickname: "Plain pool card" } })).body.data.card as Row;
    expect((await h.json(`${ERP}/${String(plain.id)}`)).body.data.allowed_max_balance).toBe(pools[0]?.allowed_max_balance);
  });

  it("holds the 64-character limit of a nickname to the name it keeps, trimmed, when issuing and when renaming", async () => {
    const users = (await h.json(`${CORE}?page_size=100`)).body.data.cards as Row[];
    const base = { card_type: "VIRTUAL", user_id: users[0]?.user_profile.user_id };
    const name = "N".repeat(63);
    const issued = await h.json(CORE, { body: { ...base, nickname: `  ${name}  ` } });
    expect(issued.status).toBe(201);
    expect(issued.body.data.card.nickname).toBe(name);
    const renamed = await h.json(`${CORE}/${String(issued.body.data.card.id)}`, { method: "PUT", body: { nickname: ` ${"R".repeat(64)} ` } });
    expect(renamed.status).toBe(200);
    expect(renamed.body.data.card.nickname).toBe("R".repeat(64));
    // 65 characters kept is still too long, on both routes
    const long = ` ${"L".repeat(65)} `;
    expect(errorCodes((await h.json(CORE, { body: { ...base, nickname: long } })).body)).toEqual(["nickname:OUT_OF_RANGE"]);
    const refused = await h.json(`${CORE}/${String(issued.body.data.card.id)}`, { method: "PUT", body: { nickname: long } });
    expect(errorCodes(refused.body)).toEqual(["nickname:OUT_OF_RANGE"]);
  });

  it("names a card_usage_type_amount or pool_account_id of the wrong type INVALID_FORMAT, as the funding update and user_id do", async () => {
    const users = (await h.json(`${CORE}?page_size=100`)).body.data.cards as Row[];
    const card = (await erpCards()).find((c) => c.status === "Active") as Row;
    const base = { nickname: "Typed amount", card_type: "VIRTUAL", user_id: users[0]?.user_profile.user_id };
    const before = (await erpCards()).length;
    for (const amount of ["3000", 1.5, true]) {
      const issued = await h.json(CORE, { body: { ...base, card_usage_type_amount: amount } });
      const updated = await h.json(`${CORE}/${String(card.id)}`, { method: "PUT", body: { card_usage_type_amount: amount } });
      expect(errorCodes(issued.body)).toEqual(["card_usage_type_amount:INVALID_FORMAT"]);
      expect(errorCodes(updated.body)).toEqual(errorCodes(issued.body));
    }
    // Out of bounds stays OUT_OF_RANGE on both routes: zero, negative, past the safe integers.
    for (const amount of [0, -5, 2 ** 60]) {
      const issued = await h.json(CORE, { body: { ...base, card_usage_type_amount: amount } });
      const updated = await h.json(`${CORE}/${String(card.id)}`, { method: "PUT", body: { card_usage_type_amount: amount } });
      expect(errorCodes(issued.body)).toEqual(["card_usage_type_amount:OUT_OF_RANGE"]);
      expect(errorCodes(updated.body)).toEqual(errorCodes(issued.body));
    }
    const pool = await h.json(CORE, { body: { ...base, account_type: "POOL", pool_account_id: 12 } });
    expect(errorCodes(pool.body)).toEqual(["pool_account_id:INVALID_FORMAT"]);
    // An empty id names nothing, as an empty user_id does.
    const empty = await h.json(CORE, { body: { ...base, account_type: "POOL", pool_account_id: "" } });
    expect(errorCodes(empty.body)).toEqual(["pool_account_id:REQUIRED"]);
    expect((await erpCards()).length).toBe(before);
  });

  it("answers 400 NOT_FOUND on pool_account_id for a pool of nobody and for another company's pool, issuing nothing (§7 rule 1, spec-gaps issuance)", async () => {
    const users = (await h.json(`${CORE}?page_size=100`)).body.data.cards as Row[];
    const other = await tokensFor(h.sandbox, h.otherCompanyId);
    const theirs = ((await h.json("/public/v1/erp/pool_accounts?status=active", { token: other.access_token })).body.data as Row[])[0]?.id;
    expect(theirs).toBeDefined();
    const before = (await erpCards()).length;
    for (const pool of ["PAUNKNOWN000", theirs]) {
      const res = await h.json(CORE, { body: { nickname: "Lost pool card", card_type: "VIRTUAL", user_id: users[0]?.user_profile.user_id, account_type: "POOL", pool_account_id: pool } });
      expect([res.status, errorCodes(res.body)], String(pool)).toEqual([400, ["pool_account_id:NOT_FOUND"]]);
    }
    expect((await erpCards()).length).toBe(before);
  });

  it("needs cards:write", async () => {
    const readOnly = await tokensFor(h.sandbox, h.companyId, "cards:read");
    await expect(h.clientFor(readOnly.access_token).issueCard({ nickname: "x", card_type: "VIRTUAL" })).rejects.toBeInstanceOf(ForbiddenError);
  });
});

describe("POST /public/v1/core/user_profiles/invite", () => {
  it("answers 201 with a summary; already-invited and invalid addresses are listed under failed", async () => {
    const existing = (await erpCards())[0]?.cardholder.email as string;
    const result = await h.client.inviteUsers(["new.hire@falcongate.ae", existing, "not-an-email"]);
    const parsed = InvitationResultSchema.parse(result);
    expect(parsed.summary?.success_emails?.end_user).toEqual(["new.hire@falcongate.ae"]);
    expect(parsed.summary?.failed_emails?.end_user).toEqual([existing, "not-an-email"]);
    expect(parsed.summary?.total_processed).toEqual({ success: 1, failed: 2, total: 3 });
    // §4.10 data.message, the outcome text: both counts, as the summary gives them.
    expect(parsed.message).toBe("1 invitation(s) sent, 2 failed");
    const again = await h.client.inviteUsers(["New.Hire@falcongate.ae"]);
    expect(again.summary?.failed_emails?.end_user).toEqual(["New.Hire@falcongate.ae"]);
  });

  it("lists an empty address under failed like any other it cannot invite, and still invites the valid ones (§4.10)", async () => {
    const { status, body } = await h.json("/public/v1/core/user_profiles/invite", { body: { end_user: ["empty.beside@falcongate.ae", ""] } });
    expect(status).toBe(201);
    expect(body.status_code).toBe(201);
    expect(body.data.summary.success_emails.end_user).toEqual(["empty.beside@falcongate.ae"]);
    expect(body.data.summary.failed_emails.end_user).toEqual([""]);
  });

  it("lists under failed what is no email address though it has an @ and a dot: an empty label, a dot at either end of a part", async () => {
    const notAddresses = ["two.dots@falcongate..ae", "lead@.falcongate.ae", ".lead@falcongate.ae", "double..dot@falcongate.ae", "trail.@falcongate.ae", "comma@falcon,gate.ae"];
    const { status, body } = await h.json("/public/v1/core/user_profiles/invite", { body: { end_user: ["o'neil+ops@falcongate.ae", ...notAddresses] } });
    expect(status).toBe(201);
    expect(body.data.summary.success_emails.end_user).toEqual(["o'neil+ops@falcongate.ae"]);
    expect(body.data.summary.failed_emails.end_user).toEqual(notAddresses);
    const none = await h.json("/public/v1/core/user_profiles/invite", { body: { end_user: notAddresses } });
    expect(none.status).toBe(400);
    expect(errorCodes(none.body)).toEqual(["end_user:INVALID_FORMAT"]);
  });

  it("invites an address sent with spaces around it as the address, trimmed", async () => {
    const { status, body } = await h.json("/public/v1/core/user_profiles/invite", { body: { end_user: ["  padded@falcongate.ae "] } });
    expect(status).toBe(201);
    expect(body.data.summary.success_emails.end_user).toEqual(["padded@falcongate.ae"]);
  });

  it("reports an address it cannot invite trimmed under failed too (spec-gaps Invitations: addresses are reported trimmed)", async () => {
    await h.client.inviteUsers(["taken@falcongate.ae"]);
    const { status, body } = await h.json("/public/v1/core/user_profiles/invite", { body: { end_user: ["fresh@falcongate.ae", " taken@falcongate.ae ", "  not-an-email "] } });
    expect(status).toBe(201);
    expect(body.data.summary.failed_emails.end_user).toEqual(["taken@falcongate.ae", "not-an-email"]);
  });

  it("processes ten addresses at once, with a summary", async () => {
    const emails = Array.from({ length: 10 }, (_, i) => `batch${i}@falcongate.ae`);
    const { status, body } = await h.json("/public/v1/core/user_profiles/invite", { body: { end_user: emails } });
    expect(status).toBe(201);
    expect(body.data.summary.total_processed).toEqual({ success: 10, failed: 0, total: 10 });
  });

  it("queues more than ten addresses and answers without a summary", async () => {
    const emails = Array.from({ length: 11 }, (_, i) => `temp${i}@falcongate.ae`);
    const { status, body } = await h.json("/public/v1/core/user_profiles/invite", { body: { end_user: emails } });
    expect(status).toBe(201);
    expect(body.data.summary).toBeUndefined();
    expect(body.data.message).toMatch(/queued/);
  });

  it("counts every address sent, valid or not, against the ten processed at once (spec-gaps Invitations: 11 to 100 are queued)", async () => {
    const emails = [...Array.from({ length: 10 }, (_, i) => `counted${i}@falcongate.ae`), "not-an-email"];
    const { status, body } = await h.json("/public/v1/core/user_profiles/invite", { body: { end_user: emails } });
    expect(status).toBe(201);
    expect(body.data).toEqual({ message: "Invitations are queued for processing" });
  });

  it("caps a request at 100 addresses, reported beside an entry that is no text in one 400 (§7: one entry per offending field)", async () => {
    const emails: unknown[] = Array.from({ length: 101 }, (_, i) => `capped${i}@falcongate.ae`);
    const over = await h.json("/public/v1/core/user_profiles/invite", { body: { end_user: emails } });
    expect(over.status).toBe(400);
    expect(errorCodes(over.body)).toEqual(["end_user:OUT_OF_RANGE"]);
    emails[2] = 5;
    const { status, body } = await h.json("/public/v1/core/user_profiles/invite", { body: { end_user: emails } });
    expect(status).toBe(400);
    expect(errorCodes(body)).toEqual(["end_user.2:INVALID_FORMAT", "end_user:OUT_OF_RANGE"]);
  });

  it.each([
    [{ end_user: ["nope", "also nope"] }, ["end_user:INVALID_FORMAT"]],
    [{ end_user: ["", " "] }, ["end_user:INVALID_FORMAT"]],
    [{ end_user: [] }, ["end_user:REQUIRED"]],
    [{ end_user: "a@b.co" }, ["end_user:INVALID_FORMAT"]],
    [{}, ["end_user:REQUIRED"]],
  ])("answers 400 for %j", async (payload, expected) => {
    const { status, body } = await h.json("/public/v1/core/user_profiles/invite", { body: payload });
    expect(status).toBe(400);
    expect(errorCodes(body)).toEqual(expected);
  });
});
