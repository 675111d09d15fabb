import { describe, expect, it } from "vitest";
import * as z from "zod";
import {
  AcknowledgeBodySchema,
  CardBalanceQuerySchema,
  CardIdParamSchema,
  ChangeStatusBodySchema,
  ChartOfAccountsQuerySchema,
  CoreCardsQuerySchema,
  DEFAULT_PAGE_SIZES,
  ErpCardsQuerySchema,
  InviteBodySchema,
  MasterDataQuerySchema,
  PoolAccountsQuerySchema,
  StatementsByAccountQuerySchema,
  StatementsQuerySchema,
  TokenRequestSchema,
  TransactionIdParamSchema,
  TransactionsQuerySchema,
  UpdateCardBodySchema,
  UpdateVelocityLimitBodySchema,
  ERROR_CODES,
  checkBody,
  checkQuery,
  toSearchParams,
  type FieldError,
} from "../../../shared/qashio/schemas/index.js";
import { TRANSACTION_ID } from "./fixtures.js";

/** The (field, code) pairs of a failed check, or "ok". */
function offenders(result: { ok: true } | { ok: false; errors: FieldError[] }) {
  return result.ok ? "ok" : result.errors.map((e) => [e.field, e.code]);
}

describe("paging (every list)", () => {
  it.each([
    TransactionsQuerySchema,
    ErpCardsQuerySchema,
    PoolAccountsQuerySchema,
    MasterDataQuerySchema,
    ChartOfAccountsQuerySchema,
    StatementsQuerySchema,
    StatementsByAccountQuerySchema,
    CoreCardsQuerySchema,
  ])("coerces page numbers from strings and accepts typed numbers (%#)", (schema) => {
    expect(checkQuery(schema, new URLSearchParams("page=2&page_size=50"))).toEqual({ ok: true, value: { page: 2, page_size: 50 } });
    expect(checkQuery(schema, { page: 3, page_size: 10 })).toEqual({ ok: true, value: { page: 3, page_size: 10 } });
  });

  it.each([
    ["0", "OUT_OF_RANGE"],
    ["-1", "OUT_OF_RANGE"],
    ["1.5", "INVALID_FORMAT"],
    ["abc", "INVALID_FORMAT"],
    ["", "INVALID_FORMAT"],
  ])("rejects page=%j with %s", (page, code) => {
    expect(offenders(checkQuery(TransactionsQuerySchema, { page }))).toEqual([["page", code]]);
  });

  it.each(["1e3", "0x10", "0b11", "Infinity"])("rejects page=%j, a number in another notation, with INVALID_FORMAT", (page) => {
    expect(offenders(checkQuery(TransactionsQuerySchema, { page }))).toEqual([["page", "INVALID_FORMAT"]]);
  });

  it("takes a page number with spaces around it", () => {
    expect(checkQuery(TransactionsQuerySchema, { page: " 3 ", page_size: "4 " })).toEqual({ ok: true, value: { page: 3, page_size: 4 } });
  });

  it("takes a page number with a plus sign as the number it names", () => {
    expect(checkQuery(TransactionsQuerySchema, { page: "+2", page_size: " +5" })).toEqual({ ok: true, value: { page: 2, page_size: 5 } });
  });

  it("rejects typed non-positive and fractional sizes", () => {
    expect(offenders(checkQuery(ErpCardsQuerySchema, { page_size: 0, page: 2.5 }))).toEqual([
      ["page", "INVALID_FORMAT"],
      ["page_size", "OUT_OF_RANGE"],
    ]);
  });

  it("accepts limit as an alternative page size on core cards", () => {
    expect(checkQuery(CoreCardsQuerySchema, { limit: "25" })).toEqual({ ok: true, value: { limit: 25 } });
    expect(offenders(checkQuery(CoreCardsQuerySchema, { limit: "0" }))).toEqual([["limit", "OUT_OF_RANGE"]]);
  });
});

