/**
 * docs/spec-gaps.md's "Schemas" section held to the code: the bounds, prefixes, examples, value lists, error codes and
 * messages it gives a reader, run through the schemas and checks it names, and the code it cites for each choice. The
 * behaviour tests count in the constants; these read what the doc states.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import * as z from "zod";
import { parseItems } from "../../shared/qashio/parse.js";
import {
  CARD_ACCOUNT_TYPES,
  CardBalanceEntrySchema,
  CardIdSchema,
  CoreCardSchema,
  ERROR_CODES,
  ErpCardSchema,
  ErrorEnvelopeSchema,
  MAX_REFERENCE_LENGTH,
  POOL_ACCOUNT_STATUS_FILTERS,
  QashioIdSchema,
  TokenSetSchema,
  TransactionSchema,
  parseEach,
  successEnvelope,
  type DriftReport,
} from "../../shared/qashio/schemas/index.js";
import {
  AcknowledgeBodySchema,
  CardBalanceQuerySchema,
  ChangeStatusBodySchema,
  ErpCardsQuerySchema,
  InviteBodySchema,
  MasterDataQuerySchema,
  PoolAccountsQuerySchema,
  StatementsQuerySchema,
  TokenRequestSchema,
  TransactionsQuerySchema,
  UpdateCardBodySchema,
  UpdateVelocityLimitBodySchema,
  SUSPEND_STATUS,
  checkBody,
  checkQuery,
  type CheckResult,
} from "../../shared/qashio/schemas/queries.js";
import { firstTextsSaid, textsSaid } from "../doc-text.js";
import { ROOT, expectCitationsHold, specGapsSection } from "../spec-gaps-section.js";
import { transactionFixture } from "./schemas/fixtures.js";

/** The "Schemas" section, line breaks read as spaces. */
const SCHEMAS = specGapsSection("Schemas");

/** Where the section's bare file names live ("Choices made in `shared/qashio/schemas/`"). */
const SCHEMAS_DIR = "shared/qashio/schemas/";

/** The groups of every match of `pattern` in the section, as written; fails when it matches nowhere. */
const said = (pattern: RegExp): string[][] => textsSaid(SCHEMAS, pattern);

/** The groups of the first match of `pattern` in the section; fails when it matches nowhere. */
const saidFirst = (pattern: RegExp): string[] => firstTextsSaid(SCHEMAS, pattern);

/** A transaction's `card_last_four` as the schema reads `value`. */
const lastFourOf = (value: unknown): unknown => TransactionSchema.parse(transactionFixture({ card_last_four: value })).card_last_four;

describe("docs/spec-gaps.md, Schemas: strings for booleans and numbers", () => {
  it("pads the four-digit codes it says, and gives the numbers it names as exceptions their decimal text", () => {
    for (const [number, text] of said(/so `(\d+)` is `"(\d{4})"`/)) expect(lastFourOf(Number(number))).toBe(text);
    for (const [number, text] of said(/MCC `(\d+)` is `"(\d{4})"`/)) {
      expect(TransactionSchema.parse(transactionFixture({ mcc_code: Number(number) })).mcc_code).toBe(text);
    }
    const [exceptions = ""] = saidFirst(/\(([^()]*) is its decimal text\)/);
    const [bound = ""] = saidFirst(/one of (\d+) or more/);
    expect(lastFourOf(Number(bound) - 1)).toBe(String(Number(bound) - 1));
    const named: Record<string, number> = { negative: -42, "or more": Number(bound), "not whole": 42.5 };
    for (const [words, number] of Object.entries(named)) {
      expect(exceptions, words).toContain(words);
      expect(lastFourOf(number), words).toBe(String(number));
    }
  });
});

/** The "Error codes of query/body checks" entry: each code it names with the cases it lists for it. */
function casesByCode(): Map<string, string> {
  const [entry = ""] = saidFirst(/\*\*Error codes of query\/body checks\*\*(.*?)- \*\*Write bodies\.\*\*/);
  return new Map(textsSaid(entry, /`([A-Z_]+)` \(([^()]*)\)/).map(([code = "", cases = ""]) => [code, cases]));
}

