import { describe, expect, it } from "vitest";
import {
  ErpCardSchema,
  MAX_REFERENCE_LENGTH,
  TransactionDetailSchema,
  TransactionSchema,
  parseWithDrift,
} from "../../../shared/qashio/schemas/index.js";
import { conformsTo } from "../../../shared/qashio/schemas/conform.js";
import { issuesOf } from "../../../shared/qashio/parse.js";
import {
  TRANSACTION_ID,
  erpCardFixture,
  refundFixture,
  segmentFixture,
  transactionDetailFixture,
  transactionFixture,
} from "./fixtures.js";

describe("TransactionSchema", () => {
  it("reads a spec-shaped purchase without drift", () => {
    const result = parseWithDrift(TransactionSchema, transactionFixture());
    expect(result.success).toBe(true);
    expect(result.drift).toEqual([]);
    if (!result.success) return;
    expect(result.data).toMatchObject({
      id: TRANSACTION_ID,
      qashio_id: "CT10023456",
      transaction_amount: 54.5,
      client_sync_status: "not_synced",
      erp_supplier: { remote_id: "V-1002", status: "active" },
      erp_chart_of_account: { account_number: "6100" },
      line_items: [{ id: "li-1", amount: 54.5 }],
      exclude_from_sync: false,
    });
  });

  it("links a refund to its parent through both references", () => {
    const refund = TransactionSchema.parse(refundFixture());
    expect(refund).toMatchObject({ parent_id: TRANSACTION_ID, parent_qashio_id: "CT10023456" });
  });

  it.each([
    ["qashio_id", (id: string) => transactionFixture({ qashio_id: id })],
    ["parent_qashio_id", (id: string) => refundFixture({ parent_qashio_id: id })],
  ])("refuses a %s longer than MAX_REFERENCE_LENGTH, in the conformance check as in zod (it would become a storage key)", (field, build) => {
    const longest = `CT${"7".repeat(MAX_REFERENCE_LENGTH - 2)}`;
    expect(TransactionSchema.safeParse(build(longest)).success).toBe(true);
    expect(conformsTo(TransactionSchema)(build(longest))).toBe(true);
    const tooLong = build(`${longest}7`);
    expect(conformsTo(TransactionSchema)(tooLong)).toBe(false);
    const result = TransactionSchema.safeParse(tooLong);
    expect(result.success ? [] : result.error.issues.map((i) => i.path.join("."))).toEqual([field]);
  });

  it.each([
    ["an ESC sequence", "CT1\u001b[2J"],
    ["a line break", "CT1\nerror forged"],
    ["a NUL", "CT1\u0000"],
    ["a lone surrogate (no URL can hold it)", "CT1\ud800"],
  ])("refuses a reference holding %s, in the conformance check as in zod", (_what, id) => {
    for (const build of [(ref: string) => transactionFixture({ qashio_id: ref }), (ref: string) => refundFixture({ parent_qashio_id: ref })]) {
      expect(TransactionSchema.safeParse(build(id)).success).toBe(false);
      expect(conformsTo(TransactionSchema)(build(id))).toBe(false);
    }
    expect(ErpCardSchema.safeParse(erpCardFixture({ id: id.replace("CT", "CA") })).success).toBe(false);
  });

  it("refuses a bare prefix as a reference: CT or CA must be followed by something", () => {
    const result = TransactionSchema.safeParse(refundFixture({ qashio_id: "CT", parent_qashio_id: "CT" }));
    expect(result.success ? [] : result.error.issues.map((i) => i.path.join("."))).toEqual(["qashio_id", "parent_qashio_id"]);
    expect(conformsTo(TransactionSchema)(transactionFixture({ qashio_id: "CT" }))).toBe(false);
    expect(ErpCardSchema.safeParse(erpCardFixture({ id: "CA" })).success).toBe(false);
  });

  it("takes references of any script, and characters beyond the BMP (a surrogate pair is one character)", () => {
    for (const id of ["CTé-ü", "CT😀1", "CT１２"]) {
      expect(TransactionSchema.safeParse(transactionFixture({ qashio_id: id })).success).toBe(true);
      expect(conformsTo(TransactionSchema)(transactionFixture({ qashio_id: id }))).toBe(true);
    }
  });

  it("refuses an ERP card id longer than MAX_REFERENCE_LENGTH", () => {
    expect(ErpCardSchema.safeParse(erpCardFixture({ id: `CA${"Q".repeat(MAX_REFERENCE_LENGTH - 2)}` })).success).toBe(true);
    expect(ErpCardSchema.safeParse(erpCardFixture({ id: `CA${"Q".repeat(MAX_REFERENCE_LENGTH - 1)}` })).success).toBe(false);
  });

  it("keeps fields the spec does not list", () => {
    const parsed = TransactionSchema.parse(transactionFixture({ loyalty_points: 12, erp_supplier: { remote_id: "V-1", tier: "gold" } }));
    expect(parsed).toMatchObject({ loyalty_points: 12, erp_supplier: { tier: "gold" } });
  });

  it.each([
    ["transaction_category", "crypto_purchase"],
    ["client_sync_status", "archived"],
    ["erp_sync_status", "queued"],
    ["approval_status", "escalated"],
  ])("keeps an unlisted %s value and reports it as drift", (field, value) => {
    const result = parseWithDrift(TransactionSchema, transactionFixture({ [field]: value }));
    expect(result.success && result.data[field as keyof typeof result.data]).toBe(value);
    expect(result.drift).toEqual([{ schema: "Transaction", field, value, count: 1 }]);
  });

  it("names nested enum fields with a dotted path", () => {
    const result = parseWithDrift(
      TransactionSchema,
      transactionFixture({ erp_supplier: { remote_id: "V-1", status: "archived" } }),
    );
    expect(result.drift).toEqual([{ schema: "Transaction", field: "erp_supplier.status", value: "archived", count: 1 }]);
  });

  it.each([
    ["a missing id", { id: undefined }],
    ["a non-UUID id", { id: "12345" }],
    ["a null id", { id: null }],
    ["a qashio_id not starting with CT", { qashio_id: "TX10023456" }],
    ["a missing qashio_id", { qashio_id: undefined }],
    ["a malformed parent_id", { parent_id: "parent-1" }],
    ["a parent_qashio_id not starting with CT", { parent_qashio_id: "10023456" }],
  ])("rejects %s", (_name, overrides) => {
    expect(TransactionSchema.safeParse(transactionFixture(overrides)).success).toBe(false);
  });

  it("reads null or empty parent references as null", () => {
    const parsed = TransactionSchema.parse(transactionFixture({ parent_id: "", parent_qashio_id: null }));
    expect(parsed).toMatchObject({ parent_id: null, parent_qashio_id: null });
  });

  it("accepts nulls on optional-looking fields and nested objects", () => {
    const parsed = TransactionSchema.parse(
      transactionFixture({
        cleared_at: null,
        approved_by: null,
        approved_date_time: null,
        erp_supplier: null,
        erp_chart_of_account: null,
        line_items: null,
        segments: null,
        sync_errors: null,
        receipts: null,
        transaction_category: null,
        merchant_name: null,
        client_sync_status: null,
        erp_sync_status: null,
        approval_status: null,
      }),
    );
    expect(parsed.erp_supplier).toBeNull();
    expect(parsed).toMatchObject({ client_sync_status: null, erp_sync_status: null, approval_status: null });
  });

  it("reads the minimal record of an id and a CT reference", () => {
    expect(TransactionSchema.parse({ id: TRANSACTION_ID, qashio_id: "CT1" })).toEqual({ id: TRANSACTION_ID, qashio_id: "CT1" });
  });

  it("normalises numeric strings in amounts and boolean strings in flags", () => {
    const parsed = TransactionSchema.parse(
      transactionFixture({ transaction_amount: "54.50", billing_amount: "-3", exclude_from_sync: "true", visible: "FALSE" }),
    );
    expect(parsed).toMatchObject({ transaction_amount: 54.5, billing_amount: -3, exclude_from_sync: true, visible: false });
  });

  it("reads a last four and an MCC sent as numbers as their four digits, leading zeros kept (0042, MCC 0742)", () => {
    const parsed = TransactionSchema.parse(transactionFixture({ card_last_four: 42, mcc_code: 742 }));
    expect(parsed).toMatchObject({ card_last_four: "0042", mcc_code: "0742" });
    expect(TransactionSchema.parse(transactionFixture({ card_last_four: "0042", mcc_code: 5812 }))).toMatchObject({ card_last_four: "0042", mcc_code: "5812" });
    // Not a four-digit code: its decimal text, as for any identifier sent as a number.
    expect(TransactionSchema.parse(transactionFixture({ mcc_code: 12345 }))).toMatchObject({ mcc_code: "12345" });
    expect(TransactionSchema.parse(transactionFixture({ mcc_code: 7.5 }))).toMatchObject({ mcc_code: "7.5" });
  });

  it("reads a flag sent as TRUE in capitals as true, not false", () => {
    const parsed = TransactionSchema.parse(transactionFixture({ exclude_from_sync: "TRUE", visible: "True" }));
    expect(parsed).toMatchObject({ exclude_from_sync: true, visible: true });
  });

  it.each(["1e3", "0x10", "12abc", "54.50 EUR"])("rejects an amount %j that is not a plain decimal, though it starts with digits", (amount) => {
    const result = TransactionSchema.safeParse(transactionFixture({ transaction_amount: amount }));
    expect(result.success ? [] : result.error.issues.map((i) => i.path.join("."))).toEqual(["transaction_amount"]);
  });

  it("says what a field of several accepted forms takes, not a bare 'Invalid input', and never the value sent", () => {
    const result = TransactionSchema.safeParse(
      transactionFixture({
        transaction_amount: "1,234.50",
        exclude_from_sync: "yes",
        parent_qashio_id: "XX-ann@example.com",
        vendor_trn: { n: 1 },
        segments: { "ann@example.com": { name: 5 } },
      }),
    );
    const issues = result.success ? [] : issuesOf(result.error).map(({ path, message }) => `${path}: ${message}`);
    expect(issues).toEqual([
      "parent_qashio_id: must start with CT, then no blank, control character or lone surrogate",
      'transaction_amount: expected a number, or a decimal number as text ("12.50", "-3"), "" or null',
      "vendor_trn: expected text or a number",
      'exclude_from_sync: expected a boolean, or true or false as text in any letter case, "" or null',
      "segments: expected a list of segment entries or an object of them by label, each entry an object of text members (its id and codes may be numbers), or null",
    ]);
  });

  it("rejects a non-numeric amount", () => {
    expect(TransactionSchema.safeParse(transactionFixture({ transaction_amount: "fifty" })).success).toBe(false);
  });

  it("reads approval details when present", () => {
    const parsed = TransactionSchema.parse(
      transactionFixture({
        approval_status: "approved",
        approved_date_time: "2024-05-14T08:00:00Z",
        approved_by: { user_external_id: "usr_9", name: "Omar Said" },
      }),
    );
    expect(parsed.approved_by).toEqual({ user_external_id: "usr_9", name: "Omar Said" });
  });

  it("types approved_by as the cardholder fields are: a numeric employee_id becomes text, a non-string email is refused", () => {
    const parsed = TransactionSchema.parse(transactionFixture({ approved_by: { user_external_id: 9, employee_id: 4411 } }));
    expect(parsed.approved_by).toEqual({ user_external_id: "9", employee_id: "4411" });
    const bad = TransactionSchema.safeParse(transactionFixture({ approved_by: { email: 42 } }));
    expect(bad.success ? [] : bad.error.issues.map((i) => i.path.join("."))).toEqual(["approved_by.email"]);
  });

  it("accepts segments keyed by label, including custom underscore keys", () => {
    const parsed = TransactionSchema.parse(
      transactionFixture({ segments: { Location: segmentFixture(), cost_centre: segmentFixture({ label: "cost_centre" }) } }),
    );
    expect(parsed.segments).toMatchObject({ cost_centre: { label: "cost_centre" } });
  });

  it("reads sync errors and receipts as generic six-key entries", () => {
    const parsed = TransactionSchema.parse(
      transactionFixture({ sync_errors: [segmentFixture({ id: "err-1", code: "E42", name: "Supplier missing" })] }),
    );
    expect(parsed.sync_errors?.[0]).toMatchObject({ id: "err-1", code: "E42" });
    expect(parsed.receipts?.[0]).toMatchObject({ id: "rcpt-1" });
  });
});

