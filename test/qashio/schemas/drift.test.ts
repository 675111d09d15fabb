import { describe, expect, it } from "vitest";
import * as z from "zod";
import {
  CoreCardSchema,
  ErpCardSchema,
  PoolAccountSchema,
  StatementSummarySchema,
  SupplierSchema,
  TRANSACTION_CATEGORIES,
  TransactionDetailSchema,
  TransactionSchema,
  driftEnum,
  parseEach,
  parseWithDrift,
  withDriftSink,
  type DriftWarning,
} from "../../../shared/qashio/schemas/index.js";
import { MAX_RECORD_DEPTH, nestedDeeperThan } from "../../../shared/bridge/validate.js";
import {
  TRANSACTION_ID,
  coreCardFixture,
  erpCardFixture,
  poolAccountFixture,
  statementSummaryFixture,
  supplierFixture,
  transactionDetailFixture,
  transactionFixture,
} from "./fixtures.js";

const Status = driftEnum(["draft", "active"] as const, { schema: "Supplier", field: "status" });
const CaseFree = driftEnum(["Active"] as const, { schema: "ErpCard", field: "status" }, { caseInsensitive: true });

describe("driftEnum", () => {
  it("accepts a listed value without a warning", () => {
    const result = parseWithDrift(Status, "active");
    expect(result).toEqual({ success: true, data: "active", drift: [] });
  });

  it("keeps an unlisted value and reports schema, field and value", () => {
    const result = parseWithDrift(Status, "archived");
    expect(result).toEqual({
      success: true,
      data: "archived",
      drift: [{ schema: "Supplier", field: "status", value: "archived", count: 1 }],
    });
  });

  it("treats case variants as known when case-insensitive, keeping the raw case", () => {
    expect(parseWithDrift(CaseFree, "ACTIVE")).toEqual({ success: true, data: "ACTIVE", drift: [] });
  });

  it("reports case variants as drift when case-sensitive", () => {
    expect(parseWithDrift(Status, "Active").drift).toEqual([
      { schema: "Supplier", field: "status", value: "Active", count: 1 },
    ]);
  });

  it("still rejects a non-string", () => {
    expect(parseWithDrift(Status, 3).success).toBe(false);
  });

  it("exports the listed values as a literal tuple", () => {
    const first: "purchase" = TRANSACTION_CATEGORIES[0];
    expect(first).toBe("purchase");
  });
});

describe("parseWithDrift", () => {
  it("deduplicates warnings per schema, field and value, counting occurrences", () => {
    const result = parseWithDrift(z.array(Status), ["archived", "archived", "gone", "active"]);
    expect(result.drift).toEqual([
      { schema: "Supplier", field: "status", value: "archived", count: 2 },
      { schema: "Supplier", field: "status", value: "gone", count: 1 },
    ]);
  });

  it("calls onDrift once per distinct warning", () => {
    const seen: DriftWarning[] = [];
    parseWithDrift(z.array(Status), ["x", "x"], (w) => seen.push(w));
    expect(seen).toEqual([{ schema: "Supplier", field: "status", value: "x", count: 2 }]);
  });

  it("returns the drift of a failed parse alongside the error", () => {
    const result = parseWithDrift(z.object({ status: Status, n: z.number() }), { status: "x", n: "no" });
    expect(result.success).toBe(false);
    expect(result.drift).toHaveLength(1);
  });

  it("reports the drift of a failed parse to onDrift too", () => {
    const seen: DriftWarning[] = [];
    parseWithDrift(z.object({ status: Status, n: z.number() }), { status: "x", n: "no" }, (w) => seen.push(w));
    expect(seen).toEqual([{ schema: "Supplier", field: "status", value: "x", count: 1 }]);
  });

  it("keeps the key order of objects nested several levels deep when zod normalises them", () => {
    // Six levels, each sent in the reverse of the schema's order; the innermost number comes as a string.
    let schema: z.ZodType = z.object({ a: z.string(), b: z.coerce.number() });
    let sent: Record<string, unknown> = { b: "5", a: "x" };
    let expected: Record<string, unknown> = { b: 5, a: "x" };
    for (let level = 0; level < 6; level += 1) {
      schema = z.object({ name: z.string(), inner: schema });
      sent = { inner: sent, name: `level-${level}` };
      expected = { inner: expected, name: `level-${level}` };
    }
    const result = parseWithDrift(schema, sent);
    expect(result.success && JSON.stringify(result.data)).toBe(JSON.stringify(expected));
  });

  it("keeps concurrent parses apart", async () => {
    const runs = await Promise.all(
      ["a", "b", "c"].map(async (value) => {
        await Promise.resolve();
        const result = parseWithDrift(Status, value);
        await Promise.resolve();
        return result.drift.map((w) => w.value);
      }),
    );
    expect(runs).toEqual([["a"], ["b"], ["c"]]);
  });

  it("drops warnings silently when no sink is bound", () => {
    expect(Status.parse("unlisted")).toBe("unlisted");
  });
});