describe("TransactionsQuerySchema", () => {
  it("accepts every documented filter from a query string", () => {
    const filters = {
      qashio_id: "CT10023456",
      parent_qashio_id: "CT10023000",
      transaction_status: "pushed",
      transaction_category: "refund",
      erp_sync_status: "not_validated",
      approval_status: "admin_approved",
      card_last_four: "0042",
      employee_id: "EMP-1",
      transaction_currency: "USD",
      billing_currency: "AED",
      transaction_time_from: "2024-01-01",
      transaction_time_to: "2024-01-31",
      client_sync_status: "outdated",
    };
    const result = checkQuery(TransactionsQuerySchema, new URLSearchParams({ ...filters, exclude_from_sync: "false" }));
    expect(result).toEqual({ ok: true, value: { ...filters, exclude_from_sync: false } });
  });

  it.each([
    ["transaction_status", "archived"],
    ["transaction_category", "crypto"],
    ["erp_sync_status", "queued"],
    ["approval_status", "escalated"],
    ["client_sync_status", "NOT_SYNCED"],
  ])("rejects an unknown %s with INVALID_ENUM", (field, value) => {
    expect(offenders(checkQuery(TransactionsQuerySchema, { [field]: value }))).toEqual([[field, "INVALID_ENUM"]]);
  });

  it("lists the allowed values in the message without echoing the value", () => {
    const result = checkQuery(TransactionsQuerySchema, { client_sync_status: "secret-ish" });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors[0]?.message).toBe("client_sync_status must be one of: not_synced, synced, outdated");
  });

  it("takes one client_sync_status per request", () => {
    const repeated = new URLSearchParams("client_sync_status=not_synced&client_sync_status=outdated");
    expect(offenders(checkQuery(TransactionsQuerySchema, repeated))).toEqual([["client_sync_status", "INVALID_FORMAT"]]);
    expect(offenders(checkQuery(TransactionsQuerySchema, { client_sync_status: "not_synced,outdated" }))).toEqual([
      ["client_sync_status", "INVALID_ENUM"],
    ]);
  });

  it("drops a repeated unknown key and treats an empty list of values as absent", () => {
    expect(checkQuery(TransactionsQuerySchema, new URLSearchParams("colour=red&colour=blue&page=2"))).toEqual({ ok: true, value: { page: 2 } });
    expect(checkQuery(TransactionsQuerySchema, { page: [], page_size: ["5"] })).toEqual({ ok: true, value: { page_size: 5 } });
  });

  it("reports a repeated range end once, as repeated, not also as missing", () => {
    const repeated = new URLSearchParams("transaction_time_from=2024-01-01&transaction_time_from=2024-01-02&transaction_time_to=2024-01-31");
    expect(offenders(checkQuery(TransactionsQuerySchema, repeated))).toEqual([["transaction_time_from", "INVALID_FORMAT"]]);
  });

  it("counts a repeated key as sent for the cross-field rules: the other end of its range is still required, and it answers the card balance's nickname-or-last_four rule", () => {
    const oneEnd = new URLSearchParams("transaction_time_from=2024-01-01&transaction_time_from=2024-01-02");
    expect(offenders(checkQuery(TransactionsQuerySchema, oneEnd))).toEqual([
      ["transaction_time_from", "INVALID_FORMAT"],
      ["transaction_time_to", "REQUIRED"],
    ]);
    const balance = new URLSearchParams("last_four=1234&last_four=1234");
    expect(offenders(checkQuery(CardBalanceQuerySchema, balance))).toEqual([["last_four", "INVALID_FORMAT"]]);
    // A repeated end is no date to order by: no inverted-range entry on the end sent once.
    const inverted = new URLSearchParams("issued_time_from=2024-05-01&issued_time_from=2024-06-01&issued_time_to=2024-01-01");
    expect(offenders(checkQuery(ErpCardsQuerySchema, inverted))).toEqual([["issued_time_from", "INVALID_FORMAT"]]);
  });

  it.each(["123", "12345", "12a4", " 1234"])("rejects card_last_four %j", (value) => {
    expect(offenders(checkQuery(TransactionsQuerySchema, { card_last_four: value }))).toEqual([["card_last_four", "INVALID_FORMAT"]]);
  });

  it("requires both ends of the time range, naming the missing end", () => {
    expect(checkQuery(TransactionsQuerySchema, { transaction_time_from: "2024-01-01" })).toEqual({
      ok: false,
      errors: [{ field: "transaction_time_to", code: "REQUIRED", message: "transaction_time_from and transaction_time_to must be sent together" }],
    });
    expect(offenders(checkQuery(TransactionsQuerySchema, { transaction_time_to: "2024-01-01" }))).toEqual([
      ["transaction_time_from", "REQUIRED"],
    ]);
  });

  it.each(["2024-1-01", "2024-02-30", "01/02/2024", "2024-01-01T00:00:00Z"])("rejects the date %j", (value) => {
    expect(
      offenders(checkQuery(TransactionsQuerySchema, { transaction_time_from: value, transaction_time_to: "2024-03-01" })),
    ).toEqual([["transaction_time_from", "INVALID_FORMAT"]]);
  });

  it("takes a date of a year under 100 as the date it says, and refuses its impossible days alike", () => {
    expect(checkQuery(TransactionsQuerySchema, { transaction_time_from: "0099-12-31", transaction_time_to: "2024-03-01" }).ok).toBe(true);
    // 0004 is a leap year, 0100 is not.
    expect(checkQuery(TransactionsQuerySchema, { transaction_time_from: "0004-02-29", transaction_time_to: "2024-03-01" }).ok).toBe(true);
    expect(offenders(checkQuery(TransactionsQuerySchema, { transaction_time_from: "0100-02-29", transaction_time_to: "2024-03-01" }))).toEqual([
      ["transaction_time_from", "INVALID_FORMAT"],
    ]);
  });

  it.each(["20240-01-01", "x2024-01-01", "124-01-01"])("refuses %j: a year of other than four digits", (value) => {
    expect(offenders(checkQuery(TransactionsQuerySchema, { transaction_time_from: value, transaction_time_to: "2024-03-01" }))).toEqual([
      ["transaction_time_from", "INVALID_FORMAT"],
    ]);
  });

  it("leaves the order of a transaction time range unchecked: only ERP cards and pool accounts refuse an inverted one (§4.3, §8.2)", () => {
    const inverted = { transaction_time_from: "2024-02-01", transaction_time_to: "2024-01-01" };
    expect(checkQuery(TransactionsQuerySchema, inverted)).toEqual({ ok: true, value: inverted });
  });

  it("accepts a leap day", () => {
    const result = checkQuery(TransactionsQuerySchema, { transaction_time_from: "2024-02-29", transaction_time_to: "2024-02-29" });
    expect(result.ok).toBe(true);
  });

  it("rejects exclude_from_sync that is not a boolean", () => {
    expect(offenders(checkQuery(TransactionsQuerySchema, { exclude_from_sync: "yes" }))).toEqual([["exclude_from_sync", "INVALID_FORMAT"]]);
    expect(checkQuery(TransactionsQuerySchema, { exclude_from_sync: true })).toEqual({ ok: true, value: { exclude_from_sync: true } });
  });

  it("reads only lower-case true and false as a boolean filter, as the enums hold their case", () => {
    for (const exclude_from_sync of ["TRUE", "False"]) {
      expect(offenders(checkQuery(TransactionsQuerySchema, { exclude_from_sync }))).toEqual([["exclude_from_sync", "INVALID_FORMAT"]]);
    }
  });

  it("reports every offending field at once", () => {
    expect(
      offenders(checkQuery(TransactionsQuerySchema, { page: "0", card_last_four: "12", approval_status: "x", transaction_time_to: "2024-01-01" })),
    ).toEqual([
      ["page", "OUT_OF_RANGE"],
      ["approval_status", "INVALID_ENUM"],
      ["card_last_four", "INVALID_FORMAT"],
      ["transaction_time_from", "REQUIRED"],
    ]);
  });

  it("reports the other offenders beside a fractional page (zod's int check would end the parse there)", () => {
    for (const page of [1.5, "1.5", -2.5]) {
      expect(offenders(checkQuery(TransactionsQuerySchema, { page, transaction_time_from: "2024-02-01" }))).toEqual([
        ["page", "INVALID_FORMAT"],
        ["transaction_time_to", "REQUIRED"],
      ]);
    }
  });

  it("refuses a page past the safe integers as out of range, as zod's int check did, not rounded to a neighbour", () => {
    for (const page of ["9007199254740993", 2 ** 53, 1e300]) {
      expect(offenders(checkQuery(TransactionsQuerySchema, { page, transaction_time_from: "2024-02-01" }))).toEqual([
        ["page", "OUT_OF_RANGE"],
        ["transaction_time_to", "REQUIRED"],
      ]);
    }
    expect(checkQuery(TransactionsQuerySchema, { page: String(Number.MAX_SAFE_INTEGER) }).ok).toBe(true);
    expect(offenders(checkBody(UpdateCardBodySchema, { auto_top_up_amount: 1e300 }))).toEqual([["auto_top_up_amount", "OUT_OF_RANGE"]]);
  });

  it("refuses a text filter sent as another type, rather than send its String() (an object would filter by \"[object Object]\")", () => {
    expect(offenders(checkQuery(TransactionsQuerySchema, { employee_id: { id: "EMP-1" }, qashio_id: 10023456, billing_currency: true }))).toEqual([
      ["qashio_id", "INVALID_FORMAT"],
      ["employee_id", "INVALID_FORMAT"],
      ["billing_currency", "INVALID_FORMAT"],
    ]);
  });

  it("treats null and undefined as absent and drops unknown keys", () => {
    expect(checkQuery(TransactionsQuerySchema, { page: undefined, employee_id: null, colour: "red" })).toEqual({ ok: true, value: {} });
  });
});

