import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import * as z from "zod";
import {
  ErpCardDetailSchema,
  ErpCardSchema,
  TransactionDetailSchema,
  TransactionSchema,
  driftEnum,
  optNumber,
  optStringish,
  parseEach,
  withDriftSink,
  type DriftReport,
  type DriftWarning,
} from "../../../shared/qashio/schemas/index.js";
import { conformsTo } from "../../../shared/qashio/schemas/conform.js";
import { harness, type Row } from "../../sandbox/helpers.js";
import { TRANSACTION_ID, transactionFixture } from "./fixtures.js";

/** Zod alone, drift collected through the async sink (independent of the fast path under test). */
function zodParse(schema: z.ZodType, value: unknown) {
  const drift: DriftWarning[] = [];
  const result = withDriftSink((w) => drift.push(w), () => schema.safeParse(value));
  return { result, drift };
}

/**
 * Deep equality where key order does not count but everything else does: prototypes, own members (an own
 * `__proto__` too), present `undefined`, holes, -0. (toStrictEqual also compares `constructor` members by reference.)
 */
function deepSame(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  const keysA = Reflect.ownKeys(a);
  const keysB = Reflect.ownKeys(b);
  if (keysA.length !== keysB.length) return false;
  return keysA.every((k) => {
    const da = Object.getOwnPropertyDescriptor(a, k);
    const db = Object.getOwnPropertyDescriptor(b, k);
    return da !== undefined && db !== undefined && da.enumerable === db.enumerable && deepSame(da.value, db.value);
  });
}

/** The contract: a conforming value is one zod accepts unchanged and without drift. */
function expectZodKeeps(schema: z.ZodType, value: unknown): void {
  const { result, drift } = zodParse(schema, value);
  expect(result.success).toBe(true);
  expect(deepSame(result.data, value), "zod's output deep-equals the input").toBe(true);
  expect(drift).toEqual([]);
}

interface Sample {
  readonly schema: z.ZodType;
  readonly records: readonly unknown[];
}

const SAMPLE_NAMES = ["transactions", "transactionDetails", "cards", "cardDetails"] as const;
type SampleName = (typeof SAMPLE_NAMES)[number];

/** Real sandbox records as the provider API sends them (list pages and single reads), with their schemas. */
let samples: Record<SampleName, Sample>;

beforeAll(async () => {
  const h = await harness();
  const read = async (path: string): Promise<Row> => {
    const { status, body } = await h.json(path);
    if (status !== 200) throw new Error(`${path} answered ${status}`);
    return body.data as Row;
  };
  const transactions = (await read("/public/v1/erp/transactions?page_size=100")) as Row[];
  const cards = (await read("/public/v1/erp/cards?page_size=100")) as Row[];
  samples = {
    transactions: { schema: TransactionSchema, records: transactions },
    transactionDetails: {
      schema: TransactionDetailSchema,
      records: await Promise.all(transactions.slice(0, 5).map((t) => read(`/public/v1/erp/transactions/${t.id}`))),
    },
    cards: { schema: ErpCardSchema, records: cards },
    cardDetails: {
      schema: ErpCardDetailSchema,
      records: await Promise.all(cards.slice(0, 5).map((c) => read(`/public/v1/erp/cards/${c.id}`))),
    },
  };
});

// ---------------------------------------------------------------------------------------------------------------
// Mutations of real sandbox records

type Path = readonly (string | number)[];

/** Every member path of `value` (objects and arrays, nested), root excluded. */
function pathsOf(value: unknown, prefix: Path = [], out: Path[] = []): Path[] {
  if (typeof value !== "object" || value === null) return out;
  const keys: (string | number)[] = Array.isArray(value) ? value.map((_, i) => i) : Object.keys(value);
  for (const key of keys) {
    const path = [...prefix, key];
    out.push(path);
    pathsOf((value as Record<string | number, unknown>)[key], path, out);
  }
  return out;
}

function at(root: unknown, path: Path): unknown {
  return path.reduce<unknown>((v, k) => (v as Record<string | number, unknown>)[k], root);
}

