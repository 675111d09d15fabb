import { beforeEach, describe, expect, it, vi } from "vitest";
import {
  BankAccountSchema,
  ChartOfAccountSchema,
  CompanySummarySchema,
  PoolAccountSchema,
  StatementSummarySchema,
  StatementsByAccountSchema,
  SupplierSchema,
  TaxRateSchema,
  listEnvelope,
  successEnvelope,
} from "../../shared/qashio/schemas/index.js";
import { NotFoundError } from "../../shared/qashio/errors.js";
import { errorCodes, harness, netSpendIn, START, START_MONTH, tokensFor, type Harness, type Row } from "./helpers.js";

let h: Harness;
beforeEach(async () => {
  h = await harness();
});


/** A pool account's members, as spec §2.5 lists them (sorted). */
const POOL_MEMBERS = [
  "account_managers", "account_name", "allowed_max_balance", "company_name", "created_at", "created_by", "currency",
  "id", "low_balance_notification_active", "low_balance_notification_amount", "status", "topup_type",
];

describe("GET /public/v1/erp/pool_accounts", () => {
  it("lists pool accounts newest first, 20 per page by default", async () => {
    const { status, body } = await h.json("/public/v1/erp/pool_accounts");
    expect(status).toBe(200);
    const page = listEnvelope(PoolAccountSchema).parse(body);
    expect(page.pagination).toMatchObject({ page_size: 20, total_records: 4 });
    const created = page.data.map((p) => String(p.created_at));
    expect([...created].sort().reverse()).toEqual(created);
  });

  it("shows each pool account's settings, creator and managers as the pool record holds them (§2.5)", async () => {
    const data = h.sandbox.control.company(h.companyId)!;
    const records = new Map(data.pools.map((p) => [p.id, p]));
    const listed = (await h.json("/public/v1/erp/pool_accounts?status=all&page_size=100")).body.data as Row[];
    const name = (u: { firstName: string; lastName: string }) => `${u.firstName} ${u.lastName}`;
    expect(listed.map((p) => p.id).sort()).toEqual([...records.keys()].sort());
    for (const listedPool of listed) {
      const pool = records.get(listedPool.id as string)!;
      // §2.5's members, then the ones a mapping could take from a neighbour (the creator's or a manager's name, the
      // notification amount beside the maximum balance, the reading company's name).
      expect(Object.keys(listedPool).sort()).toEqual(POOL_MEMBERS);
      expect(listedPool).toMatchObject({
        id: pool.id,
        allowed_max_balance: pool.allowedMaxBalance,
        low_balance_notification_amount: pool.lowBalanceNotificationAmount,
        company_name: data.company.name,
        created_by: { user_id: pool.createdBy.userId, name: name(pool.createdBy) },
        account_managers: pool.managers.map((m) => ({ user_id: m.userId, name: name(m), email: m.email })),
      });
    }
    // The seeded pools tell these apart: more than one manager, a notification amount other than the maximum balance.
    expect(listed.some((p) => p.account_managers.length > 1)).toBe(true);
    expect(listed.some((p) => p.low_balance_notification_amount !== p.allowed_max_balance)).toBe(true);
  });

  it("filters on status (all switches it off), manager, creator and a creation range sent alone", async () => {
    const all = (await h.json("/public/v1/erp/pool_accounts")).body.data as Row[];
    const manager = all[0]?.account_managers[1].user_id as string;
    const creator = all[0]?.created_by.user_id as string;
    const cases: [string, (p: Row) => boolean][] = [
      ["status=active", (p) => p.status === "Active"],
      ["status=terminated", (p) => p.status === "Terminated"],
      ["status=all", () => true],
      [`manager_id=${manager}`, (p) => p.account_managers.some((m: Row) => m.user_id === manager)],
      [`created_by=${creator}`, (p) => p.created_by.user_id === creator],
      [`created_time_to=${String(all[2]?.created_at).slice(0, 10)}`, (p) => String(p.created_at).slice(0, 10) <= String(all[2]?.created_at).slice(0, 10)],
    ];
    for (const [query, matches] of cases) {
      const got = ((await h.json(`/public/v1/erp/pool_accounts?${query}`)).body.data as Row[]).map((p) => p.id);
      expect(got, query).toEqual(all.filter(matches).map((p) => p.id));
      expect(got.length, query).toBeGreaterThan(0);
    }
  });

  it.each([
    ["status=suspended", ["status:INVALID_ENUM"]],
    ["created_time_from=2025-02-01&created_time_to=2025-01-01", ["created_time_to:INVALID_RANGE"]],
    ["created_time_from=yesterday", ["created_time_from:INVALID_FORMAT"]],
  ])("answers 400 for %s", async (query, expected) => {
    const { status, body } = await h.json(`/public/v1/erp/pool_accounts?${query}`);
    expect(status).toBe(400);
    expect(errorCodes(body)).toEqual(expected);
  });

  it("answers 404 for a manager who is nobody in this company, the entry naming manager_id (§7)", async () => {
    const { status, body } = await h.json("/public/v1/erp/pool_accounts?manager_id=00000000-0000-4000-8000-000000000000");
    expect([status, errorCodes(body)]).toEqual([404, ["manager_id:NOT_FOUND"]]);
  });

  it("answers 404 for a creator who is nobody in this company, and an empty page for a user who created none", async () => {
    const nobody = await h.json("/public/v1/erp/pool_accounts?created_by=00000000-0000-4000-8000-000000000000");
    expect([nobody.status, errorCodes(nobody.body)]).toEqual([404, ["created_by:NOT_FOUND"]]);
    const data = h.sandbox.control.company(h.companyId)!;
    const creators = new Set(data.pools.map((p) => p.createdBy.userId));
    const other = data.users.find((u) => !creators.has(u.userId))!;
    const { status, body } = await h.json(`/public/v1/erp/pool_accounts?created_by=${other.userId}`);
    expect([status, body.data, body.pagination.total_records]).toEqual([200, [], 0]);
  });

  it("lists a Suspended pool (§2.5) with no status filter and under all only: no filter value names it (spec-gaps)", async () => {
    const data = h.sandbox.control.company(h.companyId)!;
    const suspended = data.pools.find((p) => p.status === "Active")!;
    suspended.status = "Suspended";
    const ids = async (query: string) => ((await h.json(`/public/v1/erp/pool_accounts${query}`)).body.data as Row[]).map((p) => p.id as string);
    const everyPool = [...data.pools].reverse().map((p) => p.id);
    expect(await ids("")).toEqual(everyPool);
    expect(await ids("?status=all")).toEqual(everyPool);
    for (const filter of ["active", "inactive", "terminated"]) {
      const got = await ids(`?status=${filter}`);
      expect(got, filter).toEqual([...data.pools].reverse().filter((p) => p.status.toLowerCase() === filter).map((p) => p.id));
      expect(got, filter).not.toContain(suspended.id);
    }
    expect((await ids("?status=inactive")).length).toBeGreaterThan(0);
  });

  it.each(["Active", "ALL", "draft"])("answers 400 INVALID_ENUM for status=%s, a value §4.5 does not list or not in its case", async (value) => {
    const { status, body } = await h.json(`/public/v1/erp/pool_accounts?status=${value}`);
    expect([status, errorCodes(body)]).toEqual([400, ["status:INVALID_ENUM"]]);
  });

  it("takes a creation range with either end alone or both, each end inclusive", async () => {
    const all = (await h.json("/public/v1/erp/pool_accounts")).body.data as Row[];
    const days = all.map((p) => String(p.created_at).slice(0, 10));
    expect(new Set(days).size, "seeded pools are created on different days").toBe(days.length);
    const middle = days[1] as string;
    const cases: [string, (day: string) => boolean][] = [
      [`created_time_from=${middle}`, (day) => day >= middle],
      [`created_time_to=${middle}`, (day) => day <= middle],
      [`created_time_from=${middle}&created_time_to=${middle}`, (day) => day === middle],
      [`created_time_from=${days[2]}&created_time_to=${days[0]}`, (day) => day >= String(days[2]) && day <= String(days[0])],
    ];
    for (const [query, matches] of cases) {
      const got = ((await h.json(`/public/v1/erp/pool_accounts?${query}`)).body.data as Row[]).map((p) => p.id);
      expect(got, query).toEqual(all.filter((_, i) => matches(days[i] as string)).map((p) => p.id));
      expect(got.length, query).toBeGreaterThan(0);
      expect(got.length, query).toBeLessThan(all.length);
    }
  });

  it("combines manager_id, created_by and a creation range (all must match, each narrowing what the others give)", async () => {
    const data = h.sandbox.control.company(h.companyId)!;
    const pools = [...data.pools].sort((a, b) => a.createdAt.localeCompare(b.createdAt));
    expect(pools.length, "seed 7 has pools enough to leave one out per filter").toBeGreaterThanOrEqual(4);
    const [manager, creator, someoneElse] = data.users;
    // The newest pools all match, but for one the manager does not manage and one another user created; the oldest is
    // before the range: each filter left out lets one more pool in.
    pools.forEach((pool, i) => Object.assign(pool, { managers: i === pools.length - 1 ? [someoneElse] : [manager, someoneElse], createdBy: i === pools.length - 2 ? someoneElse : creator }));
    const from = pools[1]!.createdAt.slice(0, 10);
    const ids = async (query: string) => ((await h.json(`/public/v1/erp/pool_accounts?${query}`)).body.data as Row[]).map((p) => p.id as string).sort();
    const byManager = `manager_id=${manager!.userId}`;
    const byCreator = `created_by=${creator!.userId}`;
    const byRange = `created_time_from=${from}`;
    const got = await ids(`${byManager}&${byCreator}&${byRange}`);
    expect(got).toEqual(pools.slice(1, -2).map((p) => p.id).sort());
    for (const query of [`${byCreator}&${byRange}`, `${byManager}&${byRange}`, `${byManager}&${byCreator}`]) {
      const without = await ids(query);
      expect(without.length, query).toBe(got.length + 1);
      expect(without, query).toEqual(expect.arrayContaining(got));
    }
  });
});

