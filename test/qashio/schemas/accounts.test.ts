import { describe, expect, it } from "vitest";
import {
  BankAccountSchema,
  ChartOfAccountSchema,
  PoolAccountSchema,
  StatementPeriodBalanceSchema,
  StatementSummarySchema,
  StatementsByAccountSchema,
  SupplierSchema,
  TaxRateSchema,
  parseWithDrift,
} from "../../../shared/qashio/schemas/index.js";
import {
  bankAccountFixture,
  chartOfAccountFixture,
  poolAccountFixture,
  statementSummaryFixture,
  statementsByAccountFixture,
  supplierFixture,
  taxRateFixture,
} from "./fixtures.js";

describe("PoolAccountSchema", () => {
  it("reads a spec-shaped pool account", () => {
    const result = parseWithDrift(PoolAccountSchema, poolAccountFixture());
    expect(result.drift).toEqual([]);
    expect(result.success && result.data).toEqual(poolAccountFixture());
  });

  it("keeps an unlisted status and reports it", () => {
    const result = parseWithDrift(PoolAccountSchema, poolAccountFixture({ status: "Frozen" }));
    expect(result.drift).toEqual([{ schema: "PoolAccount", field: "status", value: "Frozen", count: 1 }]);
  });

  it("rejects a pool account without an id", () => {
    expect(PoolAccountSchema.safeParse(poolAccountFixture({ id: "" })).success).toBe(false);
  });

  it("takes a status in any letter case as listed, keeping the case sent", () => {
    const result = parseWithDrift(PoolAccountSchema, poolAccountFixture({ status: "ACTIVE" }));
    expect(result.drift).toEqual([]);
    expect(result.success && result.data.status).toBe("ACTIVE");
  });

  it("reads null status, creator and managers", () => {
    const pool = PoolAccountSchema.parse(poolAccountFixture({ status: null, created_by: null, account_managers: null }));
    expect(pool).toMatchObject({ status: null, created_by: null, account_managers: null });
    expect(PoolAccountSchema.safeParse(poolAccountFixture({ account_managers: undefined })).success).toBe(true);
  });

  it("normalises a flag sent as text and a user id sent as a number", () => {
    const pool = PoolAccountSchema.parse(poolAccountFixture({ low_balance_notification_active: "FALSE", created_by: { user_id: 42, name: "Omar Said" } }));
    expect(pool).toMatchObject({ low_balance_notification_active: false, created_by: { user_id: "42" } });
  });
});

/** §2.6: the fields every master-data record carries; each row below adds its resource's own. */
const MASTER_DATA_FIELDS = ["id", "remote_id", "remote_name", "status", "is_deleted", "created_at", "updated_at"];

describe.each([
  ["BankAccount", BankAccountSchema, bankAccountFixture, ["account_type", "account_number", "reconciliation_account"]],
  ["ChartOfAccount", ChartOfAccountSchema, chartOfAccountFixture, ["qashio_external_id", "account_number", "account_type", "account_currency", "description"]],
  ["TaxRate", TaxRateSchema, taxRateFixture, ["tax_rate_code", "total_tax_rate", "country_code"]],
  ["Supplier", SupplierSchema, supplierFixture, ["qashio_external_id"]],
] as const)("%s master-data record", (name, schema, fixture, additional) => {
  const fields = [...MASTER_DATA_FIELDS, ...additional];

  it("reads a spec-shaped record unchanged", () => {
    const result = parseWithDrift(schema, fixture());
    expect(result.drift).toEqual([]);
    expect(result.success && result.data).toEqual(fixture());
  });

  it("rejects an id that is not a UUID", () => {
    expect(schema.safeParse(fixture({ id: "V-1002" })).success).toBe(false);
  });

  it("keeps an unlisted status and names the record in the warning", () => {
    const result = parseWithDrift(schema, fixture({ status: "archived" }));
    expect(result.drift).toEqual([{ schema: name, field: "status", value: "archived", count: 1 }]);
  });

  it("normalises is_deleted sent as a string and keeps unknown fields", () => {
    const result = schema.parse(fixture({ is_deleted: "true", source_system: "xero" }));
    expect(result).toMatchObject({ is_deleted: true, source_system: "xero" });
  });

  it("declares each listed field, and no other", () => {
    expect(Object.keys(schema.shape).sort()).toEqual([...fields].sort());
  });

  it.each(fields.filter((field) => field !== "id"))("reads %s sent as null or left out", (field) => {
    const result = schema.safeParse(fixture({ [field]: null }));
    expect(result.success && result.data[field as keyof typeof result.data]).toBeNull();
    const without: Record<string, unknown> = fixture();
    delete without[field];
    expect(schema.safeParse(without).success).toBe(true);
  });

  it("takes a status in any letter case as listed, keeping the case sent", () => {
    const result = parseWithDrift(schema, fixture({ status: "INACTIVE" }));
    expect(result).toMatchObject({ success: true, drift: [], data: { status: "INACTIVE" } });
  });

  it("reads a remote_id sent as a number as its text", () => {
    expect(schema.parse(fixture({ remote_id: 1002 })).remote_id).toBe("1002");
  });
});