describe("docs/spec-gaps.md, Schemas: error codes of query and body checks", () => {
  /** Each case the doc lists, said as the doc says it, with a query or body that is that case. */
  const CASES: readonly (readonly [string, string, () => CheckResult<unknown>])[] = [
    ["INVALID_ENUM", "value outside an enum", () => checkQuery(ErpCardsQuerySchema, { status: "Active" })],
    ["INVALID_ENUM", "unsupported `grant_type`", () => checkBody(TokenRequestSchema, { grant_type: "password" })],
    ["OUT_OF_RANGE", "`page=0`", () => checkQuery(TransactionsQuerySchema, new URLSearchParams("page=0"))],
    ["OUT_OF_RANGE", "negative amount", () => checkBody(UpdateCardBodySchema, { auto_top_up_amount: -1 })],
    ["INVALID_FORMAT", "not a number", () => checkQuery(TransactionsQuerySchema, { page: "two" })],
    ["INVALID_FORMAT", "integer", () => checkQuery(TransactionsQuerySchema, { page_size: "1.5" })],
    ["INVALID_FORMAT", "not a boolean", () => checkQuery(TransactionsQuerySchema, { exclude_from_sync: "yes" })],
    ["INVALID_FORMAT", "malformed date", () => checkQuery(ErpCardsQuerySchema, { issued_time_from: "2026-02-30" })],
    ["INVALID_FORMAT", "month", () => checkQuery(StatementsQuerySchema, { month: "2026-13" })],
    ["INVALID_FORMAT", "last four", () => checkQuery(ErpCardsQuerySchema, { last4: "123" })],
    ["INVALID_FORMAT", "UUID", () => checkBody(AcknowledgeBodySchema, { transaction_ids: ["CT1"] })],
    ["INVALID_FORMAT", "a repeated key", () => checkQuery(StatementsQuerySchema, new URLSearchParams("month=2026-01&month=2026-02"))],
    ["REQUIRED", "missing field", () => checkBody(TokenRequestSchema, { grant_type: "refresh_token", client_id: "c", client_secret: "s" })],
    ["REQUIRED", "empty list", () => checkBody(InviteBodySchema, { end_user: [] })],
    ["REQUIRED", "empty text", () => checkBody(UpdateCardBodySchema, { nickname: "" })],
    ["REQUIRED", "the missing end of a both-or-neither range", () => checkQuery(MasterDataQuerySchema, { updated_at_from: "2026-01-01" })],
    ["REQUIRED", "`nickname`/`last_four` both missing with `field: null`", () => checkQuery(CardBalanceQuerySchema, { status: "active" })],
    ["REQUIRED", "a write body with no field: `field: null`", () => checkBody(UpdateVelocityLimitBodySchema, {})],
    ["INVALID_RANGE", "inverted date range, reported on the `_to` field", () => checkQuery(PoolAccountsQuerySchema, { created_time_from: "2026-02-01", created_time_to: "2026-01-01" })],
  ];

  it("names the codes the checks add to the spec's, and every case it lists answers with its code", () => {
    const cases = casesByCode();
    expect(new Set(cases.keys())).toEqual(new Set(CASES.map(([code]) => code)));
    for (const code of cases.keys()) expect(ERROR_CODES).toContain(code);
    for (const [code, words, check] of CASES) {
      expect(cases.get(code), `${code}: ${words}`).toContain(words);
      const result = check();
      expect(result.ok, words).toBe(false);
      if (!result.ok) expect(result.errors.map((e) => e.code), words).toEqual([code]);
    }
    const [nullField = ""] = saidFirst(/`nickname`\/`last_four` both missing with `field: (null)`/);
    const both = checkQuery(CardBalanceQuerySchema, { status: "active" });
    expect(both.ok ? [] : both.errors.map((e) => String(e.field))).toEqual([nullField]);
  });

  it("reports the repeated key in the words it quotes", () => {
    const [words = ""] = saidFirst(/A repeated query key is rejected \(`INVALID_FORMAT`, "([^"]+)"\)/);
    const result = checkQuery(StatementsQuerySchema, new URLSearchParams("month=2026-01&month=2026-02"));
    expect(result.ok ? [] : result.errors).toEqual([{ field: "month", code: "INVALID_FORMAT", message: `month ${words}` }]);
  });
});