describe("TransactionDetailSchema", () => {
  it("reads the status, fee amounts and company of the single read", () => {
    const result = parseWithDrift(TransactionDetailSchema, transactionDetailFixture());
    expect(result.drift).toEqual([]);
    expect(result.success && result.data).toMatchObject({
      transaction_status: "pushed",
      transaction_fee_amount: 0.5,
      clearing_fee: 0,
      erp_company: { name: "Falcon Trading", is_deleted: false, parent_company_id: null },
    });
  });

  it("keeps an unlisted transaction_status and reports it", () => {
    const result = parseWithDrift(TransactionDetailSchema, transactionDetailFixture({ transaction_status: "archived" }));
    expect(result.drift).toEqual([
      { schema: "TransactionDetail", field: "transaction_status", value: "archived", count: 1 },
    ]);
  });

  it("accepts a null transaction_status and erp_company", () => {
    const result = parseWithDrift(TransactionDetailSchema, transactionDetailFixture({ transaction_status: null, erp_company: null }));
    expect(result.drift).toEqual([]);
    expect(result.success && result.data).toMatchObject({ transaction_status: null, erp_company: null });
  });

  it("normalises fee amounts sent as strings", () => {
    const parsed = TransactionDetailSchema.parse(transactionDetailFixture({ transaction_fee_amount: "1.25", clearing_fee: "0" }));
    expect(parsed).toMatchObject({ transaction_fee_amount: 1.25, clearing_fee: 0 });
  });

  it("still rejects an invalid id", () => {
    expect(TransactionDetailSchema.safeParse(transactionDetailFixture({ id: "CT10023456" })).success).toBe(false);
  });
});
