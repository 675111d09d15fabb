/**
 * A card's country and merchant category limits (§2.3 `country_limits`, `merchant_category_limits`; §2.4
 * `allowed_countries_list_active`, `allowed_mccs_active`): what its views state and what spend made now keeps to.
 */
import type { CardRecord } from "./model.js";

/** MCC codes of the "Software" category every card's category limits list beside its own travel MCCs. */
const SOFTWARE_MCCS: readonly string[] = ["5734", "5818", "7372"];

/** The MCC categories a card's category limits allow when active (`merchant_category_limits.categories`). */
export function allowedCategoriesOf(card: CardRecord): { name: string; mcc_codes: string[] }[] {
  return [
    { name: "Travel", mcc_codes: [...card.allowedMccs] },
    { name: "Software", mcc_codes: [...SOFTWARE_MCCS] },
  ];
}

/** Whether `card` may spend at a merchant in `country` with `mcc`: each of its active limits lists them. */
export function allowsMerchant(card: CardRecord, country: string, mcc: string): boolean {
  if (card.countryLimitsActive && !card.allowedCountries.includes(country)) return false;
  return !card.categoryLimitsActive || card.allowedMccs.includes(mcc) || SOFTWARE_MCCS.includes(mcc);
}