describe("enum filters (§2.2, §4.4-§4.7, §4.9)", () => {
  // The values as the spec lists them, written out: a value dropped from a list would be refused before sending.
  it.each([
    ["transactions", TransactionsQuerySchema, "transaction_status", ["draft", "pushed", "synced", "failed"]],
    [
      "transactions",
      TransactionsQuerySchema,
      "transaction_category",
      ["purchase", "refund", "reversal", "card_loading", "card_unloading", "cash_withdrawal", "deposit", "cashback", "account_transfer"],
    ],
    ["transactions", TransactionsQuerySchema, "erp_sync_status", ["draft", "pending", "validated", "not_validated", "success", "failed"]],
    [
      "transactions",
      TransactionsQuerySchema,
      "approval_status",
      ["initiated", "pending", "approved", "rejected", "resolved", "review", "action_taken", "admin_approved", "external_dispute"],
    ],
    ["transactions", TransactionsQuerySchema, "client_sync_status", ["not_synced", "synced", "outdated"]],
    ["ERP cards", ErpCardsQuerySchema, "status", ["active", "inactive", "suspended", "terminated", "draft", "cancelled"]],
    ["ERP cards", ErpCardsQuerySchema, "card_type", ["virtual", "physical"]],
    ["ERP cards", ErpCardsQuerySchema, "account_type", ["reloadable", "pool"]],
    ["pool accounts", PoolAccountsQuerySchema, "status", ["active", "inactive", "terminated", "all"]],
    ["master data", MasterDataQuerySchema, "status", ["draft", "active", "inactive"]],
    ["statements", StatementsQuerySchema, "account_type", ["Card", "PoolAccount", "CompanyFundAccount", "Subsidiary"]],
  ] as const)("%s take every listed %s", (_list, schema, field, values) => {
    for (const value of values) expect(checkQuery(schema, { [field]: value })).toEqual({ ok: true, value: { [field]: value } });
  });

  it("card balance takes every core card status (the ERP card states, lowercase)", () => {
    for (const status of ["active", "inactive", "suspended", "terminated", "draft", "cancelled"]) {
      expect(checkQuery(CardBalanceQuerySchema, { last_four: "4821", status })).toEqual({ ok: true, value: { last_four: "4821", status } });
    }
  });
});