describe("docs/spec-gaps.md, Schemas: identity", () => {
  it("cites files that exist and hold the names it gives, a bare file name being one of shared/qashio/schemas/", () => {
    const bare = said(/`([\w-]+\.ts)`/).map(([file = ""]) => file).filter((file) => file !== "bridge.ts");
    for (const file of bare) expect(existsSync(join(ROOT, SCHEMAS_DIR, file)), file).toBe(true);
    const placed = SCHEMAS.replace(/`([\w-]+\.ts)`/g, (cited, file: string) => (file === "bridge.ts" ? cited : `\`${SCHEMAS_DIR}${file}\``));
    expect(expectCitationsHold(placed)).toBeGreaterThanOrEqual(bare.length);
  });

  it("bounds references at the length it says, under the constant it names", () => {
    const [bound = ""] = saidFirst(/at most (\d+) characters \(`MAX_REFERENCE_LENGTH`/);
    expect(Number(bound)).toBe(MAX_REFERENCE_LENGTH);
    for (const [schema, prefix] of [[QashioIdSchema, "CT"], [CardIdSchema, "CA"]] as const) {
      expect(schema.safeParse(prefix.padEnd(MAX_REFERENCE_LENGTH, "7")).success, prefix).toBe(true);
      expect(schema.safeParse(prefix.padEnd(MAX_REFERENCE_LENGTH + 1, "7")).success, prefix).toBe(false);
    }
  });

  it("holds each reference to the prefix it says, with no blank, control character or lone surrogate after it", () => {
    const [transactionPrefix = ""] = saidFirst(/`qashio_id` must start with `(\w+)`/);
    const [cardPrefix = ""] = saidFirst(/card ids \(ERP card, core card, card balance entry\) must start with `(\w+)`/);
    for (const [schema, prefix] of [[QashioIdSchema, transactionPrefix], [CardIdSchema, cardPrefix]] as const) {
      expect(schema.safeParse(`${prefix}10023456`).success, prefix).toBe(true);
      for (const after of [" 1", "\u001b[0m", "\u0000", "\ud800"]) expect(schema.safeParse(`${prefix}${after}`).success, JSON.stringify(after)).toBe(false);
    }
    for (const id of [`${cardPrefix}1`, `${transactionPrefix}1`]) {
      const read = [ErpCardSchema.safeParse({ id }), CoreCardSchema.safeParse({ id }), CardBalanceEntrySchema.safeParse({ card_id: id })];
      expect(read.map((r) => r.success), id).toEqual([id.startsWith(cardPrefix), id.startsWith(cardPrefix), id.startsWith(cardPrefix)]);
    }
  });

  it("takes a UUID with unusual version and variant bits, as it says", () => {
    said(/`z\.guid\(\)` \(8-4-4-4-12 hex\) rather than an RFC 9562 version\/variant check/);
    expect(TransactionSchema.safeParse(transactionFixture({ id: "123e4567-e89b-f2d3-0456-426614174000" })).success).toBe(true);
    expect(TransactionSchema.safeParse(transactionFixture({ id: "123e4567-e89b-f2d3-0456-42661417400" })).success).toBe(false);
  });

  it("reads an empty parent reference as null", () => {
    said(/`parent_id` \/ `parent_qashio_id` accept `null`, absent, or `""` \(read as `null`\)/);
    expect(TransactionSchema.parse(transactionFixture({ parent_id: "", parent_qashio_id: "" }))).toMatchObject({ parent_id: null, parent_qashio_id: null });
  });
});

describe("docs/spec-gaps.md, Schemas: lenient values and reasons", () => {
  it("reads the numeric strings it gives as the numbers they spell, and refuses the boolean spellings it names", () => {
    for (const [text, number] of said(/`"([\d.-]+)"` is `([\d.-]+)`/)) {
      expect(TransactionSchema.parse(transactionFixture({ transaction_amount: text })).transaction_amount).toBe(Number(number));
    }
    const [first = "", second = ""] = saidFirst(/`"(\w+)"`\/`"(\w+)"` are not booleans/);
    for (const text of [first, second]) expect(TransactionSchema.safeParse(transactionFixture({ visible: text })).success, text).toBe(false);
    expect(TransactionSchema.parse(transactionFixture({ visible: "TrUe" })).visible).toBe(true);
  });

  it("gives the quarantine reason it quotes for an amount, never the value sent", () => {
    const [reason = ""] = saidFirst(/\(`(transaction_amount: [^`]+)`\) rather than zod's bare `Invalid input`/);
    const { invalid } = parseItems(TransactionSchema, [transactionFixture({ transaction_amount: "twelve" })], { method: "GET", path: "/t", status: 200 });
    expect(invalid.map(({ issues }) => issues.map((i) => `${i.path}: ${i.message}`))).toEqual([[reason]]);
    expect(reason).not.toContain("twelve");
  });

  it("reports drift of a nested enum on the dotted field it gives as an example", () => {
    const [field = ""] = saidFirst(/field dotted for nested objects, e\.g\. `([\w.]+)`/);
    const [parent = "", member = ""] = field.split(".");
    const drift: DriftReport[] = [];
    parseEach(TransactionSchema, [transactionFixture({ [parent]: { [member]: "archived" } })], (w) => drift.push(w));
    expect(drift).toEqual([{ schema: "Transaction", field, value: "archived", count: 1 }]);
  });
});

describe("docs/spec-gaps.md, Schemas: value lists and queries", () => {
  it("lists the pool account status filters the code takes, and refuses the suspended one it names", () => {
    const [list = ""] = saidFirst(/The pool account `status` filter takes only the §4\.5 values \(([^)]+)\)/);
    expect([...list.matchAll(/`(\w+)`/g)].map((m) => m[1])).toEqual([...POOL_ACCOUNT_STATUS_FILTERS]);
    const [refused = ""] = saidFirst(/`(\w+)` is a 400 like any unlisted value/);
    const result = checkQuery(PoolAccountsQuerySchema, { status: refused });
    expect(result.ok ? [] : result.errors.map((e) => e.code)).toEqual(["INVALID_ENUM"]);
  });

  it("lists the ERP card account types the code lists", () => {
    const [first = "", second = ""] = saidFirst(/ERP card `account_type` lists only `(\w+)` and `(\w+)`/);
    expect([first, second]).toEqual([...CARD_ACCOUNT_TYPES]);
  });

  it("takes exactly true or false in boolean filters, the other spellings it names INVALID_FORMAT", () => {
    const [first = "", second = "", code = ""] = saidFirst(/any other spelling \(`(\w+)`, `(\w+)`\) is `(\w+)`/);
    for (const value of [first, second]) {
      const result = checkQuery(MasterDataQuerySchema, { is_deleted: value });
      expect(result.ok ? [] : result.errors.map((e) => e.code), value).toEqual([code]);
    }
    for (const value of ["true", "false"]) expect(checkQuery(TransactionsQuerySchema, { exclude_from_sync: value }).ok).toBe(true);
  });

  it("takes months 01 to 12 as it says", () => {
    const [first = "", last = ""] = saidFirst(/months `YYYY-MM` with month (\d\d)-(\d\d)/);
    const ok = (month: string): boolean => checkQuery(StatementsQuerySchema, { month: `2026-${month}` }).ok;
    expect([ok(first), ok(last), ok(String(Number(first) - 1).padStart(2, "0")), ok(String(Number(last) + 1))]).toEqual([true, true, false, false]);
  });

  it("refuses an inverted range on the lists and ranges it names, and no other", () => {
    const [named = ""] = saidFirst(/Inverted ranges are rejected only where the spec says so \(([^)]+)\)/);
    const QUERIES = { "ERP cards": ErpCardsQuerySchema, "pool accounts": PoolAccountsQuerySchema, transactions: TransactionsQuerySchema, "master-data": MasterDataQuerySchema };
    const refused: string[] = [];
    for (const [list, schema] of Object.entries(QUERIES)) {
      for (const from of Object.keys(schema.shape).filter((key) => key.endsWith("_from"))) {
        const to = from.replace(/_from$/, "_to");
        const result = checkQuery(schema, { [from]: "2026-02-01", [to]: "2026-01-01" });
        if (!result.ok && result.errors.some((e) => e.code === "INVALID_RANGE" && e.field === to)) refused.push(`${list} ${from.split("_")[0] ?? ""}`);
      }
    }
    const said_ = named.split(", ").flatMap((part: string) => {
      const [, list = "", ranges = ""] = /^(.*) ([\w/]+)$/.exec(part) ?? [];
      return ranges.split("/").map((range) => `${list} ${range}`);
    });
    expect(refused.sort()).toEqual(said_.sort());
  });

  it("leaves change_status values other than the one it names to the 403, refusing only a missing or null one", () => {
    const [status = ""] = saidFirst(/§4\.9 answers "any other value" than `(\w+)` with 403, not 400 \(`SUSPEND_STATUS`\)/);
    expect(status).toBe(SUSPEND_STATUS);
    for (const other of ["", status.toUpperCase(), 1, {}]) expect(checkBody(ChangeStatusBodySchema, { status: other }).ok, JSON.stringify(other)).toBe(true);
    for (const body of [{}, { status: null }]) {
      const result = checkBody(ChangeStatusBodySchema, body);
      expect(result.ok ? [] : result.errors.map((e) => e.code)).toEqual(["REQUIRED"]);
    }
  });
});

describe("docs/spec-gaps.md, Schemas: envelopes and token set", () => {
  it("reads a 2xx body whose status_code disagrees as the success it is, and refuses success false", () => {
    const [status = ""] = saidFirst(/a 200 whose body says `status_code: (\d+)` is read as the 200 it is/);
    expect(successEnvelope(z.unknown()).safeParse({ status_code: Number(status), success: true, data: {} }).success).toBe(true);
    expect(successEnvelope(z.unknown()).safeParse({ status_code: 200, success: false, data: {} }).success).toBe(false);
    expect(ErrorEnvelopeSchema.parse({ status_code: 404, message: "Not found" }).errors).toEqual([]);
  });

  it("compares token_type with Bearer in any case and reads expires_in when present", () => {
    const [type = ""] = saidFirst(/`token_type` compared case-insensitively with `(\w+)`/);
    const token = { access_token: "a", refresh_token: "r" };
    for (const spelling of [type, type.toUpperCase(), type.toLowerCase()]) expect(TokenSetSchema.safeParse({ ...token, token_type: spelling }).success, spelling).toBe(true);
    expect(TokenSetSchema.safeParse({ ...token, token_type: "MAC" }).success).toBe(false);
    expect(TokenSetSchema.parse({ ...token, token_type: type, expires_in: "900" }).expires_in).toBe(900);
  });
});
