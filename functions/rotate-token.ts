/** Lambda: Secrets Manager rotation of the provider secret (refreshes the token family under the refresh lease). */
import { createRotationHandler } from "../shared/aws/handlers.js";

export const handler = createRotationHandler();
