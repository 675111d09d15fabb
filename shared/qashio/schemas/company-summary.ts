/** Company summary (§4.8): shape not shown, so any object is accepted and kept whole. */
import * as z from "zod";

/** `data` of `GET /public/v1/erp/company/summary`. */
export const CompanySummarySchema = z.looseObject({});
export type CompanySummary = z.output<typeof CompanySummarySchema>;