describe("ErpCardsQuerySchema", () => {
  it("accepts and keeps every documented filter, none dropped as an unknown key (a dropped filter lists every card)", () => {
    const filters = {
      status: "suspended",
      card_type: "physical",
      account_type: "pool",
      pool_account_id: "PA-1",
      user_id: "usr_1",
      last4: "4821",
      issued_time_from: "2024-01-01",
      issued_time_to: "2024-01-31",
      created_time_from: "2023-01-01",
      created_time_to: "2023-12-31",
    };
    expect(checkQuery(ErpCardsQuerySchema, new URLSearchParams(filters))).toEqual({ ok: true, value: filters });
  });

  it.each([
    ["status", "Active"],
    ["card_type", "Virtual"],
    ["account_type", "company"],
  ])("rejects %s %j with INVALID_ENUM", (field, value) => {
    expect(offenders(checkQuery(ErpCardsQuerySchema, { [field]: value }))).toEqual([[field, "INVALID_ENUM"]]);
  });

  it("rejects last4 that is not four digits", () => {
    expect(offenders(checkQuery(ErpCardsQuerySchema, { last4: "482" }))).toEqual([["last4", "INVALID_FORMAT"]]);
  });

  it.each(["issued_time", "created_time"])("accepts either end of %s alone", (prefix) => {
    expect(checkQuery(ErpCardsQuerySchema, { [`${prefix}_from`]: "2024-01-01" }).ok).toBe(true);
    expect(checkQuery(ErpCardsQuerySchema, { [`${prefix}_to`]: "2024-01-01" }).ok).toBe(true);
  });

  it.each(["issued_time", "created_time"])("rejects an inverted %s range on the _to end", (prefix) => {
    const result = checkQuery(ErpCardsQuerySchema, { [`${prefix}_from`]: "2024-02-01", [`${prefix}_to`]: "2024-01-31" });
    expect(offenders(result)).toEqual([[`${prefix}_to`, "INVALID_RANGE"]]);
  });

  it("says which end of an inverted range comes first", () => {
    expect(checkQuery(ErpCardsQuerySchema, { issued_time_from: "2024-02-01", issued_time_to: "2024-01-31" })).toEqual({
      ok: false,
      errors: [{ field: "issued_time_to", code: "INVALID_RANGE", message: "issued_time_to must not be before issued_time_from" }],
    });
  });

  it("leaves a malformed end to its own INVALID_FORMAT entry, without an INVALID_RANGE", () => {
    expect(offenders(checkQuery(ErpCardsQuerySchema, { issued_time_from: "2024-13-01", issued_time_to: "2024-02-01" }))).toEqual([
      ["issued_time_from", "INVALID_FORMAT"],
    ]);
    expect(offenders(checkQuery(ErpCardsQuerySchema, { issued_time_from: "2024-03-01", issued_time_to: "2024-02-31" }))).toEqual([
      ["issued_time_to", "INVALID_FORMAT"],
    ]);
  });

  it("accepts a one-day range", () => {
    expect(checkQuery(ErpCardsQuerySchema, { issued_time_from: "2024-02-01", issued_time_to: "2024-02-01" }).ok).toBe(true);
  });
});

