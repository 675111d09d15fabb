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
// Not ./json-schema.js: it is the docs/events generator, a script with a main guard; runtime bundles must not carry it.