describe("master data lists", () => {
  const lists = [
    ["/public/v1/erp/bank_accounts", BankAccountSchema],
    ["/public/v1/erp/chart_of_accounts", ChartOfAccountSchema],
    ["/public/v1/erp/tax_rates", TaxRateSchema],
    ["/public/v1/erp/suppliers", SupplierSchema],
  ] as const;

  it.each(lists)("%s lists 10 per page by default, newest first, every record validating", async (path, schema) => {
    const { status, body } = await h.json(path);
    expect(status).toBe(200);
    const page = listEnvelope(schema).parse(body);
    expect(page.pagination.page_size).toBe(10);
    expect(page.data.length).toBe(Math.min(10, page.pagination.total_records));
    const created = page.data.map((r) => String(r.created_at));
    expect([...created].sort().reverse()).toEqual(created);
    expect(page.data[0]).not.toHaveProperty("key");
  });

  it.each(lists)("%s counts only the records a filter matches in its pagination", async (path) => {
    const all = (await h.json(`${path}?page_size=100`)).body.data as Row[];
    const remoteId = String(all[0]?.remote_id);
    const matching = all.filter((r) => String(r.remote_id).toLowerCase().includes(remoteId.toLowerCase())).length;
    expect(matching).toBeGreaterThan(0);
    expect(matching).toBeLessThan(all.length);
    const { body } = await h.json(`${path}?remote_id=${encodeURIComponent(remoteId)}&page_size=1`);
    expect(body.pagination).toMatchObject({ page_size: 1, total_records: matching, total_pages: matching });
  });

  it.each(lists)("%s filters case-insensitively on remote_name and remote_id, exactly on status and is_deleted, and on both-ended date ranges", async (path) => {
    const all = (await h.json(`${path}?page_size=100`)).body.data as Row[];
    const sample = all[1] as Row;
    const word = String(sample.remote_name).split(" ")[0]?.toUpperCase() as string;
    const cases: [string, (r: Row) => boolean][] = [
      [`remote_name=${encodeURIComponent(word)}`, (r) => String(r.remote_name).toLowerCase().includes(word.toLowerCase())],
      [`remote_id=${String(sample.remote_id).slice(-3).toLowerCase()}`, (r) => String(r.remote_id).toLowerCase().includes(String(sample.remote_id).slice(-3).toLowerCase())],
      [`status=${sample.status}`, (r) => r.status === sample.status],
      [`is_deleted=${sample.is_deleted}`, (r) => r.is_deleted === sample.is_deleted],
      [
        `created_at_from=${String(sample.created_at).slice(0, 10)}&created_at_to=${String(sample.created_at).slice(0, 10)}`,
        (r) => String(r.created_at).slice(0, 10) === String(sample.created_at).slice(0, 10),
      ],
      [`updated_at_from=2000-01-01&updated_at_to=${String(sample.updated_at).slice(0, 10)}`, (r) => String(r.updated_at).slice(0, 10) <= String(sample.updated_at).slice(0, 10)],
    ];
    for (const [query, matches] of cases) {
      const got = ((await h.json(`${path}?${query}&page_size=100`)).body.data as Row[]).map((r) => r.id);
      expect(got, query).toEqual(all.filter(matches).map((r) => r.id));
      expect(got, query).toContain(sample.id);
    }
  });

  it.each(lists)("%s answers 400 for an unknown status, a malformed boolean and a range with one end", async (path) => {
    const { status, body } = await h.json(`${path}?status=archived&is_deleted=yes&updated_at_from=2025-01-01&created_at_to=2025-01-01`);
    expect(status).toBe(400);
    expect(errorCodes(body).sort()).toEqual(["created_at_from:REQUIRED", "is_deleted:INVALID_FORMAT", "status:INVALID_ENUM", "updated_at_to:REQUIRED"]);
  });

  // §8.2 rule 1: every date of the common set takes YYYY-MM-DD, a real calendar day; the other end sent well-formed.
  it.each(lists.flatMap(([path]) => ["created_at_from", "created_at_to", "updated_at_from", "updated_at_to"].map((field) => [path, field] as const)))(
    "%s answers 400 INVALID_FORMAT on %s for a date that is no YYYY-MM-DD",
    async (path, field) => {
      const other = field.endsWith("_from") ? field.replace(/_from$/, "_to") : field.replace(/_to$/, "_from");
      for (const date of ["2025-02-30", "2025-1-01", "2025-01-01T00:00:00Z"]) {
        const { status, body } = await h.json(`${path}?${other}=2025-01-01&${field}=${encodeURIComponent(date)}`);
        expect({ status, errors: errorCodes(body) }, date).toEqual({ status: 400, errors: [`${field}:INVALID_FORMAT`] });
      }
    },
  );

  it("filters chart of accounts on account_number, account_type and account_currency", async () => {
    const expenses = (await h.json("/public/v1/erp/chart_of_accounts?account_type=expense&page_size=100")).body.data as Row[];
    expect(expenses.length).toBeGreaterThan(5);
    expect(expenses.every((r) => r.account_type === "EXPENSE")).toBe(true);
    const one = (await h.json("/public/v1/erp/chart_of_accounts?account_number=6200")).body.data as Row[];
    expect(one.map((r) => r.remote_name)).toEqual(["Software Subscriptions"]);
    expect((await h.json("/public/v1/erp/chart_of_accounts?account_currency=usd")).body.data).toEqual([]);
  });

  it("matches account_number and account_type in part, case-insensitively, as text filters (§8.2 rule 5)", async () => {
    const sixtyTwo = (await h.json("/public/v1/erp/chart_of_accounts?account_number=62&page_size=100")).body.data as Row[];
    expect(sixtyTwo.map((r) => r.account_number).sort()).toEqual(["6200", "6210"]);
    const exp = (await h.json("/public/v1/erp/chart_of_accounts?account_type=exPen&page_size=100")).body.data as Row[];
    expect(exp.length).toBeGreaterThan(5);
    expect(exp.every((r) => String(r.account_type).toLowerCase().includes("expen"))).toBe(true);
  });

  it("is read through the client and walked to the end", async () => {
    const suppliers: string[] = [];
    for await (const s of h.client.iterateSuppliers({ page_size: 10 })) suppliers.push(s.id);
    expect(suppliers.length).toBe(27);
    expect((await h.client.listTaxRates()).data.length).toBe(6);
    expect((await h.client.listBankAccounts()).data.length).toBe(4);
    expect((await h.client.listChartOfAccounts({ page_size: 5 })).pagination.has_next).toBe(true);
  });

  it("answers 403 for a disabled company", async () => {
    const disabled = await tokensFor(h.sandbox, h.disabledCompanyId);
    expect((await h.json("/public/v1/erp/suppliers", { token: disabled.access_token })).status).toBe(403);
  });
});