describe("PoolAccountsQuerySchema", () => {
  it.each(["active", "inactive", "terminated", "all"])("accepts status %j", (status) => {
    expect(checkQuery(PoolAccountsQuerySchema, { status })).toEqual({ ok: true, value: { status } });
  });

  it("rejects an unrecognised status", () => {
    expect(offenders(checkQuery(PoolAccountsQuerySchema, { status: "suspended" }))).toEqual([["status", "INVALID_ENUM"]]);
  });

  it("accepts either end of the created range alone and rejects an inverted one", () => {
    const query = { created_time_to: "2024-01-01", manager_id: "usr_2", created_by: "usr_1" };
    expect(checkQuery(PoolAccountsQuerySchema, query)).toEqual({ ok: true, value: query });
    expect(
      offenders(checkQuery(PoolAccountsQuerySchema, { created_time_from: "2024-03-01", created_time_to: "2024-01-01" })),
    ).toEqual([["created_time_to", "INVALID_RANGE"]]);
  });
});

describe.each([
  ["MasterDataQuerySchema", MasterDataQuerySchema],
  ["ChartOfAccountsQuerySchema", ChartOfAccountsQuerySchema],
] as const)("%s", (_name, schema) => {
  it("accepts the common filters, with is_deleted as a string or boolean", () => {
    const result = checkQuery(schema, {
      remote_id: "V-1",
      remote_name: "careem",
      status: "inactive",
      is_deleted: "true",
      created_at_from: "2024-01-01",
      created_at_to: "2024-01-31",
      updated_at_from: "2024-02-01",
      updated_at_to: "2024-02-29",
    });
    expect(result).toMatchObject({ ok: true, value: { is_deleted: true, status: "inactive" } });
    expect(checkQuery(schema, { is_deleted: false })).toEqual({ ok: true, value: { is_deleted: false } });
  });

  it.each(["created_at", "updated_at"])("requires both ends of %s", (prefix) => {
    expect(offenders(checkQuery(schema, { [`${prefix}_from`]: "2024-01-01" }))).toEqual([[`${prefix}_to`, "REQUIRED"]]);
  });

  it("rejects an unknown status and a malformed is_deleted", () => {
    expect(offenders(checkQuery(schema, { status: "Active", is_deleted: "1" }))).toEqual([
      ["status", "INVALID_ENUM"],
      ["is_deleted", "INVALID_FORMAT"],
    ]);
  });
});

describe("ChartOfAccountsQuerySchema extras", () => {
  it("accepts account_number, account_type and account_currency", () => {
    const query = { account_number: "6100", account_type: "expense", account_currency: "AED" };
    expect(checkQuery(ChartOfAccountsQuerySchema, query)).toEqual({ ok: true, value: query });
  });

  it("is not accepted by the common set", () => {
    expect(checkQuery(MasterDataQuerySchema, { account_number: "6100" })).toEqual({ ok: true, value: {} });
  });
});

describe("StatementsQuerySchema", () => {
  it("accepts a month, account type and account id", () => {
    const query = { month: "2024-04", account_type: "PoolAccount", account_id: "PA-1" };
    expect(checkQuery(StatementsQuerySchema, query)).toEqual({ ok: true, value: query });
  });

  it.each(["2024-4", "2024-13", "2024-00", "April 2024", "2024-04-01", "24-04", "12024-04", "x2024-04"])("rejects month %j", (month) => {
    expect(offenders(checkQuery(StatementsQuerySchema, { month }))).toEqual([["month", "INVALID_FORMAT"]]);
  });

  it("rejects an unrecognised account type", () => {
    expect(offenders(checkQuery(StatementsQuerySchema, { account_type: "card" }))).toEqual([["account_type", "INVALID_ENUM"]]);
  });
});