/** Adds an own, enumerable member even for `__proto__`, as JSON.parse does. */
function defineMember(target: object, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

const OPS = ["set", "set", "set", "delete", "extra", "recase", "stringify", "nonFinite", "wrap", "asRecord", "push"] as const;

interface Mutation {
  /** Pick among top-level members only (identity fields, enums), else among all nested members. */
  readonly top: boolean;
  readonly pick: number;
  readonly op: (typeof OPS)[number];
  readonly value: unknown;
  readonly key: string;
}

const trickyValue = fc.constantFrom<unknown>(
  "", "12", " 7 ", "1.5", "-3", "1e3", "true", "FALSE", "false", "null",
  true, false, null, undefined, 0, -0, NaN, Infinity, -Infinity, 12, -3.25,
  "CT", "CT 12", "CT12", "CA12", "CAX", "XX12", "not-a-uuid", "00000000-0000-0000-0000-000000000000",
  "5f0c7a5e-2d4b-4f6a-9b1e-3c8d2a7e9f1", "5F0C7A5E-2D4B-4F6A-9B1E-3C8D2A7E9F10", TRANSACTION_ID,
  "brand_new_value", "ACTIVE", "active", "Active", "Virtual", "PURCHASE", "purchase", "refund", "not_synced",
  "approved", "pending", [], {}, [{}], [null], { id: 5, name: 7 }, { label: "x" },
);

const valueArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: trickyValue },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  { weight: 1, arbitrary: fc.uuid() },
  { weight: 1, arbitrary: fc.string({ maxLength: 8 }) },
  { weight: 1, arbitrary: fc.double() },
);

const keyArb = fc.oneof(
  fc.constantFrom("__proto__", "constructor", "toString", "extra_field", "id", "status", "name", "0", ""),
  fc.string({ maxLength: 6 }),
);

const mutationArb: fc.Arbitrary<Mutation> = fc.record({
  top: fc.boolean(),
  pick: fc.nat(),
  op: fc.constantFrom(...OPS),
  value: valueArb,
  key: keyArb,
});

/** `String(value)`, or its JSON text when the value is an object a mutation gave an own `toString` member. */
function textOf(value: unknown): string {
  try {
    return String(value);
  } catch {
    return JSON.stringify(value) ?? "";
  }
}

function mutate(root: Record<string, unknown>, m: Mutation): void {
  const paths = m.top ? Object.keys(root).map((k) => [k]) : pathsOf(root);
  const path = paths[m.pick % paths.length] ?? [];
  const parent = (path.length > 1 ? at(root, path.slice(0, -1)) : root) as Record<string | number, unknown>;
  const last = path[path.length - 1] ?? "id";
  const old = parent[last];
  switch (m.op) {
    case "set":
      parent[last] = m.value;
      break;
    case "delete":
      if (Array.isArray(parent)) parent.splice(Number(last), 1);
      else delete parent[last];
      break;
    case "extra": {
      const target = typeof old === "object" && old !== null && !Array.isArray(old) ? old : root;
      defineMember(target, m.key, m.value);
      break;
    }
    case "recase":
      if (typeof old === "string") parent[last] = old === old.toUpperCase() ? old.toLowerCase() : old.toUpperCase();
      break;
    case "stringify":
      parent[last] = textOf(old);
      break;
    case "nonFinite":
      if (typeof old === "number") parent[last] = [NaN, Infinity, -Infinity][m.pick % 3];
      break;
    case "wrap":
      parent[last] = m.pick % 2 ? [old] : { value: old };
      break;
    case "asRecord": {
      // An entry list sent keyed by label (tolerated for segments); the first key may be anything, even `__proto__`.
      const [owner, name] = Array.isArray(old) ? [parent, last] : [root as Record<string | number, unknown>, "segments"];
      const list = owner[name];
      const keyOf = (e: unknown, i: number) => (i === 0 ? m.key : textOf((e as Row | null)?.label ?? i));
      if (Array.isArray(list)) owner[name] = Object.fromEntries(list.map((e, i) => [keyOf(e, i), e]));
      break;
    }
    case "push":
      if (Array.isArray(old)) old.push(old.length && m.pick % 2 ? structuredClone(old[0]) : m.value);
      break;
  }
}