describe("statements", () => {
  it("lists one account-month per entry, most recent month first, 20 per page by default", async () => {
    const { status, body } = await h.json("/public/v1/erp/statements");
    expect(status).toBe(200);
    const page = listEnvelope(StatementSummarySchema).parse(body);
    expect(page.pagination.page_size).toBe(20);
    const months = page.data.map((s) => s.statement_period.month);
    expect([...months].sort().reverse()).toEqual(months);
    expect(months[0]).toBe("2025-02");
    expect(page.data[0]?.statement_period).toEqual({ month: "2025-02", from: "2025-02-01", to: "2025-02-28" });
    // §2.7: each entry names the company it belongs to, whatever its account.
    expect(new Set(page.data.map((s) => s.company_id))).toEqual(new Set([h.companyId]));
  });

  it("chains each account's closing balance into the next month's opening balance", async () => {
    const all: Row[] = [];
    for await (const s of h.client.iterateStatements({ page_size: 100 })) all.push(s);
    const byAccount = new Map<string, Row[]>();
    for (const s of all) byAccount.set(s.account_external_id, [...(byAccount.get(s.account_external_id) ?? []), s]);
    expect(new Set(all.map((s) => s.account_type))).toEqual(new Set(["Card", "PoolAccount", "CompanyFundAccount", "Subsidiary"]));
    for (const periods of byAccount.values()) {
      const ordered = [...periods].sort((a, b) => String(a.statement_period.month).localeCompare(String(b.statement_period.month)));
      for (let i = 1; i < ordered.length; i++) expect(ordered[i]?.opening_balance).toBe(ordered[i - 1]?.closing_balance);
    }
  });

  it("filters on month, account_type and account_id", async () => {
    const jan = (await h.json("/public/v1/erp/statements?month=2025-01&page_size=100")).body.data as Row[];
    expect(jan.length).toBeGreaterThan(0);
    expect(jan.every((s) => s.statement_period.month === "2025-01")).toBe(true);
    const pools = (await h.json("/public/v1/erp/statements?account_type=PoolAccount&page_size=100")).body.data as Row[];
    expect(pools.every((s) => s.account_type === "PoolAccount")).toBe(true);
    const one = (await h.json(`/public/v1/erp/statements?account_id=${pools[0]?.account_external_id}&page_size=100`)).body.data as Row[];
    expect(one.every((s) => s.account_external_id === pools[0]?.account_external_id)).toBe(true);
  });

  // §8.2 rule 5: account_id is an identifier filter, exact, not a text filter matching in part or in any case.
  it("matches account_id exactly: a part of an account id or its lower-case form names no account", async () => {
    const all = (await h.json("/public/v1/erp/statements?page_size=100")).body.data as Row[];
    const id = String(all[0]?.account_external_id);
    expect(id).not.toBe(id.toLowerCase());
    for (const sent of [id.slice(0, -1), id.slice(1), id.toLowerCase()]) {
      const { status, body } = await h.json(`/public/v1/erp/statements?account_id=${sent}&page_size=100`);
      expect({ status, data: body.data, total: body.pagination.total_records }, sent).toEqual({ status: 200, data: [], total: 0 });
    }
  });

  it("counts only the statements a filter matches in its pagination", async () => {
    const all = (await h.json("/public/v1/erp/statements?page_size=100")).body.data as Row[];
    const jan = all.filter((s) => s.statement_period.month === "2025-01").length;
    expect(jan).toBeGreaterThan(1);
    expect(jan).toBeLessThan(all.length);
    const { body } = await h.json("/public/v1/erp/statements?month=2025-01&page_size=1");
    expect(body.pagination).toMatchObject({ page_size: 1, total_records: jan, total_pages: jan, has_next: true });
  });

  it.each([
    ["month=2025-13", ["month:INVALID_FORMAT"]],
    ["month=January", ["month:INVALID_FORMAT"]],
    ["account_type=Wallet", ["account_type:INVALID_ENUM"]],
  ])("answers 400 for %s", async (query, expected) => {
    const { status, body } = await h.json(`/public/v1/erp/statements?${query}`);
    expect(status).toBe(400);
    expect(errorCodes(body)).toEqual(expected);
  });

  it("reads one account's periods with inner pagination (12 by default) and no top-level pagination", async () => {
    const funding = (await h.json("/public/v1/erp/statements?account_type=CompanyFundAccount")).body.data[0] as Row;
    const { status, body } = await h.json(`/public/v1/erp/statements/${funding.account_external_id}?page_size=4&page=2`);
    expect(status).toBe(200);
    const data = successEnvelope(StatementsByAccountSchema).parse(body).data;
    expect(body).not.toHaveProperty("pagination");
    expect(data).toMatchObject({ account_type: "CompanyFundAccount", page: 2, total: 6, total_pages: 2 });
    expect(data.data.map((p) => p.statement_period.month)).toEqual(["2024-10", "2024-09"]);
    expect((await h.json(`/public/v1/erp/statements/${funding.account_external_id}`)).body.data.data).toHaveLength(6);
    const window = await h.client.getStatementsByAccount(funding.account_external_id as string, { from_month: "2024-11", to_month: "2025-01" });
    expect(window.data.map((p) => p.statement_period.month)).toEqual(["2025-01", "2024-12", "2024-11"]);
    const fromOnly = await h.client.getStatementsByAccount(funding.account_external_id as string, { from_month: "2025-01" });
    expect(fromOnly.data).toHaveLength(2);
    // Each period is the account's statement of that month, as the summary list gives it (§2.7, §4.7).
    const summaries = (await h.json(`/public/v1/erp/statements?account_id=${funding.account_external_id}&page_size=100`)).body.data as Row[];
    const periods = (await h.json(`/public/v1/erp/statements/${funding.account_external_id}`)).body.data.data as Row[];
    expect(periods).toEqual(summaries.map((s) => ({ statement_period: s.statement_period, opening_balance: s.opening_balance, closing_balance: s.closing_balance, currency: s.currency })));
    expect(periods.some((p) => p.opening_balance !== p.closing_balance), "a month that moved the balance").toBe(true);
  });

  it("counts one account's periods within from_month and to_month only in its inner pagination", async () => {
    const funding = (await h.json("/public/v1/erp/statements?account_type=CompanyFundAccount")).body.data[0] as Row;
    const { body } = await h.json(`/public/v1/erp/statements/${funding.account_external_id}?from_month=2024-11&to_month=2025-01&page_size=2`);
    expect(body.data).toMatchObject({ page: 1, total: 3, total_pages: 2 });
    expect(body.data.data.map((p: Row) => p.statement_period.month)).toEqual(["2025-01", "2024-12"]);
  });

  it("keeps an account's account_type when from_month and to_month hold none of its statements: null is only for an account without any (§4.7)", async () => {
    const funding = (await h.json("/public/v1/erp/statements?account_type=CompanyFundAccount")).body.data[0] as Row;
    const { status, body } = await h.json(`/public/v1/erp/statements/${funding.account_external_id}?from_month=2030-01`);
    expect(status).toBe(200);
    expect(body.data).toMatchObject({ account_type: "CompanyFundAccount", total: 0, total_pages: 0, data: [] });
  });

  it("pages one account's periods 12 at a time by default when it has more (§8.1)", async () => {
    const data = h.sandbox.control.company(h.companyId)!;
    const latest = data.statements.find((s) => s.account.accountType === "CompanyFundAccount")!;
    // Eight months of 2023, older than every seeded one: the account then has 14 periods, more than one default page.
    for (let m = 1; m <= 8; m++) {
      const month = `2023-0${m}`;
      data.statements.push({ ...latest, month, from: `${month}-01`, to: `${month}-28` });
    }
    const { body } = await h.json(`/public/v1/erp/statements/${latest.account.accountExternalId}`);
    expect(body.data).toMatchObject({ page: 1, total: 14, total_pages: 2 });
    expect(body.data.data).toHaveLength(12);
  });

  it("answers 200 with an empty inner list and a null account_type for a valid account without statements", async () => {
    const draft = ((await h.json("/public/v1/erp/cards?status=draft")).body.data as Row[])[0] as Row;
    const { status, body } = await h.json(`/public/v1/erp/statements/${draft.account_external_id}`);
    expect(status).toBe(200);
    expect(body.data).toMatchObject({ account_external_id: draft.account_external_id, account_type: null, total: 0, total_pages: 0, data: [] });
  });

  it("keeps the statements of closed accounts, months after the closing included, and a termination removes none (spec-gaps)", async () => {
    const periodsOf = async (accountId: string) => (await h.json(`/public/v1/erp/statements/${accountId}`)).body.data as Row;
    const terminated = ((await h.json("/public/v1/erp/cards?status=terminated")).body.data as Row[])[0] as Row;
    const closed = await periodsOf(terminated.account_external_id as string);
    expect(closed).toMatchObject({ account_type: "Card", total: 6 });
    const after = (closed.data as Row[]).filter((p) => p.statement_period.from > String(terminated.terminated_at).slice(0, 10));
    expect(after).toHaveLength(6);
    const pool = ((await h.json("/public/v1/erp/pool_accounts?status=terminated")).body.data as Row[])[0] as Row;
    expect(await periodsOf(pool.id as string)).toMatchObject({ account_type: "PoolAccount", total: 6 });
    const active = ((await h.json("/public/v1/erp/cards?status=active&account_type=reloadable")).body.data as Row[])[0] as Row;
    const before = await periodsOf(active.account_external_id as string);
    expect((await h.json(`/_sandbox/companies/${h.companyId}/cards/${active.id}/status`, { body: { status: "Terminated" } })).status).toBe(200);
    expect(await periodsOf(active.account_external_id as string)).toEqual(before);
  });

  it("shows no movement after an account's closing and closes its latest statement at the account's balance (spec-gaps)", async () => {
    const periodsOf = async (accountId: string) => ((await h.json(`/public/v1/erp/statements/${accountId}`)).body.data.data as Row[]).reverse();
    const noMovement = (periods: Row[]) => periods.filter((p) => p.opening_balance !== p.closing_balance).map((p) => p.statement_period.month);
    const terminated = ((await h.json("/public/v1/erp/cards?status=terminated")).body.data as Row[])[0] as Row;
    const core = ((await h.json("/public/v1/core/cards?page_size=100")).body.data.cards as Row[]).find((c) => c.id === terminated.id) as Row;
    const card = await periodsOf(terminated.account_external_id as string);
    expect(noMovement(card.filter((p) => p.statement_period.from > String(terminated.terminated_at).slice(0, 10)))).toEqual([]);
    expect(card.at(-1)?.closing_balance).toBe(Number(core.account_balance));
    expect(Number(core.account_balance)).toBe(0);
    const pool = ((await h.json("/public/v1/erp/pool_accounts?status=terminated")).body.data as Row[])[0] as Row;
    const pooled = await periodsOf(pool.id as string);
    expect(noMovement(pooled)).toEqual([]);
    expect(pooled.at(-1)?.closing_balance).toBe(0);
  });

  it("names a card account by the card's current nickname, in both reads, after a rename", async () => {
    const card = (await h.json("/public/v1/erp/statements?account_type=Card&page_size=100")).body.data[0] as Row;
    const owner = ((await h.json("/public/v1/erp/cards?page_size=100")).body.data as Row[]).find((c) => c.account_external_id === card.account_external_id) as Row;
    expect(card.account_name).toBe(owner.card_nickname);
    expect((await h.json(`/public/v1/core/cards/${owner.id}`, { method: "PUT", body: { nickname: "Renamed Card" } })).status).toBe(200);
    expect((await h.json(`/public/v1/erp/statements/${card.account_external_id}`)).body.data.account_name).toBe("Renamed Card");
    const listed = (await h.json(`/public/v1/erp/statements?account_id=${card.account_external_id}&page_size=100`)).body.data as Row[];
    expect(listed.length).toBeGreaterThan(0);
    expect(listed.every((s) => s.account_name === "Renamed Card")).toBe(true);
  });

  it("answers 404 for an unknown account, another company's account, and 400 for an unparseable month", async () => {
    expect((await h.json("/public/v1/erp/statements/FAUNKNOWN")).status).toBe(404);
    const other = await tokensFor(h.sandbox, h.otherCompanyId);
    const theirs = (await h.json("/public/v1/erp/statements", { token: other.access_token })).body.data[0] as Row;
    await expect(h.client.getStatementsByAccount(theirs.account_external_id as string)).rejects.toBeInstanceOf(NotFoundError);
    const mine = (await h.json("/public/v1/erp/statements")).body.data[0] as Row;
    const bad = await h.json(`/public/v1/erp/statements/${mine.account_external_id}?from_month=2025-1`);
    expect(bad.status).toBe(400);
    expect(errorCodes(bad.body)).toEqual(["from_month:INVALID_FORMAT"]);
  });

  // §8.2 rule 4: each of from_month and to_month takes YYYY-MM, checked on its own (they are independent, §4.7).
  it.each(["from_month", "to_month"])("answers 400 INVALID_FORMAT on %s for a month that is no YYYY-MM, the other end sent well-formed", async (field) => {
    const mine = (await h.json("/public/v1/erp/statements")).body.data[0] as Row;
    const other = field === "from_month" ? "to_month" : "from_month";
    for (const month of ["2025-13", "2025-1", "2025-01-01"]) {
      const { status, body } = await h.json(`/public/v1/erp/statements/${mine.account_external_id}?${other}=2025-01&${field}=${month}`);
      expect({ status, errors: errorCodes(body) }, month).toEqual({ status: 400, errors: [`${field}:INVALID_FORMAT`] });
    }
  });

  it("names the path field statementAccountId in the 404 for an unknown account (§4.7, §7 errors name the field)", async () => {
    const { status, body } = await h.json("/public/v1/erp/statements/FAUNKNOWN");
    expect([status, errorCodes(body)]).toEqual([404, ["statementAccountId:NOT_FOUND"]]);
  });
});

