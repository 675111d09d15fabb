/** Lambda: one card cycle for the tenant (scheduled; input `{"mode":"suspended-only"}` selects the fast path). */
import { createPollHandler } from "../shared/aws/handlers.js";

export const handler = createPollHandler("cards");