describe("StatementsByAccountQuerySchema", () => {
  it("accepts either month alone", () => {
    expect(checkQuery(StatementsByAccountQuerySchema, { from_month: "2024-01" }).ok).toBe(true);
    expect(checkQuery(StatementsByAccountQuerySchema, { to_month: "2024-06" }).ok).toBe(true);
  });

  it("rejects an unparseable month, at either end", () => {
    expect(offenders(checkQuery(StatementsByAccountQuerySchema, { from_month: "2024/01" }))).toEqual([["from_month", "INVALID_FORMAT"]]);
    expect(offenders(checkQuery(StatementsByAccountQuerySchema, { to_month: "2024-13" }))).toEqual([["to_month", "INVALID_FORMAT"]]);
  });
});

describe("CardBalanceQuerySchema", () => {
  it("accepts a nickname or a last four, with an optional status", () => {
    expect(checkQuery(CardBalanceQuerySchema, { nickname: "Travel card" }).ok).toBe(true);
    expect(checkQuery(CardBalanceQuerySchema, { last_four: "4821", status: "active" }).ok).toBe(true);
  });

  it("rejects status alone with a REQUIRED entry not tied to one field", () => {
    expect(checkQuery(CardBalanceQuerySchema, { status: "active" })).toEqual({
      ok: false,
      errors: [{ field: null, code: "REQUIRED", message: "nickname or last_four is required" }],
    });
    expect(offenders(checkQuery(CardBalanceQuerySchema, { status: "active" }))).toEqual([[null, "REQUIRED"]]);
    expect(offenders(checkQuery(CardBalanceQuerySchema, {}))).toEqual([[null, "REQUIRED"]]);
  });

  it("rejects an empty nickname as REQUIRED, with or without a last four", () => {
    expect(offenders(checkQuery(CardBalanceQuerySchema, { nickname: "" }))).toEqual([["nickname", "REQUIRED"]]);
    expect(offenders(checkQuery(CardBalanceQuerySchema, new URLSearchParams("nickname=&last_four=4821")))).toEqual([["nickname", "REQUIRED"]]);
  });

  it("rejects an invalid status and a malformed last four", () => {
    expect(offenders(checkQuery(CardBalanceQuerySchema, { last_four: "48", status: "frozen", nickname: "x" }))).toEqual([
      ["last_four", "INVALID_FORMAT"],
      ["status", "INVALID_ENUM"],
    ]);
  });
});

describe("DEFAULT_PAGE_SIZES", () => {
  it("are the §8.1 defaults of each list", () => {
    const listsBySize = {
      10: ["bank_accounts", "chart_of_accounts", "suppliers", "tax_rates", "transactions"],
      20: ["erp_cards", "pool_accounts", "statements", "core_cards"],
      12: ["statements_by_account"],
    } as const;
    for (const [size, lists] of Object.entries(listsBySize)) {
      for (const list of lists) expect(DEFAULT_PAGE_SIZES[list]).toBe(Number(size));
    }
    expect(Object.keys(DEFAULT_PAGE_SIZES).sort()).toEqual(Object.values(listsBySize).flat().sort());
  });
});

describe("path parameters", () => {
  it("accept a transaction UUID but not its CT reference", () => {
    expect(TransactionIdParamSchema.safeParse(TRANSACTION_ID).success).toBe(true);
    expect(TransactionIdParamSchema.safeParse("CT10023456").success).toBe(false);
  });

  it("accept a CA card id only", () => {
    expect(CardIdParamSchema.safeParse("CA7Q2M9X4K").success).toBe(true);
    expect(CardIdParamSchema.safeParse("7Q2M9X4K").success).toBe(false);
  });
});

