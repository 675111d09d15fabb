/**
 * Every sandbox response carries every key the shared schema lists for its resource (the spec's field lists),
 * so a field renamed or dropped in sandbox/views.ts fails here even though the loose schemas would accept it.
 */
import { beforeAll, describe, expect, it } from "vitest";
import {
  BankAccountSchema,
  ChartOfAccountSchema,
  CoreCardSchema,
  ErpCardDetailSchema,
  ErpCardSchema,
  PoolAccountSchema,
  PoolAccountUserSchema,
  StatementPeriodBalanceSchema,
  StatementSummarySchema,
  StatementsByAccountSchema,
  SupplierSchema,
  TaxRateSchema,
  TransactionDetailSchema,
  TransactionSchema,
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
    expectAllKeys(TransactionDetailSchema, [await data(`/public/v1/erp/transactions/${String(list[0]?.id)}`)]);
  });

  it("for ERP cards, listed and read one by one", async () => {
    const list = (await data("/public/v1/erp/cards?page_size=50")) as Row[];
    expectAllKeys(ErpCardSchema, list);
    const details = await Promise.all(list.slice(0, 5).map((card) => data(`/public/v1/erp/cards/${String(card.id)}`)));
    expectAllKeys(ErpCardDetailSchema, details);
  });

  it("for core cards in the list and in a write response", async () => {
    const list = (await data("/public/v1/core/cards?page_size=50")).cards as Row[];
    expectAllKeys(CoreCardSchema, list, CORE_CARD_WRITE_ONLY);
    const written = await data(`/public/v1/core/cards/${String(list[0]?.id)}`, { method: "PUT", body: { nickname: "Keys check" } });
    expectAllKeys(CoreCardSchema, [written.card as Row]);
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
    const byAccount = await data(`/public/v1/erp/statements/${String(summaries[0]?.account_external_id)}`);
    expectAllKeys(StatementsByAccountSchema, [byAccount]);
    expectAllKeys(StatementPeriodBalanceSchema, byAccount.data as Row[]);
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