describe("withDriftSink", () => {
  it("routes warnings of any parse inside it, including after an await", async () => {
    const seen: string[] = [];
    await withDriftSink(
      (w) => seen.push(w.value),
      async () => {
        Status.parse("before");
        await Promise.resolve();
        Status.parse("after");
      },
    );
    expect(seen).toEqual(["before", "after"]);
  });

  it("lets the innermost sink win", () => {
    const outer: string[] = [];
    const inner: string[] = [];
    withDriftSink(
      (w) => outer.push(w.value),
      () => withDriftSink((w) => inner.push(w.value), () => Status.parse("x")),
    );
    expect({ outer, inner }).toEqual({ outer: [], inner: ["x"] });
  });
});

describe("parseEach", () => {
  it("keeps an item's key order, nested objects included, when zod normalises it, so it serialises as its output form does", () => {
    // Members in an order of the provider's own, not the schema's; one numeric string zod turns into a number.
    const sent = transactionFixture({ erp_supplier: { status: "active", remote_id: "V-1" }, vat_amount: 5 });
    const reordered = Object.fromEntries(Object.entries(sent).reverse());
    const asString = { ...reordered, vat_amount: "5" };
    const [kept] = parseEach(TransactionSchema, [reordered]).valid;
    const [normalised] = parseEach(TransactionSchema, [asString]).valid;
    expect(kept).toBe(reordered);
    expect(JSON.stringify(normalised)).toBe(JSON.stringify(reordered));
    const viaParse = parseWithDrift(TransactionSchema, asString);
    expect(viaParse.success && JSON.stringify(viaParse.data)).toBe(JSON.stringify(reordered));
  });

  it("separates records that fail from valid ones and merges their drift", () => {
    const items = [
      transactionFixture({ transaction_category: "crypto_purchase" }),
      transactionFixture({ id: "not-a-uuid" }),
      transactionFixture({ transaction_category: "crypto_purchase" }),
    ];
    const result = parseEach(TransactionSchema, items);
    expect(result.valid.map((t) => t.id)).toEqual([TRANSACTION_ID, TRANSACTION_ID]);
    expect(result.invalid.map((i) => i.index)).toEqual([1]);
    expect(result.invalid[0]?.raw).toBe(items[1]);
    expect(result.drift).toEqual([
      { schema: "Transaction", field: "transaction_category", value: "crypto_purchase", count: 2 },
    ]);
  });
});

describe("drift sinks, bound and unbound", () => {
  const throwing = z.string().transform((): string => {
    throw new Error("transform failed");
  });

  it("reports an unlisted value of a case-insensitive enum in the case it was sent", () => {
    expect(parseWithDrift(CaseFree, "Frozen").drift).toEqual([
      { schema: "ErpCard", field: "status", value: "Frozen", count: 1 },
    ]);
  });

  it("keeps a parse's warnings to that parse, even inside withDriftSink", () => {
    const outer: string[] = [];
    const result = withDriftSink(
      (w) => outer.push(w.value),
      () => parseWithDrift(Status, "x"),
    );
    expect({ outer, drift: result.drift.map((w) => w.value) }).toEqual({ outer: [], drift: ["x"] });
  });

  it("binds no sink after a parse that throws, so withDriftSink still gets warnings after an await", async () => {
    expect(() => parseWithDrift(throwing, "x")).toThrow("transform failed");
    const seen: string[] = [];
    await withDriftSink(
      (w) => seen.push(w.value),
      async () => {
        await Promise.resolve();
        Status.parse("late");
      },
    );
    expect(seen).toEqual(["late"]);
  });

  it("lets withDriftSink run inside a parse take that parse's warnings only while it runs", () => {
    const inner: string[] = [];
    const schema = z.object({
      a: z.string().refine((value) => withDriftSink((w) => inner.push(w.value), () => Status.parse(value)) === value),
      b: Status,
    });
    const result = parseWithDrift(schema, { a: "in", b: "out" });
    expect({ inner, outer: result.drift.map((w) => w.value) }).toEqual({ inner: ["in"], outer: ["out"] });
  });

  it("gives a parse nested in another parse its own warnings and the outer one its own after it", () => {
    const schema = z.object({ a: z.string().refine((value) => parseWithDrift(Status, value).success), b: Status });
    expect(parseWithDrift(schema, { a: "in", b: "out" }).drift.map((w) => w.value)).toEqual(["out"]);
  });
});

