/** Card balance response data (§4.9, `GET /public/v1/core/cards/balance`). */
import * as z from "zod";
import { driftEnumsFor } from "./drift.js";
import { CORE_CARD_STATUSES } from "./enums.js";
import { CardIdSchema, optFourDigitCode, optNumber, optString } from "./primitives.js";

/** One card's balance; balances account for pending authorisations. */
export const CardBalanceEntrySchema = z.looseObject({
  card_id: CardIdSchema,
  nickname: optString(),
  last_four: optFourDigitCode(),
  status: driftEnumsFor("CardBalance")(CORE_CARD_STATUSES, "cards.status", { caseInsensitive: true }).nullish(),
  balance: optNumber(),
  currency: optString(),
});
export type CardBalanceEntry = z.output<typeof CardBalanceEntrySchema>;

/** `data` of the card balance read. */
export const CardBalanceSchema = z.looseObject({
  company_balance: z.looseObject({ amount: optNumber(), currency: optString() }).nullish(),
  cards: z.array(CardBalanceEntrySchema),
});
export type CardBalance = z.output<typeof CardBalanceSchema>;
