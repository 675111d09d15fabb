/**
 * Every sandbox response carries every key the shared schema lists for its resource (the spec's field lists),
 * so a field renamed or dropped in sandbox/views.ts fails here even though the loose schemas would accept it.
 */
import { beforeAll, describe, expect, it } from "vitest";
import {
  AtmConfigurationSchema,
  BankAccountSchema,
  CardProductSchema,
  ChartOfAccountSchema,
  CoreCardSchema,
  CountryLimitsSchema,
  ErpCardholderSchema,
  ErpChartOfAccountRefSchema,
  ErpCompanySchema,
  ErpCardDetailSchema,
  ErpCardSchema,
  ErpSupplierRefSchema,
  GenericEntrySchema,
  LineItemSchema,
  MerchantCategoryLimitsSchema,
  PoolAccountSchema,
  PoolAccountUserSchema,
  PurchaseLimitsSchema,
  ShippingDetailsSchema,
  SpendLimitSchema,
  StatementPeriodBalanceSchema,
  StatementPeriodSchema,
  StatementSummarySchema,
  StatementsByAccountSchema,
  SupplierSchema,
  TaxRateSchema,
  TopupConfigurationSchema,
  TransactionDetailSchema,
  TransactionSchema,
  TransactionsLimitSchema,
  UserProfileSchema,
  WalletsStatusSchema,
} from "../../shared/qashio/schemas/index.js";
import { harness, type Harness, type Row } from "./helpers.js";

/** Objects §2.4 shows on write responses only. */
const CORE_CARD_WRITE_ONLY = ["card_product"];

/** The spec's keys of a resource that `row` lacks. */
function missingKeys(schema: { shape: object }, row: Row, except: readonly string[] = []): string[] {
  return Object.keys(schema.shape).filter((key) => !except.includes(key) && !Object.hasOwn(row, key));
}

/** Keys of `row` the spec does not list for its resource. */
function extraKeys(schema: { shape: object }, row: Row): string[] {
  return Object.keys(row).filter((key) => !Object.hasOwn(schema.shape, key));
}

function expectAllKeys(schema: { shape: object }, rows: readonly Row[], except: readonly string[] = []): void {
  expect(rows.length).toBeGreaterThan(0);
  for (const row of rows) expect(missingKeys(schema, row, except), `record ${String(row.id ?? row.account_external_id)}`).toEqual([]);
}

/**
 * Every key the spec lists for the nested object `field` of each row (§2.2-§2.7 show their members too), where the
 * row has one: `[schema, field]` pairs, checked like the rows themselves.
 */
function expectNestedKeys(rows: readonly Row[], nested: readonly (readonly [{ shape: object }, string])[]): void {
  for (const [schema, field] of nested) {
    const objects = rows.flatMap((row) => [row[field]].flat()).filter((value): value is Row => value !== null && typeof value === "object");
    expect(objects.length, field).toBeGreaterThan(0);
    for (const value of objects) expect(missingKeys(schema, value), field).toEqual([]);
  }
}

let h: Harness;
beforeAll(async () => {
  h = await harness();
});

async function data(path: string, init?: Parameters<Harness["json"]>[1]): Promise<Row> {
  const { status, body } = await h.json(path, init);
  expect(status, path).toBeLessThan(300);
  return body.data as Row;
}

