/** Tax rate master-data record (§2.6). */
import * as z from "zod";
import { masterDataShape } from "./master-data.js";
import { optNumber, optString, optStringish } from "./primitives.js";

/** Tax rate as returned by `GET /public/v1/erp/tax_rates`; `total_tax_rate` is a percentage. */
export const TaxRateSchema = z.looseObject({
  ...masterDataShape("TaxRate"),
  tax_rate_code: optStringish(),
  total_tax_rate: optNumber(),
  country_code: optString(),
});
export type TaxRate = z.output<typeof TaxRateSchema>;
