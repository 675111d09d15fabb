export {
  SCHEMA_VERSION,
  EVENT_TYPES,
  EVENT_DETAIL_SCHEMAS,
  TransactionCreatedDetail,
  TransactionChangedDetail,
  CardCreatedDetail,
  CardUpdatedDetail,
  CardSuspendedDetail,
  CardStatusChangedDetail,
  parseEventDetail,
} from "./schemas.js";
export type { EventType } from "./schemas.js";
export { detailJson, detailJsonParts } from "./json.js";
export { renderEventJsonSchemas, writeEventJsonSchemas, SCHEMA_ID_BASE } from "./json-schema.js";
