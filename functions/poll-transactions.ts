/** Lambda: one transaction cycle for the tenant (scheduled). Logic lives in shared/aws and shared/bridge. */
import { createPollHandler } from "../shared/aws/handlers.js";

export const handler = createPollHandler("transactions");