describe("parseWithDrift deduplication and output", () => {
  it("counts warnings apart when only their schema, their field or the split between field and value differs", () => {
    const schema = z.object({
      p: driftEnum(["x"] as const, { schema: "A", field: "status" }),
      q: driftEnum(["x"] as const, { schema: "B", field: "status" }),
      r: driftEnum(["x"] as const, { schema: "A", field: "kind" }),
      s: driftEnum(["x"] as const, { schema: "A", field: "status.a" }),
    });
    const result = parseWithDrift(schema, { p: "a.b", q: "a.b", r: "a.b", s: "b" });
    expect(result.drift).toEqual([
      { schema: "A", field: "status", value: "a.b", count: 1 },
      { schema: "B", field: "status", value: "a.b", count: 1 },
      { schema: "A", field: "kind", value: "a.b", count: 1 },
      { schema: "A", field: "status.a", value: "b", count: 1 },
    ]);
  });

  it("returns an input already in output form as the same object", () => {
    const sent = transactionFixture();
    const result = parseWithDrift(TransactionSchema, sent);
    expect(result.success && result.data).toBe(sent);
  });

  it("leaves out a member zod strips and puts a member zod adds after the sent ones", () => {
    const schema = z.object({ added: z.string().default("d"), n: z.coerce.number() });
    const result = parseWithDrift(schema, { stripped: 1, n: "1" });
    expect(result.success && Object.keys(result.data)).toEqual(["n", "added"]);
  });

  it("keeps an own __proto__ member of a value kept as sent as a member", () => {
    const schema = z.object({ n: z.coerce.number(), extra: z.unknown() });
    const result = parseWithDrift(schema, { n: "1", extra: JSON.parse('{"__proto__":{"x":1}}') as unknown });
    const extra = result.success ? result.data.extra : undefined;
    expect(Object.keys(extra as object)).toEqual(["__proto__"]);
    expect(Object.getPrototypeOf(extra)).toBe(Object.prototype);
  });

  it("keeps an object that is not a plain record, such as a Date, as zod returns it", () => {
    const at = new Date(0);
    const result = parseWithDrift(z.object({ at: z.date(), n: z.coerce.number() }), { at, n: "1" });
    expect(result.success && result.data.at).toBe(at);
  });

  it("reorders the members of an object without a prototype too", () => {
    const sent = Object.assign(Object.create(null) as object, { b: "5", a: "x" });
    const result = parseWithDrift(z.object({ a: z.string(), b: z.coerce.number() }), sent);
    expect(result.success && Object.keys(result.data)).toEqual(["b", "a"]);
  });

  it("parses a member kept as sent that nests objects and arrays far deeper than any record, without overflowing the stack", () => {
    let objects: unknown = {};
    let arrays: unknown = [];
    for (let level = 0; level < 100_000; level += 1) {
      objects = { inner: objects };
      arrays = [arrays];
    }
    const schema = z.object({ n: z.coerce.number(), extra: z.unknown() });
    const result = parseWithDrift(schema, { n: "1", extra: { objects, arrays } });
    expect(result.success && result.data.n).toBe(1);
  });
});

describe("parseWithDrift key order in arrays", () => {
  it("keeps each array member's own key order when zod normalises them", () => {
    const schema = z.array(z.object({ a: z.string(), b: z.coerce.number() }));
    const result = parseWithDrift(schema, [{ b: "1", a: "x" }, { a: "y", b: "2" }]);
    expect(result.success && JSON.stringify(result.data)).toBe('[{"b":1,"a":"x"},{"a":"y","b":2}]');
  });
});