describe("sandbox responses carry every key of the spec", () => {
  it("for transactions, listed and read one by one", async () => {
    const list = (await data("/public/v1/erp/transactions?page_size=50")) as Row[];
    expectAllKeys(TransactionSchema, list);
    expectNestedKeys(list, [
      [ErpSupplierRefSchema, "erp_supplier"],
      [ErpChartOfAccountRefSchema, "erp_chart_of_account"],
      [LineItemSchema, "line_items"],
      // §2.2: segments, sync_errors and receipts entries share the six-key shape.
      [GenericEntrySchema, "segments"],
      [GenericEntrySchema, "sync_errors"],
      [GenericEntrySchema, "receipts"],
    ]);
    const detail = await data(`/public/v1/erp/transactions/${String(list[0]?.id)}`);
    expectAllKeys(TransactionDetailSchema, [detail]);
    expectNestedKeys([detail], [[ErpCompanySchema, "erp_company"]]);
  });

  it("for ERP cards, listed and read one by one", async () => {
    const list = (await data("/public/v1/erp/cards?page_size=50")) as Row[];
    expectAllKeys(ErpCardSchema, list);
    expectNestedKeys(list, [[ErpCardholderSchema, "cardholder"]]);
    const details = await Promise.all(list.slice(0, 5).map((card) => data(`/public/v1/erp/cards/${String(card.id)}`)));
    expectAllKeys(ErpCardDetailSchema, details);
    expectNestedKeys(details, [
      [PurchaseLimitsSchema, "purchase_limits"],
      [CountryLimitsSchema, "country_limits"],
      [MerchantCategoryLimitsSchema, "merchant_category_limits"],
      [TopupConfigurationSchema, "topup_configuration"],
      [AtmConfigurationSchema, "atm_configuration"],
    ]);
  });

  it("for core cards in the list and in a write response", async () => {
    const list = (await data("/public/v1/core/cards?page_size=50")).cards as Row[];
    expectAllKeys(CoreCardSchema, list, CORE_CARD_WRITE_ONLY);
    const written = await data(`/public/v1/core/cards/${String(list[0]?.id)}`, { method: "PUT", body: { nickname: "Keys check" } });
    expectAllKeys(CoreCardSchema, [written.card as Row]);
    const cardObjects = [
      [ShippingDetailsSchema, "shipping_details"],
      [WalletsStatusSchema, "wallets_status"],
      [UserProfileSchema, "user_profile"],
      [TransactionsLimitSchema, "transactions_limit"],
    ] as const;
    expectNestedKeys(list, cardObjects);
    expectNestedKeys([written.card as Row], [...cardObjects, [SpendLimitSchema, "spend_limit"], [CardProductSchema, "card_product"]]);
  });

  it("and no other for core cards: §2.4 lists no allowed MCCs on them, only allowed_mccs_active (the categories are the ERP read's)", async () => {
    const list = (await data("/public/v1/core/cards?page_size=50")).cards as Row[];
    const written = await data(`/public/v1/core/cards/${String(list[0]?.id)}`, { method: "PUT", body: { nickname: "Keys check" } });
    for (const card of [...list, written.card as Row]) expect(extraKeys(CoreCardSchema, card), `card ${String(card.id)}`).toEqual([]);
    expect(list.some((card) => String(card.allowed_mccs_active) === "true"), "a card with category limits is among them").toBe(true);
  });

  it("for pool accounts, with each manager's user_id, name and email and the creator's user_id and name (§2.5)", async () => {
    const pools = (await data("/public/v1/erp/pool_accounts")) as Row[];
    expectAllKeys(PoolAccountSchema, pools);
    expectAllKeys(PoolAccountUserSchema, pools.flatMap((pool) => pool.account_managers as Row[]));
    expectAllKeys(PoolAccountUserSchema, pools.map((pool) => pool.created_by as Row), ["email"]);
  });

  it.each([
    ["bank accounts", "/public/v1/erp/bank_accounts", BankAccountSchema],
    ["chart of accounts", "/public/v1/erp/chart_of_accounts", ChartOfAccountSchema],
    ["tax rates", "/public/v1/erp/tax_rates", TaxRateSchema],
    ["suppliers", "/public/v1/erp/suppliers", SupplierSchema],
  ] as const)("for master data: %s", async (_label, path, schema) => {
    expectAllKeys(schema, (await data(path)) as Row[]);
  });

  it("for statements, the summary and the statements of one account", async () => {
    const summaries = (await data("/public/v1/erp/statements")) as Row[];
    expectAllKeys(StatementSummarySchema, summaries);
    expectNestedKeys(summaries, [[StatementPeriodSchema, "statement_period"]]);
    const byAccount = await data(`/public/v1/erp/statements/${String(summaries[0]?.account_external_id)}`);
    expectAllKeys(StatementsByAccountSchema, [byAccount]);
    expectAllKeys(StatementPeriodBalanceSchema, byAccount.data as Row[]);
    expectNestedKeys(byAccount.data as Row[], [[StatementPeriodSchema, "statement_period"]]);
  });
});

describe("missingKeys", () => {
  it("names a renamed field", () => {
    const row: Row = { id: "CA1", card_nick_name: "renamed" };
    expect(missingKeys(ErpCardSchema, row)).toContain("card_nickname");
  });

  it("and extraKeys names it the other way round", () => {
    const row: Row = { id: "CA1", card_nick_name: "renamed" };
    expect(extraKeys(ErpCardSchema, row)).toEqual(["card_nick_name"]);
  });
});
