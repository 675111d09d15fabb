/**
 * The sandbox sends the string-typed values of spec §2.4 ("true"/"false" flags, numeric-string amounts,
 * `Virtual` next to `VIRTUAL`), and the client hands back real booleans and numbers for them.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { harness, type Harness, type Row } from "./helpers.js";

let h: Harness;
beforeAll(async () => {
  h = await harness();
});

async function rawCoreCards(): Promise<Row[]> {
  const { body } = await h.json("/public/v1/core/cards?page_size=50");
  return body.data.cards as Row[];
}

describe("string-typed core card values", () => {
  it("appear in some cards of the core list and not in others", async () => {
    const cards = await rawCoreCards();
    const stringTyped = cards.filter((c) => typeof c.allow_atm === "string");
    expect(stringTyped.length).toBeGreaterThan(0);
    expect(stringTyped.length).toBeLessThan(cards.length);
    for (const card of stringTyped) {
      // Every flag and amount §2.4 sends as text, on a card that does.
      for (const flag of ["allow_atm", "card_replaced", "return_card", "allowed_mccs_active", "spend_limit_active", "atm_limit_active", "is_manager", "transactions_limit_active"]) {
        expect([card.id, flag, card[flag]]).toEqual([card.id, flag, expect.stringMatching(/^(true|false)$/)]);
      }
      for (const amount of ["auto_top_up_amount", "account_balance", "card_usage_type_amount"]) {
        expect([card.id, amount, card[amount]]).toEqual([card.id, amount, expect.stringMatching(/^-?\d+\.\d{2}$/)]);
      }
    }
    expect(cards.map((c) => c.card_type)).toEqual(expect.arrayContaining(["Virtual", "VIRTUAL"]));
  });

  it("appear in data.card of a write response, of a card the list shows with real booleans too", async () => {
    const card = (await rawCoreCards()).find((c) => typeof c.allow_atm === "boolean" && c.status === "active");
    const { body } = await h.json(`/public/v1/core/cards/${String(card?.id)}`, { method: "PUT", body: { nickname: "Strings" } });
    const written = body.data.card as Row;
    expect(typeof written.spend_limit_active).toBe("string");
    expect(typeof written.auto_top_up_amount).toBe("string");
    expect(written.card_type).toMatch(/^(Virtual|Physical)$/);
  });

  it("come back from listCoreCards() as real booleans and numbers", async () => {
    const raw = await rawCoreCards();
    const page = await h.client.listCoreCards({ page_size: 50 });
    expect(page.data).toHaveLength(raw.length);
    for (const [i, card] of page.data.entries()) {
      expect(typeof card.allow_atm, card.id).toBe("boolean");
      expect(card.allow_atm).toBe(String(raw[i]?.allow_atm) === "true");
      expect(typeof card.account_balance, card.id).toBe("number");
      expect(card.account_balance).toBe(Number(raw[i]?.account_balance));
      expect(typeof card.auto_top_up_amount).toBe("number");
    }
  });

  it("come back from updateCard() as real booleans and numbers", async () => {
    const [card] = await rawCoreCards();
    const result = await h.client.updateCard(String(card?.id), { nickname: "Typed" });
    expect(result.card.nickname).toBe("Typed");
    for (const flag of ["allow_atm", "card_replaced", "spend_limit_active", "atm_limit_active", "is_manager"] as const) {
      expect(typeof result.card[flag], flag).toBe("boolean");
    }
    for (const amount of ["auto_top_up_amount", "account_balance", "card_usage_type_amount"] as const) {
      expect(typeof result.card[amount], amount).toBe("number");
    }
  });
});
