import { describe, expect, it } from "vitest";
import * as z from "zod";
import * as schemas from "../../../shared/qashio/schemas/index.js";

describe("schemas index", () => {
  it.each([
    "TransactionSchema",
    "TransactionDetailSchema",
    "ErpCardSchema",
    "ErpCardDetailSchema",
    "CoreCardSchema",
    "PoolAccountSchema",
    "BankAccountSchema",
    "ChartOfAccountSchema",
    "TaxRateSchema",
    "SupplierSchema",
    "StatementSummarySchema",
    "StatementsByAccountSchema",
    "TokenSetSchema",
    "ErrorEnvelopeSchema",
    "PaginationSchema",
    "PageInfoSchema",
    "CardBalanceSchema",
    "InvitationResultSchema",
    "CompanySummarySchema",
    "CoreCardListEnvelopeSchema",
  ] as const)("exports %s as a zod schema", (name) => {
    expect(schemas[name]).toBeInstanceOf(z.ZodType);
  });

  it.each([
    "successEnvelope",
    "listEnvelope",
    "driftEnum",
    "parseWithDrift",
    "parseEach",
    "withDriftSink",
    "checkQuery",
    "checkBody",
  ] as const)("exports the function %s", (name) => {
    expect(typeof schemas[name]).toBe("function");
  });

  it.each([
    ["TRANSACTION_CATEGORIES", "purchase"],
    ["CLIENT_SYNC_STATUSES", "not_synced"],
    ["TRANSACTION_STATUSES", "pushed"],
    ["ERP_SYNC_STATUSES", "not_validated"],
    ["APPROVAL_STATUSES", "external_dispute"],
    ["ERP_CARD_STATUSES", "Cancelled"],
    ["POOL_ACCOUNT_STATUSES", "Terminated"],
    ["MASTER_DATA_STATUSES", "draft"],
    ["STATEMENT_ACCOUNT_TYPES", "CompanyFundAccount"],
  ] as const)("exports the value list %s", (name, sample) => {
    expect(schemas[name]).toContain(sample);
  });

  it.each([
    ["TransactionDetailSchema", schemas.TransactionDetailSchema],
    ["CoreCardSchema", schemas.CoreCardSchema],
    ["ErpCardDetailSchema", schemas.ErpCardDetailSchema],
  ] as const)("converts %s to JSON Schema with normalised output types", (_name, schema) => {
    const json = z.toJSONSchema(schema) as { properties: Record<string, unknown> };
    expect(Object.keys(json.properties)).toContain("id");
  });

  it.each(["optString", "optStringish", "optNumber", "optBoolean"] as const)(
    "%s returns one shared schema: several hundred fields use it, and a schema per field was most of the zod work at import",
    (name) => {
      const field = schemas[name];
      expect(field()).toBe(field());
      // Shared safely: zod schemas are immutable, a derived one is a new instance.
      expect(field().optional()).not.toBe(field());
      expect(schemas.TransactionSchema.shape.merchant_name).toBe(schemas.optString());
    },
  );
});
