/**
 * Every sandbox value of a field whose type the spec states (§2.2, §2.3, §2.5-§2.7) has that type, read from the spec's
 * own tables and notes, so a field of sandbox/views.ts turned into a string, a number or null fails here though the
 * loose shared schemas (strings for flags, numeric strings for amounts) would accept it. Skips without the spec.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { PROVIDER_SPEC, specSection } from "../provider-spec.js";
import { harness, type Harness, type Row } from "./helpers.js";

type SpecType = "string" | "number" | "boolean" | "object" | "array";

/** Card timestamps are `null` until their moment comes (spec-gaps, "Card timestamps"); no other typed field is. */
const NULL_UNTIL_IT_COMES = ["issued_at", "activated_at", "terminated_at"];

/** `field -> type` of a section's `| Field | Type | Notes |` table, a row naming several fields giving each the type. */
function tableTypes(section: string): Map<string, SpecType> {
  const types = new Map<string, SpecType>();
  for (const [, fields = "", type] of specSection(section).matchAll(/\| ((?:`[a-z_]+`(?:, )?)+) \| (string|number|boolean|object|array) \|/g)) {
    for (const [, field = ""] of fields.matchAll(/`([a-z_]+)`/g)) types.set(field, type as SpecType);
  }
  expect(types.size, `typed fields of §${section}`).toBeGreaterThan(0);
  return types;
}

/** `field -> type` of the spec's inline notes, as "`exclude_from_sync` (boolean)", in `text`. */
function noteTypes(text: string): Map<string, SpecType> {
  return new Map([...text.matchAll(/`([a-z_]+)` \((string|number|boolean)\b/g)].map(([, field = "", type]) => [field, type as SpecType]));
}

function typeOf(value: unknown): string {
  if (value === null) return "null";
  return Array.isArray(value) ? "array" : typeof value;
}

/** Each typed field of each row has its type (or is `null` where the spec-gaps allow it), and some row shows a value. */
function expectSpecTypes(types: Map<string, SpecType>, rows: readonly Row[]): void {
  expect(rows.length).toBeGreaterThan(0);
  for (const [field, type] of types) {
    const seen = new Set(rows.map((row) => typeOf(row[field])));
    if (NULL_UNTIL_IT_COMES.includes(field)) seen.delete("null");
    expect([...seen], `${field} (§2: ${type})`).toEqual([type]);
  }
}

let h: Harness;
beforeAll(async () => {
  h = await harness();
});

async function data(path: string): Promise<unknown> {
  const { status, body } = await h.json(path);
  expect(status, path).toBeLessThan(300);
  return body.data;
}

describe.skipIf(PROVIDER_SPEC === "")("sandbox values have the types the spec states", () => {
  it("for transactions, listed and read one by one (§2.2 and its rule 2)", async () => {
    const list = (await data("/public/v1/erp/transactions?page_size=100")) as Row[];
    const listed = noteTypes(specSection("2.2").split("Rules:")[0] ?? "");
    expect([...listed.keys()].sort()).toEqual(["exclude_from_sync", "visible"]);
    expectSpecTypes(listed, list);
    const detail = (await data(`/public/v1/erp/transactions/${String(list[0]?.id)}`)) as Row;
    const added = noteTypes(specSection("2.2 rule 2"));
    expect([...added.keys()].sort()).toEqual(["clearing_fee", "transaction_fee_amount"]);
    expectSpecTypes(new Map([...listed, ...added]), [detail]);
  });

  it("for ERP cards, listed and read one by one (§2.3)", async () => {
    const list = (await data("/public/v1/erp/cards?page_size=100")) as Row[];
    expectSpecTypes(tableTypes("2.3"), list);
    const details = await Promise.all(list.map(async (card) => (await data(`/public/v1/erp/cards/${String(card.id)}`)) as Row));
    expectSpecTypes(tableTypes("2.3"), details);
  });

  it("for pool accounts (§2.5)", async () => {
    expectSpecTypes(tableTypes("2.5"), (await data("/public/v1/erp/pool_accounts")) as Row[]);
  });

  it.each([
    ["Bank account", "/public/v1/erp/bank_accounts"],
    ["Chart of account", "/public/v1/erp/chart_of_accounts"],
    ["Tax rate", "/public/v1/erp/tax_rates"],
    ["Supplier", "/public/v1/erp/suppliers"],
  ])("for master data: %s (§2.6)", async (resource, path) => {
    const [common = "", rows = ""] = specSection("2.6").split("| Resource |");
    const own = new RegExp(`\\| ${resource} \\| (.*?) \\|`).exec(rows)?.[1];
    expect(own, resource).toBeDefined();
    expectSpecTypes(new Map([...noteTypes(common), ...noteTypes(own ?? "")]), (await data(path)) as Row[]);
  });

  it("for statement summaries (§2.7)", async () => {
    expectSpecTypes(tableTypes("2.7"), (await data("/public/v1/erp/statements")) as Row[]);
  });
});