describe("write bodies", () => {
  it("acknowledge takes a non-empty list of transaction UUIDs", () => {
    expect(checkBody(AcknowledgeBodySchema, { transaction_ids: [TRANSACTION_ID] })).toEqual({
      ok: true,
      value: { transaction_ids: [TRANSACTION_ID] },
    });
    expect(offenders(checkBody(AcknowledgeBodySchema, { transaction_ids: [] }))).toEqual([["transaction_ids", "REQUIRED"]]);
    expect(offenders(checkBody(AcknowledgeBodySchema, {}))).toEqual([["transaction_ids", "REQUIRED"]]);
    expect(offenders(checkBody(AcknowledgeBodySchema, { transaction_ids: [TRANSACTION_ID, "CT10023456"] }))).toEqual([
      ["transaction_ids.1", "INVALID_FORMAT"],
    ]);
  });

  it("keep a body already in its checked form as it is, and give zod's output for any other", () => {
    const body = { transaction_ids: [TRANSACTION_ID] };
    const kept = checkBody(AcknowledgeBodySchema, body);
    expect(kept.ok && kept.value).toBe(body);
    // A strip object drops what it does not list: that body is not kept.
    const stripped = checkBody(AcknowledgeBodySchema, { transaction_ids: [TRANSACTION_ID], note: "x" });
    expect(stripped).toEqual({ ok: true, value: { transaction_ids: [TRANSACTION_ID] } });
  });

  it("update card changes only fields sent and needs at least one", () => {
    for (const body of [{ auto_top_up_amount: 0 }, { card_usage_type_amount: 0 }, { card_usage_type: "RELOADABLE" }, { nickname: "Travel" }]) {
      expect(checkBody(UpdateCardBodySchema, body)).toEqual({ ok: true, value: body });
    }
    expect(checkBody(UpdateCardBodySchema, { auto_top_up_amount: 500, velocity_period: "MONTHLY" }).ok).toBe(true);
    expect(offenders(checkBody(UpdateCardBodySchema, {}))).toEqual([[null, "REQUIRED"]]);
    expect(offenders(checkBody(UpdateCardBodySchema, { auto_top_up_amount: -1, card_usage_type_amount: 1.5 }))).toEqual([
      ["auto_top_up_amount", "OUT_OF_RANGE"],
      ["card_usage_type_amount", "INVALID_FORMAT"],
    ]);
  });

  it("update card refuses an empty text field as REQUIRED", () => {
    expect(checkBody(UpdateCardBodySchema, { nickname: "" })).toEqual({
      ok: false,
      errors: [{ field: "nickname", code: "REQUIRED", message: "nickname must not be empty" }],
    });
    expect(offenders(checkBody(UpdateCardBodySchema, { velocity_period: "", card_usage_type: "" }))).toEqual([
      ["velocity_period", "REQUIRED"],
      ["card_usage_type", "REQUIRED"],
    ]);
  });

  it("change status requires a status and leaves the suspended-only rule to the 403 path", () => {
    expect(checkBody(ChangeStatusBodySchema, { status: "suspended", reason: "lost" }).ok).toBe(true);
    expect(checkBody(ChangeStatusBodySchema, { status: "active" }).ok).toBe(true);
    // Any value but a missing one is the 403's (§4.9 "any other value"), not a 400.
    for (const status of ["", 5, false, ["suspended"]]) expect(checkBody(ChangeStatusBodySchema, { status }).ok).toBe(true);
    expect(offenders(checkBody(ChangeStatusBodySchema, {}))).toEqual([["status", "REQUIRED"]]);
    expect(offenders(checkBody(ChangeStatusBodySchema, { status: null }))).toEqual([["status", "REQUIRED"]]);
    expect(offenders(checkBody(ChangeStatusBodySchema, { status: "suspended", reason: 5 }))).toEqual([["reason", "INVALID_FORMAT"]]);
  });

  it("update velocity limit checks types and needs at least one field", () => {
    expect(
      checkBody(UpdateVelocityLimitBodySchema, {
        spend_limit_active: true,
        spend_limit_period: "WEEKLY",
        spend_limit_max_amount: 2000,
        spend_limit_frequency: 20,
      }).ok,
    ).toBe(true);
    expect(offenders(checkBody(UpdateVelocityLimitBodySchema, {}))).toEqual([[null, "REQUIRED"]]);
    for (const body of [{ spend_limit_active: false }, { spend_limit_max_amount: 0 }, { spend_limit_frequency: 0 }]) {
      expect(checkBody(UpdateVelocityLimitBodySchema, body)).toEqual({ ok: true, value: body });
    }
    expect(offenders(checkBody(UpdateVelocityLimitBodySchema, { spend_limit_max_amount: 2.5, spend_limit_frequency: -1 }))).toEqual([
      ["spend_limit_max_amount", "INVALID_FORMAT"],
      ["spend_limit_frequency", "OUT_OF_RANGE"],
    ]);
    expect(offenders(checkBody(UpdateVelocityLimitBodySchema, { spend_limit_active: "true" }))).toEqual([
      ["spend_limit_active", "INVALID_FORMAT"],
    ]);
  });

  it("answer input that is not an object with one INVALID_FORMAT entry, never a throw (cross-field rules included)", () => {
    const schemas = [
      UpdateCardBodySchema,
      UpdateVelocityLimitBodySchema,
      ChangeStatusBodySchema,
      InviteBodySchema,
      AcknowledgeBodySchema,
      TransactionsQuerySchema,
      ErpCardsQuerySchema,
      MasterDataQuerySchema,
      CardBalanceQuerySchema,
    ];
    for (const schema of schemas) {
      for (const raw of [null, [], "x", 5, true]) {
        expect(offenders(checkBody(schema, raw))).toEqual([[null, "INVALID_FORMAT"]]);
      }
    }
  });

  it("answer a missing body with one REQUIRED entry for the request", () => {
    expect(checkBody(AcknowledgeBodySchema, undefined)).toEqual({ ok: false, errors: [{ field: null, code: "REQUIRED", message: "request is required" }] });
  });

  it("invite takes a non-empty list of addresses", () => {
    expect(checkBody(InviteBodySchema, { end_user: ["a@example.com"] }).ok).toBe(true);
    expect(offenders(checkBody(InviteBodySchema, { end_user: [] }))).toEqual([["end_user", "REQUIRED"]]);
    expect(offenders(checkBody(InviteBodySchema, { end_user: "a@example.com" }))).toEqual([["end_user", "INVALID_FORMAT"]]);
    // An address is the server's to judge (§4.10 failed_emails): an empty one passes the body check.
    expect(checkBody(InviteBodySchema, { end_user: ["", "a@example.com"] }).ok).toBe(true);
    expect(offenders(checkBody(InviteBodySchema, { end_user: ["a@example.com", 5] }))).toEqual([["end_user.1", "INVALID_FORMAT"]]);
  });
});

