/**
 * docs/spec-gaps.md's "Schemas" section held to the code: the bounds, prefixes, examples, value lists, error codes and
 * messages it gives a reader, run through the schemas and checks it names, and the code it cites for each choice. The
 * behaviour tests count in the constants; these read what the doc states.
 */
import { describe, expect, it } from "vitest";
import { TransactionSchema } from "../../shared/qashio/schemas/index.js";
import { textsSaid } from "../doc-text.js";
import { specGapsSection } from "../spec-gaps-section.js";
import { transactionFixture } from "./schemas/fixtures.js";

/** The "Schemas" section, line breaks read as spaces. */
const SCHEMAS = specGapsSection("Schemas");

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
