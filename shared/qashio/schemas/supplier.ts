/** Supplier master-data record (§2.6). */
import * as z from "zod";
import { masterDataShape } from "./master-data.js";
import { optString } from "./primitives.js";

/** Supplier as returned by `GET /public/v1/erp/suppliers`. */
export const SupplierSchema = z.looseObject({
  ...masterDataShape("Supplier"),
  qashio_external_id: optString(),
});
export type Supplier = z.output<typeof SupplierSchema>;