describe("GET /public/v1/erp/company/summary", () => {
  it("answers the company's headline position", async () => {
    const { status, body } = await h.json("/public/v1/erp/company/summary");
    expect(status).toBe(200);
    const summary = successEnvelope(CompanySummarySchema).parse(body).data as Row;
    expect(summary).toMatchObject({ company_id: h.companyId, currency: "AED", cards: { total: 12 } });
    expect(summary.available_balance).toBeCloseTo(summary.total_balance - summary.pending_authorisations, 2);
    expect(summary.month_to_date_spend.month).toBe("2025-03");
    expect(await h.client.getCompanySummary()).toMatchObject({ company_id: h.companyId });
  });

  it("sums the company's accounts and counts its cards by every status and its active pools (spec-gaps, Company summary)", async () => {
    const data = h.sandbox.control.company(h.companyId)!;
    const summary = (await h.json("/public/v1/erp/company/summary")).body.data as Row;
    const cents = (values: number[]) => Math.round(values.reduce((sum, v) => sum + v * 100, 0)) / 100;
    const cards = cents(data.cards.map((c) => c.balance));
    const pools = cents(data.pools.map((p) => p.balance));
    const pending = cents(data.cards.map((c) => c.pendingAuthorisations));
    expect(pools, "seed 7 has money in its pools").toBeGreaterThan(0);
    expect(pending, "seed 7 holds spend not yet cleared").toBeGreaterThan(0);
    const total = cents([data.company.fundingBalance, cards, pools]);
    expect(summary).toMatchObject({ cards_balance: cards, pool_accounts_balance: pools, pending_authorisations: pending, total_balance: total, available_balance: cents([total, -pending]) });
    const byStatus = { active: 0, inactive: 0, suspended: 0, terminated: 0, draft: 0, cancelled: 0 } as Record<string, number>;
    for (const card of data.cards) byStatus[card.status.toLowerCase()]! += 1;
    expect(summary.cards).toEqual({ total: data.cards.length, by_status: byStatus });
    const active = data.pools.filter((p) => p.status === "Active").length;
    expect(active, "seed 7 has a pool that is not Active").toBeLessThan(data.pools.length);
    expect(summary.pool_accounts).toEqual({ total: data.pools.length, active });
  });

  it("counts this month's spend by each transaction's time as it is now, whenever it was created (spec-gaps, Company summary)", async () => {
    const data = h.sandbox.control.company(h.companyId)!;
    const [from] = START_MONTH;
    const scanned = () => netSpendIn(data.transactions.all(), ...START_MONTH);
    const spend = async () => ((await h.json("/public/v1/erp/company/summary")).body.data as Row).month_to_date_spend.amount as number;
    const patch = async (id: string, transaction_time: string) =>
      expect((await h.json(`/_sandbox/companies/${h.companyId}/transactions/${id}`, { method: "PATCH", body: { transaction_time }, token: null })).status).toBe(200);
    // Read from the store's daily totals: the summary walks none of its transactions.
    const walks = vi.spyOn(data.transactions, "all");
    const before = await spend();
    expect(walks).not.toHaveBeenCalled();
    walks.mockRestore();
    expect(before).toBe(scanned());
    const inMonth = data.transactions.all().filter((tx) => tx.transaction_category === "purchase" && Date.parse(tx.transaction_time) >= from);
    expect(inMonth.length, "seed 7 has purchases this month").toBeGreaterThan(1);
    const cost = (tx: (typeof inMonth)[number]) => Math.round((tx.billing_amount + tx.transaction_fee_amount) * 100) / 100;
    // A purchase made before the month, its time patched into it: created before the month's first, it counts.
    const old = data.transactions.all().find((tx) => tx.transaction_category === "purchase" && Date.parse(tx.created_at) < from)!;
    await patch(old.id, START);
    expect(await spend()).toBe(Math.round((before + cost(old)) * 100) / 100);
    expect(await spend()).toBe(scanned());
    // The newest purchase of the month backdated to the month before: it no longer counts, the older ones still do.
    const newest = inMonth[inMonth.length - 1]!;
    await patch(newest.id, "2025-02-27T10:00:00.000Z");
    expect(await spend()).toBe(Math.round((before + cost(old) - cost(newest)) * 100) / 100);
    // Moved to the next month's first instant, then past it: not this month's spend either.
    await patch(old.id, "2025-04-01T00:00:00.000Z");
    expect(await spend()).toBe(Math.round((before - cost(newest)) * 100) / 100);
    await patch(old.id, "2025-04-02T10:00:00.000Z");
    expect(await spend()).toBe(Math.round((before - cost(newest)) * 100) / 100);
    expect(await spend()).toBe(scanned());
  });

  it("answers a month with only money back as a negative net spend, not as spend (spec-gaps, Company summary)", async () => {
    const data = h.sandbox.control.company(h.companyId)!;
    const made = (body: Row) => h.json(`/_sandbox/companies/${h.companyId}/transactions`, { body, token: null });
    const purchase = (await made({ transaction_category: "purchase" })).body.data[0] as Row;
    // Into April: its only transaction is the refund of March's purchase made there.
    const april = [Date.UTC(2025, 3, 1), Date.UTC(2025, 4, 1)] as const;
    const advance_seconds = (april[0] + 3600_000 - Date.parse(START)) / 1000;
    expect((await h.json("/_sandbox/clock", { body: { advance_seconds }, token: null })).status).toBe(200);
    const refund = (await made({ parent_qashio_id: purchase.qashio_id })).body.data as Row[];
    expect(refund.map((tx) => tx.transaction_category)).toEqual(["refund"]);
    // A token of now: the one issued at START expired on the way.
    const { access_token } = await tokensFor(h.sandbox, h.companyId);
    const spend = ((await h.json("/public/v1/erp/company/summary", { token: access_token })).body.data as Row).month_to_date_spend;
    expect(spend.month).toBe("2025-04");
    expect(spend.amount).toBe(-refund[0]!.billing_amount);
    expect(spend.amount).toBe(netSpendIn(data.transactions.all(), ...april));
  });

  it("gives the funding account the balance its latest statement closed at, as the card balance read does", async () => {
    const summary = (await h.json("/public/v1/erp/company/summary")).body.data as Row;
    const latest = (await h.json(`/public/v1/erp/statements/${summary.funding_account.account_external_id}`)).body.data.data[0] as Row;
    expect(latest.statement_period.month).toBe("2025-02");
    expect(summary.funding_account.balance).toBe(latest.closing_balance);
    const read = await h.client.getCardBalance({ nickname: "AWS Billing" });
    expect(read.company_balance?.amount).toBe(latest.closing_balance);
  });

  it("answers 401 without a token and 403 for a disabled company", async () => {
    expect((await h.json("/public/v1/erp/company/summary", { token: null })).status).toBe(401);
    const disabled = await tokensFor(h.sandbox, h.disabledCompanyId);
    expect((await h.json("/public/v1/erp/company/summary", { token: disabled.access_token })).status).toBe(403);
  });
});