const caseArb = fc.record({
  sample: fc.constantFrom(...SAMPLE_NAMES),
  pick: fc.nat(),
  mutations: fc.array(mutationArb, { minLength: 1, maxLength: 3 }),
});

function mutatedRecord(sample: Sample, pick: number, mutations: readonly Mutation[]): Record<string, unknown> {
  const record = structuredClone(sample.records[pick % sample.records.length]) as Record<string, unknown>;
  for (const m of mutations) mutate(record, m);
  return record;
}

describe("conformsTo on sandbox records", () => {
  it("accepts every unmutated sandbox transaction and ERP card, list and detail shapes", () => {
    for (const name of SAMPLE_NAMES) {
      const { schema, records } = samples[name];
      expect(records.length, name).toBeGreaterThan(0);
      const conforms = conformsTo(schema);
      for (const record of records) {
        expect(conforms(record), `${name} ${(record as Row).id}`).toBe(true);
        expectZodKeeps(schema, record);
      }
    }
  });

  it("accepts a mutated record only when zod succeeds, returns it unchanged and reports no drift", () => {
    const seen = { accepted: 0, rejected: 0 };
    fc.assert(
      fc.property(caseArb, ({ sample, pick, mutations }) => {
        const { schema } = samples[sample];
        const record = mutatedRecord(samples[sample], pick, mutations);
        if (!conformsTo(schema)(record)) {
          seen.rejected++;
          return;
        }
        seen.accepted++;
        expectZodKeeps(schema, record);
      }),
      { numRuns: 500 },
    );
    // Both sides ran: the property is not vacuous.
    expect(seen.accepted).toBeGreaterThan(20);
    expect(seen.rejected).toBeGreaterThan(20);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// parseEach keeps its results

/** parseEach as it was: every item through zod, drift deduplicated in first-seen order. */
function parseEachWithZod(schema: z.ZodType, items: readonly unknown[]) {
  const valid: unknown[] = [];
  const invalid: number[] = [];
  const counts = new Map<string, DriftReport>();
  items.forEach((raw, index) => {
    const { result, drift } = zodParse(schema, raw);
    if (result.success) valid.push(result.data);
    else invalid.push(index);
    for (const w of drift) {
      const key = JSON.stringify([w.schema, w.field, w.value]);
      const seen = counts.get(key);
      counts.set(key, { ...w, count: (seen?.count ?? 0) + 1 });
    }
  });
  return { valid, invalid, drift: [...counts.values()] };
}

describe("parseEach with the conformance fast path", () => {
  it("gives the valid items, invalid indexes and drift of zod alone on pages of mutated records", () => {
    const pageArb = fc.record({
      sample: fc.constantFrom<SampleName>("transactions", "cards"),
      items: fc.array(fc.record({ pick: fc.nat(), mutations: fc.array(mutationArb, { maxLength: 2 }) }), {
        minLength: 1,
        maxLength: 8,
      }),
    });
    fc.assert(
      fc.property(pageArb, ({ sample, items }) => {
        const { schema } = samples[sample];
        const page = items.map(({ pick, mutations }) => mutatedRecord(samples[sample], pick, mutations));
        const reported: DriftReport[] = [];
        const fast = parseEach(schema, page, (w) => reported.push(w));
        const reference = parseEachWithZod(schema, page);
        expect(fast.valid).toEqual(reference.valid);
        expect(fast.invalid.map((i) => i.index)).toEqual(reference.invalid);
        expect(fast.drift).toEqual(reference.drift);
        expect(reported).toEqual(reference.drift);
      }),
      { numRuns: 150 },
    );
  });

  it("keeps a conforming item as it is and parses the others with zod", () => {
    const plain = transactionFixture();
    const numericText = transactionFixture({ transaction_amount: "54.50" });
    const unlisted = transactionFixture({ transaction_category: "loyalty_bonus" });
    const { valid, invalid, drift } = parseEach(TransactionSchema, [plain, numericText, unlisted]);
    expect(invalid).toEqual([]);
    expect(valid[0]).toBe(plain);
    expect(valid[1]).not.toBe(numericText);
    expect(valid[1]?.transaction_amount).toBe(54.5);
    expect(drift).toEqual([{ schema: "Transaction", field: "transaction_category", value: "loyalty_bonus", count: 1 }]);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Schema kinds

const UUID = "5f0c7a5e-2d4b-4f6a-9b1e-3c8d2a7e9f10";

/** Asserts the predicate's answer for each value, and for every "true" that zod agrees. */
function expectConforms(schema: z.ZodType, cases: readonly (readonly [unknown, boolean])[]): void {
  const conforms = conformsTo(schema);
  for (const [value, expected] of cases) {
    expect(conforms(value), JSON.stringify(value) ?? String(value)).toBe(expected);
    if (expected) expectZodKeeps(schema, value);
  }
}

describe("conformsTo per schema kind", () => {
  it("accepts strings and runs their format and length checks", () => {
    expectConforms(z.string(), [["a", true], ["", true], [1, false], [null, false], [undefined, false]]);
    expectConforms(z.guid(), [[UUID, true], ["not-a-uuid", false], [`${UUID} `, false]]);
    expectConforms(z.string().regex(/^CT\S+$/), [["CT123", true], ["CT", false], ["XT123", false], [123, false]]);
    expectConforms(z.string().min(2).max(3), [["ab", true], ["abc", true], ["a", false], ["abcd", false]]);
    expectConforms(z.string().startsWith("CA"), [["CA1", true], ["XA1", false]]);
  });

  it("rejects strings whose schema rewrites or runs code it does not know", () => {
    expectConforms(z.string().trim(), [["a", false]]);
    expectConforms(z.string().toLowerCase(), [["a", false]]);
    expectConforms(z.url(), [["https://example.com/", false]]);
    expectConforms(z.string().refine(() => true), [["a", false]]);
    expectConforms(z.coerce.string(), [["a", false]]);
    // One check it knows does not vouch for the others.
    expectConforms(z.string().min(1).trim(), [[" a ", false]]);
  });

  it("skips a check whose own condition says it does not apply, as zod does", () => {
    // zod's parameter types leave `when` out of a length check's options, but its checks honour it.
    const never = { message: "too short", when: () => false };
    expectConforms(z.string().min(5, never), [["a", true]]);
  });

  it("accepts finite numbers only and respects number checks", () => {
    expectConforms(z.number(), [[1.5, true], [0, true], [-0, true], [NaN, false], [Infinity, false], ["1", false]]);
    expectConforms(z.number().int().min(3), [[3, true], [4, true], [2, false], [3.5, false]]);
    expectConforms(z.int(), [[7, true], [7.5, false]]);
    expectConforms(z.number().max(5), [[5, true], [6, false]]);
    expectConforms(z.number().multipleOf(2), [[4, true], [3, false]]);
    expectConforms(z.coerce.number(), [[1, false]]);
  });

  it("accepts booleans, null, literals and enums by value", () => {
    expectConforms(z.boolean(), [[true, true], [false, true], ["true", false], [0, false]]);
    expectConforms(z.null(), [[null, true], [undefined, false], ["", false]]);
    expectConforms(z.literal("a"), [["a", true], ["b", false]]);
    expectConforms(z.literal([1, "x"]), [[1, true], ["x", true], ["1", false]]);
    expectConforms(z.enum(["draft", "active"]), [["active", true], ["ACTIVE", false]]);
    expectConforms(z.enum(["a"]).refine(() => false), [["a", false]]);
    expectConforms(z.literal("a").refine(() => false), [["a", false]]);
  });

  it("accepts undefined for optional and null for nullable, nothing else extra", () => {
    expectConforms(z.string().optional(), [[undefined, true], ["a", true], [null, false]]);
    expectConforms(z.string().nullable(), [[null, true], ["a", true], [undefined, false]]);
    expectConforms(z.string().nullish(), [[null, true], [undefined, true], [1, false]]);
    expectConforms(z.string().default("x"), [[undefined, false]]);
    expectConforms(z.string().default("x").optional(), [[undefined, false]]);
  });

  it("accepts anything for unknown and any", () => {
    expectConforms(z.unknown(), [[1, true], [{ a: [1] }, true], [undefined, true], [NaN, true]]);
    expectConforms(z.any(), [["x", true], [null, true]]);
  });

  it("rejects unknown and any with checks of their own", () => {
    expectConforms(z.unknown().refine(() => false), [[1, false], [undefined, false]]);
    expectConforms(z.any().refine(() => false), [["x", false]]);
  });

  it("rejects a value only a codec member of the union takes: zod would rewrite it", () => {
    expectConforms(optNumber(), [[12, true], [null, true], [undefined, true], ["12", false], ["", false], [NaN, false]]);
    expectConforms(optStringish(), [["12", true], [12, false]]);
  });

  it("lets the first union member that may take the value decide, as zod returns the first success", () => {
    const codecFirst = z.union([
      z.codec(z.string().regex(/^\d+$/), z.number(), { decode: Number, encode: String }),
      z.string(),
    ]);
    // z.string() alone would keep "12", but zod answers with the codec's 12.
    expectConforms(codecFirst, [["12", false], ["ab", false], [12, false]]);
    expectConforms(z.union([z.number(), z.string()]), [["a", true], [1, true], [true, false]]);
    expectConforms(z.union([z.array(z.string()), z.record(z.string(), z.string())]), [[["a"], true], [{ k: "a" }, true]]);
    // A member that takes nothing, or only some values of a kind, still lets the next one decide on the rest.
    expectConforms(z.union([z.never(), z.string()]), [["a", true]]);
    expectConforms(z.union([z.literal("a"), z.number()]), [["a", true], [1, true], ["b", false]]);
  });

  it("lets a union member that only rewrites null decide on null", () => {
    expectConforms(z.union([z.null().transform(() => 0), z.unknown()]), [[null, false], ["a", true], [{}, true]]);
  });

  it("lets a union member whose nullable or optional input is rewritten decide on null and undefined", () => {
    // zod answers with the transform's "none": the z.null() or z.undefined() member after it must not decide.
    expectConforms(z.union([z.string().nullable().transform((s) => s ?? "none"), z.null()]), [[null, false]]);
    expectConforms(z.union([z.string().optional().transform((s) => s ?? "none"), z.undefined()]), [[undefined, false]]);
  });

  it("passes a value of another kind on from a drift enum or object member to the next one", () => {
    const status = driftEnum(["draft"] as const, { schema: "S", field: "status" });
    expectConforms(z.union([status, z.number()]), [[1, true], ["draft", true]]);
    expectConforms(z.union([z.looseObject({ id: z.string() }), z.string()]), [["a", true], [{ id: "a" }, true]]);
  });

  it("lets a drift enum first in a union decide on every string (zod reports its unlisted values)", () => {
    const status = driftEnum(["draft"] as const, { schema: "S", field: "status" });
    expectConforms(z.union([status, z.string()]), [["draft", true], ["archived", false]]);
  });

  it("rejects containers with checks other than an array's length bounds", () => {
    expectConforms(z.array(z.number()).refine(() => true), [[[1], false]]);
    expectConforms(z.array(z.number()).superRefine(() => undefined), [[[1], false]]);
    expectConforms(z.looseObject({ id: z.string() }).superRefine(() => undefined), [[{ id: "a" }, false]]);
    // Only length bounds: any other check on a container (it would not apply to one anyway) leaves it to zod.
    expectConforms(z.array(z.number()).check(z.multipleOf(2) as unknown as z.core.$ZodCheck<number[]>), [[[2], false]]);
    // A length bound does not vouch for the other checks.
    expectConforms(
      z
        .array(z.number())
        .min(1)
        .overwrite((a) => a.map((n) => n * 2)),
      [[[1], false]],
    );
  });

  it("rejects discriminated and exclusive unions (zod picks their member by other rules)", () => {
    const a = z.object({ kind: z.literal("a") });
    expectConforms(z.discriminatedUnion("kind", [a]), [[{ kind: "a" }, false]]);
    expectConforms(z.xor([z.string(), z.number()]), [["a", false]]);
  });

  it("checks loose object members and passes unknown members through", () => {
    const loose = z.looseObject({ id: z.string(), note: z.string().nullish() });
    expectConforms(loose, [
      [{ id: "a", note: "n" }, true],
      [{ id: "a" }, true],
      [{ id: "a", note: undefined }, true],
      [{ id: "a", extra: { deep: [1] } }, true],
      [{ note: "n" }, false],
      [{ id: 1 }, false],
      [{ id: "a", note: 5 }, false],
      [JSON.parse('{"id":"a","__proto__":{"x":1}}'), false],
      [Object.assign(Object.create(null), { id: "a" }), false],
      [new (class Thing { id = "a"; })(), false],
      [["a"], false],
      [null, false],
    ]);
  });

  it("keeps a present undefined only where zod keeps it", () => {
    expectConforms(z.looseObject({ u: z.unknown() }), [[{ u: undefined }, true], [{}, false], [{ u: 1 }, true]]);
    const exact = z.looseObject({ e: z.string().exactOptional() });
    expectConforms(exact, [[{}, true], [{ e: "a" }, true], [{ e: undefined }, false]]);
  });

  it("rejects members a strip or strict object would drop or refuse, and checks catchall members", () => {
    expectConforms(z.object({ id: z.string() }), [[{ id: "a" }, true], [{ id: "a", extra: 1 }, false]]);
    expectConforms(z.strictObject({ id: z.string() }), [[{ id: "a" }, true], [{ id: "a", extra: 1 }, false]]);
    const numbers = z.object({ id: z.string() }).catchall(z.number());
    expectConforms(numbers, [[{ id: "a", n: 1 }, true], [{ id: "a", n: "1" }, false]]);
    expectConforms(z.looseObject({ id: z.string() }).refine(() => true), [[{ id: "a" }, false]]);
    // A catchall member named __proto__ is dropped by zod; an unknown catchall with a check of its own runs it.
    expectConforms(numbers, [[JSON.parse('{"id":"a","__proto__":1}'), false]]);
    expectConforms(z.object({}).catchall(z.unknown().refine(() => false)), [[{ a: 1 }, false], [{}, true]]);
  });

  it("rejects an object without a defaulted or caught member (zod fills it in)", () => {
    expectConforms(z.looseObject({ d: z.string().default("x") }), [[{}, false]]);
    expectConforms(z.looseObject({ c: z.string().catch("x") }), [[{}, false]]);
  });

  it("rejects an object without a member optional on its output side only (zod runs its input side on undefined)", () => {
    // zod's types take no pipe into an optional schema, its parser does: optin unset, optout "optional".
    const optionalOut = z.string().pipe(z.string().optional() as unknown as z.ZodString);
    expectConforms(z.looseObject({ p: optionalOut }), [[{}, false]]);
  });

  it("rejects shapes with keys zod reads from the prototype", () => {
    expectConforms(z.looseObject({ constructor: z.string().optional() }), [[{ constructor: "a" }, false]]);
  });

  it("rejects shapes with symbol keys (zod checks them, JSON never has them)", () => {
    const key = Symbol("key");
    expectConforms(z.looseObject({ [key]: z.string() }), [[{}, false], [{ [key]: "a" }, false]]);
  });

  it("checks every array element and record value", () => {
    expectConforms(z.array(z.number()), [[[], true], [[1, 2], true], [[1, "2"], false], [{ 0: 1 }, false]]);
    expectConforms(z.array(z.number()).min(1), [[[1], true], [[], false], [["1"], false]]);
    expectConforms(z.array(z.string()).max(2).length(2), [[["a", "b"], true], [["a"], false], [["a", "b", "c"], false]]);
    expectConforms(z.array(z.guid()).min(1), [[[UUID], true], [["x"], false]]);
    expectConforms(z.array(z.number()).nonempty(), [[[1], true], [[], false]]);
    const record = z.record(z.string(), z.number().nullable());
    expectConforms(record, [
      [{}, true],
      [{ a: 1, b: null }, true],
      [{ a: "1" }, false],
      [JSON.parse('{"__proto__":1}'), false],
      [[1], false],
    ]);
    expectConforms(z.record(z.enum(["a"]), z.number()), [[{ a: 1 }, false]]);
    expectConforms(z.record(z.string().min(3), z.number()), [[{ x: 1 }, false]]);
    expectConforms(z.record(z.guid(), z.number()), [[{ x: 1 }, false]]);
    // zod's isPlainObject turns away an object with its own function `constructor`.
    expectConforms(z.record(z.string(), z.unknown()), [[{ constructor: function make() {} }, false], [{ constructor: "x" }, true]]);
  });

  it("accepts listed drift enum values only, in any case when case-insensitive", () => {
    const strict = driftEnum(["draft", "active"] as const, { schema: "S", field: "status" });
    const caseFree = driftEnum(["Active"] as const, { schema: "S", field: "status" }, { caseInsensitive: true });
    expectConforms(strict, [["active", true], ["Active", false], ["archived", false], [1, false]]);
    expectConforms(caseFree, [["Active", true], ["ACTIVE", true], ["active", true], ["Gone", false]]);
    expectConforms(strict.nullish(), [[null, true], ["draft", true], ["x", false]]);
  });

  it("compiles recursive shapes", () => {
    const Node = z.looseObject({
      name: z.string(),
      get children(): z.ZodOptional<z.ZodArray<typeof Node>> {
        return z.array(Node).optional();
      },
    });
    expectConforms(Node, [
      [{ name: "a", children: [{ name: "b" }, { name: "c", children: [] }] }, true],
      [{ name: "a", children: [{ name: 1 }] }, false],
    ]);
  });

  it("lets a recursive reference met while its union compiles decide on any kind", () => {
    const Tree = z.looseObject({
      n: z.string(),
      t: z
        .string()
        .transform((s) => s.toUpperCase())
        .optional(),
      get next(): z.ZodOptional<z.ZodUnion<readonly [typeof Tree, z.ZodRecord<z.ZodString, z.ZodUnknown>]>> {
        return z.union([Tree, z.record(z.string(), z.unknown())]).optional();
      },
    });
    // zod parses `next` with Tree first, which upper-cases `t`: the record member after it must not decide.
    expectConforms(Tree, [
      [{ n: "a", next: { n: "b" } }, true],
      [{ n: "a", next: { n: "b", t: "x" } }, false],
    ]);
  });

  it("rejects kinds it does not know", () => {
    expectConforms(z.date(), [[new Date(0), false]]);
    expectConforms(z.string().transform((s) => s), [["a", false]]);
    expectConforms(z.string().pipe(z.string()), [["a", false]]);
    expectConforms(z.tuple([z.string()]), [[["a"], false]]);
    expectConforms(z.lazy(() => z.string()), [["a", false]]);
    const martian = { _zod: { def: { type: "martian" }, traits: new Set<string>() } } as unknown as z.ZodType;
    expect(conformsTo(martian)("anything")).toBe(false);
  });

  it("leaves objects to zod when code generation is off", () => {
    const before = z.config().jitless;
    z.config({ jitless: true });
    try {
      expect(conformsTo(z.looseObject({ id: z.string() }))({ id: "a" })).toBe(false);
    } finally {
      z.config({ jitless: before });
    }
  });

  it("compiles once per schema", () => {
    expect(conformsTo(TransactionSchema)).toBe(conformsTo(TransactionSchema));
  });
});