describe("listed response values", () => {
  // Each value the spec names, written out: one dropped from its list would be reported as drift on every record.
  const rows: [string, z.ZodType, (overrides: Record<string, unknown>) => unknown, string, string[]][] = [
    ["ERP card", ErpCardSchema, erpCardFixture, "status", ["Active", "Inactive", "Suspended", "Terminated", "Draft", "Cancelled"]],
    ["ERP card", ErpCardSchema, erpCardFixture, "card_type", ["Virtual", "Physical"]],
    ["ERP card", ErpCardSchema, erpCardFixture, "account_type", ["reloadable", "pool"]],
    ["core card", CoreCardSchema, coreCardFixture, "status", ["active", "inactive", "suspended", "terminated", "draft", "cancelled"]],
    ["core card", CoreCardSchema, coreCardFixture, "card_type", ["Virtual", "Physical"]],
    ["pool account", PoolAccountSchema, poolAccountFixture, "status", ["Active", "Inactive", "Suspended", "Terminated"]],
    ["supplier", SupplierSchema, supplierFixture, "status", ["draft", "active", "inactive"]],
    ["statement", StatementSummarySchema, statementSummaryFixture, "account_type", ["Card", "PoolAccount", "CompanyFundAccount", "Subsidiary"]],
    [
      "transaction",
      TransactionSchema,
      transactionFixture,
      "transaction_category",
      ["purchase", "refund", "reversal", "card_loading", "card_unloading", "cash_withdrawal", "deposit", "cashback", "account_transfer"],
    ],
    ["transaction", TransactionSchema, transactionFixture, "client_sync_status", ["not_synced", "synced", "outdated"]],
    ["transaction", TransactionSchema, transactionFixture, "erp_sync_status", ["draft", "pending", "validated", "not_validated", "success", "failed"]],
    [
      "transaction",
      TransactionSchema,
      transactionFixture,
      "approval_status",
      ["initiated", "pending", "approved", "rejected", "resolved", "review", "action_taken", "admin_approved", "external_dispute"],
    ],
    ["transaction read", TransactionDetailSchema, transactionDetailFixture, "transaction_status", ["draft", "pushed", "synced", "failed"]],
  ];
  for (const [resource, schema, fixture, field, values] of rows) {
    it(`a ${resource} reads every listed ${field} without drift`, () => {
      for (const value of values) {
        expect(parseWithDrift(schema, fixture({ [field]: value }))).toMatchObject({ success: true, drift: [], data: { [field]: value } });
      }
    });
  }
});

describe("parseWithDrift key order at the edges", () => {
  it("reorders an object at the deepest level a record the bridge accepts may have", () => {
    // MAX_RECORD_DEPTH levels of objects, the root among them; the innermost sent in reverse order with a numeric string.
    let schema: z.ZodType = z.object({ a: z.string(), b: z.coerce.number() });
    let sent: Record<string, unknown> = { b: "5", a: "x" };
    let expected: Record<string, unknown> = { b: 5, a: "x" };
    for (let level = 1; level < MAX_RECORD_DEPTH; level += 1) {
      schema = z.object({ inner: schema });
      sent = { inner: sent };
      expected = { inner: expected };
    }
    expect([nestedDeeperThan(sent), nestedDeeperThan({ inner: sent })]).toEqual([false, true]);
    const result = parseWithDrift(schema, sent);
    expect(result.success && JSON.stringify(result.data)).toBe(JSON.stringify(expected));
  });

  it("returns zod's object whole when what was sent was no plain object", () => {
    const fromArray = z.array(z.string()).transform((names) => ({ length: names.length, first: names[0] }));
    expect(parseWithDrift(fromArray, ["a", "b"])).toEqual({ success: true, data: { length: 2, first: "a" }, drift: [] });
    const filled = z.object({ a: z.string().default("x") }).default({ a: "x" });
    expect(parseWithDrift(z.object({ n: z.coerce.number(), inner: filled }), { n: "1", inner: undefined })).toEqual({
      success: true,
      data: { n: 1, inner: { a: "x" } },
      drift: [],
    });
  });
});
