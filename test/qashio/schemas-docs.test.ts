/**
 * docs/spec-gaps.md's "Schemas" section held to the code: the bounds, prefixes, examples, value lists, error codes and
 * messages it gives a reader, run through the schemas and checks it names, and the code it cites for each choice. The
 * behaviour tests count in the constants; these read what the doc states.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ERROR_CODES, TransactionSchema } from "../../shared/qashio/schemas/index.js";
import {
  AcknowledgeBodySchema,
  CardBalanceQuerySchema,
  ErpCardsQuerySchema,
  InviteBodySchema,
  MasterDataQuerySchema,
  PoolAccountsQuerySchema,
  StatementsQuerySchema,
  TokenRequestSchema,
  TransactionsQuerySchema,
  UpdateCardBodySchema,
  UpdateVelocityLimitBodySchema,
  checkBody,
  checkQuery,
  type CheckResult,
} from "../../shared/qashio/schemas/queries.js";
import { textsSaid } from "../doc-text.js";
import { ROOT, expectCitationsHold, specGapsSection } from "../spec-gaps-section.js";
import { transactionFixture } from "./schemas/fixtures.js";

/** The "Schemas" section, line breaks read as spaces. */
const SCHEMAS = specGapsSection("Schemas");

/** Where the section's bare file names live ("Choices made in `shared/qashio/schemas/`"). */
const SCHEMAS_DIR = "shared/qashio/schemas/";

/** The groups of every match of `pattern` in the section, as written; fails when it matches nowhere. */
const said = (pattern: RegExp): string[][] => textsSaid(SCHEMAS, pattern);

/** A transaction's `card_last_four` as the schema reads `value`. */
const lastFourOf = (value: unknown): unknown => TransactionSchema.parse(transactionFixture({ card_last_four: value })).card_last_four;

describe("docs/spec-gaps.md, Schemas: strings for booleans and numbers", () => {
  it("pads the four-digit codes it says, and gives the numbers it names as exceptions their decimal text", () => {
    for (const [number, text] of said(/so `(\d+)` is `"(\d{4})"`/)) expect(lastFourOf(Number(number))).toBe(text);
    for (const [number, text] of said(/MCC `(\d+)` is `"(\d{4})"`/)) {
      expect(TransactionSchema.parse(transactionFixture({ mcc_code: Number(number) })).mcc_code).toBe(text);
    }
    const [[exceptions = ""]] = said(/\(([^()]*) is its decimal text\)/);
    const [[bound = ""]] = said(/one of (\d+) or more/);
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
  const [[entry = ""]] = said(/\*\*Error codes of query\/body checks\*\*(.*?)- \*\*Write bodies\.\*\*/);
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
    const [[nullField = ""]] = said(/`nickname`\/`last_four` both missing with `field: (null)`/);
    const both = checkQuery(CardBalanceQuerySchema, { status: "active" });
    expect(both.ok ? [] : both.errors.map((e) => String(e.field))).toEqual([nullField]);
  });

  it("reports the repeated key in the words it quotes", () => {
    const [[words = ""]] = said(/A repeated query key is rejected \(`INVALID_FORMAT`, "([^"]+)"\)/);
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

});