describe("TokenRequestSchema", () => {
  const client = { client_id: "sandbox-client", client_secret: "sandbox-secret" };

  it("accepts both grants", () => {
    expect(
      checkBody(TokenRequestSchema, { grant_type: "authorization_code", ...client, code: "c1", redirect_uri: "https://app/cb" }).ok,
    ).toBe(true);
    expect(checkBody(TokenRequestSchema, { grant_type: "refresh_token", ...client, refresh_token: "rt_1" }).ok).toBe(true);
  });

  it("names every missing field of the chosen grant", () => {
    expect(offenders(checkBody(TokenRequestSchema, { grant_type: "authorization_code", client_id: "c" }))).toEqual([
      ["client_secret", "REQUIRED"],
      ["code", "REQUIRED"],
      ["redirect_uri", "REQUIRED"],
    ]);
  });

  it("refuses an empty refresh token as REQUIRED, as every other field of a grant", () => {
    expect(checkBody(TokenRequestSchema, { grant_type: "refresh_token", ...client, refresh_token: "" })).toEqual({
      ok: false,
      errors: [{ field: "refresh_token", code: "REQUIRED", message: "refresh_token must be a non-empty string" }],
    });
  });

  it("rejects a missing or unsupported grant type", () => {
    expect(offenders(checkBody(TokenRequestSchema, { ...client }))).toEqual([["grant_type", "REQUIRED"]]);
    expect(offenders(checkBody(TokenRequestSchema, { grant_type: "password", ...client }))).toEqual([["grant_type", "INVALID_ENUM"]]);
  });

  it("never echoes a secret in its messages", () => {
    const result = checkBody(TokenRequestSchema, { grant_type: "refresh_token", client_id: "c", client_secret: 42, refresh_token: "rt_SECRET_1" });
    expect(JSON.stringify(result)).not.toContain("rt_SECRET_1");
    expect(offenders(result)).toEqual([["client_secret", "INVALID_FORMAT"]]);
  });
});

describe("checkBody with another schema", () => {
  it("reports a string shorter than a minimum above one as OUT_OF_RANGE, not REQUIRED", () => {
    expect(offenders(checkBody(z.object({ code: z.string().min(3) }), { code: "ab" }))).toEqual([["code", "OUT_OF_RANGE"]]);
  });

  it("reports one entry per field, the first issue's, however many checks it fails", () => {
    const digits = z.object({ code: z.string().min(3).regex(/^\d+$/) });
    expect(offenders(checkBody(digits, { code: "a" }))).toEqual([["code", "OUT_OF_RANGE"]]);
  });
});

describe("ERROR_CODES", () => {
  it("are the four codes §7 shows and the three the checks add", () => {
    expect([...ERROR_CODES].sort()).toEqual(
      ["NOT_FOUND", "INVALID_ENUM", "OUT_OF_RANGE", "UNAUTHORIZED", "INVALID_FORMAT", "REQUIRED", "INVALID_RANGE"].sort(),
    );
  });
});

describe("toSearchParams", () => {
  it("leaves out null values", () => {
    expect(toSearchParams({ page: 2, employee_id: null, exclude_from_sync: false }).toString()).toBe("page=2&exclude_from_sync=false");
  });

  it("serialises a checked value for the wire, leaving out absent values", () => {
    const checked = checkQuery(TransactionsQuerySchema, { page: 2, exclude_from_sync: false, client_sync_status: "not_synced", employee_id: undefined });
    expect(checked.ok && toSearchParams(checked.value).toString()).toBe("page=2&client_sync_status=not_synced&exclude_from_sync=false");
  });
});