describe("master-data specifics", () => {
  it("reads a tax rate percentage sent as a string", () => {
    expect(TaxRateSchema.parse(taxRateFixture({ total_tax_rate: "5.0" })).total_tax_rate).toBe(5);
  });

  it("reads an account number sent as a number as a string", () => {
    expect(ChartOfAccountSchema.parse(chartOfAccountFixture({ account_number: 6100 })).account_number).toBe("6100");
  });

  it("reads a bank account number and a tax rate code sent as numbers as their text", () => {
    expect(BankAccountSchema.parse(bankAccountFixture({ account_number: 1012345678 })).account_number).toBe("1012345678");
    expect(TaxRateSchema.parse(taxRateFixture({ tax_rate_code: 15 })).tax_rate_code).toBe("15");
  });

  it("keeps an account currency as sent, unchecked against ISO 4217", () => {
    expect(ChartOfAccountSchema.parse(chartOfAccountFixture({ account_currency: "dirham" })).account_currency).toBe("dirham");
  });
});

describe("StatementSummarySchema", () => {
  it("reads a spec-shaped statement", () => {
    expect(StatementSummarySchema.parse(statementSummaryFixture())).toEqual(statementSummaryFixture());
  });

  it("keeps an unlisted account type and reports it", () => {
    const result = parseWithDrift(StatementSummarySchema, statementSummaryFixture({ account_type: "CreditAccount" }));
    expect(result.drift).toEqual([
      { schema: "StatementSummary", field: "account_type", value: "CreditAccount", count: 1 },
    ]);
  });

  it("rejects a statement without a period", () => {
    expect(StatementSummarySchema.safeParse(statementSummaryFixture({ statement_period: undefined })).success).toBe(false);
  });

  it.each([
    ["a period without a month", { statement_period: { from: "2024-04-01", to: "2024-04-30" } }],
    ["an empty account_external_id", { account_external_id: "" }],
  ])("rejects a statement with %s", (_name, overrides) => {
    expect(StatementSummarySchema.safeParse(statementSummaryFixture(overrides)).success).toBe(false);
  });

  it("reads a null account type", () => {
    expect(StatementSummarySchema.parse(statementSummaryFixture({ account_type: null })).account_type).toBeNull();
  });

  it("normalises balances sent as text and a company id sent as a number", () => {
    const statement = StatementSummarySchema.parse(statementSummaryFixture({ opening_balance: "1200.00", closing_balance: "-3.5", company_id: 51 }));
    expect(statement).toMatchObject({ opening_balance: 1200, closing_balance: -3.5, company_id: "51" });
  });
});

describe("StatementPeriodBalanceSchema", () => {
  const period = () => statementsByAccountFixture().data[0];

  it("normalises balances sent as text", () => {
    expect(StatementPeriodBalanceSchema.parse({ ...period(), opening_balance: "12.50", closing_balance: "" })).toMatchObject({
      opening_balance: 12.5,
      closing_balance: null,
    });
  });

  it("rejects a period balance without its statement_period", () => {
    expect(StatementPeriodBalanceSchema.safeParse({ ...period(), statement_period: undefined }).success).toBe(false);
  });
});

describe("StatementsByAccountSchema", () => {
  it("reads the periods with their inner pagination", () => {
    const data = StatementsByAccountSchema.parse(statementsByAccountFixture());
    expect(data).toMatchObject({ page: 1, total_pages: 2, total: 14 });
    expect(data.data.map((p) => p.statement_period.month)).toEqual(["2024-04", "2024-03"]);
  });

  it("reads an account without statements: null type, empty periods", () => {
    const data = StatementsByAccountSchema.parse(
      statementsByAccountFixture({ account_type: null, page: 1, total_pages: 0, total: 0, data: [] }),
    );
    expect(data).toMatchObject({ account_type: null, data: [] });
  });

  it.each(["page", "total_pages", "total", "data"])("rejects a response without %s", (member) => {
    expect(StatementsByAccountSchema.safeParse(statementsByAccountFixture({ [member]: undefined })).success).toBe(false);
  });

  it("keeps an unlisted account type and reports it under its own schema name", () => {
    const result = parseWithDrift(StatementsByAccountSchema, statementsByAccountFixture({ account_type: "CreditAccount" }));
    expect(result.drift).toEqual([{ schema: "StatementsByAccount", field: "account_type", value: "CreditAccount", count: 1 }]);
  });
});
