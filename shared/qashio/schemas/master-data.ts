/** Fields every master-data record carries (§2.6). */
import { driftEnum } from "./drift.js";
import { MASTER_DATA_STATUSES } from "./enums.js";
import { UuidSchema, optBoolean, optString, optStringish } from "./primitives.js";

/** Common master-data fields; `schema` names the record in drift warnings. */
export function masterDataShape(schema: string) {
  return {
    id: UuidSchema,
    remote_id: optStringish(),
    remote_name: optString(),
    status: driftEnum(MASTER_DATA_STATUSES, { schema, field: "status" }, { caseInsensitive: true }).nullish(),
    is_deleted: optBoolean(),
    created_at: optString(),
    updated_at: optString(),
  };
}
